/**
 * Adapter names the router may load or evict (issue 12 §5): a closed character set, no
 * part that climbs, and the `--lora-allow` allowlist, in AdapterLoader too.
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { RouterError } from "../../../../src/core/errors.ts";
import {
  AdapterAllowlist,
  adapterNameProblem,
  globToRegExp,
  MAX_ADAPTER_NAME_LENGTH,
} from "../../../../src/fleet/lora/adapter-name.ts";
import {
  AdapterLoader,
  type EngineAnswer,
  type LoraEngineClient,
  type LoraWorker,
} from "../../../../src/fleet/lora/adapter-loader.ts";
import { LoraStateTracker } from "../../../../src/fleet/lora/state-tracker.ts";
import { thrownBy, rejectionOf } from "../../../support/errors.ts";

describe("adapterNameProblem", () => {
  test("ordinary and Hugging Face style names are valid", () => {
    for (const n of [
      "sql-lora",
      "team_a.v2",
      "org/adapter-1",
      "a",
      "A9/b/c",
      "x".repeat(MAX_ADAPTER_NAME_LENGTH),
    ]) {
      expect(adapterNameProblem(n)).toBeUndefined();
    }
  });
  test("paths that climb, absolute paths and odd characters are refused", () => {
    for (const n of [
      "../../../../root/.ssh/id_rsa",
      "..",
      ".",
      "a/../b",
      "a/./b",
      "/etc/passwd",
      "a//b",
      "a/",
      ".hidden",
      "a\\..\\b",
      "C:/x",
      "a b",
      "a%2e%2e",
      "a\u0000b",
      "a\nb",
      "~root",
      "",
      "x".repeat(MAX_ADAPTER_NAME_LENGTH + 1),
    ]) {
      expect(adapterNameProblem(n)).toBeString();
    }
  });
  test("fuzz (seed 12005): no valid name, put into a path template, climbs or is absolute", () => {
    fc.assert(
      fc.property(
        fc.string({
          maxLength: 40,
          unit: fc.constantFrom("a", "0", ".", "/", "-", "_", "\\", "%", "~", ":", " "),
        }),
        (name) => {
          if (adapterNameProblem(name) !== undefined) return;
          const parts = `/loras/${name}`.split("/");
          expect(parts.includes("..") || parts.includes(".") || name.startsWith("/")).toBe(false);
          expect(/[\\%~: ]/.test(name)).toBe(false);
        },
      ),
      { seed: 12_005, numRuns: 3000 },
    );
  });
});

describe("AdapterAllowlist", () => {
  test("* is any run of characters; the rest is literal; empty allows all", () => {
    const a = new AdapterAllowlist(["team-a-*", "sql", "org/*"]);
    expect(a.allows("team-a-x")).toBe(true);
    expect(a.allows("team-a-")).toBe(true);
    expect(a.allows("team-b-x")).toBe(false);
    expect(a.allows("sql")).toBe(true);
    expect(a.allows("sql2")).toBe(false);
    expect(a.allows("org/x/y")).toBe(true);
    expect(new AdapterAllowlist([]).allows("anything")).toBe(true);
    expect(globToRegExp("a.b").test("axb")).toBe(false);
  });
});

class Engines implements LoraEngineClient {
  readonly loaded = new Map<string, string[]>();
  readonly calls: string[] = [];
  constructor(
    urls: readonly string[],
    readonly maxLoras: number,
  ) {
    for (const u of urls) this.loaded.set(u, []);
  }
  async load(url: string, name: string, path: string): Promise<EngineAnswer> {
    this.calls.push(`load ${name} ${path}`);
    const l = this.loaded.get(url)!;
    if (l.length >= this.maxLoras) return { ok: false, status: 400, message: "no slot" };
    l.push(name);
    return { ok: true };
  }
  async unload(url: string, name: string): Promise<EngineAnswer> {
    this.calls.push(`unload ${name}`);
    const l = this.loaded.get(url)!;
    l.splice(l.indexOf(name), 1);
    return { ok: true };
  }
  async listLoaded(url: string) {
    return { loras: [...this.loaded.get(url)!], maxLoras: this.maxLoras };
  }
}

function setup(allow: string[], preloaded: string[] = []) {
  const workers: LoraWorker[] = [{ id: 100n, url: "http://w0", dpRanks: 1 }];
  const engines = new Engines(["http://w0"], 1);
  const tracker = new LoraStateTracker();
  tracker.setWorkerCapacity({ workerId: 100n, dpRank: 0 }, 1);
  for (const name of preloaded) {
    engines.loaded.get("http://w0")!.push(name);
    tracker.handleMdcAddition({ workerId: 100n, dpRank: 0 }, { name, maxGpuLoraCount: 1 });
  }
  let clock = 0;
  const loader = new AdapterLoader({
    tracker,
    engine: engines,
    workers: () => workers,
    loadOnDemand: true,
    isBaseModel: (m) => m === "base",
    pathTemplate: "/loras/{name}",
    evict: true,
    now: () => clock++,
    allow: new AdapterAllowlist(allow),
  });
  return { engines, loader };
}

describe("AdapterLoader with names from clients (issue 12)", () => {
  test('"model":"../../../../root/.ssh/id_rsa" is a 400 naming model and never reaches an engine', async () => {
    const { engines, loader } = setup([]);
    const e = thrownBy(RouterError, () => loader.adapterOf("../../../../root/.ssh/id_rsa"));
    expect(e.code).toBe("invalid_request");
    expect(e.field).toBe("model");
    await rejectionOf(RouterError, loader.ensure("../x"));
    expect(engines.calls).toEqual([]);
  });
  test("with --lora-allow, a name off the list is a 404 naming model: nothing loaded, nothing evicted", async () => {
    const { engines, loader } = setup(["team-*"], ["team-prod"]);
    const e = thrownBy(RouterError, () => loader.adapterOf("random-1"));
    expect(e.code).toBe("not_found");
    expect(e.field).toBe("model");
    await rejectionOf(RouterError, loader.ensure("random-2"));
    expect(engines.calls).toEqual([]);
    expect(engines.loaded.get("http://w0")).toEqual(["team-prod"]);
  });
  test("eviction only unloads adapters on the allowlist; an operator's adapter stays", async () => {
    const { engines, loader } = setup(["team-*"], ["operator-adapter"]);
    const e = await rejectionOf(RouterError, loader.ensure("team-new"));
    expect(e.code).toBe("lora_no_capacity");
    expect(engines.calls.filter((c) => c.startsWith("unload"))).toEqual([]);
    expect(engines.loaded.get("http://w0")).toEqual(["operator-adapter"]);
  });
  test("an allowed, valid name is loaded with the template's path, evicting an allowed adapter", async () => {
    const { engines, loader } = setup(["team-*"], ["team-old"]);
    expect(loader.adapterOf("team-new")).toBe("team-new");
    await loader.ensure("team-new");
    expect(engines.calls).toEqual(["unload team-old", "load team-new /loras/team-new"]);
  });
});
