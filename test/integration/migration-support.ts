/**
 * Shared parts of the stream-migration tests: streams read as they arrive (so a test can wait
 * until every stream is under way before it kills an engine), what the client assembled from
 * each (text, role chunks, [DONE], usage, errors), and the reference answer the same seeded
 * engine writes for the whole request.
 */
import { startMain, until, type Proc } from "../support/processes.ts";
import { startRouter, urlOf } from "./multi-router-cluster.ts";

export type Kind = "completions" | "chat";

export interface Assembled {
  readonly text: string;
  /** Chunks announcing the assistant role (chat). */
  readonly roles: number;
  readonly dones: number;
  readonly errors: number;
  /** Choice indexes seen, in order (one per chunk with a choice). */
  readonly indexes: number[];
  readonly ids: Set<string>;
  readonly usage:
    | { prompt_tokens: number; completion_tokens: number; total_tokens: number }
    | undefined;
  /** SSE comments (the router's note of a move). */
  readonly notes: string[];
}

/** What a client assembles from an OpenAI SSE stream. */
export function assemble(raw: string): Assembled {
  let text = "";
  let roles = 0;
  let dones = 0;
  let errors = 0;
  const indexes: number[] = [];
  const ids = new Set<string>();
  const notes: string[] = [];
  let usage: Assembled["usage"];
  for (const line of raw.split("\n")) {
    if (line.startsWith(":")) notes.push(line);
    if (!line.startsWith("data: ")) continue;
    const data = line.slice(6);
    if (data === "[DONE]") {
      dones++;
      continue;
    }
    const c = JSON.parse(data) as {
      id?: string;
      error?: unknown;
      usage?: Assembled["usage"];
      choices?: { index: number; text?: string; delta?: { role?: string; content?: string } }[];
    };
    if (c.error !== undefined) {
      errors++;
      continue;
    }
    if (c.id !== undefined) ids.add(c.id);
    if (c.usage) usage = c.usage;
    for (const ch of c.choices ?? []) {
      indexes.push(ch.index);
      if (ch.delta?.role !== undefined) roles++;
      text += ch.text ?? ch.delta?.content ?? "";
    }
  }
  return { text, roles, dones, errors, indexes, ids, usage, notes };
}

export interface Live {
  status: number;
  worker: string;
  raw: string;
  /** Set when the client saw its connection break. */
  broken: string | undefined;
  readonly done: Promise<void>;
}

export function path(kind: Kind): string {
  return kind === "chat" ? "/v1/chat/completions" : "/v1/completions";
}

/** A streamed request whose bytes are kept as they arrive. */
export function openStream(
  url: string,
  kind: Kind,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Live {
  const live: Live = { status: 0, worker: "", raw: "", broken: undefined, done: Promise.resolve() };
  (live as { done: Promise<void> }).done = (async () => {
    try {
      const r = await fetch(`${url}${path(kind)}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ ...body, stream: true }),
      });
      live.status = r.status;
      live.worker = r.headers.get("x-switchyard-worker") ?? "";
      const dec = new TextDecoder();
      for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>)
        live.raw += dec.decode(chunk, { stream: true });
    } catch (e) {
      live.broken = (e as Error).message;
    }
  })();
  return live;
}

/** Output characters received so far (one per token with the simulated engine). */
export function received(live: Live): number {
  let n = 0;
  for (const m of live.raw.matchAll(/"(?:text|content)":"([^"]*)"/g)) n += m[1]!.length;
  return n;
}

/** The body of request `i`: a seeded request of `maxTokens`, its prompt its own. */
export function requestBody(kind: Kind, i: number, maxTokens: number): Record<string, unknown> {
  const prompt = `request ${i}: tell me, at length, about routers and their caches`;
  const common = {
    max_tokens: maxTokens,
    seed: 1000 + i,
    temperature: 0.7,
    stream_options: { include_usage: true },
  };
  return kind === "chat"
    ? {
        ...common,
        messages: [
          { role: "system", content: "be brief" },
          { role: "user", content: prompt },
        ],
      }
    : { ...common, prompt };
}

/** What the same seeded engine writes for the whole request, asked of `engineUrl` directly, not streamed. */
export async function reference(
  engineUrl: string,
  kind: Kind,
  body: Record<string, unknown>,
): Promise<{ text: string; usage: { prompt_tokens: number; completion_tokens: number } }> {
  const r = await fetch(`${engineUrl}${path(kind)}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...body, stream: false, stream_options: undefined }),
  });
  if (r.status !== 200) throw new Error(`reference: HTTP ${r.status} ${await r.text()}`);
  const j = (await r.json()) as {
    choices: { text?: string; message?: { content: string } }[];
    usage: { prompt_tokens: number; completion_tokens: number };
  };
  return { text: j.choices[0]!.text ?? j.choices[0]!.message!.content, usage: j.usage };
}

/** `n` simulated engines with the same model seed (so any of them continues another's text). */
export function startSameEngines(n: number, extra: readonly string[] = []): Promise<Proc[]> {
  return Promise.all(
    Array.from({ length: n }, () =>
      startMain([
        "mocker",
        "--port",
        "0",
        "--block-size",
        "16",
        "--seed",
        "3",
        "--decode-ms-per-step",
        "25",
        "--event-batch-ms",
        "2",
        ...extra,
      ]),
    ),
  );
}

/**
 * 4 same-seeded engines and a router with short health checks and deadlines; the processes go
 * into `procs` (the caller stops them).
 */
export async function cluster(
  procs: Proc[],
  extra: readonly string[] = [],
  adminHeaders: Record<string, string> = {},
) {
  const engines = await startSameEngines(4);
  procs.push(...engines);
  const router = await startRouter(engines, 0, [
    "--log-level",
    "error",
    "--health-interval",
    "0.2",
    "--health-timeout",
    "0.3",
    "--stream-idle-timeout",
    "2",
    "--first-byte-timeout",
    "5",
    ...extra,
  ]);
  procs.push(router);
  const url = urlOf(router);
  await until(
    async () => (await adminWorkers(url, adminHeaders)).every((w) => w.healthy),
    "every engine to be healthy",
  );
  return { url, engines };
}

/** GET /v1/workers with the admin's headers (--api-keys closes the admin API to anyone without its token). */
export async function adminWorkers(
  url: string,
  headers: Record<string, string>,
): Promise<
  {
    id: string;
    url: string;
    healthy: boolean;
    active_prefill_tokens: number;
    active_decode_blocks: number;
  }[]
> {
  const r = await fetch(`${url}/v1/workers`, { headers });
  if (r.status !== 200) throw new Error(`GET /v1/workers: HTTP ${r.status}`);
  return (
    (await r.json()) as {
      workers: {
        id: string;
        url: string;
        healthy: boolean;
        active_prefill_tokens: number;
        active_decode_blocks: number;
      }[];
    }
  ).workers;
}

/** The engine serving the most streams (by the router's x-switchyard-worker), as a process. */
export async function busiest(
  url: string,
  engines: readonly Proc[],
  streams: { live: Live }[],
  adminHeaders: Record<string, string> = {},
): Promise<{ proc: Proc; on: number }> {
  const ws = await adminWorkers(url, adminHeaders);
  const count = new Map<string, number>();
  for (const s of streams) count.set(s.live.worker, (count.get(s.live.worker) ?? 0) + 1);
  const [id, on] = [...count.entries()].sort((a, b) => b[1] - a[1])[0]!;
  const u = ws.find((w) => w.id === id)!.url;
  return { proc: engines.find((e) => urlOf(e) === u)!, on };
}

/** The whole request's logprobs, asked of one engine directly, not streamed. */
export async function wholeLogprobs(engineUrl: string, kind: Kind, body: Record<string, unknown>) {
  const r = await fetch(`${engineUrl}${path(kind)}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...body, stream: false, stream_options: undefined }),
  });
  const j = (await r.json()) as { choices: { logprobs: unknown }[] };
  return j.choices[0]!.logprobs;
}
