/**
 * Bigint-safe JSON reading. Engine hashes are u64 and often arrive as bare JSON numbers
 * above 2^53, which `JSON.parse` would silently round. Before parsing, every integer
 * literal of 16 or more digits outside a string is turned into a string literal; the
 * valibot schemas (core/events.ts) then accept decimal strings and produce bigints.
 * (2^53 has 16 digits, so every unsafe integer is caught; safe 16-digit ones become
 * strings too, which the u64 schemas accept just the same.)
 *
 * The rewrite is one forward pass over the text (every character is looked at a bounded
 * number of times, whatever the input), then the native `JSON.parse` does the rest. The
 * regular expression this replaces backtracked: a 60k-digit number followed by `.` or a
 * body full of unterminated strings took seconds and froze the event loop.
 * Libraries were measured first (bench/json/README.md): the recursive-descent ones
 * (json-bigint, lossless-json) build every value in JavaScript and are several times
 * slower than JSON.parse on ordinary bodies, and they turn long integers into their own
 * number types rather than the decimal strings our schemas read.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const MINUS = 0x2d;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
const LOWER_E = 0x65;
const UPPER_E = 0x45;
const PLUS = 0x2b;

/** Digits from which an integer literal is read as a decimal string (2^53 has 16). */
const LONG_INTEGER_DIGITS = 16;

/** A run of 16 digits anywhere: without one there is nothing to rewrite (fast path). */
const SIXTEEN_DIGITS = /\d{16}/;

/** Counts the characters the rewrite looked at, for tests that check it stays linear. */
export interface ScanStats {
  steps: number;
}

export function parseJsonBigintSafe(text: string): unknown {
  return JSON.parse(quoteLongIntegers(text));
}

/**
 * The text with every integer literal of 16+ digits outside strings written as a string
 * literal (`12345678901234567890` -> `"12345678901234567890"`, sign kept). Numbers with a
 * fraction or an exponent, and integers with a leading zero (invalid JSON, left for
 * JSON.parse to refuse), are not touched. Text that is not JSON comes back rewritten just
 * as far as the scan went; JSON.parse then names the problem.
 */
export function quoteLongIntegers(text: string, stats?: ScanStats): string {
  if (!SIXTEEN_DIGITS.test(text)) return text;
  const n = text.length;
  let out = "";
  let copiedUpTo = 0;
  let steps = 0;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = endOfString(text, i + 1);
      steps += end - i;
      i = end;
      continue;
    }
    if (c !== MINUS && (c < ZERO || c > NINE)) {
      i++;
      steps++;
      continue;
    }
    const start = i;
    if (c === MINUS) i++;
    const digitsStart = i;
    while (i < n && isDigit(text.charCodeAt(i))) i++;
    const digits = i - digitsStart;
    const next = i < n ? text.charCodeAt(i) : -1;
    if (next === DOT || next === LOWER_E || next === UPPER_E) {
      // A fraction or an exponent: a float, read by JSON.parse as it is.
      i++;
      while (i < n && isNumberTail(text.charCodeAt(i))) i++;
    } else if (digits >= LONG_INTEGER_DIGITS && text.charCodeAt(digitsStart) !== ZERO) {
      out += text.slice(copiedUpTo, start) + '"' + text.slice(start, i) + '"';
      copiedUpTo = i;
    }
    if (i === start) i++; // a lone "-" followed by nothing numeric
    steps += i - start;
  }
  if (stats) stats.steps += steps;
  return copiedUpTo === 0 ? text : out + text.slice(copiedUpTo);
}

/**
 * Index just past the closing quote of the string whose body starts at `i` (the text's
 * length when it never closes). A quote closes the string when an even number of
 * backslashes precedes it; the backslash runs counted belong to the part of the text just
 * searched, so no character is looked at twice.
 */
function endOfString(text: string, i: number): number {
  for (;;) {
    const q = text.indexOf('"', i);
    if (q < 0) return text.length;
    let b = q - 1;
    while (b >= i && text.charCodeAt(b) === BACKSLASH) b--;
    if ((q - 1 - b) % 2 === 0) return q + 1;
    i = q + 1;
  }
}

function isDigit(c: number): boolean {
  return c >= ZERO && c <= NINE;
}

function isNumberTail(c: number): boolean {
  return isDigit(c) || c === LOWER_E || c === UPPER_E || c === PLUS || c === MINUS || c === DOT;
}

/** `JSON.rawJSON` (ES2025; Bun, V8 runtimes): a value JSON.stringify writes as given. */
const rawJSON = (JSON as unknown as { rawJSON?: (text: string) => unknown }).rawJSON;

/** JSON.stringify that writes bigints as bare integers (exact), for events and dumps. */
export function stringifyBigint(value: unknown): string {
  if (rawJSON)
    return JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? rawJSON(v.toString()) : v));
  // Runtimes without rawJSON: mark bigints with a sentinel string, then strip the quotes
  // around them. (A string that itself reads "\u0000n<digits>" would be turned into a
  // number here, which is why rawJSON comes first: same speed, no such string.)
  const s = JSON.stringify(value, (_k, v) =>
    typeof v === "bigint" ? `\u0000n${v.toString()}` : v,
  );
  return s.replace(/"\\u0000n(-?\d+)"/g, "$1");
}
