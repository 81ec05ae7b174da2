/**
 * One retry budget for every re-send, with real processes: three engines that answer 500 to
 * every completion, a burst of 300 requests at once, default ejection. Each 500 is retried on
 * another worker within --retry-budget; and when outlier ejection takes a worker out while
 * requests still wait for its first byte, their fail-over is a re-send too and draws from the
 * same budget. Without that, the engines saw 545 requests for 300 (460 with ejection off).
 * The bound: client requests + the budget's share (20 %) + its floor (10 per second over the
 * 10 s window, counted for every window the burst spans).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { startRouter, urlOf } from "../integration/multi-router-cluster.ts";
import { stopAll, type Proc } from "../support/processes.ts";
import { engineStats, startFaultEngine, streamed } from "./faults.ts";

/** A counter summed over all its label sets. */
async function total(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
    .reduce((s, l) => s + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
}

const BURST = 300;
const SHARE = 0.2; // --retry-budget's default, 20 %
const FLOOR_PER_WINDOW = 10 * 10; // RETRY_FLOOR_PER_SECOND x the 10 s window

const procs: Proc[] = [];
afterAll(() => stopAll(procs));

describe("the retry budget bounds every re-send", () => {
  test("3 engines answering 500, a burst of 300, default ejection: engines see at most requests + share + floor", async () => {
    const engines = await Promise.all([0, 1, 2].map(() => startFaultEngine("error500")));
    procs.push(...engines);
    // No canary: its calls at registration are the router's own, not re-sends of the clients'
    // requests, and the engines count every request they see.
    const router = await startRouter(engines, 0, [
      "--log-level",
      "error",
      "--health-interval",
      "0.2",
      "--canary=false",
    ]);
    procs.push(router);
    const url = urlOf(router);
    const t0 = performance.now();
    const outcomes = await Promise.all(
      Array.from({ length: BURST }, (_, i) => streamed(url, `${i} burst: tell me about routers`)),
    );
    const seconds = (performance.now() - t0) / 1000;
    const sends = (await Promise.all(engines.map((e) => engineStats(String(e.info.url))))).reduce(
      (s, x) => s + x.requests,
      0,
    );
    // Every window of 10 s the burst touched gets its own floor (a sliding window).
    const windows = Math.ceil((seconds + 1) / 10);
    const bound = BURST + Math.floor(SHARE * BURST) + FLOOR_PER_WINDOW * windows;
    const ejections = await total(url, "switchyard_worker_ejections_total");
    console.log(
      `retry budget: ${sends} engine sends for ${BURST} requests in ${seconds.toFixed(1)} s (bound ${bound}), ${ejections} ejections`,
    );
    expect(outcomes.every((o) => o.status !== 200)).toBe(true); // the fault was real
    expect(ejections).toBeGreaterThanOrEqual(1); // fail-over off an ejected worker happened
    expect(sends).toBeGreaterThan(BURST); // retries happened at all
    expect(sends).toBeLessThanOrEqual(bound);
  }, 60_000);
});
