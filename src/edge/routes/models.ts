/**
 * GET /v1/models: every model the healthy workers serve, one card per model in vLLM's shape
 * ({id, object: "model", created, owned_by, root, parent, max_model_len, permission, ...}),
 * each engine's own fields kept and merged per model across the engines serving it. Answered
 * from the lists the health checks read; the engines are asked only while some healthy
 * worker's list is unknown. It routes nothing.
 */
import { Hono } from "hono";
import { RouterError } from "../../core/errors.ts";
import { parseModelList, type ServedModel } from "../../fleet/models.ts";
import type { FleetView, Upstream } from "../deps.ts";

const MODELS_TIMEOUT_MS = 2_000;

/** One model as GET /v1/models lists it. */
export interface ModelCard {
  readonly id: string;
  readonly object: "model";
  readonly created: number;
  readonly parent: string | null;
  readonly [field: string]: unknown;
}

/** The smaller of two max_model_len values, where either may be missing or not a number. */
function smaller(a: unknown, b: unknown): unknown {
  if (typeof a !== "number") return typeof b === "number" ? b : a;
  return typeof b === "number" ? Math.min(a, b) : a;
}

/**
 * One card per model from the engines' lists, in the order they come. Each field is the first
 * engine's that has it, except `max_model_len`: the smallest, since a request for the model
 * may go to any of them and must fit the one it reaches. A name that is a base model on any
 * engine is a base model (parent null), as model routing counts it. Without an engine's
 * word, `owned_by` is "switchyard" and `root` the id; `created` is this answer's time.
 */
export function mergeModelCards(
  lists: Iterable<readonly ServedModel[]>,
  created: number,
): ModelCard[] {
  const byId = new Map<string, { parent: string | null; fields: Record<string, unknown> }>();
  for (const list of lists) {
    for (const m of list) {
      let card = byId.get(m.id);
      if (card === undefined) byId.set(m.id, (card = { parent: m.parent, fields: {} }));
      else if (m.parent === null) card.parent = null;
      for (const [k, v] of Object.entries(m.fields ?? {})) {
        if (!(k in card.fields)) card.fields[k] = v;
        else if (k === "max_model_len") card.fields[k] = smaller(card.fields[k], v);
      }
    }
  }
  return [...byId].map(([id, c]) => ({
    id,
    object: "model",
    created,
    owned_by: "switchyard",
    root: id,
    parent: c.parent,
    ...c.fields,
  }));
}

export function modelRoutes(
  fleet: Pick<FleetView, "registry" | "models">,
  upstream: Pick<Upstream, "fetch">,
): Hono {
  const app = new Hono();
  app.get("/v1/models", async (c) => {
    const healthy = fleet.registry.list().filter((w) => w.healthy);
    if (healthy.length === 0)
      throw new RouterError("no_endpoints", "no healthy worker to ask for its models");
    const created = Math.floor(Date.now() / 1000);
    // Every healthy worker's list is known (read at registration and each health check): no fan-out.
    const dir = fleet.models;
    if (dir !== undefined && healthy.every((w) => dir.of(w.id) !== undefined)) {
      return c.json({
        object: "list",
        data: mergeModelCards(
          healthy.map((w) => dir.of(w.id)!),
          created,
        ),
      });
    }
    const lists = await Promise.all(
      healthy.map((w) =>
        upstream
          .fetch(`${w.url}/v1/models`, { signal: AbortSignal.timeout(MODELS_TIMEOUT_MS) })
          .then(async (r) => (r.ok ? parseModelList(await r.json()) : undefined))
          .catch(() => undefined),
      ),
    );
    return c.json({
      object: "list",
      data: mergeModelCards(
        lists.filter((l) => l !== undefined),
        created,
      ),
    });
  });
  return app;
}
