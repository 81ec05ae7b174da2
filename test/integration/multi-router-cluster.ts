/**
 * Helpers for the multi-router (and router) integration tests: simulated engines and
 * routers as real processes (`bun src/main.ts mocker | serve`), and small readers of their
 * HTTP state (routing headers, /v1/workers, /metrics, the engines' /v1/sessions and
 * /v1/engine/info, the engines' cached blocks against a router's /debug/kv/dump).
 */
import { parseJsonBigintSafe } from "../../src/core/json.ts";
import { workerIdFromUrl } from "../../src/core/worker-id.ts";
import { parseWorkerKvQueryResponse } from "../../src/protocol/kv-query-wire.ts";
import { startMain, until, type Proc } from "../support/processes.ts";

/** Router ports are chosen before any router starts, so the engines can be told every router's URL. */
export { freePorts } from "../support/processes.ts";

export const BS = 16;

export const loopbackUrl = (port: number): string => `http://127.0.0.1:${port}`;

/** `n` engines pushing their KV events to every router in `routerUrls` (one `--router-url` each). */
export async function startEngines(
  n: number,
  routerUrls: readonly string[],
  extra: readonly string[] = [],
): Promise<Proc[]> {
  return Promise.all(
    Array.from({ length: n }, (_, i) =>
      startMain([
        "mocker",
        "--port",
        "0",
        ...routerUrls.flatMap((u) => ["--router-url", u]),
        "--event-batch-ms",
        "2",
        "--block-size",
        String(BS),
        "--seed",
        String(i + 1),
        "--decode-ms-per-step",
        "8",
        ...extra,
      ]),
    ),
  );
}

/**
 * Redis wait bound for routers in these tests: the production default (50 ms) treats a
 * slower Redis as hung and drops affinity until it answers a probe; on a loaded CI machine
 * (and through the Upstash bridge, which runs inside the test process) an answer can take
 * that long without anything being wrong, and a session would land elsewhere (1 in 30 runs
 * of the REST test under a busy loop). These tests are about sharing; the bound itself is
 * tested in test/chaos/redis-outage.test.ts with the default.
 */
const TEST_REDIS_TIMEOUT = ["--redis-timeout", "1"];

/** A router in front of `engines`; `port` 0 picks a free one. */
export function startRouter(
  engines: readonly Proc[],
  port: number,
  extra: readonly string[] = [],
): Promise<Proc> {
  const redisBound =
    extra.includes("--redis") && !extra.includes("--redis-timeout") ? TEST_REDIS_TIMEOUT : [];
  return startMain([
    "serve",
    "--port",
    String(port),
    "--host",
    "127.0.0.1",
    "--block-size",
    String(BS),
    ...engines.flatMap((e) => ["--worker", String(e.info.url)]),
    ...extra,
    ...redisBound,
  ]);
}

export const urlOf = (p: Proc): string => String(p.info.url);

/**
 * Routers first (each listening on a port it picked itself), then `nEngines` engines pushing
 * their events to every router, then every router told of every engine (POST /v1/workers),
 * healthy before this resolves. Reserving router ports up front and starting engines on
 * port 0 raced: the OS could hand an engine the port kept for a router (EADDRINUSE at the
 * router's start; 1 in 30 runs of multi-router-rest.test.ts on a shared machine).
 */
export async function startCluster(
  nEngines: number,
  nRouters: number,
  routerFlags: readonly string[] = [],
  engineFlags: readonly string[] = [],
): Promise<{ engines: Proc[]; routers: Proc[] }> {
  const routers = await Promise.all(
    Array.from({ length: nRouters }, () => startRouter([], 0, routerFlags)),
  );
  const engines = await startEngines(nEngines, routers.map(urlOf), engineFlags);
  await Promise.all(routers.map((r) => registerWorkers(urlOf(r), engines)));
  return { engines, routers };
}

/** Register `engines` with a running router and wait until it counts them all healthy. */
export async function registerWorkers(routerUrl: string, engines: readonly Proc[]): Promise<void> {
  for (const e of engines) {
    const res = await fetch(`${routerUrl}/v1/workers`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ url: urlOf(e) }),
    });
    if (res.status !== 201 && res.status !== 200)
      throw new Error(
        `POST ${routerUrl}/v1/workers ${urlOf(e)}: HTTP ${res.status} ${await res.text()}`,
      );
  }
  await until(
    async () =>
      ((await (await fetch(`${routerUrl}/health`)).json()) as { healthy_workers: number })
        .healthy_workers === engines.length,
    `${routerUrl} to count ${engines.length} healthy workers`,
  );
}

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
export async function send(
  routerUrl: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<Routed & { status: number; text: string }> {
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
  /** Per dp rank, the cache check's view (absent when the check is off); `canary` null until one ran. */
  cache_truth?: { state: string; canary: { ok: boolean } | null }[];
}

/** `adminToken`: for a router whose admin API is closed to addresses (--api-keys, a non-loopback --host). */
export async function workers(routerUrl: string, adminToken?: string): Promise<WorkerView[]> {
  const r = await fetch(
    `${routerUrl}/v1/workers`,
    adminToken === undefined ? undefined : { headers: { authorization: `Bearer ${adminToken}` } },
  );
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
  return ((await (await fetch(`${engineUrl}/v1/sessions`)).json()) as { sessions: EngineSession[] })
    .sessions;
}

export async function engineLoras(engineUrl: string): Promise<string[]> {
  return ((await (await fetch(`${engineUrl}/v1/engine/info`)).json()) as { loras: string[] }).loras;
}

/** The binding a router's store holds for a session, read without sliding it; undefined: none. */
export async function peekSession(
  routerUrl: string,
  id: string,
): Promise<
  | { worker_id: string; dp_rank: number; kind: string; ttl_ms: number; expires_at_ms: number }
  | undefined
> {
  const r = await fetch(`${routerUrl}/debug/sessions/${encodeURIComponent(id)}`);
  if (r.status === 404) return undefined;
  if (!r.ok) throw new Error(`GET /debug/sessions/${id}: HTTP ${r.status}`);
  return (await r.json()) as {
    worker_id: string;
    dp_rank: number;
    kind: string;
    ttl_ms: number;
    expires_at_ms: number;
  };
}

/** One cached block as `worker/block_hash/tokens_hash`, comparable across engines and routers. */
export type BlockKey = string;

/** Every block the engines hold (dp rank 0), from their /kv/query tree dumps. */
export async function engineBlocks(
  engineUrls: readonly string[],
  headers: Record<string, string> = {},
): Promise<Set<BlockKey>> {
  const out = new Set<BlockKey>();
  for (const url of engineUrls) {
    const resp = parseWorkerKvQueryResponse(
      await (await fetch(`${url}/kv/query?dp_rank=0`, { headers })).text(),
    );
    if (resp.kind !== "tree_dump")
      throw new Error(`expected a tree dump from ${url}, got ${resp.kind}`);
    for (const ev of resp.events) {
      if (ev.event.data.type !== "stored") continue;
      for (const b of ev.event.data.blocks)
        out.add(`${ev.workerId}/${b.blockHash}/${b.tokensHash}`);
    }
  }
  return out;
}

/** Every block in a router's index, from its /debug/kv/dump. */
export async function routerBlocks(
  routerUrl: string,
  headers: Record<string, string> = {},
): Promise<Set<BlockKey>> {
  const res = await fetch(`${routerUrl}/debug/kv/dump`, { headers });
  if (!res.ok) throw new Error(`GET /debug/kv/dump: HTTP ${res.status}`);
  const json = parseJsonBigintSafe(await res.text()) as {
    events: {
      worker_id: string | number | bigint;
      event: {
        data: {
          stored?: {
            blocks: {
              block_hash: string | number | bigint;
              tokens_hash: string | number | bigint;
            }[];
          };
        };
      };
    }[];
  };
  const out = new Set<BlockKey>();
  for (const ev of json.events) {
    for (const b of ev.event.data.stored?.blocks ?? [])
      out.add(`${BigInt(ev.worker_id)}/${BigInt(b.block_hash)}/${BigInt(b.tokens_hash)}`);
  }
  return out;
}

/** Whether two block sets are equal, and a one-line summary of how they differ (failure messages). */
export function compareBlocks(
  engines: ReadonlySet<BlockKey>,
  router: ReadonlySet<BlockKey>,
): { same: boolean; detail: string } {
  const missing = [...engines].filter((b) => !router.has(b)).length;
  const extra = [...router].filter((b) => !engines.has(b)).length;
  return {
    same: missing === 0 && extra === 0,
    detail: `engines ${engines.size} blocks, router ${router.size} (${missing} missing, ${extra} extra)`,
  };
}

/** The tokens_hash of every block a router's index holds for the engine at `workerUrl` (GET /debug/kv/dump). */
export async function indexedTokenHashes(
  routerUrl: string,
  workerUrl: string,
): Promise<Set<bigint>> {
  const dump = parseJsonBigintSafe(await (await fetch(`${routerUrl}/debug/kv/dump`)).text()) as {
    events: {
      worker_id: bigint | number | string;
      event: { data: { stored?: { blocks: { tokens_hash: bigint | number | string }[] } } };
    }[];
  };
  const worker = workerIdFromUrl(workerUrl);
  const out = new Set<bigint>();
  for (const ev of dump.events) {
    if (BigInt(ev.worker_id) !== worker) continue;
    for (const b of ev.event.data.stored?.blocks ?? []) out.add(BigInt(b.tokens_hash));
  }
  return out;
}
