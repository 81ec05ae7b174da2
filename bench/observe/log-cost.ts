/**
 * What one access line costs the router's thread (`bun bench/observe/log-cost.ts [--lines N]`):
 * the access line's exact fields written N times by each candidate — this repo's JSON and
 * text loggers over console.error, process.stderr.write and Bun's buffered FileSink, and
 * pino (its default asynchronous sonic-boom destination, and synchronous) — in a child whose
 * stderr is a pipe the parent drains, as a container runtime's log pipe is. CPU µs per line
 * (user + system of the child, so work moved to another thread or the kernel still counts),
 * best of 5 rounds; the machine is shared.
 */
import pino from "pino";
import { createFormattedLogger } from "../../src/observe/logger.ts";

const LINES = process.argv.includes("--lines")
  ? Number(process.argv[process.argv.indexOf("--lines") + 1])
  : 50_000;

/** An access line as the router writes it (request-observation.ts). */
function fields(i: number): Record<string, unknown> {
  return {
    request_id: "3f2b9c1e-7a4d-4e8b-9c2a-1b5e6f7a8d9c",
    trace_id: "0af7651916cd43dd8448eb211c80319c",
    method: "POST",
    route: "/v1/chat/completions",
    model: "meta-llama/Llama-3.1-8B-Instruct",
    session: "9b1c2d3e4f5a6b7c",
    status: 200,
    error: null,
    worker: "8976625718357559853",
    worker_url: "http://10.0.0.5:8000",
    dp_rank: 0,
    prefill_worker: null,
    prompt_tokens: 1024 + (i & 7),
    cached_blocks: 48,
    cached_tokens: 768,
    best_cached_blocks: 48,
    retries: 0,
    retry_reasons: [],
    admission_wait_ms: 0,
    client_cancelled: false,
    ttfb_ms: 12.345,
    ttft_ms: 12.9,
    predicted_ttft_ms: 11.8,
    duration_ms: 412.75,
    output_tokens: 128,
    bytes_out: 23456,
  };
}

function cpuUs(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

type Candidate = {
  name: string;
  make: () => { line: (i: number) => void; flush: () => Promise<void> };
};

const CANDIDATES: Candidate[] = [
  {
    name: "off (fields built, no line)",
    make: () => {
      let sink = 0;
      return {
        line: (i) => void (sink += Object.keys(fields(i)).length),
        flush: async () => void sink,
      };
    },
  },
  {
    name: "json logger, line made but not written",
    make: () => {
      let sink = 0;
      const log = createFormattedLogger({
        level: "info",
        format: "json",
        write: (l) => void (sink += l.length),
      });
      return { line: (i) => log.info("request", fields(i)), flush: async () => void sink };
    },
  },
  {
    name: "pino, line made but not written",
    make: () => {
      let sink = 0;
      const log = pino(
        { base: undefined, timestamp: pino.stdTimeFunctions.isoTime },
        { write: (l: string) => void (sink += l.length) },
      );
      return { line: (i) => log.info(fields(i), "request"), flush: async () => void sink };
    },
  },
  {
    name: "json logger -> console.error",
    make: () => {
      const log = createFormattedLogger({ level: "info", format: "json" });
      return { line: (i) => log.info("request", fields(i)), flush: async () => {} };
    },
  },
  {
    name: "json logger -> process.stderr.write",
    make: () => {
      const log = createFormattedLogger({
        level: "info",
        format: "json",
        write: (l) => void process.stderr.write(l + "\n"),
      });
      return { line: (i) => log.info("request", fields(i)), flush: async () => {} };
    },
  },
  {
    name: "json logger -> Bun FileSink, flushed per tick",
    make: () => {
      const w = Bun.stderr.writer();
      let queued = false;
      const flush = () => {
        queued = false;
        void w.flush();
      };
      const log = createFormattedLogger({
        level: "info",
        format: "json",
        write: (l) => {
          w.write(l + "\n");
          if (!queued) {
            queued = true;
            setImmediate(flush);
          }
        },
      });
      return {
        line: (i) => log.info("request", fields(i)),
        flush: async () => void (await w.flush()),
      };
    },
  },
  {
    name: "text logger -> console.error",
    make: () => {
      const log = createFormattedLogger({ level: "info", format: "text" });
      return { line: (i) => log.info("request", fields(i)), flush: async () => {} };
    },
  },
  {
    name: "pino (sonic-boom, async)",
    make: () => {
      const dest = pino.destination({ dest: 2, sync: false, minLength: 4096 });
      const log = pino({ base: undefined, timestamp: pino.stdTimeFunctions.isoTime }, dest);
      return {
        line: (i) => log.info(fields(i), "request"),
        flush: () => new Promise((r) => dest.flush(() => r())),
      };
    },
  },
  {
    name: "pino (sync destination)",
    make: () => {
      const dest = pino.destination({ dest: 2, sync: true });
      const log = pino({ base: undefined, timestamp: pino.stdTimeFunctions.isoTime }, dest);
      return { line: (i) => log.info(fields(i), "request"), flush: async () => {} };
    },
  },
];

async function child(index: number): Promise<void> {
  const c = CANDIDATES[index]!;
  const { line, flush } = c.make();
  let best = Infinity;
  for (let round = 0; round < 5; round++) {
    const t0 = cpuUs();
    for (let i = 0; i < LINES; i++) {
      line(i);
      // Yield now and then, as a server does between requests, so async writers get to write.
      if ((i & 255) === 255) await new Promise((r) => setImmediate(r));
    }
    await flush();
    best = Math.min(best, (cpuUs() - t0) / LINES);
  }
  console.log(JSON.stringify({ name: c.name, usPerLine: best }));
}

async function parent(): Promise<void> {
  console.log(
    `access line cost, ${LINES} lines x 5 rounds (best), stderr = a pipe drained by the parent`,
  );
  console.log("| writer | CPU µs / line |\n|---|---:|");
  for (let i = 0; i < CANDIDATES.length; i++) {
    const p = Bun.spawn({
      cmd: [process.execPath, import.meta.path, "--child", String(i), "--lines", String(LINES)],
      stdout: "pipe",
      stderr: "pipe",
    });
    const drained = (async () => {
      for await (const _ of p.stderr) {
        // drained, as a log collector would
      }
    })();
    const out = await new Response(p.stdout).text();
    await p.exited;
    await drained;
    const r = JSON.parse(out.trim().split("\n").pop()!) as { name: string; usPerLine: number };
    console.log(`| ${r.name} | ${r.usPerLine.toFixed(2)} |`);
  }
}

const ci = process.argv.indexOf("--child");
if (ci >= 0) await child(Number(process.argv[ci + 1]));
else await parent();
