/**
 * The off-loop JSON parser (a real Bun Worker): the same answers as the in-thread parse, word
 * for word (400s and the 413 naming the prompt field), the bytes handed back intact, and the
 * pool's bound released after every job.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { RouterError } from "../../../../src/core/errors.ts";
import { parseJsonObject } from "../../../../src/edge/body.ts";
import { checkPromptSize } from "../../../../src/edge/prompt-route/prompt-size.ts";
import { JsonParsePool } from "../../../../src/runtime/bun/json-parse-pool.ts";

const pool = new JsonParsePool(
  new URL("../../../../src/runtime/bun/json-parse-worker.ts", import.meta.url).href,
);
afterAll(() => pool.close());

const enc = (s: string) => new TextEncoder().encode(s);

function inThread(text: string, limit: number): string {
  try {
    const json = parseJsonObject(enc(text));
    checkPromptSize(json.prompt, "prompt", limit);
    return "ok";
  } catch (e) {
    return `${(e as RouterError).code} ${(e as RouterError).field ?? "-"} ${(e as Error).message}`;
  }
}

async function offLoop(text: string, limit: number): Promise<string> {
  try {
    await pool.parse(enc(text), ["prompt"], limit);
    return "ok";
  } catch (e) {
    expect(e).toBeInstanceOf(RouterError);
    return `${(e as RouterError).code} ${(e as RouterError).field ?? "-"} ${(e as Error).message}`;
  }
}

describe("JSON parsed off the event loop", () => {
  test("a body comes back with its bytes intact and its object", async () => {
    const text = JSON.stringify({ model: "m", prompt: "é".repeat(1000), n: 18446744073709551615 });
    const { body, json } = await pool.parse(enc(text), ["prompt"], 5000);
    expect(new TextDecoder().decode(body)).toBe(text);
    expect(json).toEqual(JSON.parse(text));
    expect(pool.held).toBe(0);
  });

  test("refusals are the in-thread ones, word for word", async () => {
    const cases = [
      JSON.stringify({ prompt: "z".repeat(2000) }),
      JSON.stringify({ prompt: [[1, 2], "abc".repeat(700)] }),
      "[1,2]",
      "{not json",
      "",
    ];
    for (const c of cases) expect(await offLoop(c, 1000)).toBe(inThread(c, 1000));
    expect(await offLoop(cases[0]!, 1000)).toContain("--max-prompt-chars");
    const invalidUtf8 = new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]);
    const e = await pool.parse(invalidUtf8, [], undefined).catch((x: unknown) => x);
    expect((e as Error).message).toContain("not valid UTF-8");
    expect(pool.held).toBe(0);
  });

  test("past its bound the pool answers 503 at once, naming the bound", async () => {
    const small = new JsonParsePool(
      new URL("../../../../src/runtime/bun/json-parse-worker.ts", import.meta.url).href,
      { maxHeldBytes: 10, timeoutMs: 10_000 },
    );
    try {
      const e = await small
        .parse(enc(JSON.stringify({ prompt: "way more than ten bytes" })), ["prompt"], undefined)
        .catch((x: unknown) => x);
      expect(e).toBeInstanceOf(RouterError);
      expect((e as RouterError).code).toBe("unavailable");
      expect((e as Error).message).toContain("at most 10");
    } finally {
      small.close();
    }
  });
});
