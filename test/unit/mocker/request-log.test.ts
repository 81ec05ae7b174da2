import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MockEngine, type PrefillRecord } from "../../../src/mocker/engine.ts";
import { resolveMockerOptions } from "../../../src/mocker/options.ts";
import { requestLogWriter } from "../../../src/mocker/request-log.ts";
import { startMocker } from "../../../src/mocker/server.ts";
import { VirtualClock } from "./virtual-clock.ts";

const dir = mkdtempSync(join(tmpdir(), "request-log-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const prompt = (n: number, base = 0) => Uint32Array.from({ length: n }, (_, i) => base + i);
const sink = { start: () => {}, token: () => {} };

describe("the simulated engine's request log", () => {
  test("each request's first token: when it arrived, got the prefill lane and answered, and what it computed", async () => {
    const clock = new VirtualClock();
    const records: PrefillRecord[] = [];
    // 1 ms per uncached token, no overhead: the second request waits out the first's 8 ms prefill.
    const config = resolveMockerOptions({
      scheduler: "fifo",
      blockSize: 4,
      kvBlocks: 64,
      prefillUsPerToken: 1000,
      prefillOverheadMs: 0,
      decodeMsPerStep: 10,
      decodeBatchFactor: 0,
    });
    const engine = new MockEngine({
      config,
      workerId: 7n,
      clock,
      onPrefilled: (r) => records.push(r),
    });
    const a = engine.generate({ tokens: prompt(8), maxTokens: 2, dpRank: 0, requestId: "a" }, sink);
    // Shares a's first block (4 tokens), which is cached by the time it gets the lane.
    const b = engine.generate(
      {
        tokens: Uint32Array.from([0, 1, 2, 3, 90, 91, 92, 93, 94, 95]),
        maxTokens: 2,
        dpRank: 0,
        requestId: "b",
      },
      sink,
    );
    await clock.run();
    await Promise.all([a, b]);
    expect(records).toEqual([
      {
        requestId: "a",
        dpRank: 0,
        arrivedAt: 0,
        prefillStartedAt: 0,
        firstTokenAt: 8,
        promptTokens: 8,
        cachedTokens: 0,
        computedTokens: 8,
      },
      {
        requestId: "b",
        dpRank: 0,
        arrivedAt: 0,
        prefillStartedAt: 8,
        firstTokenAt: 14,
        promptTokens: 10,
        cachedTokens: 4,
        computedTokens: 6,
      },
    ]);
  });

  test("the writer appends one JSON line per record, times as epoch milliseconds", () => {
    const path = join(dir, "one.jsonl");
    const logged: string[] = [];
    const write = requestLogWriter(path, 12345678901234567890n, (l) => logged.push(l), 1_000_000);
    write({
      requestId: "x-1",
      dpRank: 1,
      arrivedAt: 1.5,
      prefillStartedAt: 2.25,
      firstTokenAt: 10.0004,
      promptTokens: 30,
      cachedTokens: 16,
      computedTokens: 14,
    });
    write({
      requestId: undefined,
      dpRank: 0,
      arrivedAt: 20,
      prefillStartedAt: 20,
      firstTokenAt: 21,
      promptTokens: 1,
      cachedTokens: 0,
      computedTokens: 1,
    });
    const lines = readFileSync(path, "utf8")
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines).toEqual([
      {
        request_id: "x-1",
        worker: "12345678901234567890",
        dp_rank: 1,
        arrived_at: 1_000_001.5,
        prefill_started_at: 1_000_002.25,
        first_token_at: 1_000_010,
        prompt_tokens: 30,
        cached_tokens: 16,
        computed_tokens: 14,
      },
      {
        request_id: null,
        worker: "12345678901234567890",
        dp_rank: 0,
        arrived_at: 1_000_020,
        prefill_started_at: 1_000_020,
        first_token_at: 1_000_021,
        prompt_tokens: 1,
        cached_tokens: 0,
        computed_tokens: 1,
      },
    ]);
    expect(logged).toEqual([]);
  });

  test("a file it cannot write is said once, and serving goes on", () => {
    const logged: string[] = [];
    const write = requestLogWriter(join(dir, "no-such-dir", "x.jsonl"), 1n, (l) => logged.push(l));
    const r: PrefillRecord = {
      requestId: "a",
      dpRank: 0,
      arrivedAt: 0,
      prefillStartedAt: 0,
      firstTokenAt: 1,
      promptTokens: 1,
      cachedTokens: 0,
      computedTokens: 1,
    };
    write(r);
    write(r);
    expect(logged.length).toBe(1);
    expect(logged[0]).toContain("no-such-dir");
  });

  test("a served completion's line carries the caller's x-request-id (one real server, --request-log)", async () => {
    const path = join(dir, "served.jsonl");
    const m = await startMocker({ port: 0, requestLog: path, speedup: 50, log: () => {} });
    try {
      const before = performance.timeOrigin + performance.now();
      for (const stream of [false, true]) {
        const res = await fetch(`${m.url}/v1/completions`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-request-id": `req-${stream}` },
          body: JSON.stringify({ prompt: [1, 2, 3, 4, 5], max_tokens: 2, stream }),
        });
        expect(res.status).toBe(200);
        await res.text();
      }
      const lines = readFileSync(path, "utf8")
        .trimEnd()
        .split("\n")
        .map((l) => JSON.parse(l));
      expect(lines.map((l) => l.request_id)).toEqual(["req-false", "req-true"]);
      for (const l of lines) {
        expect(l).toMatchObject({ worker: m.workerId.toString(), dp_rank: 0, prompt_tokens: 5 });
        expect(l.arrived_at).toBeGreaterThanOrEqual(Math.floor(before));
        expect(l.prefill_started_at).toBeGreaterThanOrEqual(l.arrived_at);
        expect(l.first_token_at).toBeGreaterThanOrEqual(l.prefill_started_at);
      }
    } finally {
      await m.stop();
    }
  });
});
