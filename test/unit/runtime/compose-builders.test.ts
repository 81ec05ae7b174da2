/**
 * The composition's builders (src/runtime/compose/), each on its own: the fleet (tokenizers
 * refused or loaded, the engine token on the router's own calls), the decision room, membership
 * and observation built from a fleet, and the edge's deps (config
 * in the units the edge uses, the entry's start and stop read live, the runtime's pieces).
 * No server, no engine.
 */
import { describe, expect, test } from "bun:test";
import { loadConfig } from "../../../src/config/load.ts";
import { portableBatchHasher } from "../../../src/core/block-hash.ts";
import { createLogger } from "../../../src/observe/logger.ts";
import { RouterMetrics } from "../../../src/observe/names.ts";
import { edgeDepsBuilder, type AccessState } from "../../../src/runtime/compose/edge-deps.ts";
import { buildFleet } from "../../../src/runtime/compose/fleet.ts";
import { buildMembership } from "../../../src/runtime/compose/membership.ts";
import { buildObservation } from "../../../src/runtime/compose/observe.ts";
import { buildRouter } from "../../../src/runtime/compose/router.ts";
import { StartupError } from "../../../src/runtime/compose/startup-error.ts";
import type { RuntimeChoices } from "../../../src/runtime/compose/choices.ts";

const now = () => performance.now();

function capture() {
  const lines: string[] = [];
  return { lines, log: createLogger("info", (l) => lines.push(l)) };
}

describe("buildFleet", () => {
  test("--tokenizer on a runtime without a loader: StartupError before anything else", async () => {
    const { log } = capture();
    const err = await buildFleet(
      loadConfig({ argv: ["--tokenizer", "/t"], env: {} }),
      {},
      log,
      new RouterMetrics(),
      now,
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StartupError);
  });

  test("a tokenizer per model, loaded once; the engine token on the router's own engine calls", async () => {
    const { lines, log } = capture();
    const loaded: string[] = [];
    const loadTokenizer = async (dir: string) => {
      loaded.push(dir);
      return {
        source: dir,
        implementation: "test",
        encodeText: async () => Uint32Array.of(1),
        encodeChat: async () => Uint32Array.of(1),
      } as never;
    };
    const config = loadConfig({
      argv: ["--tokenizer", "m=/tok", "--engine-token", "sekret"],
      env: {},
    });
    const fleet = await buildFleet(config, { loadTokenizer }, log, new RouterMetrics(), now);
    expect(loaded).toEqual(["/tok"]);
    expect(lines.some((l) => l.includes("tokenizer for m: /tok"))).toBe(true);
    expect(fleet.engineHeaders).toEqual({ authorization: "Bearer sekret" });
    expect(fleet.registry.size).toBe(0);
  });

  test("no --tokenizer: said once, and the fleet is empty", async () => {
    const { lines, log } = capture();
    const fleet = await buildFleet(
      loadConfig({ argv: [], env: {} }),
      {},
      log,
      new RouterMetrics(),
      now,
    );
    expect(lines.filter((l) => l.includes("no --tokenizer"))).toHaveLength(1);
    expect(fleet.engineHeaders).toEqual({});
  });
});

describe("edgeDepsBuilder", () => {
  async function parts(argv: string[]) {
    const { log } = capture();
    const config = loadConfig({ argv, env: {} });
    const metrics = new RouterMetrics();
    const choices: RuntimeChoices = {
      hasher: portableBatchHasher,
      sleep: (ms: number) => new Promise<void>((r) => setTimeout(r, ms)),
      localHosts: () => ["127.0.0.1"],
    };
    const fleet = await buildFleet(config, choices, log, metrics, now);
    const built = await buildRouter(config, choices, log, {
      metrics,
      now,
      routerId: 0x2an,
      fleet,
      clusterMetrics: () => undefined,
      otherRouters: () => 0,
    });
    const members = buildMembership(config, choices, log, {
      fleet,
      router: built.router,
      metrics,
      now,
    });
    const observation = buildObservation(config, choices, log, {
      metrics,
      fleet,
      router: built.router,
      admission: built.admission,
      outliers: members.outliers,
      now,
      routerId: "00000000000000aa",
      peers: () => undefined,
    });
    const state: AccessState = { draining: false, unready: false, listeningPort: undefined };
    const edgeDeps = edgeDepsBuilder(
      config,
      choices,
      log,
      {
        routerId: 0x2an,
        fleet,
        router: built.router,
        members,
        store: built.sessions.store,
        metrics,
        observation,
        now,
      },
      state,
    );
    const stop = async () => {
      built.admission.close();
      members.health.stop();
      await built.sessions.store.close();
    };
    return { edgeDeps, state, stop };
  }

  test("deadlines in milliseconds, the retry statuses and retries from the flags", async () => {
    const p = await parts([
      "--connect-timeout",
      "2",
      "--first-byte-timeout",
      "7",
      "--retry-on",
      "500,503",
      "--max-retries",
      "3",
    ]);
    const d = p.edgeDeps({ peer: () => undefined });
    expect(d.upstream.deadlines).toMatchObject({ connectMs: 2000, firstByteMs: 7000 });
    expect([...d.upstream.retry!.statuses!].sort()).toEqual([500, 503]);
    expect(d.upstream.maxRetries).toBe(3);
    expect(d.access.routerId).toBe("000000000000002a");
    await p.stop();
  });

  test("draining and readiness are read at each request, and the runtime's pieces are passed on", async () => {
    const p = await parts([]);
    const keepOpen = () => {};
    const d = p.edgeDeps({ peer: () => "10.0.0.1", keepOpen, directStreams: true });
    expect(d.access.draining!()).toBe(false);
    p.state.draining = true;
    p.state.unready = true;
    expect(d.access.draining!()).toBe(true);
    expect(d.access.unready!()).toBe(true);
    expect(d.upstream.keepOpen).toBe(keepOpen);
    expect(d.upstream.directStreams).toBe(true);
    expect(d.access.peer(new Request("http://r/"))).toBe("10.0.0.1");
    // Two apps of one router share one retry budget.
    expect(p.edgeDeps({ peer: () => undefined }).upstream.retry).toBe(d.upstream.retry);
    await p.stop();
  });
});
