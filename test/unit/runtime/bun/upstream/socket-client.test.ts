/**
 * The socket client against real loopback servers in this process: Bun.serve for ordinary
 * answers, and raw Bun.listen servers for what a well-behaved server never does (closing
 * a kept-alive connection, breaking mid-answer, sending garbage). Ports are chosen by the OS.
 */
import { afterAll, describe, expect, test } from "bun:test";
import type { Socket, TCPSocketListener } from "bun";
import type { ChunkReader } from "../../../../../src/edge/proxy/observe-stream.ts";
import type { UpstreamResponse } from "../../../../../src/edge/proxy/upstream.ts";
import { SocketHttpClient } from "../../../../../src/runtime/bun/upstream/socket-client.ts";
import { until } from "../../../../support/processes.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const stops: (() => void)[] = [];
afterAll(() => {
  for (const s of stops) s();
});

async function readAll(reader: ChunkReader | null): Promise<string> {
  let out = "";
  if (!reader) return out;
  for (;;) {
    const r = await reader.read();
    if (r.done) return out;
    out += dec.decode(r.value);
  }
}

function headerOf(res: UpstreamResponse, name: string): string | undefined {
  for (let i = 0; i < res.headers.length; i += 2)
    if (res.headers[i] === name) return res.headers[i + 1];
  return undefined;
}

/** A Bun.serve that echoes what it got and counts connections (by client port). */
function echoServer() {
  const peers = new Set<number>();
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req, srv) {
      peers.add(srv.requestIP(req)!.port);
      const body = await req.text();
      const url = new URL(req.url);
      if (url.pathname === "/stream") {
        const parts = Number(url.searchParams.get("n") ?? 3);
        let i = 0;
        return new Response(
          new ReadableStream({
            async pull(c) {
              if (i < parts) c.enqueue(enc.encode(`data: ${i++}\n\n`));
              else c.close();
            },
          }),
          { headers: { "content-type": "text/event-stream" } },
        );
      }
      return Response.json(
        {
          path: url.pathname,
          body,
          host: req.headers.get("host"),
          length: req.headers.get("content-length"),
          x: req.headers.get("x-test"),
        },
        { status: url.pathname === "/created" ? 201 : 200, headers: { "X-Upstream": "Yes" } },
      );
    },
  });
  stops.push(() => server.stop(true));
  return { url: `http://127.0.0.1:${server.port}`, peers };
}

/** A raw server: `onRequest` gets the socket once a whole request head (and body) arrived. */
function rawServer(onRequest: (s: Socket<{ buf: string; n: number }>, n: number) => void): {
  url: string;
  listener: TCPSocketListener<{ buf: string; n: number }>;
} {
  let conns = 0;
  const listener = Bun.listen<{ buf: string; n: number }>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(s) {
        s.data = { buf: "", n: ++conns };
      },
      data(s, d) {
        s.data.buf += dec.decode(d);
        const end = s.data.buf.indexOf("\r\n\r\n");
        if (end < 0) return;
        const len = Number(/content-length: (\d+)/i.exec(s.data.buf)?.[1] ?? 0);
        if (s.data.buf.length < end + 4 + len) return;
        s.data.buf = s.data.buf.slice(end + 4 + len);
        onRequest(s, s.data.n);
      },
    },
  });
  stops.push(() => listener.stop(true));
  return { url: `http://127.0.0.1:${listener.port}`, listener };
}

const post = (body = "{}", headers: Record<string, string> = {}) => ({
  headers,
  body: enc.encode(body),
});

describe("answers", () => {
  test("POST with headers and body; status, lower-case headers and body come back", async () => {
    const s = echoServer();
    const client = new SocketHttpClient();
    const res = await client.request(
      s.url,
      "/created",
      post('{"a":1}', { "x-test": "v", "content-type": "application/json" }),
    );
    expect(res.status).toBe(201);
    expect(headerOf(res, "x-upstream")).toBe("Yes");
    const got = JSON.parse(await readAll(res.body));
    expect(got).toEqual({
      path: "/created",
      body: '{"a":1}',
      host: s.url.slice("http://".length),
      length: "7",
      x: "v",
    });
  });

  test("the client's own framing headers win over given ones", async () => {
    const s = echoServer();
    const res = await new SocketHttpClient().request(
      s.url,
      "/",
      post("abc", { host: "evil", "content-length": "999", connection: "close" }),
    );
    const got = JSON.parse(await readAll(res.body));
    expect(got.host).toBe(s.url.slice("http://".length));
    expect(got.length).toBe("3");
  });

  test("a streamed answer arrives chunk by chunk, in order", async () => {
    const s = echoServer();
    const res = await new SocketHttpClient().request(s.url, "/stream?n=5", post());
    expect(headerOf(res, "content-type")).toBe("text/event-stream");
    expect(await readAll(res.body)).toBe("data: 0\n\ndata: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\n");
  });

  test("drained: true once the whole answer has arrived and been read, not before", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const s = rawServer(async (sock, n) => {
      if (n === 1) {
        sock.write("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nwhole");
        return;
      }
      sock.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\npart\r\n");
      await gate;
      sock.write("0\r\n\r\n");
    });
    const whole = await new SocketHttpClient({ maxIdlePerOrigin: 0 }).request(s.url, "/", post());
    expect(dec.decode((await whole.body!.read()).value)).toBe("whole");
    expect(whole.body!.drained).toBe(true);
    const partial = await new SocketHttpClient().request(s.url, "/", post());
    expect(dec.decode((await partial.body!.read()).value)).toBe("part");
    expect(partial.body!.drained).toBe(false);
    release();
    expect(await partial.body!.read()).toEqual({ done: true });
    expect(partial.body!.drained).toBe(true);
  });

  test("the first chunk is readable before the server sent the rest", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const s = rawServer(async (sock) => {
      sock.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n");
      await gate;
      sock.write("4\r\nlast\r\n0\r\n\r\n");
    });
    const res = await new SocketHttpClient().request(s.url, "/", post());
    const first = await res.body!.read();
    expect(dec.decode(first.value)).toBe("first");
    release();
    expect(await readAll(res.body)).toBe("last");
  });

  test("a large request body is written whole (partial writes continue on drain)", async () => {
    const server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: async (req) => new Response(String((await req.arrayBuffer()).byteLength)),
    });
    stops.push(() => server.stop(true));
    const big = new Uint8Array(12 << 20).fill(120);
    const res = await new SocketHttpClient().request(`http://127.0.0.1:${server.port}`, "/", {
      headers: {},
      body: big,
    });
    expect(await readAll(res.body)).toBe(String(big.length));
  });

  test("a large answer read slowly arrives whole (the socket pauses and resumes)", async () => {
    const big = "x".repeat(3 << 20);
    const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(big) });
    stops.push(() => server.stop(true));
    const client = new SocketHttpClient({ highWaterBytes: 64 * 1024 });
    const res = await client.request(`http://127.0.0.1:${server.port}`, "/", post());
    let n = 0;
    for (;;) {
      const r = await res.body!.read();
      if (r.done) break;
      n += r.value!.length;
      await Bun.sleep(0);
    }
    expect(n).toBe(big.length);
  });
});

describe("connections", () => {
  test("kept alive: sequential requests share one connection", async () => {
    const s = echoServer();
    const client = new SocketHttpClient();
    for (let i = 0; i < 5; i++)
      await readAll((await client.request(s.url, "/", post(String(i)))).body);
    expect(s.peers.size).toBe(1);
    expect(client.idleCount(s.url)).toBe(1);
  });

  test("concurrent requests each get a connection, all pooled afterwards", async () => {
    const s = echoServer();
    const client = new SocketHttpClient();
    const bodies = await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        client.request(s.url, "/", post(String(i))).then((r) => readAll(r.body)),
      ),
    );
    expect(bodies.map((b) => JSON.parse(b).body)).toEqual(["0", "1", "2", "3"]);
    expect(client.idleCount(s.url)).toBe(4);
  });

  test("connection: close answers are not pooled", async () => {
    const s = rawServer((sock) =>
      sock.write("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"),
    );
    const client = new SocketHttpClient();
    expect(await readAll((await client.request(s.url, "/", post())).body)).toBe("ok");
    expect(client.idleCount(s.url)).toBe(0);
  });

  test("a pooled connection the server closed while idle leaves the pool; the next request opens a new one", async () => {
    const seen: number[] = [];
    let idleClose!: () => void;
    const s = rawServer((sock, n) => {
      seen.push(n);
      // Answers as if it kept the connection, then drops it (an idle timeout).
      sock.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
      if (n === 1) idleClose = () => sock.end();
    });
    const client = new SocketHttpClient();
    expect(await readAll((await client.request(s.url, "/", post())).body)).toBe("ok");
    expect(client.idleCount(s.url)).toBe(1);
    idleClose();
    await until(() => client.idleCount(s.url) === 0, "the closed connection to leave the pool");
    expect(await readAll((await client.request(s.url, "/", post())).body)).toBe("ok");
    expect(seen).toEqual([1, 2]);
  });

  test("a pooled connection that dies as the request is sent is retried once, transparently", async () => {
    const seen: number[] = [];
    const s = rawServer((sock, n) => {
      seen.push(n);
      if (n === 1 && seen.length === 2)
        sock.terminate(); // 2nd request on connection 1: dropped unanswered
      else sock.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    });
    const client = new SocketHttpClient();
    expect(await readAll((await client.request(s.url, "/", post())).body)).toBe("ok");
    expect(await readAll((await client.request(s.url, "/", post())).body)).toBe("ok");
    expect(seen).toEqual([1, 1, 2]);
  });

  test("connections idle longer than maxIdleMs are closed, not reused", async () => {
    const s = echoServer();
    let clock = 0;
    const client = new SocketHttpClient({ maxIdleMs: 100, now: () => clock });
    await readAll((await client.request(s.url, "/", post())).body);
    clock = 500;
    await readAll((await client.request(s.url, "/", post())).body);
    expect(s.peers.size).toBe(2);
  });

  test("closeIdle closes pooled connections", async () => {
    const s = echoServer();
    const client = new SocketHttpClient();
    await readAll((await client.request(s.url, "/", post())).body);
    expect(client.idleCount(s.url)).toBe(1);
    client.closeIdle();
    expect(client.idleCount(s.url)).toBe(0);
  });
});

describe("failures", () => {
  test("connection refused rejects (the proxy then tries another worker)", async () => {
    const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = probe.port;
    probe.stop(true);
    await expect(
      new SocketHttpClient().request(`http://127.0.0.1:${port}`, "/", post()),
    ).rejects.toThrow();
  });

  test("a new connection closed before any answer byte rejects", async () => {
    const s = rawServer((sock) => sock.end());
    await expect(new SocketHttpClient().request(s.url, "/", post())).rejects.toThrow(
      /before any answer byte/,
    );
  });

  test("garbage instead of an answer rejects", async () => {
    const s = rawServer((sock) => sock.write("SSH-2.0-OpenSSH\r\n\r\n"));
    await expect(new SocketHttpClient().request(s.url, "/", post())).rejects.toThrow(
      /bad status line/,
    );
  });

  test("a connection broken mid-answer makes the next read reject; it is not pooled", async () => {
    const s = rawServer((sock) => {
      sock.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
      sock.end();
    });
    const client = new SocketHttpClient();
    const res = await client.request(s.url, "/", post());
    expect(dec.decode((await res.body!.read()).value)).toBe("hello");
    await expect(res.body!.read()).rejects.toThrow(/before the response was complete/);
    expect(client.idleCount(s.url)).toBe(0);
  });

  test("bytes after a complete answer: the answer stands, the connection is dropped", async () => {
    const s = rawServer((sock) =>
      sock.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA"),
    );
    const client = new SocketHttpClient();
    const res = await client.request(s.url, "/", post());
    expect(await readAll(res.body)).toBe("ok");
    expect(client.idleCount(s.url)).toBe(0);
  });

  test("cancel mid-answer closes the connection (the server sees it) and pools nothing", async () => {
    let closed!: () => void;
    const serverSawClose = new Promise<void>((r) => (closed = r));
    const listener = Bun.listen<undefined>({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        data(sock) {
          sock.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
        },
        close() {
          closed();
        },
      },
    });
    stops.push(() => listener.stop(true));
    const url = `http://127.0.0.1:${listener.port}`;
    const client = new SocketHttpClient();
    const res = await client.request(url, "/", post());
    await res.body!.read();
    await res.body!.cancel();
    expect(await res.body!.read()).toEqual({ done: true });
    await serverSawClose;
    expect(client.idleCount(url)).toBe(0);
  });

  test("a header value with a line break is refused before anything is sent", async () => {
    const s = echoServer();
    await expect(
      new SocketHttpClient().request(s.url, "/", post("{}", { "x-evil": "a\r\nx-injected: 1" })),
    ).rejects.toThrow(/line break/);
  });

  test("URLs other than http:// go to the fallback; without one they reject", async () => {
    const calls: string[] = [];
    const fallback = async (base: string, path: string) => {
      calls.push(base + path);
      return { status: 200, statusText: "OK", headers: [], body: null };
    };
    const res = await new SocketHttpClient({ fallback }).request(
      "https://example.invalid",
      "/v1/x",
      post(),
    );
    expect(res.status).toBe(200);
    expect(calls).toEqual(["https://example.invalid/v1/x"]);
    await expect(
      new SocketHttpClient().request("https://example.invalid", "/", post()),
    ).rejects.toThrow(/unsupported upstream URL/);
  });
});
