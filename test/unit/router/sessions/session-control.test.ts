/**
 * nvext.session_control is checked whole before any engine is called: a timeout the store
 * cannot hold (1e308 s overflowed to an infinite TTL) used to pass the parse, open the
 * session on the engine, and only then fail with a 400, leaving an engine session that
 * never expires. The binding failing after an open closes the engine session again.
 */
import { describe, expect, test } from "bun:test";
import {
  applySessionTurn,
  MAX_SESSION_TIMEOUT_S,
  sessionControlOf,
  type EngineSessionOps,
} from "../../../../src/router/sessions/session-control.ts";
import { RouterError } from "../../../../src/core/errors.ts";
import { worker } from "../../../../src/core/ids.ts";
import type { RequestLease } from "../../../../src/router/books/request-lease.ts";
import type { StickyRouter } from "../../../../src/router/sessions/sticky.ts";
import { harness, jsonResponse, sseResponse, type FakeFetch } from "../../edge/harness.ts";

const W1 = { id: 11n, url: "http://w1:1" };

const body = (timeout: unknown) => ({
  prompt: "abcdefgh",
  nvext: { session_control: { session_id: "s", action: "open", timeout } },
});

function fieldOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    if (e instanceof RouterError) return e.field;
  }
  return undefined;
}

describe("session_control.timeout bounds", () => {
  test("above one day, infinite or absurd: 400 naming the field; the bound itself is accepted", () => {
    for (const t of [1e308, MAX_SESSION_TIMEOUT_S + 1, 1e20]) {
      expect(fieldOf(() => sessionControlOf(body(t)))).toBe("nvext.session_control.timeout");
    }
    expect(sessionControlOf(body(MAX_SESSION_TIMEOUT_S))?.timeoutS).toBe(MAX_SESSION_TIMEOUT_S);
  });

  test("through the app: timeout 1e308 is a 400 and the engine is never asked to open", async () => {
    const engine: FakeFetch = async (url) =>
      new URL(url).pathname.startsWith("/v1/sessions/")
        ? jsonResponse({ status: "ok" })
        : sseResponse(3);
    const h = harness({ workers: [W1], fetch: engine });
    const r = await h.request("/v1/completions", { json: body(1e308) });
    expect(r.status).toBe(400);
    const err = (await r.json()) as { error: { param: string; message: string } };
    expect(err.error.param).toBe("nvext.session_control.timeout");
    expect(h.calls.filter((c) => c.url.includes("/v1/sessions/"))).toEqual([]);
    expect((await h.request("/debug/sessions/s")).status).toBe(404);
  });
});

describe("applySessionTurn", () => {
  test("a binding that fails after the engine opened closes the engine session and frees the booking", async () => {
    const calls: string[] = [];
    const engine: EngineSessionOps = {
      open: async (_w, id) => void calls.push(`open ${id}`),
      close: (_w, id) => void calls.push(`close ${id}`),
    };
    let freed = 0;
    const lease = { free: () => void freed++, afterFree: () => {} } as unknown as RequestLease;
    const sticky = {
      bindEngineSession: async () => Promise.reject(new Error("store refused")),
    } as unknown as StickyRouter;
    const sc = { sessionId: "s", action: "open" as const, timeoutS: 10 };
    await expect(applySessionTurn(sc, worker(1, 0), lease, sticky, engine)).rejects.toThrow(
      "store refused",
    );
    expect(calls).toEqual(["open s", "close s"]);
    expect(freed).toBe(1);
  });
});
