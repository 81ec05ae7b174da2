/**
 * `--workers-file`: the worker list as a file (JSON or YAML), the way a Kubernetes
 * ConfigMap mounts it. This part is pure: text → worker specs (each entry a URL string or a
 * POST /v1/workers body, `kv_events` included), and the difference between the set applied
 * and the set wanted. Reading, watching and YAML parsing live in workers-file-watch.ts.
 *
 * Accepted shapes: a list of entries, or `{"workers": [entries]}`.
 */
import { RouterError } from "../core/errors.ts";
import type { WorkerId } from "../core/ids.ts";
import { normalizeWorkerUrl, workerIdFromUrl } from "../core/worker-id.ts";
import { parseWorkerSpec, type WorkerSpec } from "./worker-spec.ts";
import { describePosition, locateYamlError } from "../config/yaml-position.ts";

/** One wanted worker: its spec, the id it will have, and a fingerprint to see edits. */
export interface WantedWorker {
  readonly id: WorkerId;
  readonly spec: WorkerSpec;
  readonly fingerprint: string;
}

export type YamlParse = (text: string) => unknown;

/** YAML is chosen by extension (.yaml / .yml); anything else is read as JSON. */
export function isYamlPath(path: string): boolean {
  return /\.ya?ml$/i.test(path);
}

/** Parse the file's text; throws RouterError naming the entry and field that is wrong. */
export function parseWorkersFile(text: string, path: string, parseYaml: YamlParse): WantedWorker[] {
  let doc: unknown;
  try {
    doc = isYamlPath(path) ? parseYaml(text) : JSON.parse(text);
  } catch (e) {
    const where = isYamlPath(path) ? describePosition(locateYamlError(text, parseYaml)) : "";
    throw new RouterError(
      "invalid_request",
      `${path}: not valid ${isYamlPath(path) ? "YAML" : "JSON"}${where}: ${(e as Error).message}`,
    );
  }
  const list = Array.isArray(doc)
    ? doc
    : isObject(doc) && Array.isArray(doc.workers)
      ? doc.workers
      : undefined;
  if (list === undefined) {
    throw new RouterError(
      "invalid_request",
      `${path}: expected a list of workers, or {"workers": [...]}`,
    );
  }
  const out: WantedWorker[] = [];
  const seen = new Map<WorkerId, number>();
  list.forEach((entry: unknown, i: number) => {
    const raw = typeof entry === "string" ? { url: entry } : entry;
    const spec = parseWorkerSpec(raw, `${path}: workers[${i}]`);
    let id: WorkerId;
    try {
      const url = normalizeWorkerUrl(spec.url);
      if (!/^https?:$/.test(new URL(url).protocol)) throw new Error("scheme");
      id = spec.id ?? workerIdFromUrl(url);
    } catch {
      throw new RouterError(
        "invalid_request",
        `${path}: workers[${i}].url: must be an http:// or https:// URL`,
        "url",
      );
    }
    const dup = seen.get(id);
    if (dup !== undefined)
      throw new RouterError(
        "invalid_request",
        `${path}: workers[${i}] is the same worker as workers[${dup}] (id ${id})`,
      );
    seen.set(id, i);
    out.push({
      id,
      spec,
      fingerprint: JSON.stringify(spec, (_k, v) => (typeof v === "bigint" ? v.toString() : v)),
    });
  });
  return out;
}

export interface WorkersDiff {
  /** Registered from the file before, gone from it now (or changed: removed, then added again). */
  readonly remove: readonly WorkerId[];
  readonly add: readonly WantedWorker[];
}

/** What to do to go from the workers the file added (`applied`: id → fingerprint) to `wanted`. */
export function diffWorkers(
  applied: ReadonlyMap<WorkerId, string>,
  wanted: readonly WantedWorker[],
): WorkersDiff {
  const want = new Map(wanted.map((w) => [w.id, w]));
  const remove: WorkerId[] = [];
  for (const [id, fp] of applied) {
    const w = want.get(id);
    if (w === undefined || w.fingerprint !== fp) remove.push(id);
  }
  const add = wanted.filter((w) => applied.get(w.id) !== w.fingerprint);
  return { remove, add };
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}
