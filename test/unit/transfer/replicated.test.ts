/**
 * Replicated mode with three real processes on the CPU collective (POSIX shared memory):
 * every rank must end with rank 0's bytes in the destination device blocks.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LIBRARY_PATH, nativeLibrary } from "./native/native-lib.ts";

nativeLibrary();
const dir = mkdtempSync(join(tmpdir(), "sy-repl-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface RankReport {
  rank: number;
  mode: string;
  device: Record<string, string>;
  host4: string;
  expected: { host012: string[]; disk3: string; ownDevice1: string; ownHost4: string };
  d2d: string;
}

test("three ranks: rank 0 loads, every rank ends with rank 0's bytes", async () => {
  const group = `t${process.pid}-${Date.now().toString(36)}`;
  const world = 3;
  const procs = Array.from({ length: world }, (_, rank) =>
    Bun.spawn(
      [
        "bun",
        join(import.meta.dir, "fixtures", "replicated-rank.ts"),
        group,
        String(rank),
        String(world),
      ],
      {
        env: { ...process.env, SY_TEST_LIB: LIBRARY_PATH, SY_TEST_DIR: dir },
        stdout: "pipe",
        stderr: "pipe",
      },
    ),
  );
  try {
    const outs = await Promise.all(
      procs.map(async (p) => {
        const [stdout, stderr, code] = await Promise.all([
          new Response(p.stdout).text(),
          new Response(p.stderr).text(),
          p.exited,
        ]);
        expect(code, `rank exited ${code}:\n${stdout}\n${stderr}`).toBe(0);
        return JSON.parse(stdout.trim().split("\n").pop()!) as RankReport;
      }),
    );
    for (const r of outs) {
      expect(r.mode).toBe("replicated");
      const want = r.expected;
      // host -> device broadcast: device 5, 6, 7 hold rank 0's host 0, 1, 2
      expect([r.device["5"], r.device["6"], r.device["7"]], `rank ${r.rank}`).toEqual(want.host012);
      // disk -> device broadcast: device 0 holds rank 0's disk 3
      expect(r.device["0"], `rank ${r.rank}`).toBe(want.disk3);
      // untouched blocks keep each rank's own bytes
      expect(r.device["1"], `rank ${r.rank}`).toBe(want.ownDevice1);
      // device -> host is rank 0's alone
      expect(r.host4, `rank ${r.rank}`).toBe(r.rank === 0 ? want.host012[0]! : want.ownHost4);
      expect(r.d2d).toContain("Invalid transfer type");
    }
  } finally {
    for (const p of procs) if (p.exitCode === null) p.kill();
  }
}, 30_000);
