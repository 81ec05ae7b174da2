/**
 * The router counts output tokens as the engine does (edge/proxy/sse-counter.ts): a real router
 * in front of a real simulated engine, 32 tokens asked each time, completions and chat, streamed
 * with and without `stream_options.include_usage` and whole. The access line's `output_tokens`
 * and `switchyard_completion_tokens_total` must equal the engine's own usage (its
 * `mocker_completion_tokens_total` and, where it sent one, the answer's `usage`): 32, not the
 * 33 (completions) or 34 (chat) that counting every data event gave.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { startMain, stopAll, until, type Proc } from "../support/processes.ts";

setDefaultTimeout(30_000);

const N = 32;
let engine: Proc | undefined;
let router: Proc | undefined;
let url = "";

beforeAll(async () => {
  router = await startMain([
    "serve",
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--block-size",
    "16",
    "--log-format",
    "json",
    "--health-interval",
    "30",
  ]);
  url = String(router.info.url);
  // The engine pushes its KV events to the router, as a kv-routed engine must: one that publishes
  // none is routed blind, and the registration canary rightly says so (no_events).
  engine = await startMain([
    "mocker",
    "--port",
    "0",
    "--block-size",
    "16",
    "--speedup",
    "20",
    "--router-url",
    url,
    "--event-batch-ms",
    "2",
  ]);
  const reg = await fetch(`${url}/v1/workers`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ url: String(engine.info.url) }),
  });
  expect(reg.status).toBe(201);
  // The canary (a known prompt sent twice at registration) makes tokens on the engine too: done before the counts start.
  const canary = await until(
    async () => {
      const { workers } = (await (await fetch(`${url}/v1/workers`)).json()) as {
        workers: { cache_truth?: { state: string; canary: { ok: boolean } | null }[] }[];
      };
      const rank = workers.length === 1 ? workers[0]!.cache_truth?.[0] : undefined;
      return rank?.canary != null ? rank : null;
    },
    "the registration canary to finish",
    10_000,
  );
  // An engine whose events reach the router passes it: no false alarm from this fleet.
  expect(canary).toMatchObject({ state: "exact", canary: { ok: true } });
});

afterAll(async () => {
  await stopAll([router, engine]);
});

function accessLine(id: string): Record<string, unknown> | undefined {
  return router!
    .output()
    .split("\n")
    .filter((l) => l.startsWith("{") && l.includes('"msg":"request"'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .find((l) => l.request_id === id);
}

/** A counter's value summed over its series, from a Prometheus text page. */
async function counter(base: string, name: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  let sum = 0;
  for (const line of text.split("\n"))
    if (line.startsWith(`${name}{`) || line.startsWith(`${name} `))
      sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  return sum;
}

const CASES = [
  { kind: "completions", stream: true, usage: false },
  { kind: "completions", stream: true, usage: true },
  { kind: "completions", stream: false, usage: false },
  { kind: "chat", stream: true, usage: false },
  { kind: "chat", stream: true, usage: true },
  { kind: "chat", stream: false, usage: false },
] as const;

describe("output tokens: router = engine (real processes)", () => {
  for (const c of CASES) {
    test(`${c.kind}, ${c.stream ? `streamed ${c.usage ? "with" : "without"} include_usage` : "whole"}: ${N} tokens are ${N} in the access log and the metrics`, async () => {
      const id = `tok-${c.kind}-${c.stream}-${c.usage}`;
      const routerBefore = await counter(url, "switchyard_completion_tokens_total");
      const engineBefore = await counter(
        String(engine!.info.url),
        "mocker_completion_tokens_total",
      );
      const input =
        c.kind === "chat"
          ? { messages: [{ role: "user", content: `count me ${id}` }] }
          : { prompt: `count me ${id}` };
      const res = await fetch(
        `${url}${c.kind === "chat" ? "/v1/chat/completions" : "/v1/completions"}`,
        {
          method: "POST",
          headers: { "content-type": "application/json", "x-request-id": id },
          body: JSON.stringify({
            model: "switchyard-sim",
            max_tokens: N,
            ...input,
            stream: c.stream,
            ...(c.usage ? { stream_options: { include_usage: true } } : {}),
          }),
        },
      );
      expect(res.status).toBe(200);
      const text = await res.text();
      if (c.usage || !c.stream) {
        const last = c.stream
          ? JSON.parse(
              text
                .split("\n\n")
                .filter((e) => e !== "")
                .at(-2)!
                .slice(6),
            )
          : JSON.parse(text);
        expect(last.usage.completion_tokens).toBe(N);
      } else expect(text).not.toContain('"usage"');
      const line = await until(() => accessLine(id), `the access line of ${id}`);
      expect(line.output_tokens).toBe(N);
      expect(await counter(String(engine!.info.url), "mocker_completion_tokens_total")).toBe(
        engineBefore + N,
      );
      await until(
        async () => (await counter(url, "switchyard_completion_tokens_total")) === routerBefore + N,
        "the router's completion tokens to grow by exactly N",
        5000,
      );
      expect(await counter(url, "switchyard_completion_tokens_total")).toBe(routerBefore + N);
    });
  }

  test(`completions with token ids, streamed without include_usage: the router asks the engine for usage itself (the cache check), takes it out of the stream, and counts ${N} from it`, async () => {
    // Token ids route exactly, so the answer is checked: the router adds include_usage for the engine.
    const prompt = Array.from({ length: 40 }, (_, i) => 1000 + i);
    const checked = async () => {
      const { workers } = (await (await fetch(`${url}/v1/workers`)).json()) as {
        workers: { cache_truth?: { answers_checked: number }[] }[];
      };
      return workers.reduce(
        (n, w) => n + (w.cache_truth ?? []).reduce((m, r) => m + r.answers_checked, 0),
        0,
      );
    };
    const before = await checked();
    // Twice: the second answer reports a cache hit, which the check counts (the first, with none, says nothing to check).
    for (const round of [1, 2]) {
      const id = `tok-ids-injected-${round}`;
      const routerBefore = await counter(url, "switchyard_completion_tokens_total");
      const res = await fetch(`${url}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-request-id": id },
        body: JSON.stringify({ model: "switchyard-sim", max_tokens: N, prompt, stream: true }),
      });
      expect(res.status).toBe(200);
      expect(await res.text()).not.toContain('"usage"');
      const line = await until(() => accessLine(id), `the access line of ${id}`);
      expect(line.output_tokens).toBe(N);
      await until(
        async () => (await counter(url, "switchyard_completion_tokens_total")) === routerBefore + N,
        "the router's completion tokens to grow by exactly N",
        5000,
      );
    }
    await until(
      async () => (await checked()) > before,
      "the router to have read the usage it asked for",
      5000,
    );
  });
});
