/**
 * What a refused request costs the router (issue 48 point 4's probe): 4 clients send 15 MB
 * text prompts for 5 s, one after another each, while /livez is polled every 10 ms. Reports
 * /livez p50 / p99 / max, the router's RSS before and at its peak, and how the bodies were
 * answered. Real router and engine processes (`bun src/main.ts serve | mocker`); the clients
 * run in a process of their own, so writing 15 MB bodies never delays the /livez poller.
 *
 *   bun bench/protect/refused-bodies.ts [--seconds 5] [--clients 4] [--mb 15] [--chunked] [--router-flags "--max-prompt-chars 16000000"]
 *
 * Targets (issue 48): /livez p99 <= 50 ms and RSS growth <= 64 MB. Figures depend on the
 * machine: give them with its load.
 */
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { startMain, stopAll } from "../../test/support/processes.ts";

const own = process.argv.slice(2);
const rf = own.indexOf("--router-flags");
const routerFlags = rf >= 0 ? own[rf + 1]!.split(" ").filter((s) => s !== "") : [];
const opt = (name: string, dflt: number): number => {
  const i = own.indexOf(name);
  return i >= 0 ? Number(own[i + 1]) : dflt;
};
const SECONDS = opt("--seconds", 5);
const CLIENTS = opt("--clients", 4);
const MB = opt("--mb", 15);
const CHUNKED = own.includes("--chunked");

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : 0;
}

function pct(sorted: number[], p: number): number {
  return sorted.length === 0
    ? NaN
    : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** One POST of `body` over a raw socket (Content-Length, or chunked in 64 KiB pieces); resolves with the status line. */
function post(port: number, body: Buffer): Promise<string> {
  return new Promise((resolve) => {
    const sock = connect(port, "127.0.0.1");
    let head = "";
    const done = (s: string) => {
      sock.destroy();
      resolve(s);
    };
    sock.on("data", (d: Buffer) => {
      head += d.toString("latin1");
      const eol = head.indexOf("\r\n");
      if (eol >= 0) done(head.slice(0, eol));
    });
    sock.on("error", () => done("socket error"));
    sock.on("close", () => done(head.split("\r\n")[0] || "closed"));
    const h = `POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n`;
    if (!CHUNKED) {
      sock.write(`${h}Content-Length: ${body.length}\r\n\r\n`);
      sock.write(body);
    } else {
      sock.write(`${h}Transfer-Encoding: chunked\r\n\r\n`);
      for (let off = 0; off < body.length; off += 65536) {
        const part = body.subarray(off, off + 65536);
        sock.write(`${part.length.toString(16)}\r\n`);
        sock.write(part);
        sock.write("\r\n");
      }
      sock.write("0\r\n\r\n");
    }
  });
}

const floodAt = own.indexOf("--flood");
if (floodAt >= 0) {
  // The client process: CLIENTS loops of POSTs until the deadline, then the answers as JSON.
  const port = Number(own[floodAt + 1]);
  const body = Buffer.from(
    JSON.stringify({
      model: "switchyard-sim",
      prompt: "x".repeat(MB * 1_000_000 - 60),
      max_tokens: 1,
    }),
  );
  const answers = new Map<string, number>();
  const end = performance.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < end) {
        const status = await post(port, body);
        answers.set(status, (answers.get(status) ?? 0) + 1);
      }
    }),
  );
  console.log(JSON.stringify(Object.fromEntries(answers)));
  process.exit(0);
}

const engine = await startMain(["mocker", "--port", "0"]);
const router = await startMain([
  "serve",
  "--port",
  "0",
  "--host",
  "127.0.0.1",
  "--worker",
  String(engine.info.url),
  "--log-level",
  "error",
  ...routerFlags,
]);
const port = Number(new URL(String(router.info.url)).port);
try {
  await Bun.sleep(300);
  const rssBefore = rssMb(router.pid);
  let rssPeak = rssBefore;
  const livez: number[] = [];
  const flood = Bun.spawn({
    cmd: [
      process.execPath,
      import.meta.path,
      "--flood",
      String(port),
      "--seconds",
      String(SECONDS),
      "--clients",
      String(CLIENTS),
      "--mb",
      String(MB),
      ...(CHUNKED ? ["--chunked"] : []),
    ],
    stdout: "pipe",
    stderr: "inherit",
  });
  // The client process builds its body first; start the clock when it is under way.
  await Bun.sleep(200);
  const end = performance.now() + SECONDS * 1000;
  const poll = (async () => {
    while (performance.now() < end) {
      const t = performance.now();
      await (await fetch(`${router.info.url}/livez`)).arrayBuffer();
      livez.push(performance.now() - t);
      rssPeak = Math.max(rssPeak, rssMb(router.pid));
      await Bun.sleep(10);
    }
  })();
  await poll;
  const answers = JSON.parse((await new Response(flood.stdout).text()).trim() || "{}") as Record<
    string,
    number
  >;
  await flood.exited;
  livez.sort((a, b) => a - b);
  const f = (x: number) => x.toFixed(1);
  console.log(
    JSON.stringify({
      clients: CLIENTS,
      body_mb: MB,
      framing: CHUNKED ? "chunked" : "content-length",
      router_flags: routerFlags.join(" "),
      livez_samples: livez.length,
      livez_p50_ms: f(pct(livez, 50)),
      livez_p99_ms: f(pct(livez, 99)),
      livez_max_ms: f(livez[livez.length - 1] ?? NaN),
      rss_before_mb: Math.round(rssBefore),
      rss_peak_mb: Math.round(rssPeak),
      rss_growth_mb: Math.round(rssPeak - rssBefore),
      answers,
    }),
  );
} finally {
  await stopAll([router, engine]);
}
