/**
 * The one list of guards (src/edge/guards.ts) that the Hono app and Bun's fast routes share:
 * its order, which guards a path meets, and that a refusal stops the request where it is.
 */
import { describe, expect, test } from "bun:test";
import { appliesTo, guarded, requestGuards, type PathGuard } from "../../../src/edge/guards.ts";
import { harness } from "./harness.ts";

function recorder(name: string, seen: string[], refuse = false): PathGuard["guard"] {
  return async (_req, _path, next) => {
    seen.push(`${name} in`);
    if (refuse) return new Response(name, { status: 403 });
    const res = await next();
    seen.push(`${name} out`);
    return res;
  };
}

describe("guards", () => {
  test("a handler meets the guards of its path in the list's order, and passes back through them", async () => {
    const seen: string[] = [];
    const list: PathGuard[] = [
      { paths: ["*"], guard: recorder("first", seen) },
      { paths: ["/v1/workers", "/debug/*"], guard: recorder("admin", seen) },
      { paths: ["/v1/completions"], guard: recorder("keys", seen) },
    ];
    const handler = guarded(list, "/v1/completions", async () => {
      seen.push("handler");
      return new Response("ok");
    });
    expect(await (await handler(new Request("http://r/v1/completions"))).text()).toBe("ok");
    expect(seen).toEqual(["first in", "keys in", "handler", "keys out", "first out"]);
  });

  test("a refusal answers at once: later guards and the handler never run", async () => {
    const seen: string[] = [];
    const list: PathGuard[] = [
      { paths: ["*"], guard: recorder("draining", seen, true) },
      { paths: ["*"], guard: recorder("keys", seen) },
    ];
    const res = await guarded(
      list,
      "/v1/completions",
      async () => new Response("handler"),
    )(new Request("http://r/"));
    expect(res.status).toBe(403);
    expect(seen).toEqual(["draining in"]);
  });

  test("patterns: everything, an exact path, a prefix", () => {
    expect(appliesTo("*", "/x")).toBe(true);
    expect(appliesTo("/debug/*", "/debug/status")).toBe(true);
    expect(appliesTo("/debug/*", "/v1/debug")).toBe(false);
    expect(appliesTo("/v1/workers", "/v1/workers/1")).toBe(false);
  });

  test("the router's list: the observation, the draining refusal, the admin check, in that order, only the configured ones", () => {
    const h = harness({ workers: [], fetch: async () => new Response("") });
    const plain = requestGuards(h.deps);
    expect(plain.map((g) => g.paths[0])).toEqual(["/v1/workers"]); // admin only: no observation, no draining, no keys
    const draining = requestGuards({
      ...h.deps,
      access: { ...h.deps.access, draining: () => false },
    });
    expect(draining.map((g) => g.paths[0])).toEqual(["*", "/v1/workers"]);
  });

  test("while draining, a completion is refused through the list and a probe passes", async () => {
    const h = harness({ workers: [], fetch: async () => new Response("") });
    const guards = requestGuards({ ...h.deps, access: { ...h.deps.access, draining: () => true } });
    const answer = async () => new Response("served");
    expect(
      (await guarded(guards, "/v1/completions", answer)(new Request("http://r/v1/completions")))
        .status,
    ).toBe(503);
    expect(
      await (await guarded(guards, "/health", answer)(new Request("http://r/health"))).text(),
    ).toBe("served");
  });
});
