/**
 * Admin: GET /v1/workers (state and load of each worker), POST /v1/workers (register;
 * the index is restored from the worker's /kv/query dump), DELETE /v1/workers/:id,
 * POST /v1/workers/:id/canary, POST and DELETE /v1/workers/:id/drain (take one worker out of
 * rotation to drain, and back).
 * Ids are u64: accepted as JSON numbers or decimal strings, always written as strings.
 */
import { Hono } from "hono";
import * as v from "valibot";
import { RouterError } from "../../core/errors.ts";
import { describeIssues, U64Schema } from "../../core/events.ts";
import { workerKey } from "../../core/ids.ts";
import { parseJsonExact, readBodyLimited } from "../body.ts";
import type { AdminDeps, FleetView, RequestLimits, WorkerDrain } from "../deps.ts";
import type { WorkerRoles } from "../disagg/roles.ts";
import type { RouterApi } from "../../router/index.ts";
import { WorkerSpecSchema, workerSpecOf } from "../../fleet/worker-spec.ts";
import { modelFields, registerTokenizer } from "./worker-models.ts";

/** POST /v1/workers: a workers-file entry's fields (worker-spec.ts, one schema) plus `tokenizer`; unknown fields are ignored here. */
const RegisterBody = v.object({
  ...WorkerSpecSchema.entries,
  tokenizer: v.optional(v.pipe(v.string("must be a string"), v.nonEmpty("must not be empty"))),
});

/** What the worker admin routes use. */
export interface WorkerRouteDeps {
  readonly limits: RequestLimits;
  readonly fleet: FleetView;
  /** Each worker's load and cached blocks. */
  readonly router: Pick<RouterApi, "tracker" | "index" | "ttft">;
  readonly admin: AdminDeps;
  /** --disagg: each worker's role, shown and set at registration. */
  readonly roles?: WorkerRoles;
}

/** The reason an admin's drain shows in GET /v1/workers. */
const ADMIN_DRAIN = "draining: admin";

function drainOf(admin: AdminDeps): WorkerDrain {
  if (admin.drain === undefined)
    throw new RouterError(
      "invalid_request",
      "this router cannot drain workers (no health checker)",
    );
  return admin.drain;
}

function parseId(raw: string): bigint {
  const r = v.safeParse(U64Schema, raw);
  if (!r.success)
    throw new RouterError("invalid_request", `worker id: ${describeIssues(r.issues)}`, "id");
  return r.output;
}

export function workerRoutes(d: WorkerRouteDeps): Hono {
  const app = new Hono();
  const { fleet, admin, roles } = d;

  app.get("/v1/workers", (c) => {
    const now = admin.now();
    const workers = fleet.registry.list().map((w) => {
      let prefill = 0;
      let decode = 0;
      let cached = 0;
      // The KV its engines can hold, summed over its ranks; null when some rank did not say.
      let capacity: number | null = 0;
      const speeds = [];
      for (let r = 0; r < w.dpRanks; r++) {
        const key = workerKey(w.id, r);
        prefill += d.router.tracker.activeTokens(key, now);
        decode += d.router.tracker.activeBlocks(key);
        cached += d.router.index.workerSize(key);
        const c = d.router.tracker.kvCapacity(key);
        capacity = capacity === null || c === undefined ? null : capacity + c;
        // What the kv policy predicts with on this rank (docs/routing.md).
        const s = d.router.ttft.speed(key);
        speeds.push({
          dp_rank: r,
          ms_per_token: s.msPerToken,
          latency_ms: s.latencyMs,
          factor: s.factor,
          source: s.source,
          // Its decode step with one sequence running (learned from inter-token gaps), and how much of a step a first token waits for (the fleet's).
          decode_step_ms: d.router.ttft.steps.stepMs(key, 1),
          decode_weight: d.router.ttft.decodeWeight,
        });
      }
      return {
        id: w.id.toString(),
        url: w.url,
        healthy: w.healthy,
        ...(w.reason ? { reason: w.reason } : {}),
        dp_ranks: w.dpRanks,
        active_prefill_tokens: prefill,
        active_decode_blocks: decode,
        cached_blocks: cached,
        kv_capacity_blocks: capacity,
        prefill_speed: speeds,
        loras: fleet.lora.loadedOn(w.id),
        ...(roles ? { role: roles.roleOf(w.url) } : {}),
        ...modelFields(fleet, w.id),
        ...admin.workerDetails?.(w.id),
      };
    });
    return c.json({ workers });
  });

  app.post("/v1/workers", async (c) => {
    const body = parseJsonExact(await readBodyLimited(c.req.raw, d.limits.maxBodyBytes));
    const r = v.safeParse(RegisterBody, body);
    if (!r.success)
      throw new RouterError(
        "invalid_request",
        `invalid worker registration: ${describeIssues(r.issues)}`,
      );
    const b = r.output;
    await admin.workerUrlPolicy?.check(b.url); // never this router, any router, or a URL off --worker-allow
    if (b.role !== undefined) roles?.set(b.url, b.role); // before it can be routed to
    const { kvEvents, role: _role, ...input } = workerSpecOf(b, "invalid worker registration");
    if (kvEvents && !admin.provisioner)
      throw new RouterError(
        "invalid_request",
        "kv_events: this router cannot subscribe to ZMQ event streams",
        "kv_events",
      );
    // With kv_events the worker's index comes from its event stream (no /kv/query restore).
    const res = admin.provisioner
      ? await admin.provisioner.register({ ...input, kvEvents })
      : await admin.membership.register(input);
    const w = res.worker;
    const warnings =
      b.tokenizer !== undefined
        ? [...res.warnings, ...(await registerTokenizer(fleet, w.id, b.tokenizer))]
        : res.warnings;
    return c.json(
      {
        id: w.id.toString(),
        url: w.url,
        dp_ranks: w.dpRanks,
        healthy: w.healthy,
        created: res.created,
        warnings,
      },
      res.created ? 201 : 200,
    );
  });

  // The cache check's canary, on demand: a known prompt sent twice straight to the engine.
  app.post("/v1/workers/:id/canary", async (c) => {
    const id = parseId(c.req.param("id"));
    if (!fleet.registry.has(id)) throw new RouterError("not_found", `no worker ${id}`);
    if (admin.canary === undefined)
      throw new RouterError("invalid_request", "the cache check is off (--policy approx)");
    const results = await admin.canary(id);
    return c.json({
      id: id.toString(),
      ok: results.length > 0 && results.every((r) => r.ok),
      results,
    });
  });

  // Drain: no new requests for this worker; its in-flight ones finish, and its streams still
  // running after --migrate-after move to another worker (edge/proxy/migration) without blaming it.
  app.post("/v1/workers/:id/drain", (c) => {
    const id = parseId(c.req.param("id"));
    const drain = drainOf(admin);
    if (!fleet.registry.has(id)) throw new RouterError("not_found", `no worker ${id}`);
    const held = drain.heldFor(id);
    if (held === undefined) drain.hold(id, ADMIN_DRAIN);
    return c.json({ id: id.toString(), draining: true, reason: held ?? ADMIN_DRAIN });
  });

  app.delete("/v1/workers/:id/drain", async (c) => {
    const id = parseId(c.req.param("id"));
    const drain = drainOf(admin);
    if (!fleet.registry.has(id)) throw new RouterError("not_found", `no worker ${id}`);
    const held = drain.heldFor(id);
    if (held !== undefined && held !== ADMIN_DRAIN)
      throw new RouterError(
        "invalid_request",
        `worker ${id} is held by discovery (${held}), not by an admin's drain: its pod's readiness lifts it`,
        "id",
      );
    const healthy = held === undefined ? fleet.registry.get(id)?.healthy : await drain.release(id);
    return c.json({ id: id.toString(), draining: false, healthy: healthy === true });
  });

  app.delete("/v1/workers/:id", (c) => {
    const w = admin.membership.remove(parseId(c.req.param("id")));
    return c.json({ id: w.id.toString(), removed: true });
  });

  return app;
}
