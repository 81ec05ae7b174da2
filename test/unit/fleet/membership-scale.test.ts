/**
 * Many workers: --max-workers refuses one more with a message naming the flag (a known one
 * still re-registers; a freed place can be taken again), and a registration or a removal
 * touches that worker's load slots only, not the whole fleet's.
 */
import { describe, expect, test } from "bun:test";
import { RouterError } from "../../../src/core/errors.ts";
import type { WorkerId, WorkerWithDpRank } from "../../../src/core/ids.ts";
import { WorkerMembership } from "../../../src/fleet/membership.ts";
import { WorkerRegistry } from "../../../src/fleet/registry.ts";
import { rejectionOf } from "../../support/errors.ts";

function setup(maxWorkers?: number) {
  const registry = new WorkerRegistry();
  const calls = { update: 0, added: [] as WorkerWithDpRank[], removed: [] as WorkerId[] };
  const m = new WorkerMembership({
    registry,
    blockSize: 16,
    load: {
      updateWorkers: () => void calls.update++,
      addWorkers: (t) => void calls.added.push(...t),
      removeLoad: (id) => void calls.removed.push(id),
    },
    recovery: { addRank: () => {}, removeWorker: () => {} },
    engineInfo: async () => ({ dpRanks: 2, loras: [] }),
    maxWorkers,
  });
  return { registry, m, calls };
}

describe("worker limit", () => {
  test("one past --max-workers: 503 naming the flag; a known worker re-registers; a freed place is taken again", async () => {
    const s = setup(3);
    for (let i = 0; i < 3; i++) await s.m.register({ url: `http://e${i}:1` });
    const e = await rejectionOf(RouterError, s.m.register({ url: "http://e3:1" }));
    expect(e.code).toBe("unavailable");
    expect(e.field).toBe("url");
    expect(e.message).toContain("--max-workers 3");
    expect(s.registry.size).toBe(3);
    expect((await s.m.register({ url: "http://e1:1" })).created).toBe(false);
    s.m.remove(s.registry.list()[0]!.id);
    expect((await s.m.register({ url: "http://e3:1" })).created).toBe(true);
  });

  test("concurrent registrations past the limit: exactly the limit gets in", async () => {
    const s = setup(5);
    const results = await Promise.allSettled(
      Array.from({ length: 12 }, (_, i) => s.m.register({ url: `http://c${i}:1` })),
    );
    expect(results.filter((r) => r.status === "fulfilled").length).toBe(5);
    expect(s.registry.size).toBe(5);
  });
});

describe("registration cost", () => {
  test("a registration adds that worker's ranks, a removal removes them: the fleet is never re-synced", async () => {
    const s = setup();
    for (let i = 0; i < 50; i++) await s.m.register({ url: `http://w${i}:1` });
    expect(s.calls.update).toBe(0);
    expect(s.calls.added.length).toBe(100);
    const id = s.registry.list()[7]!.id;
    s.m.remove(id);
    expect(s.calls.removed).toEqual([id]);
    expect(s.calls.update).toBe(0);
  });
});

describe("dp ranks cap", () => {
  function withInfo(dpRanks: number) {
    const registry = new WorkerRegistry();
    let restores = 0;
    const m = new WorkerMembership({
      registry,
      blockSize: 16,
      load: { updateWorkers: () => {} },
      recovery: { addRank: () => void restores++, removeWorker: () => {} },
      engineInfo: async () => ({ dpRanks, loras: [] }),
    });
    return { registry, m, restores: () => restores };
  }

  test("an engine claiming 20,000 ranks about itself is refused like a registration would be: 400 naming dp_ranks, nothing restored", async () => {
    const s = withInfo(20_000);
    const e = await rejectionOf(RouterError, s.m.register({ url: "http://big:1" }));
    expect(e.code).toBe("invalid_request");
    expect(e.field).toBe("dp_ranks");
    expect(e.message).toContain("its /v1/engine/info says 20000 data-parallel ranks; at most 1024");
    expect(s.registry.size).toBe(0);
    expect(s.restores()).toBe(0); // before: 20,000 /kv/query restores
  });

  test("at the cap it registers; a registration's own count past it is refused the same way", async () => {
    const s = withInfo(1024);
    expect((await s.m.register({ url: "http://ok:1" })).worker.dpRanks).toBe(1024);
    const e = await rejectionOf(RouterError, s.m.register({ url: "http://big:2", dpRanks: 5000 }));
    expect(e.message).toContain("the registration says 5000");
  });
});
