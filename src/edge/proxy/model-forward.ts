/**
 * One proxied request, from its `model` to the engine's answer: the workers serving the model
 * (prompt-route/model-routing.ts), LoRA adapters loaded where needed, then forward (route, retry,
 * stream). Shared by the OpenAI routes and the pass-through routes. It parses no bodies.
 */
import type { WorkerId } from "../../core/ids.ts";
import type { FleetView } from "../deps.ts";
import {
  forward,
  promptHashes,
  routedWorkerOf,
  type ForwardDeps,
  type ForwardInput,
} from "./forward.ts";
import { modelRoute } from "../prompt-route/model-routing.ts";

/** `model`: the body's, checked once where it was read (prompt-route/model-routing.ts modelField). */
export type ModelForward = (input: ForwardInput, model: string | undefined) => Promise<Response>;

/** Intersection with what the caller already allowed (none: the route's set as is). */
function within(
  a: ReadonlySet<WorkerId> | undefined,
  b: ReadonlySet<WorkerId>,
): ReadonlySet<WorkerId> {
  if (a === undefined) return b;
  return new Set([...b].filter((w) => a.has(w)));
}

export function createModelForward(fleet: FleetView, forwardDeps: ForwardDeps): ModelForward {
  /** Only to workers holding the adapter (loaded first if none does); one retry if the engine lost it. */
  const forwardLora = async (input: ForwardInput, loraName: string): Promise<Response> => {
    const allowed = async () => within(input.allowedWorkerIds, await fleet.lora.ensure(loraName));
    // Hashed once for both tries (the adapter's name is part of every block hash).
    const prepared = promptHashes({ ...input, loraName }, forwardDeps.routing);
    let res = await forward(
      { ...input, loraName, prepared, allowedWorkerIds: await allowed() },
      forwardDeps,
    );
    let worker = routedWorkerOf(res);
    if (res.status === 404 && worker !== undefined) {
      // Another router unloaded it there (--lora-evict): forget it, place it again.
      await res.body?.cancel().catch(() => {});
      fleet.lora.missing(loraName, worker);
      res = await forward(
        { ...input, loraName, prepared, allowedWorkerIds: await allowed() },
        forwardDeps,
      );
      worker = routedWorkerOf(res);
    }
    if (worker !== undefined && res.ok) fleet.lora.used(loraName, worker);
    return res;
  };

  return (input, model) => {
    const route = modelRoute(model, fleet);
    switch (route.kind) {
      case "any":
        return forward(input, forwardDeps);
      case "lora":
        return forwardLora(input, route.loraName);
      case "workers":
        return forward(
          {
            ...input,
            loraName: route.loraName,
            allowedWorkerIds: within(input.allowedWorkerIds, route.workerIds),
          },
          forwardDeps,
        );
    }
  };
}
