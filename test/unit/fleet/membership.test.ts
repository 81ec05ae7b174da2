import { describe, expect, test } from "bun:test";
import { RouterError } from "../../../src/core/errors.ts";
import type { WorkerWithDpRank } from "../../../src/core/ids.ts";
import { workerIdFromUrl } from "../../../src/core/worker-id.ts";
import type { EngineInfo } from "../../../src/fleet/engine-info.ts";
import { WorkerMembership } from "../../../src/fleet/membership.ts";
import { WorkerRegistry } from "../../../src/fleet/registry.ts";
import { rejectionOf } from "../../support/errors.ts";

function setup(info: (url: string) => Promise<EngineInfo>) {
  const registry = new WorkerRegistry();
  const log: string[] = [];
  let slots: WorkerWithDpRank[] = [];
  const loras: string[] = [];
  const m = new WorkerMembership({
    registry,
    blockSize: 16,
    load: { updateWorkers: (t) => void (slots = [...t]) },
    recovery: {
      addRank: (w, r) => log.push(`addRank ${w}:${r}`),
      removeWorker: (w) => log.push(`removeWorker ${w}`),
    },
    lora: {
      handleMdcAddition: (w, i) => loras.push(`${w.workerId}:${w.dpRank}:${i.name}`),
      handleWorkerRemoval: (w) => loras.push(`-${w.workerId}:${w.dpRank}`),
    },
    engineInfo: info,
  });
  return { registry, m, log, slots: () => slots, loras };
}

const rejects = (p: Promise<unknown>): Promise<RouterError> => rejectionOf(RouterError, p);

describe("WorkerMembership", () => {
  test("registering derives the id from the URL, takes dp ranks and adapters from the engine, and restores each rank", async () => {
    const s = setup(async () => ({ dpRanks: 2, blockSize: 16, loras: ["a"], maxLoras: 2 }));
    const res = await s.m.register({ url: "http://Engine:8000/" });
    expect(res.created).toBe(true);
    expect(res.worker.id).toBe(workerIdFromUrl("http://engine:8000"));
    expect(res.worker.dpRanks).toBe(2);
    expect(res.worker.healthy).toBe(true);
    const id = res.worker.id;
    expect(s.log).toEqual([`addRank ${id}:0`, `addRank ${id}:1`]);
    expect(s.slots().length).toBe(2);
    expect(s.loras).toEqual([`${id}:0:a`, `${id}:1:a`]);
  });

  test("each rank's KV capacity reaches the load books as the engine reported it; an engine that does not say leaves it unknown", async () => {
    const capacities: string[] = [];
    const registry = new WorkerRegistry();
    const m = new WorkerMembership({
      registry,
      blockSize: 16,
      load: {
        updateWorkers: () => {},
        setKvCapacity: (w, blocks) => capacities.push(`${w.workerId}:${w.dpRank}=${blocks}`),
      },
      recovery: { addRank: () => {}, removeWorker: () => {} },
      engineInfo: async (url) =>
        url.endsWith(":1") ? { dpRanks: 2, kvBlocks: 512, loras: [] } : { loras: [] },
    });
    await m.register({ url: "http://e:1", id: 7n });
    await m.register({ url: "http://e:2", id: 8n });
    expect(capacities).toEqual(["7:0=512", "7:1=512", "8:0=undefined"]);
  });

  test("an engine without kv_blocks is asked for its capacity (vLLM, SGLang); one with kv_blocks is not; values no cache can have stay unknown, with a warning", async () => {
    const capacities: string[] = [];
    const asked: string[] = [];
    const warned: string[] = [];
    const m = new WorkerMembership({
      registry: new WorkerRegistry(),
      blockSize: 16,
      load: {
        updateWorkers: () => {},
        setKvCapacity: (w, blocks) => capacities.push(`${w.workerId}:${w.dpRank}=${blocks}`),
      },
      recovery: { addRank: () => {}, removeWorker: () => {} },
      engineInfo: async (url) => {
        if (url.endsWith(":1")) return { kvBlocks: 512, loras: [] };
        if (url.endsWith(":5")) return { kvBlocks: 0, loras: [] };
        throw new Error("GET /v1/engine/info answered HTTP 404"); // vLLM, SGLang
      },
      kvCapacity: async (url) => {
        asked.push(url);
        if (url.endsWith(":2"))
          return {
            source: "vLLM's vllm:cache_config_info",
            byRank: new Map([
              [0, 700],
              [1, 800],
            ]),
            problems: [],
          };
        if (url.endsWith(":3"))
          return {
            source: "SGLang's server info max_total_num_tokens",
            byRank: new Map(),
            problems: ["0 tokens is less than one 16-token block"],
          };
        if (url.endsWith(":4")) throw new Error("probe failed");
        return undefined;
      },
      warn: (w) => warned.push(w),
    });
    await m.register({ url: "http://e:1", id: 1n });
    await m.register({ url: "http://e:2", id: 2n, dpRanks: 3 });
    await m.register({ url: "http://e:3", id: 3n });
    await m.register({ url: "http://e:4", id: 4n });
    await m.register({ url: "http://e:5", id: 5n });
    await m.register({ url: "http://e:6", id: 6n });
    expect(asked).toEqual(["http://e:2", "http://e:3", "http://e:4", "http://e:6"]);
    expect(capacities).toEqual([
      "1:0=512",
      "2:0=700",
      "2:1=800",
      "2:2=undefined",
      "3:0=undefined",
      "4:0=undefined",
      "5:0=undefined",
      "6:0=undefined",
    ]);
    expect(warned.filter((w) => w.includes("KV capacity"))).toEqual([
      "worker 3 (http://e:3): KV capacity: SGLang's server info max_total_num_tokens not taken: 0 tokens is less than one 16-token block",
      "worker 5 (http://e:5): KV capacity unknown: its /v1/engine/info kv_blocks 0 is not a positive number of blocks",
    ]);
  });

  test("registration is idempotent for the same URL and refuses a second URL for the same id", async () => {
    const s = setup(async () => ({ loras: [] }));
    await s.m.register({ url: "http://e:1", id: 5n });
    const again = await s.m.register({ url: "http://e:1", id: 5n });
    expect(again.created).toBe(false);
    const e = await rejects(s.m.register({ url: "http://other:1", id: 5n }));
    expect(e.code).toBe("duplicate_request");
    expect(s.log.length).toBe(1);
  });

  test("a block size other than the router's is refused, naming the field", async () => {
    const s = setup(async () => ({ blockSize: 32, loras: [] }));
    const e = await rejects(s.m.register({ url: "http://e:1" }));
    expect(e.code).toBe("invalid_request");
    expect(e.field).toBe("block_size");
    expect(s.registry.size).toBe(0);
  });

  test("an engine that cannot say who it is is registered unhealthy, with a warning", async () => {
    const s = setup(async () => Promise.reject(new Error("ECONNREFUSED")));
    const res = await s.m.register({ url: "http://e:1", dpRanks: 3 });
    expect(res.worker.healthy).toBe(false);
    expect(res.worker.dpRanks).toBe(3);
    expect(res.warnings[0]).toContain("ECONNREFUSED");
  });

  test("an engine reporting another id gets a warning (its own events would be dropped)", async () => {
    const s = setup(async () => ({ workerId: 42n, loras: [] }));
    const res = await s.m.register({ url: "http://e:1" });
    expect(res.warnings.some((w) => w.includes("42"))).toBe(true);
  });

  test("bad URLs are refused", async () => {
    const s = setup(async () => ({ loras: [] }));
    expect((await rejects(s.m.register({ url: "not a url" }))).field).toBe("url");
    expect((await rejects(s.m.register({ url: "ftp://e:1" }))).field).toBe("url");
  });

  test("removing drops the worker everywhere; an unknown id is worker_not_found", async () => {
    const s = setup(async () => ({ dpRanks: 2, loras: [] }));
    const { worker } = await s.m.register({ url: "http://e:1" });
    s.m.remove(worker.id);
    expect(s.registry.size).toBe(0);
    expect(s.slots()).toEqual([]);
    expect(s.log.at(-1)).toBe(`removeWorker ${worker.id}`);
    expect(s.loras).toEqual([`-${worker.id}:0`, `-${worker.id}:1`]);
    expect(() => s.m.remove(worker.id)).toThrow("not registered");
  });
});

describe("WorkerMembership: registration options", () => {
  test("restore: false registers the worker without asking recovery for a /kv/query restore", async () => {
    const s = setup(async () => ({ dpRanks: 2, loras: [] }));
    const res = await s.m.register({ url: "http://vllm:8000", restore: false });
    expect(res.created).toBe(true);
    expect(s.log).toEqual([]);
    expect(s.slots().length).toBe(2);
    s.m.remove(res.worker.id);
    expect(s.log).toEqual([`removeWorker ${res.worker.id}`]);
  });

  test("adapters, slots and base model from the registration body win over engine info; capacity is known without adapters", async () => {
    const registry = new WorkerRegistry();
    const caps: string[] = [];
    const loras: string[] = [];
    const m = new WorkerMembership({
      registry,
      blockSize: 16,
      load: { updateWorkers() {} },
      recovery: { addRank() {}, removeWorker() {} },
      lora: {
        handleMdcAddition: (w, i) => loras.push(`${w.dpRank}:${i.name}:${i.maxGpuLoraCount}`),
        handleWorkerRemoval() {},
        setWorkerCapacity: (w, c) => caps.push(`${w.dpRank}:${c}`),
      },
      engineInfo: async () => ({ loras: ["from-info"], maxLoras: 8, model: "info-model" }),
    });
    const a = await m.register({
      url: "http://a:1",
      loras: ["mine"],
      maxLoras: 2,
      model: "base-a",
      dpRanks: 2,
    });
    expect(caps).toEqual(["0:2", "1:2"]);
    expect(loras).toEqual(["0:mine:2", "1:mine:2"]);
    expect(a.worker.model).toBe("base-a");
    const b = await m.register({ url: "http://b:1" });
    expect(b.worker.model).toBe("info-model");
    expect(loras).toContain("0:from-info:8");
    expect(registry.isBaseModel("info-model")).toBe(true);
    expect(registry.isBaseModel("mine")).toBe(false);
  });
});
