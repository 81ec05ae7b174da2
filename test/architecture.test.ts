/**
 * The pure core must run unchanged on Deno and edge runtimes, and stay deterministic under
 * test: no runtime-specific imports, no globals that do I/O or read the clock.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";

const ROOT = join(import.meta.dir, "..");
const PURE_DIRS = ["src/core", "src/indexer", "src/scheduler", "src/recovery", "src/lora", "src/tokens", "src/protocol", "src/router"];
const PURE_FILES = ["src/sessions/store.ts", "src/sessions/sticky.ts", "src/sessions/memory-store.ts"];
/**
 * Bun adapters inside pure folders: only Bun's composition root (and Bun-only tests/benches)
 * import them. src/tokens: Bun's file reader + wiring, the native addon, the encode worker pool.
 */
const ADAPTER_FILES = new Set([
  "src/tokens/bun.ts",
  "src/tokens/native-library.ts",
  "src/tokens/encode-pool.ts",
  "src/tokens/encode-worker.ts",
]);

/** What a pure module may not mention: runtime modules, I/O globals, wall clocks. */
const FORBIDDEN: readonly [RegExp, string][] = [
  [/from\s+["']node:/, "node:* import"],
  [/require\(\s*["']node:/, "node:* require"],
  [/from\s+["'](bun|bun:ffi|bun:sqlite)["']/, "bun module import"],
  [/\bBun\./, "Bun.* global"],
  [/from\s+["']hono(\/[^"']*)?["']/, "hono import"],
  [/from\s+["']@upstash\/redis["']/, "redis import"],
  [/from\s+["'](fs|path|os|net|child_process|http)["']/, "node builtin import"],
  [/\bprocess\./, "process global"],
  [/(?<![.\w])fetch\(/, "global fetch call (inject it instead)"],
  [/\bDate\.now\(|\bperformance\.now\(|new Date\(\)/, "wall clock (pass time in)"],
  [/\bMath\.random\(/, "Math.random (inject the rng)"],
  [/\bsetTimeout\(|\bsetInterval\(/, "timer owned by a pure module (inject it)"],
  [/from\s+["']\.\.\/(app|native|transfer|mocker|events|workers|metrics|config)\//, "import of an adapter folder"],
];

function tsFiles(dir: string): string[] {
  let out: string[] = [];
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const e of entries) {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) out = out.concat(tsFiles(p));
    else if (p.endsWith(".ts")) out.push(p);
  }
  return out;
}

/** Strip comments so documentation may name what the code must not use. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`])\/\/.*$/gm, "$1");
}

const files = [...PURE_DIRS.flatMap((d) => tsFiles(join(ROOT, d))), ...PURE_FILES.map((f) => join(ROOT, f))].filter(
  (f) => {
    if (ADAPTER_FILES.has(relative(ROOT, f))) return false;
    try {
      return statSync(f).isFile();
    } catch {
      return false;
    }
  },
);

/** Where a pure file imports one of the adapter files above (that would pull the runtime in). */
const adapterImport = (src: string): string[] =>
  [...src.matchAll(/from\s+["']\.\/([\w-]+\.ts)["']/g)].map((m) => m[1]!).filter((name) => [...ADAPTER_FILES].some((a) => a.endsWith(`/${name}`)));

describe("architecture: pure folders import no runtime", () => {
  test("the pure folders exist and hold code", () => {
    expect(files.length).toBeGreaterThan(5);
  });
  for (const f of files) {
    test(relative(ROOT, f), () => {
      const src = code(readFileSync(f, "utf8"));
      const hits = FORBIDDEN.filter(([re]) => re.test(src)).map(([, what]) => what);
      expect(hits).toEqual([]);
      expect(adapterImport(src)).toEqual([]);
    });
  }
});

describe("architecture: the checker itself", () => {
  test("src/tokens is pure except its Bun adapters, and a pure file importing an adapter is flagged", () => {
    expect(files.some((f) => relative(ROOT, f) === "src/tokens/load.ts")).toBe(true);
    expect(files.some((f) => relative(ROOT, f) === "src/tokens/bun.ts")).toBe(false);
    expect(adapterImport('import { x } from "./native-library.ts";\nimport { y } from "./load.ts";')).toEqual(["native-library.ts"]);
  });

  test("flags a runtime import and a clock read", () => {
    const bad = code('import { x } from "node:fs";\nconst t = Date.now();\n// Bun.write is only mentioned in a comment\n');
    const hits = FORBIDDEN.filter(([re]) => re.test(bad)).map(([, what]) => what);
    expect(hits).toEqual(["node:* import", "wall clock (pass time in)"]);
  });
});

/**
 * Forbidden arrows between folders (issue 10): which top-level folders under src/ a folder's
 * relative imports may reach. `allowed`: only these; `forbidden`: anything but these.
 */
interface Arrow {
  readonly from: string;
  readonly allowed?: readonly string[];
  readonly forbidden?: readonly string[];
  readonly why: string;
}
const ARROWS: readonly Arrow[] = [
  {
    from: "mocker",
    allowed: ["mocker", "core", "protocol", "tokens", "native", "transfer"],
    why: "the simulated engine speaks the wire protocol (src/protocol); it never reaches into the router",
  },
  { from: "transfer", allowed: ["transfer", "core", "protocol", "native"], why: "the transfer agent has its own small edge" },
  { from: "protocol", allowed: ["protocol", "core"], why: "the wire protocol depends on nothing but the shared vocabulary" },
  { from: "scheduler", forbidden: ["indexer"], why: "the scheduler chooses from overlap it is given; it does not walk the index" },
  { from: "router", forbidden: ["runtime", "app", "native", "events", "sync", "upstream", "workers", "metrics", "config"], why: "the router room is runtime-free" },
];

/** The top-level src/ folder each relative import of `text` (a file at `file`) lands in. */
function importedFolders(file: string, text: string): string[] {
  const srcRoot = join(ROOT, "src");
  const out: string[] = [];
  for (const m of code(text).matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)) {
    const target = relative(srcRoot, resolve(dirname(file), m[1]!));
    if (target.startsWith("..")) continue;
    out.push(target.split(sep)[0]!);
  }
  return out;
}

function arrowViolations(arrow: Arrow, folders: readonly string[]): string[] {
  return folders.filter((f) => (arrow.allowed ? !arrow.allowed.includes(f) : arrow.forbidden!.includes(f)));
}

describe("architecture: forbidden arrows between folders", () => {
  for (const arrow of ARROWS) {
    for (const f of tsFiles(join(ROOT, "src", arrow.from))) {
      test(`${relative(ROOT, f)} (${arrow.why})`, () => {
        const bad = arrowViolations(arrow, importedFolders(f, readFileSync(f, "utf8")));
        expect(bad).toEqual([]);
      });
    }
  }

  test("the checker resolves relative imports to folders and flags a wrong arrow", () => {
    const file = join(ROOT, "src/mocker/x.ts");
    const folders = importedFolders(file, 'import { a } from "../recovery/types.ts";\nimport { b } from "./engine.ts";\n// from "../app/x.ts"\n');
    expect(folders).toEqual(["recovery", "mocker"]);
    expect(arrowViolations(ARROWS[0]!, folders)).toEqual(["recovery"]);
    const sched = importedFolders(join(ROOT, "src/scheduler/costs/y.ts"), 'import type { K } from "../../indexer/types.ts";');
    expect(arrowViolations(ARROWS[3]!, sched)).toEqual(["indexer"]);
  });
});

/**
 * The Deno and workerd entries run everything they import: no file reachable from them may use
 * Bun (issue 10). The conformance suite proves it at run time; this names the file at once.
 */
const PORTABLE_ENTRIES = ["src/runtime/portable.ts", "src/runtime/deno.ts", "src/runtime/workerd.ts"];
const BUN_USE: readonly [RegExp, string][] = [
  [/from\s+["'](bun|bun:[a-z]+)["']/, "bun module import"],
  [/\bBun\./, "Bun.* global"],
];

/** Every .ts file reachable through relative imports from `entries` (type-only imports included). */
function reachable(entries: readonly string[]): string[] {
  const seen = new Set<string>();
  const stack = entries.map((e) => join(ROOT, e));
  while (stack.length > 0) {
    const f = stack.pop()!;
    if (seen.has(f)) continue;
    seen.add(f);
    const text = code(readFileSync(f, "utf8"));
    for (const m of text.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+\.ts)["']/g)) stack.push(resolve(dirname(f), m[1]!));
  }
  return [...seen];
}

describe("architecture: the Deno and workerd entries reach no Bun code", () => {
  const graph = reachable(PORTABLE_ENTRIES);
  test("the graph holds the router room and the app", () => {
    const rel = graph.map((f) => relative(ROOT, f));
    expect(rel).toContain("src/router/create-router.ts");
    expect(rel).toContain("src/app/app.ts");
  });
  test("the Upstash REST store and load sync are in it; the RESP (Bun) Redis files are not, by construction (Bun's entry injects them)", () => {
    const rel = graph.map((f) => relative(ROOT, f));
    for (const f of ["src/sessions/redis-store.ts", "src/sessions/upstash-client.ts", "src/sync/load-sync.ts", "src/sync/stream-transport.ts"]) expect(rel).toContain(f);
    const resp = ["src/sessions/resp-client.ts", "src/sync/resp-subscriber.ts", "src/sync/pubsub-transport.ts"];
    expect(rel.filter((f) => resp.includes(f))).toEqual([]);
  });
  for (const f of graph) {
    test(relative(ROOT, f), () => {
      const src = code(readFileSync(f, "utf8"));
      expect(BUN_USE.filter(([re]) => re.test(src)).map(([, what]) => what)).toEqual([]);
    });
  }
});
