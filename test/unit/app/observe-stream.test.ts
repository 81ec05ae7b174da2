import { describe, expect, test } from "bun:test";
import { observeStream, type StreamEnd } from "../../../src/app/proxy/observe-stream.ts";

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
    const chunks = ["data: {\"t\":1}\n\n", "data: {\"t\":2}\n", "\n", "data: [DONE]\n\n"];
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
    const out = observeStream(undefined, source(["data: {}\n\n"], 1).getReader(), { onEnd: (how) => ends.push(how) });
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
