/**
 * A real router process with --log-format json: one access line per request on stderr, the
 * request id echoed and sent to the engine with the client's trace context, error lines
 * carrying the same id. The engine is a small recording stand-in (headers of every call).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startMain, stopAll, until, type Proc } from "../support/processes.ts";

const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

let router: Proc | undefined;
let engine: ReturnType<typeof Bun.serve> | undefined;
const seen: Headers[] = [];
let failNext = 0;

function accessLines(): Record<string, unknown>[] {
  return router!
    .output()
    .split("\n")
    .filter((l) => l.startsWith("{") && l.includes('"msg":"request"'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

beforeAll(async () => {
  engine = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const path = new URL(req.url).pathname;
      if (path === "/health") return new Response("ok");
      if (path === "/v1/models")
        return Response.json({ object: "list", data: [{ id: "stand-in", object: "model" }] });
      if (path === "/v1/completions") {
        seen.push(req.headers);
        if (failNext > 0) {
          failNext--;
          return new Response("engine broke", { status: 500 });
        }
        const sse =
          ["a", "b", "c"].map((t) => `data: {"choices":[{"text":"${t}"}]}\n\n`).join("") +
          "data: [DONE]\n\n";
        return new Response(sse, { headers: { "content-type": "text/event-stream" } });
      }
      return new Response("not found", { status: 404 });
    },
  });
  router = await startMain([
    "serve",
    "--port",
    "0",
    "--worker",
    `http://127.0.0.1:${engine.port}`,
    "--log-format",
    "json",
    "--health-interval",
    "30",
  ]);
});

afterAll(async () => {
  await stopAll([router]);
  engine?.stop(true);
});

describe("access log (a real router, --log-format json)", () => {
  test("a streamed completion: one JSON line with the fields an operator needs; id echoed and passed on with the trace context", async () => {
    const res = await fetch(`${router!.info.url}/v1/completions`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-request-id": "it-access-1",
        traceparent: TRACEPARENT,
      },
      body: JSON.stringify({ model: "stand-in", prompt: "hello access log", stream: true }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-request-id")).toBe("it-access-1");
    await res.text();
    expect(seen.at(-1)!.get("x-request-id")).toBe("it-access-1");
    expect(seen.at(-1)!.get("traceparent")).toBe(TRACEPARENT);
    const line = await until(
      () => accessLines().find((l) => l.request_id === "it-access-1"),
      "the access line",
    );
    expect(line).toMatchObject({
      level: "info",
      route: "/v1/completions",
      model: "stand-in",
      status: 200,
      output_tokens: 3,
      client_cancelled: false,
      retries: 0,
    });
    expect(line.worker_url).toBe(`http://127.0.0.1:${engine!.port}`);
    expect(typeof line.time).toBe("string");
    for (const k of [
      "worker",
      "dp_rank",
      "prompt_tokens",
      "cached_blocks",
      "cached_tokens",
      "admission_wait_ms",
      "ttfb_ms",
      "ttft_ms",
      "predicted_ttft_ms",
      "duration_ms",
      "bytes_out",
    ]) {
      expect(line[k]).not.toBeNull();
    }
  });

  test("an engine error: the client's answer, the access line and the warning all carry one request id", async () => {
    failNext = 1;
    const res = await fetch(`${router!.info.url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "stand-in", prompt: "this one fails" }),
    });
    expect(res.status).toBe(500);
    const id = res.headers.get("x-request-id")!;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(seen.at(-1)!.get("x-request-id")).toBe(id);
    const line = await until(
      () => accessLines().find((l) => l.request_id === id),
      "the error's access line",
    );
    expect(line.status).toBe(500);
    const warn = router!
      .output()
      .split("\n")
      .find((l) => l.includes('"level":"warn"') && l.includes(id));
    expect(warn).toBeDefined();
    expect(JSON.parse(warn!).msg).toContain("answered HTTP 500");
  });

  test("every line on stderr is JSON (no plain-text line slips through)", async () => {
    await until(() => accessLines().length >= 2, "two access lines");
    const err = router!.output().split("--- stderr\n")[1]!;
    for (const l of err.split("\n").filter((x) => x.trim() !== ""))
      expect(() => JSON.parse(l)).not.toThrow();
  });
});
