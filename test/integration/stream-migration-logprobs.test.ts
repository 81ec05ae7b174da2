/**
 * Logprobs across a move: real router and 4 simulated engine processes, seeded streams that ask
 * for logprobs (completions `logprobs: 2`, chat `logprobs: true, top_logprobs: 2`); the engine
 * serving most of them is killed (SIGKILL). Each client's logprobs are continuous (one entry per
 * token, completions' text_offset going on across the splice) and equal what the same seeded
 * engine writes for the whole request. A request with `prompt_logprobs` is not moved: it ends as
 * without migration (its client's connection breaks), never with a corrupt stream.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { bookedLoad, metric } from "../chaos/faults.ts";
import { stopAll, until, type Proc } from "../support/processes.ts";
import {
  busiest,
  cluster,
  openStream,
  received,
  requestBody,
  type Kind,
  type Live,
  wholeLogprobs,
} from "./migration-support.ts";
import { urlOf } from "./multi-router-cluster.ts";

const procs: Proc[] = [];
afterAll(async () => {
  await stopAll(procs);
});

const MAX_TOKENS = 40;

function withLogprobs(kind: Kind, i: number): Record<string, unknown> {
  const b = requestBody(kind, 500 + i, MAX_TOKENS);
  return kind === "chat" ? { ...b, logprobs: true, top_logprobs: 2 } : { ...b, logprobs: 2 };
}

/** The logprobs a client assembles from a stream: completions' four lists, or chat's content entries. */
function streamedLogprobs(kind: Kind, raw: string): unknown {
  const lists = { text_offset: [], token_logprobs: [], tokens: [], top_logprobs: [] } as Record<
    string,
    unknown[]
  >;
  const content: unknown[] = [];
  for (const line of raw.split("\n")) {
    if (!line.startsWith("data: {")) continue;
    const c = JSON.parse(line.slice(6)) as {
      choices?: { logprobs?: { content?: unknown[] } & Record<string, unknown[]> }[];
    };
    for (const ch of c.choices ?? []) {
      const lp = ch.logprobs;
      if (lp === undefined || lp === null) continue;
      if (kind === "chat") content.push(...(lp.content ?? []));
      else for (const k of Object.keys(lists)) lists[k]!.push(...(lp[k] ?? []));
    }
  }
  return kind === "chat" ? { content } : lists;
}

describe("logprobs across a migration", () => {
  test("SIGKILL under 8 streams asking for logprobs: continuous and equal to the whole request's", async () => {
    const { url, engines } = await cluster(procs);
    const streams = Array.from({ length: 8 }, (_, i) => {
      const kind: Kind = i % 2 === 0 ? "completions" : "chat";
      const body = withLogprobs(kind, i);
      return { kind, body, live: openStream(url, kind, body) };
    });
    await until(
      () => streams.every((s) => received(s.live) >= 3),
      "every stream to be under way",
      20_000,
    );
    const movedBefore = await metric(
      url,
      "switchyard_stream_migrations_total",
      '{outcome="moved"}',
    );
    const victim = await busiest(url, engines, streams);
    victim.proc.proc.kill("SIGKILL");
    await Promise.all(streams.map((s) => s.live.done));
    const moved =
      (await metric(url, "switchyard_stream_migrations_total", '{outcome="moved"}')) - movedBefore;
    expect(moved).toBeGreaterThanOrEqual(victim.on);
    const survivor = urlOf(engines.find((e) => e !== victim.proc)!);
    for (const s of streams) {
      expect(s.live.broken).toBeUndefined();
      const got = streamedLogprobs(s.kind, s.live.raw) as Record<string, unknown[]>;
      const whole = await wholeLogprobs(survivor, s.kind, s.body);
      if (s.kind === "completions") {
        expect(got.tokens).toHaveLength(MAX_TOKENS);
        expect(got.text_offset).toEqual(Array.from({ length: MAX_TOKENS }, (_, i) => i));
      } else expect(got.content).toHaveLength(MAX_TOKENS);
      expect(got).toEqual(whole as Record<string, unknown[]>);
    }
    await until(async () => (await bookedLoad(url)) === 0, "every booking to be freed", 5_000);
  }, 60_000);

  test("prompt_logprobs: the stream is not moved and breaks as without migration", async () => {
    const { url, engines } = await cluster(procs);
    const body = { ...withLogprobs("completions", 50), max_tokens: 400, prompt_logprobs: 1 };
    const live: Live = openStream(url, "completions", body);
    await until(() => received(live) >= 3, "the stream to be under way", 20_000);
    const refusedBefore = await metric(
      url,
      "switchyard_stream_migrations_total",
      '{outcome="refused"}',
    );
    const victim = await busiest(url, engines, [{ live }]);
    victim.proc.proc.kill("SIGKILL");
    await live.done;
    expect(live.broken).toBeDefined();
    expect(live.raw).not.toContain("moved this stream");
    expect(live.raw).not.toContain("[DONE]");
    expect(
      (await metric(url, "switchyard_stream_migrations_total", '{outcome="refused"}')) -
        refusedBefore,
    ).toBe(1);
    await until(async () => (await bookedLoad(url)) === 0, "every booking to be freed", 5_000);
  }, 60_000);
});
