/**
 * One Pod → what the router should do with it: a worker (its registration, built from the
 * pod's address, its named container port and its `switchyard.dev/*` annotations, validated
 * by the same schema as POST /v1/workers and the workers file), and whether it may take new
 * requests (ready), must not (not ready, or terminating: deletionTimestamp set), or is not a
 * worker yet (no address) or cannot be one (a bad annotation: the field is named). Pure: no
 * I/O, no clock; the fleet (pod-fleet.ts) acts on the answer.
 */
import * as v from "valibot";
import type { WorkerId } from "../../core/ids.ts";
import { normalizeWorkerUrl, workerIdFromUrl } from "../../core/worker-id.ts";
import { WorkerSpecSchema, workerSpecOf, type WorkerSpec } from "../worker-spec.ts";

export const ANNOTATION_PREFIX = "switchyard.dev/";

/** The annotations read, by the short name used as the metric's `field` label. */
export const ANNOTATIONS = {
  "kv-events": "switchyard.dev/kv-events",
  replay: "switchyard.dev/replay",
  role: "switchyard.dev/role",
  models: "switchyard.dev/models",
  tokenizer: "switchyard.dev/tokenizer",
  "lora-slots": "switchyard.dev/lora-slots",
} as const;

const KNOWN: ReadonlySet<string> = new Set(Object.values(ANNOTATIONS));
const POD_IP = "$(POD_IP)";

/** Whether the pod may take new requests; a terminating pod may still finish the ones it has. */
export type PodState = "ready" | "not-ready" | "terminating";

export type PodWorker =
  | {
      readonly kind: "worker";
      readonly key: string;
      readonly state: PodState;
      readonly id: WorkerId;
      readonly spec: WorkerSpec;
      /** `switchyard.dev/tokenizer`: loaded after registration, as POST /v1/workers' `tokenizer`. */
      readonly tokenizer?: string;
      /** Changes when the registration would (address, port, annotations), not with readiness. */
      readonly fingerprint: string;
    }
  | {
      readonly kind: "rejected";
      readonly key: string;
      /** Bounded: an annotation's short name, `port`, `unknown-annotation` or `object`. */
      readonly field: string;
      readonly message: string;
      readonly fingerprint: string;
    }
  /** No address yet (scheduled, not started), or a finished pod: nothing to register. */
  | { readonly kind: "pending"; readonly key: string; readonly why: string };

interface PodShape {
  metadata?: {
    name?: unknown;
    namespace?: unknown;
    annotations?: unknown;
    deletionTimestamp?: unknown;
  };
  spec?: { containers?: unknown };
  status?: { podIP?: unknown; phase?: unknown; conditions?: unknown };
}

/** `namespace/name` of a pod object, or undefined when it has none. */
export function podKey(pod: unknown): string | undefined {
  const m = (pod as PodShape | undefined)?.metadata;
  return typeof m?.name === "string" && typeof m.namespace === "string"
    ? `${m.namespace}/${m.name}`
    : undefined;
}

/** Read a pod; `portName` is --discover-port-name. */
export function podWorker(pod: unknown, portName: string): PodWorker {
  const p = pod as PodShape;
  const key = podKey(pod) ?? "?";
  const annotations = stringMap(p.metadata?.annotations);
  // What a rejection was made from: a pod that changes any of it is looked at (and counted) anew.
  const inputs = JSON.stringify([
    p.status?.podIP,
    p.spec?.containers,
    Object.entries(annotations).filter(([k]) => k.startsWith(ANNOTATION_PREFIX)),
  ]);
  const reject = (field: string, message: string): PodWorker => ({
    kind: "rejected",
    key,
    field,
    message,
    fingerprint: `rejected:${field}:${inputs}`,
  });
  if (key === "?")
    return reject("object", "not a pod: metadata.name or metadata.namespace missing");
  const phase = p.status?.phase;
  if (phase === "Succeeded" || phase === "Failed")
    return { kind: "pending", key, why: `phase ${String(phase)}` };
  const ip =
    typeof p.status?.podIP === "string" && p.status.podIP !== "" ? p.status.podIP : undefined;
  if (ip === undefined) return { kind: "pending", key, why: "no pod IP yet" };
  const port = namedPort(p.spec?.containers, portName);
  if (port === undefined)
    return reject(
      "port",
      `no container port named ${JSON.stringify(portName)} (--discover-port-name)`,
    );
  const host = ip.includes(":") ? `[${ip}]` : ip;
  const url = `http://${host}:${port}`;

  for (const name of Object.keys(annotations)) {
    if (name.startsWith(ANNOTATION_PREFIX) && !KNOWN.has(name)) {
      return reject(
        "unknown-annotation",
        `${name}: unknown annotation (known: ${[...KNOWN].join(", ")})`,
      );
    }
  }
  const raw: Record<string, unknown> = { url };
  const kv = annotations[ANNOTATIONS["kv-events"]];
  const replay = annotations[ANNOTATIONS.replay];
  if (kv !== undefined) {
    const ranked = rankedEndpoints(kv, host);
    if (typeof ranked === "string")
      return reject("kv-events", `${ANNOTATIONS["kv-events"]}: ${ranked}`);
    raw.kv_events = { endpoint: ranked.endpoint, dp_ranks: ranked.ranks };
    if (replay !== undefined) {
      const r = rankedEndpoints(replay, host);
      if (typeof r === "string") return reject("replay", `${ANNOTATIONS.replay}: ${r}`);
      if (r.ranks !== ranked.ranks && r.ranks !== 1) {
        return reject(
          "replay",
          `${ANNOTATIONS.replay}: ${r.ranks} ranks, but ${ANNOTATIONS["kv-events"]} has ${ranked.ranks}`,
        );
      }
      (raw.kv_events as Record<string, unknown>).replay_endpoint = r.endpoint;
    }
  } else if (replay !== undefined) {
    return reject(
      "replay",
      `${ANNOTATIONS.replay}: needs ${ANNOTATIONS["kv-events"]} (a replay endpoint refills that stream's gaps)`,
    );
  }
  const role = annotations[ANNOTATIONS.role];
  if (role !== undefined) raw.role = role.trim();
  const models = annotations[ANNOTATIONS.models];
  if (models !== undefined)
    raw.models = models
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== "");
  const slots = annotations[ANNOTATIONS["lora-slots"]];
  // A number when it reads as one; otherwise the text, so the schema's message names it.
  if (slots !== undefined) raw.max_loras = /^\s*-?\d+\s*$/.test(slots) ? Number(slots) : slots;
  const tokenizer = annotations[ANNOTATIONS.tokenizer]?.trim();
  if (tokenizer === "") return reject("tokenizer", `${ANNOTATIONS.tokenizer}: must not be empty`);

  const parsed = v.safeParse(WorkerSpecSchema, raw);
  if (!parsed.success) {
    const field = fieldOf(parsed.issues[0]);
    // The annotation stands for the schema's field; a nested path (kv_events.endpoint) still helps.
    const said = parsed.issues
      .map((i) => ((i.path?.length ?? 0) > 1 ? `${v.getDotPath(i)}: ${i.message}` : i.message))
      .join("; ");
    return reject(field, `${annotationOf(field)}: ${said}`);
  }
  let spec: WorkerSpec;
  try {
    spec = workerSpecOf(parsed.output, `pod ${key}`);
  } catch (e) {
    return reject("kv-events", `${ANNOTATIONS["kv-events"]}: ${(e as Error).message}`);
  }
  const state: PodState = p.metadata?.deletionTimestamp
    ? "terminating"
    : isReady(p.status?.conditions)
      ? "ready"
      : "not-ready";
  const fingerprint = JSON.stringify({ spec, tokenizer: tokenizer ?? null }, (_k, x) =>
    typeof x === "bigint" ? x.toString() : x,
  );
  return {
    kind: "worker",
    key,
    state,
    id: workerIdFromUrl(normalizeWorkerUrl(url)),
    spec,
    ...(tokenizer !== undefined ? { tokenizer } : {}),
    fingerprint,
  };
}

/**
 * `tcp://$(POD_IP):5557` (rank 0 only), or `0=tcp://…:5557,1=tcp://…:5558` (one per DP rank).
 * The event subscriber derives rank r's endpoint from rank 0's (port + r, vLLM's layout), so a
 * per-rank list must follow it; the list is accepted to say how many ranks there are.
 */
export function rankedEndpoints(
  text: string,
  host: string,
): { endpoint: string; ranks: number } | string {
  const items = text
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  if (items.length === 0) return "must not be empty";
  const byRank = new Map<number, string>();
  const ranked = items.map((it) => /^(\d+)\s*=\s*(.+)$/.exec(it));
  if (ranked.every((m) => m === null)) {
    if (items.length > 1) return "give one endpoint (rank 0), or RANK=ENDPOINT for each rank";
    byRank.set(0, items[0]!);
  } else {
    if (ranked.some((m) => m === null))
      return "give RANK=ENDPOINT for every rank, or one endpoint alone";
    for (const m of ranked) {
      const r = Number(m![1]);
      if (byRank.has(r)) return `rank ${r} is given twice`;
      byRank.set(r, m![2]!);
    }
  }
  const ranks = byRank.size;
  for (let r = 0; r < ranks; r++)
    if (!byRank.has(r)) return `ranks must be 0..${ranks - 1}; rank ${r} is missing`;
  const endpoints: string[] = [];
  for (let r = 0; r < ranks; r++) {
    const ep = byRank.get(r)!.split(POD_IP).join(host);
    if (/\$\(/.test(ep))
      return `only ${POD_IP} is substituted (got ${JSON.stringify(byRank.get(r))})`;
    endpoints.push(ep);
  }
  for (let r = 1; r < ranks; r++) {
    const want = derivedEndpoint(endpoints[0]!, r);
    if (want === undefined)
      return `rank 0's endpoint ${JSON.stringify(endpoints[0])} cannot be offset per rank (tcp://host:port or inproc://name)`;
    if (endpoints[r] !== want) {
      return `rank ${r} publishes on ${endpoints[r]}, but rank r must be rank 0's port + r (${want}), as vLLM lays them out`;
    }
  }
  return { endpoint: endpoints[0]!, ranks };
}

/** Rank r's endpoint as the event subscriber derives it from rank 0's. */
function derivedEndpoint(rank0: string, r: number): string | undefined {
  if (rank0.startsWith("inproc://")) return `${rank0}_dp${r}`;
  const m = /^(tcp:\/\/.+):(\d{1,5})$/.exec(rank0);
  return m ? `${m[1]}:${Number(m[2]) + r}` : undefined;
}

function namedPort(containers: unknown, name: string): number | undefined {
  if (!Array.isArray(containers)) return undefined;
  for (const c of containers) {
    const ports = (c as { ports?: unknown })?.ports;
    if (!Array.isArray(ports)) continue;
    for (const p of ports) {
      const x = p as { name?: unknown; containerPort?: unknown };
      if (
        x?.name === name &&
        typeof x.containerPort === "number" &&
        Number.isInteger(x.containerPort)
      )
        return x.containerPort;
    }
  }
  return undefined;
}

function isReady(conditions: unknown): boolean {
  return (
    Array.isArray(conditions) &&
    conditions.some(
      (c) =>
        (c as { type?: unknown })?.type === "Ready" &&
        (c as { status?: unknown }).status === "True",
    )
  );
}

function stringMap(x: unknown): Record<string, string> {
  if (typeof x !== "object" || x === null) return {};
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(x)) if (typeof val === "string") out[k] = val;
  return out;
}

/** The schema's field → the annotation short name that set it. */
function fieldOf(issue: v.BaseIssue<unknown> | undefined): string {
  const path = issue?.path?.map((p) => String(p.key)) ?? [];
  if (path[0] === "kv_events") return path[1] === "replay_endpoint" ? "replay" : "kv-events";
  if (path[0] === "role") return "role";
  if (path[0] === "models") return "models";
  if (path[0] === "max_loras") return "lora-slots";
  return "port";
}

function annotationOf(field: string): string {
  return (ANNOTATIONS as Record<string, string>)[field] ?? field;
}
