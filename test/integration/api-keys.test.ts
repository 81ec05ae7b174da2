/**
 * --api-keys with real processes: a router in front of two simulated engines, its keys in a
 * YAML file mounted the way Kubernetes mounts a Secret (a symlink through `..data`, swapped
 * to publish a new version). Every client route needs a key; limits answer 429 with
 * OpenAI's headers; a new version of the file is picked up, a broken one keeps the keys in
 * force and is logged with its entry and field; and no key, good or wrong, ever appears in
 * the router's output, the engines' output or /metrics.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sha256Hex } from "../../src/protect/key-set.ts";
import { startMain, stopAll, until, type Proc } from "../support/processes.ts";

setDefaultTimeout(30_000);

const KEY_A = `sk-test-alpha-${crypto.randomUUID()}`;
const KEY_B = `sk-test-bravo-${crypto.randomUUID()}`;
const WRONG = `sk-test-wrong-${crypto.randomUUID()}`;

let engines: Proc[] = [];
let router: Proc | undefined;
let url = "";
let dir = "";
let version = 0;

/** Publish a new version of the mounted file, as the kubelet does: new folder, then swap ..data. */
function publish(content: string): void {
  const v = `..v${++version}`;
  mkdirSync(join(dir, v));
  writeFileSync(join(dir, v, "keys.yaml"), content);
  symlinkSync(v, join(dir, "..data_tmp"));
  renameSync(join(dir, "..data_tmp"), join(dir, "..data"));
}

async function keysYaml(withB: boolean): Promise<string> {
  let y = `keys:\n  - tenant: alpha\n    key_sha256: ${await sha256Hex(KEY_A)}\n    limits: {requests_per_minute: 3}\n`;
  if (withB) y += `  - tenant: bravo\n    key_sha256: ${await sha256Hex(KEY_B)}\n`;
  return y;
}

function post(path: string, key: string | undefined, body: unknown): Promise<Response> {
  return fetch(`${url}${path}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(key !== undefined ? { authorization: `Bearer ${key}` } : {}),
    },
    body: JSON.stringify(body),
  });
}

beforeAll(async () => {
  engines = await Promise.all(
    [1, 2].map((seed) =>
      startMain(["mocker", "--port", "0", "--block-size", "16", "--seed", String(seed)]),
    ),
  );
  dir = mkdtempSync(join(tmpdir(), "switchyard-api-keys-"));
  publish(await keysYaml(false));
  symlinkSync(join("..data", "keys.yaml"), join(dir, "keys.yaml"));
  router = await startMain([
    "serve",
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--block-size",
    "16",
    "--log-level",
    "debug",
    "--api-keys",
    join(dir, "keys.yaml"),
    ...engines.flatMap((e) => ["--worker", String(e.info.url)]),
  ]);
  url = String(router.info.url);
});

afterAll(async () => {
  await stopAll([router, ...engines]);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("--api-keys (real processes)", () => {
  test("no key or a wrong key: 401 invalid_api_key; a good key is served", async () => {
    for (const key of [undefined, WRONG]) {
      const r = await post("/v1/completions", key, { prompt: "hello", max_tokens: 2 });
      expect(r.status).toBe(401);
      expect(((await r.json()) as { error: { code: string } }).error.code).toBe("invalid_api_key");
    }
    const models = await fetch(`${url}/v1/models`, {
      headers: { authorization: `Bearer ${WRONG}` },
    });
    expect(models.status).toBe(401);
    await models.text();
    const ok = await post("/v1/chat/completions", KEY_A, {
      messages: [{ role: "user", content: "hi" }],
      max_tokens: 2,
    });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("x-ratelimit-limit-requests")).toBe("3");
    await ok.text();
  });

  test("past its requests per minute a tenant gets 429 with Retry-After and OpenAI's headers", async () => {
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 4; i++) {
      last = await post("/v1/completions", KEY_A, { prompt: `limit ${i}`, max_tokens: 1 });
      statuses.push(last.status);
      if (i < 3) await last.text();
    }
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(1);
    expect(last!.status).toBe(429);
    expect(Number(last!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(last!.headers.get("x-ratelimit-remaining-requests")).toBe("0");
    expect(((await last!.json()) as { error: { code: string } }).error.code).toBe(
      "rate_limit_exceeded",
    );
  });

  test("a new version of the keys file is picked up; a broken one keeps the keys in force, logged by entry and field", async () => {
    expect((await post("/v1/completions", KEY_B, { prompt: "b", max_tokens: 1 })).status).toBe(401);
    publish(await keysYaml(true));
    await until(async () => {
      const r = await post("/v1/completions", KEY_B, { prompt: "b", max_tokens: 1 });
      await r.text();
      return r.status === 200;
    }, "bravo's key to be accepted after the file changed");
    publish(`keys:\n  - tenant: alpha\n    key_sha256: not-a-hash\n`);
    await until(
      () => router!.output().includes("keys[0].key_sha256"),
      "the broken file to be logged with its entry and field",
    );
    const still = await post("/v1/completions", KEY_B, { prompt: "b", max_tokens: 1 });
    expect(still.status).toBe(200);
    await still.text();
  });

  test("no key appears in the router's output, the engines' output or /metrics", async () => {
    // Something in every place a key could leak: requests with each key, good and wrong.
    for (const key of [KEY_A, KEY_B, WRONG])
      await (await post("/v1/completions", key, { prompt: "leak?", max_tokens: 1 })).text();
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toContain("switchyard_api_key_failures_total");
    const everywhere = [router!.output(), ...engines.map((e) => e.output()), metrics].join("\n");
    for (const key of [KEY_A, KEY_B, WRONG]) {
      expect(everywhere).not.toContain(key);
      // Nor a recognisable part of one.
      expect(everywhere).not.toContain(key.slice(-24));
    }
  });
});
