/**
 * The flag reference page (docs/reference/flags.md) written from the options tables, so the page
 * says what `--help` says and cannot drift from it: one Markdown table per command, a row per
 * option with its flag and value, environment variables (where the command reads any), default,
 * runtimes (where the table has a runtime column) and help. Pure: text in, text out; the caller
 * writes the file (package.json `docs`), and a test compares the committed page with this text.
 *
 * @example
 * flagReference([{ command: "serve", intro: "…", options: SERVE_OPTION_LIST, env: envNames }]);
 */
import { defaultNote, type OptionDef, type TableOption } from "./option-table.ts";
import type { RuntimeOptionDef, Support } from "./runtimes.ts";

/** One command's part of the page. */
export interface ReferenceSection<D extends OptionDef = OptionDef> {
  /** The command as typed after `switchyard`. */
  readonly command: string;
  /** A paragraph before its table. */
  readonly intro: string;
  readonly options: readonly TableOption<D>[];
  /** The environment variables an option is read from, first found wins; absent: the command reads none. */
  readonly env?: (o: TableOption<D>) => readonly string[];
}

/** Characters Markdown would read as markup or as a table's column break. */
function cell(text: string): string {
  return text
    .replace(/\s*\n\s*/g, " ")
    .replace(/\\/g, "\\\\")
    .replace(/([|*_<>[\]`])/g, "\\$1")
    .trim();
}

function hasRuntimes(def: OptionDef): def is RuntimeOptionDef {
  return "runtimes" in def;
}

/** Where an option works, in a few words; elsewhere a value other than its default is refused by name. */
export function runtimesText(def: RuntimeOptionDef): string {
  const entries: readonly [string, Support][] = [
    ["Deno", def.runtimes.deno],
    ["workerd", def.runtimes.workerd],
  ];
  const full = entries.filter(([, s]) => s === true).map(([name]) => name);
  const some = entries.filter(([, s]) => typeof s === "function").map(([name]) => name);
  if (full.length === entries.length) return "all";
  const text = ["Bun", ...full].join(", ");
  return some.length === 0 ? text : `${text}; ${some.join(", ")}: some values`;
}

function valueOf(o: TableOption): string {
  return o.def.switch ? "" : (o.def.meta ?? (o.def.list ? "URL" : "X"));
}

function defaultOf(def: OptionDef): string {
  const note = defaultNote(def);
  return note === "" ? "" : note.slice("(default ".length, -1);
}

function sectionText<D extends OptionDef>(s: ReferenceSection<D>): string {
  const withRuntimes = s.options.some((o) => hasRuntimes(o.def));
  const head = [
    "flag",
    "value",
    ...(s.env ? ["env"] : []),
    "default",
    ...(withRuntimes ? ["runtimes"] : []),
    "what it does",
  ];
  const rows = s.options.map((o) => {
    const cols = [`\`${o.flag}\``, valueOf(o) === "" ? "switch" : cell(valueOf(o))];
    if (s.env)
      cols.push(
        s
          .env(o)
          .map((e) => `\`${e}\``)
          .join(", "),
      );
    cols.push(cell(defaultOf(o.def)));
    if (withRuntimes) cols.push(hasRuntimes(o.def) ? runtimesText(o.def) : "all");
    cols.push(cell(o.def.help));
    return `| ${cols.join(" | ")} |`;
  });
  return [
    `## switchyard ${s.command}`,
    "",
    s.intro,
    "",
    `| ${head.join(" | ")} |`,
    `|${head.map(() => "---").join("|")}|`,
    ...rows,
    "",
  ].join("\n");
}

/** The whole page, ending in one newline. */
export function flagReference(sections: readonly ReferenceSection<any>[]): string {
  return [
    "# Flag reference",
    "",
    "<!-- Written by `bun run docs` from the options tables (src/config/schema.ts, src/mocker/options.ts,",
    "     src/transfer/agent-options.ts). Do not edit: change the table and run it again. -->",
    "",
    "Every option of the three commands, as `--help` lists it. How options combine (flag > env >",
    "config file > default) and what the runtimes refuse: [running.md](../running.md#configure-it).",
    "",
    ...sections.map(sectionText),
  ].join("\n");
}
