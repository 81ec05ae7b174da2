/**
 * Reading a client's JSON request: small Content-Length bodies read whole, large and chunked
 * ones streamed into one buffer with their prompt counted as they come (a too-long prompt is
 * refused after a limit's worth of bytes, the rest left unread), the bytes held against the
 * router-wide budget (503 with Retry-After past it, given back once the request is read).
 * A body that passes comes back byte for byte.
 */
import { describe, expect, test } from "bun:test";
import { RouterError } from "../../../src/core/errors.ts";
import { BodyReadBudget } from "../../../src/edge/body-budget.ts";
import { toErrorResponse } from "../../../src/edge/errors.ts";
import type { RequestLimits } from "../../../src/edge/deps.ts";
import { readJsonRequest } from "../../../src/edge/request-json.ts";
import { rejectionOf } from "../../support/errors.ts";

const enc = new TextEncoder();

/** A chunked request whose body is `head`, then `filler` repeated `times` (64 KiB pieces), then `tail`; `pulled` counts the bytes taken. */
function chunked(
  head: string,
  filler: string,
  times: number,
  tail: string,
): { req: Request; pulled: () => number } {
  let sent = 0;
  let i = -1;
  const piece = enc.encode(filler);
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      const part =
        i < 0 ? enc.encode(head) : i < times ? piece : i === times ? enc.encode(tail) : undefined;
      i++;
      if (part === undefined) c.close();
      else {
        sent += part.length;
        c.enqueue(part);
      }
    },
  });
  const req = new Request("http://x/v1/completions", {
    method: "POST",
    body: stream,
    duplex: "half",
  } as RequestInit);
  return { req, pulled: () => sent };
}

function limits(maxPromptChars: number, budget?: BodyReadBudget): RequestLimits {
  return { maxBodyBytes: 64 << 20, maxPromptChars, bodyBudget: budget };
}

describe("readJsonRequest", () => {
  test("a chunked body within the limits comes back byte for byte, parsed", async () => {
    const text = JSON.stringify({
      model: "m",
      prompt: "p".repeat(200_000),
      max_tokens: 1,
      extra: "é😀",
    });
    const { req } = chunked(text.slice(0, 10), "", 0, text.slice(10));
    const { body, json } = await readJsonRequest(req, limits(1_000_000), ["prompt"]);
    expect(new TextDecoder().decode(body)).toBe(text);
    expect(json.extra).toBe("é😀");
  });

  test("a large Content-Length body comes back byte for byte", async () => {
    const text = JSON.stringify({ model: "m", prompt: "q".repeat(1_500_000) });
    const bytes = enc.encode(text);
    const req = new Request("http://x/v1/completions", {
      method: "POST",
      body: bytes,
      headers: { "content-length": String(bytes.length) },
    });
    const { body, json } = await readJsonRequest(req, limits(2_000_000), ["prompt"]);
    expect(Buffer.from(body).equals(Buffer.from(bytes))).toBe(true);
    expect((json.prompt as string).length).toBe(1_500_000);
  });

  test("a chunked prompt past the limit: 413 naming the field after about a limit's worth of bytes", async () => {
    const { req, pulled } = chunked(`{"model":"m","prompt":"`, "x".repeat(65536), 200, `"}`);
    const e = await rejectionOf(RouterError, readJsonRequest(req, limits(100_000), ["prompt"]));
    expect(e.code).toBe("payload_too_large");
    expect(e.field).toBe("prompt");
    expect(e.message).toContain("--max-prompt-chars");
    expect(toErrorResponse(e).headers.get("connection")).toBe("close");
    // 12.5 MiB offered; refused within a few pieces past the limit.
    expect(pulled()).toBeLessThan(100_000 + 4 * 65536);
  });

  test("the budget: a streamed body past it is a 503 with Retry-After; the hold is given back either way", async () => {
    const budget = new BodyReadBudget(1 << 20);
    const big = chunked(`{"model":"m","prompt":"`, "y".repeat(65536), 20, `"}`);
    const e = await rejectionOf(
      RouterError,
      readJsonRequest(big.req, limits(10_000_000, budget), ["prompt"]),
    );
    expect(e.code).toBe("unavailable");
    const answer = toErrorResponse(e);
    expect(answer.status).toBe(503);
    expect(answer.headers.get("retry-after")).toBe("1");
    // The body is left unread: the connection goes with the answer.
    expect(answer.headers.get("connection")).toBe("close");
    expect(budget.held).toBe(0);
    const small = chunked(`{"model":"m","prompt":"`, "z".repeat(1000), 3, `"}`);
    expect(
      (
        (await readJsonRequest(small.req, limits(10_000_000, budget), ["prompt"])).json
          .prompt as string
      ).length,
    ).toBe(3000);
    expect(budget.held).toBe(0);
    const tooLong = chunked(`{"prompt":"`, "w".repeat(1000), 3, `"}`);
    await rejectionOf(RouterError, readJsonRequest(tooLong.req, limits(100, budget), ["prompt"]));
    expect(budget.held).toBe(0);
  });

  test("the budget: a large Content-Length is refused before a byte is read while others hold the room", async () => {
    const budget = new BodyReadBudget(3 << 20);
    const holder = budget.hold();
    holder.take(2 << 20);
    const bytes = enc.encode(JSON.stringify({ prompt: "v".repeat(1_200_000) }));
    const req = new Request("http://x/v1/completions", {
      method: "POST",
      body: bytes,
      headers: { "content-length": String(bytes.length) },
    });
    expect(
      (await rejectionOf(RouterError, readJsonRequest(req, limits(2_000_000, budget), ["prompt"])))
        .code,
    ).toBe("unavailable");
    expect(req.bodyUsed).toBe(false);
    holder.release();
    expect(budget.held).toBe(0);
  });
});
