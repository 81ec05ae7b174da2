/**
 * Asks a real engine for its KV capacity once, at registration (membership.ts calls it when the
 * engine's /v1/engine/info named none): vLLM's `GET /metrics` (`vllm:cache_config_info`) and
 * SGLang's `GET /server_info` (then `/get_server_info`, its name before) at once, since the router
 * does not know which engine it is talking to. Each with a deadline; a failure or a page without
 * the numbers is "said nothing". Reading the answers is engine-capacity.ts. It sets nothing itself.
 */
import {
  readSglangKvCapacity,
  readVllmKvCapacity,
  type KvCapacityReading,
} from "./engine-capacity.ts";

export interface KvCapacityProbeOptions {
  /** The router's block size: the capacity comes back in its blocks. */
  readonly blockSize: number;
  readonly timeoutMs: number;
  readonly fetch: (url: string, init: RequestInit) => Promise<Response>;
}

/** Pages larger than this are not an engine's metrics or server info. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** What the engine said about its capacity (vLLM's answer first), or undefined when it said nothing. */
export async function probeKvCapacity(
  url: string,
  o: KvCapacityProbeOptions,
): Promise<KvCapacityReading | undefined> {
  const [vllm, sglang] = await Promise.all([
    bodyOf(`${url}/metrics`, o).then((t) =>
      t === undefined ? undefined : readVllmKvCapacity(t, o.blockSize),
    ),
    sglangInfo(url, o).then((info) =>
      info === undefined ? undefined : readSglangKvCapacity(info, o.blockSize),
    ),
  ]);
  return vllm ?? sglang;
}

async function sglangInfo(url: string, o: KvCapacityProbeOptions): Promise<unknown> {
  // Newer SGLang logs a deprecation warning for every /get_server_info: the new name first.
  const text =
    (await bodyOf(`${url}/server_info`, o)) ?? (await bodyOf(`${url}/get_server_info`, o));
  if (text === undefined) return undefined;
  try {
    // Plain numbers: a token count past 2^53 is absurd whatever its last digits.
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The body of a 2xx answer, or undefined for anything else (error status, failure, deadline, too large). */
async function bodyOf(url: string, o: KvCapacityProbeOptions): Promise<string | undefined> {
  try {
    const res = await o.fetch(url, { signal: AbortSignal.timeout(o.timeoutMs) });
    if (!res.ok || Number(res.headers.get("content-length") ?? 0) > MAX_BODY_BYTES) {
      await res.body?.cancel().catch(() => {});
      return undefined;
    }
    const text = await res.text();
    return text.length > MAX_BODY_BYTES ? undefined : text;
  } catch {
    return undefined;
  }
}
