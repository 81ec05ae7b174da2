/**
 * A stand-in Kubernetes API server for Pods, written from the API reference ("API Concepts":
 * efficient detection of changes, watch bookmarks, resource versions, 410 Gone), not from what
 * any client sends. A real HTTP server on a free loopback port (HTTPS when given a certificate),
 * serving:
 * - GET /api/v1/namespaces/{ns}/pods and /api/v1/pods: a PodList whose metadata.resourceVersion
 *   is the store's version at the read; `labelSelector` filters (=, ==, !=, exists, !exists, in,
 *   notin; comma = and); items carry no kind/apiVersion, as in a real list.
 * - the same with `watch=1` (or true): newline-delimited `{"type","object"}` events, chunked.
 *   resourceVersion unset or "0": a synthetic ADDED per matching object, then changes;
 *   resourceVersion=N: every change after N from the history, then live changes; N older than
 *   the history kept: 410 Gone (by default as an ERROR event carrying a Status with code 410 and
 *   reason Expired, the way the watch cache answers; `goneAs: "http"` answers HTTP 410 instead);
 *   N newer than the store: an ERROR event with code 504 "Too large resource version".
 *   An object that starts matching the selector is ADDED, one that stops matching is DELETED
 *   (its previous content, with the event's version), as the watch cache does.
 *   `allowWatchBookmarks=true`: a BOOKMARK (only metadata.resourceVersion: the store's version)
 *   every `bookmarkEveryMs` and on `bookmark()`. `timeoutSeconds` ends the watch cleanly.
 * - GET /api/v1/namespaces/{ns}/pods/{name}.
 * - a bearer token when `token` is set (else 401), namespaces limited by `namespaces` (else 403),
 *   each as a Status object.
 * Writes are the test's: every write bumps one global resource version, as etcd's revision does,
 * and is kept in a bounded history (`historyLimit`, or `compact()` drops it all). `kill()` cuts
 * every connection and stops listening; `restart()` listens on the same port with the same store
 * (etcd outlived the API server).
 */
import type { Server } from "bun";

export interface PodInput {
  readonly name: string;
  readonly namespace?: string;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
  /** status.podIP; absent until the pod is scheduled and has an address. */
  readonly ip?: string;
  /** The Ready condition (default true). */
  readonly ready?: boolean;
  /** Container ports of the first container (default one named http on 8000). */
  readonly ports?: readonly { name?: string; containerPort: number }[];
}

/** A Pod as the API serves it (the fields a controller reads). */
export interface Pod {
  kind?: "Pod";
  apiVersion?: "v1";
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    resourceVersion: string;
    creationTimestamp: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    deletionTimestamp?: string;
    deletionGracePeriodSeconds?: number;
  };
  spec: {
    containers: {
      name: string;
      image: string;
      ports?: { name?: string; containerPort: number; protocol: "TCP" }[];
    }[];
  };
  status: {
    phase: string;
    podIP?: string;
    podIPs?: { ip: string }[];
    conditions: { type: string; status: "True" | "False" }[];
  };
}

export interface StandInOptions {
  /** Listen port (default: any free one). */
  readonly port?: number;
  /** Bearer token every request must carry; unset: no authentication. */
  readonly token?: string;
  /** Namespaces the caller may read; unset: all. */
  readonly namespaces?: readonly string[];
  /** Changes kept for watches that resume; older ones answer 410 (default 10000). */
  readonly historyLimit?: number;
  /** How often open watches that allow bookmarks get one (ms; default 60000, 0 = never on a timer). */
  readonly bookmarkEveryMs?: number;
  /** How a too-old resourceVersion is answered (default "event", like the watch cache). */
  readonly goneAs?: "event" | "http";
  /** Serve HTTPS with this certificate and key (PEM). */
  readonly tls?: { readonly cert: string; readonly key: string };
}

interface Change {
  readonly rv: number;
  readonly type: "ADDED" | "MODIFIED" | "DELETED";
  readonly obj: Pod;
  /** The object before the change (for selector transitions); absent for creations. */
  readonly prev?: Pod;
}

interface Watcher {
  readonly namespace: string | undefined;
  readonly selector: Selector;
  readonly bookmarks: boolean;
  send(line: string): void;
  close(): void;
}

/** One request as the server saw it, for tests that check what a client asked. */
export interface SeenRequest {
  readonly path: string;
  readonly query: Record<string, string>;
  readonly authorization: string | null;
  readonly status: number;
}

const enc = new TextEncoder();

export class StandInKubeApiserver {
  readonly #o: StandInOptions;
  readonly #pods = new Map<string, Pod>();
  readonly #history: Change[] = [];
  readonly #watchers = new Set<Watcher>();
  /** Every change at or below this version is gone from the history. */
  #compactedTo = 0;
  #rv = 1000;
  #uid = 0;
  #server: Server<undefined> | undefined;
  #port = 0;
  #bookmarkTimer: ReturnType<typeof setInterval> | undefined;
  readonly requests: SeenRequest[] = [];

  constructor(o: StandInOptions = {}) {
    this.#o = o;
    this.#compactedTo = this.#rv;
  }

  /** Start listening (a free port unless `port` was given). */
  static start(o: StandInOptions = {}): StandInKubeApiserver {
    const s = new StandInKubeApiserver(o);
    s.#listen(o.port ?? 0);
    return s;
  }

  get url(): string {
    return `${this.#o.tls ? "https" : "http"}://127.0.0.1:${this.#port}`;
  }

  get port(): number {
    return this.#port;
  }

  /** The store's current resource version. */
  get resourceVersion(): string {
    return String(this.#rv);
  }

  /** Watches open now. */
  get openWatches(): number {
    return this.#watchers.size;
  }

  get listening(): boolean {
    return this.#server !== undefined;
  }

  // ---- writes (each one bumps the resource version, like an etcd revision) ----

  createPod(p: PodInput): Pod {
    const ns = p.namespace ?? "default";
    const key = `${ns}/${p.name}`;
    if (this.#pods.has(key)) throw new Error(`pod ${key} already exists`);
    const pod: Pod = {
      metadata: {
        name: p.name,
        namespace: ns,
        uid: `00000000-0000-4000-8000-${(++this.#uid).toString(16).padStart(12, "0")}`,
        resourceVersion: "",
        creationTimestamp: "2025-01-01T00:00:00Z",
        ...(p.labels ? { labels: { ...p.labels } } : {}),
        ...(p.annotations ? { annotations: { ...p.annotations } } : {}),
      },
      spec: {
        containers: [
          {
            name: "engine",
            image: "engine:latest",
            ports: (p.ports ?? [{ name: "http", containerPort: 8000 }]).map((x) => ({
              ...x,
              protocol: "TCP" as const,
            })),
          },
        ],
      },
      status: {
        phase: p.ip ? "Running" : "Pending",
        ...(p.ip ? { podIP: p.ip, podIPs: [{ ip: p.ip }] } : {}),
        conditions: [{ type: "Ready", status: (p.ready ?? true) ? "True" : "False" }],
      },
    };
    this.#write("ADDED", key, pod, undefined);
    return structuredClone(pod);
  }

  /** Change a pod (labels, annotations, status …) through `edit`; one MODIFIED change. */
  updatePod(name: string, edit: (p: Pod) => void, namespace = "default"): Pod {
    const key = `${namespace}/${name}`;
    const prev = this.#pods.get(key);
    if (!prev) throw new Error(`pod ${key} does not exist`);
    const next = structuredClone(prev);
    edit(next);
    this.#write("MODIFIED", key, next, prev);
    return structuredClone(next);
  }

  /** The kubelet's readiness probe result. */
  setReady(name: string, ready: boolean, namespace = "default"): Pod {
    return this.updatePod(
      name,
      (p) => {
        p.status.conditions = [{ type: "Ready", status: ready ? "True" : "False" }];
      },
      namespace,
    );
  }

  /** A graceful delete began: deletionTimestamp set, the object stays until `removePod`. */
  terminatePod(name: string, namespace = "default", graceSeconds = 30): Pod {
    return this.updatePod(
      name,
      (p) => {
        p.metadata.deletionTimestamp = "2025-01-01T00:00:30Z";
        p.metadata.deletionGracePeriodSeconds = graceSeconds;
      },
      namespace,
    );
  }

  /** The object is gone (grace period over): DELETED with its last state. */
  removePod(name: string, namespace = "default"): void {
    const key = `${namespace}/${name}`;
    const prev = this.#pods.get(key);
    if (!prev) throw new Error(`pod ${key} does not exist`);
    this.#write("DELETED", key, structuredClone(prev), prev);
  }

  getPod(name: string, namespace = "default"): Pod | undefined {
    const p = this.#pods.get(`${namespace}/${name}`);
    return p && structuredClone(p);
  }

  /** Drop the whole history: any watch resuming from an older version gets 410. */
  compact(): void {
    this.#history.length = 0;
    this.#compactedTo = this.#rv;
  }

  /** Send a bookmark now to every open watch that allows them. */
  bookmark(): void {
    for (const w of this.#watchers) if (w.bookmarks) w.send(this.#bookmarkLine());
  }

  /** End every open watch cleanly (as a watch timeout does); the server keeps listening. */
  closeWatches(): void {
    for (const w of [...this.#watchers]) w.close();
  }

  /** Cut every connection and stop listening, as a crashed API server does. */
  kill(): void {
    clearInterval(this.#bookmarkTimer);
    this.#bookmarkTimer = undefined;
    for (const w of [...this.#watchers]) w.close();
    this.#server?.stop(true);
    this.#server = undefined;
  }

  /** Listen again on the same port with the same store. */
  restart(): void {
    if (this.#server) return;
    this.#listen(this.#port);
  }

  stop(): void {
    this.kill();
  }

  #listen(port: number): void {
    this.#server = Bun.serve({
      hostname: "127.0.0.1",
      port,
      idleTimeout: 0,
      ...(this.#o.tls ? { tls: { cert: this.#o.tls.cert, key: this.#o.tls.key } } : {}),
      fetch: (req) => this.#handle(req),
    });
    this.#port = this.#server.port!;
    const every = this.#o.bookmarkEveryMs ?? 60_000;
    if (every > 0) this.#bookmarkTimer = setInterval(() => this.bookmark(), every);
  }

  #write(type: Change["type"], key: string, obj: Pod, prev: Pod | undefined): void {
    const rv = ++this.#rv;
    obj.metadata.resourceVersion = String(rv);
    if (type === "DELETED") this.#pods.delete(key);
    else this.#pods.set(key, obj);
    const change: Change = {
      rv,
      type,
      obj: structuredClone(obj),
      prev: prev && structuredClone(prev),
    };
    this.#history.push(change);
    const limit = this.#o.historyLimit ?? 10_000;
    while (this.#history.length > limit) this.#compactedTo = this.#history.shift()!.rv;
    for (const w of this.#watchers) {
      const line = eventLine(change, w);
      if (line !== undefined) w.send(line);
    }
  }

  #bookmarkLine(): string {
    return `${JSON.stringify({ type: "BOOKMARK", object: { kind: "Pod", apiVersion: "v1", metadata: { resourceVersion: String(this.#rv) } } })}\n`;
  }

  #handle(req: Request): Response {
    const u = new URL(req.url);
    const query = Object.fromEntries(u.searchParams);
    const seen = (status: number) =>
      this.requests.push({
        path: u.pathname,
        query,
        authorization: req.headers.get("authorization"),
        status,
      });
    if (req.method !== "GET")
      return this.#answer(
        seen,
        status(
          405,
          "MethodNotAllowed",
          `the server does not allow this method on the requested resource`,
        ),
      );
    if (
      this.#o.token !== undefined &&
      req.headers.get("authorization") !== `Bearer ${this.#o.token}`
    ) {
      return this.#answer(seen, status(401, "Unauthorized", "Unauthorized"));
    }
    const m = /^\/api\/v1\/(?:namespaces\/([^/]+)\/)?pods(?:\/([^/]+))?$/.exec(u.pathname);
    if (!m)
      return this.#answer(
        seen,
        status(404, "NotFound", "the server could not find the requested resource"),
      );
    const namespace = m[1] === undefined ? undefined : decodeURIComponent(m[1]);
    const name = m[2] === undefined ? undefined : decodeURIComponent(m[2]);
    const watching = query.watch === "1" || query.watch === "true";
    const verb = name !== undefined ? "get" : watching ? "watch" : "list";
    const allowed = this.#o.namespaces;
    if (allowed !== undefined && (namespace === undefined || !allowed.includes(namespace))) {
      const where =
        namespace === undefined ? "at the cluster scope" : `in the namespace "${namespace}"`;
      return this.#answer(
        seen,
        status(
          403,
          "Forbidden",
          `pods is forbidden: User "system:serviceaccount:test:switchyard" cannot ${verb} resource "pods" in API group "" ${where}`,
        ),
      );
    }
    if (name !== undefined) {
      const p = this.#pods.get(`${namespace}/${name}`);
      return this.#answer(
        seen,
        p ? Response.json(withKind(p)) : status(404, "NotFound", `pods "${name}" not found`),
      );
    }
    let selector: Selector;
    try {
      selector = parseSelector(query.labelSelector ?? "");
    } catch (e) {
      return this.#answer(
        seen,
        status(400, "BadRequest", `unable to parse requirement: ${(e as Error).message}`),
      );
    }
    if (!watching) {
      const items = [...this.#pods.values()].filter(
        (p) => inScope(p, namespace) && selector(p.metadata.labels ?? {}),
      );
      seen(200);
      return Response.json({
        kind: "PodList",
        apiVersion: "v1",
        metadata: { resourceVersion: String(this.#rv) },
        items,
      });
    }
    return this.#watch(namespace, selector, query, seen);
  }

  #answer(seen: (status: number) => void, res: Response): Response {
    seen(res.status);
    return res;
  }

  #watch(
    namespace: string | undefined,
    selector: Selector,
    query: Record<string, string>,
    seen: (s: number) => void,
  ): Response {
    const rvParam = query.resourceVersion ?? "";
    const from = rvParam === "" || rvParam === "0" ? undefined : Number(rvParam);
    if (from !== undefined && !Number.isInteger(from)) {
      return this.#answer(
        seen,
        status(400, "BadRequest", `invalid resource version: ${JSON.stringify(rvParam)}`),
      );
    }
    const gone = from !== undefined && from < this.#compactedTo;
    if (gone && this.#o.goneAs === "http") {
      return this.#answer(
        seen,
        status(410, "Gone", `too old resource version: ${from} (${this.#compactedTo})`),
      );
    }
    seen(200);
    let ctl!: ReadableStreamDefaultController<Uint8Array>;
    let closed = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const watcher: Watcher = {
      namespace,
      selector,
      bookmarks: query.allowWatchBookmarks === "true" || query.allowWatchBookmarks === "1",
      send: (line) => {
        if (closed) return;
        try {
          ctl.enqueue(enc.encode(line));
        } catch {
          watcher.close();
        }
      },
      close: () => {
        if (closed) return;
        closed = true;
        clearTimeout(timer);
        this.#watchers.delete(watcher);
        try {
          ctl.close();
        } catch {
          // already closed by the client going away
        }
      },
    };
    const body = new ReadableStream<Uint8Array>({
      start: (c) => {
        ctl = c;
        if (gone) {
          watcher.send(
            errorLine(410, "Expired", `too old resource version: ${from} (${this.#compactedTo})`),
          );
          watcher.close();
          return;
        }
        if (from !== undefined && from > this.#rv) {
          watcher.send(
            errorLine(504, "Timeout", `Too large resource version: ${from}, current: ${this.#rv}`),
          );
          watcher.close();
          return;
        }
        if (from === undefined) {
          for (const p of this.#pods.values()) {
            if (inScope(p, namespace) && selector(p.metadata.labels ?? {}))
              watcher.send(`${JSON.stringify({ type: "ADDED", object: withKind(p) })}\n`);
          }
        } else {
          for (const ch of this.#history) {
            if (ch.rv <= from) continue;
            const line = eventLine(ch, watcher);
            if (line !== undefined) watcher.send(line);
          }
        }
        this.#watchers.add(watcher);
        const t = Number(query.timeoutSeconds);
        if (Number.isFinite(t) && t > 0) timer = setTimeout(() => watcher.close(), t * 1000);
      },
      cancel: () => watcher.close(),
    });
    return new Response(body, {
      headers: { "content-type": "application/json", "transfer-encoding": "chunked" },
    });
  }
}

function inScope(p: Pod, namespace: string | undefined): boolean {
  return namespace === undefined || p.metadata.namespace === namespace;
}

function withKind(p: Pod): Pod {
  return { kind: "Pod", apiVersion: "v1", ...p };
}

/** A change as one watcher sees it: selector transitions become ADDED / DELETED, others are dropped. */
function eventLine(ch: Change, w: Watcher): string | undefined {
  if (!inScope(ch.obj, w.namespace)) return undefined;
  const now = w.selector(ch.obj.metadata.labels ?? {});
  const before = ch.prev !== undefined && w.selector(ch.prev.metadata.labels ?? {});
  let type: Change["type"];
  let obj = ch.obj;
  if (ch.type === "DELETED") {
    if (!before) return undefined;
    type = "DELETED";
  } else if (now && !before) type = "ADDED";
  else if (now && before) type = "MODIFIED";
  else if (!now && before) {
    // Stopped matching: the previous content, at the change's version.
    type = "DELETED";
    obj = structuredClone(ch.prev!);
    obj.metadata.resourceVersion = String(ch.rv);
  } else return undefined;
  return `${JSON.stringify({ type, object: withKind(obj) })}\n`;
}

function statusBody(code: number, reason: string, message: string): Record<string, unknown> {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    code,
  };
}

function status(code: number, reason: string, message: string): Response {
  return Response.json(statusBody(code, reason, message), { status: code });
}

function errorLine(code: number, reason: string, message: string): string {
  return `${JSON.stringify({ type: "ERROR", object: statusBody(code, reason, message) })}\n`;
}

// ---- label selectors, as labels.Parse reads them ----

type Selector = (labels: Record<string, string>) => boolean;

const KEY =
  /^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?\/)?[a-z0-9A-Z]([-a-z0-9A-Z_.]{0,61}[a-z0-9A-Z])?$/;
const VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;

/** "a=b,c,!d,e in (x,y),f notin (z),g!=h" → one predicate (every requirement must hold). */
export function parseSelector(text: string): Selector {
  const reqs: Selector[] = [];
  for (const part of splitTopLevel(text)) {
    const s = part.trim();
    if (s === "") throw new Error(`empty requirement in ${JSON.stringify(text)}`);
    reqs.push(requirement(s));
  }
  return (labels) => reqs.every((r) => r(labels));
}

/** Split at commas outside parentheses (set values hold commas). */
function splitTopLevel(text: string): string[] {
  if (text.trim() === "") return [];
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "(") depth++;
    else if (c === ")") depth--;
    else if (c === "," && depth === 0) {
      out.push(text.slice(start, i));
      start = i + 1;
    }
    if (depth < 0) throw new Error(`unbalanced parenthesis in ${JSON.stringify(text)}`);
  }
  if (depth !== 0) throw new Error(`unbalanced parenthesis in ${JSON.stringify(text)}`);
  out.push(text.slice(start));
  return out;
}

function key(k: string): string {
  const t = k.trim();
  if (!KEY.test(t)) throw new Error(`invalid label key ${JSON.stringify(t)}`);
  return t;
}

function value(x: string): string {
  const t = x.trim();
  if (!VALUE.test(t)) throw new Error(`invalid label value ${JSON.stringify(t)}`);
  return t;
}

function requirement(s: string): Selector {
  const set = /^(\S+)\s+(in|notin)\s*\((.*)\)$/.exec(s);
  if (set) {
    const k = key(set[1]!);
    const values = new Set(set[3]!.split(",").map(value));
    if (values.size === 0) throw new Error(`${JSON.stringify(s)}: a set needs at least one value`);
    return set[2] === "in"
      ? (l) => k in l && values.has(l[k]!)
      : (l) => !(k in l) || !values.has(l[k]!);
  }
  const ne = s.indexOf("!=");
  if (ne > 0) {
    const k = key(s.slice(0, ne));
    const v = value(s.slice(ne + 2));
    return (l) => l[k] !== v;
  }
  const eq = s.indexOf("=");
  if (eq > 0) {
    const k = key(s.slice(0, eq));
    const v = value(s.slice(s[eq + 1] === "=" ? eq + 2 : eq + 1));
    return (l) => l[k] === v;
  }
  if (s.startsWith("!")) {
    const k = key(s.slice(1));
    return (l) => !(k in l);
  }
  const k = key(s);
  return (l) => k in l;
}
