/**
 * vLLM's dynamic LoRA API over HTTP, as AdapterLoader's LoraEngineClient:
 * POST /v1/load_lora_adapter {lora_name, lora_path}, POST /v1/unload_lora_adapter
 * {lora_name}, and the adapters an engine holds (GET /v1/engine/info, else the adapters in
 * GET /v1/models — entries with a `parent` — for a plain vLLM). It decides nothing.
 */
import type { EngineAnswer, LoraEngineClient } from "./lora/adapter-loader.ts";
import { fetchEngineInfo } from "./engine-info.ts";

type Fetch = (url: string, init: RequestInit) => Promise<Response>;

export interface EngineLoraClientOptions {
  /** A load reads weights: give it time (default 120 s). */
  readonly loadTimeoutMs?: number;
  /** Unload and listing (default 5 s). */
  readonly timeoutMs?: number;
  readonly fetch?: Fetch;
}

/** The engine's error text: OpenAI-shaped `{"error":{"message"}}`, `{"message"}`, or the body. */
function messageOf(text: string): string {
  try {
    const j = JSON.parse(text) as {
      error?: { message?: unknown } | string;
      message?: unknown;
      detail?: unknown;
    };
    const m = typeof j.error === "object" ? j.error?.message : (j.error ?? j.message ?? j.detail);
    if (typeof m === "string") return m;
  } catch {
    // not JSON: the text itself
  }
  return text.slice(0, 500);
}

async function post(
  doFetch: Fetch,
  url: string,
  body: unknown,
  timeoutMs: number,
): Promise<EngineAnswer> {
  let res: Response;
  try {
    res = await doFetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (e) {
    return { ok: false, status: 0, message: `POST ${url} failed: ${(e as Error).message}` };
  }
  const text = await res.text().catch(() => "");
  return res.ok ? { ok: true } : { ok: false, status: res.status, message: messageOf(text) };
}

export function engineLoraClient(o: EngineLoraClientOptions = {}): LoraEngineClient {
  const doFetch: Fetch = o.fetch ?? ((u, i) => fetch(u, i));
  const timeoutMs = o.timeoutMs ?? 5_000;
  const loadTimeoutMs = o.loadTimeoutMs ?? 120_000;
  return {
    load: (url, name, path) =>
      post(
        doFetch,
        `${url}/v1/load_lora_adapter`,
        { lora_name: name, lora_path: path },
        loadTimeoutMs,
      ),
    unload: (url, name) =>
      post(doFetch, `${url}/v1/unload_lora_adapter`, { lora_name: name }, timeoutMs),
    async listLoaded(url) {
      try {
        const info = await fetchEngineInfo(url, timeoutMs, doFetch);
        return { loras: info.loras, maxLoras: info.maxLoras };
      } catch (infoError) {
        const res = await doFetch(`${url}/v1/models`, { signal: AbortSignal.timeout(timeoutMs) });
        if (!res.ok) throw infoError;
        const body = (await res.json()) as { data?: { id?: unknown; parent?: unknown }[] };
        const loras = (body.data ?? [])
          .filter((m) => typeof m.id === "string" && m.parent != null)
          .map((m) => m.id as string);
        return { loras };
      }
    },
  };
}
