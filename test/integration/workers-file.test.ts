/**
 * --workers-file (issue 13) edited at run time the way Kubernetes updates a mounted
 * ConfigMap: the file is a symlink through `..data`, which is swapped atomically to a new
 * timestamped folder. The router adds the workers a new version lists, removes the ones it
 * no longer lists, keeps the last good set when a version does not parse, and puts back a
 * listed worker removed by DELETE. Real processes: two simulated engines and one router.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { workerIdFromUrl } from "../../src/core/worker-id.ts";
import { startMain, stopAll, until, type Proc } from "../support/processes.ts";

setDefaultTimeout(30_000);

let engines: Proc[] = [];
let router: Proc | undefined;
let routerUrl = "";
let dir = "";
let version = 0;
const urlOf = (p: Proc) => String(p.info.url);

/** Publish a new version of the mounted file, as the kubelet does: new folder, then swap ..data. */
function publish(content: string): void {
  const v = `..v${++version}`;
  mkdirSync(join(dir, v));
  writeFileSync(join(dir, v, "workers.yaml"), content);
  symlinkSync(v, join(dir, "..data_tmp"));
  renameSync(join(dir, "..data_tmp"), join(dir, "..data"));
}

/** Publish a version whose workers.yaml is a symlink to `target` (a device, say). */
function publishLink(target: string): void {
  const v = `..v${++version}`;
  mkdirSync(join(dir, v));
  symlinkSync(target, join(dir, v, "workers.yaml"));
  symlinkSync(v, join(dir, "..data_tmp"));
  renameSync(join(dir, "..data_tmp"), join(dir, "..data"));
}

async function listed(): Promise<string[]> {
  const ws = (await (await fetch(`${routerUrl}/v1/workers`)).json()) as {
    workers: { url: string }[];
  };
  return ws.workers.map((w) => w.url).sort();
}

beforeAll(async () => {
  engines = await Promise.all(
    [1, 2].map((seed) =>
      startMain(["mocker", "--port", "0", "--block-size", "16", "--seed", String(seed)]),
    ),
  );
  dir = mkdtempSync(join(tmpdir(), "switchyard-workers-file-"));
  publish(`workers:\n  - url: ${urlOf(engines[0]!)}\n`);
  symlinkSync(join("..data", "workers.yaml"), join(dir, "workers.yaml"));
  router = await startMain([
    "serve",
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--block-size",
    "16",
    "--workers-file",
    join(dir, "workers.yaml"),
    "--health-interval",
    "0.2",
  ]);
  routerUrl = String(router.info.url);
});

afterAll(async () => {
  await stopAll([router, ...engines]);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("--workers-file", () => {
  test("the workers the file lists at start are registered before the router answers", async () => {
    expect(await listed()).toEqual([urlOf(engines[0]!)]);
  });

  test("a new version of the file adds and removes workers", async () => {
    const want = [urlOf(engines[1]!)];
    publish(`# the second engine only\n- ${urlOf(engines[1]!)}\n`);
    await until(
      async () => JSON.stringify(await listed()) === JSON.stringify(want),
      "the router to follow the new file",
    );
    publish(
      `workers:\n  - url: ${urlOf(engines[0]!)}\n  - url: ${urlOf(engines[1]!)}\n    dp_ranks: 1\n`,
    );
    const both = [urlOf(engines[0]!), urlOf(engines[1]!)].sort();
    await until(
      async () => JSON.stringify(await listed()) === JSON.stringify(both),
      "both engines listed",
    );
    const r = await fetch(`${routerUrl}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: "hi", max_tokens: 2 }),
    });
    expect(r.status).toBe(200);
    await r.text();
  });

  test("a version that does not parse is logged and the last good set is kept", async () => {
    const before = await listed();
    publish("workers:\n  - url: [unclosed\n");
    await until(
      () => router!.output().includes("not valid YAML"),
      "the router to log the bad file",
    );
    expect(router!.output()).toContain("keeping the last good list");
    publish(`workers:\n  - url: ${urlOf(engines[0]!)}\n    dp_ranks: 0\n`);
    await until(
      () => router!.output().includes("dp_ranks: must be >= 1"),
      "the router to name the bad field",
    );
    expect(await listed()).toEqual(before);
  });

  test("a version that is a symlink to /dev/zero, or too large, is refused unread: memory flat, the last good set kept, then a good version followed", async () => {
    publish(`- ${urlOf(engines[0]!)}\n`);
    await until(
      async () => JSON.stringify(await listed()) === JSON.stringify([urlOf(engines[0]!)]),
      "one engine listed",
    );
    const rss = async () =>
      Number(/VmRSS:\s+(\d+)/.exec(await Bun.file(`/proc/${router!.pid}/status`).text())![1]) /
      1024;
    const before = await rss();
    // Before: the router read /dev/zero without end (+400 MB/s) and kept reading once it was fixed.
    publishLink("/dev/zero");
    await until(
      () => router!.output().includes("is not a regular file"),
      "the router to refuse /dev/zero",
    );
    publish("x".repeat(5 * 1024 * 1024));
    await until(
      () => router!.output().includes("bytes allowed"),
      "the router to refuse a 5 MiB file",
    );
    const grown = (await rss()) - before;
    console.log(
      `workers file: /dev/zero and a 5 MiB file refused; router RSS +${grown.toFixed(1)} MB`,
    );
    expect(grown).toBeLessThan(50);
    expect(await listed()).toEqual([urlOf(engines[0]!)]);
    publish(`- ${urlOf(engines[1]!)}\n`);
    await until(
      async () => JSON.stringify(await listed()) === JSON.stringify([urlOf(engines[1]!)]),
      "the router to follow the fixed file",
    );
  });

  test("a listed worker removed by DELETE is put back; the file is the source of truth", async () => {
    publish(`- ${urlOf(engines[0]!)}\n`);
    await until(
      async () => JSON.stringify(await listed()) === JSON.stringify([urlOf(engines[0]!)]),
      "one engine listed",
    );
    const id = workerIdFromUrl(urlOf(engines[0]!)).toString();
    expect((await fetch(`${routerUrl}/v1/workers/${id}`, { method: "DELETE" })).status).toBe(200);
    await until(
      async () => JSON.stringify(await listed()) === JSON.stringify([urlOf(engines[0]!)]),
      "the file's worker back",
    );
  });
});
