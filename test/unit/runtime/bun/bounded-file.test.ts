/**
 * The workers file's reader: a regular file (through symlinks) of at most the bound, read
 * once; a device, a FIFO or a file past the bound is refused at once, unread.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  FileRefusedError,
  fileVersion,
  readBoundedText,
} from "../../../../src/runtime/bun/bounded-file.ts";
import { rejectionOf } from "../../../support/errors.ts";

const dir = mkdtempSync(join(tmpdir(), "switchyard-bounded-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("readBoundedText", () => {
  test("a regular file, directly or through a symlink (a ConfigMap's), is read whole", async () => {
    writeFileSync(join(dir, "w.yaml"), "- http://a:1\n");
    symlinkSync(join(dir, "w.yaml"), join(dir, "link.yaml"));
    expect(await readBoundedText(join(dir, "w.yaml"), 100)).toBe("- http://a:1\n");
    expect(await readBoundedText(join(dir, "link.yaml"), 100)).toBe("- http://a:1\n");
  });

  test("past the bound: refused, naming both sizes", async () => {
    writeFileSync(join(dir, "big"), "x".repeat(101));
    const e = await rejectionOf(FileRefusedError, readBoundedText(join(dir, "big"), 100));
    expect(e.message).toContain("101 bytes, more than the 100 bytes allowed");
  });

  test("/dev/zero, or a symlink to it: refused at once, nothing read", async () => {
    symlinkSync("/dev/zero", join(dir, "zero.yaml"));
    for (const p of ["/dev/zero", join(dir, "zero.yaml")]) {
      const t0 = performance.now();
      const e = await rejectionOf(FileRefusedError, readBoundedText(p, 1 << 20));
      expect(e.message).toContain("is not a regular file");
      expect(performance.now() - t0).toBeLessThan(500);
    }
  });

  test("a FIFO is refused without waiting for a writer", async () => {
    const fifo = join(dir, "fifo");
    expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
    const e = await rejectionOf(FileRefusedError, readBoundedText(fifo, 100));
    expect(e.message).toContain("is not a regular file");
  });

  test("the version changes with the content or a symlink swap, not by itself", async () => {
    const p = join(dir, "v.yaml");
    writeFileSync(p, "a");
    const v1 = await fileVersion(p);
    expect(await fileVersion(p)).toBe(v1);
    writeFileSync(join(dir, "v2.yaml"), "bb");
    rmSync(p);
    symlinkSync(join(dir, "v2.yaml"), p);
    expect(await fileVersion(p)).not.toBe(v1);
  });
});
