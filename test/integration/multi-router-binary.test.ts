/**
 * The single binary (`bun run compile`'s exact command, built into a temporary folder): two
 * compiled routers share sessions through one redis-server in front of two compiled
 * engines, and the ZMQ receive worker — a second entrypoint of the binary — starts and
 * delivers a vLLM-style publisher's events. Every process is stopped by PID in afterAll.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Subprocess } from "bun";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { computeBlockHashes } from "../../src/core/block-hash.ts";
import { parseJsonBigintSafe } from "../../src/core/json.ts";
import { until } from "../support/processes.ts";
import { startRedisServer, type RedisServer } from "../support/redis-server.ts";
import { compileSwitchyard } from "../support/compile.ts";
import { pythonZmqProblem, VllmPublisherProcess } from "../support/vllm-kv-publisher.ts";
import { BS, prompt, send } from "./multi-router-cluster.ts";

setDefaultTimeout(60_000);

interface BinProc {
  readonly proc: Subprocess<"ignore", "pipe", "pipe">;
  readonly url: string;
  output(): string;
}

let dir = "";
let bin = "";
let redis: RedisServer | undefined;
let publisher: VllmPublisherProcess | undefined;
const procs: BinProc[] = [];

/** Start the binary with `args` and wait for its `{"url"}` line. */
async function startBinary(args: readonly string[]): Promise<BinProc> {
  const proc = Bun.spawn({
    cmd: [bin, ...args],
    cwd: dir,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let out = "";
  let err = "";
  const dec = new TextDecoder();
  void (async () => {
    for await (const c of proc.stdout) out += dec.decode(c, { stream: true });
  })().catch(() => {});
  void (async () => {
    for await (const c of proc.stderr) err += dec.decode(c, { stream: true });
  })().catch(() => {});
  const output = () => `--- stdout\n${out}\n--- stderr\n${err}`;
  const line = await until(
    () => out.split("\n").find((l) => l.startsWith("{") && l.endsWith("}")),
    () => `${args[0]} to print its address\n${output()}`,
    15_000,
  );
  const p = { proc, url: String((JSON.parse(line) as { url: string }).url), output };
  procs.push(p);
  return p;
}

beforeAll(async () => {
  const problem = pythonZmqProblem();
  if (problem) throw new Error(problem);
  dir = mkdtempSync(join(tmpdir(), "switchyard-bin-"));
  bin = join(dir, "switchyard");
  // The package's own compile command, with only the output moved.
  const built = compileSwitchyard(bin);
  if (built.exitCode !== 0) throw new Error(`${built.script} failed:\n${built.stderr}`);
  redis = await startRedisServer();
  publisher = await VllmPublisherProcess.start();
});

afterAll(async () => {
  for (const p of procs) p.proc.kill("SIGKILL");
  await Promise.all(procs.map((p) => p.proc.exited));
  await publisher?.stop();
  await redis?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("the compiled binary", () => {
  test("two compiled routers share sessions through Redis; one also reads a worker's KV events over ZMQ", async () => {
    const engines = await Promise.all(
      [1, 2].map((seed) =>
        startBinary(["mocker", "--port", "0", "--seed", String(seed), "--block-size", String(BS)]),
      ),
    );
    const workers = engines.flatMap((e) => ["--worker", e.url]);
    const vllmUrl = "http://127.0.0.1:9"; // never answers HTTP: only its events matter here
    const [r1, r2] = await Promise.all([
      startBinary([
        "serve",
        "--port",
        "0",
        "--redis",
        redis!.url,
        ...workers,
        "--zmq-endpoint",
        `${vllmUrl}=${publisher!.pub}`,
        "--zmq-replay-endpoint",
        `${vllmUrl}=${publisher!.replay}`,
      ]),
      startBinary(["serve", "--port", "0", "--redis", redis!.url, ...workers]),
    ]);

    const h = { "x-session-id": "binary" };
    const a = await send(r1!.url, { prompt: prompt("bin-a", 3), max_tokens: 2 }, h);
    const b = await send(r2!.url, { prompt: prompt("bin-b", 3), max_tokens: 2 }, h);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(b.worker).toBe(a.worker);

    // The receive worker is a second entrypoint of the binary: it must load and subscribe.
    await publisher!.waitSubscriber();
    const tokens = Array.from({ length: BS }, (_, i) => 300 + i);
    const expected = computeBlockHashes(tokens, BS)[0]!;
    await publisher!.publish([
      {
        events: [
          {
            type: "BlockStored",
            block_hashes: [77],
            parent_block_hash: null,
            token_ids: tokens,
            block_size: BS,
            lora_id: null,
            medium: "GPU",
          },
        ],
      },
    ]);
    await until(
      async () => {
        const dump = parseJsonBigintSafe(
          await (await fetch(`${r1!.url}/debug/kv/dump`)).text(),
        ) as {
          events: {
            event: { data: { stored?: { blocks: { tokens_hash: bigint | number | string }[] } } };
          }[];
        };
        return dump.events.some((e) =>
          e.event.data.stored?.blocks.some((x) => BigInt(x.tokens_hash) === expected),
        );
      },
      () => `the ZMQ event in the compiled router's index\n${r1!.output()}`,
    );
  });
});
