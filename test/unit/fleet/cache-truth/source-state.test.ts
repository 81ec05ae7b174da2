import { describe, expect, test } from "bun:test";
import {
  SourceTruth,
  type CheckedAnswer,
  type EventFacts,
} from "../../../../src/fleet/cache-truth/source-state.ts";

const agreeHit: CheckedAnswer = { verdict: "agree", expected: 64, cached: 64 };
const agreeMiss: CheckedAnswer = { verdict: "agree", expected: 0, cached: 0 };
const missed: CheckedAnswer = { verdict: "missed_hits", expected: 64, cached: 0 };
const unexpected: CheckedAnswer = { verdict: "unexpected_hits", expected: 0, cached: 64 };
const talking = (now: number): EventFacts => ({ seen: 50, lastAt: now - 100 });

describe("SourceTruth", () => {
  test("a healthy source with the odd race stays exact", () => {
    const s = new SourceTruth(0);
    for (let i = 0; i < 200; i++) {
      const now = i * 100;
      // One answer in ten disagrees, the way an eviction or an event in flight can.
      const t = s.observe(
        i % 10 === 0 ? (i % 20 === 0 ? missed : unexpected) : i % 2 ? agreeHit : agreeMiss,
        talking(now),
        now,
      );
      expect(t).toBeUndefined();
    }
    expect(s.state).toBe("exact");
  });

  test("the window's counts follow answers out of it: a predicted hit leaving can tip the share", () => {
    const s = new SourceTruth(0);
    const seq = [
      ...Array(4).fill(agreeHit),
      ...Array(3).fill(missed), // 3 of 7 predicted: under half
      ...Array(13).fill(agreeMiss), // the window is full (20)
    ];
    seq.forEach((a, i) => expect(s.observe(a, talking(i), i)).toBeUndefined());
    // One more answer with no prediction pushes the oldest predicted hit out: 3 of 6 now.
    expect(s.observe(agreeMiss, talking(20), 20)).toMatchObject({
      to: "degraded",
      cause: "stale_index",
      evidence: "3 of 6 answers with a predicted hit served less than the index holds",
    });
    expect(s.agreement).toBeCloseTo(17 / 20);
  });

  test("predicted hits not served -> degraded (stale_index)", () => {
    const s = new SourceTruth(0);
    s.observe(missed, talking(1), 1);
    s.observe(missed, talking(2), 2);
    const t = s.observe(missed, talking(3), 3);
    expect(t).toMatchObject({ from: "exact", to: "degraded", cause: "stale_index" });
  });

  test("hits never heard of, no live event -> blind (no_events); events come but nothing matches -> block_hashes; some match -> events_missing", () => {
    const quiet = new SourceTruth(0);
    for (let i = 0; i < 3; i++) quiet.observe(unexpected, { seen: 0, lastAt: undefined }, 40_000);
    expect(quiet.observe(unexpected, { seen: 0, lastAt: undefined }, 40_000)).toMatchObject({
      to: "blind",
      cause: "no_events",
    });

    const hashes = new SourceTruth(0);
    for (let i = 0; i < 3; i++) hashes.observe(unexpected, talking(10), 10);
    expect(hashes.observe(unexpected, talking(10), 10)).toMatchObject({
      to: "blind",
      cause: "block_hashes",
    });

    // No prediction served yet, but stored events came whose parents were never heard: lost events.
    const orphaned = new SourceTruth(0);
    for (let i = 0; i < 3; i++) orphaned.observe(unexpected, { ...talking(10), orphans: 1 }, 10);
    expect(orphaned.observe(unexpected, { ...talking(10), orphans: 1 }, 10)).toMatchObject({
      to: "blind",
      cause: "events_missing",
    });

    const dropped = new SourceTruth(0);
    dropped.observe(agreeHit, talking(10), 10);
    for (let i = 0; i < 3; i++) dropped.observe(unexpected, talking(10), 10);
    expect(dropped.observe(unexpected, talking(10), 10)).toMatchObject({
      to: "blind",
      cause: "events_missing",
    });
  });

  test("blind (block_hashes) named before any prediction was served becomes events_missing once one is, and never back", () => {
    const s = new SourceTruth(0);
    for (let i = 0; i < 3; i++) s.observe(unexpected, talking(10), 10);
    expect(s.observe(unexpected, talking(10), 10)).toMatchObject({ cause: "block_hashes" });
    // A predicted hit served: the hashes are the router's; events are what is missing.
    expect(s.observe(agreeHit, talking(20), 20)).toMatchObject({
      from: "blind",
      to: "blind",
      cause: "events_missing",
    });
    // A whole window of unexplained hits later, the cause stays.
    for (let i = 0; i < 25; i++)
      expect(s.observe(unexpected, talking(30 + i), 30 + i)).toBeUndefined();
    expect(s.state).toBe("blind");
    expect(s.cause).toBe("events_missing");
  });

  test("another template: degraded at the third answer of another length", () => {
    const s = new SourceTruth(0);
    const t = [1, 2, 3].map((i) =>
      s.observe({ verdict: "tokens_differ", expected: 0, cached: 0 }, talking(i), i),
    );
    expect(t.slice(0, 2)).toEqual([undefined, undefined]);
    expect(t[2]).toMatchObject({ to: "degraded", cause: "template_or_tokenizer" });
  });

  test("hysteresis: no way back before a clean run with hits and the dwell time; no flapping near the threshold", () => {
    const s = new SourceTruth(0);
    for (let i = 0; i < 3; i++) s.observe(missed, talking(i), i);
    expect(s.state).toBe("degraded");
    const transitions: string[] = [];
    // Alternating good and bad answers, for a long time: a source at the threshold stays where it is.
    let now = 10;
    for (let i = 0; i < 100; i++) {
      now += 1000;
      const t = s.observe(i % 2 ? agreeHit : missed, talking(now), now);
      if (t) transitions.push(t.to);
    }
    expect(transitions).toEqual([]);
    // Ten agreeing answers in a row, but too soon after entering: still degraded.
    const fresh = new SourceTruth(0);
    for (let i = 0; i < 3; i++) fresh.observe(missed, talking(i), i);
    for (let i = 0; i < 10; i++)
      expect(fresh.observe(agreeHit, talking(100 + i), 100 + i)).toBeUndefined();
    expect(fresh.state).toBe("degraded");
    // Agreement without hits proves nothing about the index: still degraded after the dwell time.
    const late = new SourceTruth(0);
    for (let i = 0; i < 3; i++) late.observe(missed, talking(i), i);
    for (let i = 0; i < 20; i++) late.observe(agreeMiss, talking(40_000 + i), 40_000 + i);
    expect(late.state).toBe("degraded");
    // A clean run with hits after the dwell time: exact, once.
    const back = [];
    for (let i = 0; i < 10; i++) back.push(late.observe(agreeHit, talking(50_000 + i), 50_000 + i));
    expect(back.filter((t) => t !== undefined)).toEqual([
      expect.objectContaining({ from: "degraded", to: "exact" }),
    ]);
    // And the old evidence does not send it straight back.
    expect(late.observe(missed, talking(60_000), 60_000)).toBeUndefined();
    expect(late.state).toBe("exact");
  });

  test("a canary mismatch degrades at once", () => {
    const s = new SourceTruth(0);
    expect(s.canaryFailed("block_size", "cached 224 tokens, expected 240", 5)).toMatchObject({
      from: "exact",
      to: "degraded",
      cause: "block_size",
    });
    expect(s.canaryFailed("block_size", "again", 6)).toBeUndefined();
  });
});
