/**
 * The value schemas of `switchyard serve`'s options (valibot). One option's value may come as
 * a string (a flag, an environment variable) or as a JSON/YAML value (a `--config` file), so
 * each schema takes either: numbers and switches given as text are coerced here, and a list
 * may be one comma-separated string or an array. Every message says what the value must be.
 */
import * as v from "valibot";

/** "12" -> 12 and " 1.5 " -> 1.5; anything else passes unchanged so the type check names it. */
function coerceNumber(x: unknown): unknown {
  if (typeof x === "string" && x.trim() !== "" && Number.isFinite(Number(x))) return Number(x);
  return x;
}

export const num = (what: string) =>
  v.pipe(v.unknown(), v.transform(coerceNumber), v.number(`must be ${what}`));
export const int = (min: number, max: number) =>
  v.pipe(
    num(`an integer in [${min}, ${max}]`),
    v.integer(`must be an integer in [${min}, ${max}]`),
    v.minValue(min, `must be >= ${min}`),
    v.maxValue(max, `must be <= ${max}`),
  );
export const nonNegative = (what: string) => v.pipe(num(what), v.minValue(0, "must be >= 0"));
export const positive = (what: string) => v.pipe(num(what), v.gtValue(0, "must be > 0"));
/** A factor where 0 means off (then null) and anything else must be at least 1. */
export const factorOrOff = v.pipe(
  nonNegative("a number >= 0"),
  v.check((x) => x === 0 || x >= 1, "must be 0 (off) or >= 1"),
  v.transform((x) => (x === 0 ? null : x)),
);

/** "1", "true", "yes", "on" -> true; "0", "false", "no", "off" -> false; booleans pass through. */
function coerceBoolean(x: unknown): unknown {
  if (typeof x !== "string") return x;
  const s = x.trim().toLowerCase();
  if (["1", "true", "yes", "on"].includes(s)) return true;
  if (["0", "false", "no", "off"].includes(s)) return false;
  return x;
}

export const bool = v.pipe(
  v.unknown(),
  v.transform(coerceBoolean),
  v.boolean("must be true or false"),
);

export const text = (what = "a string") =>
  v.pipe(v.string(`must be ${what}`), v.nonEmpty("must not be empty"));

/** "a,b" -> ["a","b"]; arrays pass through. */
export function toList(x: unknown): unknown {
  if (typeof x === "string")
    return x
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== "");
  return x;
}

const STATUS_MESSAGE = "must be HTTP statuses (400-599) or none";

/** HTTP error statuses (400-599) as a list: repeated flags and comma lists inside them flatten into one; "none" alone is the empty list. */
export const httpStatuses = v.pipe(
  v.unknown(),
  v.transform((x) => {
    const items = Array.isArray(x) ? x : [x];
    const list = items.flatMap((i) => (typeof i === "string" ? (toList(i) as string[]) : [i]));
    return list.length === 1 && String(list[0]).toLowerCase() === "none" ? [] : list;
  }),
  v.array(
    v.pipe(
      num(STATUS_MESSAGE.slice("must be ".length)),
      v.integer(STATUS_MESSAGE),
      v.minValue(400, STATUS_MESSAGE),
      v.maxValue(599, STATUS_MESSAGE),
    ),
    "must be a list of HTTP statuses",
  ),
);

const isHttpUrl = (s: string): boolean => {
  try {
    const u = new URL(s);
    return u.protocol === "http:" || u.protocol === "https:";
  } catch {
    return false;
  }
};

export const httpUrl = v.pipe(
  v.string("must be a URL string"),
  v.check(isHttpUrl, "must be an http:// or https:// URL"),
);

export const urlList = v.pipe(
  v.unknown(),
  v.transform(toList),
  v.array(httpUrl, "must be a list of URLs"),
);

export const patternList = (what: string) =>
  v.pipe(
    v.unknown(),
    v.transform(toList),
    v.array(v.pipe(v.string(), v.nonEmpty("must not be empty")), `must be a list of ${what}`),
  );

export const redisUrl = v.pipe(
  v.string("must be a URL string"),
  v.check((s) => {
    try {
      return ["redis:", "rediss:", "https:", "http:"].includes(new URL(s).protocol);
    } catch {
      return false;
    }
  }, "must be a redis://, rediss:// or https:// URL"),
);

export const oneOf = <const T extends readonly [string, ...string[]]>(names: T) =>
  v.picklist(names, `must be one of ${names.join(", ")}`);
