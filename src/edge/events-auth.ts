/**
 * The door of POST /v1/kv/events, the one route engines call. Engines carry their own
 * credential (--events-token on the router, the same on each engine), never the admin token:
 * an engine's configuration is spread over many pods and images, and a leaked copy must not
 * open the admin API. A batch with the events token passes; anything else meets the admin door
 * (the admin token; a loopback peer only at the zero-config start and without an events token). A refused push is a silent gap
 * in the index, so each is counted (switchyard_kv_event_pushes_refused_total{reason}) and the
 * first refusal of each engine (by peer address) is logged once, naming the flag to set.
 */
import type { Counter } from "../observe/registry.ts";
import { adminDoorRefusal, refusalResponse, type AdminOpenness, type PeerAddress } from "./auth.ts";
import type { Logger } from "../core/logger.ts";

/** Engines whose first refusal was logged; past this many, further engines are not logged (the metric still counts). */
const MAX_LOGGED_ENGINES = 4096;

export type EventPushRefusal = "missing" | "invalid" | "forbidden";

export const EVENT_PUSH_REFUSALS: readonly EventPushRefusal[] = ["missing", "invalid", "forbidden"];

export interface EventsDoor {
  readonly eventsToken: string | undefined;
  readonly adminToken: string | undefined;
  readonly openness: AdminOpenness;
  readonly peer: PeerAddress;
  readonly refused: Counter;
  readonly log: Logger;
}

const encoder = new TextEncoder();

/** Equal strings, compared without an early exit (no timing hint of a matching prefix). */
function sameSecret(a: string, b: string): boolean {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  let diff = x.length ^ y.length;
  const n = Math.max(x.length, y.length);
  for (let i = 0; i < n; i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
}

/** The guard (guards.ts) of POST /v1/kv/events. */
export function eventsGuard(
  d: EventsDoor,
): (req: Request, path: string, next: () => Promise<Response>) => Promise<Response> {
  const logged = new Set<string>();
  return async (req, _path, next) => {
    const authorization = req.headers.get("authorization") ?? "";
    const bearer = /^Bearer\s+(.+)$/i.exec(authorization)?.[1]?.trim();
    if (d.eventsToken !== undefined && bearer !== undefined && sameSecret(bearer, d.eventsToken))
      return next();
    // With an events token, engines are expected to carry it: no address passes instead.
    const refused =
      d.eventsToken !== undefined && d.adminToken === undefined
        ? {
            status: 401 as const,
            code: "unauthorized" as const,
            message: "KV event push: the bearer token is not --events-token",
          }
        : adminDoorRefusal(d.adminToken, d.openness, d.peer, req);
    if (refused === null) return next();
    const reason: EventPushRefusal =
      refused.status === 403 ? "forbidden" : authorization === "" ? "missing" : "invalid";
    d.refused.inc([reason]);
    const engine = d.peer(req) ?? "unknown";
    if (!logged.has(engine) && logged.size < MAX_LOGGED_ENGINES) {
      logged.add(engine);
      const fix =
        d.eventsToken === undefined
          ? "set --events-token on the router and the same token on every engine"
          : "give the engine the router's --events-token";
      d.log.warn(
        `KV event push refused (${reason}): ${fix}; further refusals from this engine are counted in switchyard_kv_event_pushes_refused_total, not logged`,
        { peer: engine, status: refused.status },
      );
    }
    return refusalResponse(
      d.eventsToken === undefined
        ? refused
        : {
            ...refused,
            message: `KV event push: send \`Authorization: Bearer <--events-token>\` (${refused.message})`,
          },
    );
  };
}
