/**
 * Seeded fuzz of every input surface of a real router process (one simulated engine behind
 * it): the bodies of /v1/completions, /v1/chat/completions (with nvext and session
 * headers), /v1/route, /v1/kv/events and /v1/workers, raw bytes to each, and JSON numbers
 * of tens of thousands of digits. Invariants (issue 12 §8): bad input is never a 5xx and
 * never kills the process; every 4xx has OpenAI's error shape and its message names what is
 * wrong (a field, the header, or the body itself); the router answers /livez afterwards.
 * fast-check prints the seed and the shrunk counterexample on failure; the same seed replays it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { startEngines, startRouter, urlOf } from "../integration/multi-router-cluster.ts";
import { stopAll, type Proc } from "../support/processes.ts";

const SEED = 12_003;
const RUNS = 120;

let engines: Proc[] = [];
let router: Proc | undefined;
let url = "";
let workerId = "";

beforeAll(async () => {
  engines = await startEngines(1, [], ["--speedup", "50", "--max-loras", "1"]);
  router = await startRouter(engines, 0, [
    "--lora-load-on-demand",
    "--log-level",
    "error",
    "--max-session-id-length",
    "64",
  ]);
  url = urlOf(router);
  const listed = (await (await fetch(`${url}/v1/workers`)).json()) as { workers: { id: string }[] };
  workerId = listed.workers[0]!.id;
});
afterAll(() => stopAll([router, ...engines]));

interface Answer {
  status: number;
  text: string;
}

/** Statuses seen per route, so the last test can check the fuzz reached both sides. */
const seen = new Map<string, Map<number, number>>();

async function post(
  path: string,
  body: string | Uint8Array,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const res = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
  const route = path.startsWith("/v1/route/") ? "/v1/route/:id" : path;
  const m = seen.get(route) ?? new Map<number, number>();
  m.set(res.status, (m.get(res.status) ?? 0) + 1);
  seen.set(route, m);
  const text = await res.text();
  return { status: res.status, text };
}

/** A field reference a message starts with or holds: `prompt:`, `nvext.session_control.timeout:`, `x-session-id:`. */
const NAMES_WHAT = /(^|[\s(])[\w.[\]-]+: |request body|model|url|worker/i;

const CAPACITY_CODES = ["lora_no_capacity", "all_workers_busy"];

/** The invariants every answer to generated input must keep. */
function checkAnswer(a: Answer, what: string): void {
  const where = `${what} -> ${a.status} ${a.text.slice(0, 300)}`;
  // A valid request may meet a full cluster (one engine with one LoRA slot here): that 503
  // is about capacity, not about the input, and is allowed; any other 5xx is a bug.
  if (
    a.status >= 500 &&
    !(a.status === 503 && CAPACITY_CODES.some((c) => a.text.includes(`"code":"${c}"`)))
  ) {
    throw new Error(`5xx for bad input: ${where}`);
  }
  if (a.status >= 400) {
    let err: { message?: unknown; type?: unknown; code?: unknown } | undefined;
    try {
      err = (JSON.parse(a.text) as { error?: typeof err }).error;
    } catch {
      throw new Error(`4xx without a JSON body: ${where}`);
    }
    if (
      !err ||
      typeof err.message !== "string" ||
      typeof err.type !== "string" ||
      err.code === undefined
    )
      throw new Error(`4xx not in OpenAI's shape: ${where}`);
    if (!NAMES_WHAT.test(err.message)) throw new Error(`4xx message names nothing: ${where}`);
  }
}

/** JSON values of every kind, huge numbers and odd strings included. */
const anyJson: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  v: fc.oneof(
    { depthSize: "small" },
    fc.string({ maxLength: 20 }),
    fc.constantFrom("", "../../../etc/passwd", "\u0000", "💥", "a".repeat(300)),
    fc.double(),
    fc.integer(),
    fc.constantFrom(2 ** 53 + 1, -1, 0, 1e308),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("v"), { maxLength: 5 }),
    fc.dictionary(fc.string({ maxLength: 8 }), tie("v"), { maxKeys: 5 }),
  ),
})).v;

/** Objects shaped like requests: known keys with any value, plus noise. */
function requestLike(
  keys: Record<string, fc.Arbitrary<unknown>>,
): fc.Arbitrary<Record<string, unknown>> {
  const known = fc.record(
    // Mostly a value of the right kind (so whole requests get through), sometimes anything.
    Object.fromEntries(
      Object.entries(keys).map(([k, a]) => [
        k,
        fc.oneof({ weight: 8, arbitrary: a }, { weight: 1, arbitrary: anyJson }),
      ]),
    ),
    { requiredKeys: [] },
  );
  return fc
    .tuple(known, fc.dictionary(fc.string({ maxLength: 6 }), anyJson, { maxKeys: 1 }))
    .map(([k, extra]) => ({ ...extra, ...k }));
}

const prompt = fc.oneof(
  fc.string({ maxLength: 64 }),
  fc.array(fc.integer({ min: -2, max: 200_000 }), { maxLength: 40 }),
  fc.array(fc.string({ maxLength: 8 }), { maxLength: 3 }),
);
const smallTokens = fc.constantFrom(1, 2, 0, -1, 1.5, "3");
const sessionControl = fc.record(
  {
    session_id: fc.oneof(fc.string({ maxLength: 80 }), anyJson),
    action: fc.constantFrom("open", "close", "nope", undefined),
    timeout: fc.oneof(fc.double(), fc.constantFrom(1, 0, -1)),
  },
  { requiredKeys: [] },
);
const nvext = fc.oneof(
  fc.record({ session_control: fc.oneof(sessionControl, anyJson) }, { requiredKeys: [] }),
  anyJson,
);
const model = fc.constantFrom(
  undefined,
  undefined,
  undefined,
  "switchyard-sim",
  "missing-model",
  "../../../../root/.ssh/id_rsa",
  "team/adapter",
  "a b",
  7,
);
/** Header values fetch can send: visible ASCII, sometimes past the 64-character limit. */
const sessionHeader = fc.oneof(fc.constant(undefined), fc.stringMatching(/^[!-~]{1,100}$/));

/** Valid requests (so the fuzz also reaches routing, sessions and the engine) or odd ones. */
const goodPrompt = fc.oneof(
  fc.string({ minLength: 1, maxLength: 64 }),
  fc.array(fc.integer({ min: 0, max: 30_000 }), { minLength: 1, maxLength: 40 }),
);
const goodSessionControl = fc.record({
  session_control: fc.record(
    {
      session_id: fc.stringMatching(/^[a-z0-9-]{1,70}$/),
      action: fc.constantFrom("open", "close", undefined),
      timeout: fc.constantFrom(1, 30, undefined),
    },
    { requiredKeys: ["session_id"] },
  ),
});
const completionBody = fc.oneof(
  fc.record(
    {
      prompt: goodPrompt,
      max_tokens: fc.constant(1),
      model: fc.constantFrom(undefined, "switchyard-sim"),
      stream: fc.boolean(),
      nvext: fc.option(goodSessionControl, { nil: undefined }),
    },
    { requiredKeys: ["prompt", "max_tokens"] },
  ),
  requestLike({
    prompt,
    max_tokens: smallTokens,
    model,
    stream: fc.boolean(),
    nvext,
    priority: fc.integer(),
  }),
);
const goodChat = fc.record(
  {
    messages: fc.array(
      fc.record({
        role: fc.constantFrom("user", "system", "assistant"),
        content: fc.string({ minLength: 1, maxLength: 40 }),
      }),
      { minLength: 1, maxLength: 4 },
    ),
    max_tokens: fc.constant(1),
    stream: fc.boolean(),
    nvext: fc.option(goodSessionControl, { nil: undefined }),
  },
  { requiredKeys: ["messages", "max_tokens"] },
);
const oddChat = requestLike({
  messages: fc.oneof(
    fc.array(
      fc.record({
        role: fc.constantFrom("user", "system", "assistant", "tool", "x"),
        content: fc.oneof(fc.string({ maxLength: 30 }), anyJson),
      }),
      { maxLength: 4 },
    ),
    anyJson,
  ),
  max_tokens: smallTokens,
  model,
  stream: fc.boolean(),
  nvext,
});
const chatBody = fc.oneof(goodChat, oddChat);

describe(`HTTP input fuzz against a real router (seed ${SEED})`, () => {
  test("/v1/completions and /v1/chat/completions: bodies, nvext, session headers", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        completionBody,
        chatBody,
        sessionHeader,
        async (chat, cBody, chBody, session) => {
          const body = chat ? chBody : cBody;
          if (typeof body.max_tokens !== "number" || body.max_tokens > 2) body.max_tokens = 1;
          const headers: Record<string, string> =
            session === undefined ? {} : { "x-session-id": session };
          const a = await post(
            chat ? "/v1/chat/completions" : "/v1/completions",
            JSON.stringify(body),
            headers,
          );
          checkAnswer(
            a,
            `${chat ? "chat" : "completions"} ${JSON.stringify(body).slice(0, 300)} session=${session}`,
          );
        },
      ),
      { seed: SEED, numRuns: RUNS },
    );
  }, 120_000);

  test("/v1/route: tokens, lora, session_id, request_id (booked loads freed)", async () => {
    const routeBody = requestLike({
      tokens: fc.array(fc.integer({ min: -1, max: 2 ** 32 }), { maxLength: 40 }),
      lora: fc.oneof(fc.constant(null), fc.string({ maxLength: 10 })),
      session_id: fc.oneof(fc.string({ maxLength: 80 }), fc.constant(null)),
      request_id: fc.oneof(fc.string({ maxLength: 12 }), fc.constant(null)),
    });
    await fc.assert(
      fc.asyncProperty(routeBody, async (body) => {
        const a = await post("/v1/route", JSON.stringify(body));
        checkAnswer(a, `route ${JSON.stringify(body).slice(0, 300)}`);
        if (a.status === 200) {
          const id = (JSON.parse(a.text) as { request_id: string }).request_id;
          await post(`/v1/route/${encodeURIComponent(id)}/free`, "");
        }
      }),
      { seed: SEED, numRuns: RUNS },
    );
  }, 120_000);

  test("/v1/kv/events: event arrays with odd ids, hashes and huge numbers", async () => {
    const u64ish = fc.oneof(
      fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String),
      fc.constantFrom("9".repeat(60_000), "-1", "1.5", "0x10"),
      anyJson,
    );
    const block = fc.record({ block_hash: u64ish, tokens_hash: u64ish }, { requiredKeys: [] });
    const data = fc.oneof(
      fc.record({
        stored: fc.record(
          {
            parent_hash: fc.oneof(u64ish, fc.constant(null)),
            blocks: fc.oneof(fc.array(block, { maxLength: 4 }), anyJson),
          },
          { requiredKeys: [] },
        ),
      }),
      fc.record({
        removed: fc.record({ block_hashes: fc.oneof(fc.array(u64ish, { maxLength: 4 }), anyJson) }),
      }),
      fc.constant("cleared"),
      anyJson,
    );
    const event = fc.record(
      {
        worker_id: fc.oneof(fc.constant("KNOWN"), u64ish),
        event: fc.oneof(
          fc.record(
            { event_id: fc.oneof(fc.nat(), u64ish), dp_rank: fc.oneof(fc.nat(3), anyJson), data },
            { requiredKeys: [] },
          ),
          anyJson,
        ),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.array(event, { maxLength: 4 }), anyJson), async (events) => {
        // Bare integers (a raw JSON literal, not a string) for u64 fields, as engines send them.
        const text = JSON.stringify(events)
          .replaceAll('"KNOWN"', workerId)
          .replace(/"(-?\d{16,})"/g, "$1");
        const a = await post("/v1/kv/events", text);
        checkAnswer(a, `kv/events ${text.slice(0, 300)}`);
      }),
      { seed: SEED, numRuns: RUNS },
    );
  }, 120_000);

  test("/v1/workers: registrations with odd URLs, ids and fields", async () => {
    const closedPort = fc.constantFrom(1, 9, 65_535);
    const workerUrl = fc.oneof(
      closedPort.map((p) => `http://127.0.0.1:${p}`),
      fc.constantFrom(
        "",
        "ftp://x",
        "http://",
        "not a url",
        url,
        "http://[::1]:0",
        "javascript:alert(1)",
      ),
      anyJson,
    );
    const reg = requestLike({
      url: workerUrl,
      id: fc.oneof(fc.bigInt({ min: -1n, max: 2n ** 65n }).map(String), fc.nat()),
      dp_ranks: fc.integer({ min: -1, max: 5000 }),
      block_size: fc.constantFrom(16, 0, 32, -1),
      loras: fc.array(fc.string({ maxLength: 6 }), { maxLength: 3 }),
      max_loras: fc.integer({ min: -1, max: 10 }),
      model: fc.string({ maxLength: 10 }),
    });
    await fc.assert(
      fc.asyncProperty(reg, async (body) => {
        const a = await post("/v1/workers", JSON.stringify(body));
        checkAnswer(a, `workers ${JSON.stringify(body).slice(0, 300)}`);
        if (a.status === 200 || a.status === 201) {
          const id = (JSON.parse(a.text) as { id: string }).id;
          if (id !== workerId) await fetch(`${url}/v1/workers/${id}`, { method: "DELETE" });
        }
      }),
      { seed: SEED, numRuns: 60 },
    );
  }, 120_000);

  test("raw bytes (not JSON, not UTF-8, empty, truncated) to every POST route", async () => {
    const routes = [
      "/v1/completions",
      "/v1/chat/completions",
      "/v1/route",
      "/v1/kv/events",
      "/v1/workers",
    ];
    const raw = fc.oneof(
      fc.uint8Array({ maxLength: 64 }),
      fc
        .constantFrom(
          "",
          "{",
          '{"prompt":',
          "[1,2",
          '{"a":"\\',
          `{"n":${"7".repeat(60_000)}.5}`,
          "null",
          "[]",
          '"x"',
          "1e999",
        )
        .map((s) => new TextEncoder().encode(s)),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...routes), raw, async (route, bytes) => {
        const a = await post(route, bytes);
        checkAnswer(a, `${route} raw ${Buffer.from(bytes.subarray(0, 40)).toString("hex")}`);
      }),
      { seed: SEED, numRuns: RUNS },
    );
  }, 120_000);

  test("the fuzz reached both accepted and refused input on every route", () => {
    const summary = Object.fromEntries([...seen].map(([r, m]) => [r, Object.fromEntries(m)]));
    if (process.env.FUZZ_SUMMARY) console.error(JSON.stringify(summary));
    for (const route of [
      "/v1/completions",
      "/v1/chat/completions",
      "/v1/route",
      "/v1/kv/events",
      "/v1/workers",
    ]) {
      const statuses = [...(seen.get(route)?.keys() ?? [])];
      expect({
        route,
        accepted: statuses.some((s) => s < 300),
        refused: statuses.some((s) => s >= 400),
        summary,
      }).toMatchObject({ route, accepted: true, refused: true });
    }
  });

  test("the router is still alive and serving", async () => {
    expect((await fetch(`${url}/livez`)).status).toBe(200);
    expect(router!.proc.exitCode).toBeNull();
    const res = await fetch(`${url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: "still here", max_tokens: 1 }),
    });
    expect(res.status).toBe(200);
    await res.text();
  });
});
