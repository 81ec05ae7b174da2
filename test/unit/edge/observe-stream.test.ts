import { describe, expect, test } from "bun:test";
import { observeStream, type StreamEnd } from "../../../src/edge/proxy/observe-stream.ts";

const enc = (s: string) => new TextEncoder().encode(s);

function source(chunks: string[], failAt?: number): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream<Uint8Array>({
    pull(c) {
      if (i === failAt) {
        c.error(new Error("upstream reset"));
        return;
      }
      if (i >= chunks.length) c.close();
      else c.enqueue(enc(chunks[i++]!));
    },
  });
}

async function readAll(s: ReadableStream<Uint8Array>): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  const r = s.getReader();
  for (;;) {
    const { done, value } = await r.read();
    if (done) return out;
    out.push(value);
  }
}

describe("observeStream", () => {
  test("passes every chunk through unchanged, in order, and reports token counts and the end once", async () => {
    const chunks = [
      'data: {"choices":[{"text":"a"}]}\n\n',
      'data: {"choices":[{"text":"b"}]}\n',
      "\n",
      "data: [DONE]\n\n",
    ];
    const totals: number[] = [];
    const ends: [StreamEnd, number][] = [];
    const upstream = source(chunks).getReader();
    const first = await upstream.read();
    const out = observeStream(first.done ? undefined : first.value, upstream, {
      onTokens: (n) => totals.push(n),
      onEnd: (how, n) => ends.push([how, n]),
    });
    const got = await readAll(out);
    expect(got.map((b) => new TextDecoder().decode(b))).toEqual(chunks);
    expect(totals).toEqual([1, 2]);
    expect(ends).toEqual([["done", 2]]);
  });

  test("an upstream error mid-stream reaches the reader and ends the stream as error", async () => {
    const ends: StreamEnd[] = [];
    const out = observeStream(undefined, source(["data: {}\n\n"], 1).getReader(), {
      onEnd: (how) => ends.push(how),
    });
    await expect(readAll(out)).rejects.toThrow("upstream reset");
    expect(ends).toEqual(["error"]);
  });

  test("a client that cancels ends the stream once as cancelled and cancels upstream", async () => {
    const ends: StreamEnd[] = [];
    let upstreamCancelled = false;
    const upstream = new ReadableStream<Uint8Array>({
      pull(c) {
        c.enqueue(enc("data: {}\n\n"));
      },
      cancel() {
        upstreamCancelled = true;
      },
    });
    const out = observeStream(undefined, upstream.getReader(), { onEnd: (how) => ends.push(how) });
    const r = out.getReader();
    await r.read();
    await r.cancel("client left");
    await r.cancel("again").catch(() => {});
    expect(ends).toEqual(["cancelled"]);
    expect(upstreamCancelled).toBe(true);
  });
});

describe("observeStream, Bun direct flavour (served through Bun.serve)", () => {
  async function serveObserved(
    upstream: ReadableStream<Uint8Array>,
    ends: StreamEnd[],
    totals: number[],
  ) {
    const server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: () =>
        new Response(
          observeStream(
            undefined,
            upstream.getReader(),
            { onTokens: (n) => totals.push(n), onEnd: (how) => ends.push(how) },
            true,
          ),
        ),
    });
    return server;
  }

  test("bytes arrive unchanged and the end is reported once as done", async () => {
    const ends: StreamEnd[] = [];
    const totals: number[] = [];
    const chunks = [
      'data: {"choices":[{"text":"a"}]}\n\n',
      'data: {"choices":[{"text":"b"}]}\n\n',
      "data: [DONE]\n\n",
    ];
    const server = await serveObserved(source(chunks), ends, totals);
    try {
      const text = await (await fetch(`http://127.0.0.1:${server.port}/`)).text();
      expect(text).toBe(chunks.join(""));
      expect(totals).toEqual([1, 2]);
      expect(ends).toEqual(["done"]);
    } finally {
      server.stop(true);
    }
  });

  test("an upstream error mid-stream breaks the client's connection and ends as error", async () => {
    const ends: StreamEnd[] = [];
    const server = await serveObserved(source(["data: {}\n\n"], 1), ends, []);
    try {
      await expect(
        fetch(`http://127.0.0.1:${server.port}/`).then((r) => r.text()),
      ).rejects.toThrow();
      expect(ends).toEqual(["error"]);
    } finally {
      server.stop(true);
    }
  });
});

/** A reader over fixed chunks that says when it is drained and counts its reads. */
function drainingReader(chunks: string[]) {
  let i = 0;
  return {
    reads: 0,
    get drained() {
      return i >= chunks.length;
    },
    async read() {
      this.reads++;
      return i < chunks.length ? { done: false, value: enc(chunks[i++]!) } : { done: true };
    },
    async cancel() {},
  };
}

describe("observeStream with a reader that knows it is drained", () => {
  const chunks = [
    'data: {"choices":[{"text":"a"}]}\n\n',
    'data: {"choices":[{"text":"b"}]}\n\ndata: [DONE]\n\n',
  ];

  test("pull flavour: ends right after the last chunk, without another read", async () => {
    const reader = drainingReader(chunks);
    const first = await reader.read();
    const ends: [StreamEnd, number][] = [];
    const out = observeStream(first.value, reader, { onEnd: (how, n) => ends.push([how, n]) });
    const got = await readAll(out);
    expect(got.map((b) => new TextDecoder().decode(b))).toEqual(chunks);
    expect(reader.reads).toBe(2);
    expect(ends).toEqual([["done", 2]]);
  });

  test("direct flavour: same bytes, one end, no read after the last chunk; also when the first chunk is the last", async () => {
    for (const parts of [chunks, [chunks.join("")]]) {
      const reader = drainingReader(parts);
      const first = await reader.read();
      const ends: [StreamEnd, number][] = [];
      const server = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        fetch: () =>
          new Response(
            observeStream(first.value, reader, { onEnd: (how, n) => ends.push([how, n]) }, true),
          ),
      });
      try {
        expect(await (await fetch(`http://127.0.0.1:${server.port}/`)).text()).toBe(
          chunks.join(""),
        );
        expect(reader.reads).toBe(parts.length);
        expect(ends).toEqual([["done", 2]]);
      } finally {
        server.stop(true);
      }
    }
  });
});
