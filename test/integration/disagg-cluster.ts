/**
 * A disaggregated cluster of real processes for the P/D integration tests: simulated prefill
 * and decode engines (`bun src/main.ts mocker --role ... --disagg ...`) and a router in front
 * (`serve --disagg ... --prefill-worker ... --decode-worker ...`), ports chosen at run time,
 * every process stopped by PID. Also the checks every test makes: no booking left, no
 * shared-memory segment left, no corrupted block.
 */
import { readdirSync } from "node:fs";
import { freePort, startMain, stopAll, until, type Proc } from "../support/processes.ts";
import type { WorkerView } from "./multi-router-cluster.ts";

export const TOKEN = "disagg-admin-token";
/** Engines push events with their own credential, never the admin token. */
export const EVENTS_TOKEN = "disagg-events-token-0123";
export const BS = 16;
export const admin = { authorization: `Bearer ${TOKEN}` };

export interface Cluster {
  routerUrl: string;
  router: Proc;
  prefill: Proc[];
  decode: Proc[];
  stop(): Promise<void>;
}

/** The hand-off segments of these engines now in /dev/shm (sy-kv-<worker id hex>-...). */
export function segmentsOf(engines: readonly Proc[]): string[] {
  const prefixes = engines.map((e) => `sy-kv-${BigInt(String(e.info.worker_id)).toString(16)}-`);
  return readdirSync("/dev/shm").filter((n) => prefixes.some((p) => n.startsWith(p)));
}

export function engineArgs(
  role: "prefill" | "decode",
  protocol: "vllm" | "sglang",
  routerUrl: string,
  extra: readonly string[] = [],
): string[] {
  return [
    "mocker",
    "--port",
    "0",
    "--router-url",
    routerUrl,
    "--admin-token",
    TOKEN,
    "--events-token",
    EVENTS_TOKEN,
    "--event-batch-ms",
    "2",
    "--block-size",
    String(BS),
    "--role",
    role,
    "--disagg",
    protocol,
    "--kv-block-bytes",
    "8192",
    "--kv-lease-ms",
    "3000",
    "--speedup",
    "4",
    ...extra,
  ];
}

export async function startCluster(
  protocol: "vllm" | "sglang",
  opts: {
    prefill: number;
    decode: number;
    minPrefillTokens: number;
    routerArgs?: readonly string[];
  },
): Promise<Cluster> {
  const port = freePort();
  const routerUrl = `http://127.0.0.1:${port}`;
  const prefill = await Promise.all(
    Array.from({ length: opts.prefill }, () =>
      startMain(engineArgs("prefill", protocol, routerUrl)),
    ),
  );
  const decode = await Promise.all(
    Array.from({ length: opts.decode }, () => startMain(engineArgs("decode", protocol, routerUrl))),
  );
  const router = await startMain([
    "serve",
    "--port",
    String(port),
    "--host",
    "127.0.0.1",
    "--admin-token",
    TOKEN,
    "--events-token",
    EVENTS_TOKEN,
    "--block-size",
    String(BS),
    "--disagg",
    protocol,
    "--disagg-min-prefill-tokens",
    String(opts.minPrefillTokens),
    "--health-interval",
    "1",
    ...prefill.flatMap((e) => ["--prefill-worker", String(e.info.url)]),
    ...decode.flatMap((e) => ["--decode-worker", String(e.info.url)]),
    ...(opts.routerArgs ?? []),
  ]);
  const c: Cluster = {
    routerUrl,
    router,
    prefill,
    decode,
    stop: () => stopAll([router, ...c.prefill, ...c.decode]),
  };
  await until(async () => {
    const ws = await workers(c);
    return ws.length === opts.prefill + opts.decode && ws.every((w) => w.healthy);
  }, "every worker registered and healthy");
  // The registration canary sends a known prompt twice straight to each engine: tests that count
  // an engine's requests must start after it, or its second send lands inside their count.
  await until(
    async () =>
      (await workers(c)).every(
        (w) =>
          w.cache_truth === undefined ||
          (w.cache_truth.length > 0 && w.cache_truth.every((r) => r.canary != null)),
      ),
    "every engine's registration canary finished",
    30_000,
  );
  return c;
}

export type { WorkerView } from "./multi-router-cluster.ts";

export async function workers(c: Cluster): Promise<WorkerView[]> {
  const r = await fetch(`${c.routerUrl}/v1/workers`, { headers: admin });
  return ((await r.json()) as { workers: WorkerView[] }).workers;
}

/** Every booking of every worker back to zero. */
export async function bookingsReleased(c: Cluster): Promise<void> {
  let last: WorkerView[] = [];
  await until(
    async () => {
      last = await workers(c);
      return last.every((w) => w.active_prefill_tokens === 0 && w.active_decode_blocks === 0);
    },
    () => `bookings released: ${JSON.stringify(last)}`,
  );
}

/** Prometheus text of a process, as one number per metric name (labels summed). */
export async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith(name) && (line[name.length] === " " || line[name.length] === "{"))
      sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return sum;
}

export async function metricLabelled(url: string, name: string, label: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}{`) && l.includes(label));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1));
}

/** Sum of a metric over engines. */
export async function sumOver(engines: readonly Proc[], name: string): Promise<number> {
  let s = 0;
  for (const e of engines) s += await metric(String(e.info.url), name).catch(() => 0);
  return s;
}

/** A prompt of token ids: `blocks` full blocks + `extra` tokens, distinct per `seed`. */
export function tokens(blocks: number, seed: number, extra = 3): number[] {
  return Array.from(
    { length: blocks * BS + extra },
    (_, i) => 1000 + ((seed * 7919 + i * 31) % 30000),
  );
}

export function complete(c: Cluster, body: Record<string, unknown>): Promise<Response> {
  return fetch(`${c.routerUrl}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}
