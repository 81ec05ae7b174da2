/**
 * The router on a runtime that is not Bun (src/runtime/deno.ts today): the same decision room
 * (createRouter) and the same HTTP app (createApp) as src/main.ts, built only from portable
 * pieces — the portable TypeScript block hasher, the in-memory session store or, with
 * `--redis https://…`, the shared Redis store and active-load sync over Upstash's REST protocol
 * (fetch only; load sync through a polled Redis Stream), KV events over HTTP (POST
 * /v1/kv/events, recovery queries with fetch), upstream calls with fetch, and the pure-JS
 * tokenizer where the platform can read files (Deno: `readText`). What needs Bun (the native
 * hasher over bun:ffi, ZMQ, RESP Redis — `redis://` — embedded engines, the workers file watch,
 * the tokenizer worker pool, Bun's direct streams) is refused by name before anything starts
 * (`refusedFlags`, `refusedValues`). The RESP openers are never imported here: Bun's entry
 * injects them (src/sync/redis-client.ts, src/sync/transport.ts).
 *
 * The runtime entry passes `serve` (its HTTP server), `sleep` and `readText`; the composition
 * itself is the one Bun uses too (./compose.ts).
 */
import { createApp } from "../edge/app.ts";
import type { Logger } from "../edge/log.ts";
import type { Config } from "../config/schema.ts";
import { scanFlags } from "../config/flag-scan.ts";
import { portableBatchHasher } from "../core/hashing.ts";
import { loadEngineTokenizer } from "../tokens/load.ts";
import { composeRouter, reachableHost, StartupError } from "./compose.ts";

/** A start-up input the operator can fix (a tokenizer that cannot load): one line, exit 2. */
export { StartupError as PortableStartupError };

/** Flags (and the environment variables that set them) that need Bun; refused by name elsewhere. */
export const BUN_ONLY_FLAGS: Readonly<Record<string, string>> = {
  "--engines": "embedded simulated engines run on Bun's server",
  "--engine-speedup": "embedded simulated engines run on Bun's server",
  "--zmq-endpoint": "ZMQ event streams use libzmq over bun:ffi (send events over HTTP instead)",
  "--zmq-replay-endpoint": "ZMQ event streams use libzmq over bun:ffi",
  "--zmq-dp-ranks": "ZMQ event streams use libzmq over bun:ffi",
  "--workers-file": "the workers-file watch reads files with Bun",
  "--tokenizer-workers": "the encode pool uses Bun Workers",
  "--disagg": "disaggregated prefill/decode is wired by the Bun entry only",
  "--disagg-min-prefill-tokens": "disaggregated prefill/decode is wired by the Bun entry only",
  "--bootstrap-port": "disaggregated prefill/decode is wired by the Bun entry only",
  "--prefill-worker": "disaggregated prefill/decode is wired by the Bun entry only",
  "--decode-worker": "disaggregated prefill/decode is wired by the Bun entry only",
  "--engine-metrics-interval": "engine metrics scraping is wired by the Bun entry only",
  "--busy-waiting": "engine metrics scraping is wired by the Bun entry only",
  "--idle-timeout": "a client idle timeout is a Bun server option",
};

/** One problem per flag given on the command line that this runtime cannot honour. */
export function refusedFlags(argv: readonly string[], runtime: string, refused: Readonly<Record<string, string>>): string[] {
  const out: string[] = [];
  for (const item of scanFlags(argv, () => false)) {
    if ("flag" in item && refused[item.flag] !== undefined && !out.some((p) => p.startsWith(`${item.flag}:`))) {
      out.push(`${item.flag}: not available on ${runtime} (${refused[item.flag]})`);
    }
  }
  return out;
}

/**
 * Flag values this runtime cannot honour (a flag may be fine with one value, not another):
 * `--redis redis://…` needs RESP over TCP (Bun's RedisClient); `https://` (Upstash REST) works.
 * Checked on the parsed config, so the environment variables that set --redis count too.
 */
export function refusedValues(config: Pick<Config, "redis" | "tokenizerLibrary"> & Partial<Pick<Config, "otlpEndpoint">>, runtime: string): string[] {
  const out: string[] = [];
  const scheme = config.redis?.slice(0, config.redis.indexOf(":") + 1).toLowerCase();
  if (scheme === "redis:" || scheme === "rediss:") {
    out.push(`--redis: ${scheme}// is not available on ${runtime} (RESP needs Bun's RedisClient over TCP; use Upstash REST: --redis https://… --redis-token …)`);
  }
  // Checked on the value, so OTEL_EXPORTER_OTLP_ENDPOINT in the environment is refused too, not silently ignored.
  if (config.otlpEndpoint !== undefined) {
    out.push(`--otlp-endpoint: span export is not available on ${runtime} (the OpenTelemetry exporter is wired by the Bun entry only; the trace context is still passed to the engines)`);
  }
  if (config.tokenizerLibrary === "native") {
    out.push(`--tokenizer-library: native is not available on ${runtime} (HF's Rust addon loads on Bun/Node only; use hf or bpe)`);
  }
  return out;
}

export interface PortableServer {
  readonly port: number;
  stop(): Promise<void>;
}

export interface PortablePlatform {
  /** Listen on (host, port) and answer with `fetch`; `peer` gives a request's address when the runtime can tell. */
  serve(fetch: (req: Request) => Response | Promise<Response>, port: number, host: string): Promise<PortableServer>;
  readonly peer: (req: Request) => string | undefined;
  readonly sleep: (ms: number) => Promise<void>;
  /** Reads a text file (tokenizer directories); without it --tokenizer is refused. */
  readonly readText?: (path: string) => Promise<string>;
}

export interface PortableRouter {
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
}

export async function startPortableRouter(config: Config, platform: PortablePlatform, log: Logger): Promise<PortableRouter> {
  const readText = platform.readText;
  const c = await composeRouter(
    config,
    {
      hasher: portableBatchHasher,
      // The pure-JS tokenizer (src/tokens), where the platform can read files.
      loadTokenizer:
        readText === undefined
          ? undefined
          : (dir) => loadEngineTokenizer(dir, { readText, now: () => Date.now(), byteLevelBpe: config.tokenizerLibrary === "bpe" }),
      sleep: platform.sleep,
      // Loopback names only: the portable runtimes do not list network interfaces.
      localHosts: () => ["127.0.0.1", "localhost", "::1", config.host],
    },
    log,
  );
  const app = createApp({ ...c.deps, peer: platform.peer });
  const server = await platform.serve((req) => app.fetch(req), config.port, config.host);
  c.listeningOn(server.port);
  const url = `http://${reachableHost(config.host)}:${server.port}`;
  await c.registerAll(config.workers);
  c.startChecks();
  log.info(`switchyard listening on ${url}`, { policy: config.policy, workers: c.registry.size, block_size: config.blockSize });
  return {
    url,
    port: server.port,
    async stop() {
      c.stopWork();
      await server.stop();
      await c.close();
    },
  };
}
