/**
 * Issue 12 §1 with real simulated engines: one is frozen (SIGSTOP) or killed (SIGKILL) in
 * the middle of a streaming load. Before the deadlines, SIGSTOP held 14 requests for 19–20 s;
 * now a request waiting on the frozen engine fails over after the first-byte deadline and a
 * stream it was serving ends after the idle deadline. Each test asserts requests failed /
 * total (at most those in flight on the engine), the longest wait, and the load back to 0.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { complete, startEngines, startRouter, urlOf } from "../integration/multi-router-cluster.ts";
import { stopAll, until, type Proc } from "../support/processes.ts";
import { bookedLoad, streamed, summary, workers, type Outcome } from "./faults.ts";

const CONCURRENCY = 6;
const procs: Proc[] = [];
afterAll(async () => {
  for (const p of procs) if (p.proc.exitCode === null) p.proc.kill("SIGCONT");
  await stopAll(procs);
});

/**
 * The deadlines the router runs under: short enough that a frozen engine is left behind in
 * about a second, long enough (DEADLINE_S, ~5x a 20-token stream) that a healthy engine on a
 * loaded 2-core CI machine never misses one (a 0.5 s idle deadline did, in a full run, and
 * failed healthy streams: 41 of 61).
 */
const DEADLINE_S = 1;

async function cluster(deadlineS = DEADLINE_S) {
  const engines = await startEngines(2, [], ["--decode-ms-per-step", "10"]);
  procs.push(...engines);
  const d = String(deadlineS);
  const router = await startRouter(engines, 0, [
    "--log-level",
    "error",
    "--health-interval",
    "0.2",
    "--health-timeout",
    "0.2",
    "--first-byte-timeout",
    d,
    "--stream-idle-timeout",
    d,
    "--connect-timeout",
    d,
  ]);
  procs.push(router);
  return { url: urlOf(router), engines };
}

/** Streams of 20 tokens (~0.2 s each), `concurrency` at a time, until `stop()` says so. */
function steadyLoad(url: string, tag: string) {
  const out: Outcome[] = [];
  let running = true;
  let i = 0;
  const done = Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (running)
        out.push(await streamed(url, `${tag} ${i++}: a prompt about routers and caches`, 20));
    }),
  );
  return {
    out,
    async stop() {
      running = false;
      await done;
      return out;
    },
  };
}

describe("an engine frozen or killed mid-load", () => {
  test("SIGSTOP: waits end at the deadlines (failed <= streams in flight on it), load back to 0 while it is still frozen", async () => {
    const { url, engines } = await cluster();
    const victim = engines[1]!;
    const l = steadyLoad(url, "sigstop");
    await until(() => l.out.length >= 12, "the load to be under way", 10_000);
    victim.proc.kill("SIGSTOP");
    await until(
      async () => (await workers(url)).find((w) => w.url === victim.info.url)?.healthy === false,
      "the frozen engine to be marked unhealthy",
      5_000,
    );
    const before = l.out.length;
    await until(
      () => l.out.length >= before + 24,
      "more requests to be served by the other engine",
      10_000,
    );
    const s = summary(await l.stop());
    console.log(
      `chaos engine SIGSTOP: failed ${s.failed}/${s.total}, longest wait ${s.longestMs} ms`,
    );
    expect(s.failed).toBeLessThanOrEqual(CONCURRENCY);
    expect(s.longestMs).toBeLessThan(2 * DEADLINE_S * 1000 + 2_000); // first byte + idle + slack; was 19-20 s
    await until(async () => (await bookedLoad(url)) === 0, "every booking to be freed", 3_000);
    victim.proc.kill("SIGCONT");
  }, 40_000);

  test("SIGSTOP: whole answers (not streamed) waiting on it go to the other engine once it is declared unhealthy, not after the 600 s response deadline", async () => {
    const engines = await startEngines(2, [], ["--decode-ms-per-step", "10"]);
    procs.push(...engines);
    // The setting: a 2 s first-byte deadline, the default 600 s response deadline.
    const router = await startRouter(engines, 0, [
      "--log-level",
      "error",
      "--health-interval",
      "0.3",
      "--health-timeout",
      "0.3",
      "--first-byte-timeout",
      "2",
    ]);
    procs.push(router);
    const url = urlOf(router);
    const victim = engines[0]!;
    const victimId = (await workers(url)).find((w) => w.url === victim.info.url)!.id;
    victim.proc.kill("SIGSTOP");
    // Sent at once, before the health check can notice: the load spreads them over both engines.
    const t0 = performance.now();
    const answers = await Promise.all(
      Array.from({ length: 6 }, async (_, i) => {
        const r = await complete(url, {
          prompt: `${i} whole answer wanted: tell me about routers`,
          max_tokens: 4,
        });
        return {
          status: r.status,
          worker: r.headers.get("x-switchyard-worker"),
          body: await r.text(),
          ms: performance.now() - t0,
        };
      }),
    );
    const longest = Math.round(Math.max(...answers.map((a) => a.ms)));
    console.log(
      `chaos engine SIGSTOP, whole answers: ${answers.filter((a) => a.status === 200).length}/6 answered, longest ${longest} ms`,
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(answers.every((a) => a.worker !== victimId)).toBe(true);
    expect(longest).toBeLessThan(5_000); // health check (0.3 s + 0.3 s) and the second engine's answer; was 600 s
    const stopped = (await workers(url)).find((w) => w.id === victimId)!;
    expect(stopped.healthy).toBe(false);
    await until(async () => (await bookedLoad(url)) === 0, "every booking to be freed", 3_000);
    victim.proc.kill("SIGCONT");
  }, 40_000);

  test("SIGKILL: only the streams in flight on it fail; the rest is served at once", async () => {
    // A killed engine refuses or resets at once: no deadline is involved, so none can misfire.
    const { url, engines } = await cluster(10);
    const victim = engines[0]!;
    const l = steadyLoad(url, "sigkill");
    await until(() => l.out.length >= 12, "the load to be under way", 10_000);
    victim.proc.kill("SIGKILL");
    const before = l.out.length;
    await until(
      () => l.out.length >= before + 24,
      "more requests to be served by the other engine",
      10_000,
    );
    const s = summary(await l.stop());
    console.log(
      `chaos engine SIGKILL: failed ${s.failed}/${s.total}, longest wait ${s.longestMs} ms`,
    );
    expect(s.failed).toBeLessThanOrEqual(CONCURRENCY);
    expect(s.longestMs).toBeLessThan(2_000);
    await until(async () => (await bookedLoad(url)) === 0, "every booking to be freed", 3_000);
  }, 40_000);
});
