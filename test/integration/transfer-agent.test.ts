/**
 * The transfer agent as a real process (test/support/run-transfer-agent.ts) on a free port:
 * bytes really move through host -> disk -> device, bad bodies are 400, and the admin token
 * is enforced (401 without it).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import {
  equalBytes,
  nativeLibrary,
  pattern,
  REPO_ROOT,
} from "../unit/transfer/native/native-lib.ts";

const TOKEN = "transfer-test-token";
let proc: ReturnType<typeof Bun.spawn> | undefined;
let base = "";

async function readyLine(
  p: ReturnType<typeof Bun.spawn>,
  deadlineMs: number,
): Promise<{ port: number }> {
  const reader = (p.stdout as ReadableStream<Uint8Array>).getReader();
  const dec = new TextDecoder();
  let buf = "";
  const deadline = Date.now() + deadlineMs;
  while (Date.now() < deadline) {
    const next = await Promise.race([
      reader.read(),
      Bun.sleep(deadline - Date.now()).then(() => null),
    ]);
    if (next === null || next.done) break;
    buf += dec.decode(next.value);
    const line = buf.split("\n").find((l) => l.includes('"ready":true'));
    if (line) {
      reader.releaseLock();
      return JSON.parse(line) as { port: number };
    }
  }
  throw new Error(
    `transfer agent did not start: ${buf}\n${await new Response(p.stderr as ReadableStream).text()}`,
  );
}

const auth = { authorization: `Bearer ${TOKEN}` };
const post = (body: unknown, headers: Record<string, string> = auth) =>
  fetch(`${base}/v1/transfer`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

beforeAll(async () => {
  nativeLibrary();
  proc = Bun.spawn(
    [
      "bun",
      join(REPO_ROOT, "test/support/run-transfer-agent.ts"),
      "--port",
      "0",
      "--admin-token",
      TOKEN,
      "--device-blocks",
      "8",
      "--host-blocks",
      "8",
      "--disk-blocks",
      "8",
      "--backend",
      "cpu",
    ],
    { stdout: "pipe", stderr: "pipe", env: { ...process.env, SWITCHYARD_ADMIN_TOKEN: "" } },
  );
  const { port } = await readyLine(proc, 15_000);
  base = `http://127.0.0.1:${port}`;
});

afterAll(() => {
  if (proc && proc.exitCode === null) proc.kill();
});

describe("switchyard transfer agent (real process)", () => {
  let blockBytes = 0;
  let diskPath = "";

  test("GET /v1/transfer/pools lists the pools and the runtime path", async () => {
    const res = await fetch(`${base}/v1/transfer/pools`, { headers: auth });
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      mode: string;
      gpu: boolean;
      runtime_status: string[];
      pools: Record<string, { num_blocks: number; block_bytes: number; path?: string } | null>;
    };
    expect(body.mode).toBe("sharded");
    expect(body.pools.device?.num_blocks).toBe(8);
    expect(body.pools.disk?.num_blocks).toBe(8);
    expect(body.runtime_status.some((l) => l.startsWith("path: "))).toBe(true);
    blockBytes = body.pools.host!.block_bytes;
    diskPath = body.pools.disk!.path!;
    expect(existsSync(diskPath)).toBe(true);
  });

  test("a transfer request answers 200 and the bytes arrive: host -> disk -> device", async () => {
    const data = pattern(blockBytes, 31337);
    const put = await fetch(`${base}/v1/transfer/pools/host/blocks/3`, {
      method: "PUT",
      headers: auth,
      body: data,
    });
    expect(put.status).toBe(200);

    const toDisk = await post({ from_pool: "host", to_pool: "disk", blocks: [[3, 7]] });
    expect(toDisk.status).toBe(200);
    expect(await toDisk.json()).toMatchObject({
      ok: true,
      blocks: 1,
      batches: 1,
      bytes: blockBytes,
    });

    const toDevice = await post({ from_pool: "Disk", to_pool: "Device", blocks: [[7, 5]] });
    expect(toDevice.status).toBe(200);

    const got = await fetch(`${base}/v1/transfer/pools/device/blocks/5`, { headers: auth });
    expect(got.status).toBe(200);
    expect(equalBytes(new Uint8Array(await got.arrayBuffer()), data), "seed 31337").toBe(true);
  });

  test("a bad body is 400", async () => {
    expect((await post("{not json")).status).toBe(400);
    const res = await post({ from_pool: "host", to_pool: "gpu", blocks: [[0, 0]] });
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toContain("to_pool");
    expect((await post({ from_pool: "host", to_pool: "disk", blocks: [[0, -1]] })).status).toBe(
      400,
    );
  });

  test("an invalid direction or an out-of-range block is 400 and the agent keeps serving", async () => {
    const dir = await post({ from_pool: "disk", to_pool: "host", blocks: [[0, 0]] });
    expect(dir.status).toBe(400);
    expect(JSON.stringify(await dir.json())).toContain("Invalid transfer type");
    const range = await post({ from_pool: "host", to_pool: "device", blocks: [[0, 8]] });
    expect(range.status).toBe(400);
    expect((await post({ from_pool: "host", to_pool: "device", blocks: [[0, 7]] })).status).toBe(
      200,
    );
  });

  test("without the admin token every route is 401", async () => {
    expect((await post({ from_pool: "host", to_pool: "disk", blocks: [[0, 0]] }, {})).status).toBe(
      401,
    );
    expect(
      (
        await post(
          { from_pool: "host", to_pool: "disk", blocks: [[0, 0]] },
          { authorization: "Bearer wrong-token" },
        )
      ).status,
    ).toBe(401);
    expect((await fetch(`${base}/v1/transfer/pools`)).status).toBe(401);
    expect((await fetch(`${base}/v1/transfer/pools/host/blocks/0`)).status).toBe(401);
  });

  test("SIGTERM stops the agent and removes its temporary disk file", async () => {
    proc!.kill("SIGTERM");
    expect(await proc!.exited).toBe(0);
    expect(existsSync(diskPath)).toBe(false);
  });
});
