/**
 * `bun src/main.ts serve --engines 2` (what `bun run start` runs): one process, two
 * embedded simulated engines, ready for curl. Also the command dispatch of main.ts.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import {
  freePort,
  MAIN,
  ROOT,
  startMain,
  stopAll,
  until,
  type Proc,
} from "../support/processes.ts";

// Real processes: starting them and polling their state takes longer than the 5 s default.
setDefaultTimeout(30_000);

let router: Proc | undefined;
let url = "";

beforeAll(async () => {
  const port = freePort();
  router = await startMain(["serve", "--engines", "2", "--port", String(port)]);
  url = `http://127.0.0.1:${port}`;
  expect(router.info.url).toBe(url);
});

afterAll(async () => {
  await stopAll([router]);
});

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split("\n"))
    if (line.startsWith(name)) sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  return sum;
}

test("a curl-like completion is answered with routing headers, and /metrics moves", async () => {
  const health = (await (await fetch(`${url}/health`)).json()) as {
    workers: number;
    healthy_workers: number;
  };
  expect(health).toMatchObject({ workers: 2, healthy_workers: 2 });
  const before = await metric("switchyard_requests_total");

  const r = await fetch(`${url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "switchyard-sim",
      prompt: "Hello from the start command test",
      max_tokens: 4,
    }),
  });
  expect(r.status).toBe(200);
  const body = (await r.json()) as { choices: { text: string }[] };
  expect(body.choices[0]!.text.length).toBeGreaterThan(0);
  expect(r.headers.get("x-switchyard-worker")).toMatch(/^\d+$/);
  expect(r.headers.get("x-switchyard-dp-rank")).toBe("0");
  expect(r.headers.get("x-switchyard-overlap-blocks")).toMatch(/^\d+$/);

  await until(
    async () => (await metric("switchyard_requests_total")) === before + 1,
    "requests_total to count the request",
  );
  expect(await metric('switchyard_routing_overhead_seconds_count{phase="total"}')).toBeGreaterThan(
    0,
  );
  // The embedded engines push their KV events to this router.
  await until(
    async () => (await metric("switchyard_index_blocks")) > 0,
    "the index to hold the prompt's blocks",
  );
});

test("without an admin token, admin endpoints answer loopback clients", async () => {
  const r = await fetch(`${url}/v1/workers`);
  expect(r.status).toBe(200);
  const { workers } = (await r.json()) as { workers: { id: string; healthy: boolean }[] };
  expect(workers.length).toBe(2);
  expect(workers.every((w) => w.healthy)).toBe(true);
});

test("every command answers --help", () => {
  for (const [cmd, needle] of [
    ["serve", "--worker"],
    ["mocker", "--kv-blocks"],
    ["transfer", "switchyard transfer"],
  ] as const) {
    const r = Bun.spawnSync({ cmd: [process.execPath, MAIN, cmd, "--help"], cwd: ROOT });
    expect(r.exitCode).toBe(0);
    expect(r.stdout.toString()).toContain(needle);
  }
});

test("unknown commands and bad flags fail with a message", async () => {
  const unknown = Bun.spawnSync({ cmd: [process.execPath, MAIN, "frobnicate"], cwd: ROOT });
  expect(unknown.exitCode).toBe(2);
  expect(unknown.stderr.toString()).toContain('unknown command "frobnicate"');
  expect(unknown.stderr.toString()).toContain("serve");
  expect(unknown.stderr.toString()).not.toContain("did you mean");
  const typo = Bun.spawnSync({ cmd: [process.execPath, MAIN, "mockr"], cwd: ROOT });
  expect(typo.exitCode).toBe(2);
  expect(typo.stderr.toString()).toContain('unknown command "mockr"; did you mean "mocker"?');
  const flag = Bun.spawnSync({
    cmd: [process.execPath, MAIN, "serve", "--blok-size", "16"],
    cwd: ROOT,
  });
  expect(flag.exitCode).toBe(2);
  expect(flag.stderr.toString()).toContain("--blok-size: unknown flag; did you mean --block-size?");

  const bad = Bun.spawnSync({
    cmd: [process.execPath, MAIN, "serve", "--port", "x", "--policy", "nope"],
    cwd: ROOT,
  });
  expect(bad.exitCode).toBe(2);
  const err = bad.stderr.toString();
  expect(err).toContain("--port");
  expect(err).toContain("--policy");
});
