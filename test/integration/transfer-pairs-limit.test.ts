/**
 * The transfer agent (real process, CPU pools, O_DIRECT disk as by default) takes a request
 * of more than 65,536 pairs, as request.ts documents (up to 1,048,576): it used to submit
 * every batch at once and answer 503 SY_E_BUSY once the native handle table (4096 slots)
 * was full (issue 12). Batches now wait for a job slot (src/transfer/job-slots.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { nativeLibrary, REPO_ROOT } from "../unit/transfer/native/native-lib.ts";

let proc: ReturnType<typeof Bun.spawn> | undefined;
let base = "";

beforeAll(async () => {
  nativeLibrary();
  proc = Bun.spawn(
    [
      process.execPath,
      join(REPO_ROOT, "test/support/run-transfer-agent.ts"),
      "--port",
      "0",
      "--backend",
      "cpu",
      "--device-blocks",
      "0",
      "--host-blocks",
      "512",
      "--disk-blocks",
      "512",
      "--num-layers",
      "1",
      "--outer-dim",
      "1",
      "--block-size",
      "1",
      "--inner-dim",
      "16384",
      "--elem-bytes",
      "2",
    ],
    { stdout: "pipe", stderr: "pipe", env: { ...process.env, SWITCHYARD_ADMIN_TOKEN: "" } },
  );
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  let buf = "";
  const deadline = performance.now() + 15_000;
  while (!buf.includes('"ready":true') && performance.now() < deadline) {
    const r = await reader.read();
    if (r.done) break;
    buf += new TextDecoder().decode(r.value);
  }
  reader.releaseLock();
  const line = buf.split("\n").find((l) => l.includes('"ready":true'));
  if (!line) throw new Error(`transfer agent did not start: ${buf}`);
  base = `http://127.0.0.1:${(JSON.parse(line) as { port: number }).port}`;
});

afterAll(async () => {
  if (proc && proc.exitCode === null) {
    proc.kill();
    await proc.exited;
  }
});

describe("transfer agent: requests above 65,536 pairs", () => {
  test("70,000 pairs host -> disk (4375 batches of 16) complete", async () => {
    const n = 70_000;
    const blocks = Array.from({ length: n }, (_, i) => [i % 512, i % 512]);
    const res = await fetch(`${base}/v1/transfer`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ from_pool: "host", to_pool: "disk", blocks }),
    });
    const body = (await res.json()) as Record<string, unknown>;
    expect({ status: res.status, body }).toMatchObject({
      status: 200,
      body: { ok: true, blocks: n, batches: 4375 },
    });
  }, 60_000);
});
