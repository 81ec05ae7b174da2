import { describe, expect, test } from "bun:test";
import { DecisionLog } from "../../../src/observe/decision-log.ts";
import { BUCKETS, RecentStats } from "../../../src/observe/recent-stats.ts";
import {
  statusRoutes,
  workerState,
  type StatusSource,
} from "../../../src/observe/status-routes.ts";
import { adminRefusal, ADMIN_CHALLENGE } from "../../../src/protocol/admin-access.ts";

function source(over: Partial<StatusSource> = {}): StatusSource {
  const now = 1_000_000;
  return {
    decisions: new DecisionLog({
      policy: "kv",
      costs: [
        { term: { type: "dynamo-kv" }, weight: 1 },
        { term: { type: "overlap-credit" }, weight: 16 },
      ],
      blockSize: 16,
      overlapWeight: 1,
    }),
    recent: new RecentStats(() => 1_700_000_000_000),
    build: { version: "9.9.9", commit: "c0ffee", runtime: "Bun/1.4.5" },
    policy: "kv",
    blockSize: 16,
    workers: () => [
      { id: 1n, healthy: true },
      { id: 2n, healthy: false, reason: "fenced: connection refused" },
      { id: 3n, healthy: false, reason: "ejected for 30 s: 5 failures in a row" },
    ],
    ejectedUntil: (id) => (id === 3n ? now + 29_500 : undefined),
    now: () => now,
    admissionQueue: () => 4,
    sessions: () => 12,
    replica: () => ({
      router_id: "00000000000000aa",
      host: "router-0",
      started_at: "2026-12-07T20:00:00.000Z",
      peers: [{ router_id: "00000000000000bb", heard_s_ago: 0.4, requests: 3, complete: true }],
    }),
    ...over,
  };
}

describe("the status page's endpoints", () => {
  test("a worker is ejected while its ejection lasts, else healthy or not as its checks say", () => {
    expect(workerState(true, undefined, 0)).toBe("healthy");
    expect(workerState(false, undefined, 0)).toBe("unhealthy");
    expect(workerState(false, 100, 50)).toBe("ejected");
    expect(workerState(false, 100, 150)).toBe("unhealthy"); // over, not yet readmitted by a check
  });

  test("GET /debug/status: the router, each worker's state and why, the queue, sessions and the last minutes", async () => {
    const res = await statusRoutes(source()).request("/debug/status");
    const s = (await res.json()) as Record<string, unknown>;
    expect(s.router).toEqual({
      version: "9.9.9",
      commit: "c0ffee",
      runtime: "Bun/1.4.5",
      policy: "kv",
      block_size: 16,
    });
    expect(s.workers).toEqual([
      { id: "1", state: "healthy", reason: null, ejected_for_s: null },
      { id: "2", state: "unhealthy", reason: "fenced: connection refused", ejected_for_s: null },
      {
        id: "3",
        state: "ejected",
        reason: "ejected for 30 s: 5 failures in a row",
        ejected_for_s: 30,
      },
    ]);
    expect(s.admission_queue).toBe(4);
    expect(s.sessions).toBe(12);
    expect((s.recent as unknown[]).length).toBe(BUCKETS);
    const shared = (await (
      await statusRoutes(source({ sessions: () => undefined })).request("/debug/status")
    ).json()) as { sessions: unknown };
    expect(shared.sessions).toBeNull();
    expect(s.replica).toEqual({
      router_id: "00000000000000aa",
      host: "router-0",
      started_at: "2026-12-07T20:00:00.000Z",
      peers: [{ router_id: "00000000000000bb", heard_s_ago: 0.4, requests: 3, complete: true }],
    });
    expect(s.alerts).toBeNull(); // no --alertmanager-url
  });

  test("GET /debug/status: each worker's requests over the last five minutes, for its share", async () => {
    let t = 1_700_000_000_000;
    const recent = new RecentStats(() => t);
    for (const w of ["1", "1", "2"]) recent.add({ status: 200, worker: w });
    recent.add({ status: 503 }); // refused before routing: no worker
    t += 4 * 60_000;
    recent.add({ status: 200, worker: "2" });
    const s = (await (await statusRoutes(source({ recent })).request("/debug/status")).json()) as {
      worker_requests: unknown;
      share_seconds: number;
    };
    expect(s.share_seconds).toBe(300);
    expect(s.worker_requests).toEqual({ "1": 2, "2": 2 });
    t += 2 * 60_000; // the first three are now older than five minutes
    const later = (await (
      await statusRoutes(source({ recent })).request("/debug/status")
    ).json()) as { worker_requests: unknown };
    expect(later.worker_requests).toEqual({ "2": 1 });
  });

  test("GET /ui: one HTML document that reads the JSON endpoints; GET /debug/decisions: the formula", async () => {
    const res = await statusRoutes(source()).request("/ui");
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const html = await res.text();
    expect(html.startsWith("<!doctype html>")).toBe(true);
    for (const path of ["/v1/workers", "/debug/status", "/debug/decisions"])
      expect(html).toContain(`get("${path}")`);
    expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+stylesheet/); // nothing to fetch besides the JSON
    const d = (await (await statusRoutes(source()).request("/debug/decisions")).json()) as {
      formula: string;
      decisions: unknown[];
    };
    expect(d).toEqual({ formula: "1×dynamo-kv + 16×overlap-credit", decisions: [] });
  });
});

describe("admin access for a browser", () => {
  const basic = (user: string, pass: string) => `Basic ${btoa(`${user}:${pass}`)}`;
  test("HTTP Basic with the token as password passes, like the bearer token; anything else is 401", () => {
    expect(adminRefusal("s3cret-token", basic("admin", "s3cret-token"), undefined)).toBeNull();
    expect(adminRefusal("s3cret-token", basic("", "s3cret-token"), undefined)).toBeNull();
    expect(adminRefusal("s3cret-token", "Bearer s3cret-token", undefined)).toBeNull();
    expect(adminRefusal("s3cret-token", basic("admin", "wrong"), undefined)?.status).toBe(401);
    expect(adminRefusal("s3cret-token", "Basic not-base64!!", undefined)?.status).toBe(401);
    expect(adminRefusal("s3cret-token", `Basic ${btoa("no-colon")}`, undefined)?.status).toBe(401);
    expect(adminRefusal("s3cret-token", "", undefined)?.status).toBe(401);
  });

  test("without a token Basic changes nothing: loopback only", () => {
    expect(adminRefusal(undefined, basic("a", "b"), "10.0.0.9")?.status).toBe(403);
    expect(adminRefusal(undefined, "", "127.0.0.1")).toBeNull();
  });

  test("the challenge names Basic, so a browser asks its user", () => {
    expect(ADMIN_CHALLENGE).toStartWith("Basic ");
  });
});
