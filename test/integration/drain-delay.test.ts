/**
 * `--drain-delay` as a load balancer sees it, real router process: after SIGTERM /health
 * answers 503 at once, while for the whole delay every request (each on a new connection)
 * is still answered 200 and no connection is refused; only after the delay does the drain
 * begin (new requests 503 `draining`), and the router exits 0.
 */
import { afterAll, expect, test } from "bun:test";
import { startMain, stopAll, until, type Proc } from "../support/processes.ts";

const DELAY_S = 3;
/** Requests sent this close to the delay's end may reach the router after it: not judged. */
const MARGIN_MS = 1_000;

let router: Proc | undefined;
afterAll(() => stopAll([router]));

interface Sent {
  readonly atMs: number;
  readonly outcome: number | string;
}

async function completion(url: string): Promise<number | string> {
  try {
    const r = await fetch(`${url}/v1/completions`, {
      method: "POST",
      // A new connection each time, as a load balancer's new clients would open.
      headers: { "content-type": "application/json", connection: "close" },
      body: JSON.stringify({
        model: "switchyard-sim",
        prompt: "drain delay: still served?",
        max_tokens: 2,
      }),
    });
    await r.arrayBuffer();
    return r.status;
  } catch (e) {
    return `error: ${(e as Error).message}`;
  }
}

test("during --drain-delay /health is 503 while requests keep succeeding; then the drain, then exit 0", async () => {
  router = await startMain([
    "serve",
    "--port",
    "0",
    "--engines",
    "1",
    "--engine-speedup",
    "10",
    "--drain-delay",
    String(DELAY_S),
    "--drain-timeout",
    "5",
    "--log-level",
    "warn",
  ]);
  const url = String(router.info.url);
  await until(
    async () => (await fetch(`${url}/health`)).status === 200,
    "the router to be ready (its engine healthy)",
  );
  expect(await completion(url)).toBe(200);

  const t0 = performance.now();
  router.proc.kill("SIGTERM");
  await until(
    async () => (await fetch(`${url}/health`)).status === 503,
    "/health to answer 503 after SIGTERM",
    2_000,
    5,
  );
  const unreadyAt = performance.now() - t0;

  // The load balancer's traffic: one request after another until the delay has surely ended.
  const sent: Sent[] = [];
  const health: Sent[] = [];
  while (performance.now() - t0 < DELAY_S * 1000 + 1_500) {
    const atMs = performance.now() - t0;
    sent.push({ atMs, outcome: await completion(url) });
    const h = await fetch(`${url}/health`).then(
      (r) => r.status,
      (e: Error) => `error: ${e.message}`,
    );
    health.push({ atMs, outcome: h });
  }

  const inDelay = sent.filter((s) => s.atMs < DELAY_S * 1000 - MARGIN_MS);
  expect(unreadyAt).toBeLessThan(DELAY_S * 1000 - MARGIN_MS);
  expect(inDelay.length).toBeGreaterThan(5);
  expect(inDelay.filter((s) => s.outcome !== 200)).toEqual([]);
  expect(health.filter((s) => s.atMs < DELAY_S * 1000 - MARGIN_MS && s.outcome !== 503)).toEqual(
    [],
  );
  // After the delay the drain refuses new work (503 draining, or the listener is gone).
  expect(
    sent.filter((s) => s.atMs > DELAY_S * 1000 + MARGIN_MS).every((s) => s.outcome !== 200),
  ).toBe(true);
  expect(
    await Promise.race([router.proc.exited, Bun.sleep(10_000).then(() => "still running")]),
  ).toBe(0);
}, 30_000);
