/**
 * observeStream's stream-idle deadline, in both stream flavours (pull; Bun's direct stream
 * served by a real Bun.serve): engine silence past the deadline ends an SSE answer with an
 * error event and cancels the engine body; a client that reads slowly is not the engine's
 * silence and is never cut.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { observeStream, type ChunkReader, type StreamEnd } from "../../../../src/edge/proxy/observe-stream.ts";

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

/** The stream served through a real Bun.serve (direct streams need a server), read by fetch. */
async function serveDirect(stream: ReadableStream<Uint8Array>): Promise<Response> {
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(stream, { headers: { "content-type": "text/event-stream" } }) });
  servers.push(server);
  return fetch(`http://127.0.0.1:${server.port}/`);
}

for (const direct of [false, true]) {
  describe(`stream-idle deadline (${direct ? "direct" : "pull"} stream)`, () => {
    test("engine silence past the deadline: an error event ends the SSE answer, the engine body is cancelled", async () => {
      const ends: StreamEnd[] = [];
      const reader = silentAfter(['data: {"t":0}\n\n']);
      const first = await reader.read();
      const out = observeStream(first.value, reader, { onEnd: (how) => ends.push(how) }, direct, { idleMs: 40, sse: true });
      const text = direct ? await (await serveDirect(out)).text() : await new Response(out).text();
      expect(text.startsWith('data: {"t":0}\n\n')).toBe(true);
      expect(text).toContain('"code":"stream_idle_timeout"');
      expect(text.endsWith("\n\n")).toBe(true);
      expect(reader.cancels).toBe(1);
      expect(ends).toEqual(["timeout"]);
    });

    test("a client that reads slowly is not cut: only time waiting on the engine counts", async () => {
      const ends: StreamEnd[] = [];
      const out = observeStream(undefined, eager(5), { onEnd: (how) => ends.push(how) }, direct, { idleMs: 30, sse: true });
      const res = direct ? await serveDirect(out) : new Response(out);
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
  });
}
