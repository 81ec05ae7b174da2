/**
 * The engine's KV cache from outside: GET /kv/query (the recovery query a router asks after a
 * gap in a rank's events: the events of an id range, or the whole tree when the range left the
 * ring) and the admin routes POST /kv/clear (drop the cache, emit `cleared`) and POST
 * /admin/restart-events (a simulated restart: caches empty, ids from 0, no event). The answers
 * come from rank-kv.ts; this file only reads parameters and checks the admin token.
 */
import type { WorkerId } from "../core/ids.ts";
import { workerKvQueryResponseToWire } from "../protocol/kv-query-wire.ts";
import type { MockEngine } from "./engine.ts";
import { HttpError, json, type Route } from "./http.ts";
import { dpRankValue, u64Param } from "./requests.ts";

export interface KvRouteDeps {
  readonly engine: MockEngine;
  readonly workerId: WorkerId;
  /** Throws a 401 when the request lacks the admin token (a no-op without one). */
  readonly requireAdmin: (req: Request) => void;
}

export function kvRoutes(deps: KvRouteDeps): Route[] {
  const { engine: eng, workerId, requireAdmin } = deps;

  function kvQuery(req: Request): Response {
    const params = new URL(req.url).searchParams;
    const rank = dpRankValue(params.get("dp_rank"), eng.ranks.length, "dp_rank") ?? 0;
    const asked = u64Param(params, "worker_id");
    // A router that asks the wrong engine must not index this one's blocks under another id.
    if (asked !== undefined && asked !== workerId) {
      throw new HttpError(
        400,
        `worker_id ${asked} is not this worker (${workerId})`,
        "invalid_request_error",
      );
    }
    const r = eng.ranks[rank]!.kv.query(u64Param(params, "start_id"), u64Param(params, "end_id"));
    return json(workerKvQueryResponseToWire(r));
  }

  return [
    { method: "GET", path: "/kv/query", handle: (c) => kvQuery(c.req.raw) },
    {
      method: "POST",
      path: "/kv/clear",
      handle: (c) => {
        requireAdmin(c.req.raw);
        const rank = dpRankValue(c.req.query("dp_rank") ?? null, eng.ranks.length, "dp_rank");
        eng.clearCache(rank);
        return json({ status: "ok" });
      },
    },
    {
      method: "POST",
      path: "/admin/restart-events",
      handle: (c) => {
        requireAdmin(c.req.raw);
        eng.restartEvents();
        return json({ status: "ok" });
      },
    },
  ];
}
