/**
 * Request ids carry the router's identity (core/ids.ts RouterId), so ids from different
 * routers never meet, even for routers started in the same millisecond (the time plays no
 * part), and a router's ids say which router made them.
 */
import { afterEach, expect, setSystemTime, test } from "bun:test";
import { routerIdHex } from "../../../src/core/ids.ts";
import { RoutingService, type RoutingDeps } from "../../../src/router/routing-service.ts";
import { portableBatchHasher } from "../../../src/core/block-hash.ts";

afterEach(() => setSystemTime());

const service = (routerId: bigint) =>
  new RoutingService({ hasher: portableBatchHasher, routerId } as unknown as RoutingDeps);

test("two routers built in the same millisecond never share a request id", () => {
  setSystemTime(new Date("2026-11-24T00:00:00Z"));
  const a = service(0x1234n);
  const b = service(0x1235n);
  const idsA = new Set(Array.from({ length: 100 }, () => a.nextRequestId()));
  const idsB = Array.from({ length: 100 }, () => b.nextRequestId());
  expect(idsA.size).toBe(100);
  expect(idsB.filter((id) => idsA.has(id))).toEqual([]);
});

test("a request id is the router id in hex, then a per-router counter", () => {
  const s = service(0xfedcba9876543210n);
  expect(s.nextRequestId()).toBe("fedcba9876543210-0");
  expect(s.nextRequestId()).toBe("fedcba9876543210-1");
  expect(service(1n).nextRequestId()).toBe(`${routerIdHex(1n)}-0`);
  expect(routerIdHex(1n)).toBe("0000000000000001");
});
