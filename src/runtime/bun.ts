/**
 * The router on Bun: `serve(config, log)` picks Bun's implementations — the native hasher over
 * bun:ffi when the library loads, the RESP Redis openers for redis://, the tokenizer loader
 * with its Worker encode pool, ZMQ event streams, the workers-file watch, embedded simulated
 * engines, the engines' metrics scraper, disaggregated prefill/decode, pooled upstream sockets
 * — hands them to the shared composition (./compose/) and serves the app with Bun.serve (hot
 * completion routes natively). The command line that calls it is src/main.ts; Deno's and
 * workerd's entries are beside this file.
 */
import { hostname, networkInterfaces } from "node:os";
import { createApp } from "../edge/app.ts";
import { WorkerRoles } from "../edge/disagg/roles.ts";
import type { Logger } from "../core/logger.ts";
import { fetchUpstream } from "../edge/proxy/upstream.ts";
import type { Config } from "../config/schema.ts";
import { openRespConnection } from "./bun/resp-client.ts";
import { openPubSubTransport } from "./bun/pubsub-transport.ts";
import { loadEngineTokenizerOnBun } from "./bun/tokens/load-on-bun.ts";
import { defaultEncodeWorkers } from "./bun/tokens/encode-pool.ts";
import { SocketHttpClient } from "./bun/upstream/socket-client.ts";
import { startEmbeddedEngines } from "./bun/embedded-engines.ts";
import { offLoopJsonParser } from "./bun/json-parse-pool.ts";
import { EngineLoad } from "./bun/engine-load.ts";
import { chooseHasher } from "./bun/hasher.ts";
import { listenOnBun } from "./bun/http-server.ts";
import { plainListener, TlsListener, type RouterListener } from "./bun/tls-listener.ts";
import { TlsPairError } from "./bun/tls-pair.ts";
import { kvEventStreams } from "./bun/kv-streams.ts";
import { MAX_WORKERS_FILE_BYTES, workersFileWatch } from "./bun/workers-file.ts";
import { readBoundedText } from "./bun/bounded-file.ts";
import { parseWorkersFile } from "../fleet/workers-file.ts";
import { kubernetesDiscovery, resolveKubeTarget } from "./bun/kube-discovery.ts";
import { registerTokenizer } from "../edge/routes/worker-models.ts";
import { bunKeysFile } from "./bun/keys-file.ts";
import {
  composeRouter,
  listeningLine,
  reachableHost,
  StartupError,
  type ComposedRouter,
  type RuntimeChoices,
  type RuntimeEdge,
} from "./compose/index.ts";
import { processProbe } from "./bun/process-probe.ts";
import { bindStreamMetrics, type StreamState } from "../observe/fleet-metrics.ts";
import { keyOf } from "../core/ids.ts";
import type { BatchBlockHasher } from "../core/block-hash.ts";
import type { Tracer } from "../observe/tracing.ts";
import { buildInfo } from "../core/build-info.ts";

export { StartupError };
export { stderrLogSink } from "./bun/log-sink.ts";

/** How often a drain looks whether requests are still in flight. */
const DRAIN_POLL_MS = 25;
/** Longest the exit waits for the last spans to reach the collector. */
const TRACE_EXPORT_ON_EXIT_MS = 2_000;

export interface RunningRouter {
  readonly url: string;
  readonly port: number;
  /**
   * Graceful shutdown. First, for `delayMs`, /health answers 503 "draining" while every
   * request is still served (load balancers need a few probes to take the router out; until
   * then they keep sending). Then new requests are refused (503 `draining`, retryable) and
   * in-flight requests (streams included) get up to `timeoutMs` to finish; then stop().
   * Resolves whether all finished.
   */
  drain(timeoutMs: number, delayMs?: number): Promise<boolean>;
  stop(): Promise<void>;
}

/** The longest events token file read (a token is a line; a larger file is a wrong path). */
const MAX_EVENTS_TOKEN_FILE_BYTES = 4096;

/**
 * The events token: --events-token, else the file --events-token-file names, else (with
 * --engines) one made for this process, so the embedded engines' pushes never rest on
 * loopback trust; else none.
 */
async function eventsTokenOf(config: Config): Promise<string | undefined> {
  if (config.eventsToken !== undefined) return config.eventsToken;
  if (config.eventsTokenFile !== undefined) {
    let token: string;
    try {
      token = (await readBoundedText(config.eventsTokenFile, MAX_EVENTS_TOKEN_FILE_BYTES)).trim();
    } catch (e) {
      throw new StartupError(
        `--events-token-file ${config.eventsTokenFile}: ${(e as Error).message}`,
      );
    }
    if (token.length < 16)
      throw new StartupError(
        `--events-token-file ${config.eventsTokenFile}: the token must be at least 16 characters`,
      );
    return token;
  }
  if (config.engines > 0)
    return Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString("base64url");
  return undefined;
}

/**
 * Build everything and serve; resolves once the server listens and start-up workers are
 * registered. Throws StartupError (one line for the operator) for a workers file that cannot
 * be read or parsed, or a port that cannot be listened on.
 */
export async function serve(config: Config, log: Logger): Promise<RunningRouter> {
  if (config.workersFile !== undefined) await checkWorkersFile(config.workersFile);
  checkPortFree(config);
  // --discover kubernetes: a config that cannot be read stops the start before anything listens.
  const kube = await resolveKubeTarget(config);
  if (kube !== undefined && "problem" in kube) throw new StartupError(kube.problem);
  const hasher = chooseHasher(log);
  const engineLoad = new EngineLoad();
  // Disaggregated prefill/decode (src/edge/disagg): roles from flags first, engine info after.
  const roles = new WorkerRoles();
  for (const u of config.prefillWorkers) roles.set(u, "prefill");
  for (const u of config.decodeWorkers) roles.set(u, "decode");
  const late: { kv?: ReturnType<typeof kvEventStreams>; server?: RouterListener } = {};
  const tracer = await otlpTracer(config, log);
  const c = await composeRouter(
    config,
    bunChoices(config, { hasher, engineLoad, roles, tracer, late, log }),
    log,
  );
  const { registry, now } = c;
  const kv = (late.kv = kvEventStreams(config, c, hasher, roles, log));
  bindStreamMetrics(c.metrics.registry, () =>
    zmqStreams(registry.list(), (id) => kv.sources.describe(id)),
  );
  wireEngineLoad(config, c, engineLoad, log);
  // Proxied requests go over pooled sockets on this thread (Bun's fetch hands each request
  // to its own client thread, which costs ~20 µs of CPU per request); https engines use fetch.
  const upstreamClient = new SocketHttpClient({
    fallback: fetchUpstream((u, init) => fetch(u, init)),
    connectTimeoutMs: config.connectTimeout * 1000,
    // A connect the router's own stalled loop could not see in time is not the engine's miss.
    loopLag: c.loopLag,
  });
  const eventsToken = await eventsTokenOf(config);
  const deps = c.edgeDeps(
    bunEdge(config, { roles, kv, engineLoad, upstreamClient, late, eventsToken }),
  );
  const app = createApp(deps);
  let server: RouterListener;
  try {
    const handler = (req: Request) => app.fetch(req);
    server = late.server =
      config.tlsCert !== undefined && config.tlsKey !== undefined
        ? await TlsListener.open({
            certPath: config.tlsCert,
            keyPath: config.tlsKey,
            port: config.port,
            start: (pair, port) => listenOnBun(config, deps, handler, { ...pair, port }),
            log,
          })
        : plainListener(listenOnBun(config, deps, handler));
  } catch (e) {
    c.stopWork();
    await c.close();
    throw e instanceof TlsPairError ? new StartupError(e.message) : listenError(config, e);
  }
  const port = server.port;
  c.listeningOn(port);
  const url = `${server.scheme}://${reachableHost(config.host)}:${port}`;

  const mockers = await startEmbeddedEngines(config, url, eventsToken, log);
  await c.registerAll([
    ...config.workers,
    ...config.prefillWorkers,
    ...config.decodeWorkers,
    ...mockers.map((m) => m.url),
  ]);
  await kv.subscribeConfigured();
  const workersFile = workersFileWatch(config.workersFile, {
    provisioner: kv.provisioner,
    registry,
    now,
    log,
  });
  await workersFile?.start();
  const discovery =
    kube &&
    kubernetesDiscovery(config, kube, {
      provisioner: kv.provisioner,
      health: c.health,
      registry,
      metrics: c.metrics.registry,
      now,
      log,
      tokenizer: (id, path) => registerTokenizer(deps.fleet, id, path),
    });
  await discovery?.start();
  c.startChecks();
  engineLoad.start();

  log.info(listeningLine(config.host, port, server.scheme), {
    policy: config.policy,
    workers: registry.size,
    block_size: config.blockSize,
  });
  return runningRouter(url, port, log, server, {
    c,
    tracer,
    // In the order they stop, after the router's own work and before it closes.
    stopParts: async () => {
      workersFile?.stop();
      await discovery?.stop();
      engineLoad.stop();
      server.stop(true);
      upstreamClient.closeIdle();
      await kv.sources.stopAll();
      await Promise.all(mockers.map((m) => m.stop()));
    },
  });
}

/** --otlp-endpoint: the OpenTelemetry SDK is loaded only when spans are exported. */
async function otlpTracer(config: Config, log: Logger): Promise<Tracer | undefined> {
  if (config.otlpEndpoint === undefined) return undefined;
  const tracer = (await import("../observe/otel-tracer.ts")).otelTracer({
    endpoint: config.otlpEndpoint,
    serviceVersion: buildInfo().version,
    resource: { "service.instance.id": crypto.randomUUID() },
  });
  log.info("traces: exporting spans over OTLP/HTTP", { endpoint: config.otlpEndpoint });
  return tracer;
}

/** Bun's implementations for the shared composition; `late` holds what exists only after it (the ZMQ streams). */
function bunChoices(
  config: Config,
  b: {
    hasher: BatchBlockHasher;
    engineLoad: EngineLoad;
    roles: WorkerRoles;
    tracer: Tracer | undefined;
    late: { kv?: ReturnType<typeof kvEventStreams> };
    log: Logger;
  },
): RuntimeChoices {
  const { engineLoad, roles } = b;
  return {
    hasher: b.hasher,
    // Prompts of 32k+ characters encode in a pool of Workers (src/runtime/bun/tokens/encode-pool.ts) unless --tokenizer-workers 0.
    loadTokenizer: (dir) =>
      loadEngineTokenizerOnBun(dir, {
        impl: config.tokenizerLibrary === "native" ? "native" : "pure",
        byteLevelBpe:
          config.tokenizerLibrary === "auto" ? "guarded" : config.tokenizerLibrary === "bpe",
        encodePool:
          config.tokenizerWorkers === 0
            ? undefined
            : { workers: config.tokenizerWorkers ?? defaultEncodeWorkers() },
      }),
    resp: openRespConnection, // redis:// is Bun's RedisClient; the portable runtimes pass none
    pubsub: openPubSubTransport,
    sleep: (ms) => Bun.sleep(ms),
    localHosts: () => [
      hostname(),
      ...Object.values(networkInterfaces()).flatMap((l) => (l ?? []).map((a) => a.address)),
    ],
    busyKeys: () => engineLoad.busy,
    engineWaiting: () => engineLoad.waiting,
    onEngineInfo: (url, info) => roles.learn(url, info), // a role the engine reports (--disagg); flags win
    onWorkerRemoved: (id) => void b.late.kv?.sources.unsubscribe(id), // its event stream ends with it
    keysFile: bunKeysFile(() =>
      b.log.warn(
        "--api-keys: this binary has no embedded parse worker; the keys file is parsed on the event loop",
      ),
    ),
    processProbe: processProbe(),
    roleOf: (url) => roles.roleOf(url),
    tracer: b.tracer,
  };
}

/** The engines' /metrics scraper, reading and writing the composed router's parts. */
function wireEngineLoad(
  config: Config,
  c: ComposedRouter,
  engineLoad: EngineLoad,
  log: Logger,
): void {
  const { registry } = c;
  engineLoad.wire(config, {
    workers: () => registry.list(),
    engineHeaders: c.engineHeaders,
    admission: c.admission,
    metrics: c.metrics,
    now: c.now,
    log,
    // A page read before its worker was removed must not give the books a capacity for it again.
    kvCapacity: (w, blocks) =>
      void (registry.has(w.workerId) && c.router.members.setKvCapacity(w, blocks)),
    // Likewise a prefill speed: the predictor keeps reports only for registered workers.
    prefillSpeed: (w, msPerToken) =>
      void (registry.has(w.workerId) && c.router.ttft.reportEngineSpeed(keyOf(w), msPerToken)),
  });
}

/** What Bun adds to the edge: the peer address and keep-open of its server (once it listens), pooled sockets, direct streams, disagg. */
function bunEdge(
  config: Config,
  b: {
    roles: WorkerRoles;
    kv: ReturnType<typeof kvEventStreams>;
    engineLoad: EngineLoad;
    upstreamClient: SocketHttpClient;
    late: { server?: RouterListener };
    eventsToken: string | undefined;
  },
): RuntimeEdge {
  const { kv, engineLoad, late } = b;
  return {
    disagg:
      config.disagg === "off"
        ? undefined
        : {
            protocol: config.disagg,
            roles: b.roles,
            minPrefillTokens: config.disaggMinPrefillTokens,
            blockSize: config.blockSize,
            defaultBootstrapPort: config.bootstrapPort,
          },
    peer: (req) => late.server?.requestIP(req)?.address,
    eventsToken: b.eventsToken,
    parseOffLoop: offLoopJsonParser()?.parse,
    upstream: b.upstreamClient.call,
    directStreams: true,
    keepOpen: (req) => late.server?.timeout(req, 0),
    provisioner: kv.provisioner,
    workerDetails: (id) => {
      const zmq = kv.sources.describe(id);
      const engine = engineLoad.describe(id);
      return { ...(zmq ? { kv_events: zmq } : {}), ...(engine ? { engine_metrics: engine } : {}) };
    },
  };
}

/** Drain and stop: the router's work first, then `stopParts` (Bun's own pieces), then the composed router and the last spans. */
function runningRouter(
  url: string,
  port: number,
  log: Logger,
  server: RouterListener,
  p: { c: ComposedRouter; tracer: Tracer | undefined; stopParts: () => Promise<void> },
): RunningRouter {
  const { c, tracer } = p;
  const running: RunningRouter = {
    url,
    port,
    async drain(timeoutMs, delayMs = 0) {
      if (delayMs > 0) {
        c.stopReadiness();
        log.info(
          `drain delay: /health answers 503 for ${delayMs / 1000} s while requests are still served`,
        );
        await Bun.sleep(delayMs);
      }
      // Still listening: probes see 503 "draining", new requests a retryable 503 (guards.ts).
      // Bun's stop(false) would close the listener and idle connections at once.
      c.startDraining();
      const end = performance.now() + timeoutMs;
      while (server.pendingRequests > 0 && performance.now() < end) await Bun.sleep(DRAIN_POLL_MS);
      const finished = server.pendingRequests === 0;
      log.info(
        finished
          ? "drained: every in-flight request finished"
          : `drain timeout (${timeoutMs / 1000} s): cutting what is left`,
      );
      await running.stop();
      return finished;
    },
    async stop() {
      c.stopWork();
      await p.stopParts();
      await c.close();
      // Spans of the last requests (the drained ones included) leave before the process does,
      // but an unreachable collector must not hold the exit past a short bound.
      if (tracer !== undefined) {
        const exported = tracer.shutdown().then(
          () => "exported",
          (e: Error) => `not exported: ${e.message}`,
        );
        const how = await Promise.race([
          exported,
          Bun.sleep(TRACE_EXPORT_ON_EXIT_MS).then(
            () => `not exported within ${TRACE_EXPORT_ON_EXIT_MS} ms`,
          ),
        ]);
        if (how !== "exported") log.warn(`traces: the last spans were ${how}`);
      }
    },
  };
  return running;
}

/** Each subscribed ZMQ (worker, dp rank) stream's state, from the sources' per-worker description. */
function* zmqStreams(
  workers: Iterable<{ readonly id: bigint }>,
  describe: (id: bigint) => Record<string, unknown> | undefined,
): Iterable<StreamState> {
  for (const w of workers) {
    const ranks = describe(w.id)?.ranks;
    if (!Array.isArray(ranks)) continue;
    for (const r of ranks as {
      dp_rank: number;
      connected: boolean;
      events: number;
      gaps: number;
      batches_lost: number;
    }[]) {
      yield {
        worker: w.id,
        dpRank: r.dp_rank,
        connected: r.connected,
        events: r.events,
        gaps: r.gaps,
        lostBatches: r.batches_lost,
      };
    }
  }
}
/**
 * The workers file must be readable and valid at start: a router started without the
 * workers it was told to route to would answer 503 to everything while looking healthy to
 * its own process supervisor. (Later rewrites that fail keep the last good list instead:
 * the router is serving by then.)
 */
async function checkWorkersFile(path: string): Promise<void> {
  let text: string;
  try {
    // Bounded as the watch reads it: a device (a symlink to /dev/zero) or a huge file is refused unread.
    text = await readBoundedText(path, MAX_WORKERS_FILE_BYTES);
  } catch (e) {
    throw new StartupError(`--workers-file ${path}: cannot read (${(e as Error).message})`);
  }
  try {
    parseWorkersFile(text, path, (t) => Bun.YAML.parse(t));
  } catch (e) {
    throw new StartupError(`--workers-file ${(e as Error).message}`);
  }
}

/**
 * A port already taken is refused before anything is built or logged, so the operator sees
 * only the one line that says so. (Taken between this probe and the real listen, it is still
 * reported the same way, after the start-up log lines.)
 */
function checkPortFree(config: Config): void {
  if (config.port === 0) return;
  let probe: { stop(closeActive?: boolean): void } | undefined;
  try {
    probe = Bun.listen({ hostname: config.host, port: config.port, socket: { data() {} } });
  } catch (e) {
    throw listenError(config, e);
  } finally {
    probe?.stop(true);
  }
}

/** Why Bun.serve refused to listen, as one line naming the flags to change. */
function listenError(config: Config, e: unknown): StartupError {
  const code = (e as { code?: string }).code;
  const where = `${config.host}:${config.port}`;
  if (code === "EADDRINUSE")
    return new StartupError(
      `--port ${config.port}: ${where} is already in use (another process listens there; pick another --port, or 0 for any free one)`,
    );
  if (code === "EACCES")
    return new StartupError(
      `--port ${config.port}: not allowed to listen on ${where} (ports below 1024 need privileges)`,
    );
  if (code === "EADDRNOTAVAIL")
    return new StartupError(`--host ${config.host}: no such address on this machine`);
  return new StartupError(
    `--port ${config.port} / --host ${config.host}: cannot listen on ${where} (${(e as Error).message})`,
  );
}
