/**
 * Engine-backed sessions (Dynamo's sticky sessions): the request body's `nvext.session_control`
 * `{session_id, action?: "open" | "close", timeout?: seconds}`.
 *   open   the engine opens the session first (timeout + 30 s, so the router's expiry comes
 *          first), then the binding is made engine-backed with ttl = timeout;
 *   close  the binding goes now; the engine closes the session once the request is done;
 *   none   a middle turn: the binding's TTL slides (resolve), nothing else.
 * An engine-backed binding that expires is closed on its engine by the store's on-expire
 * (exactly once across routers with the Redis store). Header sessions (X-Session-ID) stay
 * router-only and never touch the engine.
 */
import { RouterError } from "../../core/errors.ts";
import type { WorkerId, WorkerWithDpRank } from "../../core/ids.ts";
import {
  DEFAULT_SESSION_TIMEOUT_S,
  SESSION_TIMEOUT_FALLBACK_BUFFER_S,
  type StickyRouter,
} from "./sticky.ts";
import type { RequestLease } from "../books/request-lease.ts";

export interface SessionControl {
  readonly sessionId: string;
  readonly action: "open" | "close" | undefined;
  /** Seconds. */
  readonly timeoutS: number;
}

/** Opening and closing sessions on engines (fleet/engine-sessions.ts over HTTP). */
export interface EngineSessionOps {
  open(worker: WorkerId, sessionId: string, timeoutS: number): Promise<void>;
  close(worker: WorkerId, sessionId: string): void;
}

const PARAM = "nvext.session_control";

/**
 * Longest session_control.timeout (seconds): one day. Without a bound `1e308` passed the
 * parse, the engine opened the session, and only then did the binding refuse a TTL that
 * overflows to Infinity (a 400 after the engine call; a session that never expires).
 */
export const MAX_SESSION_TIMEOUT_S = 86_400;

function bad(field: string, message: string): RouterError {
  return new RouterError("invalid_request", `${PARAM}.${field}: ${message}`, `${PARAM}.${field}`);
}

/** `nvext.session_control` of a parsed body; undefined when absent. Throws 400 naming the field. */
export function sessionControlOf(body: Record<string, unknown>): SessionControl | undefined {
  const nvext = body.nvext;
  if (nvext === undefined || nvext === null) return undefined;
  if (typeof nvext !== "object" || Array.isArray(nvext))
    throw new RouterError("invalid_request", "nvext: must be an object", "nvext");
  const sc = (nvext as Record<string, unknown>).session_control;
  if (sc === undefined || sc === null) return undefined;
  if (typeof sc !== "object" || Array.isArray(sc))
    throw new RouterError("invalid_request", `${PARAM}: must be an object`, PARAM);
  const o = sc as Record<string, unknown>;
  if (typeof o.session_id !== "string" || o.session_id.trim() === "")
    throw bad("session_id", "must be a non-empty string");
  const action = o.action ?? undefined;
  if (action !== undefined && action !== "open" && action !== "close")
    throw bad("action", 'must be "open" or "close"');
  const timeout = o.timeout ?? DEFAULT_SESSION_TIMEOUT_S;
  if (
    typeof timeout !== "number" ||
    !Number.isFinite(timeout) ||
    timeout <= 0 ||
    timeout > MAX_SESSION_TIMEOUT_S
  ) {
    throw bad("timeout", `must be a number of seconds > 0 and <= ${MAX_SESSION_TIMEOUT_S}`);
  }
  return { sessionId: o.session_id, action, timeoutS: timeout };
}

/**
 * After the worker is chosen: open on the engine and bind (open), or unbind and close after
 * the request (close). A refused open fails the request (502) and releases its booking.
 * Every check that can refuse the turn runs before the engine is called; should the
 * binding still fail after an open, the engine session is closed again, never left open.
 */
export async function applySessionTurn(
  sc: SessionControl,
  worker: WorkerWithDpRank,
  lease: RequestLease,
  sticky: StickyRouter,
  engine: EngineSessionOps | undefined,
): Promise<void> {
  if (sc.action === undefined) return;
  if (!engine) {
    lease.free(); // the booking was made for this request; a refused turn must not leak it
    throw new RouterError(
      "invalid_request",
      `${PARAM}.action: engine sessions are not available on this router`,
      `${PARAM}.action`,
    );
  }
  if (sc.action === "open") {
    try {
      await engine.open(
        worker.workerId,
        sc.sessionId,
        sc.timeoutS + SESSION_TIMEOUT_FALLBACK_BUFFER_S,
      );
    } catch (e) {
      lease.free();
      throw new RouterError(
        "upstream_failed",
        `worker ${worker.workerId} did not open session ${sc.sessionId}: ${(e as Error).message}`,
      );
    }
    try {
      await sticky.bindEngineSession(sc.sessionId, worker, sc.timeoutS * 1000);
    } catch (e) {
      lease.free();
      engine.close(worker.workerId, sc.sessionId);
      throw e;
    }
    return;
  }
  await sticky.unbind(sc.sessionId);
  lease.afterFree(() => engine.close(worker.workerId, sc.sessionId));
}
