/**
 * The RESP Redis code is injected, never imported, by the portable Redis paths (issue 10 §2):
 * without an opener a redis:// URL is refused with a message naming the way out, and the
 * portable runtimes refuse `--redis redis://…` by name before anything starts (the options
 * table's runtime column, through loadConfig). No network:
 * every case fails before a connection is tried, or uses a fake opener.
 */
import { describe, expect, test } from "bun:test";
import { ConfigError, loadConfig } from "../../../src/config/load.ts";
import { openRedisConnection } from "../../../src/sync/redis-client.ts";
import type { RedisConnection } from "../../../src/sync/redis-connection.ts";
import { openSyncTransport } from "../../../src/sync/open-transport.ts";
import type { SyncTransport, SyncTransportOptions } from "../../../src/sync/transport.ts";

const SYNC: SyncTransportOptions = {
  url: "redis://127.0.0.1:1",
  channel: "c",
  commandTimeoutMs: 50,
  pollMs: 5,
  streamMaxLen: 10,
};

/** What a portable runtime refuses of these options: the problems loadConfig throws for it. */
function refusedOn(runtime: "deno" | "workerd", argv: string[]): readonly string[] {
  try {
    loadConfig({ argv, env: {}, runtime });
    return [];
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
}

describe("values the portable runtimes refuse", () => {
  test("redis:// and rediss:// are refused by name; https:// and no --redis are not", () => {
    expect(refusedOn("deno", ["--redis", "redis://h:6379"])).toEqual([
      "--redis: redis:// is not available on Deno (RESP needs Bun's RedisClient over TCP; use Upstash REST: --redis https://… --redis-token …)",
    ]);
    expect(refusedOn("workerd", ["--redis", "REDISS://h:6380"])[0]).toStartWith(
      "--redis: rediss:// is not available on workerd",
    );
    expect(
      refusedOn("deno", [
        "--redis",
        "https://db.upstash.io",
        "--redis-token",
        "t",
        "--tokenizer-library",
        "bpe",
      ]),
    ).toEqual([]);
    expect(refusedOn("workerd", ["--tokenizer-library", "hf"])).toEqual([]);
  });

  test("--tokenizer-library native is refused by name (HF's Rust addon is Bun/Node only); hf and bpe are not", () => {
    expect(refusedOn("deno", ["--tokenizer-library", "native"])).toEqual([
      "--tokenizer-library: native is not available on Deno (HF's Rust addon loads on Bun/Node only; use hf or bpe)",
    ]);
    expect(refusedOn("workerd", ["--tokenizer-library", "bpe"])).toEqual([]);
  });
});

describe("openRedisConnection without a RESP opener", () => {
  test("redis:// is refused, naming Bun and the REST alternative", async () => {
    await expect(openRedisConnection("redis://127.0.0.1:1")).rejects.toThrow(
      "redis:// needs a RESP client, which runs on Bun only (use an Upstash REST https:// URL here)",
    );
  });

  test("an injected opener is what opens redis://, with the probe deadline", async () => {
    const seen: [string, number][] = [];
    const fake: RedisConnection = {
      kind: "resp",
      eval: async () => null,
      evalsha: async () => null,
      command: async () => "PONG",
      close: async () => {},
    };
    const conn = await openRedisConnection("rediss://h:1", {
      resp: async (url, ms) => (seen.push([url, ms]), fake),
      probeTimeoutMs: 700,
    });
    expect(seen).toEqual([["rediss://h:1", 700]]);
    expect(await conn.command(["PING"])).toBe("PONG");
    await conn.close();
  });
});

describe("openSyncTransport without a pub/sub opener", () => {
  test("redis:// is refused, naming Bun and the REST alternative", async () => {
    await expect(openSyncTransport(SYNC)).rejects.toThrow(
      "redis:// load sync needs RESP pub/sub, which runs on Bun only",
    );
  });

  test("an injected opener gets the options", async () => {
    const fake = { kind: "pubsub" } as SyncTransport;
    let got: SyncTransportOptions | undefined;
    const t = await openSyncTransport({ ...SYNC, pubsub: async (o) => ((got = o), fake) });
    expect(t).toBe(fake);
    expect(got?.channel).toBe("c");
  });
});
