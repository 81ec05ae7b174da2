/**
 * Bun's fast routes (createFastRoutes) answer /v1/completions and /v1/chat/completions without
 * the app's router, so they honour only the middleware they re-implement: the draining refusal
 * and the error answers. This guards that statement (src/edge/README.md): a middleware added to
 * the app that applies to those paths fails the first test until the fast path honours it too.
 */
import { describe, expect, test } from "bun:test";
import { createApp, createFastRoutes } from "../../../src/edge/app.ts";
import { harness } from "./harness.ts";

const FAST_PATHS = ["/v1/completions", "/v1/chat/completions"];
/** The app middleware the fast path re-implements, by its registered path: the draining guard. */
const HONOURED_BY_FAST_PATH = ["/*"];

function applies(pattern: string, path: string): boolean {
  if (pattern === "*" || pattern === "/*") return true;
  if (pattern.endsWith("/*")) return path.startsWith(pattern.slice(0, -1));
  return pattern === path;
}

describe("fast routes", () => {
  test("the only app middleware on the completion paths is the one the fast path honours", () => {
    const h = harness({ workers: [], fetch: async () => new Response("") });
    const app = createApp({ ...h.deps, access: { ...h.deps.access, draining: () => false } });
    const middleware = app.routes
      .filter((r) => r.method === "ALL" && FAST_PATHS.some((p) => applies(r.path, p)))
      .map((r) => r.path);
    expect(middleware).toEqual(HONOURED_BY_FAST_PATH);
  });

  test("they refuse new requests while draining, like the app", async () => {
    let draining = true;
    const h = harness({
      workers: [{ id: 1n, url: "http://w1:1" }],
      fetch: async () => new Response("{}"),
    });
    const fast = createFastRoutes({
      ...h.deps,
      access: { ...h.deps.access, draining: () => draining },
    });
    const res = await fast["/v1/completions"]!.POST(
      new Request("http://r/v1/completions", { method: "POST", body: "{}" }),
    );
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("1");
    draining = false;
  });

  test("their errors are the app's errors: OpenAI's shape and status", async () => {
    const h = harness({
      workers: [{ id: 1n, url: "http://w1:1" }],
      fetch: async () => new Response("{}"),
    });
    const fast = createFastRoutes(h.deps);
    const viaFast = await fast["/v1/chat/completions"]!.POST(
      new Request("http://r/v1/chat/completions", { method: "POST", body: "{" }),
    );
    const viaApp = await h.request("/v1/chat/completions", { method: "POST", body: "{" });
    expect(viaFast.status).toBe(400);
    expect(viaFast.status).toBe(viaApp.status);
    expect(await viaFast.json()).toEqual(await viaApp.json());
  });
});
