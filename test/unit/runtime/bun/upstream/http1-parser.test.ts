import { describe, expect, test } from "bun:test";
import {
  Http1ParseError,
  Http1ResponseParser,
  MAX_HEAD_BYTES,
  type ResponseHead,
} from "../../../../../src/runtime/bun/upstream/http1-parser.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

interface Parsed {
  heads: ResponseHead[];
  body: string;
  ended: number;
  parser: Http1ResponseParser;
}

function parser(): Parsed {
  const out: Parsed = { heads: [], body: "", ended: 0, parser: undefined! };
  out.parser = new Http1ResponseParser({
    head: (h) => out.heads.push(h),
    body: (c) => (out.body += dec.decode(c)),
    end: () => out.ended++,
  });
  return out;
}

/** Feed `text` in pieces of `step` bytes (1 = byte by byte). */
function feed(text: string | Uint8Array, step = Infinity): Parsed {
  const p = parser();
  const bytes = typeof text === "string" ? enc.encode(text) : text;
  for (let i = 0; i < bytes.length; i += step)
    p.parser.push(bytes.subarray(i, Math.min(bytes.length, i + step)));
  return p;
}

const CHUNKED =
  "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Case: MiXeD Value \r\nTransfer-Encoding: chunked\r\n\r\n" +
  "6\r\ndata: \r\n" +
  "a;ext=1\r\n0123456789\r\n" +
  "0\r\nX-Trailer: t\r\n\r\n";

describe("chunked answers", () => {
  test("one push: head (names lower-case, values trimmed with case kept), payload without framing, end", () => {
    const p = feed(CHUNKED);
    expect(p.heads).toEqual([
      {
        status: 200,
        statusText: "OK",
        headers: [
          "content-type",
          "text/event-stream",
          "x-case",
          "MiXeD Value",
          "transfer-encoding",
          "chunked",
        ],
        keepAlive: true,
      },
    ]);
    expect(p.body).toBe("data: 0123456789");
    expect(p.ended).toBe(1);
    expect(p.parser.done).toBe(true);
  });

  test("the same bytes split at every size give the same result", () => {
    for (const step of [1, 2, 3, 5, 7, 13, 64]) {
      const p = feed(CHUNKED, step);
      expect(p.body, `step ${step}`).toBe("data: 0123456789");
      expect(p.heads.length, `step ${step}`).toBe(1);
      expect(p.ended, `step ${step}`).toBe(1);
    }
  });

  test("payload is handed on as views of the pushed bytes, not copies", () => {
    const bytes = enc.encode(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    );
    const views: Uint8Array[] = [];
    new Http1ResponseParser({ head() {}, body: (c) => views.push(c), end() {} }).push(bytes);
    expect(views.length).toBe(1);
    expect(views[0]!.buffer).toBe(bytes.buffer);
  });

  test("the chunks of one push come out as one view (payload moved together in place)", () => {
    const events = Array.from({ length: 9 }, (_, i) => `data: {"t":${i}}\n\n`);
    const wire =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
      events.map((e) => `${e.length.toString(16)}\r\n${e}\r\n`).join("") +
      "0\r\n\r\n";
    const bytes = enc.encode(wire);
    const views: Uint8Array[] = [];
    let ended = false;
    new Http1ResponseParser({
      head() {},
      body: (c) => views.push(c),
      end: () => (ended = true),
    }).push(bytes);
    expect(views.length).toBe(1);
    expect(views[0]!.buffer).toBe(bytes.buffer);
    expect(dec.decode(views[0])).toBe(events.join(""));
    expect(ended).toBe(true);
  });

  test("the last transfer coding decides: gzip then chunked is chunked; chunked then gzip runs until close", () => {
    const a = feed(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n",
    );
    expect(a.body).toBe("ab");
    expect(a.ended).toBe(1);
    const b = feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\nraw bytes");
    expect(b.heads[0]!.keepAlive).toBe(false);
    expect(b.ended).toBe(0);
    b.parser.eof();
    expect(b.body).toBe("raw bytes");
    expect(b.ended).toBe(1);
  });
});

describe("other framings", () => {
  test("content-length body, split anywhere", () => {
    for (const step of [1, 4, Infinity]) {
      const p = feed("HTTP/1.1 201 Created\r\ncontent-length: 11\r\n\r\nhello world", step);
      expect(p.heads[0]!.status).toBe(201);
      expect(p.heads[0]!.statusText).toBe("Created");
      expect(p.body).toBe("hello world");
      expect(p.ended).toBe(1);
    }
  });

  test("no body: content-length 0, 204 and 304 end at the head", () => {
    for (const head of [
      "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
      "HTTP/1.1 204 No Content\r\n\r\n",
      "HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n",
    ]) {
      const p = feed(head);
      expect(p.ended, head).toBe(1);
      expect(p.body, head).toBe("");
      expect(p.heads[0]!.keepAlive, head).toBe(true);
    }
  });

  test("without length or chunking the body runs until close, and the connection is not reusable", () => {
    const p = feed("HTTP/1.1 200 OK\r\n\r\nabc");
    p.parser.push(enc.encode("def"));
    expect(p.heads[0]!.keepAlive).toBe(false);
    expect(p.ended).toBe(0);
    p.parser.eof();
    expect(p.body).toBe("abcdef");
    expect(p.ended).toBe(1);
  });

  test("1xx interim answers are skipped", () => {
    const p = feed(
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    );
    expect(p.heads.map((h) => h.status)).toEqual([200]);
    expect(p.body).toBe("ok");
  });

  test("keep-alive: HTTP/1.1 unless connection: close; HTTP/1.0 only with keep-alive", () => {
    const ka = (head: string) => feed(`${head}\r\nContent-Length: 0\r\n\r\n`).heads[0]!.keepAlive;
    expect(ka("HTTP/1.1 200 OK")).toBe(true);
    expect(ka("HTTP/1.1 200 OK\r\nConnection: Close")).toBe(false);
    expect(ka("HTTP/1.1 200 OK\r\nConnection: upgrade, close")).toBe(false);
    expect(ka("HTTP/1.0 200 OK")).toBe(false);
    expect(ka("HTTP/1.0 200 OK\r\nConnection: keep-alive")).toBe(true);
  });

  test("a status line without a reason phrase; latin-1 header bytes kept one char per byte", () => {
    const bytes = new Uint8Array([
      ...enc.encode("HTTP/1.1 404\r\nX-Name: caf"),
      0xe9,
      ...enc.encode("\r\nContent-Length: 0\r\n\r\n"),
    ]);
    const p = feed(bytes);
    expect(p.heads[0]!.status).toBe(404);
    expect(p.heads[0]!.statusText).toBe("");
    expect(p.heads[0]!.headers).toEqual(["x-name", "caf\u00e9", "content-length", "0"]);
  });
});

describe("broken answers", () => {
  const bad: [string, string][] = [
    ["a bad status line", "HTTP/2 200 OK\r\n\r\n"],
    ["a non-numeric status", "HTTP/1.1 2x0 OK\r\n\r\n"],
    ["a header line without a colon", "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n"],
    ["obsolete line folding", "HTTP/1.1 200 OK\r\nA: b\r\n  folded\r\n\r\n"],
    ["a bad content-length", "HTTP/1.1 200 OK\r\nContent-Length: 1e3\r\n\r\n"],
    [
      "conflicting content-lengths",
      "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
    ],
    ["a bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"],
    [
      "chunk data without its CRLF",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n",
    ],
    ["bytes after the end", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nab"],
    ["a protocol switch", "HTTP/1.1 101 Switching Protocols\r\n\r\n"],
    // Not passable to a client: before, 600-999 ended as unhandled 500s and < 100 waited as an interim answer.
    ["a status of 600", "HTTP/1.1 600 Odd\r\nContent-Length: 0\r\n\r\n"],
    ["a status of 999", "HTTP/1.1 999 Odd\r\nContent-Length: 0\r\n\r\n"],
    ["a status below 100", "HTTP/1.1 099 Odd\r\nContent-Length: 0\r\n\r\n"],
    ["a status of 000", "HTTP/1.1 000 Odd\r\nContent-Length: 0\r\n\r\n"],
    [
      "a header name that is not a token",
      "HTTP/1.1 200 OK\r\nX Bad: v\r\nContent-Length: 0\r\n\r\n",
    ],
    [
      "a control character in a header value",
      "HTTP/1.1 200 OK\r\nX-Bad: a\x01b\r\nContent-Length: 0\r\n\r\n",
    ],
  ];
  for (const [what, text] of bad) {
    test(`${what} throws Http1ParseError`, () => {
      expect(() => feed(text)).toThrow(Http1ParseError);
    });
  }

  test("bytes after a complete answer: the end is reported first, then the error", () => {
    const p = parser();
    expect(() =>
      p.parser.push(enc.encode("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA")),
    ).toThrow(/after the end/);
    expect(p.body).toBe("ok");
    expect(p.ended).toBe(1);
  });

  test("a head larger than the limit throws instead of growing without end", () => {
    const p = parser();
    p.parser.push(enc.encode("HTTP/1.1 200 OK\r\n"));
    const line = enc.encode(`X-Pad: ${"p".repeat(1000)}\r\n`);
    expect(() => {
      for (let i = 0; i <= MAX_HEAD_BYTES / line.length + 1; i++) p.parser.push(line);
    }).toThrow(/longer than/);
  });

  test("a head larger than the limit throws even when it arrives in one read", () => {
    const head = `HTTP/1.1 200 OK\r\nX-Pad: ${"p".repeat(MAX_HEAD_BYTES)}\r\nContent-Length: 0\r\n\r\n`;
    expect(() => feed(head)).toThrow(/longer than/);
    // Just under the limit, in one read: accepted.
    const ok = `HTTP/1.1 200 OK\r\nX-Pad: ${"p".repeat(MAX_HEAD_BYTES - 100)}\r\nContent-Length: 0\r\n\r\n`;
    expect(feed(ok).ended).toBe(1);
  });

  test("eof before the end throws, saying whether any byte came", () => {
    const none = parser();
    expect(none.parser.started).toBe(false);
    expect(() => none.parser.eof()).toThrow(/before any response byte/);
    const some = feed("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
    expect(some.parser.started).toBe(true);
    expect(() => some.parser.eof()).toThrow(/before the response was complete/);
    const chunked = feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n");
    expect(() => chunked.parser.eof()).toThrow(Http1ParseError);
    expect(chunked.body).toBe("abc");
  });
});
