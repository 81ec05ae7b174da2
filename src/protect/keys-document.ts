/**
 * `--api-keys FILE`: the document (already parsed from JSON or YAML) -> the key entries.
 * Each key is stored as the SHA-256 of the key, in hex, never in clear: the file can be read
 * by whoever deploys the router without handing them the clients' keys.
 *
 *   defaults:                       # optional; a key inherits what it does not set
 *     limits: {requests_per_minute: 600}
 *     output_tokens: 256            # booked when a request names no max_tokens
 *   keys:
 *     - tenant: team-a
 *       key_sha256: 9f86d0…         # printf %s "$KEY" | sha256sum
 *       priority: 0                 # band: lower first; a request's priority may not go below it
 *       weight: 2                   # share in fair admission within the band (default 1)
 *       models: [llama-3-8b, "team-a-*"]
 *       limits: {requests_per_minute: 600, prompt_tokens_per_minute: 200000,
 *                output_tokens_per_minute: 50000, concurrent_requests: 32}
 *
 * A bare list is read as `keys`. Several keys may speak for one tenant (rotation): they must
 * then agree on everything but the key. Every problem names the entry and the field; an
 * unknown field is an error, never ignored. Pure.
 */
import { DEFAULT_OUTPUT_TOKENS, type Tenant, type TenantLimits } from "./tenant.ts";

/** One configured key: its SHA-256 (hex, lower case) and the tenant it speaks for. */
export interface KeyEntry {
  readonly sha256: string;
  readonly tenant: Tenant;
}

/** What a document may hold at most: the file is re-read on change, and a mistake must not cost memory. */
export const MAX_KEYS = 100_000;

const TENANT_NAME = /^[A-Za-z0-9._-]{1,64}$/;
const SHA256_HEX = /^[0-9a-fA-F]{64}$/;
const LIMIT_FIELDS: Readonly<Record<string, keyof TenantLimits>> = {
  requests_per_minute: "requestsPerMinute",
  prompt_tokens_per_minute: "promptTokensPerMinute",
  output_tokens_per_minute: "outputTokensPerMinute",
  concurrent_requests: "concurrentRequests",
};
const KEY_FIELDS = new Set([
  "tenant",
  "key_sha256",
  "priority",
  "weight",
  "models",
  "limits",
  "output_tokens",
]);
const DEFAULT_FIELDS = new Set(["priority", "weight", "models", "limits", "output_tokens"]);

/** A keys file that cannot be used; the message names the entry and the field. */
export class KeysFileError extends Error {
  override readonly name = "KeysFileError";
}

/** Read the parsed document; throws KeysFileError naming what is wrong. `where` prefixes messages (the path). */
export function parseKeysDocument(doc: unknown, where: string): KeyEntry[] {
  const fail = (at: string, message: string): never => {
    throw new KeysFileError(`${where}: ${at}: ${message}`);
  };
  let list: unknown;
  let defaults: Record<string, unknown> = {};
  if (Array.isArray(doc)) list = doc;
  else if (isObject(doc)) {
    for (const k of Object.keys(doc))
      if (k !== "keys" && k !== "defaults")
        fail(k, `unknown field (expected "keys" and optionally "defaults")`);
    list = doc.keys;
    if (doc.defaults !== undefined) {
      if (!isObject(doc.defaults)) fail("defaults", "must be an object");
      defaults = doc.defaults as Record<string, unknown>;
      for (const k of Object.keys(defaults))
        if (!DEFAULT_FIELDS.has(k))
          fail(`defaults.${k}`, `unknown field (expected ${[...DEFAULT_FIELDS].join(", ")})`);
    }
  }
  if (!Array.isArray(list)) return fail("keys", 'expected a list of keys, or {"keys": [...]}');
  if (list.length > MAX_KEYS) fail("keys", `${list.length} entries; at most ${MAX_KEYS}`);
  const base = tenantFields(defaults, "defaults", fail);
  const out: KeyEntry[] = [];
  const byHash = new Map<string, number>();
  const byTenant = new Map<string, { index: number; tenant: Tenant; fingerprint: string }>();
  list.forEach((entry: unknown, i: number) => {
    const at = `keys[${i}]`;
    if (!isObject(entry)) fail(at, "must be an object with tenant and key_sha256");
    const e = entry as Record<string, unknown>;
    for (const k of Object.keys(e))
      if (!KEY_FIELDS.has(k))
        fail(`${at}.${k}`, `unknown field (expected ${[...KEY_FIELDS].join(", ")})`);
    if (typeof e.tenant !== "string" || !TENANT_NAME.test(e.tenant))
      fail(
        `${at}.tenant`,
        "must be 1-64 letters, digits, '.', '_' or '-' (it becomes a metrics label)",
      );
    if (typeof e.key_sha256 !== "string" || !SHA256_HEX.test(e.key_sha256)) {
      fail(
        `${at}.key_sha256`,
        'must be the key\'s SHA-256 as 64 hex digits (printf %s "$KEY" | sha256sum), never the key itself',
      );
    }
    const sha256 = (e.key_sha256 as string).toLowerCase();
    const dup = byHash.get(sha256);
    if (dup !== undefined) fail(`${at}.key_sha256`, `the same key as keys[${dup}]`);
    byHash.set(sha256, i);
    const own = tenantFields(e, at, fail);
    const tenant: Tenant = {
      name: e.tenant as string,
      limits: { ...base.limits, ...own.limits },
      priority: own.priority ?? base.priority,
      weight: own.weight ?? base.weight ?? 1,
      models: own.models ?? base.models,
      defaultOutputTokens: own.outputTokens ?? base.outputTokens ?? DEFAULT_OUTPUT_TOKENS,
    };
    const fingerprint = JSON.stringify([
      tenant.limits,
      tenant.priority,
      tenant.weight,
      tenant.models,
      tenant.defaultOutputTokens,
    ]);
    const same = byTenant.get(tenant.name);
    if (same !== undefined && same.fingerprint !== fingerprint) {
      fail(
        at,
        `tenant ${tenant.name} is also keys[${same.index}], with other limits, priority, weight, models or output_tokens; keys of one tenant must agree`,
      );
    }
    if (same === undefined) byTenant.set(tenant.name, { index: i, tenant, fingerprint });
    // Keys of one tenant share one Tenant object, so its counters are one.
    out.push({ sha256, tenant: same?.tenant ?? tenant });
  });
  return out;
}

interface TenantFields {
  readonly limits: TenantLimits;
  readonly priority?: number;
  readonly weight?: number;
  readonly models?: readonly string[];
  readonly outputTokens?: number;
}

function tenantFields(
  o: Record<string, unknown>,
  at: string,
  fail: (at: string, message: string) => never,
): TenantFields {
  const limits: Record<string, number> = {};
  if (o.limits !== undefined) {
    if (!isObject(o.limits)) fail(`${at}.limits`, "must be an object");
    for (const [k, v] of Object.entries(o.limits as Record<string, unknown>)) {
      const field = LIMIT_FIELDS[k];
      if (field === undefined)
        fail(
          `${at}.limits.${k}`,
          `unknown limit (expected ${Object.keys(LIMIT_FIELDS).join(", ")})`,
        );
      if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 1)
        fail(`${at}.limits.${k}`, "must be an integer >= 1 (leave it out for no limit)");
      limits[field!] = v as number;
    }
  }
  if (
    o.priority !== undefined &&
    (typeof o.priority !== "number" || !Number.isSafeInteger(o.priority))
  )
    fail(`${at}.priority`, "must be an integer (lower is served first)");
  if (
    o.weight !== undefined &&
    (typeof o.weight !== "number" ||
      !(o.weight > 0) ||
      !Number.isFinite(o.weight) ||
      o.weight > 1e6)
  ) {
    fail(`${at}.weight`, "must be a number > 0 (at most 1e6)");
  }
  if (
    o.output_tokens !== undefined &&
    (typeof o.output_tokens !== "number" ||
      !Number.isSafeInteger(o.output_tokens) ||
      o.output_tokens < 1)
  ) {
    fail(`${at}.output_tokens`, "must be an integer >= 1");
  }
  let models: string[] | undefined;
  if (o.models !== undefined) {
    if (!Array.isArray(o.models) || o.models.some((m) => typeof m !== "string" || m === ""))
      fail(`${at}.models`, "must be a list of model names (* = any run of characters)");
    models = o.models as string[];
  }
  return {
    limits,
    priority: o.priority as number | undefined,
    weight: o.weight as number | undefined,
    models,
    outputTokens: o.output_tokens as number | undefined,
  };
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}
