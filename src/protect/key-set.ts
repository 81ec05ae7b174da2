/**
 * The configured client keys, as their SHA-256 digests, and the one question asked of them:
 * which tenant does this presented key speak for? The presented key is hashed (Web Crypto,
 * on every runtime) and looked up by its digest; the match is then confirmed by comparing the
 * digests without an early exit. Looking up by digest (a binary search over the sorted digests)
 * means lookup time depends only on the
 * hash of what a client sent, never on how much of a real key it got right, so a key cannot
 * be guessed byte by byte from response times. Keys are never kept in clear.
 */
import type { KeyEntry } from "./keys-document.ts";
import type { Tenant } from "./tenant.ts";

const encoder = new TextEncoder();
/** Hex characters of one SHA-256 digest. */
const DIGEST_CHARS = 64;

/**
 * The keys packed for a cheap hand-over (a Worker parses the file and packs them): every
 * digest in one string, sorted, DIGEST_CHARS each; each digest's tenant as an index; the
 * tenants once each. A reload of 100,000 keys then costs the event loop no Map of 100,000
 * entries to build, only the hand-over.
 */
export interface PackedKeys {
  readonly digests: string;
  readonly tenantOf: Uint32Array;
  readonly tenants: readonly Tenant[];
}

/** Pack `entries` (lower-case hex digests, unique: keys-document.ts checks both). */
export function packKeys(entries: readonly KeyEntry[]): PackedKeys {
  const sorted = [...entries].sort((a, b) =>
    a.sha256 < b.sha256 ? -1 : a.sha256 > b.sha256 ? 1 : 0,
  );
  const index = new Map<Tenant, number>();
  const tenants: Tenant[] = [];
  const tenantOf = new Uint32Array(sorted.length);
  sorted.forEach((e, i) => {
    let t = index.get(e.tenant);
    if (t === undefined) {
      index.set(e.tenant, (t = tenants.length));
      tenants.push(e.tenant);
    }
    tenantOf[i] = t;
  });
  return { digests: sorted.map((e) => e.sha256).join(""), tenantOf, tenants };
}

export class KeySet {
  readonly #keys: PackedKeys;
  /** Every configured tenant once (keys of one tenant share it). */
  readonly tenants: readonly Tenant[];

  constructor(keys: readonly KeyEntry[] | PackedKeys) {
    this.#keys = Array.isArray(keys) ? packKeys(keys as readonly KeyEntry[]) : (keys as PackedKeys);
    this.tenants = this.#keys.tenants;
  }

  get size(): number {
    return this.#keys.tenantOf.length;
  }

  /** The tenant `key` speaks for, or undefined for a key that is not configured. */
  async lookup(key: string): Promise<Tenant | undefined> {
    const digest = await sha256Hex(key);
    const i = this.#find(digest);
    if (i < 0) return undefined;
    const at = i * DIGEST_CHARS;
    if (!timingSafeEqualHex(this.#keys.digests.slice(at, at + DIGEST_CHARS), digest))
      return undefined;
    return this.#keys.tenants[this.#keys.tenantOf[i]!];
  }

  /** A configured tenant by name (after a reload, its counters keep their name). */
  tenant(name: string): Tenant | undefined {
    return this.tenants.find((t) => t.name === name);
  }

  /**
   * The index of `digest` among the sorted digests, or -1. A binary search by the digest of
   * what the client sent: its steps depend on that hash, never on how much of a real key a
   * guess got right (the match is confirmed without an early exit in lookup).
   */
  #find(digest: string): number {
    const all = this.#keys.digests;
    let lo = 0;
    let hi = this.#keys.tenantOf.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const d = all.slice(mid * DIGEST_CHARS, (mid + 1) * DIGEST_CHARS);
      if (d === digest) return mid;
      if (d < digest) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }
}

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
