/**
 * deploy/prometheus/rules.yml is valid and its alerts do what they say: `promtool check rules`
 * and `promtool test rules` on rules.test.yml (one unit test per alert, a healthy fleet that
 * fires nothing, the recording rules' arithmetic). The promtool part is skipped, with the
 * reason printed, where Debian's prometheus package is not installed.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { missingTool, PROMTOOL, runTool } from "../support/debian-tools.ts";
import { ROOT } from "../support/processes.ts";
import { loadRules, RULES_FILE, RULES_TEST_FILE, splitAlert } from "../support/prometheus.ts";

const missing = missingTool(PROMTOOL, "prometheus");

describe.skipIf(missing !== undefined)(
  `Prometheus rules against promtool${missing ? ` (skipped: ${missing})` : ""}`,
  () => {
    test("promtool check rules: valid", () => {
      const r = runTool([PROMTOOL, "check", "rules", RULES_FILE]);
      expect(r.out).toContain("SUCCESS");
      expect(r.code).toBe(0);
    });

    test("promtool test rules: every unit test passes", () => {
      const r = runTool([PROMTOOL, "test", "rules", RULES_TEST_FILE]);
      expect(r.out).toContain("SUCCESS");
      expect(r.code).toBe(0);
    });
  },
);

describe("the rules file's shape", () => {
  const rules = loadRules();
  const tests = readFileSync(RULES_TEST_FILE, "utf8");

  test("the alerts the operators asked for are all there", () => {
    const alerts = rules.filter((r) => r.alert !== undefined).map((r) => r.alert!);
    for (const a of [
      "SwitchyardNoHealthyWorker",
      "SwitchyardWorkerEjected",
      "SwitchyardKvEventGapsRising",
      "SwitchyardKvEventsLost",
      "SwitchyardKvStreamDown",
      "SwitchyardAdmissionRejecting",
      "SwitchyardRedisDown",
      "SwitchyardBurstClaimsFailing",
      "SwitchyardTokenizerMismatch",
      "SwitchyardRouterCpuSaturated",
      "SwitchyardRouterDown",
      "SwitchyardRoutersAbsent",
      "SwitchyardTtftBudgetBurnFast",
      "SwitchyardTtftBudgetBurnSlow",
      "SwitchyardKvStreamStale",
      "SwitchyardCacheHitFarBelowBest",
      "SwitchyardKvEventPushesRefused",
    ]) {
      expect(alerts).toContain(a);
    }
  });

  test("every alert has a unit test that expects it to fire", () => {
    for (const r of rules.filter((x) => x.alert !== undefined)) {
      expect(tests).toMatch(
        new RegExp(`alertname: ${r.alert}\\n\\s+exp_alerts:\\n\\s+- exp_labels`),
      );
    }
  });

  test("every alert has a runbook_url naming its own page in deploy/runbooks/, listed in the index", () => {
    const index = readFileSync(join(ROOT, "deploy", "runbooks", "README.md"), "utf8");
    for (const r of rules.filter((x) => x.alert !== undefined)) {
      const url = r.annotations?.runbook_url;
      expect({ alert: r.alert, url }).toEqual({
        alert: r.alert,
        url: `deploy/runbooks/${r.alert}.md`,
      });
      const page = join(ROOT, url!);
      expect({ page: url, exists: existsSync(page) }).toEqual({ page: url, exists: true });
      expect(readFileSync(page, "utf8").split("\n")[0]).toBe(`# ${r.alert}`);
      expect(index).toContain(`[${r.alert}](${r.alert}.md)`);
    }
  });

  test("router down, TTFT burn-rate and stale-stream alerts watch the series they are about", () => {
    const expr = (name: string) => rules.find((r) => r.alert === name)!.expr;
    expect(expr("SwitchyardRouterDown")).toContain('up{job="switchyard"}');
    // Absent targets count as 0: no series at all must still fire.
    expect(expr("SwitchyardRoutersAbsent")).toContain("or vector(0)");
    for (const a of ["SwitchyardTtftBudgetBurnFast", "SwitchyardTtftBudgetBurnSlow"])
      expect(expr(a)).toContain("model:switchyard_time_to_first_token_slow:ratio");
    const windows = rules.filter(
      (r) => r.record === "model:switchyard_time_to_first_token_slow:ratio",
    );
    expect(
      windows.every((r) => r.expr.includes("switchyard_time_to_first_token_seconds_bucket")),
    ).toBe(true);
    expect(expr("SwitchyardKvStreamStale")).toContain("switchyard_kv_stream_events_total");
  });

  test("every alert is SIGNAL OP NUMBER (the real-Prometheus test queries SIGNAL on a healthy fleet)", () => {
    for (const r of rules.filter((x) => x.alert !== undefined))
      expect({ alert: r.alert, split: splitAlert(r.expr) !== undefined }).toEqual({
        alert: r.alert,
        split: true,
      });
    expect(splitAlert("(a or b) == 0")).toEqual({ signal: "(a or b)", op: "==", threshold: 0 });
  });
});
