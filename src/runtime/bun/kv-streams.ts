/**
 * vLLM's ZMQ KV event streams on Bun (libzmq over bun:ffi): the sources, the provisioner that
 * registers a worker with its stream (POST /v1/workers with kv_events, the workers file), and
 * the --zmq-endpoint subscriptions made at start. vLLM serves no /kv/query, so its part of the
 * index comes from its events only (lossy ingest: an id gap wipes the rank first).
 */
import type { Logger } from "../../core/logger.ts";
import type { WorkerRoles } from "../../edge/disagg/roles.ts";
import type { Config } from "../../config/schema.ts";
import type { BatchBlockHasher } from "../../core/block-hash.ts";
import { ZmqEventSources } from "./zmq/sources.ts";
import type { ComposedRouter } from "../compose/index.ts";
import { WorkerProvisioner } from "../../fleet/provisioner.ts";

export function kvEventStreams(
  config: Config,
  composed: ComposedRouter,
  hasher: BatchBlockHasher,
  roles: WorkerRoles,
  log: Logger,
) {
  const sources = new ZmqEventSources({
    blockSize: config.blockSize,
    hasher,
    log,
    onEvents: (events) => void composed.router.ingestLossy(events),
  });
  const provisioner = new WorkerProvisioner({
    membership: composed.membership,
    sources,
    setRole: (url, role) => roles.set(url, role),
    eventsUnused: config.policy === "approx",
  });
  return {
    sources,
    provisioner,
    /** --zmq-endpoint: each worker registered with its stream; a failure is logged, not thrown. */
    async subscribeConfigured(): Promise<void> {
      for (const z of config.zmqEndpoints) {
        try {
          await provisioner.register({
            url: z.workerUrl,
            kvEvents: {
              endpoint: z.endpoint,
              replayEndpoint: z.replayEndpoint,
              dpRanks: z.dpRanks,
              topic: "",
            },
          });
        } catch (e) {
          log.error(
            `cannot subscribe to the KV events of ${z.workerUrl} at ${z.endpoint}: ${(e as Error).message}`,
          );
        }
      }
    },
  };
}
