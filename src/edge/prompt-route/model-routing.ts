/**
 * Which workers may serve a request's `model`, before scheduling:
 * - no `model`: every worker (the engines answer with their default model);
 * - a LoRA adapter this router places (lora/adapter-loader.ts: loaded somewhere, or
 *   load-on-demand for a name that is no served base model): the workers holding it;
 * - a name some worker lists at GET /v1/models (base model or adapter): those workers, and an
 *   adapter's name salts the block hashes as the engine's do;
 * - any other name: the workers whose model list is unknown (they may serve it), else
 *   404 `model_not_found` in OpenAI's shape.
 * It does not forward and does no I/O.
 */
import { RouterError } from "../../core/errors.ts";
import type { WorkerId } from "../../core/ids.ts";
import type { ModelDirectory } from "../../fleet/models.ts";
import type { WorkerRegistry } from "../../fleet/registry.ts";
import type { LoraRouting } from "../deps.ts";

export type ModelRoute =
  /** Every worker may serve it. */
  | { readonly kind: "any" }
  /** Only these workers; `loraName` salts the hashes (an adapter the engines list). */
  | {
      readonly kind: "workers";
      readonly workerIds: ReadonlySet<WorkerId>;
      readonly loraName?: string;
    }
  /** An adapter the router places: ask the LoRA loader for its holders. */
  | { readonly kind: "lora"; readonly loraName: string };

const ANY: ModelRoute = { kind: "any" };

export interface ModelRoutingDeps {
  readonly registry: WorkerRegistry;
  readonly lora: LoraRouting;
  /** Without it (tests, embedders) every model goes to every worker: no model is refused. */
  readonly models?: ModelDirectory;
}

/**
 * A body's `model`, checked here once, where the route reads its body: a string, or absent.
 * `null` counts as absent on the engine-native routes (`nullIsAbsent`); OpenAI's routes refuse it.
 */
export function modelField(model: unknown, nullIsAbsent: boolean): string | undefined {
  if (model === undefined || (model === null && nullIsAbsent)) return undefined;
  if (typeof model !== "string")
    throw new RouterError("invalid_request", "model: must be a string", "model");
  return model;
}

/** Where `model` (checked by modelField) may go. */
export function modelRoute(model: string | undefined, d: ModelRoutingDeps): ModelRoute {
  if (model === undefined || model === "") return ANY;
  const dir = d.models;
  const adapter = dir?.isBase(model) ? undefined : d.lora.adapterOf(model);
  if (adapter !== undefined) return { kind: "lora", loraName: adapter };
  if (dir === undefined) return ANY;
  const served = dir.servedBy(model);
  if (served.size > 0) {
    return dir.parentOf(model) !== undefined
      ? { kind: "workers", workerIds: served, loraName: model }
      : { kind: "workers", workerIds: served };
  }
  const unknown = new Set<WorkerId>();
  for (const w of d.registry.list()) if (dir.of(w.id) === undefined) unknown.add(w.id);
  if (unknown.size === d.registry.size) return ANY; // none known (or none registered: no_endpoints later)
  if (unknown.size > 0) return { kind: "workers", workerIds: unknown };
  throw new RouterError("model_not_found", `The model \`${model}\` does not exist.`, "model");
}
