import { describe, expect, test } from "bun:test";
import { BUCKET_MS, BUCKETS, RecentStats } from "../../../src/observe/recent-stats.ts";

type Point = {
  time: string;
  requests: number;
  errors: number;
  hit_ratio: number | null;
  ideal_hit_ratio: number | null;
  ttft_p50_ms: number | null;
  ttft_p90_ms: number | null;
};

describe("the last minutes, in buckets", () => {
  test("one point per bucket, oldest first; ratios and TTFT quantiles per bucket", () => {
    let now = 1_000 * BUCKET_MS;
    const s = new RecentStats(() => now);
    for (let i = 1; i <= 10; i++)
      s.add({ status: 200, ttftMs: i * 10, blocks: { prompt: 10, cached: 5, best: 8 } });
    s.add({ status: 502 });
    now += BUCKET_MS;
    s.add({ status: 200, blocks: { prompt: 4, cached: 4, best: 4 } });
    const pts = s.series() as Point[];
    expect(pts).toHaveLength(BUCKETS);
    const [prev, last] = pts.slice(-2) as [Point, Point];
    expect(prev).toMatchObject({
      requests: 11,
      errors: 1,
      hit_ratio: 0.5,
      ideal_hit_ratio: 0.8,
      ttft_p50_ms: 50,
      ttft_p90_ms: 90,
    });
    expect(last).toMatchObject({ requests: 1, hit_ratio: 1, ttft_p50_ms: null });
    expect(Date.parse(last.time) - Date.parse(prev.time)).toBe(BUCKET_MS);
    expect(pts[0]!.requests).toBe(0);
  });

  test("a bucket older than the window is not shown again when its slot comes round", () => {
    let now = 0;
    const s = new RecentStats(() => now);
    s.add({ status: 200 });
    now += BUCKETS * BUCKET_MS; // the same slot, one window later
    expect((s.series() as Point[]).every((p) => p.requests === 0)).toBe(true);
  });
});
