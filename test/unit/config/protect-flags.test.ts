/** The flags of protecting the fleet: --api-keys, --limits-fallback, --limits-routers, --fair-admission. */
import { describe, expect, test } from "bun:test";
import { loadConfig } from "../../../src/config/load.ts";

const load = (argv: string[], env: Record<string, string> = {}) => loadConfig({ argv, env });

describe("protect flags", () => {
  test("defaults: no keys, local fallback, router count as heard, fair admission on", () => {
    const c = load([]);
    expect(c.apiKeys).toBeUndefined();
    expect(c.limitsFallback).toBe("local");
    expect(c.limitsRouters).toBeUndefined();
    expect(c.fairAdmission).toBe(true);
  });

  test("flags and env set them", () => {
    const c = load([
      "--api-keys",
      "/etc/keys.yaml",
      "--limits-fallback",
      "closed",
      "--limits-routers",
      "3",
      "--fair-admission=false",
    ]);
    expect([c.apiKeys, c.limitsFallback, c.limitsRouters, c.fairAdmission]).toEqual([
      "/etc/keys.yaml",
      "closed",
      3,
      false,
    ]);
    const e = load([], {
      SWITCHYARD_API_KEYS: "/k.json",
      SWITCHYARD_LIMITS_FALLBACK: "open",
      SWITCHYARD_FAIR_ADMISSION: "off",
    });
    expect([e.apiKeys, e.limitsFallback, e.fairAdmission]).toEqual(["/k.json", "open", false]);
  });

  test("bad values are refused naming the flag", () => {
    expect(() => load(["--limits-fallback", "maybe"])).toThrow(
      /--limits-fallback .*must be one of local, open, closed/,
    );
    expect(() => load(["--limits-routers", "0"])).toThrow(/--limits-routers .*must be >= 1/);
    expect(() => load(["--api-keys", ""])).toThrow(/--api-keys/);
  });

  test("the runtime column: keys, limits and fair admission on every runtime; a YAML keys file refused by name on Deno only", () => {
    const argv = [
      "--api-keys",
      "/etc/keys.json",
      "--limits-fallback",
      "open",
      "--limits-routers",
      "2",
      "--fair-admission=false",
    ];
    for (const runtime of ["deno", "workerd"] as const)
      expect(loadConfig({ argv, env: {}, runtime }).limitsRouters).toBe(2);
    expect(() =>
      loadConfig({ argv: ["--api-keys", "/etc/keys.yaml"], env: {}, runtime: "deno" }),
    ).toThrow(/--api-keys: a YAML keys file is read on Bun only .*as JSON on Deno/);
    expect(
      loadConfig({ argv: ["--api-keys", "/etc/keys.yml"], env: {}, runtime: "workerd" }).apiKeys,
    ).toBe("/etc/keys.yml");
  });
});
