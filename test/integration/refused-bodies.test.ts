/**
 * A refused request costs constant time (real router and engine processes): a body past the
 * bound --max-prompt-chars implies is refused with a 413 naming the limit before it is read,
 * on its Content-Length alone (the test sends the head and no body), or, chunked, as soon as
 * the bytes streamed pass the bound (the rest never sent); a body within the bound whose prompt
 * is too long, as soon as the prompt's bytes show it (no parse, the rest never sent). No timing here: bench/protect/
 * refused-bodies.ts measures /livez and RSS under the same abuse.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect, type Socket } from "node:net";
import { startMain, stopAll, until, type Proc } from "../support/processes.ts";

let engine: Proc | undefined;
let router: Proc | undefined;
let port = 0;
const MAX_PROMPT_CHARS = 100_000;
/** 12 bytes per prompt character + 1 MiB (src/edge/request-json.ts). */
const BOUND = 12 * MAX_PROMPT_CHARS + (1 << 20);

beforeAll(async () => {
  engine = await startMain(["mocker", "--port", "0"]);
  router = await startMain([
    "serve",
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--worker",
    String(engine.info.url),
    "--max-prompt-chars",
    String(MAX_PROMPT_CHARS),
    "--health-interval",
    "30",
  ]);
  port = Number(new URL(String(router.info.url)).port);
});
afterAll(() => stopAll([router, engine]));

/** A raw connection collecting what the router answers. */
function open(): { sock: Socket; got: () => string } {
  const sock = connect(port, "127.0.0.1");
  let data = "";
  sock.setEncoding("latin1");
  sock.on("data", (d: string) => (data += d));
  sock.on("error", () => {});
  return { sock, got: () => data };
}

describe("refused bodies cost constant time (real router)", () => {
  for (const path of ["/v1/completions", "/v1/chat/completions", "/v1/embeddings"]) {
    test(`${path}: a Content-Length past the bound is a 413 naming the limit, answered before any body byte is sent`, async () => {
      const { sock, got } = open();
      sock.write(
        `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 15000000\r\n\r\n`,
      );
      await until(
        () => got().includes("\r\n\r\n{"),
        () =>
          `the router's answer, with no body sent (got: ${JSON.stringify(got().slice(0, 200))})`,
      );
      sock.destroy();
      expect(got()).toStartWith("HTTP/1.1 413");
      const message = (
        JSON.parse(
          got()
            .slice(got().indexOf("\r\n\r\n") + 4)
            .replace(/\s+$/, ""),
        ) as { error: { message: string } }
      ).error.message;
      expect(message).toContain(`the limit is ${BOUND}`);
      expect(message).toContain("--max-prompt-chars");
    });
  }

  test("chunked: cut with a 413 once the bytes pass the bound; the rest is never needed", async () => {
    const { sock, got } = open();
    sock.write(
      `POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
    );
    const chunk = Buffer.alloc(64 * 1024, 0x78);
    let sent = 0;
    while (sent <= BOUND) {
      sock.write(`${chunk.length.toString(16)}\r\n`);
      sock.write(chunk);
      sock.write("\r\n");
      sent += chunk.length;
    }
    // No final chunk: the body never ends, so only a refusal at the bound can answer.
    await until(
      () => got().includes("\r\n\r\n{"),
      () => `the router's answer to an endless body (got: ${JSON.stringify(got().slice(0, 200))})`,
    );
    sock.destroy();
    expect(got()).toStartWith("HTTP/1.1 413");
    expect(got()).toContain(`larger than ${BOUND} bytes`);
  });

  for (const framing of ["content-length", "chunked"] as const) {
    test(`${framing}: a body within the bound whose prompt passes --max-prompt-chars is a 413 naming the field once the prompt's bytes show it; the rest is never needed; the connection is closed`, async () => {
      const { sock, got } = open();
      const framingHeader =
        framing === "chunked" ? "Transfer-Encoding: chunked" : `Content-Length: ${BOUND - 1}`;
      sock.write(
        `POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${framingHeader}\r\n\r\n`,
      );
      // The prompt's first MAX_PROMPT_CHARS + 64 KiB characters, and nothing after: only a
      // count made while the bytes stream can answer.
      const start = Buffer.from(
        `{"model":"switchyard-sim","prompt":"${"x".repeat(MAX_PROMPT_CHARS + 65536)}`,
      );
      if (framing === "chunked") sock.write(`${start.length.toString(16)}\r\n`);
      sock.write(start);
      if (framing === "chunked") sock.write("\r\n");
      await until(
        () => got().includes("\r\n\r\n{"),
        () =>
          `the router's answer to an unfinished body (got: ${JSON.stringify(got().slice(0, 200))})`,
      );
      sock.destroy();
      expect(got()).toStartWith("HTTP/1.1 413");
      expect(got().toLowerCase()).toContain("\r\nconnection: close\r\n");
      const error = (
        JSON.parse(
          got()
            .slice(got().indexOf("\r\n\r\n") + 4)
            .replace(/\s+$/, ""),
        ) as { error: { message: string; param: string } }
      ).error;
      expect(error).toMatchObject({
        param: "prompt",
        message: `prompt: the prompt is longer than ${MAX_PROMPT_CHARS} characters (--max-prompt-chars)`,
      });
    });
  }

  test("a body within the bound whose prompt is past --max-prompt-chars is still a 413 naming the field; a good one is served", async () => {
    const big = await fetch(`${router!.info.url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      // ~1.1 MB: at or over the size parsed off the event loop.
      body: JSON.stringify({
        model: "switchyard-sim",
        prompt: "y".repeat(1_100_000),
        max_tokens: 1,
      }),
    });
    expect(big.status).toBe(413);
    expect(
      ((await big.json()) as { error: { message: string; param: string } }).error,
    ).toMatchObject({ param: "prompt", message: expect.stringContaining("--max-prompt-chars") });
    const ok = await fetch(`${router!.info.url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "switchyard-sim", prompt: "fine", max_tokens: 1 }),
    });
    expect(ok.status).toBe(200);
  });
});
