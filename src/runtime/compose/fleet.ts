/**
 * The fleet's parts, before any router exists: the worker registry, which models each worker
 * serves, the models' tokenizers (loaded now, never per request), LoRA adapter state and the
 * router's own way of calling engines (--engine-token). It registers no worker (membership.ts).
 */
import type { Config } from "../../config/schema.ts";
import type { Logger } from "../../core/logger.ts";
import { RouterTokenizers } from "../../edge/prompt-route/tokenizers.ts";
import { AdapterLoader } from "../../fleet/lora/adapter-loader.ts";
import { AdapterAllowlist } from "../../fleet/lora/adapter-name.ts";
import { LoraStateTracker } from "../../fleet/lora/state-tracker.ts";
import { engineLoraClient } from "../../fleet/engine-lora.ts";
import { ModelDirectory } from "../../fleet/models.ts";
import { WorkerRegistry } from "../../fleet/registry.ts";
import type { RouterMetrics } from "../../observe/names.ts";
import type { RuntimeChoices } from "./choices.ts";
import { reportEncoderChoice } from "./encoder-report.ts";
import { engineFetch, ownFetch } from "./engine-fetch.ts";
import { StartupError } from "./startup-error.ts";

/** Registration and recovery queries must not hang on a dead engine. */
export const ENGINE_QUERY_TIMEOUT_MS = 5_000;

export interface Fleet {
  readonly registry: WorkerRegistry;
  readonly models: ModelDirectory;
  readonly tokenizers: RouterTokenizers;
  readonly lora: LoraStateTracker;
  readonly adapters: AdapterLoader;
  /** fetch for the router's own engine calls, carrying --engine-token. */
  readonly toEngines: ReturnType<typeof engineFetch>;
  /** The headers those calls carry. */
  readonly engineHeaders: Record<string, string>;
}

/** Throws StartupError for a tokenizer that cannot load (or a runtime that cannot read one). */
export async function buildFleet(
  config: Config,
  choices: Pick<RuntimeChoices, "loadTokenizer">,
  log: Logger,
  metrics: RouterMetrics,
  now: () => number,
): Promise<Fleet> {
  const registry = new WorkerRegistry();
  // Which models each worker serves (GET /v1/models at registration and every health check).
  const models = new ModelDirectory();
  const tokenizers = await loadTokenizers(config, choices, log, metrics, models);
  if (config.policy === "approx")
    log.info(
      'policy approx: routing on this router\'s own decisions; ZMQ event streams (kv_events) are not subscribed to, and events posted to /v1/kv/events are dropped (switchyard_kv_events_dropped_total{reason="approx_policy"})',
    );
  const toEngines = engineFetch(config.engineToken);
  const engineHeaders: Record<string, string> = config.engineToken
    ? { authorization: `Bearer ${config.engineToken}` }
    : {};
  const lora = new LoraStateTracker({ logger: { warn: (m, f) => log.warn(m, f) } });
  const adapters = new AdapterLoader({
    tracker: lora,
    engine: engineLoraClient({ fetch: toEngines }),
    workers: () => registry.list().filter((w) => w.healthy),
    loadOnDemand: config.loraLoadOnDemand,
    isBaseModel: (name) => registry.isBaseModel(name) || models.isBase(name),
    pathTemplate: config.loraPath,
    evict: config.loraEvict,
    allow: new AdapterAllowlist(config.loraAllow),
    now,
    log,
  });
  return { registry, models, tokenizers, lora, adapters, toEngines, engineHeaders };
}

/**
 * The models' tokenizers, each loaded once here. Text the router cannot tokenize as the engine
 * does is routed on its own decisions, apart (src/tokens/README.md).
 */
async function loadTokenizers(
  config: Config,
  choices: Pick<RuntimeChoices, "loadTokenizer">,
  log: Logger,
  metrics: RouterMetrics,
  models: ModelDirectory,
): Promise<RouterTokenizers> {
  const load = choices.loadTokenizer;
  if (config.tokenizers.length > 0 && load === undefined)
    throw new StartupError("--tokenizer: this runtime cannot read tokenizer files");
  const tokenizers = new RouterTokenizers({
    load: async (dir) => reportEncoderChoice(await load!(dir), metrics, log),
    parentOf: (m) => models.parentOf(m),
    fetch: ownFetch,
    timeoutMs: ENGINE_QUERY_TIMEOUT_MS,
  });
  for (const t of config.tokenizers) {
    let tok;
    try {
      tok = await tokenizers.add(t.model, t.path);
    } catch (e) {
      throw new StartupError(
        `--tokenizer ${t.model !== undefined ? `${t.model}=` : ""}${t.path}: ${(e as Error).message}`,
      );
    }
    log.info(`tokenizer for ${t.model ?? "every model"}: ${tok.source}`, {
      implementation: tok.implementation,
    });
  }
  if (config.tokenizers.length === 0)
    log.info(
      "no --tokenizer: token-id prompts are routed exactly, text approximately (on the router's own decisions)",
    );
  return tokenizers;
}
