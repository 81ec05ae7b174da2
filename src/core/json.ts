/**
 * Bigint-safe JSON reading. Engine hashes are u64 and often arrive as bare JSON numbers
 * above 2^53, which `JSON.parse` would silently round. Before parsing, every integer
 * literal of 16 or more digits outside a string is turned into a string literal; the
 * valibot schemas (core/events.ts) then accept decimal strings and produce bigints.
 * (2^53 has 16 digits, so every unsafe integer is caught; safe 16-digit ones become
 * strings too, which the u64 schemas accept just the same.)
 */
const LONG_INT_OR_STRING = /("(?:[^"\\]|\\.)*")|(-?\d{16,})(?![\d.eE])/g;

export function parseJsonBigintSafe(text: string): unknown {
  const quoted = text.replace(LONG_INT_OR_STRING, (m, str: string | undefined, num: string | undefined) =>
    str !== undefined ? str : `"${num}"`,
  );
  return JSON.parse(quoted);
}

/** JSON.stringify that writes bigints as bare integers (exact), for events and dumps. */
export function stringifyBigint(value: unknown): string {
  // Mark bigints with a sentinel string, then strip the quotes around them.
  const s = JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? `\u0000n${v.toString()}` : v));
  return s.replace(/"\\u0000n(-?\d+)"/g, "$1");
}
