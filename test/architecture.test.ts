/**
 * The house rules, as folder rules that a path's depth cannot dodge: every relative import is
 * resolved to the file it names, and that file's folder is what the rule checks.
 * - The pure folders (router/**, core, protocol, tokens, fleet/lora, fleet/cache-truth, protect) run unchanged on Deno and edge
 *   runtimes and stay deterministic under test: no runtime-specific imports, no I/O globals, no clock.
 * - router/** imports only router, core, protocol and tokens; outside it, src/ reaches it only
 *   through its face, src/router/index.ts.
 * - runtime/bun/** (every Bun-only piece) is imported only by runtime/bun.ts (and from inside itself).
 * - The separate programs (mocker, transfer) never import router/** or edge/**.
 * - Nothing reachable from the Deno and workerd entries touches runtime/bun/** or uses Bun.
 * - No file-level import circle in src (lazy `import()` counted), and no import from a lower
 *   layer to a higher one (support/import-graph.ts LAYERS: core < protocol, tokens < router,
 *   protect < fleet, sync, observe, config < edge, mocker, transfer < runtime < main).
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import {
  code,
  importCircles,
  importsOf,
  layerOf,
  srcImportGraph,
  tsFiles,
  upwardArrows,
  type ImportEdge,
} from "./support/import-graph.ts";

const ROOT = join(import.meta.dir, "..");
const PURE_DIRS = [
  "src/core",
  "src/router",
  "src/tokens",
  "src/protocol",
  "src/fleet/lora",
  "src/fleet/cache-truth",
  "src/protect",
];

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
];

/** The repository-relative paths (src/…) every relative import of `text` (a file at `file`) names. */
function importedPaths(file: string, text: string): string[] {
  const out: string[] = [];
  for (const m of code(text).matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)) {
    out.push(
      relative(ROOT, resolve(dirname(file), m[1]!))
        .split("\\")
        .join("/"),
    );
  }
  return out;
}

/** Whether a repository path lies in folder `dir` (a src/… prefix), at any depth. */
const inFolder = (path: string, dir: string): boolean => path === dir || path.startsWith(`${dir}/`);

interface FolderRule {
  /** The folder whose files the rule reads (src/…). */
  readonly from: string;
  /** Its imports may land only in these folders… */
  readonly allowed?: readonly string[];
  /** …or never in these. */
  readonly forbidden?: readonly string[];
  readonly why: string;
}

const RULES: readonly FolderRule[] = [
  {
    from: "src/router",
    allowed: ["src/router", "src/core", "src/protocol", "src/tokens"],
    why: "the router is pure: it reaches workers, metrics and the network only through ports.ts",
  },
  {
    from: "src/router/choose",
    forbidden: ["src/router/kv-index"],
    why: "choosing works from the overlap it is given; it does not walk the index",
  },
  // package.json is data (the version core/build-info.ts reports), not code or a runtime.
  {
    from: "src/core",
    allowed: ["src/core", "package.json"],
    why: "the shared vocabulary depends on nothing",
  },
  {
    from: "src/protocol",
    allowed: ["src/protocol", "src/core"],
    why: "the wire protocol depends on nothing but the shared vocabulary",
  },
  {
    from: "src/tokens",
    allowed: ["src/tokens", "src/core"],
    why: "the tokenizer seam is runtime-free; Bun's wiring lives in runtime/bun/tokens",
  },
  {
    from: "src/protect",
    allowed: ["src/protect", "src/core", "src/protocol"],
    why: "keys and tenant limits take their file reader, Redis counters and clock as parameters",
  },
  {
    from: "src/mocker",
    forbidden: ["src/router", "src/edge", "src/fleet", "src/runtime", "src/observe", "src/sync"],
    why: "the simulated engine is a separate program speaking the engines' protocols (src/protocol)",
  },
  {
    from: "src/transfer",
    forbidden: [
      "src/router",
      "src/edge",
      "src/fleet",
      "src/runtime",
      "src/observe",
      "src/sync",
      "src/mocker",
    ],
    why: "the transfer agent is a separate program with its own small edge",
  },
];

function ruleViolations(rule: FolderRule, paths: readonly string[]): string[] {
  return paths.filter((p) =>
    rule.allowed
      ? !rule.allowed.some((d) => inFolder(p, d))
      : rule.forbidden!.some((d) => inFolder(p, d)),
  );
}

/** runtime/bun/** holds the Bun-only code: only these files (and files inside it) may import it. */
const BUN_ONLY = "src/runtime/bun";
const BUN_ENTRIES = ["src/runtime/bun.ts"];

function bunOnlyViolations(file: string, paths: readonly string[]): string[] {
  const rel = relative(ROOT, file);
  if (inFolder(rel, BUN_ONLY) || BUN_ENTRIES.includes(rel)) return [];
  return paths.filter((p) => inFolder(p, BUN_ONLY));
}

/**
 * The router has one public module: outside src/router, src files import it only through
 * src/router/index.ts, so what it offers is written in one place.
 */
const ROUTER_DIR = "src/router";
const ROUTER_FACE = "src/router/index.ts";

function routerFaceViolations(file: string, paths: readonly string[]): string[] {
  const rel = relative(ROOT, file);
  if (inFolder(rel, ROUTER_DIR)) return [];
  return paths.filter((p) => inFolder(p, ROUTER_DIR) && p !== ROUTER_FACE);
}

const srcFiles = tsFiles(join(ROOT, "src"));
const pureFiles = PURE_DIRS.flatMap((d) => tsFiles(join(ROOT, d)));

describe("architecture: the pure folders import no runtime", () => {
  test("the pure folders exist and hold code", () => {
    expect(pureFiles.length).toBeGreaterThan(100);
    expect(pureFiles.map((f) => relative(ROOT, f))).toContain("src/router/create-router.ts");
  });
  for (const f of pureFiles) {
    test(relative(ROOT, f), () => {
      const src = code(readFileSync(f, "utf8"));
      expect(FORBIDDEN.filter(([re]) => re.test(src)).map(([, what]) => what)).toEqual([]);
    });
  }
});

describe("architecture: folder rules", () => {
  for (const rule of RULES) {
    for (const f of tsFiles(join(ROOT, rule.from))) {
      test(`${relative(ROOT, f)} (${rule.why})`, () => {
        expect(ruleViolations(rule, importedPaths(f, readFileSync(f, "utf8")))).toEqual([]);
      });
    }
  }
  test("outside src/router, the router is imported only through src/router/index.ts", () => {
    const bad = srcFiles.flatMap((f) =>
      routerFaceViolations(f, importedPaths(f, readFileSync(f, "utf8"))).map(
        (p) => `${relative(ROOT, f)} -> ${p}`,
      ),
    );
    expect(bad).toEqual([]);
  });
  test("runtime/bun/** is imported only by runtime/bun.ts", () => {
    const bad = srcFiles.flatMap((f) =>
      bunOnlyViolations(f, importedPaths(f, readFileSync(f, "utf8"))).map(
        (p) => `${relative(ROOT, f)} -> ${p}`,
      ),
    );
    expect(bad).toEqual([]);
  });
});

describe("architecture: the checker itself", () => {
  test("flags a runtime import and a clock read, not a comment naming them", () => {
    const bad = code(
      'import { x } from "node:fs";\nconst t = Date.now();\n// Bun.write is only mentioned in a comment\n',
    );
    expect(FORBIDDEN.filter(([re]) => re.test(bad)).map(([, what]) => what)).toEqual([
      "node:* import",
      "wall clock (pass time in)",
    ]);
  });

  test('an import planted at any depth is resolved to its folder (the old `from "../X/"` hole is closed)', () => {
    const router = RULES[0]!;
    // Two and three levels up, which the old one-level regex did not see.
    const deep = importedPaths(
      join(ROOT, "src/router/choose/costs/y.ts"),
      'import { W } from "../../../fleet/registry.ts";',
    );
    expect(deep).toEqual(["src/fleet/registry.ts"]);
    expect(ruleViolations(router, deep)).toEqual(["src/fleet/registry.ts"]);
    const deeper = importedPaths(
      join(ROOT, "src/router/choose/costs/y.ts"),
      'export * from "../../../../src/edge/app.ts";',
    );
    expect(ruleViolations(router, deeper)).toEqual(["src/edge/app.ts"]);
    // Inside src/router, and its allowed neighbours, pass.
    const fine = importedPaths(
      join(ROOT, "src/router/choose/costs/y.ts"),
      'import { a } from "../../books/load-tracker.ts";\nimport { b } from "../../../core/ids.ts";',
    );
    expect(ruleViolations(router, fine)).toEqual([]);
    // choose/ may not walk the index, however deep the importer.
    const walk = importedPaths(
      join(ROOT, "src/router/choose/costs/y.ts"),
      'import type { K } from "../../kv-index/types.ts";',
    );
    expect(ruleViolations(RULES[1]!, walk)).toEqual(["src/router/kv-index/types.ts"]);
  });

  test("a planted import of runtime/bun/** from outside runtime/bun.ts is flagged, from inside it is not", () => {
    const planted = 'import { SocketUpstream } from "./bun/upstream/socket-client.ts";';
    expect(
      bunOnlyViolations(
        join(ROOT, "src/runtime/portable.ts"),
        importedPaths(join(ROOT, "src/runtime/portable.ts"), planted),
      ),
    ).toEqual(["src/runtime/bun/upstream/socket-client.ts"]);
    const viaMocker = importedPaths(
      join(ROOT, "src/mocker/x.ts"),
      'import { a } from "../runtime/bun/tokens/load-on-bun.ts";',
    );
    expect(bunOnlyViolations(join(ROOT, "src/mocker/x.ts"), viaMocker)).toEqual([
      "src/runtime/bun/tokens/load-on-bun.ts",
    ]);
    expect(
      bunOnlyViolations(
        join(ROOT, "src/runtime/bun.ts"),
        importedPaths(join(ROOT, "src/runtime/bun.ts"), 'import { a } from "./bun/hasher.ts";'),
      ),
    ).toEqual([]);
  });

  test("a planted import of a router internal from outside src/router is flagged; index.ts, and imports inside src/router, are not", () => {
    const sync = join(ROOT, "src/sync/x.ts");
    expect(
      routerFaceViolations(
        sync,
        importedPaths(sync, 'import type { T } from "../router/books/load-tracker.ts";'),
      ),
    ).toEqual(["src/router/books/load-tracker.ts"]);
    expect(
      routerFaceViolations(
        sync,
        importedPaths(sync, 'import type { K } from "../router/kv-index/types.ts";'),
      ),
    ).toEqual(["src/router/kv-index/types.ts"]);
    expect(
      routerFaceViolations(
        sync,
        importedPaths(sync, 'import type { T } from "../router/index.ts";'),
      ),
    ).toEqual([]);
    const inside = join(ROOT, "src/router/choose/y.ts");
    expect(
      routerFaceViolations(
        inside,
        importedPaths(inside, 'import { a } from "../books/load-tracker.ts";'),
      ),
    ).toEqual([]);
  });

  test("the separate programs may not reach the router or the edge", () => {
    const mocker = RULES.find((r) => r.from === "src/mocker")!;
    const paths = importedPaths(
      join(ROOT, "src/mocker/a/b.ts"),
      'import { r } from "../../router/index.ts";\nimport { e } from "../../edge/app.ts";\nimport { c } from "../../core/ids.ts";',
    );
    expect(ruleViolations(mocker, paths)).toEqual(["src/router/index.ts", "src/edge/app.ts"]);
  });
});

/**
 * The Deno and workerd entries run everything they import: no file reachable from them may use
 * Bun. The conformance suite proves it at run time; this names the file at once.
 */
const PORTABLE_ENTRIES = [
  "src/runtime/portable.ts",
  "src/runtime/deno.ts",
  "src/runtime/workerd.ts",
];
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
    for (const m of text.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+\.ts)["']/g))
      stack.push(resolve(dirname(f), m[1]!));
  }
  return [...seen];
}

describe("architecture: the Deno and workerd entries reach no Bun code", () => {
  const graph = reachable(PORTABLE_ENTRIES);
  const rel = graph.map((f) => relative(ROOT, f));
  test("the graph holds the router and the edge", () => {
    expect(rel).toContain("src/router/create-router.ts");
    expect(rel).toContain("src/edge/app.ts");
  });
  test("the Upstash REST store and load sync are in it; nothing of runtime/bun/** is (Bun's entry injects the RESP pieces)", () => {
    for (const f of [
      "src/sync/redis-store.ts",
      "src/sync/upstash-client.ts",
      "src/sync/load-sync.ts",
      "src/sync/stream-transport.ts",
    ])
      expect(rel).toContain(f);
    expect(rel.filter((f) => inFolder(f, BUN_ONLY))).toEqual([]);
  });
  for (const f of graph) {
    test(relative(ROOT, f), () => {
      const src = code(readFileSync(f, "utf8"));
      expect(BUN_USE.filter(([re]) => re.test(src)).map(([, what]) => what)).toEqual([]);
    });
  }
});

/**
 * The import graph: a circle makes the files in it one unit (none can be read, tested or moved
 * without the others), and an arrow up the layers is the same knot across folders.
 */
describe("architecture: no import circle, no arrow up the layers", () => {
  const edges = srcImportGraph();
  test("the graph holds src's imports, lazy ones included", () => {
    expect(edges.length).toBeGreaterThan(1000);
    expect(
      edges.some(
        (e) =>
          e.from === "src/sync/open-transport.ts" &&
          e.to === "src/sync/stream-transport.ts" &&
          e.lazy,
      ),
    ).toBe(true);
  });
  test("no file-level import circle in src", () => {
    expect(importCircles(edges)).toEqual([]);
  });
  test("every src file lies in a layer", () => {
    const files = tsFiles(join(ROOT, "src")).map((f) => relative(ROOT, f));
    expect(files.filter((f) => layerOf(f) === undefined)).toEqual([]);
  });
  test("no import from a lower layer to a higher one", () => {
    expect(upwardArrows(edges)).toEqual([]);
  });
});

describe("architecture: the graph checker itself", () => {
  const edge = (from: string, to: string, lazy = false): ImportEdge => ({ from, to, lazy });
  test("reads static, type-only, re-exported, bare and lazy imports, not ones in comments", () => {
    const file = join(ROOT, "src/edge/x.ts");
    const text = [
      'import { a } from "./a.ts";',
      'import type {\n  B,\n} from "../core/b.ts";',
      'export { c } from "./c.ts";',
      'import "./d.ts";',
      'const e = await import("./e.ts");',
      '// import { f } from "./f.ts";',
    ].join("\n");
    expect(
      importsOf(file, text)
        .map((e) => `${e.to}${e.lazy ? " lazy" : ""}`)
        .sort(),
    ).toEqual([
      "src/core/b.ts",
      "src/edge/a.ts",
      "src/edge/c.ts",
      "src/edge/d.ts",
      "src/edge/e.ts lazy",
    ]);
  });
  test("finds a planted circle, a lazy one only when lazy imports count, and a file importing itself", () => {
    const planted = [
      edge("src/a.ts", "src/b.ts"),
      edge("src/b.ts", "src/c.ts"),
      edge("src/c.ts", "src/a.ts"),
      edge("src/c.ts", "src/d.ts"),
    ];
    expect(importCircles(planted)).toEqual([["src/a.ts", "src/b.ts", "src/c.ts"]]);
    const lazy = [edge("src/x.ts", "src/y.ts"), edge("src/y.ts", "src/x.ts", true)];
    expect(importCircles(lazy)).toEqual([["src/x.ts", "src/y.ts"]]);
    expect(importCircles(lazy, false)).toEqual([]);
    expect(importCircles([edge("src/s.ts", "src/s.ts")])).toEqual([["src/s.ts"]]);
  });
  test("flags an arrow up the layers, not one down or across", () => {
    const up = [
      edge("src/config/schema.ts", "src/edge/proxy/retry-policy.ts"),
      edge("src/router/x.ts", "src/core/ids.ts"),
      edge("src/fleet/a.ts", "src/sync/b.ts"),
    ];
    expect(upwardArrows(up)).toEqual(["src/config/schema.ts -> src/edge/proxy/retry-policy.ts"]);
    expect(layerOf("src/runtime/bun-compiled.ts")).toBeGreaterThan(layerOf("src/main.ts")!);
  });
});
