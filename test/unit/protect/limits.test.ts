/**
 * Tenant limits in memory: token buckets per minute (burst up to a minute's worth, then the
 * rate), all dimensions checked and taken together, output booked then corrected, concurrency
 * slots, a prompt larger than the whole limit refused for good; the limiter's fallbacks when
 * the shared counters do not answer; OpenAI's headers and 429.
 */
import { describe, expect, test } from "bun:test";
import { RouterError } from "../../../src/core/errors.ts";
import { LocalLimitCounters } from "../../../src/protect/limits/local-counters.ts";
import {
  TenantLimiter,
  type LimitBackend,
  type SharedLimitCounters,
} from "../../../src/protect/limits/limiter.ts";
import {
  formatReset,
  rateLimitedResponse,
  rateLimitHeaders,
} from "../../../src/protect/limits/ratelimit-headers.ts";
import { shareOf } from "../../../src/protect/limits/verdict.ts";
import type { Tenant } from "../../../src/protect/tenant.ts";

const ask = (promptTokens = 10, outputTokens = 5) => ({ promptTokens, outputTokens });

describe("LocalLimitCounters", () => {
  test("requests per minute: a minute's worth at once, then one per limit-th of a minute", () => {
    const c = new LocalLimitCounters();
    const lim = { requestsPerMinute: 6 };
    for (let i = 0; i < 6; i++) expect(c.acquire("t", lim, ask(), `r${i}`, 0).allowed).toBe(true);
    const refused = c.acquire("t", lim, ask(), "r6", 0);
    expect(refused).toMatchObject({ allowed: false, refused: "requests", retryAfterMs: 10_000 });
    expect(refused.states.requests).toEqual({ limit: 6, remaining: 0, resetMs: 60_000 });
    expect(c.acquire("t", lim, ask(), "r7", 9_999).allowed).toBe(false);
    expect(c.acquire("t", lim, ask(), "r8", 10_000).allowed).toBe(true);
    // Tenants do not share.
    expect(c.acquire("other", lim, ask(), "o", 10_000).allowed).toBe(true);
  });

  test("every limited dimension must have room, and a refused request takes from none", () => {
    const c = new LocalLimitCounters();
    const lim = { requestsPerMinute: 100, promptTokensPerMinute: 1000 };
    expect(c.acquire("t", lim, ask(800), "a", 0).allowed).toBe(true);
    const r = c.acquire("t", lim, ask(300), "b", 0);
    expect(r).toMatchObject({ allowed: false, refused: "prompt_tokens" });
    expect(r.states.requests!.remaining).toBe(99);
    expect(r.retryAfterMs).toBe(6_000); // 100 more tokens at 1000 per minute
  });

  test("a prompt larger than the whole per-minute limit can never pass: refused as too large", () => {
    const c = new LocalLimitCounters();
    const r = c.acquire("t", { promptTokensPerMinute: 1000 }, ask(1001), "a", 0);
    expect(r).toMatchObject({ allowed: false, refused: "prompt_tokens", tooLarge: true });
  });

  test("output: more than a minute's worth is refused as too large; the whole ask is booked, corrected when the answer ends", () => {
    const c = new LocalLimitCounters();
    const lim = { outputTokensPerMinute: 100 };
    expect(c.acquire("t", lim, ask(0, 500), "huge", 0)).toMatchObject({
      allowed: false,
      refused: "output_tokens",
      tooLarge: true,
    });
    expect(c.acquire("t", lim, ask(0, 100), "big", 0).allowed).toBe(true); // the whole bucket
    expect(c.acquire("t", lim, ask(0, 1), "next", 0).allowed).toBe(false);
    c.release("t", lim, "big", 20, 0); // only 20 generated: 80 back
    expect(c.acquire("t", lim, ask(0, 80), "fits", 0).allowed).toBe(true);
    // An answer longer than booked puts the bucket in debt; later requests wait for it.
    expect(c.acquire("t", lim, ask(0, 10), "short", 60_000).allowed).toBe(true);
    c.release("t", lim, "short", 200, 60_000);
    expect(c.peek("t", lim, 60_000).output_tokens!.remaining).toBe(-100);
    expect(c.acquire("t", lim, ask(0, 1), "after", 60_000 + 59_000).allowed).toBe(false);
    expect(c.acquire("t", lim, ask(0, 1), "later", 60_000 + 61_000).allowed).toBe(true);
  });

  test("concurrency: slots taken at admission, given back at release (once)", () => {
    const c = new LocalLimitCounters();
    const lim = { concurrentRequests: 2 };
    expect(c.acquire("t", lim, ask(), "a", 0).allowed).toBe(true);
    expect(c.acquire("t", lim, ask(), "b", 0).allowed).toBe(true);
    expect(c.acquire("t", lim, ask(), "c", 0)).toMatchObject({
      allowed: false,
      refused: "concurrent",
      retryAfterMs: 1000,
    });
    c.release("t", lim, "a", 0, 1);
    c.release("t", lim, "a", 0, 1);
    expect(c.acquire("t", lim, ask(), "d", 1).states.concurrent).toEqual({
      limit: 2,
      remaining: 0,
      resetMs: 0,
    });
    expect(c.acquire("t", lim, ask(), "e", 1).allowed).toBe(false);
  });

  test("shareOf divides every limit among N routers, at least 1 each", () => {
    expect(
      shareOf({ requestsPerMinute: 100, concurrentRequests: 2, promptTokensPerMinute: 1000 }, 3),
    ).toEqual({
      requestsPerMinute: 33,
      promptTokensPerMinute: 333,
      outputTokensPerMinute: undefined,
      concurrentRequests: 1,
    });
    const l = { requestsPerMinute: 5 };
    expect(shareOf(l, 1)).toBe(l);
  });
});

const tenant = (limits: Tenant["limits"]): Tenant => ({
  name: "team",
  limits,
  weight: 1,
  defaultOutputTokens: 16,
});

function hungShared(): SharedLimitCounters & { calls: number } {
  const s = {
    calls: 0,
    acquire: async () => {
      s.calls++;
      throw new Error("redis EVALSHA timed out after 50 ms");
    },
    release: async () => {},
  };
  return s;
}

describe("TenantLimiter", () => {
  test("no limits: admitted, nothing checked anywhere", async () => {
    const shared = hungShared();
    const l = new TenantLimiter({ shared, fallback: "closed", routers: () => 3, now: () => 0 });
    expect((await l.acquire(tenant({}), ask(), "a")).allowed).toBe(true);
    expect(shared.calls).toBe(0);
  });

  test("Redis down, fallback local: this router keeps limit / N", async () => {
    const backends: LimitBackend[] = [];
    const l = new TenantLimiter({
      shared: hungShared(),
      fallback: "local",
      routers: () => 3,
      now: () => 0,
      onCheck: (b) => backends.push(b),
    });
    const t = tenant({ requestsPerMinute: 30 });
    let ok = 0;
    for (let i = 0; i < 30; i++) if ((await l.acquire(t, ask(), `r${i}`)).allowed) ok++;
    expect(ok).toBe(10);
    expect(new Set(backends)).toEqual(new Set(["fallback_local"]));
  });

  test("Redis down, fallback open: no limit; closed: 503 unavailable with Retry-After", async () => {
    const t = tenant({ requestsPerMinute: 1 });
    const open = new TenantLimiter({
      shared: hungShared(),
      fallback: "open",
      routers: () => 1,
      now: () => 0,
    });
    for (let i = 0; i < 5; i++) expect((await open.acquire(t, ask(), `r${i}`)).allowed).toBe(true);
    const closed = new TenantLimiter({
      shared: hungShared(),
      fallback: "closed",
      routers: () => 1,
      now: () => 0,
    });
    const e = await closed.acquire(t, ask(), "x").catch((x: unknown) => x);
    expect(e).toBeInstanceOf(RouterError);
    expect((e as RouterError).code).toBe("unavailable");
    expect((e as RouterError).retryAfterSeconds).toBe(1);
  });

  test("a ticket taken from Redis goes back to Redis; one taken locally goes back locally", async () => {
    const released: string[] = [];
    let up = true;
    const shared: SharedLimitCounters = {
      acquire: async (_t, _l, _a, id) => {
        if (!up) throw new Error("down");
        return { allowed: true, retryAfterMs: 0, states: {}, bookedOutput: 5 };
      },
      release: async (_t, _l, id) => void released.push(id),
    };
    const l = new TenantLimiter({ shared, fallback: "local", routers: () => 1, now: () => 0 });
    const t = tenant({ concurrentRequests: 1 });
    const a = await l.acquire(t, ask(), "a");
    if (!a.allowed) throw new Error("refused");
    expect(a.ticket.backend).toBe("redis");
    l.release(a.ticket, 5);
    await Promise.resolve();
    expect(released).toEqual(["a"]);
    up = false;
    const b = await l.acquire(t, ask(), "b");
    if (!b.allowed) throw new Error("refused");
    expect(b.ticket.backend).toBe("local");
    expect((await l.acquire(t, ask(), "c")).allowed).toBe(false);
    l.release(b.ticket, 0);
    expect((await l.acquire(t, ask(), "d")).allowed).toBe(true);
    expect(released).toEqual(["a"]);
  });
});

describe("OpenAI's rate-limit headers and 429", () => {
  test("durations as OpenAI writes them", () => {
    expect(formatReset(0)).toBe("0s");
    expect(formatReset(250)).toBe("250ms");
    expect(formatReset(1000)).toBe("1s");
    expect(formatReset(1500)).toBe("1.5s");
    expect(formatReset(360_000)).toBe("6m0s");
    expect(formatReset(61_250)).toBe("1m1.25s");
  });

  test("-tokens shows the token limit with the smaller share left; each is also named", () => {
    const h = Object.fromEntries(
      rateLimitHeaders({
        requests: { limit: 60, remaining: 59, resetMs: 1000 },
        prompt_tokens: { limit: 1000, remaining: 900, resetMs: 6000 },
        output_tokens: { limit: 100, remaining: 10, resetMs: 54_000 },
        concurrent: { limit: 4, remaining: 3, resetMs: 0 },
      }),
    );
    expect(h).toMatchObject({
      "x-ratelimit-limit-requests": "60",
      "x-ratelimit-remaining-requests": "59",
      "x-ratelimit-reset-requests": "1s",
      "x-ratelimit-limit-tokens": "100",
      "x-ratelimit-remaining-tokens": "10",
      "x-ratelimit-reset-tokens": "54s",
      "x-ratelimit-limit-prompt-tokens": "1000",
      "x-ratelimit-remaining-output-tokens": "10",
      "x-ratelimit-limit-concurrent": "4",
      "x-ratelimit-remaining-concurrent": "3",
    });
    expect(rateLimitHeaders({})).toEqual([]);
  });

  test("the 429 is OpenAI's rate_limit_exceeded with Retry-After; too large has none", async () => {
    const r = rateLimitedResponse("team", {
      allowed: false,
      refused: "output_tokens",
      retryAfterMs: 2500,
      states: { output_tokens: { limit: 100, remaining: 0, resetMs: 60_000 } },
    });
    expect(r.status).toBe(429);
    expect(r.headers.get("retry-after")).toBe("3");
    expect(r.headers.get("x-ratelimit-remaining-tokens")).toBe("0");
    const body = (await r.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({ code: "rate_limit_exceeded", type: "tokens" });
    expect(String(body.error.message)).toContain("output tokens per minute: limit 100");
    const big = rateLimitedResponse("team", {
      allowed: false,
      refused: "prompt_tokens",
      tooLarge: true,
      retryAfterMs: 0,
      states: { prompt_tokens: { limit: 10, remaining: 10, resetMs: 0 } },
    });
    expect(big.headers.get("retry-after")).toBeNull();
    expect(((await big.json()) as { error: { message: string } }).error.message).toContain(
      "can never pass",
    );
  });
});

describe("TenantLimiter fallback seeding", () => {
  test("the local share starts from the share of what Redis said was left, and refills from then", async () => {
    let up = true;
    let now = 0;
    const shared: SharedLimitCounters = {
      acquire: async () => {
        if (!up) throw new Error("down");
        return {
          allowed: true,
          retryAfterMs: 0,
          states: { requests: { limit: 60, remaining: 6, resetMs: 54_000 } },
          bookedOutput: 0,
        };
      },
      release: async () => {},
    };
    const l = new TenantLimiter({ shared, fallback: "local", routers: () => 3, now: () => now });
    const t = tenant({ requestsPerMinute: 60 });
    expect((await l.acquire(t, ask(), "a")).allowed).toBe(true);
    up = false;
    // 6 left fleet-wide, 3 routers: this one may take 2 (not its full share of 20).
    const got = [];
    for (let i = 0; i < 5; i++) got.push((await l.acquire(t, ask(), `b${i}`)).allowed);
    expect(got).toEqual([true, true, false, false, false]);
    now += 3_000; // its share refills at 20 per minute: one more after 3 s
    expect((await l.acquire(t, ask(), "c")).allowed).toBe(true);
    expect((await l.acquire(t, ask(), "d")).allowed).toBe(false);
  });
});
