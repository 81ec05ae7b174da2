/**
 * The router's /metrics, with every family this router exposes filled by real traffic
 * (streamed and whole answers, an error, a cancelled client), passes `promtool check metrics`
 * (Prometheus' own linter: names, units, types, HELP), and holds the families the dashboard
 * and the rules read. Skipped, with the reason printed, where Debian's prometheus package
 * (promtool) is not installed.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { startMain, stopAll, until, type Proc } from "../support/processes.ts";
import { missingTool, PROMTOOL, runTool } from "../support/debian-tools.ts";

setDefaultTimeout(30_000);

const missing = missingTool(PROMTOOL, "prometheus");
let engines: Proc[] = [];
let router: Proc | undefined;

const post = (path: string, body: unknown) =>
  fetch(`${router!.info.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

describe.skipIf(missing !== undefined)(
  `/metrics against promtool${missing ? ` (skipped: ${missing})` : ""}`,
  () => {
    beforeAll(async () => {
      engines = await Promise.all(
        [0, 1].map((i) =>
          startMain([
            "mocker",
            "--port",
            "0",
            "--seed",
            String(i + 1),
            "--decode-ms-per-step",
            "1",
            "--model",
            "sim",
          ]),
        ),
      );
      router = await startMain([
        "serve",
        "--port",
        "0",
        "--health-interval",
        "0.5",
        "--log-level",
        "warn",
        ...engines.flatMap((e) => ["--worker", String(e.info.url)]),
      ]);
      await until(
        async () =>
          (
            (await (await fetch(`${router!.info.url}/health`)).json()) as {
              healthy_workers: number;
            }
          ).healthy_workers === 2,
        "two healthy workers",
      );
      for (let i = 0; i < 4; i++)
        await (
          await post("/v1/completions", {
            model: "sim",
            prompt: `promtool request ${i} `.repeat(8),
            max_tokens: 4,
            stream: i % 2 === 0,
          })
        ).text();
      await (
        await post("/v1/chat/completions", {
          model: "sim",
          messages: [{ role: "user", content: "hi" }],
          max_tokens: 3,
        })
      ).text();
      await (await post("/v1/completions", { model: "no-such-model", prompt: "x" })).text();
      const cancelled = await post("/v1/completions", {
        model: "sim",
        prompt: "cancel me",
        max_tokens: 200,
        stream: true,
      });
      const reader = cancelled.body!.getReader();
      await reader.read();
      await reader.cancel();
    });

    afterAll(async () => {
      await stopAll([router, ...engines]);
    });

    test("promtool check metrics finds no problem", async () => {
      const text = await (await fetch(`${router!.info.url}/metrics`)).text();
      const r = runTool([PROMTOOL, "check", "metrics"], text);
      expect(r.out.trim()).toBe("");
      expect(r.code).toBe(0);
    });

    test("the families operators graph are there, with samples", async () => {
      const text = await (await fetch(`${router!.info.url}/metrics`)).text();
      for (const sample of [
        'switchyard_http_requests_total{model="sim",route="/v1/completions",status_class="2xx"}',
        'switchyard_http_requests_total{model="other",route="/v1/completions",status_class="4xx"}',
        'switchyard_http_requests_total{model="sim",route="/v1/completions",status_class="cancelled"}',
        'switchyard_request_duration_seconds_count{model="sim",route="/v1/chat/completions"}',
        'switchyard_time_to_first_token_seconds_count{model="sim",route="/v1/completions"}',
        'switchyard_inter_token_latency_seconds_count{model="sim",route="/v1/completions"}',
        'switchyard_prompt_tokens_total{model="sim"}',
        'switchyard_completion_tokens_total{model="sim"}',
        'switchyard_cached_tokens_total{model="sim"}',
        'switchyard_prompt_blocks_total{model="sim"}',
        'switchyard_best_cached_blocks_total{model="sim"}',
        "switchyard_build_info{",
        "process_cpu_seconds_total ",
        "process_resident_memory_bytes ",
        "process_open_fds ",
        "switchyard_event_loop_lag_seconds ",
        'switchyard_kv_recovery_total{kind="gaps"}',
      ]) {
        expect(text).toContain(sample);
      }
      for (const e of engines)
        expect(text).toContain(
          `switchyard_worker_info{worker="${e.info.worker_id}",url="${e.info.url}",model="sim",role="both"} 1`,
        );
      // No request or session id ever becomes a label.
      expect(text).not.toMatch(/request_id=|session=/);
    });
  },
);
