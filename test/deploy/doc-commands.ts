/**
 * The image commands as docs/deploying.md gives them, so the image test runs the page's own
 * lines: the fenced `sh` block under "## Build the image", its host setting (the
 * containers.conf the page writes, for CONTAINERS_CONF) and the arguments of its `docker build`
 * and `docker run` lines, expanded by bash exactly as a reader's shell would (the
 * `$(git rev-parse …)` included). Comments after `#` are dropped; nothing else is changed.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

export const DEPLOYING_MD = join(import.meta.dir, "..", "..", "docs", "deploying.md");
const HEADING = "## Build the image";

export interface ImageDocCommands {
  /** Every command line of the block, comments dropped. */
  readonly lines: readonly string[];
  /** The line that writes containers.conf and exports CONTAINERS_CONF. */
  readonly hostSetting: string;
  /** `docker build`'s arguments and `docker run`'s, unexpanded (shell words). */
  readonly build: string;
  readonly run: string;
}

/** The block under the image heading of `markdown`; throws naming what is missing. */
export function imageDocCommands(
  markdown: string = readFileSync(DEPLOYING_MD, "utf8"),
): ImageDocCommands {
  const at = markdown.indexOf(`\n${HEADING}\n`);
  if (at < 0) throw new Error(`docs/deploying.md: no "${HEADING}" heading`);
  const section = markdown.slice(at + HEADING.length + 2);
  const m = /^```sh\n([\s\S]*?)\n```/m.exec(
    section.slice(0, section.search(/\n## /) >= 0 ? section.search(/\n## /) : undefined),
  );
  if (m === null) throw new Error(`docs/deploying.md: no \`\`\`sh block under "${HEADING}"`);
  const lines = m[1]!
    .split("\n")
    .map((l) =>
      l
        .replace(/\s+#(?![^']*'[^']*$).*$/, "")
        .replace(/^#.*$/, "")
        .trim(),
    )
    .filter((l) => l !== "");
  const find = (what: string, test: (l: string) => boolean): string => {
    const l = lines.find(test);
    if (l === undefined) throw new Error(`docs/deploying.md: the image block has no ${what} line`);
    return l;
  };
  return {
    lines,
    hostSetting: find("CONTAINERS_CONF", (l) => l.includes("CONTAINERS_CONF=")),
    build: find("`docker build`", (l) => l.startsWith("docker build ")).slice(
      "docker build ".length,
    ),
    run: find("`docker run`", (l) => l.startsWith("docker run ")).slice("docker run ".length),
  };
}

/** Shell words as bash splits and expands them in `cwd` (command substitutions run there). */
export function shellWords(
  words: string,
  cwd: string,
  env: Record<string, string | undefined> = process.env,
): string[] {
  const r = Bun.spawnSync({
    cmd: ["bash", "-c", `printf '%s\\0' ${words}`],
    cwd,
    env,
    stdout: "pipe",
    stderr: "pipe",
  });
  if (r.exitCode !== 0) throw new Error(`bash could not expand ${words}: ${r.stderr.toString()}`);
  return r.stdout.toString().split("\0").slice(0, -1);
}

/**
 * The containers.conf the page's host setting writes, and the CONTAINERS_CONF it exports:
 * its line run by bash in `dir`.
 */
export function runHostSetting(line: string, dir: string): { path: string; content: string } {
  const r = Bun.spawnSync({
    cmd: ["bash", "-c", `${line} && printf '%s' "$CONTAINERS_CONF"`],
    cwd: dir,
    stdout: "pipe",
    stderr: "pipe",
  });
  if (r.exitCode !== 0) throw new Error(`the page's host setting failed: ${r.stderr.toString()}`);
  const path = r.stdout.toString();
  return { path, content: readFileSync(path, "utf8") };
}

/**
 * The Compose section's `podman compose` line (its arguments after `podman compose`), and the
 * `.env.example` it copies, from the fenced `sh` block under "## Compose".
 */
export function composeDocCommand(markdown: string = readFileSync(DEPLOYING_MD, "utf8")): {
  args: string;
  envFile: string;
} {
  const heading = "## Compose";
  const at = markdown.indexOf(`\n${heading}\n`);
  if (at < 0) throw new Error(`docs/deploying.md: no "${heading}" heading`);
  const m = /^```sh\n([\s\S]*?)\n```/m.exec(markdown.slice(at + heading.length + 2));
  if (m === null) throw new Error(`docs/deploying.md: no \`\`\`sh block under "${heading}"`);
  const lines = m[1]!.split("\n").map((l) => l.replace(/\s+#.*$/, "").trim());
  const up = lines.find((l) => l.startsWith("podman compose "));
  const cp = lines.find((l) => l.startsWith("cp "));
  if (up === undefined || cp === undefined)
    throw new Error("docs/deploying.md: the Compose block has no `cp` or `podman compose` line");
  return { args: up.slice("podman compose ".length), envFile: cp.split(/\s+/)[1]! };
}
