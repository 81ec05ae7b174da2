/**
 * What this build is: the package version, the git commit it was compiled from, and the
 * runtime running it — for `switchyard --version` and the router's GET /version. The version
 * is package.json's (one place to bump; bundled into a compiled binary with it); the commit is
 * injected by `bun run compile` (`--define SWITCHYARD_COMMIT=...`), so a router run from
 * source, where no build step ran, says "unknown". The runtime is the web-standard
 * `navigator.userAgent` ("Bun/1.4.5", "Deno/2.9.6", "Cloudflare-Workers"), so nothing
 * runtime-specific is touched. Pure: it reads no process or file state.
 */
import pkg from "../../package.json" with { type: "json" };

/** Replaced by `bun build --define` at compile time; undeclared (typeof "undefined") otherwise. */
declare const SWITCHYARD_COMMIT: string | undefined;

export interface BuildInfo {
  readonly version: string;
  readonly commit: string;
  /** The runtime's user agent as GET /version reports it: "Bun/1.4.5", "Deno/2.9.6", "Cloudflare-Workers", or "unknown". */
  readonly runtime: string;
}

export function buildInfo(): BuildInfo {
  // typeof: an identifier nobody defined is no ReferenceError this way.
  const commit =
    typeof SWITCHYARD_COMMIT === "string" && SWITCHYARD_COMMIT !== ""
      ? SWITCHYARD_COMMIT
      : "unknown";
  const agent = typeof navigator !== "undefined" ? navigator.userAgent : undefined;
  return { version: pkg.version, commit, runtime: agent || "unknown" };
}

/** The runtime, for people, from its user agent: "bun 1.4.5", "deno 2.9.6", "workerd", or "unknown". */
export function runtimeName(userAgent: string | undefined): string {
  const m = /^(Bun|Deno)\/(\S+)/.exec(userAgent ?? "");
  if (m) return `${m[1]!.toLowerCase()} ${m[2]}`;
  return userAgent === "Cloudflare-Workers" ? "workerd" : "unknown";
}

/** `switchyard 0.1.0 (abc1234, bun 1.4.5)`: the --version line. */
export function versionLine(info: BuildInfo = buildInfo()): string {
  return `switchyard ${info.version} (${info.commit}, ${runtimeName(info.runtime)})`;
}
