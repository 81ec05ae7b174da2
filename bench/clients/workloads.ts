/**
 * bench:clients' workloads: each one client run (its command line) and how its own results are
 * read back. The clients run unmodified from CACHE_DIR (pins.ts, get.ts); what they print and
 * write is theirs: SGLang's bench_serving.py a JSON line with `--output-details` (per-request
 * ttfts, itls and errors), vLLM's multi-turn benchmark `--stats-json-output` (one object per
 * measured request) and a `Client N is done (num_successes=S, num_failures=F)` log line per client.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { clientDir, SGLANG, VLLM } from "./pins.ts";

export type WorkloadName = "gsp-completions" | "gsp-chat" | "random-ids" | "multi-turn";
export const WORKLOADS: readonly WorkloadName[] = [
  "gsp-completions",
  "gsp-chat",
  "random-ids",
  "multi-turn",
];

/** The load of one workload; `full` is the shape, `short` a check that fits a loaded machine. */
export interface Shape {
  /** generated-shared-prefix: groups × prompts per group, system prompt and question tokens, output tokens. */
  gspGroups: number;
  gspPerGroup: number;
  gspSystem: number;
  gspQuestion: number;
  gspOutput: number;
  /** Requests per second (SGLang's client: Poisson arrivals). */
  rate: number;
  /** random-ids: prompts, input and output tokens. */
  randomPrompts: number;
  randomInput: number;
  randomOutput: number;
  /** vLLM multi-turn: conversations, messages per conversation (user + assistant), clients. */
  conversations: number;
  turns: number;
  clients: number;
  turnInput: number;
  turnOutput: number;
}

export const SHAPES: Record<"full" | "short", Shape> = {
  // issue 44's runs: 16 groups × 16, a 2,048-token system prompt, 32 req/s; 12 multi-turn clients.
  full: {
    gspGroups: 16,
    gspPerGroup: 16,
    gspSystem: 2048,
    gspQuestion: 128,
    gspOutput: 256,
    rate: 32,
    randomPrompts: 256,
    randomInput: 1024,
    randomOutput: 256,
    conversations: 24,
    turns: 12,
    clients: 12,
    turnInput: 140,
    turnOutput: 100,
  },
  short: {
    gspGroups: 4,
    gspPerGroup: 4,
    gspSystem: 512,
    gspQuestion: 64,
    gspOutput: 32,
    rate: 16,
    randomPrompts: 16,
    randomInput: 512,
    randomOutput: 32,
    conversations: 4,
    turns: 4,
    clients: 2,
    turnInput: 60,
    turnOutput: 16,
  },
};

/** What one client run measured, in its own terms. */
export interface ClientResult {
  /** Requests the workload sends. */
  expected: number;
  completed: number;
  failed: number;
  /** Client-measured, ms. */
  ttftMs: number[];
  itlMs: number[];
  /** Output tokens per second over the run, as the client reports it. */
  outputThroughput: number;
  requestThroughput: number;
}

export interface ClientRun {
  readonly cmd: string[];
  readonly cwd: string;
  /** Reads the client's files and output once it exited. */
  read(stdout: string): ClientResult;
}

export interface RunContext {
  readonly python: string;
  readonly routerUrl: string;
  readonly model: string;
  /** Hugging Face tokenizer directory (the clients count and make tokens with it). */
  readonly tokenizer: string;
  readonly outDir: string;
  readonly seed: number;
  /** A text file the multi-turn generator samples words from. */
  readonly corpus: string;
}

export function clientRun(w: WorkloadName, s: Shape, c: RunContext): ClientRun {
  if (w === "multi-turn") return multiTurn(s, c);
  const out = join(c.outDir, `${w}.jsonl`);
  const dataset =
    w === "random-ids"
      ? [
          "--dataset-name",
          "random-ids",
          "--num-prompts",
          String(s.randomPrompts),
          "--random-input-len",
          String(s.randomInput),
          "--random-output-len",
          String(s.randomOutput),
          "--random-range-ratio",
          "1",
        ]
      : [
          "--dataset-name",
          "generated-shared-prefix",
          "--gsp-num-groups",
          String(s.gspGroups),
          "--gsp-prompts-per-group",
          String(s.gspPerGroup),
          "--gsp-system-prompt-len",
          String(s.gspSystem),
          "--gsp-question-len",
          String(s.gspQuestion),
          "--gsp-output-len",
          String(s.gspOutput),
        ];
  const expected = w === "random-ids" ? s.randomPrompts : s.gspGroups * s.gspPerGroup;
  return {
    cwd: c.outDir,
    cmd: [
      c.python,
      join(clientDir(SGLANG), "bench_serving.py"),
      "--backend",
      w === "gsp-chat" ? "sglang-oai-chat" : "sglang-oai",
      "--base-url",
      c.routerUrl,
      "--model",
      c.model,
      "--tokenizer",
      c.tokenizer,
      ...dataset,
      "--request-rate",
      String(s.rate),
      "--seed",
      String(c.seed),
      "--output-file",
      out,
      "--output-details",
    ],
    read: () => {
      const lines = readFileSync(out, "utf8").trim().split("\n");
      const r = JSON.parse(lines.at(-1)!) as {
        completed: number;
        ttfts: number[];
        itls: number[][];
        errors: string[];
        output_throughput: number;
        request_throughput: number;
      };
      const ok = r.errors.map((e) => e === "");
      return {
        expected,
        completed: r.completed,
        failed: expected - r.completed,
        ttftMs: r.ttfts.filter((_, i) => ok[i]).map((t) => t * 1000),
        itlMs: r.itls
          .filter((_, i) => ok[i])
          .flat()
          .map((t) => t * 1000),
        outputThroughput: r.output_throughput,
        requestThroughput: r.request_throughput,
      };
    },
  };
}

function multiTurn(s: Shape, c: RunContext): ClientRun {
  const input = join(c.outDir, "multi-turn.json");
  const stats = join(c.outDir, "multi-turn-stats.json");
  // generate_multi_turn.json's shape (benchmarks/multi_turn), sized by the Shape, on a local text.
  writeFileSync(
    input,
    JSON.stringify({
      filetype: "generate_conversations",
      num_conversations: s.conversations,
      text_files: [c.corpus],
      print_stats: false,
      prompt_input: {
        num_turns: { distribution: "constant", value: s.turns },
        common_prefix_num_tokens: { distribution: "constant", value: 500 },
        prefix_num_tokens: { distribution: "lognormal", average: 1000, max: 5000 },
        num_tokens: { distribution: "constant", value: s.turnInput },
      },
      prompt_output: { num_tokens: { distribution: "constant", value: s.turnOutput } },
    }),
  );
  return {
    cwd: clientDir(VLLM),
    cmd: [
      c.python,
      "benchmark_serving_multi_turn.py",
      "--model",
      c.tokenizer,
      "--served-model-name",
      c.model,
      "--url",
      c.routerUrl,
      "--input-file",
      input,
      "--num-clients",
      String(s.clients),
      "--max-active-conversations",
      String(s.clients * 2),
      "--seed",
      String(c.seed),
      "--no-early-stop",
      "--stats-json-output",
      stats,
    ],
    read: (stdout) => {
      const rows = JSON.parse(readFileSync(stats, "utf8")) as {
        ttft_ms: number;
        tpot_ms: number;
        start_time_ms: number;
        latency_ms: number;
        output_num_tokens: number;
      }[];
      // The client's own count, one line per client: which turns it sends is its business.
      let successes = 0;
      let failures = 0;
      for (const m of stdout.matchAll(/num_successes=(\d+), num_failures=(\d+)/g)) {
        successes += Number(m[1]);
        failures += Number(m[2]);
      }
      const start = Math.min(...rows.map((r) => r.start_time_ms));
      const end = Math.max(...rows.map((r) => r.start_time_ms + r.latency_ms));
      const seconds = (end - start) / 1000;
      return {
        expected: successes + failures,
        completed: rows.length,
        failed: failures + Math.max(0, successes - rows.length),
        ttftMs: rows.map((r) => r.ttft_ms),
        itlMs: rows.map((r) => r.tpot_ms),
        outputThroughput: rows.reduce((a, r) => a + r.output_num_tokens, 0) / seconds,
        requestThroughput: rows.length / seconds,
      };
    },
  };
}
