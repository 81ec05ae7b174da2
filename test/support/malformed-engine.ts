/**
 * An engine that answers its completions with malformed HTTP, for tests of what the router
 * does with a broken answer: a raw TCP server (Bun.listen, in the test's process) that
 * answers GET /health, /v1/engine/info, /v1/models and /kv/query properly, and every POST
 * with `answer()`'s bytes as they are. It counts the POSTs and the connections their peer
 * (the router) closed, so a test can see the engine connection was closed.
 */
import type { TCPSocketListener } from "bun";

export interface MalformedEngine {
  readonly url: string;
  /** POST requests received. */
  posts: number;
  /** Connections that carried a POST and were closed by the router. */
  closedByPeer: number;
  /** The bytes every POST is answered with (changeable). */
  answer: string;
  stop(): void;
}

const ok = (json: unknown) => {
  const body = JSON.stringify(json);
  return `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
};

const GETS: Record<string, string> = {
  "/health": ok({ status: "ok" }),
  "/v1/engine/info": ok({ dp_ranks: 1, block_size: 16, loras: [] }),
  "/v1/models": ok({ object: "list", data: [{ id: "malformed-sim", object: "model" }] }),
};

export function startMalformedEngine(answer: string): MalformedEngine {
  const engine: MalformedEngine = {
    url: "",
    posts: 0,
    closedByPeer: 0,
    answer,
    stop: () => server.stop(true),
  };
  const server: TCPSocketListener<{ buf: string; posted: boolean }> = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(s) {
        s.data = { buf: "", posted: false };
      },
      data(s, chunk) {
        s.data.buf += new TextDecoder().decode(chunk);
        for (;;) {
          const end = s.data.buf.indexOf("\r\n\r\n");
          if (end < 0) return;
          const head = s.data.buf.slice(0, end);
          const length = Number(/content-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
          if (s.data.buf.length < end + 4 + length) return;
          s.data.buf = s.data.buf.slice(end + 4 + length);
          const [method, target] = head.split(" ");
          if (method === "POST") {
            engine.posts++;
            s.data.posted = true;
            s.write(engine.answer);
          } else {
            const path = (target ?? "").split("?")[0]!;
            s.write(
              path === "/kv/query"
                ? ok({ tree_dump: { events: [], last_event_id: null } })
                : (GETS[path] ?? "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"),
            );
          }
        }
      },
      close(s) {
        if (s.data?.posted) engine.closedByPeer++;
      },
    },
  });
  (engine as { url: string }).url = `http://127.0.0.1:${server.port}`;
  return engine;
}
