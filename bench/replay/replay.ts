/**
 * Replays a trace against a router: each request is sent at its trace arrival time ÷ speedup,
 * as a streaming completion with a token-id prompt, and measured from the client's side.
 */
import { promptTokens, type TraceRequest } from "./trace.ts";

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

async function sendOne(routerUrl: string, r: TraceRequest, maxOutput: number, model: string): Promise<RequestOutcome> {
  const started = performance.now();
  const body = JSON.stringify({
    model,
    prompt: Array.from(promptTokens(r)),
    max_tokens: Math.min(r.outputLength, maxOutput),
    stream: true,
    stream_options: { include_usage: true },
  });
  try {
    const res = await fetch(`${routerUrl}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" }, body });
    const worker = res.headers.get("x-switchyard-worker") ?? undefined;
    if (!res.ok || !res.body) {
      const text = await res.text();
      return { index: r.index, ok: false, error: `HTTP ${res.status}: ${text.slice(0, 200)}`, worker, ttftMs: NaN, e2eMs: performance.now() - started, promptTokens: r.inputLength, cachedTokens: 0, outputTokens: 0 };
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
    return { index: r.index, ok: true, worker, ttftMs: ttft, e2eMs: e2e, promptTokens: r.inputLength, cachedTokens: cached, outputTokens: Math.max(0, chunks - 1) };
  } catch (e) {
    return { index: r.index, ok: false, error: String(e), ttftMs: NaN, e2eMs: performance.now() - started, promptTokens: r.inputLength, cachedTokens: 0, outputTokens: 0 };
  }
}

export interface ReplayOptions {
  routerUrl: string;
  speedup: number;
  maxOutputTokens: number;
  model?: string;
  onProgress?: (done: number, total: number, errors: number) => void;
}

export async function replay(trace: readonly TraceRequest[], o: ReplayOptions): Promise<{ outcomes: RequestOutcome[]; wallMs: number }> {
  const t0 = trace.length ? trace[0]!.timestamp : 0;
  const start = performance.now();
  let done = 0;
  let errors = 0;
  const pending: Promise<RequestOutcome>[] = [];
  for (const r of trace) {
    const due = (r.timestamp - t0) / o.speedup;
    const wait = due - (performance.now() - start);
    if (wait > 1) await Bun.sleep(wait);
    pending.push(
      sendOne(o.routerUrl, r, o.maxOutputTokens, o.model ?? "switchyard-sim").then((x) => {
        done++;
        if (!x.ok) errors++;
        o.onProgress?.(done, trace.length, errors);
        return x;
      }),
    );
  }
  const outcomes = await Promise.all(pending);
  return { outcomes, wallMs: performance.now() - start };
}
