/**
 * A client's JSON request, read so that refusing it costs the same whatever it holds:
 * - a route that carries a prompt takes at most BODY_BYTES_PER_PROMPT_CHAR bytes per
 *   --max-prompt-chars character plus BODY_BYTES_BESIDE_PROMPT (and never more than
 *   --max-body-bytes): the most a prompt within its limit can take as JSON is a token id
 *   with its separator, 12 bytes (`4294967295, `). A larger Content-Length is a 413 before
 *   a byte is read; a chunked body is counted as it streams and cut at the bound;
 * - a body of 1 MiB or more, or chunked, is streamed into one buffer while its prompt fields
 *   are counted (prompt-route/prompt-scan.ts): a prompt past --max-prompt-chars is a 413 as
 *   soon as the bytes read show it, with no parse and the rest left unread; its bytes are held
 *   against the router-wide budget of bodies being read (body-budget.ts: 503 past it);
 * - a body of OFF_LOOP_MIN_BYTES or more is decoded, parsed and its prompt size checked off
 *   the event loop when the runtime offers a parser (Bun: a Worker, runtime/bun/json-parse-pool.ts).
 * A body that passes is forwarded as the client's bytes, unchanged.
 */
import { parseJsonObject, readBodyLimited } from "./body.ts";
import type { RequestLimits } from "./deps.ts";
import { PromptScanner } from "./prompt-route/prompt-scan.ts";
import { checkPromptSize } from "./prompt-route/prompt-size.ts";

export const BODY_BYTES_PER_PROMPT_CHAR = 12;
/** Room for everything beside the prompt: the model, sampling parameters, tools, a chat template's kwargs. */
export const BODY_BYTES_BESIDE_PROMPT = 1 << 20;
/** Bodies this large are parsed off the event loop where the runtime can (parsing 1 MiB of JSON takes ~2-4 ms). */
export const OFF_LOOP_MIN_BYTES = 1 << 20;

export type { OffLoopJsonParser } from "./deps.ts";

/**
 * The largest body a prompt route reads, how the 413 names it, and whether the bound comes
 * from the prompt's limit (then the 413 names the prompt field, as a prompt refused after
 * parsing does).
 */
export function promptBodyLimit(limits: RequestLimits): {
  readonly bytes: number;
  readonly name: string;
  readonly fromPrompt: boolean;
} {
  if (limits.maxPromptChars === undefined)
    return { bytes: limits.maxBodyBytes, name: "--max-body-bytes", fromPrompt: false };
  const derived = BODY_BYTES_PER_PROMPT_CHAR * limits.maxPromptChars + BODY_BYTES_BESIDE_PROMPT;
  if (derived >= limits.maxBodyBytes)
    return { bytes: limits.maxBodyBytes, name: "--max-body-bytes", fromPrompt: false };
  return {
    bytes: derived,
    name: `${BODY_BYTES_PER_PROMPT_CHAR} bytes per --max-prompt-chars character + 1 MiB`,
    fromPrompt: true,
  };
}

/**
 * The body (forwarded byte for byte) and its JSON object. `promptFields`: the fields checked
 * against --max-prompt-chars off the loop (the caller still checks them itself; a second
 * walk within the limit is cheap).
 */
export async function readJsonRequest(
  req: Request,
  limits: RequestLimits,
  promptFields: readonly string[],
): Promise<{ body: Uint8Array; json: Record<string, unknown> }> {
  const bound = promptBodyLimit(limits);
  const scan =
    limits.maxPromptChars !== undefined && promptFields.length > 0
      ? new PromptScanner(promptFields, limits.maxPromptChars)
      : undefined;
  const hold = limits.bodyBudget?.hold();
  try {
    const field = bound.fromPrompt && promptFields.length === 1 ? promptFields[0] : undefined;
    const body = await readBodyLimited(req, bound.bytes, bound.name, field, { scan, hold });
    if (body.length >= OFF_LOOP_MIN_BYTES && limits.parseOffLoop !== undefined) {
      return await limits.parseOffLoop(body, promptFields, limits.maxPromptChars);
    }
    const json = parseJsonObject(body);
    for (const f of promptFields) checkPromptSize(json[f], f, limits.maxPromptChars);
    return { body, json };
  } finally {
    hold?.release();
  }
}
