/**
 * The options tables are the one place an option is declared: every row of serve's table has
 * help, a type (a valibot schema) and a runtime column; the Config type has exactly the
 * table's keys (checked by tsc below and at run time); flags and environment variables are
 * unique; --help lists every flag; the scheduler group is the router's SchedulerConfig under
 * its own names. The mocker's and the transfer agent's tables list every flag in their help.
 */
import { describe, expect, test } from "bun:test";
import { loadConfig, serveUsage } from "../../../src/config/load.ts";
import { listOptions, type OptionDef } from "../../../src/config/option-table.ts";
import {
  envNames,
  SERVE_OPTION_LIST,
  SERVE_OPTIONS,
  type Config,
} from "../../../src/config/schema.ts";
import type { TokenizerSpec } from "../../../src/config/tokenizers.ts";
import { MOCKER_OPTIONS, MOCKER_USAGE } from "../../../src/mocker/options.ts";
import type { SchedulerConfig } from "../../../src/router/choose/config.ts";
import { TRANSFER_AGENT_USAGE, TRANSFER_OPTIONS } from "../../../src/transfer/agent-options.ts";

/** True only when A and B are the same type (tsc checks the `true` assignments below). */
type Equal<A, B> =
  (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

// Compile-time: the Config type is the table's keys and value types, never a second list.
const configKeys: Equal<keyof Config, keyof typeof SERVE_OPTIONS> = true;
const schedulerKeys: Equal<
  keyof Config["scheduler"],
  keyof (typeof SERVE_OPTIONS)["scheduler"]["group"]
> = true;
const outlierKeys: Equal<
  keyof Config["outlier"],
  keyof (typeof SERVE_OPTIONS)["outlier"]["group"]
> = true;
// The scheduler group carries SchedulerConfig's own names (blockSize is shared, the shared-cache multiplier is not a flag).
const schedulerNames: Equal<
  keyof Config["scheduler"],
  Exclude<keyof SchedulerConfig, "blockSize" | "sharedCacheMultiplier">
> = true;
// A few value types the rest of the router relies on.
const valueTypes: [
  Equal<Config["port"], number>,
  Equal<Config["host"], string>,
  Equal<Config["adminToken"], string | undefined>,
  Equal<Config["scheduler"]["loadGuardFactor"], number | null>,
  Equal<Config["tokenizerWorkers"], number | null>,
  Equal<Config["tokenizers"], TokenizerSpec[]>,
  Equal<Config["disagg"], "off" | "vllm" | "sglang">,
] = [true, true, true, true, true, true, true];

describe("serve's options table", () => {
  test("the compile-time checks above hold (tsc fails on a drift; this keeps them referenced)", () => {
    expect(
      [configKeys, schedulerKeys, outlierKeys, schedulerNames, ...valueTypes].every((x) => x),
    ).toBe(true);
  });

  test("every option has help, a type (a valibot schema) and a runtime column for Deno and workerd", () => {
    expect(SERVE_OPTION_LIST.length).toBeGreaterThan(60);
    for (const o of SERVE_OPTION_LIST) {
      const where = o.flag;
      expect({ where, help: o.def.help.trim().length > 10 }).toEqual({ where, help: true });
      expect({ where, kind: o.def.schema.kind }).toEqual({ where, kind: "schema" });
      for (const rt of ["deno", "workerd"] as const) {
        const s = o.def.runtimes[rt];
        expect({
          where,
          rt,
          ok: s === true || (typeof s === "string" && s.length > 0) || typeof s === "function",
        }).toEqual({ where, rt, ok: true });
      }
    }
  });

  test("the loaded Config has exactly the table's keys, groups included", () => {
    const c = loadConfig({ argv: [], env: {} });
    expect(Object.keys(c).sort()).toEqual(Object.keys(SERVE_OPTIONS).sort());
    expect(Object.keys(c.scheduler).sort()).toEqual(
      Object.keys(SERVE_OPTIONS.scheduler.group).sort(),
    );
    expect(Object.keys(c.outlier).sort()).toEqual(Object.keys(SERVE_OPTIONS.outlier.group).sort());
  });

  test("flags and environment variables are unique; each flag is derived from its key unless the row names it", () => {
    const flags = SERVE_OPTION_LIST.map((o) => o.flag);
    expect(new Set(flags).size).toBe(flags.length);
    const env = SERVE_OPTION_LIST.flatMap(envNames);
    expect(new Set(env).size).toBe(env.length);
    expect(SERVE_OPTION_LIST.find((o) => o.path.join(".") === "blockSize")?.flag).toBe(
      "--block-size",
    );
    expect(
      SERVE_OPTION_LIST.find((o) => o.path.join(".") === "outlier.baseEjectionTime")?.flag,
    ).toBe("--outlier-base-ejection-time");
    expect(
      SERVE_OPTION_LIST.find((o) => o.path.join(".") === "scheduler.prefillWaitQueueShare")?.flag,
    ).toBe("--prefill-wait-slack");
  });

  test("--help lists every flag with its default", () => {
    const help = serveUsage();
    for (const o of SERVE_OPTION_LIST) expect(help).toContain(`  ${o.flag}`);
    expect(help).toContain("--block-size N");
    expect(help).toMatch(
      /--block-size N +KV block size in tokens; must match the engines \(default 16\)/,
    );
    expect(help).toContain("--config FILE");
    expect(help).toContain("--version");
  });

  test("on Deno and workerd --help names what they refuse", () => {
    expect(serveUsage("deno")).toMatch(
      /On Deno these are refused unless left at their default: .*--engines/,
    );
    expect(serveUsage("deno")).not.toMatch(
      /On Deno these are refused unless left at their default: .*--tokenizer,/,
    );
    expect(serveUsage("workerd")).toMatch(
      /On workerd these are refused unless left at their default: --tokenizer,/,
    );
    expect(serveUsage()).not.toContain("refused");
  });
});

describe("the mocker's and the transfer agent's tables", () => {
  test("every option is in its command's help, once", () => {
    const rows = (usage: string, flag: string) =>
      usage.split("\n").filter((l) => l.startsWith(`  ${flag} `));
    for (const o of listOptions<OptionDef>(MOCKER_OPTIONS))
      expect(rows(MOCKER_USAGE, o.flag)).toHaveLength(1);
    for (const o of listOptions<OptionDef>(TRANSFER_OPTIONS))
      expect(rows(TRANSFER_AGENT_USAGE, o.flag)).toHaveLength(1);
    expect(MOCKER_USAGE).toContain(
      "  --port N                 listen port, 0 = a free one (default 0)",
    );
    expect(MOCKER_USAGE).toContain(
      "  --router-url URL[,URL]   push KV events to URL/v1/kv/events (repeatable: every router\n                           gets every event, each through its own queue)",
    );
    expect(TRANSFER_AGENT_USAGE).toContain(
      "  --max-batch-size N       pairs per batch (default $DYN_KVBM_MAX_TRANSFER_BATCH_SIZE or 16)",
    );
  });
});
