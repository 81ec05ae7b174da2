/**
 * --api-keys in the composition: nothing without it, a start refused (exit 2 material) for a
 * keys file that cannot be used or a runtime that cannot read one, and the count of routers
 * sharing the limits kept through a Redis outage.
 */
import { describe, expect, test } from "bun:test";
import { loadConfig } from "../../../src/config/load.ts";
import { silentLogger } from "../../../src/core/logger.ts";
import { RouterMetrics } from "../../../src/observe/names.ts";
import { sha256Hex } from "../../../src/protect/key-set.ts";
import { AdmissionGate } from "../../../src/router/admission/admission-gate.ts";
import { StartupError } from "../../../src/runtime/compose/startup-error.ts";
import { buildTenants, RouterCount } from "../../../src/runtime/compose/tenants.ts";

const timers = {
  set: (fn: () => void, ms: number) => setTimeout(fn, ms),
  clear: (h: unknown) => clearTimeout(h as ReturnType<typeof setTimeout>),
};

function deps(text: string | undefined) {
  return {
    keysFile:
      text === undefined
        ? undefined
        : { read: async () => text, parse: (t: string) => JSON.parse(t) },
    admission: new AdmissionGate({
      maxQueue: 1,
      timeoutMs: 1000,
      now: () => 0,
      timers,
      fair: true,
    }),
    metrics: new RouterMetrics(),
    log: silentLogger,
    now: () => 0,
  };
}

describe("buildTenants", () => {
  test("without --api-keys: nothing", async () => {
    expect(await buildTenants(loadConfig({ argv: [], env: {} }), deps("[]"))).toBeUndefined();
  });

  test("a keys file that cannot be used, or no reader, refuses the start naming the problem", async () => {
    const config = loadConfig({ argv: ["--api-keys", "/k.json"], env: {} });
    await expect(buildTenants(config, deps('[{"tenant":"a"}]'))).rejects.toThrow(StartupError);
    await expect(buildTenants(config, deps('[{"tenant":"a"}]'))).rejects.toThrow(
      /keys\[0\]\.key_sha256/,
    );
    await expect(buildTenants(config, deps(undefined))).rejects.toThrow(
      /this runtime cannot read the keys file/,
    );
  });

  test("a good file: a guard whose keys find their tenant; the engine token replaces the client's key", async () => {
    const config = loadConfig({
      argv: ["--api-keys", "/k.json", "--engine-token", "eng-tok"],
      env: {},
    });
    const built = await buildTenants(
      config,
      deps(JSON.stringify([{ tenant: "a", key_sha256: await sha256Hex("sk-a") }])),
    );
    try {
      expect((await built!.guard.keys().lookup("sk-a"))?.name).toBe("a");
      expect(built!.guard.engineAuthorization).toBe("Bearer eng-tok");
      expect(built!.guard.fair).toBe(true);
    } finally {
      built?.stop();
      await built?.close();
    }
  });
});

describe("RouterCount", () => {
  test("the most routers heard within the window; at least 1", () => {
    const c = new RouterCount(60_000);
    expect(c.value).toBe(1);
    c.sample(3, 0);
    c.sample(1, 30_000); // the others fell silent (a Redis outage): the 3 stays
    expect(c.value).toBe(3);
    c.sample(1, 60_001);
    expect(c.value).toBe(1);
    c.sample(0, 70_000);
    expect(c.value).toBe(1);
  });
});
