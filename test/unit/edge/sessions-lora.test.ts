import { describe, expect, test } from "bun:test";
import { RouterError } from "../../../src/core/errors.ts";
import { sessionControlOf } from "../../../src/router/sessions/session-control.ts";
import { harness, jsonResponse, sseResponse, type FakeFetch } from "./harness.ts";

const W1 = { id: 11n, url: "http://w1:1" };
const W2 = { id: 22n, url: "http://w2:2" };

/** An engine: completions answer SSE, session and LoRA endpoints answer like the simulated engine. */
function engine(
  opts: { openStatus?: string; loraSlots?: number } = {},
): FakeFetch & { loaded: Map<string, string[]> } {
  const loaded = new Map<string, string[]>();
  const f = (async (url: string, init: RequestInit) => {
    const u = new URL(url);
    const base = `${u.protocol}//${u.host}`;
    const raw =
      typeof init.body === "string"
        ? init.body
        : init.body
          ? new TextDecoder().decode(init.body as Uint8Array)
          : "{}";
    const body = JSON.parse(raw) as Record<string, unknown>;
    const mine = loaded.get(base) ?? [];
    loaded.set(base, mine);
    switch (u.pathname) {
      case "/v1/sessions/open":
        return jsonResponse({ status: opts.openStatus ?? "ok" });
      case "/v1/sessions/close":
        return jsonResponse({ status: "ok" });
      case "/v1/load_lora_adapter": {
        const name = String(body.lora_name);
        if (mine.includes(name))
          return jsonResponse(
            { error: { message: `The lora adapter '${name}' has already been loaded.` } },
            400,
          );
        if (mine.length >= (opts.loraSlots ?? 1))
          return jsonResponse({ error: { message: "no free slot" } }, 400);
        mine.push(name);
        return new Response("ok");
      }
      case "/v1/engine/info":
        return jsonResponse({ loras: mine, max_loras: opts.loraSlots ?? 1 });
      default:
        if (
          body.model !== undefined &&
          body.model !== "base" &&
          !mine.includes(String(body.model))
        ) {
          return jsonResponse({ error: { message: "model does not exist" } }, 404);
        }
        return sseResponse(3);
    }
  }) as FakeFetch & { loaded: Map<string, string[]> };
  f.loaded = loaded;
  return f;
}

const sc = (session_id: string, action?: string, timeout?: number) => ({
  nvext: { session_control: { session_id, action, timeout } },
});

describe("nvext.session_control parsing", () => {
  test("absent, minimal, full; timeout defaults to 300 s", () => {
    expect(sessionControlOf({})).toBeUndefined();
    expect(sessionControlOf({ nvext: {} })).toBeUndefined();
    expect(sessionControlOf({ nvext: { session_control: { session_id: "a" } } })).toEqual({
      sessionId: "a",
      action: undefined,
      timeoutS: 300,
    });
    expect(
      sessionControlOf({
        nvext: { session_control: { session_id: "a", action: "open", timeout: 5 } },
      }),
    ).toEqual({ sessionId: "a", action: "open", timeoutS: 5 });
  });

  test("bad fields are 400s naming the field", () => {
    const field = (body: Record<string, unknown>) => {
      try {
        sessionControlOf(body);
      } catch (e) {
        if (e instanceof RouterError) return e.field;
      }
      return "no error";
    };
    expect(field({ nvext: 3 })).toBe("nvext");
    expect(field({ nvext: { session_control: { session_id: "" } } })).toBe(
      "nvext.session_control.session_id",
    );
    expect(field({ nvext: { session_control: { session_id: "a", action: "stop" } } })).toBe(
      "nvext.session_control.action",
    );
    expect(field({ nvext: { session_control: { session_id: "a", timeout: 0 } } })).toBe(
      "nvext.session_control.timeout",
    );
  });
});

describe("engine-backed sessions", () => {
  test("open asks the chosen engine first (timeout + 30 s), then binds engine-backed with ttl = timeout", async () => {
    const h = harness({ workers: [W1, W2], fetch: engine() });
    const r = await h.request("/v1/completions", {
      json: { prompt: "abcdefgh", stream: true, ...sc("s", "open", 10) },
    });
    await r.text();
    const worker = r.headers.get("x-switchyard-worker")!;
    const open = h.calls.find((c) => c.url.endsWith("/v1/sessions/open"))!;
    expect(open.url.startsWith(worker === "11" ? W1.url : W2.url)).toBe(true);
    expect(JSON.parse(open.body as unknown as string)).toEqual({ session_id: "s", timeout: 40 });
    const b = await h.request("/debug/sessions/s");
    expect(await b.json()).toMatchObject({
      worker_id: worker,
      kind: "engine-backed",
      ttl_ms: 10_000,
    });
    // Middle turns follow the binding.
    for (let i = 0; i < 3; i++) {
      const m = await h.request("/v1/completions", { json: { prompt: `other ${i}`, ...sc("s") } });
      expect(m.headers.get("x-switchyard-worker")).toBe(worker);
      await m.text();
    }
  });

  test("an engine that does not answer {status: ok} fails the request with 502 and books nothing", async () => {
    const h = harness({ workers: [W1], fetch: engine({ openStatus: "busy" }) });
    const r = await h.request("/v1/completions", {
      json: { prompt: "abcdefgh", ...sc("s", "open", 10) },
    });
    expect(r.status).toBe(502);
    expect(((await r.json()) as { error: { message: string } }).error.message).toContain(
      "did not open session s",
    );
    expect(h.activeLoad()).toBe(0);
    expect((await h.request("/debug/sessions/s")).status).toBe(404);
    expect(h.calls.some((c) => c.url.endsWith("/v1/completions"))).toBe(false);
  });

  test("close unbinds at once and closes on the engine only after the answer ends", async () => {
    const h = harness({ workers: [W1, W2], fetch: engine() });
    await (
      await h.request("/v1/completions", { json: { prompt: "abcdefgh", ...sc("s", "open", 10) } })
    ).text();
    const r = await h.request("/v1/completions", {
      json: { prompt: "ijklmnop", stream: true, ...sc("s", "close") },
    });
    expect((await h.request("/debug/sessions/s")).status).toBe(404);
    expect(h.calls.filter((c) => c.url.endsWith("/v1/sessions/close"))).toHaveLength(0);
    await r.text();
    const closes = h.calls.filter((c) => c.url.endsWith("/v1/sessions/close"));
    expect(closes).toHaveLength(1);
    expect(
      closes[0]!.url.startsWith(r.headers.get("x-switchyard-worker") === "11" ? W1.url : W2.url),
    ).toBe(true);
  });

  test("a header session stays router-only and never touches the engine's session API", async () => {
    const h = harness({ workers: [W1], fetch: engine() });
    await (
      await h.request("/v1/completions", {
        json: { prompt: "abcdefgh" },
        headers: { "x-session-id": "hdr" },
      })
    ).text();
    expect(await (await h.request("/debug/sessions/hdr")).json()).toMatchObject({
      kind: "router-only",
      ttl_ms: 60_000,
    });
    expect(h.calls.some((c) => c.url.includes("/v1/sessions/"))).toBe(false);
  });
});

describe("LoRA on the request path", () => {
  test("an unknown model with load-on-demand is loaded on one worker and served there; the base model loads nothing", async () => {
    const f = engine();
    const h = harness({ workers: [W1, W2], fetch: f, loraLoadOnDemand: true, maxLoras: 1 });
    const r = await h.request("/v1/completions", { json: { prompt: "abcdefgh", model: "sql" } });
    expect(r.status).toBe(200);
    await r.text();
    const worker = r.headers.get("x-switchyard-worker")!;
    const load = h.calls.filter((c) => c.url.endsWith("/v1/load_lora_adapter"));
    expect(load).toHaveLength(1);
    expect(JSON.parse(load[0]!.body as unknown as string)).toEqual({
      lora_name: "sql",
      lora_path: "/loras/sql",
    });
    for (let i = 0; i < 3; i++) {
      const again = await h.request("/v1/completions", { json: { prompt: `p${i}`, model: "sql" } });
      expect(again.headers.get("x-switchyard-worker")).toBe(worker);
      await again.text();
    }
    await (
      await h.request("/v1/completions", { json: { prompt: "abcdefgh", model: "base" } })
    ).text();
    expect(h.calls.filter((c) => c.url.endsWith("/v1/load_lora_adapter"))).toHaveLength(1);
    const ws = (await (await h.request("/v1/workers")).json()) as {
      workers: { id: string; loras: string[] }[];
    };
    expect(ws.workers.find((w) => w.id === worker)!.loras).toEqual(["sql"]);
  });

  test("without load-on-demand an unknown model passes through untouched (the engine answers it)", async () => {
    const h = harness({ workers: [W1], fetch: engine(), maxLoras: 1 });
    const r = await h.request("/v1/completions", { json: { prompt: "abcdefgh", model: "nope" } });
    expect(r.status).toBe(404);
    expect(h.calls.some((c) => c.url.endsWith("/v1/load_lora_adapter"))).toBe(false);
  });

  test("no free slot: 503 lora_no_capacity naming the adapter", async () => {
    const h = harness({ workers: [W1], fetch: engine(), loraLoadOnDemand: true, maxLoras: 1 });
    await (
      await h.request("/v1/completions", { json: { prompt: "abcdefgh", model: "one" } })
    ).text();
    const r = await h.request("/v1/completions", { json: { prompt: "abcdefgh", model: "two" } });
    expect(r.status).toBe(503);
    const e = ((await r.json()) as { error: { code: string; message: string } }).error;
    expect(e.code).toBe("lora_no_capacity");
    expect(e.message).toContain('"two"');
    expect(h.activeLoad()).toBe(0);
  });

  test("an engine that lost the adapter (404) is forgotten and the adapter placed again, once", async () => {
    const f = engine({ loraSlots: 2 });
    const h = harness({ workers: [W1], fetch: f, loraLoadOnDemand: true, maxLoras: 2 });
    await (
      await h.request("/v1/completions", { json: { prompt: "abcdefgh", model: "sql" } })
    ).text();
    f.loaded.get(W1.url)!.length = 0; // another router unloaded it
    const r = await h.request("/v1/completions", { json: { prompt: "abcdefgh", model: "sql" } });
    expect(r.status).toBe(200);
    await r.text();
    expect(h.calls.filter((c) => c.url.endsWith("/v1/load_lora_adapter"))).toHaveLength(2);
  });

  test("registration takes loras / max_loras / model from the body", async () => {
    const h = harness({ workers: [], fetch: async () => jsonResponse({}, 404) });
    const r = await h.request("/v1/workers", {
      json: { url: "http://w9:9", id: 99, loras: ["a"], max_loras: 3, model: "base-9" },
    });
    expect(r.status).toBe(201);
    expect(h.lora.capacity({ workerId: 99n, dpRank: 0 })).toBe(3);
    expect(h.loader.adapterOf("a")).toBe("a");
    expect(h.registry.isBaseModel("base-9")).toBe(true);
  });
});
