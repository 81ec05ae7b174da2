/**
 * The router's log in the format the operator picks (--log-format): `text` (one human line:
 * time, level, message, key=value fields; the default for a terminal) or `json` (one JSON
 * object per line, JSONL: what log shippers such as Loki, Vector or Fluent Bit read without a
 * parser, and what the manifests set). Both write one line per call through `write`, which
 * the runtime's entry chooses (stderr on every runtime; stdout keeps the address line).
 *
 * Hand-written rather than pino: bench/observe/log-cost.ts measured pino, this logger and
 * the raw writers on the access line's exact fields; the reason and numbers are in
 * src/observe/README.md. The JSON keys follow pino's (`time`, `level`, `msg`) so tools made
 * for pino read these lines as well.
 */
import { LOG_RANK as RANK, type LogFormat, type LogLevel, type Logger } from "../core/logger.ts";
import { capLogValue, jsonLogLine, textLogMessage, textLogValue } from "../core/log-value.ts";

type Level = LogLevel;

const TEXT_LEVEL: Readonly<Record<Level, string>> = {
  debug: "DEBUG",
  info: "INFO ",
  warn: "WARN ",
  error: "ERROR",
};

/** A field value JSON can carry: u64 ids are bigints (written as decimal strings), errors as their message; strings capped (core/log-value.ts). */
function jsonSafe(v: unknown): unknown {
  if (typeof v === "string") return capLogValue(v);
  if (typeof v === "bigint") return v.toString();
  if (v instanceof Error) return capLogValue(v.message);
  return v;
}

/** `{"time":…,"level":…,"msg":…, …fields}`; undefined fields are left out, null kept (a fixed shape per line kind). */
export function jsonLine(
  time: string,
  level: Level,
  message: string,
  fields?: Readonly<Record<string, unknown>>,
): string {
  const o: Record<string, unknown> = { time, level, msg: capLogValue(message) };
  if (fields !== undefined) {
    for (const k in fields) {
      const v = fields[k];
      if (v !== undefined) o[k] = jsonSafe(v);
    }
  }
  return jsonLogLine(JSON.stringify(o));
}

/**
 * `TIME LEVEL message k=v …`; null and undefined fields are left out, so a line says only what
 * happened. Values that are not plain printable text are quoted and escaped, long ones cut
 * (core/log-value.ts): whatever a client puts in a value, one call writes one line.
 */
export function textLine(
  time: string,
  level: Level,
  message: string,
  fields?: Readonly<Record<string, unknown>>,
): string {
  let line = `${time} ${TEXT_LEVEL[level]} ${textLogMessage(message)}`;
  if (fields !== undefined) {
    for (const k in fields) {
      const v = fields[k];
      if (v === undefined || v === null) continue;
      line += ` ${k}=${textLogValue(typeof v === "string" ? v : Array.isArray(v) ? JSON.stringify(v) : String(jsonSafe(v)))}`;
    }
  }
  return line;
}

export interface LoggerOptions {
  readonly level: Level;
  readonly format: LogFormat;
  /** One finished line, without its newline. Default: console.error. */
  readonly write?: (line: string) => void;
  /** Wall clock (ms since the epoch) for the time field; default Date.now. */
  readonly clock?: () => number;
}

export function createFormattedLogger(o: LoggerOptions): Logger {
  const write = o.write ?? ((l: string) => console.error(l));
  const clock = o.clock ?? Date.now;
  const format = o.format === "json" ? jsonLine : textLine;
  const min = RANK[o.level];
  const at = (l: Level) =>
    RANK[l] < min
      ? () => {}
      : (message: string, fields?: Record<string, unknown>) =>
          write(format(new Date(clock()).toISOString(), l, message, fields));
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

/**
 * A plain text logger (`TIME LEVEL message k=v …`, every field written as String(v)) for the
 * workerd launcher and tests that read lines; the router's own log is createFormattedLogger.
 */
export function createLogger(
  level: LogLevel,
  write: (line: string) => void = (l) => console.error(l),
): Logger {
  const min = RANK[level];
  const at = (l: Level) => (message: string, fields?: Record<string, unknown>) => {
    if (RANK[l] < min) return;
    // Escaped and capped as the formatted text lines are (core/log-value.ts): one call, one line.
    let line = `${new Date().toISOString()} ${TEXT_LEVEL[l]} ${textLogMessage(message)}`;
    if (fields)
      for (const [k, v] of Object.entries(fields))
        line += ` ${k}=${textLogValue(typeof v === "string" ? v : String(v))}`;
    write(line);
  };
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}
