/**
 * Issue 12 §2 and §1, with real processes: a router in front of one good engine and one
 * fault engine (test/support/fault-engine.ts) that answers 500, cuts its streams, or hangs
 * while its /health stays 200. Before this work such an engine was never fenced (it looks
 * idle, so it drew 43 % of the traffic and failed 26-29 % of all requests), and a hung one
 * held requests until the clients gave up. Each test asserts the bound it promises: requests
 * failed / total, the longest wait, the engine ejected (and back once it behaves), the load
 * back to 0.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { startRouter, urlOf } from "../integration/multi-router-cluster.ts";
import { stopAll, until, type Proc } from "../support/processes.ts";
import {
  bookedLoad,
  engineStats,
  load,
  metric,
  setFault,
  startFaultEngine,
  summary,
  workers,
} from "./faults.ts";

const CONCURRENCY = 4;
const TOTAL = 60;
const CONSECUTIVE = 3;

const procs: Proc[] = [];
afterAll(() => stopAll(procs));

/** A good engine, a fault engine in `mode`, and a router with short deadlines and ejections. */
async function cluster(mode: string, routerFlags: readonly string[] = []) {
  const [good, bad] = await Promise.all([startFaultEngine("ok"), startFaultEngine(mode)]);
  procs.push(good, bad);
  const router = await startRouter([good, bad], 0, [
    "--log-level",
    "error",
    "--health-interval",
    "0.2",
    "--max-retries",
    "2",
    "--outlier-consecutive-failures",
    String(CONSECUTIVE),
    "--outlier-base-ejection-time",
    "3",
    ...routerFlags,
  ]);
  procs.push(router);
  const url = urlOf(router);
  const badUrl = String(bad.info.url);
  const badView = async () => (await workers(url)).find((w) => w.url === badUrl)!;
  return { url, badUrl, badView };
}

function report(name: string, s: ReturnType<typeof summary>): void {
  console.log(`chaos ${name}: failed ${s.failed}/${s.total}, longest wait ${s.longestMs} ms`);
}

describe("an engine whose answers fail is ejected, though its /health answers", () => {
  test("500s retried elsewhere (the default --retry-on): no client sees one; the engine is still ejected", async () => {
    const { url, badView } = await cluster("error500");
    const s = summary(await load(url, TOTAL, CONCURRENCY, "five-hundred-retried"));
    report("engine answering 500, retried", s);
    expect(s.failed).toBe(0); // before: 5 of 60 (the probe), one per 500 until the ejection
    const bad = await badView();
    expect(
      await metric(url, "switchyard_upstream_failures_total", `{worker="${bad.id}"}`),
    ).toBeGreaterThanOrEqual(1); // it did get traffic
    expect(await metric(url, "switchyard_worker_ejections_total", `{worker="${bad.id}"}`)).toBe(1);
    expect(bad.healthy).toBe(false);
    expect(await bookedLoad(url)).toBe(0);
  }, 30_000);

  test("500s passed on (--retry-on 502,503,504): at most the consecutive threshold (+ requests in flight) fail; ejected; back once it behaves", async () => {
    const { url, badUrl, badView } = await cluster("error500", ["--retry-on", "502,503,504"]);
    const s = summary(await load(url, TOTAL, CONCURRENCY, "five-hundred"));
    report("engine answering 500", s);
    expect(s.failed).toBeGreaterThanOrEqual(1); // it did get traffic, so the fault was real
    expect(s.failed).toBeLessThanOrEqual(CONSECUTIVE + CONCURRENCY - 1);
    expect(
      await metric(url, "switchyard_worker_ejections_total", `{worker="${(await badView()).id}"}`),
    ).toBe(1);
    const view = await badView();
    expect(view.healthy).toBe(false);
    expect((view as unknown as { reason: string }).reason).toContain("ejected");
    expect(await bookedLoad(url)).toBe(0);
    // It behaves again: the first good health check after its ejection time brings it back.
    await setFault(badUrl, "ok");
    const t0 = performance.now();
    await until(async () => (await badView()).healthy, "the ejected engine to return", 6_000, 50);
    expect(performance.now() - t0).toBeLessThan(4_000);
  }, 30_000);

  test("cut streams, without migration (--max-migrations 0): the client sees a broken stream, at most the threshold (+ in flight) times; ejected", async () => {
    const { url, badView } = await cluster("cut", ["--max-migrations", "0"]);
    const s = summary(await load(url, TOTAL, CONCURRENCY, "cut-streams"));
    report("engine cutting its streams", s);
    expect(s.failed).toBeGreaterThanOrEqual(1);
    expect(s.failed).toBeLessThanOrEqual(CONSECUTIVE + CONCURRENCY - 1);
    expect((await badView()).healthy).toBe(false);
    expect(await bookedLoad(url)).toBe(0);
  }, 30_000);

  test("cut streams with migration (the default): every cut stream goes on on the other engine, none fails; still ejected", async () => {
    const { url, badView } = await cluster("cut");
    const s = summary(await load(url, TOTAL, CONCURRENCY, "cut-migrated"));
    report("engine cutting its streams, migrated", s);
    expect(s.failed).toBe(0);
    expect(
      await metric(url, "switchyard_stream_migrations_total", '{outcome="moved"}'),
    ).toBeGreaterThanOrEqual(1);
    expect((await badView()).healthy).toBe(false);
    await until(async () => (await bookedLoad(url)) === 0, "every booking to be freed", 3_000);
  }, 30_000);

  test("hang with /health 200: every request served by the other engine within the first-byte deadline; the engine saw each cancel", async () => {
    const { url, badUrl, badView } = await cluster("hang", ["--first-byte-timeout", "0.3"]);
    const outcomes = await load(url, 20, CONCURRENCY, "hang");
    const s = summary(outcomes);
    report("engine hanging, /health 200", s);
    expect(s.failed).toBe(0);
    // One first-byte deadline at most per request, plus the answer from the good engine.
    expect(s.longestMs).toBeLessThan(300 + 1_500);
    const stats = await engineStats(badUrl);
    expect(stats.requests).toBeGreaterThanOrEqual(1);
    await until(
      async () => (await engineStats(badUrl)).open === 0,
      "the hung engine to see every request closed",
      3_000,
    );
    expect((await engineStats(badUrl)).closed_by_peer).toBe(stats.requests);
    // The first miss fences the engine; requests still waiting on it then leave at once
    // (worker out of rotation) instead of each waiting out its own deadline.
    const misses = await metric(
      url,
      "switchyard_upstream_deadline_misses_total",
      `{worker="${(await badView()).id}",deadline="first_byte"}`,
    );
    expect(misses).toBeGreaterThanOrEqual(1);
    expect(misses).toBeLessThanOrEqual(stats.requests);
    expect(await bookedLoad(url)).toBe(0);
  }, 30_000);

  test("a stream that stalls mid-answer, without migration (--max-migrations 0), ends as vLLM ends a failed stream after the idle deadline", async () => {
    const { url, badUrl } = await cluster("stall", [
      "--stream-idle-timeout",
      "0.3",
      "--max-migrations",
      "0",
    ]);
    // Send until one lands on the stalling engine (the scheduler spreads distinct prompts).
    const outcomes = await load(url, 12, 2, "stall");
    const stalled = outcomes.filter((o) => !o.complete);
    const s = summary(outcomes);
    report("engine stalling mid-stream", s);
    expect(stalled.length).toBeGreaterThanOrEqual(1);
    for (const o of stalled) {
      expect(o.status).toBe(200);
      expect(o.text).toContain("stream idle deadline of 0.3 s missed");
      expect(o.text).toContain('"type": "InternalServerError", "param": null, "code": 500}}');
      expect(o.ms).toBeLessThan(300 + 1_500);
    }
    await until(
      async () => (await engineStats(badUrl)).open === 0,
      "the stalling engine to see its streams closed",
      3_000,
    );
    expect(await bookedLoad(url)).toBe(0);
  }, 30_000);

  test("a stream that stalls mid-answer, with migration (the default), goes on on the other engine after the idle deadline; none fails", async () => {
    const { url } = await cluster("stall", ["--stream-idle-timeout", "0.3"]);
    const outcomes = await load(url, 12, 2, "stall-migrated");
    const s = summary(outcomes);
    report("engine stalling mid-stream, migrated", s);
    expect(s.failed).toBe(0);
    expect(
      await metric(url, "switchyard_stream_migrations_total", '{outcome="moved"}'),
    ).toBeGreaterThanOrEqual(1);
    expect(s.longestMs).toBeLessThan(300 + 1_500);
    await until(async () => (await bookedLoad(url)) === 0, "every booking to be freed", 3_000);
  }, 30_000);
});
