/**
 * Flags, environment and an optional JSON file -> Config. Precedence: flag > env > file >
 * default. Every problem (unknown flag, unreadable file, bad value) is collected and thrown
 * as ONE ConfigError whose message lists them all, so a user fixes everything in one go.
 *
 * @example
 * const config = loadConfig({ argv: ["--port", "9000", "--worker", "http://127.0.0.1:8001"], env: {} });
 */
import * as v from "valibot";
import { scanFlags } from "./flag-scan.ts";
import { ConfigSchema, crossFieldProblems, finishConfig, OPTIONS, type Config, type OptionSpec } from "./schema.ts";

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
}

const BY_FLAG = new Map(OPTIONS.map((o) => [o.flag, o]));
const BY_KEY = new Map(OPTIONS.map((o) => [o.key as string, o]));

/** Where each problem came from, so the message names the field as the user wrote it. */
function label(o: OptionSpec): string {
  return `${o.flag} (${o.env.join(" / ")})`;
}

/** Config-file names of the repeatable options. */
const PLURALS: Readonly<Record<string, string>> = {
  workers: "worker",
  tokenizers: "tokenizer",
  zmqEndpoints: "zmqEndpoint",
  zmqReplayEndpoints: "zmqReplayEndpoint",
};

function kebabToCamel(s: string): string {
  return s.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());
}

interface ParsedFlags {
  values: Map<OptionSpec, string | string[]>;
  configPath: string | undefined;
  problems: string[];
}

function parseFlags(argv: readonly string[]): ParsedFlags {
  const values = new Map<OptionSpec, string | string[]>();
  const problems: string[] = [];
  let configPath: string | undefined;
  for (const item of scanFlags(argv, (flag) => BY_FLAG.get(flag)?.boolean === true)) {
    if ("problem" in item) {
      problems.push(item.problem);
      continue;
    }
    const { flag: name, value } = item;
    if (name === "--config") {
      configPath = value;
      continue;
    }
    const opt = BY_FLAG.get(name);
    if (!opt) {
      problems.push(`${name}: unknown flag`);
      continue;
    }
    if (opt.list) {
      const prev = values.get(opt);
      values.set(opt, [...(Array.isArray(prev) ? prev : []), value]);
    } else {
      values.set(opt, value);
    }
  }
  return { values, configPath, problems };
}

function readConfigFile(path: string, readFile: (p: string) => string, problems: string[]): Record<string, unknown> {
  let text: string;
  try {
    text = readFile(path);
  } catch (e) {
    problems.push(`--config ${path}: cannot read (${(e as Error).message})`);
    return {};
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    problems.push(`--config ${path}: not valid JSON (${(e as Error).message})`);
    return {};
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    problems.push(`--config ${path}: must hold a JSON object`);
    return {};
  }
  const out: Record<string, unknown> = {};
  for (const [k, val] of Object.entries(json)) {
    // Accept "block-size", "blockSize" and, for lists, the plural ("workers", "zmq-endpoints").
    const camel = kebabToCamel(k);
    const key = PLURALS[camel] ?? camel;
    if (!BY_KEY.has(key)) problems.push(`--config ${path}: unknown field "${k}"`);
    else out[key] = val;
  }
  return out;
}

/** Parse and validate; throws ConfigError listing every problem. */
export function loadConfig(src: LoadSources): Config {
  const flags = parseFlags(src.argv);
  const problems = [...flags.problems];
  const configPath = flags.configPath ?? src.env.SWITCHYARD_CONFIG;
  const raw: Record<string, unknown> = configPath
    ? readConfigFile(configPath, src.readFile ?? defaultReadFile, problems)
    : {};
  for (const opt of OPTIONS) {
    const fromEnv = opt.env.map((name) => src.env[name]).find((x) => x !== undefined && x !== "");
    if (fromEnv !== undefined) raw[opt.key] = fromEnv;
    const fromFlag = flags.values.get(opt);
    if (fromFlag !== undefined) raw[opt.key] = fromFlag;
  }
  const result = v.safeParse(ConfigSchema, raw, { abortPipeEarly: true });
  if (!result.success) {
    for (const issue of result.issues) {
      const key = String(issue.path?.[0]?.key ?? "");
      const opt = BY_KEY.get(key);
      const shown = issue.input === undefined ? "" : ` (got ${JSON.stringify(issue.input)})`;
      problems.push(`${opt ? label(opt) : key}: ${issue.message}${shown}`);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  const output = result.output as v.InferOutput<typeof ConfigSchema>;
  const config = finishConfig(output);
  const more = crossFieldProblems(config, output.zmqReplayEndpoint, output.zmqDpRanks);
  if (more.length > 0) throw new ConfigError(more);
  return config;
}

function defaultReadFile(path: string): string {
  // Lazy import keeps this module free of node:* at load time (edge runtimes have no fs).
  const fs = require("node:fs") as typeof import("node:fs");
  return fs.readFileSync(path, "utf8");
}

/** Help text for `switchyard serve --help`, built from the option table. */
export function serveUsage(): string {
  const rows = OPTIONS.map((o) => {
    const shown = o.boolean ? o.flag : `${o.flag} ${o.meta ?? (o.list ? "URL" : "X")}`;
    return `  ${shown.padEnd(30)} ${o.help}`;
  });
  return ["usage: switchyard serve [flags]", "", "flags (env SWITCHYARD_* too; --config FILE for JSON):", ...rows].join("\n");
}
