/**
 * vLLM's runtime LoRA routes: POST /v1/load_lora_adapter and /v1/unload_lora_adapter, plain-text
 * answers as vLLM gives them (400 already loaded or no free slot, 404 not loaded). The slots
 * themselves are lora.ts; this file only reads bodies and maps results to statuses.
 */
import type { MockEngine } from "./engine.ts";
import { error, readJson, type Route } from "./http.ts";
import { parseLoadLora, parseUnloadLora } from "./requests.ts";

export function loraRoutes(engine: MockEngine): Route[] {
  return [
    {
      method: "POST",
      path: "/v1/load_lora_adapter",
      handle: async (c) => {
        const { name, path: loraPath } = parseLoadLora(await readJson(c.req.raw));
        const r = engine.loras.load(name, loraPath);
        return r.ok
          ? new Response(r.message)
          : error(r.status, r.message, r.status === 404 ? "NotFoundError" : "BadRequestError");
      },
    },
    {
      method: "POST",
      path: "/v1/unload_lora_adapter",
      handle: async (c) => {
        const { name } = parseUnloadLora(await readJson(c.req.raw));
        const r = engine.loras.unload(name);
        return r.ok
          ? new Response(r.message)
          : error(r.status, r.message, r.status === 404 ? "NotFoundError" : "BadRequestError");
      },
    },
  ];
}
