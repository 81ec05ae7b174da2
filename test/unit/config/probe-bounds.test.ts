/**
 * The options that bound what probing found (docs/chaos.md, "Found by probing"): defaults, the forms they
 * take, and bad values named.
 */
import { describe, expect, test } from "bun:test";
import { ConfigError, loadConfig } from "../../../src/config/load.ts";
import { thrownBy } from "../../support/errors.ts";

const problems = (argv: string[]) =>
  thrownBy(ConfigError, () => loadConfig({ argv, env: {} })).problems.join("\n");

describe("retries of engine answers", () => {
  test("defaults: 429, 500, 502, 503, 504 within a 20 % budget", () => {
    const c = loadConfig({ argv: [], env: {} });
    expect(c.retryOn).toEqual([429, 500, 502, 503, 504]);
    expect(c.retryBudget).toBe(20);
  });
  test("a comma list, repeated flags, the environment, none", () => {
    expect(
      loadConfig({ argv: ["--retry-on", "502,503", "--retry-on", "500"], env: {} }).retryOn,
    ).toEqual([502, 503, 500]);
    expect(loadConfig({ argv: [], env: { SWITCHYARD_RETRY_ON: "503, 504" } }).retryOn).toEqual([
      503, 504,
    ]);
    expect(loadConfig({ argv: ["--retry-on", "none"], env: {} }).retryOn).toEqual([]);
    expect(loadConfig({ argv: ["--retry-budget", "5"], env: {} }).retryBudget).toBe(5);
  });
  test("bad values are named", () => {
    expect(problems(["--retry-on", "200"])).toContain("--retry-on");
    expect(problems(["--retry-on", "5xx"])).toContain("--retry-on");
    expect(problems(["--retry-budget", "-1"])).toContain("--retry-budget");
  });
});

describe("prompt size", () => {
  test("default 1 Mi characters; flag and env; bad values named", () => {
    expect(loadConfig({ argv: [], env: {} }).maxPromptChars).toBe(1 << 20);
    expect(loadConfig({ argv: ["--max-prompt-chars", "5000"], env: {} }).maxPromptChars).toBe(5000);
    expect(
      loadConfig({ argv: [], env: { SWITCHYARD_MAX_PROMPT_CHARS: "70" } }).maxPromptChars,
    ).toBe(70);
    expect(problems(["--max-prompt-chars", "0"])).toContain("--max-prompt-chars");
  });
});

describe("worker limit", () => {
  test("default 1024; flag; bad values named", () => {
    expect(loadConfig({ argv: [], env: {} }).maxWorkers).toBe(1024);
    expect(loadConfig({ argv: ["--max-workers", "64"], env: {} }).maxWorkers).toBe(64);
    expect(problems(["--max-workers", "0"])).toContain("--max-workers");
  });
});
