import { describe, expect, test } from "bun:test";
import { worker, workerKey } from "../../../../src/core/ids.ts";
import { LoadTracker, remoteRequestKey } from "../../../../src/router/books/load-tracker.ts";
import type { ActiveSequenceEvent } from "../../../../src/router/books/sequence-events.ts";
import { routerErrorCode as codeOf } from "../../../support/errors.ts";
import { overlapsOf, seededRng, seq } from "../choose/helpers.ts";

const W1 = worker(1);
const W2 = worker(2);
const K1 = workerKey(1n);
const K2 = workerKey(2n);

function tracker(workers = [W1, W2], blockSize = 4) {
  const t = new LoadTracker({ blockSize, routerId: 9n });
  t.updateWorkers(workers);
  return t;
}

describe("LoadTracker: booking", () => {
  test("books on the request's slot only", () => {
    const t = tracker();
    t.addRequest({ requestId: "r1", worker: W1, seqHashes: seq(1, 2, 3), isl: 12, overlap: 1 }, 0);
    expect(t.activeBlocks(K1)).toBe(3);
    expect(t.activeTokens(K1, 0)).toBe(8);
    expect(t.activeRequests(K1)).toBe(1);
    expect(t.activeBlocks(K2)).toBe(0);
    expect(t.workerOf("r1")).toEqual(W1);
  });

  test("a duplicate id is refused with duplicate_request, and state is unchanged", () => {
    const t = tracker();
    t.addRequest({ requestId: "r1", worker: W1, seqHashes: seq(1), isl: 4, overlap: 0 }, 0);
    expect(
      codeOf(() =>
        t.addRequest({ requestId: "r1", worker: W2, seqHashes: seq(2), isl: 4, overlap: 0 }, 0),
      ),
    ).toBe("duplicate_request");
    expect(t.activeBlocks(K2)).toBe(0);
    expect(t.workerOf("r1")).toEqual(W1);
  });

  test("an untracked worker is refused with worker_not_found", () => {
    const t = tracker();
    expect(
      codeOf(() =>
        t.addRequest({ requestId: "r", worker: worker(3), seqHashes: null, isl: 4, overlap: 0 }, 0),
      ),
    ).toBe("worker_not_found");
    expect(t.hasRequest("r")).toBe(false);
  });

  test("free is idempotent and releases the slot's load", () => {
    const t = tracker();
    t.addRequest({ requestId: "r1", worker: W1, seqHashes: seq(1, 2), isl: 8, overlap: 0 }, 0);
    expect(t.free("r1", 0)).toBe(true);
    expect(t.free("r1", 0)).toBe(false);
    expect(t.free("never", 0)).toBe(false);
    expect(t.activeBlocks(K1)).toBe(0);
    expect(t.activeTokens(K1, 0)).toBe(0);
    expect(t.heldBlockRefs).toBe(0);
  });

  test("prefill completion and output blocks reach the request's slot", () => {
    const t = tracker();
    t.addRequest({ requestId: "r1", worker: W2, seqHashes: seq(1), isl: 4, overlap: 0 }, 0);
    expect(t.markPrefillCompleted("r1", 0)).toBe(true);
    expect(t.activeTokens(K2, 0)).toBe(0);
    expect(t.addOutputBlock("r1", undefined, seededRng(1))).toBe(true);
    expect(t.activeBlocks(K2)).toBe(2);
    expect(t.markPrefillCompleted("nope", 0)).toBe(false);
    expect(t.addOutputBlock("nope", undefined, seededRng(1))).toBe(false);
  });

  test("the same prefix on two workers is counted on each", () => {
    const t = tracker();
    t.addRequest({ requestId: "a", worker: W1, seqHashes: seq(1, 2), isl: 8, overlap: 0 }, 0);
    t.addRequest({ requestId: "b", worker: W2, seqHashes: seq(1, 2), isl: 8, overlap: 0 }, 0);
    t.free("a", 0);
    expect(t.activeBlocks(K1)).toBe(0);
    expect(t.activeBlocks(K2)).toBe(2);
  });
});

describe("LoadTracker: potential load (§4.5)", () => {
  test("decode = new blocks + active blocks; prefill = uncached prompt + active prefill", () => {
    const t = tracker();
    t.addRequest({ requestId: "a", worker: W1, seqHashes: seq(1, 2, 3), isl: 12, overlap: 0 }, 0);
    const p = t.potentialBlocksAndTokens(seq(1, 2, 7, 8), 16, overlapsOf({ [K1]: 2 }), 0);
    expect(p.get(K1)).toEqual({ decodeBlocks: 2 + 3, prefillTokens: 16 - 2 * 4 + 12 });
    expect(p.get(K2)).toEqual({ decodeBlocks: 4, prefillTokens: 16 });
  });

  test("without sequence hashes only active blocks count", () => {
    const t = tracker();
    t.addRequest({ requestId: "a", worker: W1, seqHashes: seq(1, 2, 3), isl: 12, overlap: 0 }, 0);
    expect(t.potentialBlocksAndTokens(null, 8, overlapsOf(), 0).get(K1)).toEqual({
      decodeBlocks: 3,
      prefillTokens: 20,
    });
  });

  test("held counts agree with a per-slot scan on random workloads (seed 3)", () => {
    const rng = seededRng(3);
    const workers = [0, 1, 2, 3, 4].map((i) => worker(i, i % 2));
    const t = tracker(workers, 16);
    const live: string[] = [];
    for (let i = 0; i < 400; i++) {
      const n = 1 + Math.floor(rng() * 20);
      const h = seq(...Array.from({ length: n }, () => Math.floor(rng() * 60)));
      if (rng() < 0.7 || live.length === 0) {
        const id = `r${i}`;
        t.addRequest(
          {
            requestId: id,
            worker: workers[Math.floor(rng() * 5)]!,
            seqHashes: h,
            isl: n * 16,
            overlap: 0,
          },
          0,
        );
        live.push(id);
      } else {
        t.free(live.splice(Math.floor(rng() * live.length), 1)[0]!, 0);
      }
      const held = t.heldCounts(h);
      for (const w of workers) {
        const s = t.slotOf(workerKey(w.workerId, w.dpRank))!;
        expect(h.length - held[s.slot]!).toBe(s.newBlocks(h));
      }
    }
  });
});

describe("LoadTracker: held counts of a prompt's sequence hashes", () => {
  test("heldPrefixCounts equals heldCounts for chained sequence hashes, stopping at the first block nobody holds (seed 5)", () => {
    const rng = seededRng(5);
    const workers = [0, 1, 2, 3, 4, 5, 6].map((i) => worker(i));
    const t = tracker(workers, 16);
    // Prompts = one of 6 shared prefixes + a unique tail; sequence hashes chain every block before.
    const prefixes = Array.from({ length: 6 }, (_, p) =>
      Array.from({ length: 1 + p * 3 }, (_, k) => BigInt(p * 1000 + k + 1)),
    );
    const chained = (locals: bigint[]) => {
      let h = 0n;
      return BigUint64Array.from(
        locals.map((l) => (h = (h * 1_000_003n + l) & 0xffff_ffff_ffff_ffffn)),
      );
    };
    let tail = 1_000_000n;
    const prompt = () =>
      chained([
        ...prefixes[Math.floor(rng() * 6)]!,
        ...Array.from({ length: Math.floor(rng() * 5) }, () => tail++),
      ]);
    const live: string[] = [];
    let stopped = 0;
    for (let i = 0; i < 300; i++) {
      if (rng() < 0.7 || live.length === 0) {
        const h = prompt();
        t.addRequest(
          {
            requestId: `r${i}`,
            worker: workers[Math.floor(rng() * workers.length)]!,
            seqHashes: h,
            isl: h.length * 16,
            overlap: 0,
          },
          0,
        );
        live.push(`r${i}`);
      } else {
        t.free(live.splice(Math.floor(rng() * live.length), 1)[0]!, 0);
      }
      const q = prompt();
      const full = [...t.heldCounts(q)];
      const prefix = [...t.heldPrefixCounts(q)];
      expect(prefix).toEqual(full);
      if (full.every((n) => n < q.length)) stopped++;
    }
    // Most queries end in a tail nobody holds: the early stop was exercised.
    expect(stopped).toBeGreaterThan(200);
  });

  test("long held prefixes cut at many depths on many workers: the same counts as heldCounts (seed 8)", () => {
    const rng = seededRng(8);
    const workers = Array.from({ length: 40 }, (_, i) => worker(i));
    const t = tracker(workers, 16);
    const chained = (locals: bigint[]) => {
      let h = 0n;
      return BigUint64Array.from(
        locals.map((l) => (h = (h * 1_000_003n + l) & 0xffff_ffff_ffff_ffffn)),
      );
    };
    const docs = Array.from({ length: 3 }, (_, d) =>
      Array.from({ length: 300 + d * 100 }, (_, k) => BigInt(d * 100_000 + k + 1)),
    );
    let tail = 10_000_000n;
    for (let i = 0; i < 120; i++) {
      // A booking holds a leading cut of a document (any depth) and a tail of its own.
      const doc = docs[Math.floor(rng() * 3)]!;
      const cut = Math.floor(rng() * doc.length) + 1;
      const h = chained([
        ...doc.slice(0, cut),
        ...Array.from({ length: Math.floor(rng() * 3) }, () => tail++),
      ]);
      t.addRequest(
        {
          requestId: `r${i}`,
          worker: workers[Math.floor(rng() * workers.length)]!,
          seqHashes: h,
          isl: h.length * 16,
          overlap: 0,
        },
        0,
      );
      for (const d of docs) {
        const q = chained([...d, tail++]);
        expect([...t.heldPrefixCounts(q)]).toEqual([...t.heldCounts(q)]);
      }
    }
  });
  test("shared holder rows as bookings end and workers leave (rows freed, compacted, narrowed): the same counts as heldCounts (seed 13)", () => {
    const rng = seededRng(13);
    // 70 workers: holder rows three words wide, narrowing as the high slots leave.
    let workers = Array.from({ length: 70 }, (_, i) => worker(i));
    const t = tracker(workers, 16);
    const chained = (locals: bigint[]) => {
      let h = 0n;
      return BigUint64Array.from(
        locals.map((l) => (h = (h * 1_000_003n + l) & 0xffff_ffff_ffff_ffffn)),
      );
    };
    const docs = Array.from({ length: 4 }, (_, d) =>
      Array.from({ length: 200 }, (_, k) => BigInt(d * 100_000 + k + 1)),
    );
    let tail = 20_000_000n;
    const live: { id: string; w: number }[] = [];
    /** Compares both counts on every document; returns the most slots holding any first block. */
    const check = (): number => {
      let most = 0;
      for (const d of docs) {
        const q = chained([...d, tail++]);
        const full = [...t.heldCounts(q)];
        expect([...t.heldPrefixCounts(q)]).toEqual(full);
        most = Math.max(most, full.filter((n) => n > 0).length);
      }
      return most;
    };
    // Enough bookings that most blocks have several holders (each a bitset row) ...
    for (let i = 0; i < 400; i++) {
      const w = Math.floor(rng() * workers.length);
      const doc = docs[Math.floor(rng() * docs.length)]!;
      const h = chained([...doc.slice(0, Math.floor(rng() * doc.length) + 1), tail++]);
      t.addRequest(
        { requestId: `r${i}`, worker: workers[w]!, seqHashes: h, isl: h.length * 16, overlap: 0 },
        0,
      );
      live.push({ id: `r${i}`, w });
    }
    expect(check()).toBeGreaterThan(32);
    // ... then most end (rows freed back to one inline holder, the rows compacted once mostly free) ...
    while (live.length > 40) {
      t.free(live.splice(Math.floor(rng() * live.length), 1)[0]!.id, 0);
      if (live.length % 40 === 0) check();
    }
    // ... and the high slots leave, their bookings with them (the rows narrow).
    workers = workers.slice(0, 20);
    t.updateWorkers(workers);
    expect(check()).toBeLessThanOrEqual(20);
  });
});

describe("LoadTracker: membership", () => {
  test("updateWorkers keeps the state of remaining ranks and drops the rest", () => {
    const t = tracker();
    t.addRequest({ requestId: "a", worker: W1, seqHashes: seq(1), isl: 4, overlap: 0 }, 0);
    t.addRequest({ requestId: "b", worker: W2, seqHashes: seq(2), isl: 4, overlap: 0 }, 0);
    t.updateWorkers([W1, worker(3)]);
    expect(t.activeBlocks(K1)).toBe(1);
    expect(t.hasRequest("a")).toBe(true);
    expect(t.hasWorker(K2)).toBe(false);
    expect(t.hasRequest("b")).toBe(false);
    expect(t.free("b", 0)).toBe(false);
    expect(t.hasWorker(workerKey(3n))).toBe(true);
    expect(t.heldBlockRefs).toBe(1);
  });

  test("the same worker object is booked on the live slot after its slot was dropped and made again", () => {
    const t = tracker();
    t.addRequest({ requestId: "a", worker: W1, seqHashes: seq(1), isl: 4, overlap: 0 }, 0);
    t.updateWorkers([W2]); // W1's slot (the one cached for this object) goes
    expect(() =>
      t.addRequest({ requestId: "b", worker: W1, seqHashes: seq(1), isl: 4, overlap: 0 }, 0),
    ).toThrow();
    t.updateWorkers([W1, W2]); // a new slot for the same key
    t.addRequest({ requestId: "c", worker: W1, seqHashes: seq(1, 2), isl: 8, overlap: 0 }, 0);
    expect(t.activeBlocks(K1)).toBe(2);
    expect(t.activeRequests(K1)).toBe(1);
    expect(t.free("c", 0)).toBe(true);
    expect(t.activeBlocks(K1)).toBe(0);
  });

  test("workers can be given as keys", () => {
    const t = tracker();
    t.addRequest({ requestId: "a", worker: W1, seqHashes: seq(1), isl: 4, overlap: 0 }, 0);
    t.updateWorkers(new Set([K1, "5:2"]));
    expect(t.workers()).toEqual([W1, worker(5, 2)]);
    expect(t.hasRequest("a")).toBe(true);
  });

  test("removeWorker drops every dp rank of the worker with its requests", () => {
    const t = tracker([worker(1, 0), worker(1, 1), W2]);
    t.addRequest(
      {
        requestId: "a",
        worker: worker(1, 1),
        seqHashes: seq(1),
        isl: 4,
        overlap: 0,
        loraName: "x",
      },
      0,
    );
    t.addRequest({ requestId: "b", worker: W2, seqHashes: seq(1), isl: 4, overlap: 0 }, 0);
    t.removeWorker(1n);
    expect(t.workers()).toEqual([W2]);
    expect(t.hasRequest("a")).toBe(false);
    expect(t.activeLoraCounts().size).toBe(0);
    expect(t.activeBlocks(K2)).toBe(1);
  });

  test("loads snapshots every slot", () => {
    const t = tracker();
    t.addRequest({ requestId: "a", worker: W1, seqHashes: seq(1, 2), isl: 8, overlap: 0 }, 0);
    expect(t.loads(0)).toEqual([
      { key: K1, worker: W1, activePrefillTokens: 8, activeDecodeBlocks: 2, activeRequests: 1 },
      { key: K2, worker: W2, activePrefillTokens: 0, activeDecodeBlocks: 0, activeRequests: 0 },
    ]);
  });

  test("active LoRA counts follow adds and frees", () => {
    const t = tracker();
    t.addRequest(
      { requestId: "a", worker: W1, seqHashes: null, isl: 4, overlap: 0, loraName: "x" },
      0,
    );
    t.addRequest(
      { requestId: "b", worker: W2, seqHashes: null, isl: 4, overlap: 0, loraName: "x" },
      0,
    );
    t.addRequest({ requestId: "c", worker: W2, seqHashes: null, isl: 4, overlap: 0 }, 0);
    expect(t.activeLoraCounts()).toEqual(new Map([["x", 2]]));
    t.free("a", 0);
    expect(t.activeLoraCounts()).toEqual(new Map([["x", 1]]));
  });

  test("forceExpiry frees stale requests on every slot and forgets them", () => {
    const t = tracker();
    t.forceExpiry(0); // starts each slot's expiry clock
    t.addRequest({ requestId: "old", worker: W1, seqHashes: seq(1), isl: 4, overlap: 0 }, 0);
    t.addRequest({ requestId: "new", worker: W2, seqHashes: seq(2), isl: 4, overlap: 0 }, 290_000);
    expect(t.forceExpiry(301_000)).toEqual(["old"]);
    expect(t.hasRequest("old")).toBe(false);
    expect(t.hasRequest("new")).toBe(true);
    expect(t.activeBlocks(K1)).toBe(0);
  });
});

describe("LoadTracker: replica sync seam (§1.6)", () => {
  test("local add, prefill and free are reported in order with this router's id", () => {
    const events: ActiveSequenceEvent[] = [];
    const t = new LoadTracker({ blockSize: 4, routerId: 5n, onLocalEvent: (e) => events.push(e) });
    t.updateWorkers([W1]);
    t.addRequest({ requestId: "r", worker: W1, seqHashes: seq(1), isl: 4, overlap: 0 }, 0);
    t.markPrefillCompleted("r", 0);
    t.addOutputBlock("r", undefined, seededRng(1)); // never replicated
    t.free("r", 0);
    t.free("r", 0); // unknown now: nothing to report
    expect(events.map((e) => e.data.type)).toEqual([
      "add_request",
      "mark_prefill_completed",
      "free",
    ]);
    expect(
      events.every(
        (e) => e.routerId === 5n && e.requestId === "r" && e.worker === events[0]!.worker,
      ),
    ).toBe(true);
    // The wire's expected output length is always null: nothing on the request path predicts it.
    expect(events[0]!.data).toEqual({
      type: "add_request",
      tokenSequence: seq(1),
      isl: 4,
      overlap: 0,
      expectedOutputTokens: null,
    });
  });

  test("remote events book load; own events and unknown targets are ignored", () => {
    const t = tracker();
    const base = { worker: W1, routerId: 1n, loraName: "l" } as const;
    const add = {
      type: "add_request",
      tokenSequence: seq(1, 2),
      isl: 8,
      overlap: 0,
      expectedOutputTokens: null,
    } as const;
    expect(t.applyRemote({ ...base, requestId: "x", data: add }, 0)).toBe(true);
    expect(t.activeBlocks(K1)).toBe(2);
    expect(t.activeTokens(K1, 0)).toBe(8);
    expect(t.activeLoraCounts()).toEqual(new Map([["l", 1]]));
    expect(t.applyRemote({ ...base, requestId: "x", data: add }, 0)).toBe(false); // already known
    expect(t.applyRemote({ ...base, routerId: 9n, requestId: "mine", data: add }, 0)).toBe(false); // own
    expect(t.applyRemote({ ...base, worker: worker(8), requestId: "y", data: add }, 0)).toBe(false); // no slot
    expect(
      t.applyRemote({ ...base, requestId: "x", data: { type: "mark_prefill_completed" } }, 0),
    ).toBe(true);
    expect(t.activeTokens(K1, 0)).toBe(0);
    expect(t.applyRemote({ ...base, requestId: "x", data: { type: "free" } }, 0)).toBe(true);
    expect(t.activeBlocks(K1)).toBe(0);
    expect(t.applyRemote({ ...base, requestId: "x", data: { type: "free" } }, 0)).toBe(false);
  });

  test("request ids are per router: another router's id equal to ours (or a third's) books and frees separately", () => {
    const t = new LoadTracker({ blockSize: 4, routerId: 5n });
    t.updateWorkers([W1, W2]);
    const add = {
      type: "add_request",
      tokenSequence: seq(1, 2),
      isl: 8,
      overlap: 0,
      expectedOutputTokens: null,
    } as const;
    t.addRequest({ requestId: "ext-1", worker: W1, seqHashes: seq(1, 2), isl: 8, overlap: 0 }, 0);
    expect(
      t.applyRemote({ worker: W1, routerId: 1n, loraName: null, requestId: "ext-1", data: add }, 0),
    ).toBe(true);
    expect(
      t.applyRemote({ worker: W2, routerId: 2n, loraName: null, requestId: "ext-1", data: add }, 0),
    ).toBe(true);
    expect(t.activeTokens(K1, 0)).toBe(16);
    expect(t.activeTokens(K2, 0)).toBe(8);
    // Router 1's free releases router 1's booking only; ours is still ours to free.
    expect(
      t.applyRemote(
        { worker: W1, routerId: 1n, loraName: null, requestId: "ext-1", data: { type: "free" } },
        0,
      ),
    ).toBe(true);
    expect(t.activeTokens(K1, 0)).toBe(8);
    expect(t.activeTokens(K2, 0)).toBe(8);
    t.free("ext-1", 0);
    expect(t.activeTokens(K1, 0)).toBe(0);
    expect(() =>
      t.addRequest({ requestId: "ext-1", worker: W1, seqHashes: seq(1, 2), isl: 8, overlap: 0 }, 0),
    ).not.toThrow();
  });

  test("local requests dropped by expiry or with their worker are reported as frees; remote ones are not", () => {
    const events: ActiveSequenceEvent[] = [];
    const t = new LoadTracker({ blockSize: 4, routerId: 5n, onLocalEvent: (e) => events.push(e) });
    t.updateWorkers([W1, worker(2, 0), worker(2, 1), worker(3)]);
    t.forceExpiry(0); // starts each slot's expiry clock
    const remoteAdd = {
      type: "add_request",
      tokenSequence: seq(7),
      isl: 4,
      overlap: 0,
      expectedOutputTokens: null,
    } as const;
    t.addRequest(
      { requestId: "old", worker: W1, seqHashes: seq(1), isl: 4, overlap: 0, loraName: "l" },
      0,
    );
    t.applyRemote(
      { requestId: "old-remote", worker: W1, routerId: 1n, loraName: null, data: remoteAdd },
      0,
    );
    t.addRequest(
      { requestId: "on-2a", worker: worker(2, 0), seqHashes: seq(2), isl: 4, overlap: 0 },
      290_000,
    );
    t.addRequest(
      { requestId: "on-2b", worker: worker(2, 1), seqHashes: seq(3), isl: 4, overlap: 0 },
      290_000,
    );
    t.applyRemote(
      {
        requestId: "remote-2",
        worker: worker(2, 1),
        routerId: 1n,
        loraName: null,
        data: remoteAdd,
      },
      290_000,
    );
    t.addRequest(
      { requestId: "stale-3", worker: worker(3), seqHashes: seq(4), isl: 4, overlap: 0 },
      0,
    );
    const frees = () => events.filter((e) => e.data.type === "free");

    expect(t.forceExpiry(301_000).sort()).toEqual(
      [remoteRequestKey(1n, "old-remote"), "old", "stale-3"].sort(),
    );
    expect(
      frees()
        .map((e) => e.requestId)
        .sort(),
    ).toEqual(["old", "stale-3"]);
    const old = frees().find((e) => e.requestId === "old")!;
    expect(old).toEqual({
      requestId: "old",
      worker: W1,
      data: { type: "free" },
      routerId: 5n,
      loraName: "l",
    });

    events.length = 0;
    t.removeWorker(2n);
    expect(frees().map((e) => [e.requestId, e.worker])).toEqual([
      ["on-2a", worker(2, 0)],
      ["on-2b", worker(2, 1)],
    ]);
    expect(t.hasRequest("remote-2")).toBe(false);

    // Expiry found while booking (a slot's scan is due) is reported too, before the new add.
    events.length = 0;
    t.addRequest(
      { requestId: "late", worker: worker(3), seqHashes: seq(5), isl: 4, overlap: 0 },
      200_000,
    );
    t.addRequest(
      { requestId: "later", worker: worker(3), seqHashes: seq(6), isl: 4, overlap: 0 },
      600_000,
    );
    expect(events.map((e) => `${e.data.type}:${e.requestId}`)).toEqual([
      "add_request:late",
      "free:late",
      "add_request:later",
    ]);

    // Dropped through updateWorkers as well, and only once.
    events.length = 0;
    t.updateWorkers([W1]);
    expect(frees().map((e) => e.requestId)).toEqual(["later"]);
    expect(t.free("later", 0)).toBe(false); // already gone: no second free
    expect(frees()).toHaveLength(1);
  });

  test("remote events are not echoed to the local hook", () => {
    let echoed = 0;
    const t = new LoadTracker({ blockSize: 4, routerId: 2n, onLocalEvent: () => echoed++ });
    t.updateWorkers([W1]);
    const add = {
      type: "add_request",
      tokenSequence: null,
      isl: 8,
      overlap: 0,
      expectedOutputTokens: null,
    } as const;
    t.applyRemote({ requestId: "x", worker: W1, routerId: 1n, loraName: null, data: add }, 0);
    t.applyRemote(
      { requestId: "x", worker: W1, routerId: 1n, loraName: null, data: { type: "free" } },
      0,
    );
    expect(echoed).toBe(0);
  });
});

describe("LoadTracker: KV capacity per rank", () => {
  test("reaches the rank's books whether its slot exists yet or not; unknown again when the worker leaves", () => {
    const t = tracker([W1]);
    t.setKvCapacity(W1, 64);
    t.setKvCapacity(W2, 32); // before its slot
    expect(t.slotOf(K1)!.kvCapacityBlocks).toBe(64);
    t.addWorkers([W2]);
    expect(t.slotOf(K2)!.kvCapacityBlocks).toBe(32);
    t.setKvCapacity(W1, undefined);
    expect(t.slotOf(K1)!.kvCapacityBlocks).toBeUndefined();
    t.removeWorker(2n);
    t.addWorkers([W2]);
    expect(t.slotOf(K2)!.kvCapacityBlocks).toBeUndefined();
  });
});
