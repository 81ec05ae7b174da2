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

function setup() {
  const registry = new WorkerRegistry();
  const m = new WorkerMembership({
    registry,
    blockSize: 16,
    load: { updateWorkers: () => {} },
    recovery: { addRank: () => {}, removeWorker: () => {} },
    engineInfo: async () => ({ loras: [] }),
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
    expect((await rejectionOf(RouterError, s.m.register({ url: "http://engine:8000" }))).field).toBe("url");
    expect(s.registry.size).toBe(1);
  });

  test("after the first is removed, the URL may be registered again under another id", async () => {
    const s = setup();
    await s.m.register({ url: "http://engine:8000", id: 5n });
    s.m.remove(5n);
    expect((await s.m.register({ url: "http://engine:8000", id: 6n })).created).toBe(true);
  });
});
