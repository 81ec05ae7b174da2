/**
 * The C library's own tests (ffi/test/*.c), built with the library's sources under
 * AddressSanitizer + UBSan and run by ffi/test/run-sanitized.sh, so `bun test` covers them.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { REPO_ROOT } from "./native-lib.ts";

test("the C tests pass under AddressSanitizer and UBSan", () => {
  const r = Bun.spawnSync(["bash", join(REPO_ROOT, "ffi/test/run-sanitized.sh")], {
    stdout: "pipe",
    stderr: "pipe",
  });
  const out = r.stdout.toString();
  const summary = /native tests: (\d+) passed, (\d+) failed/.exec(out);
  const detail = `${out}\n${r.stderr.toString()}`;
  expect(summary, detail).not.toBeNull();
  expect(Number(summary![2]), detail).toBe(0);
  expect(Number(summary![1]), detail).toBeGreaterThanOrEqual(29);
  expect(r.exitCode, detail).toBe(0);
}, 120_000);
