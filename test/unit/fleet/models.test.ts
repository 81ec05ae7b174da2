import { describe, expect, test } from "bun:test";
import { WorkerMembership } from "../../../src/fleet/membership.ts";
import { ModelDirectory, fetchServedModels, parseModelList } from "../../../src/fleet/models.ts";
import { WorkerRegistry } from "../../../src/fleet/registry.ts";
import { HealthChecker } from "../../../src/fleet/health.ts";

describe("parseModelList", () => {
  test("vLLM's list: base models with parent null, adapters with their parent", () => {
    const body = {
      object: "list",
      data: [
        { id: "llama", object: "model", root: "/m/llama", parent: null },
        { id: "sql", root: "/l/sql", parent: "llama" },
        { id: "old" },
      ],
    };
    expect(parseModelList(body)).toEqual([
      { id: "llama", parent: null, fields: { root: "/m/llama" } },
      { id: "sql", parent: "llama", fields: { root: "/l/sql" } },
      { id: "old", parent: null },
    ]);
  });

  test("anything else is not a model list", () => {
    for (const b of [null, {}, { data: "x" }, { data: [{ id: "" }] }, { data: [{ id: 3 }] }])
      expect(parseModelList(b)).toBeUndefined();
  });

  test("fetchServedModels names the URL and the problem", async () => {
    const f = (status: number, text: string) => async () => new Response(text, { status });
    const signal = AbortSignal.timeout(1000);
    await expect(fetchServedModels("http://w", signal, f(404, "no"))).rejects.toThrow(
      "GET http://w/v1/models answered HTTP 404",
    );
    await expect(fetchServedModels("http://w", signal, f(200, "{"))).rejects.toThrow("not JSON");
    await expect(fetchServedModels("http://w", signal, f(200, "{}"))).rejects.toThrow(
      "not an OpenAI model list",
    );
    expect(await fetchServedModels("http://w", signal, f(200, '{"data":[{"id":"m"}]}'))).toEqual([
      { id: "m", parent: null },
    ]);
  });
});

describe("ModelDirectory", () => {
  test("servedBy, isBase and parentOf follow every worker's list; union lists each name once", () => {
    const d = new ModelDirectory();
    expect(
      d.set(1n, [
        { id: "a", parent: null },
        { id: "a-lora", parent: "a" },
      ]),
    ).toBe(true);
    expect(d.set(2n, [{ id: "a", parent: null }])).toBe(true);
    expect(d.set(3n, [{ id: "b", parent: null }])).toBe(true);
    expect(d.set(3n, [{ id: "b", parent: null }])).toBe(false); // unchanged
    expect([...d.servedBy("a")]).toEqual([1n, 2n]);
    expect([...d.servedBy("a-lora")]).toEqual([1n]);
    expect([...d.servedBy("nope")]).toEqual([]);
    expect(d.isBase("a")).toBe(true);
    expect(d.isBase("a-lora")).toBe(false);
    expect(d.parentOf("a-lora")).toBe("a");
    expect(d.parentOf("a")).toBeUndefined();
    expect(d.union([1n, 2n, 3n]).map((m) => m.id)).toEqual(["a", "a-lora", "b"]);
    d.remove(1n);
    expect([...d.servedBy("a")]).toEqual([2n]);
    expect(d.of(1n)).toBeUndefined();
  });

  test("an engine's other fields are kept as they change, without counting as a new list (vLLM makes up permission ids per answer)", () => {
    const d = new ModelDirectory();
    expect(
      d.set(1n, [{ id: "a", parent: null, fields: { permission: [{ id: "modelperm-1" }] } }]),
    ).toBe(true);
    expect(
      d.set(1n, [{ id: "a", parent: null, fields: { permission: [{ id: "modelperm-2" }] } }]),
    ).toBe(false);
    expect(d.of(1n)).toEqual([
      { id: "a", parent: null, fields: { permission: [{ id: "modelperm-2" }] } },
    ]);
  });
});

describe("models at registration and on health checks", () => {
  test("registration reads the engine's list, or takes `models` from the request; removal forgets it", async () => {
    const registry = new WorkerRegistry();
    const directory = new ModelDirectory();
    const asked: string[] = [];
    const m = new WorkerMembership({
      registry,
      blockSize: 16,
      load: { updateWorkers() {} },
      recovery: { addRank() {}, removeWorker() {} },
      engineInfo: async () => ({ loras: [] }),
      models: { directory, fetch: async (url) => (asked.push(url), [{ id: "m1", parent: null }]) },
    });
    const a = await m.register({ url: "http://a:1" });
    expect(directory.of(a.worker.id)).toEqual([{ id: "m1", parent: null }]);
    const b = await m.register({ url: "http://b:1", models: ["x", "y"] });
    expect(directory.of(b.worker.id)).toEqual([
      { id: "x", parent: null },
      { id: "y", parent: null },
    ]);
    expect(asked).toEqual(["http://a:1"]);
    m.remove(a.worker.id);
    expect(directory.of(a.worker.id)).toBeUndefined();
  });

  test("an engine without /v1/models is registered with an unknown list", async () => {
    const registry = new WorkerRegistry();
    const directory = new ModelDirectory();
    const m = new WorkerMembership({
      registry,
      blockSize: 16,
      load: { updateWorkers() {} },
      recovery: { addRank() {}, removeWorker() {} },
      engineInfo: async () => ({ loras: [] }),
      models: { directory, fetch: async () => Promise.reject(new Error("HTTP 404")) },
    });
    const a = await m.register({ url: "http://a:1" });
    expect(a.worker.healthy).toBe(true);
    expect(directory.of(a.worker.id)).toBeUndefined();
  });

  test("a good health check runs afterHealthy (the model refresh); its failure does not make the worker unhealthy", async () => {
    const registry = new WorkerRegistry();
    registry.add(7n, "http://w:1", 1, false);
    const seen: string[] = [];
    const h = new HealthChecker({
      registry,
      intervalMs: 1e9,
      timeoutMs: 500,
      fetch: async () => new Response("ok"),
      afterHealthy: async (id, url, signal) => {
        seen.push(`${id} ${url} ${signal.aborted}`);
        throw new Error("models down");
      },
    });
    expect(await h.check(7n)).toBe(true);
    expect(registry.get(7n)!.healthy).toBe(true);
    expect(seen).toEqual(["7 http://w:1 false"]);
  });
});
