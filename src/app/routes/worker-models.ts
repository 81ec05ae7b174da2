/**
 * The model part of a worker in GET /v1/workers: what it serves (`models`, adapters with
 * their `parent`; `null` while its engine never listed them, then it may get any model).
 */
import type { WorkerId } from "../../core/ids.ts";
import type { AppDeps } from "../deps.ts";

export function modelFields(d: AppDeps, id: WorkerId): Record<string, unknown> {
  if (d.models === undefined) return {};
  const models = d.models.of(id);
  return { models: models === undefined ? null : models.map((m) => ({ id: m.id, parent: m.parent })) };
}
