/**
 * The simulated engine's HTTP edge (src/mocker/server.ts mounting the route groups on Hono):
 * unknown paths, wrong methods, bad bodies, admin routes and draining answer in the engine's
 * error shape. One real server in-process on a free port.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startMocker, type MockerHandle } from "../../../src/mocker/server.ts";

let m: MockerHandle;
beforeAll(async () => {
  m = await startMocker({ port: 0, adminToken: "secret", decodeMsPerStep: 20, log: () => {} });
});
afterAll(async () => {
  await m.stop();
});

async function errorOf(res: Response): Promise<{ status: number; type: string; message: string }> {
  const body = (await res.json()) as { error: { type: string; message: string } };
  return { status: res.status, type: body.error.type, message: body.error.message };
}

describe("mocker edge", () => {
  test("an unknown path is 404, a known path with another method 405", async () => {
    expect(await errorOf(await fetch(`${m.url}/nope`))).toEqual({
      status: 404,
      type: "not_found",
      message: "no route GET /nope",
    });
    expect(await errorOf(await fetch(`${m.url}/v1/completions`))).toEqual({
      status: 405,
      type: "method_not_allowed",
      message: "method GET not allowed on /v1/completions",
    });
    // A native route (tokenize) is known too.
    expect((await fetch(`${m.url}/tokenize`)).status).toBe(405);
  });

  test("every exact route path is known (another method: 405); the bootstrap room route's prefix is not", async () => {
    const paths = [
      "/v1/completions",
      "/v1/chat/completions",
      "/v1/models",
      "/health",
      "/livez",
      "/v1/engine/info",
      "/metrics",
      "/kv/query",
      "/kv/clear",
      "/admin/restart-events",
      "/v1/load_lora_adapter",
      "/v1/unload_lora_adapter",
      "/v1/sessions/open",
      "/v1/sessions/close",
      "/v1/sessions",
      "/tokenize",
      "/detokenize",
      "/v1/embeddings",
      "/pooling",
      "/classify",
      "/score",
      "/v1/score",
      "/rerank",
      "/v1/rerank",
      "/v2/rerank",
      "/v1/responses",
      "/generate",
    ];
    const statuses = await Promise.all(
      paths.map(async (p) => [p, (await fetch(`${m.url}${p}`, { method: "DELETE" })).status]),
    );
    expect(Object.fromEntries(statuses)).toEqual(Object.fromEntries(paths.map((p) => [p, 405])));
    // The room is part of the path, so no exact path is known there: another method is a 404.
    expect(
      await errorOf(await fetch(`${m.url}/v1/kv/bootstrap/1`, { method: "POST" })),
    ).toMatchObject({ status: 404, type: "not_found" });
  });

  test("bad bodies and parameters are 400 in the engine's error shape", async () => {
    const notJson = await errorOf(
      await fetch(`${m.url}/v1/completions`, { method: "POST", body: "{" }),
    );
    expect(notJson.status).toBe(400);
    expect(notJson.message).toContain("not valid JSON");
    const arrayBody = await errorOf(
      await fetch(`${m.url}/tokenize`, { method: "POST", body: "[1]" }),
    );
    expect(arrayBody).toMatchObject({ status: 400, message: "request body must be a JSON object" });
    const room = await errorOf(await fetch(`${m.url}/v1/kv/bootstrap/x1`));
    expect(room).toMatchObject({
      status: 400,
      message: "bootstrap room: must be a non-negative integer",
    });
  });

  test("the error body is vLLM's: param null, code the HTTP status as an int", async () => {
    const body = await (
      await fetch(`${m.url}/v1/completions`, { method: "POST", body: "{" })
    ).json();
    expect(body).toEqual({
      error: {
        message: expect.stringContaining("not valid JSON"),
        type: "invalid_request_error",
        param: null,
        code: 400,
      },
    });
  });

  test("admin routes need the bearer token", async () => {
    expect((await fetch(`${m.url}/kv/clear`, { method: "POST" })).status).toBe(401);
    const ok = await fetch(`${m.url}/kv/clear`, {
      method: "POST",
      headers: { authorization: "Bearer secret" },
    });
    expect(ok.status).toBe(200);
  });

  test("the routes answer: health, models, completions", async () => {
    expect(await (await fetch(`${m.url}/health`)).json()).toEqual({ status: "ok" });
    const models = (await (await fetch(`${m.url}/v1/models`)).json()) as { data: { id: string }[] };
    expect(models.data.map((d) => d.id)).toContain("switchyard-sim");
    const res = await fetch(`${m.url}/v1/completions`, {
      method: "POST",
      body: JSON.stringify({ prompt: "hello", max_tokens: 2 }),
    });
    expect(res.status).toBe(200);
    expect(
      ((await res.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens,
    ).toBe(2);
  });

  test("while draining, /health is 503 draining and new requests 503; /livez still answers", async () => {
    // A long stream keeps the drain waiting while we look.
    const stream = await fetch(`${m.url}/v1/completions`, {
      method: "POST",
      body: JSON.stringify({ prompt: "long", max_tokens: 500, stream: true }),
    });
    const reader = stream.body!.getReader();
    await reader.read(); // the stream has started
    const drained = m.drain(30_000);
    const health = await fetch(`${m.url}/health`);
    expect(health.status).toBe(503);
    expect(await health.json()).toEqual({ status: "draining" });
    expect((await fetch(`${m.url}/livez`)).status).toBe(200);
    expect((await fetch(`${m.url}/metrics`)).status).toBe(200);
    const refused = await errorOf(
      await fetch(`${m.url}/v1/completions`, { method: "POST", body: "{}" }),
    );
    expect(refused).toMatchObject({ status: 503, message: "the engine is shutting down" });
    await reader.cancel();
    expect(typeof (await drained)).toBe("boolean");
  });
});
