/**
 * What keeping streams movable costs on the no-failure path, in one process without sockets
 * (`bun bench/migration/request-path.ts [--requests 3000] [--rounds 9] [--aa 1]`): the real app
 * (test/unit/edge/harness.ts) in front of an in-process engine answering a 16-token SSE stream
 * one event per read (as a decoding engine sends it), with stream migration on (the defaults:
 * 2 moves, 4 MiB per stream) and off. CPU (user + system) per request, rounds interleaved,
 * medians and the median of the per-round difference; this is the cost without the noise of
 * sockets and other processes (bench:proxy's `--targets router,nomigrate` has it with them).
 */
import { KeptMemory } from "../../src/edge/proxy/migration/kept-memory.ts";
import { harness } from "../../test/unit/edge/harness.ts";

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}
const REQUESTS = arg("--requests", 3000);
const ROUNDS = arg("--rounds", 9);
/** `--aa 1`: both configurations off, so the difference is this machine's noise. */
const AA = arg("--aa", 0) === 1;

const enc = new TextEncoder();
const EVENTS = [
  ...Array.from(
    { length: 16 },
    (_, i) =>
      `data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"base","choices":[{"index":0,"text":"t${i}","logprobs":null,"finish_reason":${i === 15 ? '"length"' : "null"}}]}\n\n`,
  ),
  "data: [DONE]\n\n",
].map((e) => enc.encode(e));
const prompt = "The router hashes every block of this prompt. ".repeat(23).slice(0, 1024);

/** An engine's answer, one event per read, each read a turn of the event loop later. */
function sse(): Response {
  let i = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(c) {
      await Promise.resolve();
      if (i < EVENTS.length) c.enqueue(EVENTS[i++]!.slice());
      else c.close();
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream" } });
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const make = (on: boolean) => {
  const h = harness({
    workers: [
      { id: 1n, url: "http://w1:1" },
      { id: 2n, url: "http://w2:2" },
    ],
    blockSize: 16,
    fetch: async () => sse(),
    migration: on
      ? {
          maxMoves: 2,
          migrateAfterMs: 30_000,
          keepBytes: 4 << 20,
          memory: new KeptMemory(256 << 20),
        }
      : undefined,
  });
  return async () => {
    const r = await h.request("/v1/completions", {
      json: { model: "base", prompt, max_tokens: 16, stream: true },
    });
    const text = await r.text();
    if (!text.endsWith("data: [DONE]\n\n"))
      throw new Error(`incomplete answer: ${text.slice(-80)}`);
  };
};
const configs = [
  { name: "migration off (--max-migrations 0)", run: make(false) },
  {
    name: AA ? "migration off again (--aa: the noise floor)" : "migration on (defaults)",
    run: make(!AA),
  },
];
const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
for (const c of configs) for (let i = 0; i < 500; i++) await c.run();
const us: number[][] = configs.map(() => []);
for (let round = 0; round < ROUNDS; round++) {
  for (let k = 0; k < configs.length; k++) {
    const i = (round + k) % configs.length;
    const t0 = cpu();
    for (let n = 0; n < REQUESTS; n++) await configs[i]!.run();
    us[i]!.push((cpu() - t0) / REQUESTS);
  }
}
const off = us[0]!;
const on = us[1]!;
const diff = median(on.map((x, i) => x - off[i]!));
console.log(
  `request path in one process: ${REQUESTS} streamed completions (1024-token prompt, 16 tokens, one event per read) per config per round, ${ROUNDS} rounds interleaved`,
);
console.log("| config | CPU µs / request (median) |\n|---|---:|");
for (const [k, c] of configs.entries()) console.log(`| ${c.name} | ${median(us[k]!).toFixed(1)} |`);
console.log(
  `migration on − off, same round (median): ${diff >= 0 ? "+" : ""}${diff.toFixed(1)} µs (${((100 * diff) / median(off)).toFixed(1)} %)`,
);
