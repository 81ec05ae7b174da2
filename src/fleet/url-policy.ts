/**
 * Which URLs POST /v1/workers may register. Registering the router as its
 * own worker made it proxy to itself: one request opened 500+ file descriptors and grew
 * RSS by 86 MB. And a router that registers whatever URL an admin client sends can be made
 * to send requests (and its index queries) anywhere.
 *
 * A URL is refused when:
 * 1. `--worker-allow` patterns are set and it matches none (`*` = any run of characters,
 *    matched against the normalized URL `scheme://host:port/path`, e.g.
 *    `http://10.0.0.*:8000`);
 * 2. it names this router's own listening port on a local address: a loopback host
 *    (127.0.0.0/8, ::1, localhost), an unspecified one (0.0.0.0, ::), one of the machine's
 *    interface addresses or its host name (all injected);
 * 3. it answers `GET {url}/health` as a Switchyard router (the `x-switchyard-router-id`
 *    header every router sets there): this router behind another name, or any router of
 *    the cluster. A URL that does not answer is not refused for that (an engine may start
 *    after it is registered; the health checker then decides).
 * Names that resolve to this machine through DNS other than its host name are caught by 3.
 */
import { RouterError } from "../core/errors.ts";
import { globToRegExp } from "./lora/adapter-name.ts";

/** Set by every router on its /health answer; a URL answering with it is a router, not an engine. */
export const ROUTER_ID_HEADER = "x-switchyard-router-id";

export interface WorkerUrlPolicyOptions {
  /** `--worker-allow` patterns; empty = any URL (other than this router). */
  readonly allow: readonly string[];
  /** This router's listening port (known once it listens). */
  readonly ownPort: () => number | undefined;
  /** Host names and addresses that are this machine (interfaces, host name). */
  readonly localHosts: () => readonly string[];
  /** GET with a deadline, for the router-identity probe. */
  readonly fetch: (url: string, init: RequestInit) => Promise<Response>;
  /** Deadline of the identity probe (default 1 s). */
  readonly probeTimeoutMs?: number;
}

const ALWAYS_LOCAL = ["localhost", "0.0.0.0", "::", "::1", "[::]", "[::1]"];

export class WorkerUrlPolicy {
  readonly #allow: readonly RegExp[];

  constructor(private readonly o: WorkerUrlPolicyOptions) {
    this.#allow = o.allow.map(globToRegExp);
  }

  /** Throws a 400 naming `url` when the URL may not be registered. */
  async check(rawUrl: string): Promise<void> {
    let u: URL;
    try {
      u = new URL(rawUrl);
    } catch {
      return; // membership names a URL that does not parse
    }
    const normalized = `${u.protocol}//${u.host.toLowerCase()}${u.pathname.replace(/\/+$/, "")}`;
    const withPort = `${u.protocol}//${u.hostname.toLowerCase()}:${portOf(u)}${u.pathname.replace(/\/+$/, "")}`;
    if (
      this.#allow.length > 0 &&
      !this.#allow.some((p) => p.test(normalized) || p.test(withPort))
    ) {
      throw refuse(`${normalized} matches no --worker-allow pattern`);
    }
    if (this.isOwnAddress(u)) throw refuse(`${normalized} is this router's own address`);
    if (await this.#answersAsRouter(u))
      throw refuse(
        `${normalized} answers as a Switchyard router (${ROUTER_ID_HEADER}), not an engine`,
      );
  }

  /** The URL names this router's port on one of this machine's addresses. */
  isOwnAddress(u: URL): boolean {
    const port = this.o.ownPort();
    if (port === undefined || portOf(u) !== port) return false;
    const host = u.hostname.toLowerCase();
    const bare = host.replace(/^\[|\]$/g, "");
    if (
      ALWAYS_LOCAL.includes(host) ||
      ALWAYS_LOCAL.includes(bare) ||
      /^127\.\d+\.\d+\.\d+$/.test(bare)
    )
      return true;
    if (/^::ffff:127\./.test(bare) || bare === "::ffff:7f00:1") return true;
    return this.o.localHosts().some((h) => h.toLowerCase().replace(/^\[|\]$/g, "") === bare);
  }

  async #answersAsRouter(u: URL): Promise<boolean> {
    const base = u.href.replace(/\/+$/, "");
    try {
      const res = await this.o.fetch(`${base}/health`, {
        signal: AbortSignal.timeout(this.o.probeTimeoutMs ?? 1_000),
        redirect: "manual",
      });
      await res.body?.cancel().catch(() => {});
      return res.headers.get(ROUTER_ID_HEADER) !== null;
    } catch {
      return false;
    }
  }
}

function portOf(u: URL): number {
  if (u.port !== "") return Number(u.port);
  return u.protocol === "https:" ? 443 : 80;
}

function refuse(why: string): RouterError {
  return new RouterError("invalid_request", `url: ${why}`, "url");
}
