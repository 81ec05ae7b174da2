/**
 * Hostile calls into the native library, each scenario in its own child `bun` process: a
 * crash fails that one test (and shows the signal), and "the process is alive" is checked
 * by the child finishing and printing its results.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LIBRARY_PATH, nativeLibrary } from "./native/native-lib.ts";

nativeLibrary(); // built before any child loads it
const dir = mkdtempSync(join(tmpdir(), "sy-abuse-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function scenario(name: string): Record<string, unknown> {
  const r = Bun.spawnSync(["bun", join(import.meta.dir, "fixtures", "abuse.ts"), name], {
    env: { ...process.env, SY_TEST_LIB: LIBRARY_PATH, SY_TEST_DIR: dir },
    stdout: "pipe",
    stderr: "pipe",
  });
  const detail = `exit ${r.exitCode} signal ${r.signalCode}\n${r.stdout.toString()}${r.stderr.toString()}`;
  expect(r.exitCode, detail).toBe(0);
  const line = r.stdout.toString().trim().split("\n").pop() ?? "";
  const parsed = JSON.parse(line) as { scenario: string; results: Record<string, unknown> };
  expect(parsed.scenario).toBe(name);
  return parsed.results;
}

const SY_E_INVALID = -1,
  SY_E_HANDLE = -2,
  SY_E_RANGE = -3;

describe("hostile calls fail with a status and leave the process alive", () => {
  test("forged handles of every kind are 'not open'", () => {
    const r = scenario("forged-handles");
    expect(r.statuses).toEqual([SY_E_HANDLE]);
    expect(String(r.message)).toContain("not open");
  });

  test("a closed pool is refused by the binding and by the library", () => {
    const r = scenario("closed-pool");
    expect(r.raw).toEqual([SY_E_HANDLE, SY_E_HANDLE, SY_E_HANDLE]);
    expect([r.read, r.copyFrom, r.copyTo, r.closeAgain]).toEqual([
      "closed",
      "closed",
      "closed",
      "ok",
    ]);
  });

  test("out-of-range indices are refused", () => {
    const r = scenario("out-of-range");
    expect([r.raw, r.read, r.copy]).toEqual([SY_E_RANGE, SY_E_RANGE, "out-of-range"]);
    expect(String(r.message)).toContain("source block 9");
  });

  test("buffers of the wrong size and bad names are refused", () => {
    const r = scenario("wrong-sizes");
    expect(r.statuses).toEqual(Array(7).fill(SY_E_INVALID));
    expect(r.hashed).toBe("18446744073709551615"); // SIZE_MAX: nothing written
    expect(String(r.hashMessage)).toContain("4 blocks");
  });

  test("the four disallowed directions are refused", () => {
    expect(scenario("wrong-direction")).toEqual({
      "device>device": "invalid-direction",
      "host>host": "invalid-direction",
      "disk>host": "invalid-direction",
      "disk>disk": "invalid-direction",
    });
  });

  test("pools closed while a transfer runs stay valid until it ends", () => {
    expect(scenario("close-during-transfer")).toEqual({ transfer: "ok", after: "closed" });
  });

  test("absurd sizes are refused, not allocated", () => {
    const r = scenario("huge-values");
    expect(r.statuses).toEqual([
      SY_E_INVALID,
      SY_E_INVALID,
      SY_E_INVALID,
      SY_E_INVALID,
      SY_E_HANDLE,
    ]);
    expect(r.big).toBe("invalid-argument");
  });
});
