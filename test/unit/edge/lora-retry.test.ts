/**
 * The LoRA 404 retry (proxy/model-forward.ts): the engine lost the adapter, it is placed again
 * and the request sent once more — with the prompt hashed once for both tries, and the
 * worker that answered taken from forward() itself, not parsed back from our own header.
 */
import { expect, test } from "bun:test";
import { routedWorkerOf } from "../../../src/edge/proxy/forward.ts";
import { harness, jsonResponse, sseResponse, type FakeFetch } from "./harness.ts";

const W1 = { id: 11n, url: "http://w1:1" };

test("a LoRA 404 retry reuses the prompt's hashes and knows the answering worker without our header", async () => {
  const loaded: string[] = [];
  const f: FakeFetch = async (url, init) => {
    const path = new URL(url).pathname;
    const raw =
      typeof init.body === "string"
        ? init.body
        : init.body
          ? new TextDecoder().decode(init.body as Uint8Array)
          : "{}";
    const body = JSON.parse(raw) as Record<string, unknown>;
    if (path === "/v1/load_lora_adapter") {
      loaded.push(String(body.lora_name));
      return new Response("ok");
    }
    if (path === "/v1/engine/info") return jsonResponse({ loras: loaded, max_loras: 2 });
    if (body.model === "sql" && !loaded.includes("sql"))
      return jsonResponse({ error: { message: "model does not exist" } }, 404);
    return sseResponse(2);
  };
  const h = harness({ workers: [W1], fetch: f, loraLoadOnDemand: true, maxLoras: 2 });
  await (await h.request("/v1/completions", { json: { prompt: "abcdefgh", model: "sql" } })).text();
  loaded.length = 0; // another router unloaded it

  const routing = h.deps.router.routing;
  const original = routing.prepare.bind(routing);
  let hashed = 0;
  routing.prepare = (tokens, lora) => {
    hashed++;
    return original(tokens, lora);
  };
  const r = await h.request("/v1/completions", { json: { prompt: "abcdefgh", model: "sql" } });
  expect(r.status).toBe(200);
  await r.text();
  expect(h.calls.filter((c) => c.url.endsWith("/v1/load_lora_adapter"))).toHaveLength(2);
  expect(hashed).toBe(1);
  // The answer's worker is known to the dispatcher from forward() itself.
  expect(routedWorkerOf(r)).toBe(W1.id);
});
