/**
 * `--tokenizer`: which Hugging Face tokenizer directory tokenizes which model.
 * `PATH` is every model's (the default); `MODEL=PATH` one model's (repeatable, for mixed
 * fleets). A config file may also give `{"MODEL": "PATH", ...}`. It parses only: the
 * directories are loaded at start by main.ts.
 */
import * as v from "valibot";

export interface TokenizerSpec {
  /** The model it tokenizes; undefined: every model without its own. */
  readonly model: string | undefined;
  readonly path: string;
}

/** "PATH" or "MODEL=PATH" (split at the first "="). */
export function parseTokenizerSpec(s: string): TokenizerSpec | string {
  const t = s.trim();
  const eq = t.indexOf("=");
  const model = eq > 0 ? t.slice(0, eq).trim() : undefined;
  const path = (eq > 0 ? t.slice(eq + 1) : t).trim();
  if (eq === 0 || path === "" || model === "")
    return `must be PATH or MODEL=PATH (got ${JSON.stringify(s)})`;
  return { model, path };
}

function items(x: unknown): unknown {
  if (typeof x === "string")
    return x
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== "");
  if (x !== null && typeof x === "object" && !Array.isArray(x))
    return Object.entries(x).map(([m, p]) => (typeof p === "string" ? `${m}=${p}` : p));
  return x;
}

export const TokenizerSpecsSchema = v.pipe(
  v.unknown(),
  v.transform(items),
  v.array(v.string("must be PATH or MODEL=PATH"), "must be a list of PATH or MODEL=PATH"),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const out: TokenizerSpec[] = [];
    const seen = new Set<string>();
    for (const item of dataset.value) {
      const spec = parseTokenizerSpec(item);
      if (typeof spec === "string") {
        addIssue({ message: spec });
        return NEVER;
      }
      const key = spec.model ?? "";
      if (seen.has(key)) {
        addIssue({
          message:
            spec.model === undefined
              ? "only one default PATH (without MODEL=) may be given"
              : `model ${spec.model} is given twice`,
        });
        return NEVER;
      }
      seen.add(key);
      out.push(spec);
    }
    return out;
  }),
);
