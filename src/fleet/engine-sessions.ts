/**
 * Engine-backed sessions over HTTP, as Dynamo's agent controller does them: open on the chosen
 * engine before the binding is made (it must answer {"status":"ok"}, else the request fails, so
 * no binding points at an engine without the session), close after the session's last request
 * or when its binding expires. The simulated engine serves POST /v1/sessions/open {session_id,
 * timeout} and /v1/sessions/close {session_id}. Closes are fire-and-forget: a failure is
 * logged, and the engine's own timeout (router TTL + 30 s) ends the session anyway.
 */
import type { WorkerId } from "../core/ids.ts";

type Fetch = (url: string, init: RequestInit) => Promise<Response>;

export interface EngineSessions {
  /** Open `sessionId` on the worker for `timeoutS` seconds; rejects unless it answers {"status":"ok"}. */
  open(worker: WorkerId, sessionId: string, timeoutS: number): Promise<void>;
  /** Close it; never rejects. */
  close(worker: WorkerId, sessionId: string): void;
}

export interface EngineSessionsOptions {
  readonly urlOf: (worker: WorkerId) => string | undefined;
  readonly timeoutMs?: number;
  readonly fetch?: Fetch;
  readonly warn?: (message: string) => void;
  /** Every open/close attempt and its outcome (metrics). */
  readonly onResult?: (action: "open" | "close", ok: boolean) => void;
}

export function engineSessions(o: EngineSessionsOptions): EngineSessions {
  const doFetch: Fetch = o.fetch ?? ((u, i) => fetch(u, i));
  const timeoutMs = o.timeoutMs ?? 5_000;
  const call = async (worker: WorkerId, path: string, body: unknown): Promise<void> => {
    const url = o.urlOf(worker);
    if (url === undefined) throw new Error(`worker ${worker} is not registered`);
    const res = await doFetch(`${url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    let status: unknown;
    try {
      status = (JSON.parse(text) as { status?: unknown }).status;
    } catch {
      status = undefined;
    }
    if (!res.ok || status !== "ok")
      throw new Error(
        `${path} on worker ${worker} answered HTTP ${res.status}: ${text.slice(0, 200)}`,
      );
  };
  return {
    async open(worker, sessionId, timeoutS) {
      try {
        await call(worker, "/v1/sessions/open", { session_id: sessionId, timeout: timeoutS });
        o.onResult?.("open", true);
      } catch (e) {
        o.onResult?.("open", false);
        // The engine's URL and answer go to the log only: this error reaches the client (502).
        o.warn?.(
          `could not open session ${sessionId} on worker ${worker}: ${(e as Error).message}`,
        );
        throw new Error("the engine did not accept the session (the router's log has its answer)");
      }
    },
    close(worker, sessionId) {
      call(worker, "/v1/sessions/close", { session_id: sessionId }).then(
        () => o.onResult?.("close", true),
        (e: unknown) => {
          o.onResult?.("close", false);
          o.warn?.(
            `could not close session ${sessionId} on worker ${worker}: ${(e as Error).message}`,
          );
        },
      );
    },
  };
}
