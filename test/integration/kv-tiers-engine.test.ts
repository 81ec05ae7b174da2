/**
 * The simulated engine's KV tiers and peer pulls with real engine processes and real bytes:
 * GPU evictions stored to the host tier with CPU events, a host-tier hit loaded (checked) instead
 * of recomputed, a peer pull that moves byte-exact blocks (from the peer's GPU and from its host
 * tier), and pulls whose peer or puller is killed mid-pull: the request still succeeds and no
 * shared-memory segment is left.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startMain, stopAll, until, type Proc } from "../support/processes.ts";
import { metric } from "./disagg-cluster.ts";

const BS = 16;
const dir = mkdtempSync(join(tmpdir(), "sy-kv-tiers-it-"));
const procs: Proc[] = [];
afterAll(async () => {
  await stopAll(procs);
  rmSync(dir, { recursive: true, force: true });
});

async function engine(extra: readonly string[]): Promise<Proc> {
  const p = await startMain([
    "mocker",
    "--port",
    "0",
    "--block-size",
    String(BS),
    "--kv-block-bytes",
    "8192",
    ...extra,
  ]);
  procs.push(p);
  return p;
}

/** `blocks` full blocks + 3 tokens, distinct per seed. */
const prompt = (blocks: number, seed: number) =>
  Array.from({ length: blocks * BS + 3 }, (_, i) => 1000 + ((seed * 7919 + i * 31) % 30000));

async function complete(
  p: Proc,
  body: Record<string, unknown>,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(`${p.info.url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ max_tokens: 1, ...body }),
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

/** This test's shared-memory segments now in /dev/shm. */
const segments = () => readdirSync("/dev/shm").filter((n) => n.startsWith("sy-p2p-it-"));

type WireEvent = {
  storage_tier?: string;
  event: { data: Record<string, { blocks?: { block_hash: unknown }[]; block_hashes?: unknown[] }> };
};
async function events(p: Proc): Promise<WireEvent[]> {
  const r = await fetch(`${p.info.url}/kv/query?dp_rank=0&start_id=0&end_id=100000`);
  const b = (await r.json()) as { events?: { events: WireEvent[] } };
  return b.events?.events ?? [];
}

interface LogLine {
  prompt_tokens: number;
  cached_tokens: number;
  computed_tokens: number;
  arrived_at: number;
  first_token_at: number;
}
const logLines = (file: string): LogLine[] =>
  readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as LogLine);

describe("host tier", () => {
  test("GPU evictions go to the host tier with CPU events; the evicted prefix loads back byte-exact, faster than its prefill", async () => {
    const log = join(dir, "tiers.jsonl");
    // 4 GPU blocks: a second 4-block prompt evicts the first. 5 ms per computed token.
    const e = await engine([
      "--kv-blocks",
      "4",
      "--kv-host-blocks",
      "16",
      "--prefill-us-per-token",
      "5000",
      "--request-log",
      log,
    ]);
    const a = prompt(4, 1);
    expect((await complete(e, { prompt: a })).status).toBe(200);
    expect((await complete(e, { prompt: prompt(4, 2) })).status).toBe(200);

    // Offloads run after the step that evicted (as vLLM's are asynchronous): wait for their events.
    const evs = await until(async () => {
      const all = await events(e);
      return all.some((x) => x.storage_tier === "host_pinned") ? all : null;
    }, "CPU events");
    const cpuStored = evs.filter(
      (x) => x.storage_tier === "host_pinned" && "stored" in x.event.data,
    );
    const gpuRemoved = evs.filter((x) => x.storage_tier === undefined && "removed" in x.event.data);
    expect(gpuRemoved).toHaveLength(1);
    const evicted = gpuRemoved[0]!.event.data.removed!.block_hashes!.map(String).sort();
    // Every block the GPU evicted is announced on the CPU medium (vLLM's OffloadingConnector semantics).
    expect(
      cpuStored
        .flatMap((x) => x.event.data.stored!.blocks!.map((b) => String(b.block_hash)))
        .sort(),
    ).toEqual(evicted);
    expect(evicted).toHaveLength(4);

    const again = await complete(e, { prompt: a });
    expect(again.status).toBe(200);
    expect(
      (again.body.usage as { prompt_tokens_details: { cached_tokens: number } })
        .prompt_tokens_details.cached_tokens,
    ).toBe(4 * BS);
    const url = String(e.info.url);
    expect(await metric(url, "mocker_kv_tier_loaded_blocks_total")).toBe(4);
    expect(await metric(url, "mocker_kv_tier_mismatched_blocks_total")).toBe(0);

    const [first, , reload] = await until(() => {
      const l = logLines(log);
      return l.length === 3 ? l : null;
    }, "three request-log lines");
    expect(first!.computed_tokens).toBe(4 * BS + 3);
    expect(reload!.computed_tokens).toBe(3);
    // The engine's own timing (arrival to first token): the reload took the modelled load
    // (~0.2 ms) plus 3 computed tokens, not 67 tokens of prefill.
    expect(reload!.first_token_at - reload!.arrived_at).toBeLessThan(
      first!.first_token_at - first!.arrived_at,
    );
  });
});

describe("disk tier", () => {
  test("host evictions spill to disk (disk events) and load back from it; a killed engine's disk file is swept by its next start", async () => {
    const disk = mkdtempSync(join(dir, "disk-"));
    const args = [
      "--kv-blocks",
      "4",
      "--kv-host-blocks",
      "4",
      "--kv-disk-blocks",
      "16",
      "--kv-disk-dir",
      disk,
      "--worker-id",
      "777123",
    ];
    const e = await engine(args);
    const a = prompt(4, 11);
    for (const p of [a, prompt(4, 12), prompt(4, 13)])
      expect((await complete(e, { prompt: p })).status).toBe(200);
    // a: GPU -> host (by the 2nd prompt) -> disk (by the 3rd).
    await until(
      async () =>
        (await events(e)).some((x) => x.storage_tier === "disk" && "stored" in x.event.data),
      "a disk Stored event",
    );
    const again = await complete(e, { prompt: a });
    expect(
      (again.body.usage as { prompt_tokens_details: { cached_tokens: number } })
        .prompt_tokens_details.cached_tokens,
    ).toBe(4 * BS);
    const url = String(e.info.url);
    expect(await metric(url, "mocker_kv_tier_disk_loaded_blocks_total")).toBe(4);
    expect(await metric(url, "mocker_kv_tier_mismatched_blocks_total")).toBe(0);
    expect(readdirSync(disk)).toHaveLength(1);
    e.proc.kill("SIGKILL");
    await e.proc.exited;
    const [left] = readdirSync(disk);
    const next = await engine(args);
    expect(readdirSync(disk)).not.toContain(left);
    await next.stop();
    expect(readdirSync(disk)).toEqual([]); // a graceful stop removes its own
  });
});

describe("peer pulls (llm-d's remote_kv_source)", () => {
  const source = (p: Proc, id: string) => ({
    kv_transfer_params: {
      remote_kv_source: {
        kv_request_id: id,
        remote_host: "127.0.0.1",
        remote_port: Number(p.info.port),
      },
    },
  });

  test("a pull moves byte-exact blocks from a peer's GPU cache and from its host tier; nothing stays in /dev/shm", async () => {
    const peer = await engine(["--kv-blocks", "8", "--kv-host-blocks", "16"]);
    const puller = await engine([]);
    const before = segments();
    const x = prompt(6, 3);
    expect((await complete(peer, { prompt: x })).status).toBe(200);
    const r = await complete(puller, { prompt: x, ...source(peer, "it-gpu-1") });
    expect(r.status).toBe(200);
    expect(r.body.usage).toMatchObject({ kv_transfer_blocks: 6, kv_transfer_bytes: 6 * 8192 });
    // Evict x from the peer's GPU (8 blocks): it stays in the peer's host tier, and is pulled from there.
    const y = prompt(8, 4);
    expect((await complete(peer, { prompt: y })).status).toBe(200);
    await until(
      async () =>
        (await metric(String(peer.info.url), "mocker_kv_tier_offloaded_blocks_total")) >= 6,
      "x offloaded to the peer's host tier",
    );
    const puller2 = await engine([]);
    const r2 = await complete(puller2, { prompt: x, ...source(peer, "it-host-1") });
    expect(r2.body.usage).toMatchObject({ kv_transfer_blocks: 6 });
    for (const p of [puller, puller2]) {
      expect(await metric(String(p.info.url), "mocker_kv_p2p_pulled_blocks_total")).toBe(6);
      expect(await metric(String(p.info.url), "mocker_kv_p2p_mismatched_blocks_total")).toBe(0);
    }
    expect(await metric(String(peer.info.url), "mocker_kv_p2p_exports_total")).toBe(2);
    expect(segments()).toEqual(before);
  });

  test("a bad remote_kv_source is a 400 naming the field", async () => {
    const e = await engine([]);
    const r = await complete(e, {
      prompt: prompt(2, 5),
      kv_transfer_params: {
        remote_kv_source: { kv_request_id: "x", remote_host: "127.0.0.1", remote_port: 0 },
      },
    });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).toContain("remote_kv_source.remote_port");
  });

  test("the peer killed mid-pull: the puller computes the prefix, the request succeeds, no segment is left", async () => {
    const peer = await engine(["--kv-blocks", "64"]);
    // ~8 MB of modelled KV at 1 MB/s: the pull is still on the wire when the peer dies; deadline 4 s.
    const puller = await engine(["--kv-peer-gbps", "0.001", "--kv-pull-deadline-ms", "4000"]);
    const before = segments();
    const x = prompt(4, 6);
    expect((await complete(peer, { prompt: x })).status).toBe(200);
    const pending = complete(puller, { prompt: x, ...source(peer, "it-peer-dies") });
    await until(() => segments().includes("sy-p2p-it-peer-dies"), "the peer's export segment");
    peer.proc.kill("SIGKILL");
    await peer.proc.exited;
    const r = await pending;
    expect(r.status).toBe(200);
    expect(r.body.usage).not.toHaveProperty("kv_transfer_blocks");
    expect((r.body.usage as { prompt_tokens: number }).prompt_tokens).toBe(x.length);
    expect(await metric(String(puller.info.url), "mocker_kv_p2p_pull_failures_total")).toBe(1);
    expect(segments()).toEqual(before);
  });

  test("the puller killed mid-pull: the peer's lease removes the segment", async () => {
    const peer = await engine(["--kv-blocks", "64", "--kv-lease-ms", "500"]);
    const puller = await engine(["--kv-peer-gbps", "0.001", "--kv-pull-deadline-ms", "60000"]);
    const before = segments();
    const x = prompt(4, 7);
    expect((await complete(peer, { prompt: x })).status).toBe(200);
    const pending = complete(puller, { prompt: x, ...source(peer, "it-puller-dies") }).catch(
      () => null,
    );
    await until(() => segments().includes("sy-p2p-it-puller-dies"), "the peer's export segment");
    puller.proc.kill("SIGKILL");
    await puller.proc.exited;
    await pending;
    await until(
      () => !segments().includes("sy-p2p-it-puller-dies"),
      "the segment removed by the peer's lease",
    );
    expect(segments()).toEqual(before);
  });
});
