/**
 * Request ids must differ between routers: with --redis each router books its peers'
 * requests under their ids (load sync), so a shared id is a 409 duplicate_request.
 * Two routers started in the same millisecond used to draw the same ids (the flaky
 * multi-router REST test).
 */
import { afterEach, expect, setSystemTime, test } from "bun:test";
import { RoutingService, type RoutingDeps } from "../../../src/router/routing-service.ts";
import { portableBatchHasher } from "../../../src/core/block-hash.ts";

afterEach(() => setSystemTime());

test("two routing services built in the same millisecond never share a request id", () => {
  setSystemTime(new Date("2026-11-24T00:00:00Z"));
  const deps = { hasher: portableBatchHasher } as unknown as RoutingDeps;
  const a = new RoutingService(deps);
  const b = new RoutingService(deps);
  const idsA = new Set(Array.from({ length: 100 }, () => a.nextRequestId()));
  const idsB = Array.from({ length: 100 }, () => b.nextRequestId());
  expect(idsA.size).toBe(100);
  expect(idsB.filter((id) => idsA.has(id))).toEqual([]);
});
