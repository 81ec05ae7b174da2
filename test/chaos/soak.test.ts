/**
 * 60 s of bench:soak (bench/soak/soak.ts) with real processes: three simulated engines, one
 * killed (SIGKILL) and started again every 10 s, Redis hung (SIGSTOP) for 2 s mid-run,
 * eight clients of conversations. Asserts the bounds the router promises under churn:
 * almost every request answers, the router's memory and index stay bounded, and the booked
 * load drains to 0 once the load stops. The series is printed (bench/soak/README.md has a run).
 */
import { expect, test } from "bun:test";
import { DEFAULT_SOAK, runSoak, SOAK_KV_BLOCKS } from "../../bench/soak/soak.ts";

test("soak: 60 s of load with engine kills and a Redis hang", async () => {
  const opts = { ...DEFAULT_SOAK, durationS: 60, redis: true, seed: 12 };
  const r = await runSoak(opts);
  const { samples, ...summary } = r;
  console.log(`soak (seed ${opts.seed}): ${JSON.stringify(summary)}`);
  console.log(
    samples
      .map(
        (s) =>
          `${s.t}s rss=${s.rssMiB} index=${s.indexBlocks} load=${s.activeLoad} ok=${s.ok} failed=${s.failed}${s.event ? ` ${s.event}` : ""}`,
      )
      .join("\n"),
  );
  expect(r.kills).toBeGreaterThanOrEqual(5);
  expect(r.requests).toBeGreaterThan(1_000);
  expect(r.failed / r.requests).toBeLessThan(0.02); // streams cut by a SIGKILL fail; nothing else may
  expect(r.activeLoadAfter).toBe(0);
  expect(r.indexMaxBlocks).toBeLessThanOrEqual(opts.engines * SOAK_KV_BLOCKS);
  // Memory settles: the last quarter's median within 1.5x (+32 MiB) of the second quarter's.
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const q = (from: number, to: number) =>
    median(
      samples
        .filter((s) => s.t >= from * opts.durationS && s.t < to * opts.durationS)
        .map((s) => s.rssMiB),
    );
  expect(q(0.75, 1.01)).toBeLessThan(q(0.25, 0.5) * 1.5 + 32);
  expect(r.rssMaxMiB).toBeLessThan(512);
}, 120_000);
