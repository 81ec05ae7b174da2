/**
 * Which models each worker serves: its base model(s) and LoRA adapters (with their `parent`),
 * as its engine lists them at GET /v1/models (read at registration and on every health
 * check) or as the registration said (`"models"`). A request's `model` then selects only the
 * workers serving it. Workers whose list is not known (the engine never answered
 * /v1/models) are "unknown": they may serve anything. It does no I/O itself except
 * `fetchServedModels`, and it does not route.
 */
import * as v from "valibot";
import type { WorkerId } from "../core/ids.ts";

export interface ServedModel {
  readonly id: string;
  /** The base model of a LoRA adapter; null for a base model. */
  readonly parent: string | null;
  /**
   * The engine's other fields for it (vLLM: owned_by, root, max_model_len, permission), kept
   * for GET /v1/models; absent when it said nothing else. `object` and `created` are not kept:
   * the one is always "model", the other only says when the engine answered.
   */
  readonly fields?: Readonly<Record<string, unknown>>;
}

/** OpenAI's model list as vLLM answers it (vllm/entrypoints/openai/serving_models.py: ModelCard id, root, parent, ...). */
const ModelListSchema = v.object({
  data: v.array(
    v.looseObject({
      id: v.pipe(v.string(), v.nonEmpty()),
      parent: v.optional(v.nullable(v.string()), null),
    }),
  ),
});

/** The served models of an OpenAI-shaped `GET /v1/models` body; undefined when it is not one. */
export function parseModelList(body: unknown): ServedModel[] | undefined {
  const r = v.safeParse(ModelListSchema, body);
  if (!r.success) return undefined;
  return r.output.data.map((m) => {
    const { id, parent, object: _object, created: _created, ...fields } = m;
    const model = { id, parent: parent === "" ? null : parent };
    return Object.keys(fields).length > 0 ? { ...model, fields } : model;
  });
}

/** GET {url}/v1/models (abandoned when `signal` fires); throws with a clear message on failure. */
export async function fetchServedModels(
  url: string,
  signal: AbortSignal,
  doFetch: (url: string, init: RequestInit) => Promise<Response>,
): Promise<ServedModel[]> {
  const res = await doFetch(`${url}/v1/models`, { signal });
  const text = await res.text();
  if (!res.ok) throw new Error(`GET ${url}/v1/models answered HTTP ${res.status}`);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`GET ${url}/v1/models: not JSON`);
  }
  const models = parseModelList(body);
  if (models === undefined) throw new Error(`GET ${url}/v1/models: not an OpenAI model list`);
  return models;
}

const EMPTY: ReadonlySet<WorkerId> = new Set();

export class ModelDirectory {
  readonly #byWorker = new Map<WorkerId, readonly ServedModel[]>();
  /** name -> workers listing it; rebuilt lazily after a change. */
  #servedBy: Map<string, Set<WorkerId>> | undefined;
  #parents: Map<string, string | null> | undefined;

  /**
   * The models a worker serves now; returns true when its list (names, parents) changed.
   * Their other fields are kept either way without counting as a change: vLLM makes up a
   * new permission id on every answer.
   */
  set(worker: WorkerId, models: readonly ServedModel[]): boolean {
    const old = this.#byWorker.get(worker);
    this.#byWorker.set(worker, [...models]);
    if (old !== undefined && sameList(old, models)) return false;
    this.#invalidate();
    return true;
  }

  remove(worker: WorkerId): void {
    if (this.#byWorker.delete(worker)) this.#invalidate();
  }

  /** Its list, or undefined when the worker never told us. */
  of(worker: WorkerId): readonly ServedModel[] | undefined {
    return this.#byWorker.get(worker);
  }

  /** Workers that list `name` (as a base model or as an adapter). */
  servedBy(name: string): ReadonlySet<WorkerId> {
    return this.#index().servedBy.get(name) ?? EMPTY;
  }

  /** Some worker lists `name` as a base model. */
  isBase(name: string): boolean {
    return this.#index().parents.get(name) === null;
  }

  /** The base model of an adapter some worker lists; undefined for base models and unknown names. */
  parentOf(name: string): string | undefined {
    return this.#index().parents.get(name) ?? undefined;
  }

  /** Every model of the given workers, each name once (first listing wins). */
  union(workers: Iterable<WorkerId>): ServedModel[] {
    const out = new Map<string, ServedModel>();
    for (const w of workers)
      for (const m of this.#byWorker.get(w) ?? []) if (!out.has(m.id)) out.set(m.id, m);
    return [...out.values()];
  }

  #index(): { servedBy: Map<string, Set<WorkerId>>; parents: Map<string, string | null> } {
    if (this.#servedBy === undefined || this.#parents === undefined) {
      const servedBy = new Map<string, Set<WorkerId>>();
      const parents = new Map<string, string | null>();
      for (const [w, models] of this.#byWorker) {
        for (const m of models) {
          let s = servedBy.get(m.id);
          if (s === undefined) servedBy.set(m.id, (s = new Set()));
          s.add(w);
          // A name that is a base model anywhere counts as a base model.
          if (m.parent === null || !parents.has(m.id)) parents.set(m.id, m.parent);
        }
      }
      this.#servedBy = servedBy;
      this.#parents = parents;
    }
    return { servedBy: this.#servedBy, parents: this.#parents };
  }

  #invalidate(): void {
    this.#servedBy = undefined;
    this.#parents = undefined;
  }
}

function sameList(a: readonly ServedModel[], b: readonly ServedModel[]): boolean {
  return a.length === b.length && a.every((m, i) => m.id === b[i]!.id && m.parent === b[i]!.parent);
}
