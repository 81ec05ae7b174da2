/**
 * Admin routes besides workers: POST /v1/kv/events (engine event batches into the
 * recovery core), POST /v1/route and its prefill-done / free (routing for frontends that
 * forward themselves), GET /debug/kv/dump (the index as events that rebuild it),
 * GET /debug/sessions/:id (a session binding, read without sliding its TTL).
 */
import { Hono } from "hono";
import * as v from "valibot";
import { RouterError } from "../../core/errors.ts";
import { describeIssues, routerEventToWire } from "../../core/events.ts";
import { stringifyBigint } from "../../core/json.ts";
import {
  EVENT_SOURCE_HEADER,
  eventSourceOf,
  parseEventBatch,
} from "../../fleet/events/http-batch.ts";
import { checkBatchBounds } from "../../fleet/events/batch-bounds.ts";
import { SlicedIngest } from "../../fleet/events/sliced-ingest.ts";
import { parseJsonExact, readBodyLimited } from "../body.ts";
import type { AdminDeps, FleetView, RequestLimits } from "../deps.ts";
import type { RouterApi } from "../../router/index.ts";
import { routeTarget } from "../prompt-route/route-target.ts";

const RouteBody = v.object({
  tokens: v.optional(
    v.pipe(
      v.array(
        v.pipe(
          v.number("must be a number"),
          v.integer("must be an integer"),
          v.minValue(0, "must be >= 0"),
          v.maxValue(0xffffffff, "must fit in u32"),
        ),
        "must be an array of token ids",
      ),
      v.minLength(1, "must not be empty"),
    ),
  ),
  // The same prompt fields as the OpenAI routes: tokenized like them.
  prompt: v.optional(v.unknown()),
  messages: v.optional(v.unknown()),
  model: v.optional(
    v.nullable(v.pipe(v.string("must be a string"), v.nonEmpty("must not be empty"))),
  ),
  lora: v.optional(v.nullable(v.string("must be a string"))),
  session_id: v.optional(
    v.nullable(v.pipe(v.string("must be a string"), v.nonEmpty("must not be empty"))),
  ),
  // Bounded and printable: the id keys load shared with other routers (never NUL-led, see
  // scheduler/load-tracker.ts remoteRequestKey) and is echoed in logs.
  request_id: v.optional(
    v.nullable(
      v.pipe(
        v.string("must be a string"),
        v.nonEmpty("must not be empty"),
        v.maxLength(256, "must be at most 256 characters"),
        v.regex(/^[^\u0000-\u001f\u007f]*$/, "must not contain control characters"),
      ),
    ),
  ),
});

/**
 * Event batches come from engines, not clients, and one Stored event of a long prompt is
 * large (a 128k-token prompt is ~8k blocks, ~0.6 MB of JSON). A batch refused for size is a
 * gap the router only repairs at the engine's next event, so events get at least this limit
 * whatever --max-body-bytes says about requests.
 */
export const EVENT_BATCH_MIN_LIMIT_BYTES = 64 * 1024 * 1024;

/** What the admin routes besides workers use. */
export interface AdminRouteDeps {
  readonly limits: RequestLimits;
  /** POST /v1/route reads prompts and models as the OpenAI routes do. */
  readonly fleet: FleetView;
  readonly router: RouterApi;
  readonly admin: Pick<AdminDeps, "peekSession">;
}

function jsonResponse(text: string, status = 200): Response {
  return new Response(text, { status, headers: { "content-type": "application/json" } });
}

export function adminRoutes(d: AdminRouteDeps): Hono {
  const app = new Hono();
  // Batches in arrival order, large ones applied in slices so requests are served meanwhile.
  const sliced = new SlicedIngest();

  app.post("/v1/kv/events", async (c) => {
    const limit = Math.max(d.limits.maxBodyBytes, EVENT_BATCH_MIN_LIMIT_BYTES);
    const events = parseEventBatch(parseJsonExact(await readBodyLimited(c.req.raw, limit)));
    const source = eventSourceOf(c.req.header(EVENT_SOURCE_HEADER));
    checkBatchBounds(events, source);
    const { accepted, dropped } = await sliced.ingest(events, (slice) =>
      d.router.ingest(slice, source),
    );
    return c.json({ accepted, dropped });
  });

  app.post("/v1/route", async (c) => {
    const raw = parseJsonExact(await readBodyLimited(c.req.raw, d.limits.maxBodyBytes));
    const r = v.safeParse(RouteBody, raw);
    if (!r.success)
      throw new RouterError(
        "invalid_request",
        `invalid route request: ${describeIssues(r.issues.slice(0, 5))}`,
      );
    const b = r.output;
    const target = await routeTarget(
      d.fleet,
      raw as Record<string, unknown>,
      b,
      d.limits.maxPromptChars,
    );
    const requestId = b.request_id ?? d.router.routing.nextRequestId();
    const decision = await d.router.routing.route({
      tokens: target.tokens,
      approximate: target.approximate,
      requestId,
      loraName: target.loraName,
      allowedWorkerIds: target.allowedWorkerIds,
      sessionId: b.session_id ?? undefined,
    });
    d.router.leases.add(decision.lease);
    return c.json({
      request_id: requestId,
      worker_id: decision.worker.workerId.toString(),
      dp_rank: decision.worker.dpRank,
      overlap_blocks: decision.overlapBlocks,
      prompt_tokens: target.tokens.length,
    });
  });

  app.post("/v1/route/:request_id/prefill-done", (c) =>
    c.json({ success: d.router.leases.prefillDone(c.req.param("request_id")) }),
  );
  app.post("/v1/route/:request_id/free", (c) =>
    c.json({ success: d.router.leases.free(c.req.param("request_id")) }),
  );

  app.get("/debug/kv/dump", () =>
    jsonResponse(stringifyBigint({ events: d.router.index.dump().map(routerEventToWire) })),
  );

  // A session's binding as the store holds it, without sliding its TTL (peek).
  app.get("/debug/sessions/:id", async (c) => {
    const id = c.req.param("id");
    const peek = d.admin.peekSession;
    const b = peek ? await peek(id) : undefined;
    if (!b) throw new RouterError("not_found", `session ${id} is not bound`);
    return c.json({
      session_id: id,
      worker_id: b.worker.workerId.toString(),
      dp_rank: b.worker.dpRank,
      kind: b.kind,
      ttl_ms: b.ttlMs,
      expires_at_ms: b.expiresAt,
    });
  });

  return app;
}
