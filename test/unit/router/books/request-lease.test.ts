import { describe, expect, test } from "bun:test";
import { RequestLease } from "../../../../src/router/books/request-lease.ts";
import { LoadTracker } from "../../../../src/router/books/load-tracker.ts";

function booked(isl: number) {
  const tracker = new LoadTracker({ blockSize: 4 });
  const w = { workerId: 1n, dpRank: 0 };
  tracker.updateWorkers([w]);
  tracker.addRequest({ requestId: "r", worker: w, seqHashes: null, isl, overlap: 0 }, 0);
  // Output blocks get random hashes: a counter keeps them distinct and the test repeatable.
  let seed = 0;
  const rng = () => (seed = (seed * 9301 + 49297) % 233280) / 233280;
  return { tracker, lease: new RequestLease(tracker, "r", isl, 4, () => 0, rng) };
}

describe("RequestLease", () => {
  test("prefill load goes at the first token; output blocks follow the generated tokens", () => {
    const { tracker, lease } = booked(6);
    expect(tracker.activeTokens("1:0", 0)).toBe(6);
    lease.outputTokens(1);
    expect(tracker.activeTokens("1:0", 0)).toBe(0);
    const before = tracker.activeBlocks("1:0");
    lease.outputTokens(2); // 6 + 2 = 8 tokens: still 2 blocks
    expect(tracker.activeBlocks("1:0")).toBe(before);
    lease.outputTokens(7); // 13 tokens: 4 blocks, two more than the prompt's ceil(6/4) = 2
    expect(tracker.activeBlocks("1:0")).toBe(before + 2);
  });

  test("free releases exactly once, whatever calls it", () => {
    const { tracker, lease } = booked(8);
    expect(lease.free()).toBe(true);
    expect(lease.free()).toBe(false);
    lease.outputTokens(100);
    lease.prefillDone();
    expect(tracker.hasRequest("r")).toBe(false);
    expect(tracker.activeBlocks("1:0")).toBe(0);
    expect(tracker.activeTokens("1:0", 0)).toBe(0);
  });

  test("firstToken: the hook hears the time once, then the prefill is done; nothing after the prefill was marked another way", () => {
    const tracker = new LoadTracker({ blockSize: 4 });
    const w = { workerId: 1n, dpRank: 0 };
    tracker.updateWorkers([w]);
    let clock = 0;
    const heard: number[] = [];
    const book = (id: string) =>
      RequestLease.book(
        tracker,
        { requestId: id, worker: w, seqHashes: null, isl: 8, overlap: 0 },
        0,
        4,
        () => clock,
        () => 0.5,
        (at) => heard.push(at),
      );
    const a = book("a");
    clock = 7;
    a.firstToken();
    a.firstToken();
    expect(heard).toEqual([7]);
    expect(tracker.activeTokens("1:0")).toBe(0);
    const b = book("b");
    b.outputTokens(1); // prefill marked done by the token count: a first token after it is no sample
    b.firstToken();
    const c = book("c");
    c.free();
    c.firstToken();
    expect(heard).toEqual([7]);
  });
});
