/**
 * Load sync: this router's active load shared with the others through Redis (--redis), once
 * the router's books exist. redis:// goes through the runtime's pub/sub opener; https://
 * (Upstash REST) through a polled Redis Stream. Nothing without --redis.
 */
import type { Config } from "../../config/schema.ts";
import { routerIdHex, type RouterId } from "../../core/ids.ts";
import type { Logger } from "../../core/logger.ts";
import type { createRouter } from "../../router/index.ts";
import {
  DEFAULT_SYNC_COMMAND_TIMEOUT_MS,
  startLoadSync,
  type LoadSync,
} from "../../sync/load-sync.ts";
import type { RuntimeChoices } from "./choices.ts";

export async function startSync(
  config: Config,
  choices: Pick<RuntimeChoices, "pubsub">,
  log: Logger,
  d: {
    readonly tracker: ReturnType<typeof createRouter>["tracker"];
    readonly routerId: RouterId;
    readonly now: () => number;
  },
): Promise<LoadSync | undefined> {
  if (config.redis === undefined) return undefined;
  const loadSync = await startLoadSync({
    url: config.redis,
    token: config.redisToken,
    pubsub: choices.pubsub,
    // --redis-timeout is a request's budget; the sync is off the request path and waits at
    // least the probe's deadline (load-sync.ts), more where the operator allows requests more.
    commandTimeoutMs: Math.max(config.redisTimeout * 1000, DEFAULT_SYNC_COMMAND_TIMEOUT_MS),
    tracker: d.tracker,
    routerId: d.routerId,
    now: d.now,
    log,
  });
  log.info("active load: shared with the other routers through Redis", {
    router_id: routerIdHex(d.routerId),
  });
  return loadSync;
}
