/**
 * One engine, one worker: the same URL under a second id is refused (409 naming the worker it
 * is registered as), so an engine never counts twice; once that worker is removed the URL may
 * be registered under another id.
 */
import { describe, expect, test } from "bun:test";
import { RouterError } from "../../../src/core/errors.ts";
import { WorkerMembership } from "../../../src/fleet/membership.ts";
import { WorkerRegistry } from "../../../src/fleet/registry.ts";
import { rejectionOf } from "../../support/errors.ts";

function setup(claims: Record<string, bigint> = {}) {
  const registry = new WorkerRegistry();
  const m = new WorkerMembership({
    registry,
    blockSize: 16,
    load: { updateWorkers: () => {} },
    recovery: { addRank: () => {}, removeWorker: () => {} },
    engineInfo: async (url) => ({ loras: [], workerId: claims[url] }),
  });
  return { registry, m };
}

describe("the same engine URL twice", () => {
  test("a second id for a registered URL is refused naming the first; spelled differently too", async () => {
    const s = setup();
    await s.m.register({ url: "http://engine:8000", id: 5n });
    for (const url of ["http://engine:8000", "http://ENGINE:8000/"]) {
      const e = await rejectionOf(RouterError, s.m.register({ url, id: 6n }));
      expect(e.code).toBe("duplicate_request");
      expect(e.field).toBe("url");
      expect(e.message).toContain("already registered as worker 5");
    }
    // Its URL-derived id is another id too: refused the same way.
    expect(
      (await rejectionOf(RouterError, s.m.register({ url: "http://engine:8000" }))).field,
    ).toBe("url");
    expect(s.registry.size).toBe(1);
  });

  test("after the first is removed, the URL may be registered again under another id", async () => {
    const s = setup();
    await s.m.register({ url: "http://engine:8000", id: 5n });
    s.m.remove(5n);
    expect((await s.m.register({ url: "http://engine:8000", id: 6n })).created).toBe(true);
  });
});

describe("two engines claiming one worker id", () => {
  test("the second engine is refused with a message naming both URLs and the fix", async () => {
    const s = setup({ "http://engine-1:8000": 7n, "http://engine-2:8000": 7n });
    await s.m.register({ url: "http://engine-1:8000" });
    const e = await rejectionOf(RouterError, s.m.register({ url: "http://engine-2:8000" }));
    expect(e.code).toBe("duplicate_request");
    expect(e.message).toContain("worker id clash");
    expect(e.message).toContain("http://engine-1:8000");
    expect(e.message).toContain("http://engine-2:8000");
    expect(e.message).toContain("--advertise-url");
    expect(s.registry.size).toBe(1);
  });

  test("an engine claiming the id another engine is registered under is refused", async () => {
    const s = setup({ "http://engine-2:8000": 5n });
    await s.m.register({ url: "http://engine-1:8000", id: 5n });
    expect(
      (await rejectionOf(RouterError, s.m.register({ url: "http://engine-2:8000" }))).message,
    ).toContain("worker id clash");
  });

  test("once the first is removed its claim goes with it; distinct claims never clash", async () => {
    const s = setup({
      "http://engine-1:8000": 7n,
      "http://engine-2:8000": 7n,
      "http://engine-3:8000": 8n,
    });
    const first = await s.m.register({ url: "http://engine-1:8000" });
    expect((await s.m.register({ url: "http://engine-3:8000" })).created).toBe(true);
    s.m.remove(first.worker.id);
    expect((await s.m.register({ url: "http://engine-2:8000" })).created).toBe(true);
  });
});
