/**
 * The app's answers beyond its routes: a wrong method on a known path is a 405 naming the
 * methods it takes (`Allow`, OpenAI's error body), an unknown path stays a 404, and GET
 * /version says what build answers.
 */
import { describe, expect, test } from "bun:test";
import pkg from "../../../package.json" with { type: "json" };
import { harness, jsonResponse } from "./harness.ts";

const W1 = { id: 11n, url: "http://w1:1" };

function app() {
  return harness({ workers: [W1], fetch: async () => jsonResponse({ ok: true }) });
}

describe("wrong method on a known path", () => {
  test.each([
    ["GET", "/v1/completions", "POST"],
    ["PUT", "/v1/chat/completions", "POST"],
    ["POST", "/v1/models", "GET, HEAD"],
    ["DELETE", "/health", "GET, HEAD"],
    ["GET", "/v1/workers/42", "DELETE"],
    ["DELETE", "/v1/workers", "GET, HEAD, POST"],
    ["GET", "/v1/route/abc/prefill-done", "POST"],
  ])("%s %s: 405, Allow: %s, in OpenAI's shape", async (method, path, allow) => {
    const r = await app().request(path, { method });
    expect(r.status).toBe(405);
    expect(r.headers.get("allow")).toBe(allow);
    expect(await r.json()).toEqual({
      error: {
        message: `${method} is not allowed on ${path}; use ${allow}`,
        type: "invalid_request_error",
        param: null,
        code: "method_not_allowed",
      },
    });
  });

  test("an unknown path is still a 404 without Allow", async () => {
    const r = await app().request("/v1/completions/extra", { method: "POST" });
    expect(r.status).toBe(404);
    expect(r.headers.get("allow")).toBeNull();
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe("not_found");
  });

  test("the admin guard still comes first: a non-loopback peer is refused before any 405", async () => {
    const h = harness({ workers: [W1], fetch: async () => jsonResponse({}), peer: "10.0.0.9" });
    expect((await h.request("/v1/workers/42", { method: "GET" })).status).toBe(403);
  });
});

describe("GET /version", () => {
  test("the package version, the build's commit (none given: unknown) and the runtime", async () => {
    const r = await app().request("/version");
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({
      version: pkg.version,
      commit: "unknown",
      runtime: `Bun/${Bun.version}`,
    });
  });
});
