/**
 * The keys file: what it accepts, every problem named by entry and field, keys of one tenant
 * sharing it, and the key set's lookup by SHA-256 (keys never held in clear).
 */
import { describe, expect, test } from "bun:test";
import { bearerKey, KeySet, packKeys, sha256Hex } from "../../../src/protect/key-set.ts";
import { KeysFileError, parseKeysDocument } from "../../../src/protect/keys-document.ts";
import { DEFAULT_OUTPUT_TOKENS } from "../../../src/protect/tenant.ts";

const H1 = await sha256Hex("sk-one");
const H2 = await sha256Hex("sk-two");

describe("parseKeysDocument", () => {
  test("keys with tenants, limits, band, weight, models; defaults fill what a key leaves out", () => {
    const entries = parseKeysDocument(
      {
        defaults: {
          limits: { requests_per_minute: 60, concurrent_requests: 4 },
          output_tokens: 128,
        },
        keys: [
          {
            tenant: "team-a",
            key_sha256: H1.toUpperCase(),
            priority: 1,
            weight: 2,
            models: ["llama-*"],
            limits: { requests_per_minute: 600 },
          },
          { tenant: "team-b", key_sha256: H2 },
        ],
      },
      "keys.yaml",
    );
    expect(entries.map((e) => e.sha256)).toEqual([H1, H2]);
    expect(entries[0]!.tenant).toEqual({
      name: "team-a",
      limits: { requestsPerMinute: 600, concurrentRequests: 4 },
      priority: 1,
      weight: 2,
      models: ["llama-*"],
      defaultOutputTokens: 128,
    });
    expect(entries[1]!.tenant).toEqual({
      name: "team-b",
      limits: { requestsPerMinute: 60, concurrentRequests: 4 },
      priority: undefined,
      weight: 1,
      models: undefined,
      defaultOutputTokens: 128,
    });
  });

  test("a bare list is the keys; no defaults means weight 1 and the default output booking", () => {
    const [e] = parseKeysDocument([{ tenant: "t", key_sha256: H1 }], "k.json");
    expect(e!.tenant.weight).toBe(1);
    expect(e!.tenant.defaultOutputTokens).toBe(DEFAULT_OUTPUT_TOKENS);
    expect(e!.tenant.limits).toEqual({});
  });

  test("two keys of one tenant (rotation) share one tenant; disagreeing settings are refused naming both entries", () => {
    const same = parseKeysDocument(
      [
        { tenant: "t", key_sha256: H1, weight: 2 },
        { tenant: "t", key_sha256: H2, weight: 2 },
      ],
      "k",
    );
    expect(same[0]!.tenant).toBe(same[1]!.tenant);
    expect(() =>
      parseKeysDocument(
        [
          { tenant: "t", key_sha256: H1, weight: 2 },
          { tenant: "t", key_sha256: H2 },
        ],
        "k",
      ),
    ).toThrow(/keys\[1\]: tenant t is also keys\[0\]/);
  });

  const bad: [string, unknown, RegExp][] = [
    ["not a list", { keys: 3 }, /k: keys: expected a list/],
    ["unknown top-level field", { keys: [], extra: 1 }, /k: extra: unknown field/],
    [
      "unknown key field",
      [{ tenant: "t", key_sha256: H1, rate: 3 }],
      /keys\[0\]\.rate: unknown field/,
    ],
    [
      "a key in clear",
      [{ tenant: "t", key_sha256: "sk-live-123" }],
      /keys\[0\]\.key_sha256: must be the key's SHA-256 .* never the key itself/,
    ],
    [
      "a tenant name unfit for a label",
      [{ tenant: "team a", key_sha256: H1 }],
      /keys\[0\]\.tenant: must be 1-64 letters/,
    ],
    [
      "a duplicate key",
      [
        { tenant: "a", key_sha256: H1 },
        { tenant: "b", key_sha256: H1 },
      ],
      /keys\[1\]\.key_sha256: the same key as keys\[0\]/,
    ],
    [
      "an unknown limit",
      [{ tenant: "t", key_sha256: H1, limits: { rpm: 3 } }],
      /keys\[0\]\.limits\.rpm: unknown limit/,
    ],
    [
      "a limit of 0",
      [{ tenant: "t", key_sha256: H1, limits: { requests_per_minute: 0 } }],
      /keys\[0\]\.limits\.requests_per_minute: must be an integer >= 1/,
    ],
    [
      "a weight of 0",
      [{ tenant: "t", key_sha256: H1, weight: 0 }],
      /keys\[0\]\.weight: must be a number > 0/,
    ],
    [
      "a fractional priority",
      [{ tenant: "t", key_sha256: H1, priority: 0.5 }],
      /keys\[0\]\.priority: must be an integer/,
    ],
    [
      "models not a list of names",
      [{ tenant: "t", key_sha256: H1, models: "llama" }],
      /keys\[0\]\.models: must be a list/,
    ],
    [
      "a bad default",
      { defaults: { limits: { concurrent_requests: -1 } }, keys: [] },
      /defaults\.limits\.concurrent_requests: must be an integer >= 1/,
    ],
  ];
  for (const [what, doc, message] of bad) {
    test(`refused: ${what}`, () => {
      expect(() => parseKeysDocument(doc, "k")).toThrow(KeysFileError);
      expect(() => parseKeysDocument(doc, "k")).toThrow(message);
    });
  }

  test("no message repeats a key that was put in clear by mistake", () => {
    try {
      parseKeysDocument([{ tenant: "t", key_sha256: "sk-live-secret-value" }], "k");
      throw new Error("accepted");
    } catch (e) {
      expect(String((e as Error).message)).not.toContain("sk-live-secret-value");
    }
  });
});

describe("KeySet", () => {
  test("a configured key finds its tenant; any other key, a prefix of it or its hash finds nothing", async () => {
    const set = new KeySet(
      parseKeysDocument(
        [
          { tenant: "one", key_sha256: H1 },
          { tenant: "two", key_sha256: H2 },
        ],
        "k",
      ),
    );
    expect((await set.lookup("sk-one"))?.name).toBe("one");
    expect((await set.lookup("sk-two"))?.name).toBe("two");
    expect(await set.lookup("sk-on")).toBeUndefined();
    expect(await set.lookup(H1)).toBeUndefined();
    expect(await set.lookup("")).toBeUndefined();
    expect(set.tenants.map((t) => t.name)).toEqual(["one", "two"]);
  });

  test("packed (as a Worker hands them over): every key of many finds its tenant, tenants once each, in any file order", async () => {
    const keys = Array.from({ length: 300 }, (_, i) => `sk-${i}`);
    const doc = await Promise.all(
      keys.map(async (k, i) => ({ tenant: `t${i % 7}`, key_sha256: await sha256Hex(k) })),
    );
    const set = new KeySet(packKeys(parseKeysDocument(doc.reverse(), "k")));
    expect(set.size).toBe(300);
    expect(set.tenants.map((t) => t.name).sort()).toEqual([
      "t0",
      "t1",
      "t2",
      "t3",
      "t4",
      "t5",
      "t6",
    ]);
    for (const [i, k] of keys.entries()) expect((await set.lookup(k))?.name).toBe(`t${i % 7}`);
    for (const k of ["sk-300", "sk--1", "", "sk-0 "]) expect(await set.lookup(k)).toBeUndefined();
    expect(await new KeySet([]).lookup("sk-0")).toBeUndefined();
  });

  test("sha256Hex is the hex SHA-256 of the UTF-8 text (the form sha256sum prints)", async () => {
    expect(await sha256Hex("test")).toBe(
      "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    );
  });

  test("bearerKey reads `Bearer KEY` only", () => {
    expect(bearerKey("Bearer sk-1")).toBe("sk-1");
    expect(bearerKey("bearer   sk-1 ")).toBe("sk-1");
    expect(bearerKey("Basic abc")).toBeUndefined();
    expect(bearerKey("Bearer a b")).toBeUndefined();
    expect(bearerKey(null)).toBeUndefined();
  });
});
