/**
 * GET {url}/v1/engine/info: what an engine says about itself at registration (worker id,
 * dp ranks, block size, LoRA adapters). Engines that do not serve it are still usable;
 * the caller then relies on what the registration request said.
 */
import * as v from "valibot";
import { U64Schema } from "../core/events.ts";
import { parseJsonBigintSafe } from "../core/json.ts";
import type { WorkerId } from "../core/ids.ts";

export interface EngineInfo {
  readonly workerId?: WorkerId;
  /**
   * This engine process: `instance_id`, else `started_at` (ms since the epoch) as text.
   * A change means the engine restarted with an empty cache (restart-detector.ts).
   */
  readonly instanceId?: string;
  readonly dpRanks?: number;
  readonly blockSize?: number;
  readonly kvBlocks?: number;
  readonly loras: readonly string[];
  readonly maxLoras?: number;
  /** The base model it serves (requests naming it are not adapter requests). */
  readonly model?: string;
  /** Disaggregated serving: what it does (src/edge/disagg/roles.ts); absent = both. */
  readonly role?: "prefill" | "decode" | "both";
  /** SGLang P/D: the port of its bootstrap server (the simulated engine's own HTTP port). */
  readonly bootstrapPort?: number;
}

const count = v.pipe(v.number(), v.integer(), v.minValue(0));

const EngineInfoSchema = v.object({
  worker_id: v.optional(U64Schema),
  instance_id: v.optional(v.pipe(v.string(), v.maxLength(256))),
  started_at: v.optional(v.number()),
  dp_ranks: v.optional(v.pipe(count, v.minValue(1))),
  block_size: v.optional(v.pipe(count, v.minValue(1))),
  kv_blocks: v.optional(count),
  loras: v.optional(v.array(v.string()), []),
  max_loras: v.optional(count),
  model: v.optional(v.string()),
  // Lenient: an engine's unknown role word leaves it "both" instead of failing its registration.
  role: v.optional(v.unknown()),
  bootstrap_port: v.optional(v.pipe(count, v.minValue(1), v.maxValue(65535))),
});

export async function fetchEngineInfo(
  url: string,
  timeoutMs: number,
  doFetch: (url: string, init: RequestInit) => Promise<Response> = fetch,
): Promise<EngineInfo> {
  const res = await doFetch(`${url}/v1/engine/info`, { signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  if (!res.ok) throw new Error(`GET ${url}/v1/engine/info answered HTTP ${res.status}`);
  const parsed = v.safeParse(EngineInfoSchema, parseJsonBigintSafe(text));
  if (!parsed.success)
    throw new Error(`GET ${url}/v1/engine/info: unexpected body (${parsed.issues[0]?.message})`);
  const o = parsed.output;
  return {
    workerId: o.worker_id,
    instanceId: o.instance_id ?? (o.started_at !== undefined ? String(o.started_at) : undefined),
    dpRanks: o.dp_ranks,
    blockSize: o.block_size,
    kvBlocks: o.kv_blocks,
    loras: o.loras,
    maxLoras: o.max_loras,
    model: o.model,
    role: o.role === "prefill" || o.role === "decode" || o.role === "both" ? o.role : undefined,
    bootstrapPort: o.bootstrap_port,
  };
}
