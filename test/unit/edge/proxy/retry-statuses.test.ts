/**
 * Engine answers worth another worker's try before anything reached the client: a 500 and a
 * 429 go to the next worker (the 500 counts towards ejection, neither fences), 502/503/504
 * fence as before, the set is configurable, and the retry budget bounds how many requests a
 * fleet that fails everywhere gets.
 */
import { describe, expect, test } from "bun:test";
import { silentLogger } from "../../../../src/core/logger.ts";
import { forward, type ForwardDeps } from "../../../../src/edge/proxy/forward.ts";
import { RetryBudget } from "../../../../src/edge/proxy/retry-budget.ts";
import { DEFAULT_RETRY_STATUSES } from "../../../../src/config/defaults.ts";
import type { RetryPolicy } from "../../../../src/edge/proxy/retry-policy.ts";
import type { UpstreamCall } from "../../../../src/edge/proxy/upstream.ts";
import { tokenizeText } from "../../../../src/tokens/index.ts";
import { harness } from "../harness.ts";
import { okBody } from "./bodies.ts";

const enc = new TextEncoder();
const W1 = { id: 11n, url: "http://w1:1" };
const W2 = { id: 22n, url: "http://w2:2" };
const W3 = { id: 33n, url: "http://w3:3" };

/** The n-th engine call (from 0) answers `statusOf(n)` with a small JSON body. */
function setup(statusOf: (n: number) => number, retry?: RetryPolicy, workers = [W1, W2]) {
  const h = harness({
    workers,
    fetch: () => Promise.reject(new Error("fetch must not be used")),
    blockSize: 4,
  });
  const calls: string[] = [];
  const fenced: bigint[] = [];
  const reports: [bigint, string | undefined][] = [];
  const upstream: UpstreamCall = async (base) => {
    const status = statusOf(calls.length);
    calls.push(base);
    return {
      status,
      statusText: "",
      headers: ["content-type", "application/json"],
      body: okBody(`{"status":${status}}`),
    };
  };
  const deps: ForwardDeps = {
    routing: h.deps.router.routing,
    registry: h.registry,
    outcomes: {
      fence: (id) => {
        fenced.push(id);
      },
      report: (id, f) => reports.push([id, f]),
    },
    observe: { metrics: h.metrics, log: silentLogger },
    upstream: { call: upstream, fetch: h.deps.upstream.fetch, maxRetries: 2, retry },
  };
  const call = (i = 0) =>
    forward(
      {
        request: new Request("http://router/v1/completions", { method: "POST" }),
        path: "/v1/completions",
        body: enc.encode(JSON.stringify({ prompt: `abcdefgh ${i}` })),
        tokens: tokenizeText(`abcdefgh ${i}`),
        stream: false,
      },
      deps,
    );
  return { h, call, calls, fenced, reports };
}

const idOf = (url: string) => [W1, W2, W3].find((w) => w.url === url)!.id;
const defaults = (budget?: RetryBudget): RetryPolicy => ({
  statuses: new Set(DEFAULT_RETRY_STATUSES),
  budget,
});

describe("engine answers retried on another worker", () => {
  for (const status of [500, 429]) {
    test(`${status}: the next worker answers; the first is not fenced${status === 500 ? ", its 500 counts towards ejection" : " nor blamed"}`, async () => {
      const { h, call, calls, fenced, reports } = setup(
        (n) => (n === 0 ? status : 200),
        defaults(),
        [W1, W2],
      );
      const r = await call();
      expect(calls.length).toBe(2);
      const [first, second] = calls.map(idOf) as [bigint, bigint];
      expect(second).not.toBe(first);
      expect(r.status).toBe(200);
      expect(await r.text()).toBe('{"status":200}');
      expect(fenced).toEqual([]);
      expect(reports).toEqual(
        status === 500
          ? [
              [first, "HTTP 500"],
              [second, undefined],
            ]
          : [[second, undefined]],
      );
      expect(h.registry.get(first)!.healthy).toBe(true);
    });
  }

  test("503 still fences the worker that said it", async () => {
    const { call, calls, fenced } = setup((n) => (n === 0 ? 503 : 200), defaults());
    expect((await call()).status).toBe(200);
    expect(fenced).toEqual([idOf(calls[0]!)]);
  });

  test("a status left out of --retry-on goes to the client as before", async () => {
    const { call, calls } = setup((n) => (n === 0 ? 500 : 200), {
      statuses: new Set([502, 503, 504]),
    });
    const r = await call();
    expect(calls.length).toBe(1);
    expect(r.status).toBe(500);
  });

  test("the last worker's 500 is the answer (OpenAI shape, worker named)", async () => {
    const { call, calls } = setup(() => 500, defaults(), [W1, W2, W3]);
    const r = await call();
    expect(calls.length).toBe(3);
    expect(r.status).toBe(500);
    expect(((await r.json()) as { error: { message: string } }).error.message).toContain(
      `worker ${idOf(calls[2]!)}`,
    );
  });

  for (const status of [500, 429]) {
    test(`no other worker to try: the ${status} goes to the client as it is, not 502`, async () => {
      const only = setup(() => status, defaults(), [W1]);
      const r = await only.call();
      expect(only.calls.length).toBe(1);
      expect(r.status).toBe(status);
      // Two workers, both answering it: the second's answer, not upstream_failed.
      const both = setup(() => status, defaults(), [W1, W2]);
      const r2 = await both.call();
      expect(both.calls.length).toBe(2);
      expect(r2.status).toBe(status);
      expect(both.fenced).toEqual([]);
    });
  }

  test("a fleet that fails everywhere gets at most the budget's extra requests, not 3x", async () => {
    const budget = new RetryBudget({ percent: 20, minPerSecond: 0, now: () => 0 });
    const { h, call, calls } = setup(() => 500, defaults(budget), [W1, W2, W3]);
    const n = 100;
    for (let i = 0; i < n; i++) expect((await call(i)).status).toBe(500);
    // Without the budget: 3 tries each (300 engine calls).
    expect(calls.length).toBeLessThanOrEqual(n * 1.2);
    expect(calls.length).toBeGreaterThanOrEqual(n * 1.2 - 1);
    expect(h.metrics.retryBudgetExhausted.get([])).toBeGreaterThan(0);
  });
});
