/**
 * Where @huggingface/jinja (0.5.11) differs from Python Jinja on real chat templates, Python's
 * behaviour, patched into the library's runtime once (importing this file applies it):
 * - `str.strip/lstrip/rstrip(chars)`: the library ignores `chars` and strips all whitespace;
 *   Qwen3's template does `content.lstrip('\n')` and must keep a leading "\r\n" or spaces.
 * - whitespace is Python's (`str.isspace`): JS's trim also strips U+FEFF and keeps
 *   U+001C..U+001F and U+0085; this applies to strip()/split() without arguments and `| trim`.
 * - `str.capitalize()` lowercases the rest, as Python does.
 * - printed values are Python's str(): True/False, None (`{{ tool.description }}` of a tool
 *   sent without one prints "None" in vLLM), lists and dicts as Python reprs.
 * - `| string` is str(); `| map('trim')` maps by filter name; filters on an undefined value
 *   behave as on Python's Undefined ("" / empty / 0); string filters on other non-strings
 *   apply to str(value) (`None | trim` is "None").
 * - `selectattr`/`rejectattr` test items whose attribute is missing (`"undefined"` test).
 * - `is iterable` is true for dicts.
 * - a `{% set %}` inside a loop body lasts one iteration.
 * Not covered (rare in chat templates; they raise or differ): `%`-format, `str * int`,
 * `~` on booleans, string length/slices counted in UTF-16 units instead of code points.
 * Checked by test/unit/tokens/jinja-compat.test.ts against outputs of Python's jinja2.
 */
import { Environment, Interpreter } from "@huggingface/jinja";

/** Python's str.isspace() characters. */
const PY_SPACE =
  "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000";

export function pyStrip(
  s: string,
  chars: string | null | undefined,
  left: boolean,
  right: boolean,
): string {
  const set = chars === null || chars === undefined ? PY_SPACE : chars;
  // Chat templates strip whole messages: scan code units from the ends, no copies. A set
  // with astral characters (surrogate pairs) is matched by code point instead.
  if (/[\ud800-\udfff]/.test(set)) return stripCodePoints(s, set, left, right);
  let a = 0;
  let b = s.length;
  if (left) while (a < b && set.includes(s[a]!)) a++;
  if (right) while (b > a && set.includes(s[b - 1]!)) b--;
  return a === 0 && b === s.length ? s : s.slice(a, b);
}

function stripCodePoints(s: string, chars: string, left: boolean, right: boolean): string {
  const set = new Set(chars);
  const cps = [...s];
  let a = 0;
  let b = cps.length;
  if (left) while (a < b && set.has(cps[a]!)) a++;
  if (right) while (b > a && set.has(cps[b - 1]!)) b--;
  return a === 0 && b === cps.length ? s : cps.slice(a, b).join("");
}

/** Python's str.split() without a separator. */
export function pySplitWhitespace(s: string, maxsplit: number): string[] {
  const out: string[] = [];
  let i = 0;
  const n = s.length;
  const space = (c: string) => PY_SPACE.includes(c);
  while (i < n) {
    while (i < n && space(s[i]!)) i++;
    if (i >= n) break;
    if (maxsplit >= 0 && out.length >= maxsplit) {
      out.push(s.slice(i)); // Python keeps the remainder's trailing whitespace
      break;
    }
    let j = i;
    while (j < n && !space(s[j]!)) j++;
    out.push(s.slice(i, j));
    i = j;
  }
  return out;
}

type RV = { value: unknown; type: string; toString(): string };

const NOT_PRINTABLE = /^[\p{C}\p{Z}]$/u;

/** Python's repr() of a str. */
function pyReprString(s: string): string {
  const q = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = q;
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === "\\") out += "\\\\";
    else if (ch === q) out += `\\${q}`;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (ch !== " " && NOT_PRINTABLE.test(ch)) {
      // str.isprintable() is false for categories C* and Z* (but the space): escaped by size.
      out +=
        c < 0x100
          ? `\\x${c.toString(16).padStart(2, "0")}`
          : c < 0x10000
            ? `\\u${c.toString(16).padStart(4, "0")}`
            : `\\U${c.toString(16).padStart(8, "0")}`;
    } else out += ch;
  }
  return out + q;
}

/** Python's repr() of a runtime value inside a list or dict. */
function pyRepr(v: RV): string {
  switch (v.type) {
    case "StringValue":
      return pyReprString(v.value as string);
    case "ArrayValue":
      return `[${(v.value as RV[]).map(pyRepr).join(", ")}]`;
    case "TupleValue": {
      const xs = v.value as RV[];
      return xs.length === 1 ? `(${pyRepr(xs[0]!)},)` : `(${xs.map(pyRepr).join(", ")})`;
    }
    case "ObjectValue":
    case "KeywordArgumentsValue":
      return `{${[...(v.value as Map<string, RV>)].map(([k, x]) => `${pyReprString(k)}: ${pyRepr(x)}`).join(", ")}}`;
    default:
      return v.toString();
  }
}

type FilterNode = { type: string; value?: string; callee?: { value?: string }; args?: unknown[] };

/** Filters that give "" on an undefined value in Python Jinja (str(Undefined) is ""). */
const UNDEFINED_AS_EMPTY_STRING = new Set([
  "trim",
  "upper",
  "lower",
  "title",
  "capitalize",
  "string",
  "first",
  "last",
  "join",
]);

/** Filters Python Jinja applies to str(value) (do_trim, do_upper, ...). */
const STR_FILTERS = new Set(["trim", "upper", "lower", "title", "capitalize"]);

/** AST node types that are statements (their NullValue result means "no output"). */
const STATEMENTS = new Set([
  "__IterationScope",
  "Program",
  "If",
  "For",
  "Break",
  "Continue",
  "Set",
  "Macro",
  "Comment",
  "FilterStatement",
  "CallStatement",
]);
type Builtins = Map<string, unknown>;

let applied = false;

export function applyJinjaCompat(): void {
  if (applied) return;
  applied = true;
  // The runtime value classes are not exported; reach them through values the library makes.
  const env = new Environment();
  const str = env.set("s", "x") as unknown as { constructor: { prototype: object } };
  const fnValue = (
    env.set("f", () => null) as unknown as {
      constructor: new (fn: (args: RV[]) => unknown) => unknown;
    }
  ).constructor;
  const arr = env.set("a", []) as unknown as { constructor: new (v: unknown[]) => unknown };
  const StringProto = str.constructor.prototype;
  const StringCtor = str.constructor as unknown as new (v: string) => RV;
  const ArrayCtor = arr.constructor;
  const desc = Object.getOwnPropertyDescriptor(StringProto, "builtins");
  if (desc?.get === undefined)
    throw new Error("jinja-compat: @huggingface/jinja's StringValue has no builtins getter");
  const original = desc.get;
  const charsArg = (args: RV[]): string | null => {
    const c = args[0];
    if (c === undefined || c.type === "NullValue" || c.type === "UndefinedValue") return null;
    if (c.type !== "StringValue") throw new Error("strip arg must be None or str");
    return c.value as string;
  };
  Object.defineProperty(StringProto, "builtins", {
    configurable: true,
    get(this: RV & { _pyPatched?: boolean }) {
      const map = original.call(this) as Builtins;
      if (this._pyPatched) return map;
      this._pyPatched = true;
      const s = this.value as string;
      const strip = (l: boolean, r: boolean) =>
        new fnValue((args) => new StringCtor(pyStrip(s, charsArg(args), l, r)));
      map.set("strip", strip(true, true));
      map.set("lstrip", strip(true, false));
      map.set("rstrip", strip(false, true));
      map.set(
        "capitalize",
        new fnValue(
          () =>
            new StringCtor(
              s.length === 0
                ? s
                : [...s][0]!.toUpperCase() + [...s].slice(1).join("").toLowerCase(),
            ),
        ),
      );
      const split = map.get("split") as { value: (args: RV[], scope: unknown) => unknown };
      map.set(
        "split",
        new fnValue((args) => {
          const sep = args[0];
          if (sep !== undefined && sep.type !== "NullValue") return split.value(args, undefined);
          const max = args[1]?.value;
          return new ArrayCtor(
            pySplitWhitespace(s, typeof max === "number" ? max : -1).map((p) => new StringCtor(p)),
          );
        }),
      );
      return map;
    },
  });
  // `is iterable`: a dict is iterable in Python (Gemma 3's template tests
  // `arguments is iterable and arguments is mapping`).
  const tests = (Environment as unknown as { TESTS: Map<string, (v: RV) => boolean> }).TESTS;
  tests.set(
    "iterable",
    (v) =>
      v.type === "ArrayValue" ||
      v.type === "TupleValue" ||
      v.type === "StringValue" ||
      v.type === "ObjectValue",
  );
  // Python's str() of booleans, None, lists and dicts when printed.
  const protoOf = (v: unknown) => Object.getPrototypeOf(v) as { toString(this: RV): string };
  protoOf(env.set("b", true)).toString = function (this: RV) {
    return this.value ? "True" : "False";
  };
  protoOf(env.set("n", null)).toString = () => "None";
  const listProto = protoOf(env.set("l", [1]));
  listProto.toString = function (this: RV) {
    return pyRepr(this);
  };
  protoOf(env.set("o", { a: 1 })).toString = function (this: RV) {
    return pyRepr(this);
  };
  const interp = Interpreter.prototype as unknown as {
    evaluateBlock(statements: { type: string }[], environment: unknown): RV;
    evaluate(node: unknown, env: unknown): RV;
  };
  // Each loop iteration gets its own scope, as in Python Jinja: a `{% set %}` in the body
  // lasts for that iteration only (the library kept it for the following iterations;
  // Gemma 3's template relies on `{% set first = false %}` not surviving the iteration).
  const ITERATION = "__IterationScope";
  const wrapped = new WeakMap<object, object>();
  const forProto = Interpreter.prototype as unknown as {
    evaluateFor(node: { body: unknown[] }, env: unknown): RV;
    evaluate(node: { type: string; statements?: unknown[] }, env: unknown): RV;
  };
  const evaluateFor = forProto.evaluateFor;
  forProto.evaluateFor = function (node, environment) {
    let w = wrapped.get(node);
    if (w === undefined) {
      w = { ...node, body: [{ type: ITERATION, statements: node.body }] };
      wrapped.set(node, w);
    }
    return evaluateFor.call(this, w as typeof node, environment);
  };
  const evaluate = forProto.evaluate;
  forProto.evaluate = function (node, environment) {
    if (node?.type === ITERATION) {
      return interp.evaluateBlock.call(
        this,
        node.statements as { type: string }[],
        new Environment(environment as Environment),
      );
    }
    return evaluate.call(this, node, environment);
  };
  // `{{ none }}` prints "None" (the library drops null output, which it also uses for statements).
  interp.evaluateBlock = function (statements, environment) {
    let result = "";
    for (const statement of statements) {
      const v = this.evaluate(statement, environment);
      if (v.type === "UndefinedValue") continue;
      if (v.type === "NullValue" && STATEMENTS.has(statement.type)) continue;
      result += v.toString();
    }
    return new StringCtor(result);
  };
  // Filters: `| trim` (Jinja's do_trim: str.strip(chars)); `| string` as Python's str();
  // `| map('filter')` by filter name; filters on an undefined value as Python's Undefined
  // (prints "", iterates empty, length 0) — e.g. `param.description | trim` of a parameter
  // sent without a description.
  const undefinedValue = env.set("u", undefined) as unknown as RV;
  const IntegerCtor = (env.set("i", 1) as unknown as { constructor: new (v: number) => RV })
    .constructor;
  const proto = Interpreter.prototype as unknown as {
    applyFilter(operand: RV, filter: FilterNode, env: unknown): RV;
    evaluate(node: unknown, env: unknown): RV;
  };
  const applyFilter = proto.applyFilter;
  proto.applyFilter = function (operand, filter, environment) {
    const name = filter.type === "Identifier" ? filter.value : filter.callee?.value;
    if (operand.type === "UndefinedValue" && name !== undefined) {
      if (UNDEFINED_AS_EMPTY_STRING.has(name)) return new StringCtor("");
      if (name === "items" || name === "list") return new ArrayCtor([]) as RV;
      if (name === "length" || name === "count") return new IntegerCtor(0);
    }
    // Python's string filters apply str() first: `None | trim` is "None" (a tool sent
    // without a description, dumped by vLLM as None), `3 | upper` is "3".
    if (
      name !== undefined &&
      STR_FILTERS.has(name) &&
      operand.type !== "StringValue" &&
      operand.type !== "UndefinedValue"
    ) {
      return this.applyFilter(new StringCtor(operand.toString()), filter, environment);
    }
    // select/rejectattr: the library skips items whose attribute is missing, so
    // `selectattr("tool_calls", "undefined")` selected nothing; Python tests Undefined too.
    if (
      (name === "selectattr" || name === "rejectattr") &&
      filter.type === "CallExpression" &&
      operand.type === "ArrayValue"
    ) {
      const [attr, testName, value] = (filter.args ?? []).map((a) => this.evaluate(a, environment));
      const tests = (environment as { tests: Map<string, (...a: RV[]) => boolean> }).tests;
      const test =
        testName === undefined
          ? (x: RV) => (x as unknown as { __bool__(): RV }).__bool__().value === true
          : tests.get(testName.value as string);
      if (test === undefined) throw new Error(`Unknown test: ${String(testName?.value)}`);
      const select = name === "selectattr";
      const path = String(attr?.value ?? "").split(".");
      return new ArrayCtor(
        (operand.value as RV[]).filter((item) => {
          let v: RV = item;
          for (const key of path)
            v =
              v.value instanceof Map
                ? ((v.value as Map<string, RV>).get(key) ?? undefinedValue)
                : undefinedValue;
          const hit = value === undefined ? test(v) : test(v, value);
          return select ? hit : !hit;
        }),
      ) as RV;
    }
    if (filter.type === "Identifier" && name === "string") {
      return operand.type === "StringValue" ? operand : new StringCtor(operand.toString());
    }
    if (name === "map" && filter.type === "CallExpression" && operand.type === "ArrayValue") {
      const first = filter.args?.[0] as { type?: string } | undefined;
      if (
        filter.args?.length === 1 &&
        first !== undefined &&
        first.type !== "KeywordArgumentExpression"
      ) {
        const fname = this.evaluate(first, environment);
        if (fname.type === "StringValue") {
          const node: FilterNode = { type: "Identifier", value: fname.value as string };
          return new ArrayCtor(
            (operand.value as RV[]).map((v) => this.applyFilter(v, node, environment)),
          ) as RV;
        }
      }
    }
    if (operand.type === "StringValue") {
      if (filter.type === "Identifier" && filter.value === "trim")
        return new StringCtor(pyStrip(operand.value as string, null, true, true));
      if (
        filter.type === "CallExpression" &&
        filter.callee?.value === "trim" &&
        filter.args?.length === 1
      ) {
        const chars = this.evaluate(filter.args[0], environment);
        return new StringCtor(pyStrip(operand.value as string, charsArg([chars]), true, true));
      }
    }
    return applyFilter.call(this, operand, filter, environment);
  };
}
