import { describe, expect, test } from "bun:test";
import {
  formatTraceparent,
  parseTraceparent,
  validTracestate,
} from "../../../src/observe/trace-context.ts";

const TRACE = "0af7651916cd43dd8448eb211c80319c";
const SPAN = "b7ad6b7169203331";

describe("traceparent", () => {
  test("the spec's example parses, flags decide sampled, and formats back to itself", () => {
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-01`)).toEqual({
      traceId: TRACE,
      spanId: SPAN,
      sampled: true,
    });
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-00`)?.sampled).toBe(false);
    expect(formatTraceparent(TRACE, SPAN, true)).toBe(`00-${TRACE}-${SPAN}-01`);
  });

  test("a later version may carry more fields after a dash; version ff never parses", () => {
    expect(parseTraceparent(`01-${TRACE}-${SPAN}-01-extra`)?.traceId).toBe(TRACE);
    expect(parseTraceparent(`01-${TRACE}-${SPAN}-01x`)).toBeUndefined();
    expect(parseTraceparent(`ff-${TRACE}-${SPAN}-01`)).toBeUndefined();
  });

  test("malformed headers are refused (then a new trace starts)", () => {
    for (const h of [
      "",
      `00-${TRACE}-${SPAN}`,
      `00-${TRACE}-${SPAN}-01-extra`, // version 00 has exactly four fields
      `00-${TRACE.toUpperCase()}-${SPAN}-01`,
      `00-${"0".repeat(32)}-${SPAN}-01`,
      `00-${TRACE}-${"0".repeat(16)}-01`,
      `00_${TRACE}-${SPAN}-01`,
      `00-${TRACE}-${SPAN}-zz`,
      `0-${TRACE}-${SPAN}-01`,
      null,
    ]) {
      expect(parseTraceparent(h)).toBeUndefined();
    }
  });
});

describe("tracestate", () => {
  test("valid lists pass (blank members dropped), broken ones are refused", () => {
    expect(validTracestate("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7")).toBe(
      "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7",
    );
    expect(validTracestate("vendor@tenant=x , ,other=y")).toBe("vendor@tenant=x,other=y");
    expect(validTracestate("Upper=x")).toBeUndefined();
    expect(validTracestate("novalue")).toBeUndefined();
    expect(validTracestate("k=v\n")).toBe("k=v"); // trimmed around the list
    expect(validTracestate("k=a\nb")).toBeUndefined();
    expect(
      validTracestate(Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(",")),
    ).toBeUndefined();
    expect(validTracestate(`k=${"v".repeat(600)}`)).toBeUndefined();
  });
});
