/**
 * The dashboard and the rules against a real Prometheus (Debian's `prometheus` binary, started
 * with a config file in a temp dir, no service) scraping a real router in front of simulated
 * engines and a ZMQ-fed vLLM stand-in, under load, with a real redis-server for its shared state
 * and burst claims: every expression of every panel of
 * deploy/grafana/switchyard.json, every recording rule and every alert's signal (the alert
 * without its threshold) returns data, so no panel is empty on a healthy fleet and no rule
 * watches a series that does not exist. Grafana itself cannot be installed here; its
 * template variables are expanded as it would ("All" = .*, $__rate_interval = 30s).
 * Skipped, with the reason printed, where the prometheus package is not installed.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { missingTool, PROMETHEUS } from "../support/debian-tools.ts";
import { startFleet, type Fleet } from "../support/observed-fleet.ts";
import {
  dashboardQueries,
  grafanaExpand,
  loadRules,
  RULES_FILE,
  splitAlert,
  startPrometheus,
  type PrometheusServer,
} from "../support/prometheus.ts";
import { until } from "../support/processes.ts";
import { startRedisServer, type RedisServer } from "../support/redis-server.ts";

setDefaultTimeout(120_000);

const missing = missingTool(PROMETHEUS, "prometheus");
/** Grafana's $__rate_interval at a 1 s scrape interval is 4 × 15 s at least; 30 s keeps enough samples of a short run. */
const RATE = "30s";
/** Series only a ZMQ-fed worker has. */
const ZMQ_ONLY = /switchyard_kv_stream_/;

let fleet: Fleet | undefined;
let prom: PrometheusServer | undefined;
let redis: RedisServer | undefined;

/** Where each query's first sample with a number, or why there is none. */
async function hasData(expr: string): Promise<string | undefined> {
  const result = await prom!.query(expr);
  if (result.length === 0) return "no series";
  if (!result.some((s) => Number.isFinite(Number(s.value[1]))))
    return `only NaN/Inf (${result.length} series)`;
  return undefined;
}

describe.skipIf(missing !== undefined)(
  `dashboard and rules on a real Prometheus${missing ? ` (skipped: ${missing})` : ""}`,
  () => {
    beforeAll(async () => {
      // A rank is busy with more than 5 booked prefill tokens (5% of 100) and each prefill takes at
      // least 20 ms, so concurrent requests queue now and then: the admission panels get data.
      // Redis and --burst-claims: the burst-claims panel and alert watch series only such a router
      // has. A 1 s Redis bound, as in the multi-router tests: on a busy machine the 50 ms default can
      // read a slow answer as Redis hung, and this test is about the series, not the bound.
      redis = await startRedisServer();
      fleet = await startFleet({
        engines: 3,
        zmqWorker: true,
        routerArgs: [
          "--busy-threshold",
          "0.05",
          "--worker-capacity",
          "100",
          "--redis",
          redis.url,
          "--redis-timeout",
          "1",
          "--burst-claims",
        ],
        engineArgs: ["--prefill-overhead-ms", "20"],
      });
      const target = fleet.url.replace("http://", "");
      prom = await startPrometheus([target], { scrapeSeconds: 1, ruleFiles: [RULES_FILE] });
      // Prometheus hands targets to its scraper a few seconds after it starts: load only once it scrapes.
      const scrapes = async () =>
        Number((await prom!.query('count_over_time(up{job="switchyard"}[5m])'))[0]?.value[1] ?? 0);
      await until(
        async () => (await scrapes()) >= 2,
        "Prometheus to scrape the router",
        30_000,
        250,
      );
      const before = await scrapes();
      const statuses = await fleet.load(8, 12);
      expect(statuses.get(200) ?? 0).toBeGreaterThan(20);
      // A few scrapes after the load, so the last requests are in every rate window and rule evaluation.
      await until(
        async () => (await scrapes()) >= before + 11,
        "scrapes after the load",
        30_000,
        250,
      );
      await until(
        async () =>
          (await prom!.query("model:switchyard_time_to_first_token_seconds:p50_5m")).length > 0,
        "the recording rules to evaluate",
        20_000,
        250,
      );
    });

    afterAll(async () => {
      await prom?.stop();
      await fleet?.stop();
      await redis?.stop();
    });

    test("Prometheus scrapes the router and evaluates every rule without error", async () => {
      expect(await prom!.query('up{job="switchyard"} == 1')).toHaveLength(1);
      const r = (await (await fetch(`${prom!.url}/api/v1/rules`)).json()) as {
        data: { groups: { rules: { name: string; health: string; lastError?: string }[] }[] };
      };
      const rules = r.data.groups.flatMap((g) => g.rules);
      expect(rules.length).toBe(loadRules().length);
      expect(
        rules
          .filter((x) => x.health !== "ok")
          .map((x) => `${x.name}: ${x.health} ${x.lastError ?? ""}`),
      ).toEqual([]);
    });

    test("every panel expression of the dashboard returns data", async () => {
      const { panels } = dashboardQueries();
      expect(panels.length).toBeGreaterThan(30);
      const empty: string[] = [];
      for (const q of panels) {
        if (fleet!.zmqProblem !== undefined && ZMQ_ONLY.test(q.expr)) continue;
        const why = await hasData(grafanaExpand(q.expr, RATE));
        if (why !== undefined) empty.push(`${q.panel}: ${why} — ${q.expr}`);
      }
      expect(empty).toEqual([]);
    });

    test("the dashboard's template variables find their values", async () => {
      for (const v of dashboardQueries().variables) {
        const m = /^label_values\((\w+),\s*(\w+)\)$/.exec(v.query);
        expect(m).not.toBeNull();
        const r = (await (
          await fetch(`${prom!.url}/api/v1/label/${m![2]}/values?match[]=${m![1]}`)
        ).json()) as { data: string[] };
        expect({ variable: v.name, values: r.data.length > 0 }).toEqual({
          variable: v.name,
          values: true,
        });
      }
    });

    test("every recording rule and every alert's signal returns data", async () => {
      const empty: string[] = [];
      for (const r of loadRules()) {
        const expr = r.record !== undefined ? r.record : splitAlert(r.expr)!.signal;
        if (fleet!.zmqProblem !== undefined && ZMQ_ONLY.test(r.expr)) continue;
        const why = await hasData(expr);
        if (why !== undefined) empty.push(`${r.record ?? r.alert}: ${why} — ${expr}`);
      }
      expect(empty).toEqual([]);
    });

    test("a healthy fleet fires no alert", async () => {
      const r = (await (await fetch(`${prom!.url}/api/v1/alerts`)).json()) as {
        data: { alerts: { labels: Record<string, string>; state: string }[] };
      };
      expect(
        r.data.alerts.filter((a) => a.state === "firing").map((a) => a.labels.alertname),
      ).toEqual([]);
    });
  },
);

describe("the dashboard file", () => {
  test("the data source is a variable: no fixed UID anywhere, every panel and query uses ${datasource}", () => {
    const { json, panels } = dashboardQueries();
    expect(json.uid).toBeUndefined();
    const text = JSON.stringify(json);
    const uids = [...text.matchAll(/"uid":"([^"]*)"/g)].map((m) => m[1]);
    expect(uids.length).toBeGreaterThan(panels.length);
    expect(new Set(uids)).toEqual(new Set(["${datasource}"]));
    const vars = (json.templating as { list: { name: string; type: string; query: unknown }[] })
      .list;
    expect(vars.find((v) => v.name === "datasource")).toMatchObject({
      type: "datasource",
      query: "prometheus",
    });
  });

  test("rows for traffic, latency by model, cache, fleet, admission and errors", () => {
    const rows = (dashboardQueries().json.panels as { type: string; title: string }[])
      .filter((p) => p.type === "row")
      .map((p) => p.title);
    expect(rows).toEqual([
      "Traffic",
      "Latency by model",
      "Cache",
      "Fleet",
      "Admission and errors",
      "Router process",
    ]);
  });
});
