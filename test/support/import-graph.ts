/**
 * The static import graph of src/, read from the code's own relative imports (`import … from`,
 * `export … from`, `import "…"`, `import type`, and lazy `import("…")`), for the architecture
 * test's circle and layering rules and for `bun test/support/import-graph.ts`, which prints the
 * figures.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

export const ROOT = join(import.meta.dir, "..", "..");

/** Every .ts file under `dir` (absolute), depth first. */
export function tsFiles(dir: string): string[] {
  let out: string[] = [];
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const e of entries.sort()) {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) out = out.concat(tsFiles(p));
    else if (p.endsWith(".ts")) out.push(p);
  }
  return out;
}

/** Strip comments so documentation may name what the code must not use. */
export function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`])\/\/.*$/gm, "$1");
}

export interface ImportEdge {
  /** Repository-relative path of the importing file (src/…). */
  readonly from: string;
  /** Repository-relative path of the imported file. */
  readonly to: string;
  /** A lazy `import("…")`, loaded when first called rather than with the module. */
  readonly lazy: boolean;
}

const STATIC_IMPORT =
  /(?:^|[\s;}])(?:import|export)\b[^"'`;]*?\bfrom\s*["'](\.{1,2}\/[^"']+)["']|(?:^|[\s;])import\s*["'](\.{1,2}\/[^"']+)["']/g;
const LAZY_IMPORT = /\bimport\s*\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g;

const repoPath = (file: string, spec: string): string =>
  relative(ROOT, resolve(dirname(file), spec))
    .split("\\")
    .join("/");

/** The relative imports of `text`, a file at absolute path `file`. */
export function importsOf(file: string, text: string): ImportEdge[] {
  const from = relative(ROOT, file).split("\\").join("/");
  const body = code(text);
  const out: ImportEdge[] = [];
  for (const m of body.matchAll(STATIC_IMPORT))
    out.push({ from, to: repoPath(file, (m[1] ?? m[2])!), lazy: false });
  for (const m of body.matchAll(LAZY_IMPORT))
    out.push({ from, to: repoPath(file, m[1]!), lazy: true });
  return out;
}

/** Every import edge between .ts files of src/ (edges to non-.ts files such as package.json are left out). */
export function srcImportGraph(root = ROOT): ImportEdge[] {
  const files = tsFiles(join(root, "src"));
  return files
    .flatMap((f) => importsOf(f, readFileSync(f, "utf8")))
    .filter((e) => e.to.endsWith(".ts"));
}

/**
 * The import circles: strongly connected components of more than one file (or a file importing
 * itself), each sorted, listed in a stable order. Tarjan's algorithm, iterative.
 */
export function importCircles(edges: readonly ImportEdge[], withLazy = true): string[][] {
  const next = new Map<string, string[]>();
  for (const e of edges) {
    if (e.lazy && !withLazy) continue;
    if (!next.has(e.from)) next.set(e.from, []);
    if (!next.has(e.to)) next.set(e.to, []);
    next.get(e.from)!.push(e.to);
  }
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const out: string[][] = [];
  for (const start of [...next.keys()].sort()) {
    if (index.has(start)) continue;
    const work: [string, number][] = [[start, 0]];
    index.set(start, counter);
    low.set(start, counter++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const top = work[work.length - 1]!;
      const [v, i] = top;
      const succ = next.get(v)!;
      if (i < succ.length) {
        top[1] = i + 1;
        const w = succ[i]!;
        if (!index.has(w)) {
          index.set(w, counter);
          low.set(w, counter++);
          stack.push(w);
          onStack.add(w);
          work.push([w, 0]);
        } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1]![0];
        low.set(parent, Math.min(low.get(parent)!, low.get(v)!));
      }
      if (low.get(v) === index.get(v)) {
        const comp: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          comp.push(w);
        } while (w !== v);
        if (comp.length > 1 || succ.includes(v)) out.push(comp.sort());
      }
    }
  }
  return out.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

/**
 * The layers of src/, lowest first: a file may import its own layer and those below, never one
 * above. A folder is matched by its longest listed prefix.
 * - core: the shared vocabulary (ids, errors, logger, rng, hashing).
 * - protocol, tokens: wire shapes and the tokenizer seam.
 * - router, protect: the pure decision and the tenant limits.
 * - fleet, sync, observe, config: the workers, the shared state, what we count and log, and the
 *   options (config reads the router's, the limits' and the workers' types and defaults).
 * - edge: HTTP.
 * - runtime: each runtime's composition.
 * - main: the command line.
 * - runtime/bun-compiled.ts: the single binary's entry, which runs the command line.
 * mocker and transfer are separate programs (their own folder rules apply) and sit beside edge.
 */
export const LAYERS: readonly (readonly string[])[] = [
  ["src/core"],
  ["src/protocol", "src/tokens"],
  ["src/router", "src/protect"],
  ["src/fleet", "src/sync", "src/observe", "src/config"],
  ["src/edge", "src/mocker", "src/transfer"],
  ["src/runtime"],
  ["src/main.ts"],
  ["src/runtime/bun-compiled.ts"],
];

/** The layer number of a repository path, or undefined for a path outside every listed folder. */
export function layerOf(path: string): number | undefined {
  let best: { layer: number; len: number } | undefined;
  LAYERS.forEach((dirs, layer) => {
    for (const d of dirs) {
      if ((path === d || path.startsWith(`${d}/`)) && (!best || d.length > best.len))
        best = { layer, len: d.length };
    }
  });
  return best?.layer;
}

/** Imports that run from a lower layer up to a higher one, as "from -> to". */
export function upwardArrows(edges: readonly ImportEdge[]): string[] {
  return edges
    .filter((e) => {
      const a = layerOf(e.from);
      const b = layerOf(e.to);
      return a !== undefined && b !== undefined && b > a;
    })
    .map((e) => `${e.from} -> ${e.to}${e.lazy ? " (lazy)" : ""}`)
    .sort();
}

if (import.meta.main) {
  const edges = srcImportGraph();
  const strict = importCircles(edges, false);
  const all = importCircles(edges, true);
  console.log(
    `files: ${new Set(edges.flatMap((e) => [e.from, e.to])).size}, imports: ${edges.length}`,
  );
  console.log(`circles (static imports): ${strict.length}`);
  console.log(`circles (with lazy import()): ${all.length}`);
  for (const c of all) console.log(`  [${c.length}] ${c.join(", ")}`);
  const up = upwardArrows(edges);
  console.log(`upward arrows: ${up.length}`);
  for (const a of up) console.log(`  ${a}`);
}
