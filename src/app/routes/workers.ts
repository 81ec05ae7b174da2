/**
 * Admin: GET /v1/workers (state and load of each worker), POST /v1/workers (register;
 * the index is restored from the worker's /kv/query dump), DELETE /v1/workers/:id.
 * Ids are u64: accepted as JSON numbers or decimal strings, always written as strings.
 */
import { Hono } from "hono";
import * as v from "valibot";
import { RouterError } from "../../core/errors.ts";
import { describeIssues, U64Schema } from "../../core/events.ts";
import { workerKey } from "../../core/ids.ts";
import { parseJsonExact, readBodyLimited } from "../body.ts";
import type { AppDeps } from "../deps.ts";
import { KvEventsSchema, kvEventsSpec } from "../../workers/worker-spec.ts";
import { modelFields, registerTokenizer } from "./worker-models.ts";
import { WORKER_ROLES } from "../disagg/roles.ts";

const RegisterBody = v.object({
  url: v.string("must be a string"),
  id: v.optional(U64Schema),
  dp_ranks: v.optional(v.pipe(v.number("must be a number"), v.integer("must be an integer"), v.minValue(1, "must be >= 1"), v.maxValue(1024, "must be <= 1024"))),
  block_size: v.optional(v.pipe(v.number("must be a number"), v.integer("must be an integer"), v.minValue(1, "must be >= 1"))),
  loras: v.optional(v.array(v.pipe(v.string("must be a string"), v.nonEmpty("must not be empty")), "must be an array of adapter names")),
  max_loras: v.optional(v.pipe(v.number("must be a number"), v.integer("must be an integer"), v.minValue(0, "must be >= 0"))),
  model: v.optional(v.pipe(v.string("must be a string"), v.nonEmpty("must not be empty"))),
  tokenizer: v.optional(v.pipe(v.string("must be a string"), v.nonEmpty("must not be empty"))),
  models: v.optional(v.pipe(v.array(v.pipe(v.string("must be a string"), v.nonEmpty("must not be empty")), "must be an array of model names"), v.nonEmpty("must not be empty"))),
  // Where the engine publishes its KV events over ZMQ (vLLM --kv-events-config; rank r on port + r).
  kv_events: v.optional(KvEventsSchema),
  // Disaggregated serving (--disagg): what it does; the operator's word wins over engine info.
  role: v.optional(v.picklist(WORKER_ROLES, `must be one of ${WORKER_ROLES.join(", ")}`)),
});

function parseId(raw: string): bigint {
  const r = v.safeParse(U64Schema, raw);
  if (!r.success) throw new RouterError("invalid_request", `worker id: ${describeIssues(r.issues)}`, "id");
  return r.output;
}

export function workerRoutes(d: AppDeps): Hono {
  const app = new Hono();

  app.get("/v1/workers", (c) => {
    const now = d.now();
    const workers = d.registry.list().map((w) => {
      let prefill = 0;
      let decode = 0;
      let cached = 0;
      for (let r = 0; r < w.dpRanks; r++) {
        const key = workerKey(w.id, r);
        prefill += d.router.tracker.activeTokens(key, now);
        decode += d.router.tracker.activeBlocks(key);
        cached += d.router.index.workerSize(key);
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
        loras: d.lora.loadedOn(w.id),
        ...(d.disagg ? { role: d.disagg.roles.roleOf(w.url) } : {}),
        ...modelFields(d, w.id),
        ...d.workerDetails?.(w.id),
      };
    });
    return c.json({ workers });
  });

  app.post("/v1/workers", async (c) => {
    const body = parseJsonExact(await readBodyLimited(c.req.raw, d.maxBodyBytes));
    const r = v.safeParse(RegisterBody, body);
    if (!r.success) throw new RouterError("invalid_request", `invalid worker registration: ${describeIssues(r.issues)}`);
    const b = r.output;
    await d.workerUrlPolicy?.check(b.url); // never this router, any router, or a URL off --worker-allow
    if (b.role !== undefined) d.disagg?.roles.set(b.url, b.role); // before it can be routed to
    const kvEvents = kvEventsSpec(b.kv_events, b.dp_ranks, "invalid worker registration");
    const input = {
      url: b.url,
      id: b.id,
      dpRanks: kvEvents?.dpRanks ?? b.dp_ranks,
      blockSize: b.block_size,
      loras: b.loras,
      maxLoras: b.max_loras,
      model: b.model,
      models: b.models,
    };
    if (kvEvents && !d.provisioner) throw new RouterError("invalid_request", "kv_events: this router cannot subscribe to ZMQ event streams", "kv_events");
    // With kv_events the worker's index comes from its event stream (no /kv/query restore).
    const res = d.provisioner ? await d.provisioner.register({ ...input, kvEvents }) : await d.membership.register(input);
    const w = res.worker;
    const warnings = b.tokenizer !== undefined ? [...res.warnings, ...(await registerTokenizer(d, w.id, b.tokenizer))] : res.warnings;
    return c.json(
      { id: w.id.toString(), url: w.url, dp_ranks: w.dpRanks, healthy: w.healthy, created: res.created, warnings },
      res.created ? 201 : 200,
    );
  });

  app.delete("/v1/workers/:id", (c) => {
    const w = d.membership.remove(parseId(c.req.param("id")));
    return c.json({ id: w.id.toString(), removed: true });
  });

  return app;
}
