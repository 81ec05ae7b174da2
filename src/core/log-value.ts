/**
 * What a log line may carry of a value it did not choose. A model name, a request id or an
 * error text comes from a client or an engine; written raw, a CR or LF in it starts a forged
 * line of its own, an ESC sequence rewrites a terminal, and a 1 MB model name is a 1 MB line.
 * So every string a line carries is cut to LOG_VALUE_MAX_CHARS (ending in "... (N bytes)", N
 * the whole value's UTF-8 size), and the text format writes a value that is not plain
 * printable text quoted, with its C0 and C1 controls, DEL and U+2028/2029 escaped as \uXXXX
 * (\n, \r, \t, \" and \\ as themselves). JSON lines escape C0 controls already; DEL, C1
 * and U+2028/2029, which JSON.stringify leaves raw, are escaped too; the cut applies to both.
 */

/** The most characters of one logged string (a field value or a message) a line carries. */
export const LOG_VALUE_MAX_CHARS = 1024;

/** Characters that are not plain printable text on a line: C0, DEL, C1, the line and paragraph separators. */
const NOT_PRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;
const NOT_PRINTABLE_ALL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029"\\]/g;

const encoder = new TextEncoder();

/** `s` itself when short enough, else its first LOG_VALUE_MAX_CHARS characters and "... (N bytes)". */
export function capLogValue(s: string): string {
  if (s.length <= LOG_VALUE_MAX_CHARS) return s;
  let end = LOG_VALUE_MAX_CHARS;
  // Never end on half a surrogate pair: the line stays valid UTF-8.
  const last = s.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${s.slice(0, end)}... (${encoder.encode(s).length} bytes)`;
}

function escapeChar(c: string): string {
  switch (c) {
    case "\n":
      return "\\n";
    case "\r":
      return "\\r";
    case "\t":
      return "\\t";
    case '"':
      return '\\"';
    case "\\":
      return "\\\\";
    default:
      return `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;
  }
}

/** True when `s` holds a character that must not reach a line raw. */
export function hasNonPrintable(s: string): boolean {
  return NOT_PRINTABLE.test(s);
}

/**
 * A text-format field value: capped; plain printable text as it is (a value that begins with a
 * quote or is empty is quoted too, so a quoted value is never ambiguous); anything else quoted
 * and escaped. The result holds no control character, so one call writes one line.
 */
export function textLogValue(raw: string): string {
  const s = capLogValue(raw);
  if (s.length > 0 && s.charCodeAt(0) !== 0x22 && !NOT_PRINTABLE.test(s)) return s;
  return `"${s.replace(NOT_PRINTABLE_ALL, escapeChar)}"`;
}

/** A text-format message: capped, its non-printable characters escaped (not quoted: it is the line's prose). */
export function textLogMessage(raw: string): string {
  const s = capLogValue(raw);
  return NOT_PRINTABLE.test(s)
    ? s.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, escapeChar)
    : s;
}

const JSON_RAW = /[\u007f-\u009f\u2028\u2029]/;

/** A JSON.stringify'd line with DEL, C1 and U+2028/2029 escaped as \uXXXX (still the same JSON). */
export function jsonLogLine(json: string): string {
  return JSON_RAW.test(json) ? json.replace(/[\u007f-\u009f\u2028\u2029]/g, escapeChar) : json;
}
