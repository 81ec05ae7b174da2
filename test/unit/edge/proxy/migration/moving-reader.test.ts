/**
 * The moving reader (src/edge/proxy/migration/moving-reader.ts) over scripted upstream readers
 * and a recording host: bytes pass unchanged while nothing fails (only re-cut at event ends),
 * what it keeps is given back when the stream ends, a failure moves the stream with the text
 * so far, and a stream that cannot move ends as it would without migration.
 */
import { describe, expect, test } from "bun:test";
import { KeptMemory } from "../../../../../src/edge/proxy/migration/kept-memory.ts";
import {
  MovingReader,
  type Continuation,
  type MoveHost,
} from "../../../../../src/edge/proxy/migration/moving-reader.ts";
import type { ChunkReader } from "../../../../../src/edge/proxy/observe-stream.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Reads `chunks` in order, then ends (or throws `fail`). */
function scripted(chunks: readonly string[], fail?: Error): ChunkReader & { cancelled: boolean } {
  let i = 0;
  const r = {
    cancelled: false,
    async read() {
      if (i < chunks.length) return { done: false, value: enc.encode(chunks[i++]!) };
      if (fail !== undefined) throw fail;
      return { done: true };
    },
    async cancel() {
      r.cancelled = true;
    },
  };
  return r;
}

const ev = (text: string) =>
  `data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"${text}","logprobs":null,"finish_reason":null}]}\n\n`;
const last = (text: string) =>
  `data: {"id":"cmpl-2","object":"text_completion","created":2,"model":"m","choices":[{"index":0,"text":"${text}","logprobs":null,"finish_reason":"length"}]}\n\n`;

function host(next?: ChunkReader, firstChunk?: string) {
  const moves: { body: Record<string, unknown>; why: string; fence: boolean }[] = [];
  const gaveUp: string[] = [];
  const h: MoveHost = {
    workerId: 1n,
    watch: () => () => {},
    budget: () => true,
    async move(body, why, fence): Promise<Continuation | undefined> {
      moves.push({ body: JSON.parse(dec.decode(body)), why, fence });
      return next === undefined
        ? undefined
        : {
            reader: next,
            first: firstChunk !== undefined ? enc.encode(firstChunk) : undefined,
            workerId: 2n,
          };
    },
    gaveUp: (o, why) => void gaveUp.push(`${o}: ${why}`),
  };
  return { h, moves, gaveUp };
}

async function readAll(r: ChunkReader): Promise<{ chunks: string[]; error?: string }> {
  const chunks: string[] = [];
  try {
    for (;;) {
      const x = await r.read();
      if (x.done) return { chunks };
      chunks.push(dec.decode(x.value));
    }
  } catch (e) {
    return { chunks, error: (e as Error).message };
  }
}

const BODY = enc.encode(JSON.stringify({ prompt: "p", max_tokens: 5, seed: 3, stream: true }));
const limits = (memory = new KeptMemory(1 << 20), maxMoves = 2) => ({
  kind: "completions" as const,
  body: BODY,
  maxMoves,
  keepBytes: 1 << 20,
  memory,
});

describe("the moving reader", () => {
  test("no failure: the same bytes in the same order, an event split across chunks passed whole, memory given back", async () => {
    const memory = new KeptMemory(1 << 20);
    const whole = ev("a") + ev("b") + last("c") + "data: [DONE]\n\n";
    const parts = [whole.slice(0, 10), whole.slice(10, 150), whole.slice(150)];
    const { h, moves } = host();
    const r = new MovingReader(undefined, scripted(parts), h, limits(memory));
    const out = await readAll(r);
    r.release();
    expect(out.chunks.join("")).toBe(whole);
    // Each chunk passed ends at an event's end.
    for (const c of out.chunks) expect(c.endsWith("\n\n")).toBe(true);
    expect(moves).toEqual([]);
    expect(memory.held).toBe(0);
  });

  test("the first chunk taken before the first read: its whole events now, a partial one held for the next read", async () => {
    const memory = new KeptMemory(1 << 20);
    const whole = ev("a") + ev("b") + last("c") + "data: [DONE]\n\n";
    const cut = ev("a").length + 20;
    const { h } = host();
    const r = new MovingReader(
      enc.encode(whole.slice(0, cut)),
      scripted([whole.slice(cut)]),
      h,
      limits(memory),
    );
    const first = r.takeFirst();
    expect(dec.decode(first)).toBe(ev("a"));
    expect(r.takeFirst()).toBeUndefined();
    const out = await readAll(r);
    r.release();
    expect(dec.decode(first) + out.chunks.join("")).toBe(whole);
    expect(memory.held).toBe(0);
  });

  test("the connection breaks: the stream moves with the text so far, the continuation spliced, one [DONE]", async () => {
    const next = scripted([ev("c"), last("d"), "data: [DONE]\n\n"]);
    const { h, moves } = host(next, ev("b"));
    const r = new MovingReader(undefined, scripted([ev("a")], new Error("reset")), h, limits());
    const out = await readAll(r);
    expect(out.error).toBeUndefined();
    expect(moves).toEqual([
      {
        body: { prompt: "pa", max_tokens: 4, seed: 3, stream: true },
        why: "stream cut: reset",
        fence: true,
      },
    ]);
    const text = out.chunks.join("");
    expect(text.match(/data: \[DONE\]/g)?.length).toBe(1);
    expect(text).toContain(": switchyard moved this stream from worker 1 to worker 2");
    // Spliced chunks carry the first stream's id and created.
    expect(text).not.toContain("cmpl-2");
    expect([...text.matchAll(/"text":"(\w)"/g)].map((m) => m[1]).join("")).toBe("abcd");
  });

  test("a malformed event: what came before passes, the event does not, the stream moves", async () => {
    const next = scripted([last("z"), "data: [DONE]\n\n"]);
    const { h, moves } = host(next);
    const r = new MovingReader(
      undefined,
      scripted([ev("a") + 'data: {"error":{"message":"boom"}}\n\n']),
      h,
      limits(),
    );
    const out = await readAll(r);
    expect(moves[0]!.why).toBe("malformed event: an error event");
    expect(out.chunks.join("")).not.toContain("boom");
  });

  test("no move allowed (limit 0): a broken connection breaks the client's stream as before; a malformed event is passed on as before", async () => {
    const { h, moves } = host();
    const broken = await readAll(
      new MovingReader(undefined, scripted([ev("a")], new Error("reset")), h, limits(undefined, 0)),
    );
    expect(broken.error).toBe("reset");
    const bad = ev("a") + 'data: {"error":{"message":"boom"}}\n\n';
    const passed = await readAll(
      new MovingReader(undefined, scripted([bad]), h, limits(undefined, 0)),
    );
    expect(passed.chunks.join("")).toBe(bad);
    expect(moves).toEqual([]);
  });

  test("the body rules a move out (n > 1): the stream ends as before and the refusal is reported", async () => {
    const { h, moves, gaveUp } = host();
    const body = enc.encode(JSON.stringify({ prompt: "p", n: 2 }));
    const r = new MovingReader(undefined, scripted([ev("a")], new Error("reset")), h, {
      ...limits(),
      body,
    });
    expect((await readAll(r)).error).toBe("reset");
    expect(moves).toEqual([]);
    expect(gaveUp).toEqual(["refused: n > 1"]);
  });

  test("no worker takes the continuation: an error event ends the stream, and the end counts as an error", async () => {
    const { h } = host(undefined);
    const r = new MovingReader(undefined, scripted([ev("a")], new Error("reset")), h, limits());
    const out = await readAll(r);
    const text = out.chunks.join("");
    expect(text).toContain('"type": "InternalServerError", "param": null, "code": 500}}\n\n');
    expect(text.endsWith("data: [DONE]\n\n")).toBe(true);
    expect(r.failedEnd).toBe("error");
  });

  test("past the per-request bound nothing is kept and the stream is not moved", async () => {
    const memory = new KeptMemory(1 << 20);
    const { h, moves } = host();
    const r = new MovingReader(undefined, scripted([ev("a"), ev("b")], new Error("reset")), h, {
      ...limits(memory),
      keepBytes: 100,
    });
    expect((await readAll(r)).error).toBe("reset");
    expect(moves).toEqual([]);
    expect(memory.held).toBe(0);
  });

  test("the router-wide account: a stream that finds it full keeps nothing", async () => {
    const memory = new KeptMemory(10);
    const { h, moves } = host();
    const r = new MovingReader(
      undefined,
      scripted([ev("a")], new Error("reset")),
      h,
      limits(memory),
    );
    expect((await readAll(r)).error).toBe("reset");
    expect(moves).toEqual([]);
    expect(memory.held).toBe(0);
  });
});
