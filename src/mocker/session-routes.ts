/**
 * Engine sessions: POST /v1/sessions/open, POST /v1/sessions/close, GET /v1/sessions (what was
 * opened and closed, so tests can check that a router closes each session exactly once). The
 * bookkeeping is sessions.ts; this file only reads bodies and the wall clock.
 */
import type { MockEngine } from "./engine.ts";
import { json, readJson, type Route } from "./http.ts";
import { parseSessionClose, parseSessionOpen } from "./requests.ts";
import { DEFAULT_SESSION_TIMEOUT_S } from "./sessions.ts";

export function sessionRoutes(engine: MockEngine): Route[] {
  return [
    {
      method: "POST",
      path: "/v1/sessions/open",
      handle: async (c) => {
        const { sessionId, timeoutS } = parseSessionOpen(
          await readJson(c.req.raw),
          DEFAULT_SESSION_TIMEOUT_S,
        );
        engine.sessions.open(sessionId, timeoutS, Date.now());
        return json({ status: "ok" });
      },
    },
    {
      method: "POST",
      path: "/v1/sessions/close",
      handle: async (c) => {
        const { sessionId } = parseSessionClose(await readJson(c.req.raw));
        engine.sessions.close(sessionId, Date.now());
        return json({ status: "ok" });
      },
    },
    {
      method: "GET",
      path: "/v1/sessions",
      handle: () => json({ sessions: engine.sessions.list(Date.now()) }),
    },
  ];
}
