import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { flagReference, runtimesText } from "../../../src/config/flag-reference.ts";
import { listOptions } from "../../../src/config/option-table.ts";
import { bunOnly, EVERYWHERE, notOnWorkerd, valueCheck } from "../../../src/config/runtimes.ts";

const TABLE = {
  port: {
    schema: v.optional(v.number(), 8080),
    help: "listen port",
    meta: "N",
    runtimes: EVERYWHERE,
  },
  evict: {
    schema: v.optional(v.boolean(), false),
    help: "a switch",
    switch: true as const,
    runtimes: bunOnly("why"),
  },
  allow: {
    schema: v.optional(v.array(v.string()), []),
    help: "names | patterns, `*` = any\nrepeatable",
    list: true as const,
    runtimes: notOnWorkerd("why"),
  },
};

describe("flagReference", () => {
  const page = flagReference([
    {
      command: "serve",
      intro: "The router.",
      options: listOptions(TABLE),
      env: (o) => [`SWITCHYARD_${o.flag.slice(2).toUpperCase()}`],
    },
  ]);

  test("a row per option: flag, value, env, default, runtimes, help", () => {
    expect(page).toContain("| flag | value | env | default | runtimes | what it does |");
    expect(page).toContain("| `--port` | N | `SWITCHYARD_PORT` | 8080 | all | listen port |");
    expect(page).toContain("| `--evict` | switch | `SWITCHYARD_EVICT` | off | Bun | a switch |");
  });

  test("help text is one cell: markup and column breaks escaped, continuation lines joined", () => {
    expect(page).toContain(
      "| `--allow` | URL | `SWITCHYARD_ALLOW` |  | Bun, Deno | names \\| patterns, \\`\\*\\` = any repeatable |",
    );
  });

  test("no env column for a command that reads none", () => {
    const mocker = flagReference([
      {
        command: "mocker",
        intro: "",
        options: listOptions({ port: { schema: v.optional(v.number(), 0), help: "p" } }),
      },
    ]);
    expect(mocker).toContain("| flag | value | default | what it does |");
    expect(mocker).toContain("| `--port` | X | 0 | p |");
  });

  test("runtimes: all, Bun only, some values elsewhere", () => {
    expect(runtimesText({ ...TABLE.port, runtimes: EVERYWHERE })).toBe("all");
    expect(runtimesText({ ...TABLE.port, runtimes: bunOnly("x") })).toBe("Bun");
    expect(runtimesText({ ...TABLE.port, runtimes: notOnWorkerd("x") })).toBe("Bun, Deno");
    expect(runtimesText({ ...TABLE.port, runtimes: valueCheck(() => undefined) })).toBe(
      "Bun; Deno, workerd: some values",
    );
  });
});
