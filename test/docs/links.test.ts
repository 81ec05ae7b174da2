/**
 * Every relative link in the repository's Markdown resolves: the file (or folder) it names
 * exists, and a `#anchor` into a Markdown file names one of its headings (GitHub's slugs) or
 * an explicit `<a id>`. Documentation moves between pages; this keeps the pages pointing at
 * each other truthfully. External links (http, https, mailto) are not fetched.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const ROOT = join(import.meta.dir, "..", "..");

/** Folders that hold no documentation of ours: dependencies, build output, git's own. */
const SKIP = new Set(["node_modules", ".git", "dist", "build"]);

function walk(dir: string, out: string[]): void {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (SKIP.has(e.name)) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else if (e.name.endsWith(".md")) out.push(relative(ROOT, p));
  }
}

/**
 * The Markdown files git tracks or would track (untracked but not ignored), so a new page is
 * checked before its commit; outside a git checkout, every .md file but dependencies and builds.
 */
function markdownFiles(): string[] {
  const r = Bun.spawnSync(
    ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"],
    { cwd: ROOT, stderr: "ignore" },
  );
  let files: string[];
  if (r.exitCode === 0) files = r.stdout.toString().split("\n");
  else {
    files = [];
    walk(ROOT, files);
  }
  return [...new Set(files.filter((p) => p !== "" && existsSync(join(ROOT, p))))].sort();
}

/** The text outside fenced code blocks and inline code spans, line by line (code may hold anything link-shaped). */
function proseLines(text: string, keepCodeSpans = false): { line: number; text: string }[] {
  const out: { line: number; text: string }[] = [];
  let fence: string | undefined;
  text.split("\n").forEach((raw, i) => {
    const m = /^\s*(`{3,}|~{3,})/.exec(raw);
    if (m) {
      if (fence === undefined) fence = m[1]![0]!;
      else if (m[1]![0] === fence) fence = undefined;
      return;
    }
    if (fence === undefined)
      out.push({ line: i + 1, text: keepCodeSpans ? raw : raw.replace(/`[^`]*`/g, "``") });
  });
  return out;
}

/** `[text](target)` and `![alt](target)` targets, without an optional title. */
export function linkTargets(text: string): { line: number; target: string }[] {
  const out: { line: number; target: string }[] = [];
  for (const { line, text: prose } of proseLines(text)) {
    for (const m of prose.matchAll(/\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+"[^"]*")?\s*\)/g)) {
      out.push({ line, target: m[1]!.replace(/^<|>$/g, "") });
    }
  }
  return out;
}

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2, … */
export function headingAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fence: string | undefined;
  for (const raw of text.split("\n")) {
    const f = /^\s*(`{3,}|~{3,})/.exec(raw);
    if (f) {
      if (fence === undefined) fence = f[1]![0]!;
      else if (f[1]![0] === fence) fence = undefined;
      continue;
    }
    if (fence !== undefined) continue;
    for (const m of raw.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1]!);
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(raw);
    if (!h) continue;
    const plain = h[1]!
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
      .replace(/<[^>]+>/g, "")
      .toLowerCase();
    const base = plain.replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

const anchorCache = new Map<string, Set<string>>();
function anchorsOf(path: string): Set<string> {
  let a = anchorCache.get(path);
  if (a === undefined) {
    a = headingAnchors(readFileSync(path, "utf8"));
    anchorCache.set(path, a);
  }
  return a;
}

/** Every broken relative link of one file, as "file:line: target (why)". */
function brokenLinks(file: string): string[] {
  const abs = join(ROOT, file);
  const text = readFileSync(abs, "utf8");
  const out: string[] = [];
  for (const { line, target } of linkTargets(text)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
    const hash = target.indexOf("#");
    const pathPart = decodeURI(hash === -1 ? target : target.slice(0, hash));
    const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
    const dest =
      pathPart === ""
        ? abs
        : pathPart.startsWith("/")
          ? join(ROOT, pathPart)
          : resolve(dirname(abs), pathPart);
    const where = `${file}:${line}: ${target}`;
    if (relative(ROOT, dest).startsWith("..")) {
      out.push(`${where} (outside the repository)`);
      continue;
    }
    if (!existsSync(dest)) {
      out.push(`${where} (no such file)`);
      continue;
    }
    if (
      anchor === undefined ||
      anchor === "" ||
      !dest.endsWith(".md") ||
      statSync(dest).isDirectory()
    )
      continue;
    if (!anchorsOf(dest).has(anchor))
      out.push(`${where} (no heading #${anchor} in ${relative(ROOT, dest)})`);
  }
  return out;
}

/**
 * Repository paths named in code spans (`src/router/books/`, `test/chaos/x.test.ts`) in the pages
 * a newcomer reads: README.md, docs/, bench/README.md and the src folder READMEs. They are not
 * links, but they go stale the same way when files move. Build outputs are not checked.
 */
function stalePaths(file: string): string[] {
  const out: string[] = [];
  for (const { line, text } of proseLines(readFileSync(join(ROOT, file), "utf8"), true)) {
    for (const m of text.matchAll(
      /`((?:src|test|bench|deploy|ffi|cuda|docs|scripts)\/[A-Za-z0-9_./-]+)`/g,
    )) {
      const path = m[1]!;
      if (path.startsWith("ffi/build") || path.startsWith("dist/")) continue;
      if (!existsSync(join(ROOT, path))) out.push(`${file}:${line}: ${path}`);
    }
  }
  return out;
}

const NEWCOMER_PAGES = (f: string): boolean =>
  f === "README.md" ||
  f === "bench/README.md" ||
  f.startsWith("docs/") ||
  (f.startsWith("src/") && f.endsWith("/README.md"));

describe("Markdown links", () => {
  test("GitHub's anchors: punctuation dropped, repeats numbered", () => {
    const a = headingAnchors(
      "# Many workers (`bench/scale/workers.ts`)\n## Issue 14: the peers' policies\n## Tests\n## Tests\n```\n# not a heading\n```\n",
    );
    expect([...a]).toEqual([
      "many-workers-benchscaleworkersts",
      "issue-14-the-peers-policies",
      "tests",
      "tests-1",
    ]);
  });

  test("links in code are not links", () => {
    expect(
      linkTargets("see [a](x.md) and `[b](y.md)`\n```\n[c](z.md)\n```\n").map((l) => l.target),
    ).toEqual(["x.md"]);
  });

  test("every relative link in every Markdown file resolves, anchors included", () => {
    const files = markdownFiles();
    for (const must of ["README.md", "docs/running.md", "bench/README.md"])
      expect(files).toContain(must);
    expect(files.flatMap(brokenLinks)).toEqual([]);
  });

  test("repository paths in code spans of README, docs/ and the src READMEs exist", () => {
    const files = markdownFiles().filter(NEWCOMER_PAGES);
    expect(files.length).toBeGreaterThan(20);
    expect(files.flatMap(stalePaths)).toEqual([]);
  });
});
