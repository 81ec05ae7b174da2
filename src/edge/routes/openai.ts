/**
 * The OpenAI-compatible surface: POST /v1/completions and /v1/chat/completions (routed
 * and proxied; bodies forwarded byte for byte), GET /v1/models (the union of the healthy
 * workers' models).
 */
import { Hono } from "hono";
import { RouterError } from "../../core/errors.ts";
import { parseJsonObject, readBodyLimited } from "../body.ts";
import type { AppDeps } from "../deps.ts";
import { SESSION_HEADERS } from "../proxy/headers.ts";
import type { ForwardInput } from "../proxy/forward.ts";
import { readPrompt } from "../routing/prompt-routing.ts";
import { sessionControlOf } from "../../router/sessions/session-control.ts";
import { createDispatch, forwardDepsOf } from "./dispatch.ts";
import { createDisaggDispatch } from "../disagg/disagg-dispatch.ts";

const MODELS_TIMEOUT_MS = 2_000;

/** The session header's id; longer than `maxLength`: 400 naming the header (issue 12: ids are held as keys). */
function sessionIdOf(headers: Headers, maxLength: number | undefined): string | undefined {
  for (const name of SESSION_HEADERS) {
    const v = headers.get(name);
    if (v === null || v.trim() === "") continue;
    const id = v.trim();
    if (maxLength !== undefined && id.length > maxLength) {
      throw new RouterError("invalid_request", `${name}: session id is ${id.length} characters; the limit is ${maxLength} (--max-session-id-length)`, name);
    }
    return id;
  }
  return undefined;
}

/** A handler of a raw Request; throws RouterError for the app's error mapping. */
export type RequestHandler = (req: Request) => Promise<Response>;

/** The proxied endpoints as plain Request handlers (Hono routes them; Bun.serve may too). */
export function completionHandlers(d: AppDeps): { completions: RequestHandler; chat: RequestHandler } {
  const fd = forwardDepsOf(d);
  const dispatch = createDispatch(d, fd);
  const disagg = d.disagg !== undefined ? createDisaggDispatch(d, fd, dispatch, d.disagg) : undefined;

  const handle = (path: string, kind: "completions" | "chat") => async (req: Request) => {
    const body = await readBodyLimited(req, d.maxBodyBytes);
    const json = parseJsonObject(body);
    if (json.model !== undefined && typeof json.model !== "string") {
      throw new RouterError("invalid_request", "model: must be a string", "model");
    }
    if (json.stream !== undefined && typeof json.stream !== "boolean") {
      throw new RouterError("invalid_request", "stream: must be a boolean", "stream");
    }
    // vLLM's `priority` (lower is served first): orders the admission queue; forwarded as is.
    if (json.priority !== undefined && (typeof json.priority !== "number" || !Number.isSafeInteger(json.priority))) {
      throw new RouterError("invalid_request", "priority: must be an integer (lower is served first)", "priority");
    }
    const obs = d.observe?.of(req);
    const prompt = await (obs !== undefined ? obs.tokenize(() => readPrompt(d, json, kind)) : readPrompt(d, json, kind));
    const sessionControl = sessionControlOf(json);
    const input: ForwardInput = {
      request: req,
      path,
      body,
      tokens: prompt.tokens,
      approximate: prompt.approximate,
      // nvext.session_control takes the place of the header session.
      sessionId: sessionControl ? undefined : sessionIdOf(req.headers, d.maxSessionIdLength),
      sessionControl,
      priority: json.priority as number | undefined,
      stream: json.stream === true,
    };
    obs?.prompt({ model: json.model, tokens: prompt.tokens.length, sessionId: sessionControl?.sessionId ?? input.sessionId });
    return disagg !== undefined ? disagg(input, json, json.model) : dispatch(input, json.model);
  };

  return { completions: handle("/v1/completions", "completions"), chat: handle("/v1/chat/completions", "chat") };
}

export function openAiRoutes(d: AppDeps): Hono {
  const app = new Hono();
  const h = completionHandlers(d);
  app.post("/v1/completions", (c) => h.completions(c.req.raw));
  app.post("/v1/chat/completions", (c) => h.chat(c.req.raw));

  app.get("/v1/models", async (c) => {
    const healthy = d.registry.list().filter((w) => w.healthy);
    if (healthy.length === 0) throw new RouterError("no_endpoints", "no healthy worker to ask for its models");
    // Every healthy worker's list is known (read at registration and each health check): no fan-out.
    const dir = d.models;
    if (dir !== undefined && healthy.every((w) => dir.of(w.id) !== undefined)) {
      const created = Math.floor(Date.now() / 1000);
      const data = dir.union(healthy.map((w) => w.id)).map((m) => ({ id: m.id, object: "model", created, owned_by: "switchyard", root: m.id, parent: m.parent }));
      return c.json({ object: "list", data });
    }
    const answers = await Promise.all(
      healthy.map((w) =>
        d
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
