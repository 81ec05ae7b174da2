/**
 * The alerts firing now, read from Alertmanager (`--alertmanager-url`) for the status page, so
 * the person looking at the fleet sees what paged. Alertmanager's API v2, `GET /api/v2/alerts`
 * with `active=true&silenced=false&inhibited=false` (prometheus/alertmanager api/v2/openapi.yaml
 * @07d03b6c: `gettableAlerts` = [{labels, annotations, startsAt, endsAt, status: {state,
 * silencedBy, inhibitedBy}, fingerprint, receivers, updatedAt}]). One read at a time, with a
 * deadline, kept for `cacheMs` (every open page polls every 2 s; Alertmanager need not hear it
 * each time). An unreachable or malformed Alertmanager is an error on the page, never a failed
 * status read. At most MAX_SHOWN alerts are kept. Fetch and clock are injected.
 */
import * as v from "valibot";

const MAX_SHOWN = 50;
/** An Alertmanager answer larger than this is not read (a thousand alerts are ~1 MB). */
const MAX_BYTES = 4 * 1024 * 1024;

const Labels = v.record(v.string(), v.string());
const GettableAlert = v.object({
  labels: Labels,
  annotations: v.optional(Labels, {}),
  startsAt: v.string(),
  fingerprint: v.optional(v.string()),
  generatorURL: v.optional(v.string()),
  status: v.optional(v.object({ state: v.string() })),
});
const GettableAlerts = v.array(GettableAlert);

export interface FiringAlert {
  readonly name: string;
  readonly severity: string | null;
  readonly summary: string | null;
  readonly runbook_url: string | null;
  readonly starts_at: string;
  readonly labels: Readonly<Record<string, string>>;
}

export interface AlertsView {
  /** Where they were read (the URL without credentials). */
  readonly source: string;
  readonly firing: readonly FiringAlert[];
  /** How many Alertmanager listed (firing may be cut to MAX_SHOWN). */
  readonly total: number;
  readonly error: string | null;
  readonly read_at: string | null;
}

export interface AlertmanagerOptions {
  readonly url: string;
  readonly fetch: (url: string, init: RequestInit) => Promise<Response>;
  /** ms since the epoch. */
  readonly now: () => number;
  readonly timeoutMs?: number;
  readonly cacheMs?: number;
}

export class AlertmanagerReader {
  readonly #endpoint: string;
  readonly #source: string;
  #last: AlertsView;
  #lastAt = -Infinity;
  #inFlight: Promise<AlertsView> | undefined;

  constructor(private readonly o: AlertmanagerOptions) {
    const base = new URL(o.url);
    this.#source = `${base.protocol}//${base.host}${base.pathname.replace(/\/+$/, "")}`;
    this.#endpoint = `${o.url.replace(/\/+$/, "")}/api/v2/alerts?active=true&silenced=false&inhibited=false`;
    this.#last = {
      source: this.#source,
      firing: [],
      total: 0,
      error: "not read yet",
      read_at: null,
    };
  }

  /** The alerts as last read, read again when older than cacheMs. */
  read(): Promise<AlertsView> {
    if (this.o.now() - this.#lastAt < (this.o.cacheMs ?? 5_000)) return Promise.resolve(this.#last);
    this.#inFlight ??= this.#fetch().finally(() => (this.#inFlight = undefined));
    return this.#inFlight;
  }

  async #fetch(): Promise<AlertsView> {
    let view: AlertsView;
    try {
      const res = await this.o.fetch(this.#endpoint, {
        headers: { accept: "application/json" },
        signal: AbortSignal.timeout(this.o.timeoutMs ?? 2_000),
      });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const text = await res.text();
      if (text.length > MAX_BYTES)
        throw new Error(`answer of ${text.length} bytes, more than ${MAX_BYTES}`);
      const parsed = v.safeParse(GettableAlerts, JSON.parse(text));
      if (!parsed.success)
        throw new Error(
          `not Alertmanager's alert list (${parsed.issues[0].message} at ${v.getDotPath(parsed.issues[0]) ?? "the top"})`,
        );
      // Active only: the query already leaves out silenced and inhibited alerts; an Alertmanager that ignores it still says so per alert.
      const active = parsed.output.filter((a) => (a.status?.state ?? "active") === "active");
      active.sort(
        (a, b) =>
          severityRank(a.labels.severity) - severityRank(b.labels.severity) ||
          a.startsAt.localeCompare(b.startsAt),
      );
      view = {
        source: this.#source,
        firing: active.slice(0, MAX_SHOWN).map(toFiring),
        total: active.length,
        error: null,
        read_at: new Date(this.o.now()).toISOString(),
      };
    } catch (e) {
      view = { ...this.#last, error: `cannot read ${this.#source}: ${(e as Error).message}` };
    }
    this.#last = view;
    this.#lastAt = this.o.now();
    return view;
  }
}

function toFiring(a: v.InferOutput<typeof GettableAlert>): FiringAlert {
  return {
    name: a.labels.alertname ?? "(no alertname)",
    severity: a.labels.severity ?? null,
    summary: a.annotations.summary ?? a.annotations.description ?? null,
    runbook_url: a.annotations.runbook_url ?? null,
    starts_at: a.startsAt,
    labels: a.labels,
  };
}

/** critical first, then warning, then the rest. */
function severityRank(s: string | undefined): number {
  return s === "critical" ? 0 : s === "warning" ? 1 : 2;
}
