/**
 * The model and tokenizer part of a worker, for GET /v1/workers and POST /v1/workers:
 * what it serves (`models`, adapters with their `parent`; `null` while its engine never
 * listed them: it may then get any model), how text for it is routed (`text_routing`:
 * "exact" with a tokenizer for its model, else "approximate"), the tokenizer and the
 * registration probe's verdict (`tokenizer_mismatch: true` when the engine tokenizes the probe
 * differently). It routes nothing.
 */
import { RouterError } from "../../core/errors.ts";
import type { WorkerId } from "../../core/ids.ts";
import type { FleetView } from "../deps.ts";

/** The base model a worker serves, as far as the router knows (first listed, else registration / engine info). */
export function baseModelOf(d: FleetView, id: WorkerId): string | undefined {
  const listed = d.models?.of(id)?.find((m) => m.parent === null)?.id;
  return listed ?? d.registry.get(id)?.model;
}

export function modelFields(d: FleetView, id: WorkerId): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (d.models !== undefined) {
    const models = d.models.of(id);
    out.models = models === undefined ? null : models.map((m) => ({ id: m.id, parent: m.parent }));
  }
  const tok = d.tokenizers?.forModel(baseModelOf(d, id));
  out.text_routing = tok !== undefined ? "exact" : "approximate";
  out.tokenizer = tok?.source ?? null;
  const check = d.tokenizers?.checkOf(id);
  if (check !== undefined) {
    out.tokenizer_check = check.status;
    if (check.status !== "match") out.tokenizer_check_detail = check.detail;
    if (check.status === "mismatch") out.tokenizer_mismatch = true;
  }
  return out;
}

/**
 * `"tokenizer": PATH` at registration: load it (once per path) for every base model the
 * worker serves that has none yet (or as the default when its models are unknown and there
 * is none); a model keeps its first tokenizer (a different path is a warning). Then probe the engine.
 */
export async function registerTokenizer(
  d: FleetView,
  id: WorkerId,
  path: string,
): Promise<string[]> {
  const toks = d.tokenizers;
  if (toks === undefined)
    throw new RouterError(
      "invalid_request",
      "tokenizer: this router cannot load tokenizers",
      "tokenizer",
    );
  const bases = (d.models?.of(id) ?? []).filter((m) => m.parent === null).map((m) => m.id);
  const fallback = d.registry.get(id)?.model;
  const models: (string | undefined)[] = bases.length > 0 ? bases : [fallback];
  const warnings: string[] = [];
  try {
    for (const m of models) {
      // A model has one tokenizer for the whole fleet: the first one given stays.
      const own = toks.ownOf(m);
      if (own === undefined) await toks.add(m, path);
      else if (own.source !== path)
        warnings.push(
          `tokenizer: ${m ?? "the default"} is already tokenized with ${own.source}; ${path} is not used`,
        );
    }
  } catch (e) {
    throw new RouterError(
      "invalid_request",
      `tokenizer: cannot load ${JSON.stringify(path)}: ${(e as Error).message}`,
      "tokenizer",
    );
  }
  const rec = d.registry.get(id);
  if (rec !== undefined) {
    const check = await toks.check(id, rec.url, models[0]);
    if (check?.status === "mismatch") warnings.push(`tokenizer_mismatch: ${check.detail}`);
  }
  return warnings;
}
