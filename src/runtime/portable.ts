/**
 * The router on a runtime that is not Bun (src/runtime/deno.ts, workerd.ts): the same router core
 * (createRouter) and the same HTTP app (createApp) as src/main.ts, built only from portable
 * pieces — the portable TypeScript block hasher, the in-memory session store or, with
 * `--redis https://…`, the shared Redis store and active-load sync over Upstash's REST protocol
 * (fetch only; load sync through a polled Redis Stream), KV events over HTTP (POST
 * /v1/kv/events, recovery queries with fetch), upstream calls with fetch, and the pure-JS
 * tokenizer where the platform can read files (Deno: `readText`). What needs Bun (the native
 * hasher over bun:ffi, ZMQ, RESP Redis — `redis://` — embedded engines, the workers file watch,
 * the tokenizer worker pool, Kubernetes discovery, Bun's direct streams) is refused by name
 * before anything starts, unless left at its default: the options table's runtime column says
 * which (loadConfig with `runtime`, src/config/runtimes.ts). The RESP openers are never imported here: Bun's entry
 * injects them (src/sync/redis-client.ts, src/sync/transport.ts).
 *
 * The runtime entry passes `serve` (its HTTP server), `sleep` and `readText`; the composition
 * itself is the one Bun uses too (./compose/).
 */
import { createApp } from "../edge/app.ts";
import type { Logger } from "../core/logger.ts";
import type { Config } from "../config/schema.ts";
import { portableBatchHasher } from "../core/block-hash.ts";
import { loadEngineTokenizer } from "../tokens/load.ts";
import { composeRouter, listeningLine, reachableHost, StartupError } from "./compose/index.ts";
import type { KeysFileSource } from "../protect/keys-watch.ts";

/** A start-up input the operator can fix (a tokenizer that cannot load): one line, exit 2. */
export { StartupError as PortableStartupError };

export interface PortableServer {
  readonly port: number;
  stop(): Promise<void>;
}

export interface PortablePlatform {
  /** Listen on (host, port) and answer with `fetch`; `peer` gives a request's address when the runtime can tell. */
  serve(
    fetch: (req: Request) => Response | Promise<Response>,
    port: number,
    host: string,
  ): Promise<PortableServer>;
  readonly peer: (req: Request) => string | undefined;
  readonly sleep: (ms: number) => Promise<void>;
  /** Reads a text file (tokenizer directories); without it --tokenizer is refused. */
  readonly readText?: (path: string) => Promise<string>;
  /** Reads the --api-keys file; without it --api-keys is refused at start. */
  readonly keysFile?: KeysFileSource;
}

export interface PortableRouter {
  readonly url: string;
  readonly port: number;
  /** /health answers 503 while requests are still served (the drain delay before stop). */
  stopReadiness(): void;
  stop(): Promise<void>;
}

export async function startPortableRouter(
  config: Config,
  platform: PortablePlatform,
  log: Logger,
): Promise<PortableRouter> {
  const readText = platform.readText;
  const c = await composeRouter(
    config,
    {
      hasher: portableBatchHasher,
      // The pure-JS tokenizer (src/tokens), where the platform can read files.
      loadTokenizer:
        readText === undefined
          ? undefined
          : (dir) =>
              loadEngineTokenizer(dir, {
                readText,
                now: () => Date.now(),
                byteLevelBpe:
                  config.tokenizerLibrary === "auto"
                    ? "guarded"
                    : config.tokenizerLibrary === "bpe",
              }),
      sleep: platform.sleep,
      // Loopback names only: the portable runtimes do not list network interfaces.
      localHosts: () => ["127.0.0.1", "localhost", "::1", config.host],
      keysFile: platform.keysFile,
    },
    log,
  );
  const app = createApp(c.edgeDeps({ peer: platform.peer }));
  const server = await platform.serve((req) => app.fetch(req), config.port, config.host);
  c.listeningOn(server.port);
  const url = `http://${reachableHost(config.host)}:${server.port}`;
  await c.registerAll(config.workers);
  c.startChecks();
  log.info(listeningLine(config.host, server.port), {
    policy: config.policy,
    workers: c.registry.size,
    block_size: config.blockSize,
  });
  return {
    url,
    port: server.port,
    stopReadiness: () => c.stopReadiness(),
    async stop() {
      c.stopWork();
      await server.stop();
      await c.close();
    },
  };
}
