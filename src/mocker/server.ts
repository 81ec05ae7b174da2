/**
 * The simulated engine's process (Bun.serve): it resolves the options, builds the engine, its
 * event fan-out and (on a prefill or decode engine) the KV hand-off, and mounts the route
 * groups on one Hono app. Each group lives in its own file and gets only the state it uses:
 * openai-routes.ts (completions, chat, models), native-routes.ts (tokenize, embeddings, rerank,
 * responses, SGLang generate, ...), engine-routes.ts (engine info, metrics), kv-routes.ts (the
 * recovery query and KV admin), handoff-routes.ts (disaggregated prefill/decode), lora-routes.ts,
 * session-routes.ts, sglang-info-routes.ts (SGLang's server info), health-routes.ts (probes and the
 * drain gate). This file only composes.
 *
 * @example
 * const m = await startMocker({ port: 0, kvBlocks: 1024 });
 * await fetch(`${m.url}/v1/completions`, { method: "POST", body: JSON.stringify({ prompt: "hi" }) });
 * await m.stop();
 */
import { tmpdir } from "node:os";
import { Hono } from "hono";
import { isRouterError } from "../core/errors.ts";
import type { WorkerId } from "../core/ids.ts";
import { workerIdFromUrl } from "../core/worker-id.ts";
import { requireNativeLibrary } from "../transfer/native/library.ts";
import { type Clock, type EngineDeps, MockEngine } from "./engine.ts";
import { diskTierPath, RankTiers, sweepDiskTiers } from "./kv-tiers.ts";
import { engineRoutes } from "./engine-routes.ts";
import { eventFanout } from "./event-fanout.ts";
import { handoffRoutes } from "./handoff-routes.ts";
import { requestedRank } from "./headers.ts";
import { health } from "./health-routes.ts";
import { adminCheck, error, HttpError, type Route } from "./http.ts";
import { KvHandoff } from "./kv-handoff.ts";
import { kvRoutes } from "./kv-routes.ts";
import { loraRoutes } from "./lora-routes.ts";
import { nativeRoutes } from "./native-routes.ts";
import { openAiRoutes, unknownModelAnswer } from "./openai-routes.ts";
import { PeerKv } from "./peer-pull.ts";
import { peerRoutes } from "./peer-routes.ts";
import { type MockerConfig, type MockerOptions, resolveMockerOptions } from "./options.ts";
import { requestLogWriter } from "./request-log.ts";
import { sessionRoutes } from "./session-routes.ts";
import { sglangInfoRoutes } from "./sglang-info-routes.ts";
import {
  byteTokenizer,
  loadMockerTokenizer,
  withAnotherTemplate,
  type MockerTokenizer,
} from "./tokenizer.ts";

export interface StartMockerOptions extends MockerOptions {
  /** Where to report push failures and the like (default: stderr, rate-limited). */
  log?: (line: string) => void;
  /** Injected for tests (default: global fetch). */
  fetch?: typeof fetch;
}

export interface MockerHandle {
  /** Base URL, e.g. http://127.0.0.1:40123 (no trailing slash). */
  readonly url: string;
  readonly port: number;
  readonly workerId: WorkerId;
  /** The engine itself, for in-process tests and embedding. */
  readonly engine: MockEngine;
  /** Push every pending KV event to every router now (no-op without --router-url). */
  flushEvents(): Promise<void>;
  /**
   * Graceful shutdown: new requests are refused (503, so routers try another engine), GET
   * /health answers 503 "draining", requests in flight (streams included) get up to
   * `timeoutMs` to finish; then stop(). Resolves whether all finished.
   */
  drain(timeoutMs: number): Promise<boolean>;
  stop(): Promise<void>;
}

/** Each rank's host (and disk) tier through the native library; none without --kv-host-blocks. */
function tierFactory(config: MockerConfig, workerId: WorkerId): EngineDeps["makeTiers"] {
  if (config.kvHostBlocks === 0) return undefined;
  const lib = requireNativeLibrary();
  const dir = config.kvDiskDir ?? tmpdir();
  const hex = workerId.toString(16);
  if (config.kvDiskBlocks > 0) sweepDiskTiers(dir, hex);
  return (dpRank, record) =>
    new RankTiers({
      lib,
      blockBytes: config.kvBlockBytes,
      gpuBlocks: config.kvBlocks,
      hostBlocks: config.kvHostBlocks,
      diskBlocks: config.kvDiskBlocks,
      diskPath: diskTierPath(dir, hex, dpRank),
      record,
    });
}

const realClock: Clock = { now: () => performance.now(), sleep: (ms) => Bun.sleep(ms) };

export async function startMocker(opts: StartMockerOptions = {}): Promise<MockerHandle> {
  const config = resolveMockerOptions(opts);
  const log = opts.log ?? ((line: string) => console.error(`[mocker] ${line}`));
  // Loaded once at start, never per request.
  const ownTokenizer: MockerTokenizer =
    config.tokenizer !== undefined ? await loadMockerTokenizer(config.tokenizer) : byteTokenizer;
  const tokenizer = config.faultChatTemplate ? withAnotherTemplate(ownTokenizer) : ownTokenizer;

  // Listening first: the worker id defaults to one derived from the URL, which needs the port.
  const app = new Hono();
  const server = Bun.serve({
    port: config.port,
    hostname: config.host,
    // Queued requests may wait long before their first byte; never cut them off.
    idleTimeout: 0,
    fetch: (req) => app.fetch(req),
  });

  const port = server.port!;
  const url = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${port}`;
  // The id routers derive from the URL they were given: the advertised one where the listen
  // address is not what they use (0.0.0.0 in a container, a Service name, a port mapping).
  const workerId = config.workerId ?? workerIdFromUrl(config.advertiseUrl ?? url);
  const { publishers, emit } = eventFanout(
    config.faultEventsUrl !== undefined
      ? { ...config, routerUrls: [config.faultEventsUrl] }
      : config,
    opts.fetch,
    log,
  );
  const onPrefilled =
    config.requestLog === undefined
      ? undefined
      : requestLogWriter(config.requestLog, workerId, log);
  // --fault-block-size: the cache runs on other blocks than the ones this engine says it has (as
  // a vLLM whose model enlarged its block size); everything it advertises keeps --block-size.
  const engineConfig =
    config.faultBlockSize !== undefined ? { ...config, blockSize: config.faultBlockSize } : config;
  const eng = new MockEngine({
    config: engineConfig,
    workerId,
    clock: realClock,
    emit,
    onPrefilled,
    makeTiers: tierFactory(config, workerId),
  });
  // Prefill and decode engines move real KV bytes through the native library; an ordinary
  // engine (role both) never loads it.
  const newHandoff = () =>
    new KvHandoff({
      lib: requireNativeLibrary(),
      workerIdHex: workerId.toString(16),
      blockBytes: config.kvBlockBytes,
      poolBlocks: config.kvPoolBlocks,
      leaseMs: config.kvLeaseMs,
      log,
    });
  const handoff = config.role === "both" ? null : newHandoff();
  // Peer pulls (either side) need the native library only once one happens.
  let peerHandoff: KvHandoff | null = handoff;
  const peer = new PeerKv({
    engine: eng,
    handoff: () => (peerHandoff ??= newHandoff()),
    config: engineConfig,
    fetch: opts.fetch ?? fetch,
    log,
  });
  const peerHttp = peerRoutes(peer);

  let seq = 0;
  const newId = (prefix: string) => `${prefix}-${workerId.toString(36)}-${++seq}`;
  const probes = health();
  const disagg = handoffRoutes({
    handoff,
    engine: eng,
    config,
    port,
    workerId,
    fetch: opts.fetch ?? fetch,
    log,
  });
  const routes: Route[] = [
    ...openAiRoutes({
      engine: eng,
      tokenizer,
      workerId,
      newId,
      handoff: disagg,
      peer: peerHttp,
      log,
    }),
    ...probes.routes,
    ...engineRoutes({
      advertisedBlockSize: config.blockSize,
      engine: eng,
      workerId,
      // Who this process is: a router that sees these change knows the engine restarted and
      // its cache is empty (src/fleet/restart-detector.ts), even when no event says so.
      instanceId: crypto.randomUUID(),
      startedAt: Date.now(),
      port,
      tokenizer,
      publishers,
      handoffStats: handoff?.stats,
      peerStats: peer.stats,
    }),
    ...kvRoutes({ engine: eng, workerId, requireAdmin: adminCheck(config.adminToken) }),
    ...loraRoutes(eng),
    ...sessionRoutes(eng),
    ...sglangInfoRoutes({ engine: eng, tokenizer }),
    ...disagg.routes,
    ...peerHttp.routes,
    ...nativeRoutes({
      engine: eng,
      tokenizer,
      newId,
      unknownModel: unknownModelAnswer(eng),
      dpRank: (req) => requestedRank(req, eng.ranks.length),
    }),
  ];
  /** Exact paths some route serves: another method there is a 405, any other path a 404. */
  const knownPaths = new Set(routes.filter((r) => !r.path.includes("*")).map((r) => r.path));

  // Errors: HttpError -> its status, RouterError invalid_request -> 400, anything else 500
  // (logged). Unknown paths 404, known paths with another method 405, in the engine's shape.
  app.onError((e) => {
    if (e instanceof HttpError) return error(e.status, e.message, e.type);
    if (isRouterError(e) && e.code === "invalid_request")
      return error(400, e.message, "invalid_request_error");
    log(`internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    return error(500, e instanceof Error ? e.message : String(e), "internal_error");
  });
  app.notFound((c) => {
    const path = c.req.path;
    const known = knownPaths.has(path);
    const method = c.req.method;
    return error(
      known ? 405 : 404,
      known ? `method ${method} not allowed on ${path}` : `no route ${method} ${path}`,
      known ? "method_not_allowed" : "not_found",
    );
  });
  app.use("*", probes.gate);
  for (const r of routes) app.on(r.method, r.path, r.handle);

  return {
    url,
    port,
    workerId,
    engine: eng,
    flushEvents: async () => {
      await Promise.all(publishers.map((p) => p.flush()));
    },
    drain: async (timeoutMs) => {
      probes.startDrain();
      // Still listening: routers see 503 on /health and on new requests (and go elsewhere).
      const end = performance.now() + timeoutMs;
      while (server.pendingRequests > 0 && performance.now() < end) await Bun.sleep(25);
      const finished = server.pendingRequests === 0;
      await server.stop(true);
      await Promise.all(publishers.map((p) => p.stop()));
      peerHandoff?.stop();
      eng.close();
      return finished;
    },
    stop: async () => {
      await server.stop(true);
      await Promise.all(publishers.map((p) => p.stop()));
      peerHandoff?.stop();
      eng.close();
    },
  };
}
