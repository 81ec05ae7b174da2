/**
 * What this build is: the package version, the commit it was built from and the runtime it
 * runs on, for GET /version and the logs. The version comes from package.json (bundled into a
 * compiled binary with it); the commit from a build-time define (`bun build --define
 * SWITCHYARD_COMMIT='"<sha>"'`), "unknown" when the build gave none (running from source).
 * The runtime is the web-standard `navigator.userAgent` ("Bun/1.4.5", "Deno/2.x",
 * "Cloudflare-Workers"), so nothing runtime-specific is imported here.
 */
import pkg from "../../package.json" with { type: "json" };

/** Replaced by the bundler's define; absent when running from source. */
declare const SWITCHYARD_COMMIT: string | undefined;

export interface BuildInfo {
  readonly version: string;
  readonly commit: string;
  readonly runtime: string;
}

export function buildInfo(): BuildInfo {
  // typeof: an identifier nobody defined is no ReferenceError this way.
  const commit = typeof SWITCHYARD_COMMIT === "string" && SWITCHYARD_COMMIT !== "" ? SWITCHYARD_COMMIT : "unknown";
  const agent = typeof navigator !== "undefined" ? navigator.userAgent : undefined;
  return { version: pkg.version, commit, runtime: agent || "unknown" };
}
