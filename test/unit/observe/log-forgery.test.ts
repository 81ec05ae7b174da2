/**
 * A logged value cannot forge a line: every control character (C0, DEL, C1, U+2028/2029) in a
 * message or a field value, in either format and in the workerd entry's plain logger, leaves
 * exactly one line per call and no raw control byte; long values are cut with "... (N bytes)".
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { createFormattedLogger, jsonLine, textLine } from "../../../src/observe/logger.ts";
import { createLogger } from "../../../src/observe/logger.ts";
import { LOG_VALUE_MAX_CHARS, capLogValue, textLogValue } from "../../../src/core/log-value.ts";

const CONTROLS: string[] = [];
for (let c = 0; c <= 0x1f; c++) CONTROLS.push(String.fromCharCode(c));
for (let c = 0x7f; c <= 0x9f; c++) CONTROLS.push(String.fromCharCode(c));
CONTROLS.push("\u2028", "\u2029");

/** Anything a terminal or a line-splitting shipper would act on. */
const RAW_CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

const FORGED = "x\n2030-01-01T00:00:00.000Z INFO FORGED-LINE user=root\u001b[31m\r";

/** Strings made mostly of control characters, with some printable text between them. */
const hostile = fc
  .array(fc.oneof(fc.constantFrom(...CONTROLS), fc.string({ maxLength: 4 })), { maxLength: 24 })
  .map((a) => a.join(""));

describe("logs that cannot be forged", () => {
  test("fuzz: every control character in a message or a value, both formats: one line per call, no raw control", () => {
    fc.assert(
      fc.property(
        hostile,
        hostile,
        fc.constantFrom<"text" | "json">("text", "json"),
        (msg, value, format) => {
          const lines: string[] = [];
          const log = createFormattedLogger({
            level: "debug",
            format,
            write: (l) => lines.push(l),
            clock: () => 0,
          });
          log.warn(msg, { model: value, list: [value], err: new Error(value) });
          expect(lines).toHaveLength(1);
          expect(lines[0]!.split(/\r\n|\r|\n|\u2028|\u2029/)).toHaveLength(1);
          expect(RAW_CONTROL.test(lines[0]!)).toBe(false);
          if (format === "json") expect(JSON.parse(lines[0]!).model).toBe(value);
        },
      ),
      { seed: 48_3, numRuns: 2_000 },
    );
  });

  test("each control character alone, in every position a line has", () => {
    for (const c of CONTROLS) {
      for (const line of [
        textLine("T", "info", `m${c}`, { v: `a${c}b` }),
        jsonLine("T", "info", `m${c}`, { v: `a${c}b` }),
      ]) {
        expect(line.split(/\r\n|\r|\n|\u2028|\u2029/)).toHaveLength(1);
      }
      expect(RAW_CONTROL.test(textLine("T", "info", `m${c}`, { v: `a${c}b` }))).toBe(false);
      expect(RAW_CONTROL.test(jsonLine("T", "info", `m${c}`, { v: `a${c}b` }))).toBe(false);
      const plain: string[] = [];
      createLogger("debug", (l) => plain.push(l)).info(`m${c}`, { v: `a${c}b` });
      expect(RAW_CONTROL.test(plain[0]!)).toBe(false);
    }
  });

  test("the probe's model name is one quoted, escaped value, not a second line", () => {
    const line = textLine("T", "info", "request", { model: FORGED, status: 200 });
    expect(line).toBe(
      'T INFO  request model="x\\n2030-01-01T00:00:00.000Z INFO FORGED-LINE user=root\\u001b[31m\\r" status=200',
    );
  });

  test("plain printable values stay as they are; a value that begins with a quote or is empty is quoted", () => {
    expect(textLogValue("Qwen/Qwen3-0.6B")).toBe("Qwen/Qwen3-0.6B");
    expect(textLogValue("")).toBe('""');
    expect(textLogValue('"a" b')).toBe('"\\"a\\" b"');
  });

  test("a 1 MB value is cut to the documented length and says how long it was, in both formats", () => {
    const big = "é".repeat(500_000); // 1,000,000 UTF-8 bytes
    const capped = capLogValue(big);
    expect(capped).toBe(`${"é".repeat(LOG_VALUE_MAX_CHARS)}... (1000000 bytes)`);
    expect(textLine("T", "info", "request", { model: big }).length).toBeLessThan(
      LOG_VALUE_MAX_CHARS + 100,
    );
    const json = jsonLine("T", "info", big, { model: big });
    expect(json.length).toBeLessThan(2 * LOG_VALUE_MAX_CHARS + 200);
    expect(JSON.parse(json).model).toEndWith("... (1000000 bytes)");
    // A surrogate pair is never split at the cut.
    const emoji = capLogValue(`${"a".repeat(LOG_VALUE_MAX_CHARS - 1)}😀😀`);
    expect(emoji).toStartWith(`${"a".repeat(LOG_VALUE_MAX_CHARS - 1)}... (`);
  });
});
