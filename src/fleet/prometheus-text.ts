/**
 * A small, strict reader of Prometheus' text exposition format (version 0.0.4): only the
 * samples of the metric names asked for, each with its labels and value. Comments,
 * HELP/TYPE lines and other metrics are skipped without being parsed; a malformed line of
 * a wanted metric is reported, not guessed at. Pure. It is not a general parser: no
 * histograms or summaries as families, no exemplars (engines' gauges need none).
 */

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface ParsedSamples {
  readonly samples: Sample[];
  /** Lines of wanted metrics that could not be read, with why. */
  readonly errors: string[];
}

/** Every sample of the `wanted` metric names in `text`. */
export function readSamples(text: string, wanted: ReadonlySet<string>): ParsedSamples {
  const samples: Sample[] = [];
  const errors: string[] = [];
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf("\n", start);
    if (end < 0) end = text.length;
    const line = text.slice(start, end).trim();
    start = end + 1;
    if (line === "" || line.startsWith("#")) continue;
    const nameEnd = firstOf(line, "{ \t");
    const name = line.slice(0, nameEnd);
    if (!wanted.has(name)) continue;
    const r = parseSample(line, name, nameEnd);
    if (typeof r === "string")
      errors.push(`${r}: ${line.length > 200 ? line.slice(0, 200) + "…" : line}`);
    else samples.push(r);
  }
  return { samples, errors };
}

function firstOf(s: string, chars: string): number {
  for (let i = 0; i < s.length; i++) if (chars.includes(s[i]!)) return i;
  return s.length;
}

function parseSample(line: string, name: string, at: number): Sample | string {
  const labels: Record<string, string> = {};
  let i = at;
  if (line[i] === "{") {
    i++;
    for (;;) {
      while (line[i] === " " || line[i] === ",") i++;
      if (line[i] === "}") {
        i++;
        break;
      }
      const eq = line.indexOf("=", i);
      if (eq < 0) return "label without '='";
      const key = line.slice(i, eq).trim();
      if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(key)) return `bad label name ${JSON.stringify(key)}`;
      if (line[eq + 1] !== '"') return `label ${key}: value must be quoted`;
      let j = eq + 2;
      let value = "";
      for (; j < line.length && line[j] !== '"'; j++) {
        if (line[j] === "\\") {
          const n = line[++j];
          value += n === "n" ? "\n" : (n ?? "");
        } else value += line[j];
      }
      if (j >= line.length) return `label ${key}: unterminated value`;
      labels[key] = value;
      i = j + 1;
    }
  }
  const rest = line
    .slice(i)
    .trim()
    .split(/[ \t]+/);
  if (rest.length < 1 || rest.length > 2 || rest[0] === "")
    return "expected a value (and an optional timestamp)";
  const value = parseValue(rest[0]!);
  if (value === undefined) return `bad value ${JSON.stringify(rest[0])}`;
  return { name, labels, value };
}

/** Go's ParseFloat forms Prometheus writes: numbers, NaN, +Inf, -Inf. */
function parseValue(s: string): number | undefined {
  if (s === "NaN") return NaN;
  if (s === "+Inf" || s === "Inf") return Infinity;
  if (s === "-Inf") return -Infinity;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) return undefined;
  return Number(s);
}
