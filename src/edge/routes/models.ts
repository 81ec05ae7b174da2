/**
 * GET /v1/models: the union of the healthy workers' models. Answered from the lists the
 * health checks read; the engines are asked only while some healthy worker's list is
 * unknown. It routes nothing.
 */
import { Hono } from "hono";
import { RouterError } from "../../core/errors.ts";
import type { FleetView, Upstream } from "../deps.ts";

const MODELS_TIMEOUT_MS = 2_000;

export function modelRoutes(fleet: Pick<FleetView, "registry" | "models">, upstream: Pick<Upstream, "fetch">): Hono {
  const app = new Hono();
  app.get("/v1/models", async (c) => {
    const healthy = fleet.registry.list().filter((w) => w.healthy);
    if (healthy.length === 0) throw new RouterError("no_endpoints", "no healthy worker to ask for its models");
    // Every healthy worker's list is known (read at registration and each health check): no fan-out.
    const dir = fleet.models;
    if (dir !== undefined && healthy.every((w) => dir.of(w.id) !== undefined)) {
      const created = Math.floor(Date.now() / 1000);
      const data = dir.union(healthy.map((w) => w.id)).map((m) => ({ id: m.id, object: "model", created, owned_by: "switchyard", root: m.id, parent: m.parent }));
      return c.json({ object: "list", data });
    }
    const answers = await Promise.all(
      healthy.map((w) =>
        upstream
          .fetch(`${w.url}/v1/models`, { signal: AbortSignal.timeout(MODELS_TIMEOUT_MS) })
          .then((r) => (r.ok ? (r.json() as Promise<{ data?: unknown[] }>) : undefined))
          .catch(() => undefined),
      ),
    );
    const byId = new Map<string, unknown>();
    for (const a of answers) {
      for (const m of a?.data ?? []) {
        const id = (m as { id?: unknown }).id;
        if (typeof id === "string" && !byId.has(id)) byId.set(id, m);
      }
    }
    return c.json({ object: "list", data: [...byId.values()] });
  });
  return app;
}
