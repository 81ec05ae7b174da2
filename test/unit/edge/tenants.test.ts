/**
 * Client API keys at the edge (--api-keys), in-process around a fake engine: every client
 * route needs a configured key (401 in OpenAI's shape otherwise, on the app and on Bun's fast
 * routes alike); the key never reaches the engine nor any answer; models a key may not use
 * are 404 (and hidden from /v1/models); limits answer 429 with Retry-After, and every answer
 * carries the x-ratelimit headers; a request's concurrency slot and output booking come back
 * when its answer ends (streamed, whole, cut by the client); the tenant's band and fair share
 * reach the admission gate.
 */
import { describe, expect, test } from "bun:test";
import { SPECIAL_PER_SEQUENCE } from "../../../src/protect/prompt-charge.ts";
import { createApp, createFastRoutes } from "../../../src/edge/app.ts";
import type { TenantGuard } from "../../../src/edge/tenants/guard.ts";
import { KeySet, sha256Hex } from "../../../src/protect/key-set.ts";
import { parseKeysDocument } from "../../../src/protect/keys-document.ts";
import { TenantLimiter } from "../../../src/protect/limits/limiter.ts";
import type { TenantShare } from "../../../src/router/admission/virtual-token-counter.ts";
import { harness, jsonResponse, sseResponse, type FakeFetch } from "./harness.ts";

const KEY_A = "sk-team-a-0123456789abcdef";
const KEY_B = "sk-team-b-fedcba9876543210";

async function guarded(
  fetch: FakeFetch,
  keys: Record<string, unknown>[],
  o: { engineToken?: string } = {},
) {
  const h = harness({ workers: [{ id: 1n, url: "http://w1:1" }], fetch });
  const set = new KeySet(parseKeysDocument(keys, "keys"));
  const settled: { share: TenantShare; out: number }[] = [];
  let clock = 0;
  const guard: TenantGuard = {
    keys: () => set,
    limiter: new TenantLimiter({ fallback: "local", routers: () => 1, now: () => clock }),
    fair: true,
    settle: (share, out) => settled.push({ share, out }),
    engineAuthorization: o.engineToken !== undefined ? `Bearer ${o.engineToken}` : null,
  };
  const deps = { ...h.deps, tenants: guard };
  const app = createApp(deps);
  const request = (path: string, key: string | undefined, json?: unknown, method = "POST") =>
    Promise.resolve(
      app.fetch(
        new Request(`http://router${path}`, {
          method,
          headers: {
            "content-type": "application/json",
            ...(key !== undefined ? { authorization: `Bearer ${key}` } : {}),
          },
          body: json === undefined ? undefined : JSON.stringify(json),
        }),
      ),
    );
  return { h, deps, request, settled, tick: (ms: number) => (clock += ms) };
}

const keysOf = async (extra: Record<string, unknown> = {}, b: Record<string, unknown> = {}) => [
  { tenant: "team-a", key_sha256: await sha256Hex(KEY_A), ...extra },
  { tenant: "team-b", key_sha256: await sha256Hex(KEY_B), ...b },
];

const completion = { model: "m", prompt: "hello there", max_tokens: 4 };

describe("client API keys", () => {
  test("no key or a wrong key: 401 invalid_api_key on every client route; the engine is never called", async () => {
    const g = await guarded(async () => jsonResponse({ ok: 1 }), await keysOf());
    for (const [path, method, body] of [
      ["/v1/completions", "POST", completion],
      ["/v1/chat/completions", "POST", { messages: [{ role: "user", content: "hi" }] }],
      ["/v1/embeddings", "POST", { input: "x" }],
      ["/generate", "POST", { text: "x" }],
      ["/tokenize", "POST", { prompt: "x" }],
      ["/v1/models", "GET", undefined],
    ] as const) {
      for (const key of [undefined, "sk-wrong", KEY_A.slice(0, -1)]) {
        const res = await g.request(path, key, body, method);
        expect(res.status).toBe(401);
        expect(res.headers.get("www-authenticate")).toContain("Bearer");
        const err = ((await res.json()) as { error: Record<string, unknown> }).error;
        expect(err.code).toBe("invalid_api_key");
        expect(JSON.stringify(err)).not.toContain("sk-");
      }
    }
    expect(g.h.calls.length).toBe(0);
    // Probes and admin routes are not client routes.
    expect((await g.request("/livez", undefined, undefined, "GET")).status).toBe(200);
    expect((await g.request("/v1/workers", undefined, undefined, "GET")).status).toBe(200);
  });

  test("a configured key passes; the engine gets the engine token, never the client's key", async () => {
    const g = await guarded(
      async () => jsonResponse({ usage: { completion_tokens: 2 } }),
      await keysOf(),
      { engineToken: "engine-secret" },
    );
    const res = await g.request("/v1/completions", KEY_A, completion);
    expect(res.status).toBe(200);
    await res.text();
    expect(g.h.calls.length).toBe(1);
    expect(g.h.calls[0]!.headers.authorization).toBe("Bearer engine-secret");
    expect(JSON.stringify(g.h.calls[0]!.headers)).not.toContain(KEY_A);
  });

  test("without --engine-token the client's Authorization is dropped, not forwarded", async () => {
    const g = await guarded(async () => jsonResponse({}), await keysOf());
    await (await g.request("/v1/completions", KEY_B, completion)).text();
    expect(g.h.calls[0]!.headers.authorization).toBeUndefined();
  });

  test("Bun's fast routes check keys exactly as the app does", async () => {
    const g = await guarded(async () => jsonResponse({}), await keysOf());
    const fast = createFastRoutes(g.deps);
    const post = (key?: string) =>
      fast["/v1/completions"]!.POST(
        new Request("http://r/v1/completions", {
          method: "POST",
          headers: key ? { authorization: `Bearer ${key}` } : {},
          body: JSON.stringify(completion),
        }),
      );
    const refused = await post("sk-nope");
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe(
      "invalid_api_key",
    );
    const ok = await post(KEY_A);
    expect(ok.status).toBe(200);
    await ok.text();
    // Errors keep the rate-limit headers too (the request was authenticated).
    const bad = await fast["/v1/completions"]!.POST(
      new Request("http://r/v1/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${KEY_A}` },
        body: "{",
      }),
    );
    expect(bad.status).toBe(400);
  });
});

describe("models a key may use", () => {
  test("another model is 404 as OpenAI answers it; no model named is 400; /v1/models lists only the allowed", async () => {
    const g = await guarded(
      async (url) => (url.endsWith("/v1/models") ? jsonResponse({ data: [] }) : jsonResponse({})),
      await keysOf({ models: ["m", "team-a-*"] }),
    );
    g.h.models.set(1n, [
      { id: "m", parent: null },
      { id: "other", parent: null },
      { id: "team-a-lora", parent: "m" },
    ]);
    const denied = await g.request("/v1/completions", KEY_A, { ...completion, model: "other" });
    expect(denied.status).toBe(404);
    expect(
      ((await denied.json()) as { error: { code: string; message: string } }).error,
    ).toMatchObject({ code: "model_not_found" });
    expect((await g.request("/v1/completions", KEY_A, { prompt: "x" })).status).toBe(400);
    const ok = await g.request("/v1/completions", KEY_A, completion);
    expect(ok.status).toBe(200);
    await ok.text();
    const listed = (await (await g.request("/v1/models", KEY_A, undefined, "GET")).json()) as {
      data: { id: string }[];
    };
    expect(listed.data.map((m) => m.id).sort()).toEqual(["m", "team-a-lora"]);
    const all = (await (await g.request("/v1/models", KEY_B, undefined, "GET")).json()) as {
      data: { id: string }[];
    };
    expect(all.data.map((m) => m.id).sort()).toEqual(["m", "other", "team-a-lora"]);
  });
});

describe("limits per tenant", () => {
  test("requests per minute: 429 with Retry-After past the limit, headers on every answer, tenants apart", async () => {
    const g = await guarded(
      async () => jsonResponse({}),
      await keysOf({ limits: { requests_per_minute: 2 } }),
    );
    for (let i = 0; i < 2; i++) {
      const r = await g.request("/v1/completions", KEY_A, completion);
      expect(r.status).toBe(200);
      expect(r.headers.get("x-ratelimit-limit-requests")).toBe("2");
      expect(r.headers.get("x-ratelimit-remaining-requests")).toBe(String(1 - i));
      await r.text();
    }
    const refused = await g.request("/v1/completions", KEY_A, completion);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("30");
    expect(refused.headers.get("x-ratelimit-reset-requests")).toBe("1m0s");
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe(
      "rate_limit_exceeded",
    );
    // An answer that took nothing still says where the tenant stands.
    const models = await g.request("/v1/models", KEY_A, undefined, "GET");
    expect(models.headers.get("x-ratelimit-remaining-requests")).toBe("0");
    // team-b has no limits: no headers, no refusals.
    const b = await g.request("/v1/completions", KEY_B, completion);
    expect(b.status).toBe(200);
    expect(b.headers.get("x-ratelimit-limit-requests")).toBeNull();
    await b.text();
    expect(g.h.calls.filter((c) => c.url.endsWith("/v1/completions")).length).toBe(3);
    g.tick(30_000);
    const again = await g.request("/v1/completions", KEY_A, completion);
    expect(again.status).toBe(200);
    await again.text();
  });

  test("concurrency: the slot is held while the answer streams and given back when it ends or the client leaves", async () => {
    const g = await guarded(
      async () => sseResponse(3),
      await keysOf({ limits: { concurrent_requests: 1 } }),
    );
    const first = await g.request("/v1/completions", KEY_A, { ...completion, stream: true });
    expect(first.status).toBe(200);
    expect(
      (await g.request("/v1/completions", KEY_A, { ...completion, stream: true })).status,
    ).toBe(429);
    await first.text();
    const second = await g.request("/v1/completions", KEY_A, { ...completion, stream: true });
    expect(second.status).toBe(200);
    const reader = second.body!.getReader();
    await reader.read();
    await reader.cancel();
    const third = await g.request("/v1/completions", KEY_A, { ...completion, stream: true });
    expect(third.status).toBe(200);
    await third.text();
  });

  test("output tokens: booked from max_tokens, settled from the answer's usage (or its SSE events)", async () => {
    let answer: () => Response = () =>
      jsonResponse({ usage: { prompt_tokens: 3, completion_tokens: 3 } });
    const g = await guarded(
      async () => answer(),
      await keysOf({ limits: { output_tokens_per_minute: 10 } }),
    );
    const r1 = await g.request("/v1/completions", KEY_A, { ...completion, max_tokens: 8 });
    expect(r1.headers.get("x-ratelimit-remaining-output-tokens")).toBe("2");
    await r1.text();
    // 8 booked, 3 used: 5 came back, so 7 fit.
    const r2 = await g.request("/v1/completions", KEY_A, { ...completion, max_tokens: 7 });
    expect(r2.status).toBe(200);
    await r2.text();
    expect(g.settled.map((s) => [s.share.tenant, s.share.outputTokens, s.out])).toEqual([
      ["team-a", 8, 3],
      ["team-a", 7, 3],
    ]);
    answer = () => sseResponse(2);
    const r3 = await g.request("/v1/completions", KEY_B, {
      ...completion,
      max_tokens: 50,
      stream: true,
    });
    await r3.text();
    expect(g.settled.at(-1)).toMatchObject({
      out: 2,
      share: { tenant: "team-b", outputTokens: 50 },
    });
  });

  test("an engine error settles at zero output; the request's share reaches the gate with its band", async () => {
    const g = await guarded(
      async () => jsonResponse({ error: "boom" }, 500),
      await keysOf({ priority: 3, weight: 2 }),
    );
    const r = await g.request("/v1/completions", KEY_A, { ...completion, priority: 0 });
    expect(r.status).toBe(500);
    await r.text();
    // No tokenizer: the prompt's UTF-8 bytes and its special tokens' allowance (prompt-charge.ts).
    expect(g.settled).toEqual([
      {
        share: {
          tenant: "team-a",
          weight: 2,
          promptTokens: completion.prompt.length + SPECIAL_PER_SEQUENCE,
          outputTokens: 4,
        },
        out: 0,
      },
    ]);
  });
});
