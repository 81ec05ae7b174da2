import { describe, expect, test } from "bun:test";
import { isRouterError } from "../../../../src/core/errors.ts";
import { worker } from "../../../../src/core/ids.ts";
import { MemoryAffinityStore } from "../../../../src/router/sessions/memory-store.ts";
import {
  DEFAULT_SESSION_TIMEOUT_S,
  SESSION_TIMEOUT_FALLBACK_BUFFER_S,
  StickyRouter,
} from "../../../../src/router/sessions/sticky.ts";
import { FakeClock } from "../../../contract/fake-clock.ts";

// The seed's router tests run against every store in test/contract/affinity-store.contract.ts;
// these cover what StickyRouter adds on top of a store.
describe("StickyRouter", () => {
  const make = () => {
    const clock = new FakeClock();
    const store = new MemoryAffinityStore({ clock, reaperIntervalMs: 0 });
    return { clock, store, router: new StickyRouter(store) };
  };

  test("the two binders record their kind", async () => {
    const { store, router } = make();
    await router.bindRouterOnly("r", worker(1), 1_000);
    await router.bindEngineSession("e", worker(2, 1), 1_000);
    expect((await store.peek("r"))?.kind).toBe("router-only");
    expect((await store.peek("e"))?.kind).toBe("engine-backed");
  });

  test("a non-positive or non-finite TTL is an invalid request, and binds nothing", async () => {
    const { store, router } = make();
    for (const ttl of [0, -5, Number.NaN, Number.POSITIVE_INFINITY]) {
      const err = await router.bindEngineSession("s", worker(1), ttl).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isRouterError(err) && err.code).toBe("invalid_request");
    }
    expect(await store.peek("s")).toBeUndefined();
  });

  test("resolve refreshes and peek does not", async () => {
    const { clock, router } = make();
    await router.bindRouterOnly("s", worker(4, 2), 10_000);
    clock.advance(9_000);
    expect(await router.peek("s")).toEqual(worker(4, 2));
    expect(await router.resolve("s")).toEqual(worker(4, 2));
    clock.advance(9_000);
    expect(await router.peek("s")).toEqual(worker(4, 2));
    clock.advance(1_000);
    expect(await router.peek("s")).toBeUndefined();
  });

  test("session constants match Dynamo's", () => {
    expect(DEFAULT_SESSION_TIMEOUT_S).toBe(300);
    expect(SESSION_TIMEOUT_FALLBACK_BUFFER_S).toBe(30);
  });
});
