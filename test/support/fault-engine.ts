/**
 * A small real engine that misbehaves on demand, for chaos tests: `bun test/support/fault-engine.ts
 * [--port 0] [--mode ok]` prints `{"url","port"}` once it listens; SIGTERM stops it.
 *
 * It speaks just enough of the engine contract to be registered (GET /health, /v1/engine/info,
 * /v1/models, /kv/query with an empty dump) and answers POST /v1/completions and
 * /v1/chat/completions according to its mode, switchable at run time with POST /fault
 * {"mode": ...}:
 * - `ok`: an SSE answer of 4 events, `--chunk-ms` apart (default 5), then [DONE];
 * - `error500`: 500 in OpenAI's error shape;
 * - `cut`: the answer's head and one event, then the connection is dropped mid-answer;
 * - `hang`: never answers (the request is held; /health stays 200);
 * - `stall`: the head and one event, then silence (the stream stays open);
 * - `garbage`: the head and two events, then (once POST /release was called) an error event
 *   mid-answer and the end of the stream, as an engine failing after its first token does;
 * - `flood`: an SSE answer of `--flood-mb` MiB (default 256) in 64 KiB events, as fast as the
 *   connection takes them (a huge answer, for backpressure tests).
 * GET /stats: `{"requests", "closed_by_peer", "open", "bytes_sent"}` — requests whose client closed the
 * connection before the answer was complete, as the engine saw it (request.signal), requests
 * still being answered or held, and answer bytes handed to the connection.
 */
import { parseArgs } from "node:util";

export type FaultMode = "ok" | "error500" | "cut" | "hang" | "stall" | "flood" | "garbage";
const MODES: readonly FaultMode[] = ["ok", "error500", "cut", "hang", "stall", "flood", "garbage"];
/** `garbage` streams send their error event once this is true (POST /release). */
let released = false;

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: {
    port: { type: "string", default: "0" },
    mode: { type: "string", default: "ok" },
    "chunk-ms": { type: "string", default: "5" },
    "flood-mb": { type: "string", default: "256" },
  },
});
let mode = values.mode as FaultMode;
if (!MODES.includes(mode)) throw new Error(`--mode must be one of ${MODES.join(", ")}`);
const chunkMs = Number(values["chunk-ms"]);
const floodBytes = Number(values["flood-mb"]) * (1 << 20);

const stats = { requests: 0, closed_by_peer: 0, open: 0, bytes_sent: 0 };
const enc = new TextEncoder();
const event = (i: number) =>
  enc.encode(
    `data: {"id":"f","object":"text_completion","choices":[{"index":0,"text":"t${i} "}]}\n\n`,
  );
const SSE = { "content-type": "text/event-stream" };

function answer(req: Request): Response | Promise<Response> {
  stats.requests++;
  stats.open++;
  let finished = false;
  const done = () => {
    if (!finished) {
      finished = true;
      stats.open--;
    }
  };
  req.signal.addEventListener(
    "abort",
    () => {
      if (!finished) stats.closed_by_peer++;
      done();
    },
    { once: true },
  );
  switch (mode) {
    case "error500":
      done();
      return Response.json(
        {
          error: {
            message: "engine failure (fault-engine)",
            type: "server_error",
            code: null,
            param: null,
          },
        },
        { status: 500 },
      );
    case "hang":
      return new Promise<Response>(() => {});
    case "flood": {
      // One 64 KiB SSE event, reused: the engine itself holds nothing, so what grows is the router.
      const ev = enc.encode(`data: {"choices":[{"text":"${"x".repeat(64 * 1024 - 40)}"}]}\n\n`);
      let sent = 0;
      return new Response(
        new ReadableStream<Uint8Array>(
          {
            pull(c) {
              if (sent >= floodBytes) {
                c.enqueue(enc.encode("data: [DONE]\n\n"));
                done();
                c.close();
                return;
              }
              sent += ev.length;
              stats.bytes_sent += ev.length;
              c.enqueue(ev);
            },
          },
          { highWaterMark: 0 },
        ),
        { headers: SSE },
      );
    }
    case "garbage": {
      let sent = 0;
      return new Response(
        new ReadableStream<Uint8Array>({
          async pull(c) {
            if (sent < 2) {
              c.enqueue(event(sent++));
              return;
            }
            while (!released) await Bun.sleep(5);
            c.enqueue(
              enc.encode(
                'data: {"error":{"message":"engine failed mid-answer (fault-engine)","type":"server_error","code":500}}\n\n',
              ),
            );
            done();
            c.close();
          },
        }),
        { headers: SSE },
      );
    }
    case "cut":
    case "stall": {
      const cut = mode === "cut";
      let sent = 0;
      return new Response(
        new ReadableStream<Uint8Array>({
          async pull(c) {
            if (sent === 0) {
              sent++;
              c.enqueue(event(0));
              return;
            }
            if (cut) {
              await Bun.sleep(chunkMs);
              done();
              c.error(new Error("fault-engine: connection cut")); // Bun drops the connection mid-answer
              return;
            }
            await new Promise(() => {}); // stall: nothing more, ever
          },
        }),
        { headers: SSE },
      );
    }
    default: {
      let i = 0;
      return new Response(
        new ReadableStream<Uint8Array>({
          async pull(c) {
            if (i > 0) await Bun.sleep(chunkMs);
            if (i < 4) c.enqueue(event(i++));
            else {
              c.enqueue(enc.encode("data: [DONE]\n\n"));
              done();
              c.close();
            }
          },
        }),
        { headers: SSE },
      );
    }
  }
}

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: Number(values.port),
  idleTimeout: 0,
  async fetch(req, srv) {
    const path = new URL(req.url).pathname;
    switch (`${req.method} ${path}`) {
      case "GET /health":
        return Response.json({ status: "ok" });
      case "GET /v1/engine/info":
        return Response.json({ dp_ranks: 1, block_size: 16, loras: [] });
      case "GET /v1/models":
        return Response.json({ object: "list", data: [{ id: "fault-sim", object: "model" }] });
      case "GET /kv/query":
        return Response.json({ tree_dump: { events: [], last_event_id: null } });
      case "POST /release":
        released = true;
        return Response.json({ released });
      case "GET /stats":
        return Response.json(stats);
      case "POST /fault": {
        const m = ((await req.json()) as { mode?: string }).mode as FaultMode;
        if (!MODES.includes(m))
          return Response.json(
            { error: `mode must be one of ${MODES.join(", ")}` },
            { status: 400 },
          );
        mode = m;
        return Response.json({ mode });
      }
      case "POST /v1/completions":
      case "POST /v1/chat/completions":
        await req.arrayBuffer();
        srv.timeout(req, 0);
        return answer(req);
      default:
        return new Response("not found", { status: 404 });
    }
  },
});

console.log(JSON.stringify({ url: `http://127.0.0.1:${server.port}`, port: server.port }));
process.on("SIGTERM", () => {
  server.stop(true);
  process.exit(0);
});
