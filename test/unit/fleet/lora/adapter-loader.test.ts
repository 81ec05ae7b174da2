import { describe, expect, test } from "bun:test";
import { RouterError } from "../../../../src/core/errors.ts";
import {
  AdapterLoader,
  type EngineAnswer,
  type LoraEngineClient,
  type LoraWorker,
} from "../../../../src/fleet/lora/adapter-loader.ts";
import { rankWorkers } from "../../../../src/fleet/lora/placement.ts";
import { LoraStateTracker } from "../../../../src/fleet/lora/state-tracker.ts";
import { rejectionOf } from "../../../support/errors.ts";

/** Engines as vLLM answers: slots, "already loaded" 400, unload 404; calls recorded. */
class FakeEngines implements LoraEngineClient {
  readonly loaded = new Map<string, string[]>();
  readonly calls: string[] = [];
  /** Resolve loads only when released (to hold concurrent requests inside one load). */
  gate: Promise<void> | undefined;

  constructor(
    readonly urls: readonly string[],
    readonly maxLoras: number,
  ) {
    for (const u of urls) this.loaded.set(u, []);
  }

  async load(url: string, name: string, path: string): Promise<EngineAnswer> {
    this.calls.push(`load ${url} ${name} ${path}`);
    await this.gate;
    const l = this.loaded.get(url)!;
    if (l.includes(name))
      return {
        ok: false,
        status: 400,
        message: `The lora adapter '${name}' has already been loaded.`,
      };
    if (l.length >= this.maxLoras)
      return { ok: false, status: 400, message: "all LoRA slots are in use" };
    l.push(name);
    return { ok: true };
  }

  async unload(url: string, name: string): Promise<EngineAnswer> {
    this.calls.push(`unload ${url} ${name}`);
    const l = this.loaded.get(url)!;
    const i = l.indexOf(name);
    if (i < 0) return { ok: false, status: 404, message: "not found" };
    l.splice(i, 1);
    return { ok: true };
  }

  async listLoaded(url: string) {
    this.calls.push(`list ${url}`);
    return { loras: [...this.loaded.get(url)!], maxLoras: this.maxLoras };
  }
}

function setup(
  o: {
    n?: number;
    maxLoras?: number;
    evict?: boolean;
    loadOnDemand?: boolean;
    dpRanks?: number;
  } = {},
) {
  const n = o.n ?? 3;
  const workers: LoraWorker[] = Array.from({ length: n }, (_, i) => ({
    id: BigInt(100 + i),
    url: `http://w${i}`,
    dpRanks: o.dpRanks ?? 1,
  }));
  const engines = new FakeEngines(
    workers.map((w) => w.url),
    o.maxLoras ?? 2,
  );
  const tracker = new LoraStateTracker();
  for (const w of workers)
    for (let r = 0; r < w.dpRanks; r++)
      tracker.setWorkerCapacity({ workerId: w.id, dpRank: r }, o.maxLoras ?? 2);
  let clock = 1000;
  const loader = new AdapterLoader({
    tracker,
    engine: engines,
    workers: () => workers,
    loadOnDemand: o.loadOnDemand ?? true,
    isBaseModel: (m) => m === "base",
    pathTemplate: "/loras/{name}",
    evict: o.evict ?? false,
    now: () => clock++,
  });
  return { workers, engines, tracker, loader };
}

const refusal = (p: Promise<unknown>): Promise<RouterError> => rejectionOf(RouterError, p);

describe("AdapterLoader", () => {
  test("adapterOf: a held adapter, or with load-on-demand any name that is not a base model", () => {
    const s = setup({ loadOnDemand: false });
    s.tracker.handleMdcAddition({ workerId: 100n, dpRank: 0 }, { name: "held" });
    expect(s.loader.adapterOf("held")).toBe("held");
    expect(s.loader.adapterOf("other")).toBeUndefined();
    expect(s.loader.adapterOf(undefined)).toBeUndefined();
    const d = setup({ loadOnDemand: true });
    expect(d.loader.adapterOf("other")).toBe("other");
    expect(d.loader.adapterOf("base")).toBeUndefined();
    expect(d.loader.adapterOf("")).toBeUndefined();
  });

  test("a first request loads the adapter on the HRW-first worker with a free slot, with the path template; later ones reuse it", async () => {
    const s = setup({ dpRanks: 2 });
    const held = await s.loader.ensure("sql");
    const expected = rankWorkers(
      "sql",
      s.workers.map((w) => ({ workerId: w.id, dpRank: 0 })),
    )[0]!.workerId;
    expect([...held]).toEqual([expected]);
    const url = s.workers.find((w) => w.id === expected)!.url;
    expect(s.engines.calls).toEqual([`load ${url} sql /loras/sql`]);
    expect(s.tracker.isLoaded("sql", { workerId: expected, dpRank: 1 })).toBe(true);
    expect([...(await s.loader.ensure("sql"))]).toEqual([expected]);
    expect(s.engines.calls.length).toBe(1);
    expect(s.loader.counters.loads).toBe(1);
  });

  test("concurrent first requests share one load", async () => {
    const s = setup();
    let open!: () => void;
    s.engines.gate = new Promise<void>((r) => (open = r));
    const all = Array.from({ length: 8 }, () => s.loader.ensure("chat"));
    open();
    const sets = await Promise.all(all);
    expect(new Set(sets.map((x) => [...x].join())).size).toBe(1);
    expect(s.engines.calls.filter((c) => c.startsWith("load")).length).toBe(1);
  });

  test("two routers (two trackers, same engines) place an adapter on the same worker; the second's 400 'already loaded' is success", async () => {
    const a = setup();
    const tracker2 = new LoraStateTracker();
    for (const w of a.workers) tracker2.setWorkerCapacity({ workerId: w.id, dpRank: 0 }, 2);
    const loader2 = new AdapterLoader({
      tracker: tracker2,
      engine: a.engines,
      workers: () => a.workers,
      loadOnDemand: true,
      isBaseModel: () => false,
      pathTemplate: "{name}",
      evict: false,
      now: () => 0,
    });
    const first = await a.loader.ensure("x");
    const second = await loader2.ensure("x");
    expect([...second]).toEqual([...first]);
    expect(loader2.counters.alreadyLoaded).toBe(1);
    expect([...a.engines.loaded.values()].flat().filter((n) => n === "x").length).toBe(1);
  });

  test("a refusal for full slots (another router filled them) re-reads the engine and places elsewhere", async () => {
    const s = setup({ maxLoras: 1 });
    const preferred = rankWorkers(
      "y",
      s.workers.map((w) => ({ workerId: w.id, dpRank: 0 })),
    )[0]!.workerId;
    const url = s.workers.find((w) => w.id === preferred)!.url;
    s.engines.loaded.get(url)!.push("someone-elses"); // loaded by another router; this tracker does not know
    const held = await s.loader.ensure("y");
    expect(held.has(preferred)).toBe(false);
    expect(s.tracker.isLoaded("someone-elses", { workerId: preferred, dpRank: 0 })).toBe(true);
    expect(s.engines.calls).toContain(`list ${url}`);
  });

  test("no free slot: lora_no_capacity naming the adapter and the slots", async () => {
    const s = setup({ n: 2, maxLoras: 1 });
    await s.loader.ensure("a");
    await s.loader.ensure("b");
    const e = await refusal(s.loader.ensure("c"));
    expect(e.code).toBe("lora_no_capacity");
    expect(e.message).toContain('"c"');
    expect(e.message).toContain("1/1");
    expect(e.message).toContain("--lora-evict");
  });

  test("with evict: the least recently used adapter is unloaded, then the new one loaded there", async () => {
    const s = setup({ n: 2, maxLoras: 1, evict: true });
    const wa = [...(await s.loader.ensure("a"))][0]!;
    const wb = [...(await s.loader.ensure("b"))][0]!;
    expect(wa).not.toBe(wb);
    s.loader.used("a", wa); // a is older than b
    s.loader.used("b", wb);
    const wc = [...(await s.loader.ensure("c"))][0]!;
    expect(wc).toBe(wa);
    const url = s.workers.find((w) => w.id === wa)!.url;
    expect(s.engines.calls).toContain(`unload ${url} a`);
    expect(s.engines.loaded.get(url)).toEqual(["c"]);
    expect(s.tracker.isLoaded("a", { workerId: wa, dpRank: 0 })).toBe(false);
    expect(s.loader.counters.unloads).toBe(1);
  });

  test("an engine with room that refuses the adapter: not_found naming the worker; the engine's answer is logged, not shown", async () => {
    const s = setup();
    s.engines.load = async (_u, name) => ({
      ok: false,
      status: 400,
      message: `cannot find adapter ${name} at /srv/secret/path`,
    });
    const e = await refusal(s.loader.ensure("ghost"));
    expect(e.code).toBe("not_found");
    expect(e.message).toContain('LoRA adapter "ghost" could not be loaded on worker');
    expect(e.message).not.toContain("/srv/secret/path");
  });

  test("missing(): an adapter unloaded behind our back is forgotten, so the next request loads it again", async () => {
    const s = setup();
    const w = [...(await s.loader.ensure("z"))][0]!;
    s.loader.missing("z", w);
    expect(s.tracker.isLoaded("z", { workerId: w, dpRank: 0 })).toBe(false);
    s.engines.loaded.get(s.workers.find((x) => x.id === w)!.url)!.length = 0;
    expect([...(await s.loader.ensure("z"))]).toEqual([w]);
    expect(s.loader.counters.loads).toBe(2);
  });
});
