/**
 * The one end of a client's request (src/edge/proxy/request-settlement.ts), as a tenant's
 * charge hears it: once, with the tokens of the answer the client got, read by the settlement
 * of the decision that made it; a decision whose answer was dropped (the LoRA 404 retry) or an
 * answer no decision made is never read as another's. Settlements and streams are the real
 * ones; the lease is a stand-in.
 */
import { describe, expect, test } from "bun:test";
import type { Logger } from "../../../../src/core/logger.ts";
import { observeStream, type ChunkReader } from "../../../../src/edge/proxy/observe-stream.ts";
import { RequestSettlement } from "../../../../src/edge/proxy/request-settlement.ts";
import { Settlement } from "../../../../src/edge/proxy/settlement.ts";
import { RouterMetrics } from "../../../../src/observe/names.ts";
import type { RouteDecision } from "../../../../src/router/index.ts";
import { until } from "../../../support/processes.ts";

const enc = new TextEncoder();
const log = { debug() {}, info() {}, warn() {}, error() {} } as unknown as Logger;
const sinks = {
  outcomes: { fence: () => undefined, report() {} },
  metrics: new RouterMetrics(),
  log,
};

function decision(id: bigint): RouteDecision {
  const lease = { free() {}, prefillDone() {}, firstToken() {}, outputTokens() {} };
  return {
    worker: { workerId: id, dpRank: 0 },
    overlapBlocks: 0,
    lease,
  } as unknown as RouteDecision;
}

function charged(booked: number) {
  const request = new RequestSettlement(booked);
  const ends: [number, number | undefined][] = [];
  request.onEnd((out, prompt) => ends.push([out, prompt]));
  return {
    request,
    ends,
    settle: (id: bigint) => new Settlement(decision(id), sinks, undefined, undefined, request),
  };
}

/** A reader whose chunks the test hands over one at a time; `end` finishes it. */
function engine() {
  const queue: ((r: { done: boolean; value?: Uint8Array }) => void)[] = [];
  const waiting: { done: boolean; value?: Uint8Array }[] = [];
  const give = (r: { done: boolean; value?: Uint8Array }) => {
    const next = queue.shift();
    if (next) next(r);
    else waiting.push(r);
  };
  const reader: ChunkReader = {
    read: () =>
      waiting.length > 0 ? Promise.resolve(waiting.shift()!) : new Promise((r) => queue.push(r)),
    cancel: async () => give({ done: true }),
  };
  return {
    reader,
    chunk: (s: string) => give({ done: false, value: enc.encode(s) }),
    end: () => give({ done: true }),
  };
}

describe("the request's one end", () => {
  test("a LoRA 404 retry: the dropped 404 is not the charge; the retry's streamed usage is, once its stream ends", async () => {
    const { request, ends, settle } = charged(50);
    const first = settle(1n);
    const notFound = new Response("{}", { status: 404 });
    request.made(notFound, first);
    first.end({ how: "whole", status: 404, body: enc.encode("{}") });
    const second = settle(2n);
    const e = engine();
    const body = observeStream(
      enc.encode('data: {"choices":[{"text":"a"}]}\n\n'),
      e.reader,
      second.stream(200, true),
    );
    const res = new Response(body, { status: 200 });
    request.made(res, second);
    request.answered(res);
    expect(ends).toEqual([]);
    e.chunk(
      'data: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4}}\n\ndata: [DONE]\n\n',
    );
    e.end();
    await res.text();
    expect(ends).toEqual([[4, 9]]);
    request.failed();
    expect(ends).toEqual([[4, 9]]);
  });

  test("a whole answer that ended before the caller knew it was the client's: its usage; without usage, what was booked", () => {
    const a = charged(8);
    const s = a.settle(1n);
    const res = new Response("{}");
    a.request.made(res, s);
    s.end({
      how: "whole",
      status: 200,
      body: enc.encode('{"usage":{"prompt_tokens":5,"completion_tokens":3}}'),
    });
    a.request.answered(res);
    expect(a.ends).toEqual([[3, 5]]);
    const b = charged(8);
    const t = b.settle(1n);
    const res2 = new Response("{}");
    b.request.made(res2, t);
    t.end({ how: "whole", status: 200, body: enc.encode('{"choices":[]}') });
    b.request.answered(res2);
    expect(b.ends).toEqual([[8, undefined]]);
  });

  test("an answer no decision made (a prefill worker's client error passed on) and a thrown error charge no output", () => {
    const a = charged(8);
    a.request.answered(new Response('{"error":"bad"}', { status: 400 }));
    expect(a.ends).toEqual([[0, undefined]]);
    const b = charged(8);
    b.request.failed();
    b.request.failed();
    expect(b.ends).toEqual([[0, undefined]]);
  });

  test("an answer that ends in error while the client reads nothing settles at once and errors the client's stream", async () => {
    const { request, ends, settle } = charged(7);
    const s = settle(1n);
    const e = engine();
    // The proxy gives up on a client that took nothing (its stalled-client cut): nobody reads.
    const body = observeStream(enc.encode("{"), e.reader, s.stream(200, false), false, {
      idleMs: 20,
      sse: false,
    });
    const res = new Response(body, { status: 200 });
    request.made(res, s);
    request.answered(res);
    const reader = res.body!.getReader();
    await reader.read();
    await until(() => ends.length === 1, "the answer's end to be settled", 5_000, 1);
    expect(ends).toEqual([[7, undefined]]);
    expect(
      await reader.read().then(
        () => "read",
        (err: Error) => err.message,
      ),
    ).toContain("took nothing");
    expect(ends).toEqual([[7, undefined]]);
  });

  test("a stream the engine left silent is charged with the error event the client got (no output), not what was booked", async () => {
    const { request, ends, settle } = charged(7);
    const s = settle(1n);
    const e = engine();
    const body = observeStream(undefined, e.reader, s.stream(200, true), false, {
      idleMs: 20,
      sse: true,
    });
    const res = new Response(body, { status: 200 });
    request.made(res, s);
    request.answered(res);
    expect(await res.text()).toContain("stream idle deadline of 0.02 s missed");
    expect(ends).toEqual([[0, undefined]]);
  });
});
