/**
 * Disaggregated prefill/decode with SGLang's protocol, real processes: the router
 * (--disagg sglang) sends the same body with a fresh bootstrap room to a prefill and a decode
 * engine at once; the decode engine asks the prefill engine's bootstrap route for the room's
 * segment and pulls the blocks through the native library. No booking, no segment, no
 * corrupted block is left.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { until } from "../support/processes.ts";
import {
  bookingsReleased,
  complete,
  metric,
  metricLabelled,
  segmentsOf,
  startCluster,
  sumOver,
  tokens,
  workers,
  type Cluster,
} from "./disagg-cluster.ts";

setDefaultTimeout(60_000);

let c: Cluster;

beforeAll(async () => {
  c = await startCluster("sglang", { prefill: 2, decode: 2, minPrefillTokens: 128 });
});
afterAll(async () => {
  await c?.stop();
});

async function clean(): Promise<void> {
  await bookingsReleased(c);
  await until(
    () => segmentsOf([...c.prefill, ...c.decode]).length === 0,
    () => `segments removed: ${segmentsOf([...c.prefill, ...c.decode])}`,
  );
  expect(await sumOver(c.decode, "mocker_kv_transfer_mismatched_blocks_total")).toBe(0);
}

describe("--disagg sglang", () => {
  test("prefill and decode run at once; the decode engine pulls the room's blocks, checked", async () => {
    for (const [i, stream] of [
      [1, false],
      [2, true],
    ] as const) {
      // A stream carries its usage (and so the transfer counts) only when asked for it, as on vLLM.
      const res = await complete(c, {
        prompt: tokens(24, i),
        max_tokens: 3,
        stream,
        ...(stream ? { stream_options: { include_usage: true } } : {}),
      });
      expect(res.status).toBe(200);
      expect(c.prefill.map((p) => String(p.info.worker_id))).toContain(
        res.headers.get("x-switchyard-prefill-worker")!,
      );
      const text = await res.text();
      expect(text).toContain('"kv_transfer_blocks":24');
    }
    expect(await sumOver(c.prefill, "mocker_kv_exported_blocks_total")).toBe(48);
    expect(await sumOver(c.decode, "mocker_kv_transfer_blocks_total")).toBe(48);
    await clean();
  });

  test("a short prompt is prefilled on the decode engine alone", async () => {
    const before = await sumOver(c.prefill, "mocker_requests_total");
    const res = await complete(c, { prompt: tokens(3, 3), max_tokens: 2 });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-switchyard-prefill-worker")).toBeNull();
    await res.arrayBuffer();
    expect(await sumOver(c.prefill, "mocker_requests_total")).toBe(before);
    await clean();
  });

  test("a prefill engine killed before the request: the pair is retried with the other one, or the decode engine prefills itself", async () => {
    const victim = c.prefill[0]!;
    victim.proc.kill("SIGKILL");
    await victim.proc.exited;
    // Until the health check sees it the router may pick it (random ties between two cold
    // prefill engines): fresh prompts until it did once (40 tries miss it with p = 2^-40).
    const failures = () => metric(c.routerUrl, "switchyard_disagg_prefill_failures_total");
    for (let i = 0; i < 40 && (await failures()) === 0; i++) {
      const res = await complete(c, { prompt: tokens(20, 10 + i), max_tokens: 2 });
      const body = (await res.json()) as { usage: Record<string, number> };
      expect(res.status).toBe(200);
      if (res.headers.get("x-switchyard-prefill-worker") === String(victim.info.worker_id)) {
        // the decode engine answered before the router saw the prefill fail: it prefilled itself
        expect(body.usage.kv_transfer_blocks).toBeUndefined();
      } else {
        // the other prefill engine, at once or in the retried pair (new room)
        expect(res.headers.get("x-switchyard-prefill-worker")).toBe(
          String(c.prefill[1]!.info.worker_id),
        );
        expect(body.usage.kv_transfer_blocks).toBe(20);
      }
    }
    expect(await failures()).toBe(1); // then fenced: never picked again
    await until(
      async () => (await workers(c)).filter((w) => !w.healthy).length === 1,
      "the killed prefill worker marked unhealthy",
    );
    const res = await complete(c, { prompt: tokens(20, 30), max_tokens: 2 });
    expect(res.headers.get("x-switchyard-prefill-worker")).toBe(
      String(c.prefill[1]!.info.worker_id),
    );
    await res.arrayBuffer();
    await clean();
  });

  test("no healthy prefill engine: local prefill on the decode engine, counted", async () => {
    c.prefill[1]!.proc.kill("SIGKILL");
    await c.prefill[1]!.proc.exited;
    await until(
      async () => (await workers(c)).filter((w) => !w.healthy).length === 2,
      "both prefill workers unhealthy",
    );
    const res = await complete(c, { prompt: tokens(20, 40), max_tokens: 2 });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-switchyard-prefill-worker")).toBeNull();
    await res.arrayBuffer();
    expect(
      await metricLabelled(
        c.routerUrl,
        "switchyard_disagg_requests_total",
        'path="fallback_no_prefill_worker"',
      ),
    ).toBe(1);
    await clean();
  });
});
