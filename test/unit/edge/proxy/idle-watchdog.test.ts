/**
 * observeStream's stream-idle deadline, in both stream flavours (pull; Bun's direct stream
 * served by a real Bun.serve): engine silence past the deadline ends an SSE answer with an
 * error event and cancels the engine body; a client that reads slowly is not the engine's
 * silence and is never cut; a client that takes nothing for the deadline is cut, the engine
 * read stops while it takes nothing (backpressure) and its body is cancelled.
 */
import { afterAll, describe, expect, test } from "bun:test";
import {
  observeStream,
  type ChunkReader,
  type StreamEnd,
} from "../../../../src/edge/proxy/observe-stream.ts";
import { until } from "../../../support/processes.ts";
import { stalledClient } from "../../../support/stalled-client.ts";

const enc = new TextEncoder();
const servers: { stop(force?: boolean): void }[] = [];
afterAll(() => {
  for (const s of servers) s.stop(true);
});

/** Gives `chunks` at once, then nothing until cancelled. */
function silentAfter(chunks: string[]): ChunkReader & { cancels: number } {
  let i = 0;
  let wake: ((r: { done: boolean }) => void) | undefined;
  return {
    cancels: 0,
    async read() {
      if (i < chunks.length) return { done: false, value: enc.encode(chunks[i++]!) };
      return new Promise((resolve) => (wake = resolve));
    },
    async cancel() {
      this.cancels++;
      wake?.({ done: true });
    },
  };
}

/** Gives `n` chunks at once each (an engine that is never silent), then ends. */
function eager(n: number): ChunkReader {
  let i = 0;
  return {
    async read() {
      return i < n ? { done: false, value: enc.encode(`data: {"t":${i++}}\n\n`) } : { done: true };
    },
    async cancel() {},
  };
}

/** An engine that is never silent and never ends: chunks of `size` bytes as fast as they are read. */
function endless(size: number): ChunkReader & { reads: number; cancels: number } {
  const chunk = new Uint8Array(size).fill(97);
  let cancelled = false;
  return {
    reads: 0,
    cancels: 0,
    async read() {
      if (cancelled) return { done: true };
      this.reads++;
      return { done: false, value: chunk };
    },
    async cancel() {
      this.cancels++;
      cancelled = true;
    },
  };
}

/**
 * A real Bun.serve answering the first request with `stream` (direct streams need a server). A
 * stream can be answered once: any later request on this port gets a 503 instead of a thrown
 * "Body object should not be disturbed or locked" inside the server (seen once in CI).
 */
function serveStream(stream: ReadableStream<Uint8Array>, contentType = "text/event-stream") {
  let served = false;
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 0,
    fetch: () => {
      if (served) return new Response("this test server answers one request", { status: 503 });
      served = true;
      return new Response(stream, { headers: { "content-type": contentType } });
    },
  });
  servers.push(server);
  return server;
}

/** The stream served through a real Bun.serve, read by fetch. */
async function serveDirect(stream: ReadableStream<Uint8Array>): Promise<Response> {
  return fetch(`http://127.0.0.1:${serveStream(stream).port}/`);
}

for (const direct of [false, true]) {
  describe(`stream-idle deadline (${direct ? "direct" : "pull"} stream)`, () => {
    test("engine silence past the deadline: an error event ends the SSE answer, the engine body is cancelled", async () => {
      const ends: StreamEnd[] = [];
      const reader = silentAfter(['data: {"t":0}\n\n']);
      const first = await reader.read();
      const out = observeStream(first.value, reader, { onEnd: (how) => ends.push(how) }, direct, {
        idleMs: 40,
        sse: true,
      });
      const text = direct ? await (await serveDirect(out)).text() : await new Response(out).text();
      expect(text.startsWith('data: {"t":0}\n\n')).toBe(true);
      expect(text).toContain(
        '"type": "InternalServerError", "param": null, "code": 500}}\n\ndata: [DONE]\n\n',
      );
      expect(text.endsWith("\n\n")).toBe(true);
      expect(reader.cancels).toBe(1);
      expect(ends).toEqual(["timeout"]);
    });

    test("a client that reads slowly is not cut: only time waiting on the engine counts", async () => {
      const ends: StreamEnd[] = [];
      const out = observeStream(undefined, eager(5), { onEnd: (how) => ends.push(how) }, direct, {
        idleMs: 30,
        sse: true,
      });
      // Through a real server, as proxied answers go: the socket takes each small chunk at
      // once, however slowly the client reads it from there.
      const res = await serveDirect(out);
      const r = res.body!.getReader();
      let text = "";
      for (;;) {
        await Bun.sleep(50); // slower than the deadline, between every read
        const { done, value } = await r.read();
        if (done) break;
        text += new TextDecoder().decode(value);
      }
      expect(text).not.toContain("error");
      expect(text.split("\n\n").filter((e) => e !== "").length).toBe(5);
      expect(ends).toEqual(["done"]);
    });

    test("a client that takes nothing: the engine is read no further than the sockets hold, then both are cut at the deadline", async () => {
      const ends: StreamEnd[] = [];
      const engine = endless(64 * 1024);
      const out = observeStream(undefined, engine, { onEnd: (how) => ends.push(how) }, direct, {
        idleMs: 300,
        sse: false,
      });
      const server = serveStream(out, "application/octet-stream");
      const client = await stalledClient(server.port!, "GET / HTTP/1.1\r\nhost: test\r\n\r\n");
      const t0 = performance.now();
      await until(() => ends.length > 0, "the stalled client to be cut", 5_000);
      const ms = performance.now() - t0;
      // Before: the direct stream read the engine without waiting for the client (1 GB of an
      // engine's answer held by the router for a client that slept).
      const readMb = (engine.reads * 64 * 1024) / (1 << 20);
      expect(readMb).toBeLessThan(32); // what the kernel's socket buffers hold, not the engine's whole answer
      expect(ends).toEqual(["client_timeout"]);
      expect(engine.cancels).toBe(1);
      expect(ms).toBeGreaterThanOrEqual(250);
      expect(ms).toBeLessThan(2_000);
      if (direct) {
        // Bun's direct stream (what the router serves proxied answers with on Bun) resets the
        // connection; a pull stream's error is sent only after its buffered bytes, which this
        // client never takes, so there the end of the engine side is what is checked.
        await until(() => client.isClosed(), "the client's connection to be cut", 2_000);
      }
      client.close();
    });
  });
}

describe("a direct stream read by JavaScript, not written to a socket", () => {
  test("every chunk passes and the end is done (flush has no socket to wait for)", async () => {
    const ends: StreamEnd[] = [];
    const out = observeStream(undefined, eager(50), { onEnd: (how) => ends.push(how) }, true, {
      idleMs: 1_000,
      sse: true,
    });
    const text = await new Response(out).text();
    expect(text.split("\n\n").filter((e) => e.startsWith("data:")).length).toBe(50);
    expect(ends).toEqual(["done"]);
  });
});
