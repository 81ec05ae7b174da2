/**
 * Replays a trace against one or more routers: each request is sent at its trace arrival time
 * × arrival scale ÷ speedup, to the routers in turn (as a round-robin load balancer would), as
 * a streaming completion whose prompt is token ids or text (one byte per token, as the
 * simulated engine counts text), and measured from the client's side. Optional: the trace's
 * session id as X-Session-ID, and actions (engine restarts) at fixed points of the replay.
 */
import { promptText, promptTokens, type TraceRequest } from "./trace.ts";

export interface RequestOutcome {
  readonly index: number;
  readonly ok: boolean;
  readonly error?: string;
  readonly worker?: string;
  readonly ttftMs: number;
  readonly e2eMs: number;
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly outputTokens: number;
}

const CACHED = /"cached_tokens"\s*:\s*(\d+)/;
const DATA_LINE = /^data: (?!\[DONE\])/gm;

export type PromptFormat = "tokens" | "text";

/** The model name the bench asks for when none is given: the simulated engines'. */
export const DEFAULT_MODEL = "switchyard-sim";

/** Replays in this process so far: each one's request ids are its own. */
let replays = 0;

/**
 * The x-request-id of request `index` of a replay, sent to router `router` (0-based, in the order of
 * ReplayOptions.routerUrls): the router writes it in its access line and forwards it to the engine,
 * so both logs say which router decided each request (race-misses.ts).
 */
export function replayRequestId(replay: number, router: number, index: number): string {
  return `replay-${replay}-r${router}-${index}`;
}

async function sendOne(
  routerUrl: string,
  requestId: string,
  r: TraceRequest,
  maxOutput: number,
  model: string,
  o: ReplayOptions,
): Promise<RequestOutcome> {
  const started = performance.now();
  const body = JSON.stringify({
    model,
    prompt: o.promptFormat === "text" ? promptText(r) : Array.from(promptTokens(r)),
    max_tokens: Math.min(r.outputLength, maxOutput),
    stream: true,
    stream_options: { include_usage: true },
  });
  try {
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "x-request-id": requestId,
    };
    if (o.sessionHeader && r.sessionId !== undefined) headers["x-session-id"] = r.sessionId;
    const res = await fetch(`${routerUrl}/v1/completions`, { method: "POST", headers, body });
    const worker = res.headers.get("x-switchyard-worker") ?? undefined;
    if (!res.ok || !res.body) {
      const text = await res.text();
      return {
        index: r.index,
        ok: false,
        error: `HTTP ${res.status}: ${text.slice(0, 200)}`,
        worker,
        ttftMs: NaN,
        e2eMs: performance.now() - started,
        promptTokens: r.inputLength,
        cachedTokens: 0,
        outputTokens: 0,
      };
    }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let ttft = NaN;
    let tail = "";
    let chunks = 0;
    let cached = 0;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      const text = decoder.decode(value, { stream: true });
      const n = (text.match(DATA_LINE) ?? []).length;
      if (n > 0 && Number.isNaN(ttft)) ttft = performance.now() - started;
      chunks += n;
      tail = (tail + text).slice(-4096);
      const m = CACHED.exec(text);
      if (m) cached = Number(m[1]);
    }
    const m = CACHED.exec(tail);
    if (m) cached = Number(m[1]);
    const e2e = performance.now() - started;
    return {
      index: r.index,
      ok: true,
      worker,
      ttftMs: ttft,
      e2eMs: e2e,
      promptTokens: r.inputLength,
      cachedTokens: cached,
      outputTokens: Math.max(0, chunks - 1),
    };
  } catch (e) {
    return {
      index: r.index,
      ok: false,
      error: String(e),
      ttftMs: NaN,
      e2eMs: performance.now() - started,
      promptTokens: r.inputLength,
      cachedTokens: 0,
      outputTokens: 0,
    };
  }
}

export interface ReplayOptions {
  /** Arrivals go to these in turn. */
  routerUrls: readonly string[];
  speedup: number;
  /** Multiplies inter-arrival times: 0.5 = twice the load, 2 = half. Default 1. */
  arrivalScale?: number;
  promptFormat?: PromptFormat;
  /** Send the trace's session id as X-Session-ID. */
  sessionHeader?: boolean;
  /** Run `action(k)` once the replay has sent `atFraction` of its requests (k = its index). */
  actions?: readonly { atFraction: number; action: () => Promise<void> }[];
  maxOutputTokens: number;
  model?: string;
  onProgress?: (done: number, total: number, errors: number) => void;
}

export async function replay(
  trace: readonly TraceRequest[],
  o: ReplayOptions,
): Promise<{ outcomes: RequestOutcome[]; wallMs: number }> {
  const t0 = trace.length ? trace[0]!.timestamp : 0;
  const start = performance.now();
  const replayNo = ++replays;
  let done = 0;
  let errors = 0;
  const pending: Promise<RequestOutcome>[] = [];
  const scale = o.arrivalScale ?? 1;
  const actions = [...(o.actions ?? [])].sort((x, y) => x.atFraction - y.atFraction);
  const actionsDone: Promise<void>[] = [];
  for (let i = 0; i < trace.length; i++) {
    const r = trace[i]!;
    while (actions.length > 0 && i >= actions[0]!.atFraction * trace.length)
      actionsDone.push(actions.shift()!.action());
    const due = ((r.timestamp - t0) * scale) / o.speedup;
    const wait = due - (performance.now() - start);
    if (wait > 1) await Bun.sleep(wait);
    const router = i % o.routerUrls.length;
    pending.push(
      sendOne(
        o.routerUrls[router]!,
        replayRequestId(replayNo, router, r.index),
        r,
        o.maxOutputTokens,
        o.model ?? DEFAULT_MODEL,
        o,
      ).then((x) => {
        done++;
        if (!x.ok) errors++;
        o.onProgress?.(done, trace.length, errors);
        return x;
      }),
    );
  }
  const outcomes = await Promise.all(pending);
  await Promise.all(actionsDone);
  return { outcomes, wallMs: performance.now() - start };
}
