/**
 * The runtime column of `switchyard serve`'s options table: where each option works. Bun runs
 * everything; Deno and workerd run the same router through src/runtime/portable.ts, without
 * Bun's pieces (FFI, ZMQ, RESP Redis, embedded engines, the workers-file watch, Worker pools).
 * An option those runtimes lack is refused there by name, but only for a value other than its
 * default: one configuration (`--engines 0`, a shared config file) then starts on every
 * runtime, and only a setting that would be silently ignored stops the start. Pure.
 */
import { parseOption, type OptionDef, type TableOption } from "./option-table.ts";

/** The runtimes that take only part of the options. */
export type PortableRuntime = "deno" | "workerd";

/** How the runtimes are named in messages. */
export const RUNTIME_LABEL: Readonly<Record<PortableRuntime, string>> = {
  deno: "Deno",
  workerd: "workerd",
};

/**
 * One runtime's support of an option: `true` (as on Bun); a reason (any value but the
 * default is refused, for this reason); or a check of the value that returns the whole
 * refusal, after the flag, when that value cannot work there.
 */
export type Support = true | string | ((value: unknown, runtime: string) => string | undefined);

export interface Runtimes {
  readonly deno: Support;
  readonly workerd: Support;
}

export const EVERYWHERE: Runtimes = { deno: true, workerd: true };

/** Works on Bun only: refused elsewhere unless left at its default. */
export const bunOnly = (why: string): Runtimes => ({ deno: why, workerd: why });

/** Works on Bun and Deno, not on workerd. */
export const notOnWorkerd = (why: string): Runtimes => ({ deno: true, workerd: why });

/** The same check of the value on Deno and workerd. */
export const valueCheck = (
  check: (value: unknown, runtime: string) => string | undefined,
): Runtimes => ({ deno: check, workerd: check });

/** An option of a table with a runtime column. */
export interface RuntimeOptionDef extends OptionDef {
  readonly runtimes: Runtimes;
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The refusal of this option's parsed value on `runtime`, or undefined when it works there. */
export function refusal(
  o: TableOption<RuntimeOptionDef>,
  value: unknown,
  runtime: PortableRuntime,
): string | undefined {
  const support = o.def.runtimes[runtime];
  if (support === true) return undefined;
  const label = RUNTIME_LABEL[runtime];
  if (typeof support === "function") {
    const why = support(value, label);
    return why === undefined ? undefined : `${o.flag}: ${why}`;
  }
  const dflt = parseOption(o.def, undefined);
  if (dflt.ok && same(value, dflt.value)) return undefined;
  return `${o.flag}: not available on ${label} (${support})`;
}

/** What a runtime limits, for its --help: flags it takes only at their default, flags it takes with some values only. */
export function limitsOn(
  options: readonly TableOption<RuntimeOptionDef>[],
  runtime: PortableRuntime,
): { atDefault: string[]; someValues: string[] } {
  const limited = options.filter((o) => o.def.runtimes[runtime] !== true);
  return {
    atDefault: limited
      .filter((o) => typeof o.def.runtimes[runtime] === "string")
      .map((o) => o.flag),
    someValues: limited
      .filter((o) => typeof o.def.runtimes[runtime] === "function")
      .map((o) => o.flag),
  };
}
