/** A minimal leveled logger: one line per message on stderr, fields as key=value (escaped and capped: core/log-value.ts). */
import type { LogLevel } from "../config/schema.ts";
import { textLogMessage, textLogValue } from "../core/log-value.ts";

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

function format(level: LogLevel, message: string, fields?: Record<string, unknown>): string {
  let line = `${new Date().toISOString()} ${level.toUpperCase().padEnd(5)} ${textLogMessage(message)}`;
  if (fields) for (const [k, v] of Object.entries(fields)) line += ` ${k}=${textLogValue(typeof v === "string" ? v : String(v))}`;
  return line;
}

export function createLogger(level: LogLevel, write: (line: string) => void = (l) => console.error(l)): Logger {
  const min = RANK[level];
  const at = (l: LogLevel) => (message: string, fields?: Record<string, unknown>) => {
    if (RANK[l] >= min) write(format(l, message, fields));
  };
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
