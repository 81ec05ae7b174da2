/**
 * Every KV event to every router: one EventPublisher (own queue, own POST in flight) per
 * `--router-url`, so a slow or absent router delays and loses only its own batches, and every
 * router sees every event in id order. Push failures go to a rate-limited log, so a router that
 * is down does not flood it. It makes no HTTP route.
 */
import type { RouterEvent } from "../core/events.ts";
import type { MockerConfig } from "./options.ts";
import { EventPublisher } from "./publisher.ts";

export interface EventFanout {
  readonly publishers: readonly EventPublisher[];
  /** Undefined without a router: no event leaves the process (each rank's recovery ring still keeps them). */
  readonly emit: ((e: RouterEvent) => void) | undefined;
}

export function eventFanout(
  config: Pick<MockerConfig, "routerUrls" | "eventsToken" | "eventBatchMs">,
  fetchFn: typeof fetch | undefined,
  log: (line: string) => void,
): EventFanout {
  const publishers = config.routerUrls.map(
    (routerUrl) =>
      new EventPublisher({
        routerUrl,
        eventsToken: config.eventsToken,
        batchMs: config.eventBatchMs,
        fetch: fetchFn,
        onError: rateLimited(log),
      }),
  );
  const emit =
    publishers.length === 0
      ? undefined
      : publishers.length === 1
        ? (e: RouterEvent) => publishers[0]!.push(e)
        : (e: RouterEvent) => {
            for (const p of publishers) p.push(e);
          };
  return { publishers, emit };
}

/** One line per 10 s at most, so a router that is down does not flood the log. */
function rateLimited(log: (line: string) => void): (line: string) => void {
  let last = -Infinity;
  let suppressed = 0;
  return (line) => {
    const now = performance.now();
    if (now - last < 10_000) {
      suppressed++;
      return;
    }
    last = now;
    log(suppressed > 0 ? `${line} (+${suppressed} similar)` : line);
    suppressed = 0;
  };
}
