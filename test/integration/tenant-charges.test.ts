/**
 * What a tenant is charged and what one request may take, with real processes: a router with
 * --api-keys in front of two simulated engines. A request cannot outrun its booking: an ask
 * past the per-minute output limit is refused in OpenAI's 429 shape, and the engine is told to
 * generate no more than was booked (the tenant's default when the request names none). The
 * prompt charge covers everything the engine will prefill, not only the routed prompt.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sha256Hex } from "../../src/protect/key-set.ts";
import { startMain, stopAll, type Proc } from "../support/processes.ts";

setDefaultTimeout(30_000);

/** One key per test, so no test spends another's limits. */
const KEYS = {
  output: `sk-out-${crypto.randomUUID()}`,
  outputDefault: `sk-outdef-${crypto.randomUUID()}`,
  outputStream: `sk-outstr-${crypto.randomUUID()}`,
  prompt: `sk-prompt-${crypto.randomUUID()}`,
  settle: `sk-settle-${crypto.randomUUID()}`,
} as const;
const PROMPT_LIMIT = 1000;
const SETTLE_LIMIT = 2000;
/** Far past the prompt limit, in a field other than the routed prompt. */
const BIG = "x".repeat(120_000);
const OUTPUT_LIMIT = 1000;
const DEFAULT_BOOKING = 5;

let engines: Proc[] = [];
let router: Proc | undefined;
let url = "";
let dir = "";

function post(path: string, key: string, body: unknown): Promise<Response> {
  return fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });
}

beforeAll(async () => {
  engines = await Promise.all(
    [1, 2].map((seed) =>
      startMain([
        "mocker",
        "--port",
        "0",
        "--block-size",
        "16",
        "--seed",
        String(seed),
        "--speedup",
        "20",
      ]),
    ),
  );
  dir = mkdtempSync(join(tmpdir(), "switchyard-tenant-charges-"));
  const entry = async (tenant: string, key: string, extra: Record<string, unknown>) => ({
    tenant,
    key_sha256: await sha256Hex(key),
    ...extra,
  });
  const outputLimits = {
    limits: { output_tokens_per_minute: OUTPUT_LIMIT },
    output_tokens: DEFAULT_BOOKING,
  };
  const doc = {
    keys: [
      await entry("output", KEYS.output, outputLimits),
      await entry("output-default", KEYS.outputDefault, outputLimits),
      await entry("output-stream", KEYS.outputStream, outputLimits),
      await entry("prompt", KEYS.prompt, { limits: { prompt_tokens_per_minute: PROMPT_LIMIT } }),
      await entry("settle", KEYS.settle, { limits: { prompt_tokens_per_minute: SETTLE_LIMIT } }),
    ],
  };
  writeFileSync(join(dir, "keys.json"), JSON.stringify(doc));
  router = await startMain([
    "serve",
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--block-size",
    "16",
    "--api-keys",
    join(dir, "keys.json"),
    ...engines.flatMap((e) => ["--worker", String(e.info.url)]),
  ]);
  url = String(router.info.url);
});

afterAll(async () => {
  await stopAll([router, ...engines]);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("a request cannot outrun its booking", () => {
  test("max_tokens past the per-minute output limit: 429 rate_limit_exceeded (tokens), never sent", async () => {
    for (const [path, body] of [
      ["/v1/completions", { prompt: "hello", max_tokens: 200_000 }],
      [
        "/v1/chat/completions",
        {
          messages: [{ role: "user", content: "hi" }],
          max_completion_tokens: 200_000,
          max_tokens: 2,
        },
      ],
      ["/v1/completions", { prompt: "hello", max_tokens: 200_000, stream: true }],
    ] as const) {
      const r = await post(path, KEYS.output, body);
      expect(r.status).toBe(429);
      const e = ((await r.json()) as { error: { code: string; type: string; message: string } })
        .error;
      expect(e).toMatchObject({ code: "rate_limit_exceeded", type: "tokens" });
      expect(e.message).toContain("output tokens per minute");
      expect(e.message).toContain("max_tokens");
    }
    // The tenant is not locked out: an ask within the limit passes at once.
    const ok = await post("/v1/completions", KEYS.output, { prompt: "hello", max_tokens: 3 });
    expect(ok.status).toBe(200);
    expect(
      ((await ok.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens,
    ).toBe(3);
  });

  test("no max_tokens: the engine is told the booked default and generates no more", async () => {
    const r = await post("/v1/completions", KEYS.outputDefault, { prompt: "hello there" });
    expect(r.status).toBe(200);
    expect(
      ((await r.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens,
    ).toBe(DEFAULT_BOOKING);
    const chat = await post("/v1/chat/completions", KEYS.outputDefault, {
      messages: [{ role: "user", content: "hi" }],
    });
    expect(chat.status).toBe(200);
    expect(
      ((await chat.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens,
    ).toBe(DEFAULT_BOOKING);
  });

  test("a streamed ask that fits is served whole and booked whole: the next ask past what is left waits", async () => {
    const r = await post("/v1/completions", KEYS.outputStream, {
      prompt: "stream me",
      max_tokens: 900,
      stream: true,
    });
    expect(r.status).toBe(200);
    const text = await r.text();
    expect(text).toContain("data: [DONE]");
    expect(text).not.toContain('"error"');
    const next = await post("/v1/completions", KEYS.outputStream, {
      prompt: "more",
      max_tokens: 200,
    });
    expect(next.status).toBe(429);
    expect(Number(next.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    await next.text();
  });
});

describe("the prompt charge covers what the engine will prefill", () => {
  const user = (content: unknown, extra: Record<string, unknown> = {}) => ({
    messages: [{ role: "user", content, ...extra }],
    max_tokens: 1,
  });
  const cases: [string, string, Record<string, unknown>][] = [
    ["completions batch prompt[1]", "/v1/completions", { prompt: ["hi", BIG], max_tokens: 1 }],
    [
      "completions batch of token ids",
      "/v1/completions",
      { prompt: [[1, 2], Array.from({ length: 5000 }, (_, i) => i % 500)], max_tokens: 1 },
    ],
    ["embeddings input[1]", "/v1/embeddings", { input: ["hi", BIG] }],
    [
      "chat tools",
      "/v1/chat/completions",
      {
        ...user("hi"),
        tools: [{ type: "function", function: { name: "f", description: BIG, parameters: {} } }],
      },
    ],
    [
      "chat documents",
      "/v1/chat/completions",
      { ...user("hi"), documents: [{ title: "t", text: BIG }] },
    ],
    ["chat message name", "/v1/chat/completions", user("hi", { name: BIG })],
    [
      "chat image part",
      "/v1/chat/completions",
      user([
        { type: "text", text: "hi" },
        { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
      ]),
    ],
    [
      "responses instructions",
      "/v1/responses",
      { input: "hi", instructions: BIG, max_output_tokens: 1 },
    ],
    ["rerank documents", "/v1/rerank", { query: "hi", documents: ["a", BIG] }],
    ["score text_2", "/score", { text_1: "hi", text_2: [BIG] }],
  ];
  for (const [name, path, body] of cases) {
    test(`${name}: refused as too large (429) under a ${PROMPT_LIMIT}-token prompt limit`, async () => {
      const r = await post(path, KEYS.prompt, body);
      const e = ((await r.json()) as { error?: { code: string; type: string; message: string } })
        .error;
      expect(r.status).toBe(429);
      expect(e).toMatchObject({ code: "rate_limit_exceeded", type: "tokens" });
      expect(e!.message).toContain("prompt tokens per minute");
    });
  }

  test("a short prompt still passes (the bound is not a refusal of everything)", async () => {
    const r = await post("/v1/completions", KEYS.prompt, {
      prompt: ["hi", "there"],
      max_tokens: 1,
    });
    expect(r.status).toBe(200);
    await r.text();
  });

  test("the charge is settled to the engine's reported prompt tokens when the answer ends", async () => {
    // Many short messages: without the tokenizer the template's allowance dominates the charge.
    const chat = {
      messages: Array.from({ length: 20 }, (_, i) => ({
        role: i % 2 ? "assistant" : "user",
        content: "hi",
      })),
      max_tokens: 1,
    };
    const first = await post("/v1/chat/completions", KEYS.settle, chat);
    expect(first.status).toBe(200);
    const charged = SETTLE_LIMIT - Number(first.headers.get("x-ratelimit-remaining-prompt-tokens"));
    const used = ((await first.json()) as { usage: { prompt_tokens: number } }).usage.prompt_tokens;
    expect(charged).toBeGreaterThan(used); // the bound was above what the engine computed
    const second = await post("/v1/chat/completions", KEYS.settle, chat);
    expect(second.status).toBe(200);
    await second.text();
    const remaining = Number(second.headers.get("x-ratelimit-remaining-prompt-tokens"));
    // The first request now costs what the engine reported (the bucket only refills meanwhile),
    // the second its bound until its own answer settles it.
    expect(remaining).toBeGreaterThanOrEqual(SETTLE_LIMIT - used - charged - 1);
    expect(remaining).toBeLessThan(SETTLE_LIMIT - used);
  });
});
