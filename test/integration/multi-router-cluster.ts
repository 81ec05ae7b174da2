/**
 * Helpers for the multi-router integration tests: simulated engines and routers as real
 * processes (`bun src/main.ts mocker | serve`), and small readers of their HTTP state
 * (routing headers, /v1/workers, /metrics, the engines' /v1/sessions and /v1/engine/info).
 */
import { startMain, type Proc } from "../support/processes.ts";

export const BS = 16;

/** `n` engines pushing KV events to `routerUrl` (one router only: the mocker has one target). */
export async function startEngines(n: number, routerUrl: string, extra: readonly string[] = []): Promise<Proc[]> {
  return Promise.all(
    Array.from({ length: n }, (_, i) =>
      startMain([
        "mocker", "--port", "0", "--router-url", routerUrl, "--event-batch-ms", "2", "--block-size", String(BS),
        "--seed", String(i + 1), "--decode-ms-per-step", "8", ...extra,
      ]),
    ),
  );
}

/** A router in front of `engines`; `port` 0 picks a free one. */
export function startRouter(engines: readonly Proc[], port: number, extra: readonly string[] = []): Promise<Proc> {
  return startMain([
    "serve", "--port", String(port), "--host", "127.0.0.1", "--block-size", String(BS),
    ...engines.flatMap((e) => ["--worker", String(e.info.url)]),
    ...extra,
  ]);
}

export const urlOf = (p: Proc): string => String(p.info.url);

export function complete(
  routerUrl: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<Response> {
  return fetch(`${routerUrl}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
    signal,
  });
}

/** A prompt of `blocks` full blocks that shares nothing with prompts of other tags. */
export function prompt(tag: string, blocks: number): string {
  let s = "";
  for (let i = 0; s.length < blocks * BS; i++) s += `${tag}-${i} `;
  return s.slice(0, blocks * BS);
}

export interface Routed {
  readonly worker: string;
  readonly dpRank: number;
  readonly overlap: number;
}

export function routing(r: Response): Routed {
  return {
    worker: r.headers.get("x-switchyard-worker") ?? "",
    dpRank: Number(r.headers.get("x-switchyard-dp-rank")),
    overlap: Number(r.headers.get("x-switchyard-overlap-blocks")),
  };
}

/** Send a completion, read its body, and return the status and routing headers. */
export async function send(routerUrl: string, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Routed & { status: number; text: string }> {
  const r = await complete(routerUrl, body, headers);
  const text = await r.text();
  return { status: r.status, text, ...routing(r) };
}

export interface WorkerView {
  id: string;
  url: string;
  healthy: boolean;
  active_prefill_tokens: number;
  active_decode_blocks: number;
  cached_blocks: number;
  loras: string[];
}

export async function workers(routerUrl: string): Promise<WorkerView[]> {
  const r = await fetch(`${routerUrl}/v1/workers`);
  if (!r.ok) throw new Error(`GET /v1/workers: HTTP ${r.status}`);
  return ((await r.json()) as { workers: WorkerView[] }).workers;
}

/** One sample of `name` (with exactly these labels, e.g. `{result="loaded"}`) from /metrics; 0 when absent. */
export async function metric(routerUrl: string, name: string, labels = ""): Promise<number> {
  const text = await (await fetch(`${routerUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}${labels} `));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1));
}

export interface EngineSession {
  session_id: string;
  open: boolean;
  opened_count: number;
  closed_count: number;
  timeout: number;
}

export async function engineSessions(engineUrl: string): Promise<EngineSession[]> {
  return ((await (await fetch(`${engineUrl}/v1/sessions`)).json()) as { sessions: EngineSession[] }).sessions;
}

export async function engineLoras(engineUrl: string): Promise<string[]> {
  return ((await (await fetch(`${engineUrl}/v1/engine/info`)).json()) as { loras: string[] }).loras;
}

/** The binding a router's store holds for a session, read without sliding it; undefined: none. */
export async function peekSession(routerUrl: string, id: string): Promise<{ worker_id: string; dp_rank: number; kind: string; ttl_ms: number; expires_at_ms: number } | undefined> {
  const r = await fetch(`${routerUrl}/debug/sessions/${encodeURIComponent(id)}`);
  if (r.status === 404) return undefined;
  if (!r.ok) throw new Error(`GET /debug/sessions/${id}: HTTP ${r.status}`);
  return (await r.json()) as { worker_id: string; dp_rank: number; kind: string; ttl_ms: number; expires_at_ms: number };
}
