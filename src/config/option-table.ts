/**
 * The options-table machinery of every command (`serve`, `mocker`, `transfer`): a program
 * declares each of its options ONCE, in a table (key -> value schema with its default, help
 * line, flag), and gets from that table its flag scan, its `--help` text, its defaults and
 * its validation, so a new option is one new row and nothing can drift apart. A table may
 * nest one level of groups (`{ group: {...} }`), so related settings reach their consumer as
 * one object under the names it uses. Pure: no process, file or environment access.
 *
 * @example
 * const TABLE = { port: { schema: v.optional(v.number(), 8080), help: "listen port" } };
 * const options = listOptions(TABLE); // [{ path: ["port"], flag: "--port", ... }]
 */
import * as v from "valibot";
import { scanFlags } from "./flag-scan.ts";
import { closestName } from "./closest-name.ts";

/** Any schema: one table mixes schemas of every input and output type. */
export type AnySchema = v.GenericSchema<any, any>;

/** One option as a table declares it. */
export interface OptionDef {
  /** Its value: a valibot schema, the default included (`v.optional(schema, default)`). */
  readonly schema: AnySchema;
  /** One line of help (continuation lines after "\n"). */
  readonly help: string;
  /** Its flag; by default `--` and the key in kebab case (with the group's prefix, if any). */
  readonly flag?: string;
  /** What the value looks like in `--help` (default X, or URL for lists). */
  readonly meta?: string;
  /** Repeatable flag: its values are collected into a list. */
  readonly list?: true;
  /** A switch: `--flag` alone means true; `--flag=false` (or `--flag false`) turns it off. */
  readonly switch?: true;
  /**
   * How `--help` shows the default: a text, for defaults the schema cannot hold (one derived
   * from another option, or a runtime's own); false when the help line already says it.
   * Without it the schema's default is shown, if it has one.
   */
  readonly defaultText?: string | false;
  /**
   * A default computed from the other options once they are parsed (the listen address
   * depends on whether an admin token is set); the value is then never undefined.
   */
  readonly fill?: (values: never) => unknown;
}

/** A group of options that reach their consumer as one object. */
export interface OptionGroup<T> {
  readonly group: T;
  /** Put before each member's flag: `outlier` makes `--outlier-base-ejection-time`. */
  readonly flagPrefix?: string;
}

export type TableEntry<D extends OptionDef> = D | OptionGroup<Readonly<Record<string, D>>>;
export type OptionTable<D extends OptionDef = OptionDef> = Readonly<Record<string, TableEntry<D>>>;

/** An option with where it sits in the table (its path: [key] or [group, key]) and its flag. */
export interface TableOption<D extends OptionDef = OptionDef> {
  readonly path: readonly string[];
  readonly flag: string;
  readonly def: D;
}

/** A table's value type: each option's schema output, groups as nested objects. */
export type TableValues<T> = {
  readonly [K in keyof T]: T[K] extends OptionGroup<infer G> ? TableValues<G> : OptionValue<T[K]>;
};

/** One option's value type: its schema's output, never undefined when a fill supplies the default. */
export type OptionValue<D> = D extends { readonly schema: infer S extends AnySchema }
  ? D extends { readonly fill: (values: never) => infer F }
    ? Exclude<v.InferOutput<S>, undefined> | F
    : v.InferOutput<S>
  : never;

export function kebab(camel: string): string {
  return camel.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

export function camel(kebabCase: string): string {
  return kebabCase.replace(/-([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

function isGroup<D extends OptionDef>(
  e: TableEntry<D>,
): e is OptionGroup<Readonly<Record<string, D>>> {
  return "group" in e;
}

/** Every option of a table, in table order, groups flattened. */
export function listOptions<D extends OptionDef>(table: OptionTable<D>): TableOption<D>[] {
  const out: TableOption<D>[] = [];
  for (const [key, entry] of Object.entries(table)) {
    if (!isGroup(entry)) {
      out.push({ path: [key], flag: entry.flag ?? `--${kebab(key)}`, def: entry });
      continue;
    }
    const prefix = entry.flagPrefix !== undefined ? `${entry.flagPrefix}-` : "";
    for (const [member, def] of Object.entries(entry.group)) {
      out.push({ path: [key, member], flag: def.flag ?? `--${prefix}${kebab(member)}`, def });
    }
  }
  return out;
}

export interface ScannedFlags<D extends OptionDef> {
  /** Each option given: its text, or its texts for a list, in command-line order. */
  readonly values: Map<TableOption<D>, string | string[]>;
  /** Flags the caller takes itself (`accept`), last value wins. */
  readonly other: Map<string, string>;
  /** Every problem, in order: stray arguments, missing values, unknown flags. */
  readonly problems: string[];
}

/** One command-line item, in order: an option with its text, a flag the caller takes itself, or a problem. */
export type OptionItem<D extends OptionDef> =
  | { readonly option: TableOption<D>; readonly text: string }
  | { readonly other: string; readonly text: string }
  | { readonly problem: string };

/** argv -> items in command-line order, through the one scanner (./flag-scan.ts); unknown flags are problems. */
export function scanOptionItems<D extends OptionDef>(
  options: readonly TableOption<D>[],
  argv: readonly string[],
  accept: readonly string[] = [],
): OptionItem<D>[] {
  const byFlag = new Map(options.map((o) => [o.flag, o]));
  return scanFlags(argv, (flag) => byFlag.get(flag)?.def.switch === true).map(
    (item): OptionItem<D> => {
      if ("problem" in item) return item;
      if (accept.includes(item.flag)) return { other: item.flag, text: item.value };
      const option = byFlag.get(item.flag);
      if (option !== undefined) return { option, text: item.value };
      // Compared without the dashes: every flag shares them, and they would loosen the typo bound.
      const near = closestName(
        item.flag.replace(/^-+/, ""),
        [...byFlag.keys(), ...accept].map((f) => f.replace(/^-+/, "")),
      );
      return {
        problem: `${item.flag}: unknown flag${near === undefined ? "" : `; did you mean --${near}?`}`,
      };
    },
  );
}

/** argv -> each option's text (a list's texts, in order), the caller's own flags, and every problem. */
export function scanOptions<D extends OptionDef>(
  options: readonly TableOption<D>[],
  argv: readonly string[],
  accept: readonly string[] = [],
): ScannedFlags<D> {
  const values = new Map<TableOption<D>, string | string[]>();
  const other = new Map<string, string>();
  const problems: string[] = [];
  for (const item of scanOptionItems(options, argv, accept)) {
    if ("problem" in item) problems.push(item.problem);
    else if ("other" in item) other.set(item.other, item.text);
    else if (item.option.def.list) {
      const prev = values.get(item.option);
      values.set(item.option, [...(Array.isArray(prev) ? prev : []), item.text]);
    } else values.set(item.option, item.text);
  }
  return { values, other, problems };
}

/** The default as `--help` shows it ("" when there is none to show). */
export function defaultNote(def: OptionDef): string {
  if (def.defaultText === false) return "";
  if (def.defaultText !== undefined) return `(default ${def.defaultText})`;
  const d: unknown = v.getDefault(def.schema);
  if (d === undefined || d === null || (Array.isArray(d) && d.length === 0)) return "";
  if (typeof d === "boolean" && def.switch) return `(default ${d ? "on" : "off"})`;
  return `(default ${String(d)})`;
}

/**
 * Help rows: `  --flag META   help (default X)`, the help column at `width` + 3; a help text
 * that ends in "\n" puts the default on a line of its own.
 */
export function usageRows(options: readonly TableOption[], width: number): string[] {
  const indent = " ".repeat(width + 3);
  return options.map((o) => {
    const shown = o.def.switch ? o.flag : `${o.flag} ${o.def.meta ?? (o.def.list ? "URL" : "X")}`;
    const note = defaultNote(o.def);
    const text = o.def.help.endsWith("\n")
      ? `${o.def.help}${note}`
      : note === ""
        ? o.def.help
        : `${o.def.help} ${note}`;
    return `  ${shown.padEnd(width)} ${text.split("\n").join(`\n${indent}`)}`;
  });
}

/** Parse one option's raw value (undefined: not given, so its default) with its schema. */
export function parseOption(
  def: OptionDef,
  raw: unknown,
): { ok: true; value: unknown } | { ok: false; message: string } {
  const r = v.safeParse(def.schema, raw, { abortPipeEarly: true });
  return r.success ? { ok: true, value: r.output } : { ok: false, message: r.issues[0].message };
}

/** Sets `value` at `path` in a nested record, creating the group object on the way. */
export function setAtPath(
  target: Record<string, unknown>,
  path: readonly string[],
  value: unknown,
): void {
  let at = target;
  for (const k of path.slice(0, -1)) at = (at[k] ??= {}) as Record<string, unknown>;
  at[path[path.length - 1]!] = value;
}

export function getAtPath(source: unknown, path: readonly string[]): unknown {
  let at = source;
  for (const k of path)
    at = at === undefined || at === null ? undefined : (at as Record<string, unknown>)[k];
  return at;
}
