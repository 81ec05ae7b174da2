import { describe, expect, test } from "bun:test";
import { createFormattedLogger, jsonLine, textLine } from "../../../src/observe/logger.ts";

describe("the log's two formats", () => {
  test("json: one object per line with time, level, msg first; u64 ids as strings; undefined left out, null kept", () => {
    const line = jsonLine("2026-01-01T00:00:00.000Z", "info", "request", {
      worker: 18446744073709551615n,
      error: null,
      skip: undefined,
      n: 3,
      list: ["a"],
    });
    expect(line).not.toContain("\n");
    const o = JSON.parse(line);
    expect(Object.keys(o).slice(0, 3)).toEqual(["time", "level", "msg"]);
    expect(o).toEqual({
      time: "2026-01-01T00:00:00.000Z",
      level: "info",
      msg: "request",
      worker: "18446744073709551615",
      error: null,
      n: 3,
      list: ["a"],
    });
  });

  test("json escapes what would break a line (a message with a newline stays one line)", () => {
    const line = jsonLine("t", "warn", 'a "quoted"\nmessage', { reason: "x\ny" });
    expect(line.split("\n")).toHaveLength(1);
    expect(JSON.parse(line).msg).toBe('a "quoted"\nmessage');
  });

  test("text: key=value without the null fields", () => {
    expect(
      textLine("T", "warn", "upstream failure", {
        request_id: "r1",
        worker: 7n,
        error: null,
        retries: ["a b"],
      }),
    ).toBe('T WARN  upstream failure request_id=r1 worker=7 retries=["a b"]');
  });

  test("the level filters, the clock and the writer are the caller's", () => {
    const lines: string[] = [];
    const log = createFormattedLogger({
      level: "warn",
      format: "json",
      write: (l) => lines.push(l),
      clock: () => Date.UTC(2026, 0, 2),
    });
    log.info("hidden");
    log.warn("shown", { a: 1 });
    log.error("also");
    expect(lines.map((l) => JSON.parse(l).msg)).toEqual(["shown", "also"]);
    expect(JSON.parse(lines[0]!).time).toBe("2026-01-02T00:00:00.000Z");
  });
});
