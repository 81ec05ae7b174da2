/**
 * Debian's real Prometheus for tests: the server started as a plain binary (no service) with a
 * config file in a temp dir, scraping what the test names every second and evaluating the
 * repository's rules; its HTTP query API; stopped by PID. Also what the rules file and the
 * Grafana dashboard ask Prometheus, read from deploy/.
 */
import type { Subprocess } from "bun";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PROMETHEUS } from "./debian-tools.ts";
import { freePort, ROOT, until } from "./processes.ts";

export const RULES_FILE = join(ROOT, "deploy", "prometheus", "rules.yml");
export const RULES_TEST_FILE = join(ROOT, "deploy", "prometheus", "rules.test.yml");
export const DASHBOARD_FILE = join(ROOT, "deploy", "grafana", "switchyard.json");

export interface Rule {
  readonly alert?: string;
  readonly record?: string;
  readonly expr: string;
  readonly annotations?: Readonly<Record<string, string>>;
}

export function loadRules(): Rule[] {
  const doc = Bun.YAML.parse(readFileSync(RULES_FILE, "utf8")) as { groups: { rules: Rule[] }[] };
  return doc.groups.flatMap((g) => g.rules);
}

/** An alert's expression split into the signal it watches and its threshold; undefined when not of that form. */
export function splitAlert(
  expr: string,
): { signal: string; op: string; threshold: number } | undefined {
  const m = /^([\s\S]*\S)\s*(==|!=|>=|<=|>|<)\s*(-?[0-9.]+(?:e-?[0-9]+)?)\s*$/.exec(expr.trim());
  return m ? { signal: m[1]!, op: m[2]!, threshold: Number(m[3]) } : undefined;
}

export interface DashboardQuery {
  readonly panel: string;
  readonly expr: string;
}

interface Panel {
  readonly type: string;
  readonly title: string;
  readonly targets?: { expr: string }[];
  readonly panels?: Panel[];
}

/** Every panel's every target, and the template variables' queries, from the dashboard JSON. */
export function dashboardQueries(): {
  panels: DashboardQuery[];
  variables: { name: string; query: string }[];
  json: Record<string, unknown>;
} {
  const json = JSON.parse(readFileSync(DASHBOARD_FILE, "utf8")) as {
    panels: Panel[];
    templating: { list: { name: string; type: string; query: unknown }[] };
  };
  const panels: DashboardQuery[] = [];
  const walk = (ps: readonly Panel[]) => {
    for (const p of ps) {
      for (const t of p.targets ?? []) panels.push({ panel: p.title, expr: t.expr });
      if (p.panels) walk(p.panels);
    }
  };
  walk(json.panels);
  const variables = json.templating.list
    .filter((v) => v.type === "query")
    .map((v) => ({
      name: v.name,
      query: typeof v.query === "string" ? v.query : (v.query as { query: string }).query,
    }));
  return { panels, variables, json: json as unknown as Record<string, unknown> };
}

/** A dashboard expression as Grafana sends it: variables set to "all", the rate interval to `rate`. */
export function grafanaExpand(expr: string, rate: string): string {
  return expr
    .replaceAll("$__rate_interval", rate)
    .replaceAll("$instance", ".*")
    .replaceAll("$model", ".*");
}

export interface PrometheusServer {
  readonly url: string;
  readonly pid: number;
  /** Instant query; the result vector (throws on an API error, with Prometheus' message). */
  query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
  output(): string;
  stop(): Promise<void>;
}

export async function startPrometheus(
  targets: readonly string[],
  opts: { scrapeSeconds?: number; ruleFiles?: readonly string[] } = {},
): Promise<PrometheusServer> {
  const dir = mkdtempSync(join(tmpdir(), "switchyard-prom-"));
  const every = `${opts.scrapeSeconds ?? 1}s`;
  const config = [
    "global:",
    `  scrape_interval: ${every}`,
    `  evaluation_interval: ${every}`,
    "rule_files:",
    ...(opts.ruleFiles ?? []).map((f) => `  - ${JSON.stringify(f)}`),
    "scrape_configs:",
    "  - job_name: switchyard",
    "    static_configs:",
    `      - targets: [${targets.map((t) => JSON.stringify(t)).join(", ")}]`,
  ].join("\n");
  writeFileSync(join(dir, "prometheus.yml"), config + "\n");
  const port = freePort();
  const proc: Subprocess<"ignore", "pipe", "pipe"> = Bun.spawn({
    cmd: [
      PROMETHEUS,
      `--config.file=${join(dir, "prometheus.yml")}`,
      `--storage.tsdb.path=${join(dir, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`,
      "--log.level=warn",
    ],
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let out = "";
  const dec = new TextDecoder();
  for (const s of [proc.stdout, proc.stderr])
    void (async () => {
      for await (const c of s) out += dec.decode(c, { stream: true });
    })().catch(() => {});
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill("SIGTERM");
      const done = await Promise.race([
        proc.exited.then(() => true),
        Bun.sleep(5_000).then(() => false),
      ]);
      if (!done) {
        proc.kill("SIGKILL");
        await proc.exited;
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await until(
      async () => proc.exitCode === null && (await fetch(`${url}/-/ready`)).ok,
      () => `prometheus to be ready\n${out}`,
      20_000,
      100,
    );
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    url,
    pid: proc.pid,
    output: () => out,
    stop,
    async query(expr) {
      const r = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`);
      const body = (await r.json()) as {
        status: string;
        error?: string;
        data?: {
          resultType: string;
          result: { metric: Record<string, string>; value: [number, string] }[];
        };
      };
      if (body.status !== "success") throw new Error(`query failed: ${body.error} — ${expr}`);
      if (body.data!.resultType !== "vector")
        throw new Error(`not a vector (${body.data!.resultType}): ${expr}`);
      return body.data!.result;
    },
  };
}
