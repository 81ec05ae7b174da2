import { describe, expect, test } from "bun:test";
import { parseArgs } from "node:util";
import { scanFlags } from "../../../src/config/flag-scan.ts";

const isSwitch = (f: string) => f === "--on";

describe("scanFlags", () => {
  test("values after a space or '=', in order", () => {
    expect(scanFlags(["--a", "1", "--b=x=y", "--a", "2"], isSwitch)).toEqual([
      { flag: "--a", value: "1" },
      { flag: "--b", value: "x=y" },
      { flag: "--a", value: "2" },
    ]);
  });

  test("a switch alone is true, an explicit true/false after it or after '=' is its value", () => {
    expect(
      scanFlags(["--on", "--on", "FALSE", "--on=false", "--on", "true", "--on"], isSwitch),
    ).toEqual([
      { flag: "--on", value: "true" },
      { flag: "--on", value: "false" },
      { flag: "--on", value: "false" },
      { flag: "--on", value: "true" },
      { flag: "--on", value: "true" },
    ]);
    // Anything else after a switch is not its value.
    expect(scanFlags(["--on", "x"], isSwitch)).toEqual([
      { flag: "--on", value: "true" },
      { problem: 'unexpected argument "x"' },
    ]);
  });

  test("every problem is reported, in order, and scanning goes on after each", () => {
    expect(scanFlags(["stray", "--a", "--b", "v", "--nope", "1", "--c"], isSwitch)).toEqual([
      { problem: 'unexpected argument "stray"' },
      { problem: "--a: needs a value" },
      { flag: "--b", value: "v" },
      // Unknown flags are the caller's to reject; their value goes with them.
      { flag: "--nope", value: "1" },
      { problem: "--c: needs a value" },
    ]);
  });
});

/** Why node:util's parseArgs is not used (src/config/flag-scan.ts): pinned so a change shows up here. */
describe("node:util parseArgs does not fit these rules", () => {
  const options = { port: { type: "string" }, seed: { type: "string" } } as const;

  test("strict mode stops at the first problem", () => {
    expect(() => parseArgs({ args: ["--nope", "--port"], options, strict: true })).toThrow();
  });

  test("loose mode takes a following flag as a value and leaves an unknown flag's value behind", () => {
    const { tokens } = parseArgs({
      args: ["--seed", "--port", "5", "--nope", "1"],
      options,
      strict: false,
      allowPositionals: true,
      tokens: true,
    });
    expect(tokens.find((t) => t.kind === "option" && t.name === "seed")).toMatchObject({
      value: "--port",
    });
    expect(
      tokens.filter((t) => t.kind === "positional").map((t) => (t as { value: string }).value),
    ).toEqual(["5", "1"]);
  });
});
