/**
 * Operator files that are too large or wrong are refused without stalling the router, with
 * real processes: a router with --api-keys and --workers-file in front of a simulated engine.
 * A 30 MiB keys file is refused unread (past the 16 MiB bound) with a line that says so; a
 * file of 100,001 keys and a 3.9 MiB workers file of bad entries are parsed and refused on a
 * Worker thread, and a valid file of 100,000 keys is put in force. Meanwhile /livez is asked in a loop and must keep answering, and the keys and
 * workers in force stay. How long /livez took is printed (a figure for the report, never
 * asserted: a test must pass on a busy machine).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sha256Hex } from "../../src/protect/key-set.ts";
import { startMain, stopAll, until, type Proc } from "../support/processes.ts";

setDefaultTimeout(60_000);

const KEY = `sk-files-${crypto.randomUUID()}`;
let engine: Proc | undefined;
let router: Proc | undefined;
let url = "";
let dir = "";

/** Replace a file at once (a rename), as a config management tool does. */
function replace(name: string, content: string): void {
  writeFileSync(join(dir, `${name}.tmp`), content);
  renameSync(join(dir, `${name}.tmp`), join(dir, name));
}

/** Ask /livez in a loop until `done`; every answer must be 200. Returns how many and the slowest (ms). */
async function livezWhile(
  done: () => boolean,
  what: string,
): Promise<{ answers: number; slowestMs: number }> {
  let answers = 0;
  let slowestMs = 0;
  await until(
    async () => {
      const t0 = performance.now();
      const r = await fetch(`${url}/livez`);
      slowestMs = Math.max(slowestMs, performance.now() - t0);
      expect(r.status).toBe(200);
      await r.text();
      answers++;
      return done();
    },
    what,
    30_000,
    5,
  );
  return { answers, slowestMs };
}

const servedWithKey = async () => {
  const r = await fetch(`${url}/v1/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ prompt: "hi", max_tokens: 1 }),
  });
  await r.text();
  return r.status;
};

beforeAll(async () => {
  engine = await startMain(["mocker", "--port", "0", "--block-size", "16"]);
  dir = mkdtempSync(join(tmpdir(), "switchyard-operator-files-"));
  replace(
    "keys.json",
    JSON.stringify({ keys: [{ tenant: "a", key_sha256: await sha256Hex(KEY) }] }),
  );
  replace("workers.yaml", `workers:\n  - url: ${String(engine.info.url)}\n`);
  router = await startMain([
    "serve",
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--block-size",
    "16",
    "--api-keys",
    join(dir, "keys.json"),
    "--workers-file",
    join(dir, "workers.yaml"),
  ]);
  url = String(router.info.url);
  await until(async () => (await servedWithKey()) === 200, "the router to serve with its key");
});

afterAll(async () => {
  await stopAll([router, engine]);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("operator files are bounded and parsed off the event loop", () => {
  test("a 30 MiB keys file is refused unread, with a line naming the bound; /livez answers throughout; the keys in force stay", async () => {
    const before = router!.output().length;
    replace("keys.json", JSON.stringify({ keys: [], padding: "x".repeat(30 * 1024 * 1024) }));
    const s = await livezWhile(
      () => router!.output().slice(before).includes("bytes a keys file may have"),
      "the refusal of the 30 MiB keys file",
    );
    console.log(
      `30 MiB keys file refused: /livez answered ${s.answers} times meanwhile, slowest ${s.slowestMs.toFixed(1)} ms`,
    );
    expect(router!.output().slice(before)).toMatch(
      /--api-keys: cannot read .*keys\.json \(the file is 31457\d{3} bytes, more than the 16777216 bytes a keys file may have\); keeping the 1 keys in force/,
    );
    expect(await servedWithKey()).toBe(200);
  });

  test("a file of 100,001 keys is parsed and refused on a Worker; /livez answers throughout; the keys in force stay", async () => {
    const before = router!.output().length;
    const hex = "0".repeat(58);
    const keys = Array.from({ length: 100_001 }, (_, i) => ({
      tenant: `t${i}`,
      limits: { requests_per_minute: 600 },
      key_sha256: `${hex}${i.toString(16).padStart(6, "0")}`,
    }));
    replace("keys.json", JSON.stringify({ keys }));
    const s = await livezWhile(
      () => router!.output().slice(before).includes("100001 entries; at most 100000"),
      "the refusal of the 100,001-key file",
    );
    console.log(
      `100,001-key file refused: /livez answered ${s.answers} times meanwhile, slowest ${s.slowestMs.toFixed(1)} ms`,
    );
    expect(await servedWithKey()).toBe(200);
  });

  test("a valid file of 100,000 keys is put in force; /livez answers throughout", async () => {
    const before = router!.output().length;
    const hex = "1".repeat(58);
    const keys = Array.from({ length: 99_999 }, (_, i) => ({
      tenant: `t${i}`,
      key_sha256: `${hex}${i.toString(16).padStart(6, "0")}`,
    }));
    keys.push({ tenant: "a", key_sha256: await sha256Hex(KEY) });
    replace("keys.json", JSON.stringify({ keys }));
    const s = await livezWhile(
      () => router!.output().slice(before).includes("100000 keys for 100000 tenants in force"),
      "the 100,000-key file in force",
    );
    console.log(
      `100,000-key file put in force: /livez answered ${s.answers} times meanwhile, slowest ${s.slowestMs.toFixed(1)} ms`,
    );
    expect(await servedWithKey()).toBe(200);
  });

  test("a 3.9 MiB workers file of bad entries is parsed and refused on a Worker; the workers in force stay", async () => {
    const before = router!.output().length;
    const lines = ["workers:"];
    for (let size = 0, i = 0; size < 3.9 * 1024 * 1024; i++) {
      const line = `  - url: not-a-url-${i}-${"y".repeat(60)}`;
      lines.push(line);
      size += line.length + 1;
    }
    replace("workers.yaml", lines.join("\n"));
    const s = await livezWhile(
      () => /--workers-file: .*keeping the last good list/.test(router!.output().slice(before)),
      "the refusal of the workers file",
    );
    console.log(
      `3.9 MiB workers file refused: /livez answered ${s.answers} times meanwhile, slowest ${s.slowestMs.toFixed(1)} ms`,
    );
    expect(await servedWithKey()).toBe(200);
  });
});
