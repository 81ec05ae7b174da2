/**
 * What this engine is and how it is doing: GET /v1/engine/info (identity, shape, role; a
 * router reads `instance_id` / `started_at` to notice a restart that sent no event) and GET
 * /metrics (Prometheus text from metrics.ts). Read-only: it changes no engine state.
 */
import type { WorkerId } from "../core/ids.ts";
import type { MockEngine } from "./engine.ts";
import { json, type Route } from "./http.ts";
import type { HandoffStats } from "./kv-handoff.ts";
import type { PeerStats } from "./peer-pull.ts";
import { renderMetrics } from "./metrics.ts";
import type { EventPublisher } from "./publisher.ts";
import type { MockerTokenizer } from "./tokenizer.ts";

export interface EngineRouteDeps {
  readonly engine: MockEngine;
  readonly workerId: WorkerId;
  /** Fresh per process: a router that sees it change knows the cache it indexed is gone. */
  readonly instanceId: string;
  /** Unix milliseconds when this process started. */
  readonly startedAt: number;
  readonly port: number;
  readonly tokenizer: MockerTokenizer;
  readonly publishers: readonly EventPublisher[];
  /** Hand-off counters on a prefill or decode engine; absent on an ordinary one. */
  readonly handoffStats: HandoffStats | undefined;
  readonly peerStats?: PeerStats;
  /** The block size it says it has (--block-size), when --fault-block-size runs another. */
  readonly advertisedBlockSize?: number;
}

export function engineRoutes(deps: EngineRouteDeps): Route[] {
  const { engine: eng, workerId, port } = deps;
  const config = eng.config;

  function engineInfo(): unknown {
    return {
      worker_id: workerId.toString(),
      instance_id: deps.instanceId,
      started_at: deps.startedAt,
      dp_ranks: config.dpRanks,
      // --fault-block-size: the engine says the block size it was started with, not the one it runs.
      block_size:
        config.faultBlockSize !== undefined
          ? (deps.advertisedBlockSize ?? config.blockSize)
          : config.blockSize,
      kv_blocks: config.kvBlocks,
      loras: eng.loras.list(),
      max_loras: config.maxLoras,
      model: config.model,
      models: config.models,
      tokenizer: deps.tokenizer.source,
      max_concurrency: config.maxConcurrency,
      role: config.role,
      ...(config.role !== "both"
        ? { disagg: config.disagg, bootstrap_port: port, kv_block_bytes: config.kvBlockBytes }
        : {}),
    };
  }

  return [
    { method: "GET", path: "/v1/engine/info", handle: () => json(engineInfo()) },
    {
      method: "GET",
      path: "/metrics",
      handle: () =>
        new Response(renderMetrics(eng, deps.publishers, deps.handoffStats, deps.peerStats), {
          headers: { "content-type": "text/plain; version=0.0.4" },
        }),
    },
  ];
}
