/**
 * The one composition (src/runtime/compose/) with portable choices, no server: a runtime that
 * cannot read files refuses --tokenizer by name before anything opens; the runtime's removal
 * hook is called; a start-up engine that cannot be reached is registered unhealthy; draining
 * shows in the app's deps (after the drain delay's readiness-only step); stop and close leave
 * nothing running; one router identity serves /health, request ids and load sync. No engine:
 * the one worker URL is a closed port.
 */
import { describe, expect, test } from "bun:test";
import { createLogger } from "../../../src/observe/logger.ts";
import { loadConfig } from "../../../src/config/load.ts";
import { portableBatchHasher } from "../../../src/core/block-hash.ts";
import {
  composeRouter,
  reachableHost,
  StartupError,
  type RuntimeChoices,
} from "../../../src/runtime/compose/index.ts";

const choices: RuntimeChoices = {
  hasher: portableBatchHasher,
  sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
  localHosts: () => ["127.0.0.1"],
};

function capture() {
  const lines: string[] = [];
  return { lines, log: createLogger("info", (l) => lines.push(l)) };
}

describe("composeRouter", () => {
  test("--tokenizer without a tokenizer loader: StartupError naming the flag", async () => {
    const config = loadConfig({ argv: ["--tokenizer", "/nowhere/tok"], env: {} });
    const { log } = capture();
    const err = await composeRouter(config, choices, log).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StartupError);
    expect((err as Error).message).toBe("--tokenizer: this runtime cannot read tokenizer files");
  });

  test("a tokenizer that cannot load: StartupError naming the flag and the path", async () => {
    const config = loadConfig({ argv: ["--tokenizer", "m=/nowhere/tok"], env: {} });
    const { log } = capture();
    const loadTokenizer = () => Promise.reject(new Error("no tokenizer.json"));
    const err = await composeRouter(config, { ...choices, loadTokenizer }, log).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StartupError);
    expect((err as Error).message).toBe("--tokenizer m=/nowhere/tok: no tokenizer.json");
  });

  test("builds, registers (an unreachable engine as unhealthy), calls the runtime's removal hook, drains and stops", async () => {
    const config = loadConfig({ argv: ["--health-interval", "60"], env: {} });
    const { lines, log } = capture();
    const removed: bigint[] = [];
    const c = await composeRouter(
      config,
      { ...choices, onWorkerRemoved: (id) => void removed.push(id) },
      log,
    );
    const access = c.edgeDeps({ peer: () => undefined }).access;
    expect(access.draining!()).toBe(false);
    await c.registerAll(["http://127.0.0.1:1"]);
    const [w] = c.registry.list();
    expect(w?.url).toBe("http://127.0.0.1:1");
    expect(w?.healthy).toBe(false);
    c.membership.remove(w!.id);
    expect(removed).toEqual([w!.id]);
    expect(lines.some((l) => l.includes(`worker ${w!.id} removed`))).toBe(true);
    c.startChecks();
    // The drain delay: /health says draining while requests are still served.
    expect(access.unready!()).toBe(false);
    c.stopReadiness();
    expect([access.unready!(), access.draining!()]).toEqual([true, false]);
    c.startDraining();
    expect(access.draining!()).toBe(true);
    c.stopWork();
    await c.close();
  });

  test("one router identity, drawn once from the injected randomness: /health's id, the request ids and load sync's id", async () => {
    const config = loadConfig({ argv: [], env: {} });
    const { log } = capture();
    let draws = 0;
    const randomValues = (into: BigUint64Array) => {
      draws++;
      into[0] = 0xfedcba9876543210n;
      return into;
    };
    const c = await composeRouter(config, { ...choices, randomValues }, log);
    expect(draws).toBe(1);
    expect(c.edgeDeps({ peer: () => undefined }).access.routerId).toBe("fedcba9876543210");
    expect(c.router.routing.nextRequestId()).toBe("fedcba9876543210-0");
    expect(c.router.tracker.routerId).toBe(0xfedcba9876543210n);
    c.stopWork();
    await c.close();
  });
});

describe("reachableHost", () => {
  test("wildcards become loopback; bare IPv6 gets brackets", () => {
    expect(reachableHost("0.0.0.0")).toBe("127.0.0.1");
    expect(reachableHost("::")).toBe("[::1]");
    expect(reachableHost("::1")).toBe("[::1]");
    expect(reachableHost("localhost")).toBe("localhost");
  });
});
