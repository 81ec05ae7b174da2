/**
 * The recovery driver's WorkerQuery over HTTP: GET {url}/kv/query?dp_rank=&start_id=&end_id=
 * on the worker, decoded by protocol/kv-query-wire.ts. No start_id asks for a full tree dump. The
 * worker's URL comes from the registry at call time, so a re-registered worker is found.
 */
import type { DpRank, EventId, WorkerId } from "../../core/ids.ts";
import type { WorkerKvQueryResponse } from "../../protocol/kv-query.ts";
import type { WorkerQuery } from "../../router/index.ts";
import { parseWorkerKvQueryResponse } from "../../protocol/kv-query-wire.ts";

export interface KvQueryClientOptions {
  readonly urlOf: (workerId: WorkerId) => string | undefined;
  readonly timeoutMs: number;
  readonly fetch?: (url: string, init: RequestInit) => Promise<Response>;
  readonly headers?: Record<string, string>;
}

export function kvQueryClient(o: KvQueryClientOptions): WorkerQuery {
  const doFetch = o.fetch ?? ((url, init) => fetch(url, init));
  return async (
    workerId: WorkerId,
    dpRank: DpRank,
    startId?: EventId,
    endId?: EventId,
  ): Promise<WorkerKvQueryResponse> => {
    const base = o.urlOf(workerId);
    if (base === undefined)
      return { kind: "error", message: `worker ${workerId} is not registered` };
    const q = new URLSearchParams({ dp_rank: String(dpRank) });
    if (startId !== undefined) q.set("start_id", startId.toString());
    if (endId !== undefined) q.set("end_id", endId.toString());
    const res = await doFetch(`${base}/kv/query?${q}`, {
      headers: o.headers,
      signal: AbortSignal.timeout(o.timeoutMs),
    });
    const text = await res.text();
    if (!res.ok && !text.startsWith("{"))
      return { kind: "error", message: `GET /kv/query answered HTTP ${res.status}` };
    return parseWorkerKvQueryResponse(text);
  };
}
