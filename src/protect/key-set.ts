/**
 * The configured client keys, as their SHA-256 digests, and the one question asked of them:
 * which tenant does this presented key speak for? The presented key is hashed (Web Crypto,
 * on every runtime) and looked up by its digest; the match is then confirmed by comparing the
 * digests without an early exit. Looking up by digest means lookup time depends only on the
 * hash of what a client sent, never on how much of a real key it got right, so a key cannot
 * be guessed byte by byte from response times. Keys are never kept in clear.
 */
import type { KeyEntry } from "./keys-document.ts";
import type { Tenant } from "./tenant.ts";

const encoder = new TextEncoder();

export class KeySet {
  readonly #byDigest: Map<string, KeyEntry>;
  /** Every configured tenant once (keys of one tenant share it). */
  readonly tenants: readonly Tenant[];

  constructor(entries: readonly KeyEntry[]) {
    this.#byDigest = new Map(entries.map((e) => [e.sha256, e]));
    this.tenants = [...new Set(entries.map((e) => e.tenant))];
  }

  get size(): number {
    return this.#byDigest.size;
  }

  /** The tenant `key` speaks for, or undefined for a key that is not configured. */
  async lookup(key: string): Promise<Tenant | undefined> {
    const digest = await sha256Hex(key);
    const entry = this.#byDigest.get(digest);
    if (entry === undefined || !timingSafeEqualHex(entry.sha256, digest)) return undefined;
    return entry.tenant;
  }

  /** A configured tenant by name (after a reload, its counters keep their name). */
  tenant(name: string): Tenant | undefined {
    return this.tenants.find((t) => t.name === name);
  }
}

/** SHA-256 of the UTF-8 text, lower-case hex: the form the keys file stores. */
export async function sha256Hex(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
  let hex = "";
  for (const b of digest) hex += b.toString(16).padStart(2, "0");
  return hex;
}

/** Equal-length hex strings compared without an early exit. */
function timingSafeEqualHex(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** The key in an `Authorization: Bearer KEY` header value, or undefined. */
export function bearerKey(authorization: string | null): string | undefined {
  if (authorization === null) return undefined;
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
  return m?.[1];
}
