/**
 * Deterministic logprobs for the fake output (fake-text.ts), shaped as vLLM writes them, so a
 * client (or the router splicing a moved stream) can be checked against the whole request:
 * a token's logprob and its alternatives depend on the engine seed and the token's place in the
 * fake text only, which is the same place a continuation reaches (its prompt is the first prompt
 * plus the text so far).
 *
 * Shapes (vllm-project/vllm):
 * - completions, `logprobs: N` (vllm/entrypoints/openai/completion/serving.py
 *   `_create_completion_logprobs` at 030ea52effcb05071543c8c42b8f0145e94cee43): four parallel
 *   lists `text_offset`, `token_logprobs`, `tokens`, `top_logprobs` (a map token -> logprob: the
 *   sampled token and the N most likely, `num_output_top_logprobs >= i`, so max(N, 1) entries
 *   when the sampled token is the most likely, as here). A stream's `text_offset` starts at the
 *   characters of text already sent (`initial_text_offset=previous_text_lens[i]`); a whole
 *   answer's at 0.
 * - chat, `logprobs: true` and `top_logprobs: N` (vllm/entrypoints/openai/chat_completion/serving.py
 *   `_create_chat_logprobs` / `_get_top_logprobs` at 5e918640d7b65820db5beaa98c2a99925bff7c17):
 *   `{content: [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}] (the first N)}]}`.
 */
import { fakePlace } from "./fake-text.ts";
import type { ApiKind } from "./openai.ts";

/** What the request asked: N alternatives per token (`logprobs: N`; chat `top_logprobs`). */
export interface LogprobsAsk {
  readonly top: number;
}

/** Letters the alternatives are drawn from, in order, skipping the sampled token. */
const ALTERNATIVES = "etaoinshrdlucmfwypvbgkqjxz ";

/** A logprob in (-4, 0), a function of the engine seed and the place only, 4 decimals. */
function logprobAt(seed: number, place: number): number {
  let h = Math.imul((seed ^ 0x85ebca6b) >>> 0, 0x01000193) ^ Math.imul(place + 1, 0x9e3779b1);
  h = Math.imul(h ^ (h >>> 15), 0x2c1b3c6d) >>> 0;
  return -((h % 40000) + 1) / 10000;
}

/** The token and its alternatives at one place (sampled first, then lower ones). */
function choicesAt(
  seed: number,
  place: number,
  token: string,
  n: number,
): { token: string; logprob: number }[] {
  const lp = logprobAt(seed, place);
  const out = [{ token, logprob: lp }];
  for (let k = 0; out.length < n && k < ALTERNATIVES.length; k++) {
    const alt = ALTERNATIVES[k]!;
    if (alt === token) continue;
    out.push({ token: alt, logprob: Math.round((lp - out.length * 0.75) * 10000) / 10000 });
  }
  return out;
}

const utf8 = new TextEncoder();

/**
 * The `logprobs` object of output tokens `first`, `first + 1`, … (`tokens`, one string each) of
 * a request whose fake text starts at `offset`, as JSON. `textOffset`: the characters before the
 * first of them (completions).
 */
export function logprobsJson(
  kind: ApiKind,
  seed: number,
  ask: LogprobsAsk,
  offset: number,
  first: number,
  tokens: readonly string[],
  textOffset: number,
): string {
  if (kind === "chat") {
    const content = tokens.map((t, i) => {
      const all = choicesAt(seed, fakePlace(offset, first + i), t, Math.max(ask.top, 1));
      return {
        token: t,
        logprob: all[0]!.logprob,
        bytes: [...utf8.encode(t)],
        top_logprobs: all.slice(0, ask.top).map((c) => ({
          token: c.token,
          logprob: c.logprob,
          bytes: [...utf8.encode(c.token)],
        })),
      };
    });
    return JSON.stringify({ content });
  }
  const text_offset: number[] = [];
  const token_logprobs: number[] = [];
  const top_logprobs: Record<string, number>[] = [];
  let off = textOffset;
  for (const [i, t] of tokens.entries()) {
    const all = choicesAt(seed, fakePlace(offset, first + i), t, Math.max(ask.top, 1));
    text_offset.push(off);
    off += [...t].length;
    token_logprobs.push(all[0]!.logprob);
    top_logprobs.push(Object.fromEntries(all.map((c) => [c.token, c.logprob])));
  }
  return JSON.stringify({ text_offset, token_logprobs, tokens, top_logprobs });
}
