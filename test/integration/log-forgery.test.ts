/**
 * A real router with --log-format text (and one with json), a hostile model name: the access
 * line stays one line with no raw control byte, and a 1 MB model name does not make a 1 MB line.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startMain, stopAll, until, type Proc } from "../support/processes.ts";
import { LOG_VALUE_MAX_CHARS } from "../../src/core/log-value.ts";

const FORGED = "m\n2030-01-01T00:00:00.000Z INFO FORGED-LINE user=root\u001b[31m\r\u2028";
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/;

let engine: ReturnType<typeof Bun.serve> | undefined;
const routers: Record<"text" | "json", Proc | undefined> = { text: undefined, json: undefined };

beforeAll(async () => {
  engine = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const path = new URL(req.url).pathname;
      if (path === "/health") return new Response("ok");
      if (path === "/v1/models")
        return Response.json({ object: "list", data: [{ id: "stand-in", object: "model" }] });
      return Response.json({ choices: [{ text: "ok" }] });
    },
  });
  for (const format of ["text", "json"] as const) {
    routers[format] = await startMain([
      "serve",
      "--port",
      "0",
      "--host",
      "127.0.0.1",
      "--worker",
      `http://127.0.0.1:${engine.port}`,
      "--log-format",
      format,
      "--health-interval",
      "30",
    ]);
  }
});

afterAll(async () => {
  await stopAll(Object.values(routers));
  engine?.stop(true);
});

async function send(router: Proc, model: string): Promise<void> {
  const res = await fetch(`${router.info.url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-request-id": `forge-${model.length}` },
    body: JSON.stringify({ model, prompt: "hi", max_tokens: 1 }),
  });
  await res.arrayBuffer();
}

describe("logs that cannot be forged (real router)", () => {
  for (const format of ["text", "json"] as const) {
    test(`${format}: a model name holding CR, LF, ESC and U+2028 stays inside one access line`, async () => {
      const r = routers[format]!;
      await send(r, FORGED);
      await until(() => r.output().includes("forge-" + FORGED.length), "the access line");
      const lines = r.output().split("\n");
      expect(lines.some((l) => l.startsWith("2030-01-01"))).toBe(false);
      for (const l of lines) expect(RAW_CONTROL.test(l.replace(/\r$/, ""))).toBe(false);
      expect(r.output()).not.toContain("\r");
    });

    test(`${format}: a 1 MB model name is cut with "... (N bytes)"`, async () => {
      const r = routers[format]!;
      const big = "q".repeat(1_000_000);
      await send(r, big);
      await until(() => r.output().includes("forge-1000000"), "the access line");
      const line = r
        .output()
        .split("\n")
        .find((l) => l.includes("forge-1000000"))!;
      expect(line).toContain("... (1000000 bytes)");
      expect(line.length).toBeLessThan(LOG_VALUE_MAX_CHARS * 3);
    });
  }
});
