/**
 * Flags, environment and an optional `--config` file (JSON, or YAML for .yaml/.yml) -> Config,
 * all read through serve's options table (schema.ts). Precedence: flag > env > file > default.
 * Every problem (unknown flag, unreadable file, bad value, a value this runtime cannot honour)
 * is collected and thrown as ONE ConfigError whose message lists them all, so a user fixes
 * everything in one go.
 *
 * @example
 * const config = loadConfig({ argv: ["--port", "9000", "--worker", "http://127.0.0.1:8001"], env: {} });
 */
import { isYamlPath, type YamlParse } from "../fleet/workers-file.ts";
import { closestName } from "./closest-name.ts";
import { describePosition, locateYamlError } from "./yaml-position.ts";
import {
  camel,
  getAtPath,
  parseOption,
  scanOptions,
  setAtPath,
  usageRows,
  type TableOption,
} from "./option-table.ts";
import { EVERYWHERE, limitsOn, refusal, RUNTIME_LABEL, type PortableRuntime } from "./runtimes.ts";
import {
  crossFieldProblems,
  derivedEnvName,
  envNames,
  finishConfig,
  SERVE_OPTION_LIST,
  type Config,
  type ServeOptionDef,
} from "./schema.ts";

export class ConfigError extends Error {
  override readonly name = "ConfigError";
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration:\n  - ${problems.join("\n  - ")}`);
  }
}

export interface LoadSources {
  /** Arguments after the command name (`serve`). */
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Reads the --config file; injected so tests need no disk. */
  readonly readFile?: (path: string) => string;
  /** Parses a .yaml/.yml --config file (Bun: Bun.YAML.parse); without it such a file is refused by name. */
  readonly parseYaml?: YamlParse;
  /** The runtime that will run the router: Deno and workerd refuse what they cannot honour (default bun). */
  readonly runtime?: "bun" | PortableRuntime;
}

type Option = TableOption<ServeOptionDef>;

/** The variable that names the --config file when the flag does not. */
export const CONFIG_ENV = "SWITCHYARD_CONFIG";

/**
 * `SWITCHYARD_*` variables that are no option but are read by other parts: the native
 * library's and libzmq's locations (src/transfer/native/library.ts, the ZMQ loader).
 */
const OTHER_ENV = [CONFIG_ENV, "SWITCHYARD_FFI_LIB", "SWITCHYARD_LIBZMQ"];

/** Where each problem came from, so the message names the field as the user wrote it. */
function label(o: Option): string {
  return `${o.flag} (${envNames(o).join(" / ")})`;
}

/**
 * A --config file's field names for each option: the flag without dashes (`block-size` or
 * `blockSize`), and for options outside a group their key too (the plural of a repeatable
 * flag: `workers`, `tokenizers`, `zmq-endpoints`).
 */
const BY_FILE_FIELD: ReadonlyMap<string, Option> = new Map(
  SERVE_OPTION_LIST.flatMap((o) => {
    const names = [camel(o.flag.slice(2))];
    if (o.path.length === 1) names.push(o.path[0]!);
    return names.map((n) => [n, o] as const);
  }),
);

/** A config file is a page of settings; a file this large is a mistake (a log, a model), not one. */
export const MAX_CONFIG_CHARS = 1024 * 1024;

function readConfigFile(path: string, src: LoadSources, problems: string[]): Map<Option, unknown> {
  const out = new Map<Option, unknown>();
  let text: string;
  try {
    text = (src.readFile ?? defaultReadFile)(path);
  } catch (e) {
    problems.push(`--config ${path}: cannot read (${(e as Error).message})`);
    return out;
  }
  if (text.length > MAX_CONFIG_CHARS) {
    problems.push(
      `--config ${path}: ${text.length} characters, more than a config file may have (${MAX_CONFIG_CHARS}); is it the right file?`,
    );
    return out;
  }
  const yaml = isYamlPath(path);
  if (yaml && src.parseYaml === undefined) {
    problems.push(`--config ${path}: YAML cannot be read on this runtime; give the file as JSON`);
    return out;
  }
  let doc: unknown;
  try {
    doc = yaml ? src.parseYaml!(text) : JSON.parse(text);
  } catch (e) {
    const where = yaml ? describePosition(locateYamlError(text, src.parseYaml!)) : "";
    problems.push(
      `--config ${path}: not valid ${yaml ? "YAML" : "JSON"}${where}: ${(e as Error).message}`,
    );
    return out;
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) {
    problems.push(
      `--config ${path}: must hold ${yaml ? "a YAML mapping" : "a JSON object"} of option names to values`,
    );
    return out;
  }
  for (const [field, value] of Object.entries(doc)) {
    const o = BY_FILE_FIELD.get(camel(field));
    if (o === undefined)
      problems.push(`--config ${path}: unknown field "${field}"${fieldSuggestion(field)}`);
    else out.set(o, value);
  }
  return out;
}

/** "; did you mean ..." with the closest known field, spelled as the file spells its keys (kebab or camel case). */
function fieldSuggestion(field: string): string {
  const near = closestName(camel(field), BY_FILE_FIELD.keys());
  if (near === undefined) return "";
  const o = BY_FILE_FIELD.get(near)!;
  return `; did you mean "${/[A-Z]/.test(field) ? near : o.flag.slice(2)}"?`;
}

/** Options whose value is a credential (or holds one, as a Redis URL's password): never echoed in an error. */
const SECRET_FLAGS: ReadonlySet<string> = new Set(["--admin-token", "--events-token", "--redis"]);

/** Parse and validate; throws ConfigError listing every problem. */
export function loadConfig(src: LoadSources): Config {
  const flags = scanOptions(SERVE_OPTION_LIST, src.argv, ["--config"]);
  const problems = [...flags.problems];
  const configPath = flags.other.get("--config") ?? src.env[CONFIG_ENV];
  const fromFile = configPath
    ? readConfigFile(configPath, src, problems)
    : new Map<Option, unknown>();
  const runtime = src.runtime ?? "bun";
  const values: Record<string, unknown> = {};
  for (const o of SERVE_OPTION_LIST) {
    const fromEnv = envNames(o)
      .map((name) => src.env[name])
      .find((x) => x !== undefined && x !== "");
    const raw = flags.values.get(o) ?? fromEnv ?? fromFile.get(o);
    const parsed = parseOption(o.def, raw);
    if (!parsed.ok) {
      const shown =
        raw === undefined
          ? ""
          : SECRET_FLAGS.has(o.flag)
            ? " (the value is not shown: it is a secret)"
            : ` (got ${JSON.stringify(raw)})`;
      problems.push(`${label(o)}: ${parsed.message}${shown}`);
      continue;
    }
    const refused = runtime === "bun" ? undefined : refusal(o, parsed.value, runtime);
    if (refused !== undefined) problems.push(refused);
    setAtPath(values, o.path, parsed.value);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  // Defaults that follow from other options (the listen address from the admin token).
  for (const o of SERVE_OPTION_LIST) {
    if (o.def.fill !== undefined && getAtPath(values, o.path) === undefined)
      setAtPath(values, o.path, (o.def.fill as (c: unknown) => unknown)(values));
  }
  const config = finishConfig(values as Config);
  const more = crossFieldProblems(config);
  if (more.length > 0) throw new ConfigError(more);
  return config;
}

function defaultReadFile(path: string): string {
  // Lazy import keeps this module free of node:* at load time (edge runtimes have no fs).
  const fs = require("node:fs") as typeof import("node:fs");
  return fs.readFileSync(path, "utf8");
}

/**
 * One warning per `SWITCHYARD_*` variable that no option reads (a typo would otherwise be
 * silently ignored), naming the closest known variable when one is close.
 */
export function unknownEnvWarnings(env: Readonly<Record<string, string | undefined>>): string[] {
  const PREFIX = "SWITCHYARD_";
  const known = new Set(
    [...SERVE_OPTION_LIST.flatMap(envNames), ...OTHER_ENV]
      .filter((n) => n.startsWith(PREFIX))
      .map((n) => n.slice(PREFIX.length)),
  );
  const out: string[] = [];
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith(PREFIX) || known.has(name.slice(PREFIX.length))) continue;
    const near = closestName(name.slice(PREFIX.length), known);
    out.push(
      `environment variable ${name} is not a switchyard setting and is ignored${near === undefined ? "" : ` (did you mean ${PREFIX}${near}?)`}`,
    );
  }
  return out;
}

/** Help text for `switchyard serve --help`, built from the option table; on Deno and workerd it says what they limit. */
export function serveUsage(runtime: "bun" | PortableRuntime = "bun"): string {
  // The environment variable is named only where it is not the flag's own upper-case name.
  const shown = SERVE_OPTION_LIST.map((o) => {
    const env = envNames(o);
    return env.length === 1 && env[0] === derivedEnvName(o.flag)
      ? o
      : { ...o, def: { ...o.def, help: `${o.def.help} [env ${env.join(", ")}]` } };
  });
  const meta = (flag: string, metaText: string | undefined, help: string): Option => ({
    path: [flag],
    flag,
    def: {
      schema: undefined as never,
      meta: metaText,
      switch: metaText === undefined ? true : undefined,
      help,
      defaultText: false,
      runtimes: EVERYWHERE,
    },
  });
  const lines = [
    "usage: switchyard serve [flags]",
    "",
    "Every flag can also be set as SWITCHYARD_<FLAG> in the environment (--block-size: SWITCHYARD_BLOCK_SIZE)",
    "or as a field of the --config file (block-size or blockSize). Precedence: flag > env > file > default.",
    "",
    ...usageRows(
      [
        ...shown,
        meta(
          "--config",
          "FILE",
          `options as a JSON object, or YAML for .yaml/.yml [env ${CONFIG_ENV}]`,
        ),
        meta(
          "--version",
          undefined,
          "print the version, the commit it was built from and the runtime, and exit",
        ),
      ],
      USAGE_WIDTH,
    ),
  ];
  if (runtime !== "bun") {
    const { atDefault, someValues } = limitsOn(SERVE_OPTION_LIST, runtime);
    lines.push(
      "",
      `On ${RUNTIME_LABEL[runtime]} these are refused unless left at their default: ${atDefault.join(", ")}.`,
      `These take some values only: ${someValues.join(", ")}.`,
    );
  }
  return lines.join("\n");
}

/** The flag column of serve's --help: the longest flag with its value. */
const USAGE_WIDTH = 36;
