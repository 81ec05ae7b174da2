/**
 * ActiveSequences (spec §4.5). The first cases port Dynamo's `sequences/single.rs` tests
 * (shared blocks, fractional output decay, prefill completion, idempotent cleanup, expiry).
 */
import { describe, expect, test } from "bun:test";
import {
  ActiveSequences,
  CHECK_EXPIRY_EVERY_MS,
  EXPIRY_MS,
} from "../../../../src/router/books/active-sequences.ts";
import { seededRng, seq } from "../choose/helpers.ts";

const rng = seededRng(7);

function add(
  s: ActiveSequences,
  id: string,
  hashes: number[],
  tokens: number,
  now = 0,
  extra = {},
) {
  return s.add(
    { requestId: id, seqHashes: seq(...hashes), isl: tokens, overlap: 0, ...extra },
    now,
  );
}

describe("ActiveSequences: ported from Dynamo single.rs", () => {
  test("requests sharing blocks count them once; prefill tokens add up", () => {
    const s = new ActiveSequences(4);
    add(s, "request_1", [1, 2, 3], 12);
    expect(s.activeBlocks()).toBe(3);
    expect(s.activeTokens()).toBe(12);
    add(s, "request_2", [4], 4);
    expect(s.activeBlocks()).toBe(4);
    expect(s.activeTokens()).toBe(16);
    add(s, "request_3", [1, 2, 3, 4], 16, 0, { overlap: 4 }); // all cached: no prefill load
    expect(s.activeBlocks()).toBe(4);
    expect(s.activeTokens()).toBe(16);
    s.free("request_2");
    expect(s.activeBlocks()).toBe(4);
    expect(s.activeTokens()).toBe(12);
    s.free("request_3");
    expect(s.activeBlocks()).toBe(3);
    expect(s.activeTokens()).toBe(12);
    s.free("request_1");
    expect(s.activeBlocks()).toBe(0);
    expect(s.activeTokens()).toBe(0);
  });

  test("output blocks with a decay fraction count single-holder blocks fractionally", () => {
    const s = new ActiveSequences(4);
    add(s, "r1", [1, 2, 3], 12);
    expect(s.activeBlocks()).toBe(3);
    expect(s.addOutputBlock("r1", 0.5, rng)).toBe(true);
    expect(s.activeBlocks()).toBe(2); // 4 blocks × 0.5
    add(s, "r2", [1, 2], 8);
    expect(s.activeBlocks()).toBe(2); // blocks 1, 2 keep their fraction though now shared
    expect(s.addOutputBlock("r1", 0.0, rng)).toBe(true);
    expect(s.activeBlocks()).toBe(1); // 1, 2 at 0.5; 3 and both outputs at 0
    s.free("r2");
    s.free("r1");
    expect(s.activeBlocks()).toBe(0);
    expect(s.activeTokens()).toBe(0);
    expect(s.refs.liveNodes).toBe(0);
  });

  test("an output block for an unknown request is refused", () => {
    const s = new ActiveSequences(4);
    expect(s.addOutputBlock("nope", undefined, rng)).toBe(false);
    expect(s.activeBlocks()).toBe(0);
  });

  test("marking prefill completed removes its tokens, idempotently", () => {
    const s = new ActiveSequences(4);
    add(s, "r1", [1, 2, 3], 12);
    expect(s.activeTokens()).toBe(12);
    s.markPrefillCompleted("r1");
    expect(s.activeTokens()).toBe(0);
    s.markPrefillCompleted("r1");
    expect(s.activeTokens()).toBe(0);
    add(s, "r2", [4, 5], 8);
    expect(s.activeTokens()).toBe(8);
    s.free("r2");
    expect(s.activeTokens()).toBe(0);
  });

  test("a request without prefill load keeps active tokens at zero", () => {
    const s = new ActiveSequences(4);
    add(s, "r1", [1, 2, 3], 12, 0, { overlap: 3 });
    expect(s.activeTokens()).toBe(0);
    expect(s.prefillOrder()).toEqual([]);
    expect(s.activeTokens()).toBe(0);
    s.markPrefillCompleted("r1");
    s.free("r1");
    expect(s.activeBlocks()).toBe(0);
  });

  test("prefill order and sum survive repeated completion and free", () => {
    const s = new ActiveSequences(4);
    add(s, "r1", [1], 50, 0);
    add(s, "r2", [2], 30, 0);
    expect(s.activeTokens()).toBe(80);
    expect(s.prefillOrder()).toEqual(["r1", "r2"]);
    s.markPrefillCompleted("r1");
    s.markPrefillCompleted("r1");
    expect(s.activeTokens()).toBe(30);
    expect(s.prefillOrder()).toEqual(["r2"]);
    expect(s.free("r1")).toBe(true);
    expect(s.free("r1")).toBe(false);
    expect(s.activeTokens()).toBe(30);
    s.free("r2");
    expect(s.activeTokens()).toBe(0);
    expect(s.prefillOrder()).toEqual([]);
    expect(s.activeRequests).toBe(0);
  });

  test("force expiry scans at most every 30 s and frees requests older than 300 s", () => {
    const s = new ActiveSequences(4);
    const t0 = 1_000_000;
    add(s, "r1", [1, 2], 8, t0);
    add(s, "r2", [3, 4], 8, t0);
    expect(s.activeBlocks()).toBe(4);
    expect(s.forceExpiry(t0 + 20_000)).toEqual([]); // no scan yet
    expect(s.forceExpiry(t0 + 31_000)).toEqual([]); // scanned, nothing old enough
    expect(s.activeBlocks()).toBe(4);
    const later = t0 + EXPIRY_MS + 1_000;
    expect(s.forceExpiry(later).sort()).toEqual(["r1", "r2"]);
    expect(s.activeBlocks()).toBe(0);
    expect(s.activeTokens()).toBe(0);
    const expired = add(s, "r3", [5], 4, later + CHECK_EXPIRY_EVERY_MS + 1_000);
    expect(expired).toEqual([]);
    expect(s.activeBlocks()).toBe(1);
    expect(s.activeTokens()).toBe(4);
  });
});

describe("ActiveSequences: prefill load (§4.5)", () => {
  test("prefill loads add up; each goes when its prefill is done, whatever the time", () => {
    const s = new ActiveSequences(16);
    add(s, "a", [], 100, 0);
    add(s, "b", [], 40, 60_000);
    expect(s.activeTokens()).toBe(140);
    s.markPrefillCompleted("a");
    expect(s.activeTokens()).toBe(40);
  });

  test("booked prefill is max(0, isl − overlap·blockSize)", () => {
    const s = new ActiveSequences(16);
    s.add({ requestId: "a", seqHashes: null, isl: 100, overlap: 2 }, 0);
    expect(s.activeTokens()).toBe(68);
    s.add({ requestId: "b", seqHashes: null, isl: 20, overlap: 5 }, 0); // overlap beyond the prompt
    expect(s.activeTokens()).toBe(68);
    expect(s.prefillOrder()).toEqual(["a"]);
  });

  test("a duplicate add is ignored and changes nothing", () => {
    const s = new ActiveSequences(4);
    add(s, "r", [1], 4);
    expect(add(s, "r", [2, 3], 8)).toBeNull();
    expect(s.activeBlocks()).toBe(1);
    expect(s.activeTokens()).toBe(4);
  });

  test("newBlocks counts the hashes this slot does not hold", () => {
    const s = new ActiveSequences(4);
    add(s, "r", [1, 2, 3], 12);
    expect(s.newBlocks(seq(1, 2, 9, 10))).toBe(2);
    expect(s.newBlocks(seq())).toBe(0);
  });
});

describe("ActiveSequences: the prefill lane as the TTFT predictor reads it", () => {
  test("the oldest request still prefilling, how many are, and when a prefill was last seen done", () => {
    const s = new ActiveSequences(4);
    expect(s.prefillHead()).toBeUndefined();
    expect(s.lastPrefillDoneAt).toBe(-Infinity);
    add(s, "a", [1, 2], 8, 10);
    add(s, "b", [3], 4, 12);
    add(s, "c", [1, 2], 8, 13, { overlap: 2 }); // fully cached: nothing to prefill
    expect(s.prefillingRequests).toBe(2);
    expect(s.prefillHead()).toEqual({ tokens: 8, bookedAt: 10 });
    s.markPrefillCompleted("a", 20);
    expect(s.prefillHead()).toEqual({ tokens: 4, bookedAt: 12 });
    expect(s.lastPrefillDoneAt).toBe(20);
    s.markPrefillCompleted("b"); // no time given: the lane's clock stays
    s.free("c");
    expect(s.lastPrefillDoneAt).toBe(20);
    expect(s.prefillingRequests).toBe(0);
  });
});

describe("ActiveSequences: the prefix an engine of known capacity still holds when the next request starts", () => {
  test("unknown capacity: the credited prefix, whole", () => {
    const s = new ActiveSequences(4);
    add(s, "long", [1, 2, 3, 4, 5, 6], 24);
    expect(s.kvCapacityBlocks).toBeUndefined();
    expect(s.keptWhenItStarts(seq(1, 2, 3, 4, 5, 6, 7), 6)).toBe(6);
  });

  test("the last prompt queued fills the cache: only what the request shares with it is kept", () => {
    const s = new ActiveSequences(4);
    s.kvCapacityBlocks = 4;
    add(s, "x", [1, 2, 3, 4, 5, 6], 24); // agent X's prompt, 6 blocks
    expect(s.keptWhenItStarts(seq(1, 2, 3, 4, 5, 6, 7), 6)).toBe(4); // X is last: its first 4 blocks stay
    add(s, "y", [21, 22, 23, 24, 25], 20); // then agent Y's, 5 blocks: it pushes X out
    expect(s.keptWhenItStarts(seq(1, 2, 3, 4, 5, 6, 7), 6)).toBe(0);
    expect(s.keptWhenItStarts(seq(21, 22, 9), 2)).toBe(2);
    // Y's prefill done: X, still prefilling, is the last again.
    s.markPrefillCompleted("y", 5);
    expect(s.keptWhenItStarts(seq(1, 2, 3, 4, 5, 6, 7), 6)).toBe(4);
  });

  test("prompts shorter than the cache ahead: the credit stands, never beyond the capacity", () => {
    const s = new ActiveSequences(4);
    s.kvCapacityBlocks = 4;
    add(s, "short", [31, 32], 8);
    expect(s.keptWhenItStarts(seq(1, 2, 3), 3)).toBe(3);
    expect(s.keptWhenItStarts(seq(1, 2, 3, 4, 5, 6), 6)).toBe(4);
    s.markPrefillCompleted("short", 1);
    expect(s.keptWhenItStarts(seq(1, 2, 3, 4, 5, 6), 6)).toBe(4); // nothing queued: the cache now, within capacity
  });
});
