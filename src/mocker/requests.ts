/**
 * Validation of the simulated engine's request bodies. Each parser returns plain values or
 * throws RouterError("invalid_request") naming the field; the HTTP edge maps that to a 400.
 */
import { RouterError } from "../core/errors.ts";
import { chatPromptTokens, completionPromptTokens } from "../tokens/prompt.ts";
import type { LogprobsAsk } from "./fake-logprobs.ts";
import type { ApiKind } from "./openai.ts";

export const DEFAULT_MAX_TOKENS = 16;
/** Keeps a typo from occupying a slot for hours of simulated decode. */
export const MAX_MAX_TOKENS = 1 << 20;

export interface CompletionRequest {
  readonly kind: ApiKind;
  readonly tokens: Uint32Array;
  /** Every prompt of a completions batch (`tokens` is the first); one for chat. */
  readonly prompts: readonly Uint32Array[];
  readonly model: string | undefined;
  readonly stream: boolean;
  readonly maxTokens: number;
  /** The body's `seed` (an integer), when it has one. */
  readonly seed: number | undefined;
  /** `nvext.session_control.session_id`, when the request runs inside a session. */
  readonly sessionId: string | undefined;
  /** A stream's usage reporting, read as vLLM reads `stream_options` (see streamOptionsOf). */
  readonly usage: StreamUsage;
  /** Logprobs asked for (completions `logprobs: N`; chat `logprobs: true` + `top_logprobs`). */
  readonly logprobs: LogprobsAsk | undefined;
}

/** Where a stream reports usage: a last chunk with `choices: []`, and/or every chunk. */
export interface StreamUsage {
  readonly include: boolean;
  readonly continuous: boolean;
}

const NO_STREAM_USAGE: StreamUsage = { include: false, continuous: false };

function bad(field: string, message: string): never {
  throw new RouterError("invalid_request", `${field}: ${message}`, field);
}

function asObject(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new RouterError("invalid_request", "request body must be a JSON object");
  }
  return body as Record<string, unknown>;
}

function optionalString(b: Record<string, unknown>, field: string): string | undefined {
  const v = b[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") bad(field, "must be a string");
  return v;
}

/**
 * `stream_options` as vLLM reads it. Its StreamOptions model defaults `include_usage` to true
 * and `continuous_usage_stats` to false (vllm/entrypoints/openai/engine/protocol.py at
 * vllm-project/vllm d7e52523: `include_usage: bool | None = True`), so `{}` asks for usage;
 * `should_include_usage` (vllm/entrypoints/serve/utils/api_utils.py at 00a5fdd2) then gives
 * `include_usage = bool(stream_options.include_usage)` and `include_continuous_usage =
 * include_usage and bool(stream_options.continuous_usage_stats)`, and no stream_options at all
 * means neither. The request validator refuses options on a request that does not stream when
 * they are truthy (`if data.get("stream_options") and not data.get("stream")`: a non-empty
 * object), with "Stream options can only be defined when `stream=True`.".
 */
function streamOptionsOf(b: Record<string, unknown>, stream: boolean): StreamUsage {
  const o = b.stream_options;
  if (o === undefined || o === null) return NO_STREAM_USAGE;
  if (typeof o !== "object" || Array.isArray(o)) bad("stream_options", "must be an object");
  const opts = o as Record<string, unknown>;
  if (!stream && Object.keys(opts).length > 0)
    bad("stream_options", "Stream options can only be defined when `stream=True`.");
  for (const f of ["include_usage", "continuous_usage_stats"]) {
    const v = opts[f];
    if (v !== undefined && v !== null && typeof v !== "boolean")
      bad(`stream_options.${f}`, "must be a boolean");
  }
  const include = opts.include_usage === undefined ? true : opts.include_usage === true;
  return { include, continuous: include && opts.continuous_usage_stats === true };
}

function maxTokensOf(b: Record<string, unknown>, kind: ApiKind): number {
  const field =
    kind === "chat" && b.max_completion_tokens != null ? "max_completion_tokens" : "max_tokens";
  const v = b[field];
  if (v === undefined || v === null) return DEFAULT_MAX_TOKENS;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > MAX_MAX_TOKENS) {
    bad(field, `must be an integer in [1, ${MAX_MAX_TOKENS}]`);
  }
  return v;
}

/** vLLM's default `--max-logprobs`. */
const MAX_LOGPROBS = 20;

function topOf(b: Record<string, unknown>, field: string): number | undefined {
  const v = b[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v > MAX_LOGPROBS)
    bad(field, `must be an integer in [0, ${MAX_LOGPROBS}]`);
  return v;
}

/** Completions: `logprobs: N`. Chat: `logprobs: true`, with `top_logprobs: N` (which needs it). */
function logprobsOf(b: Record<string, unknown>, kind: ApiKind): LogprobsAsk | undefined {
  if (kind === "completions") {
    const n = topOf(b, "logprobs");
    return n === undefined ? undefined : { top: n };
  }
  const on = b.logprobs;
  if (on !== undefined && on !== null && typeof on !== "boolean")
    bad("logprobs", "must be a boolean");
  const top = topOf(b, "top_logprobs");
  if (top !== undefined && top > 0 && on !== true)
    bad("top_logprobs", "when using `top_logprobs`, `logprobs` must be set to true");
  return on === true ? { top: top ?? 0 } : undefined;
}

function seedOf(b: Record<string, unknown>): number | undefined {
  const v = b.seed;
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isSafeInteger(v)) bad("seed", "must be an integer");
  return v;
}

/**
 * `prompts`: the body's prompts as the engine's tokenizer made them (mocker/tokenizer.ts);
 * without them the prompt is tokenized here, one token per byte, and must be a single one.
 */
export function parseCompletionRequest(
  kind: ApiKind,
  body: unknown,
  prompts?: readonly Uint32Array[],
): CompletionRequest {
  const b = asObject(body);
  if (kind === "chat" && b.messages === undefined) bad("messages", "is required");
  if (kind === "completions" && b.prompt === undefined) bad("prompt", "is required");
  if (prompts === undefined)
    prompts = [kind === "chat" ? chatPromptTokens(b.messages) : completionPromptTokens(b.prompt)];
  const tokens = prompts[0]!;
  for (const p of prompts)
    if (p.length === 0) bad(kind === "chat" ? "messages" : "prompt", "must not be empty");
  const stream = b.stream;
  if (stream !== undefined && stream !== null && typeof stream !== "boolean")
    bad("stream", "must be a boolean");
  if (b.n !== undefined && b.n !== null && b.n !== 1) bad("n", "only n = 1 is supported");
  const sc = (b.nvext as { session_control?: { session_id?: unknown } } | undefined)
    ?.session_control;
  return {
    kind,
    tokens,
    prompts,
    model: optionalString(b, "model"),
    stream: stream === true,
    maxTokens: maxTokensOf(b, kind),
    seed: seedOf(b),
    sessionId: typeof sc?.session_id === "string" ? sc.session_id : undefined,
    usage: streamOptionsOf(b, stream === true),
    logprobs: logprobsOf(b, kind),
  };
}

export function parseLoadLora(body: unknown): { name: string; path: string } {
  const b = asObject(body);
  const name = optionalString(b, "lora_name");
  if (name === undefined || name === "") bad("lora_name", "is required");
  return { name, path: optionalString(b, "lora_path") ?? "" };
}

export function parseUnloadLora(body: unknown): { name: string } {
  const b = asObject(body);
  const name = optionalString(b, "lora_name");
  if (name === undefined || name === "") bad("lora_name", "is required");
  return { name };
}

export function parseSessionOpen(
  body: unknown,
  defaultTimeoutS: number,
): { sessionId: string; timeoutS: number } {
  const b = asObject(body);
  const sessionId = optionalString(b, "session_id");
  if (sessionId === undefined || sessionId === "") bad("session_id", "is required");
  const t = b.timeout;
  if (t !== undefined && t !== null && (typeof t !== "number" || !Number.isFinite(t) || t <= 0)) {
    bad("timeout", "must be a positive number of seconds");
  }
  return { sessionId, timeoutS: typeof t === "number" ? t : defaultTimeoutS };
}

export function parseSessionClose(body: unknown): { sessionId: string } {
  const b = asObject(body);
  const sessionId = optionalString(b, "session_id");
  if (sessionId === undefined || sessionId === "") bad("session_id", "is required");
  return { sessionId };
}

/** A u64 query parameter (decimal); undefined when absent or empty. */
export function u64Param(params: URLSearchParams, name: string): bigint | undefined {
  const v = params.get(name);
  if (v === null || v === "") return undefined;
  if (!/^\d+$/.test(v)) bad(name, "must be a decimal unsigned integer");
  const n = BigInt(v);
  if (n >= 1n << 64n) bad(name, "must fit in 64 bits");
  return n;
}

/** A dp rank (query parameter or header) in [0, dpRanks); undefined when absent. */
export function dpRankValue(
  raw: string | null,
  dpRanks: number,
  field: string,
): number | undefined {
  if (raw === null || raw === "") return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) >= dpRanks)
    bad(field, `must be an integer in [0, ${dpRanks - 1}] (got "${raw}")`);
  return Number(raw);
}
