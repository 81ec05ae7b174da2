/**
 * A small real fleet to look at: simulated engines (real processes pushing KV events to the
 * router), optionally one vLLM-like worker whose KV events come over ZMQ (the Python stand-in
 * publisher), a real router, and client load with shared prefixes (cache hits), streamed and
 * whole answers, and a few bad requests, as a real fleet sees. Every process is stopped by PID.
 */
import { freePorts, startMain, stopAll, until, type Proc } from "./processes.ts";
import { startStandInVllm, type StandInVllm } from "./stand-in-vllm.ts";
import { pythonZmqProblem, VllmPublisherProcess } from "./vllm-kv-publisher.ts";

/** Engines push events with their own credential (never the admin token); derived so each fleet has its own. */
const eventsToken = (adminToken: string): string => `events-${adminToken}-0123456789`;

export const FLEET_MODEL = "sim";

export interface FleetOptions {
  readonly engines: number;
  /** Also one vLLM stand-in with a ZMQ KV event stream (needs python3-zmq). */
  readonly zmqWorker?: boolean;
  readonly adminToken?: string;
  readonly routerArgs?: readonly string[];
  readonly engineArgs?: readonly string[];
  /** Other engines (already running) the router starts with; they must pass health checks too. */
  readonly extraWorkers?: readonly string[];
}

export interface Fleet {
  readonly url: string;
  readonly router: Proc;
  readonly engines: Proc[];
  /** Why the ZMQ worker is not there (no python3-zmq), when it was asked for. */
  readonly zmqProblem: string | undefined;
  readonly headers: Record<string, string>;
  /** `concurrency` clients for `seconds` (or `requests` in all); resolves with how many requests finished per status. */
  load(seconds: number, concurrency: number, requests?: number): Promise<Map<number, number>>;
  stop(): Promise<void>;
}

const CONVERSATIONS = Array.from(
  { length: 6 },
  (_, i) =>
    `You are assistant number ${i}. Here is a long shared system prompt about topic ${i}: ${"context ".repeat(40)}`,
);

export async function startFleet(o: FleetOptions): Promise<Fleet> {
  const [port] = freePorts(1);
  const url = `http://127.0.0.1:${port}`;
  const token = o.adminToken;
  const headers: Record<string, string> =
    token !== undefined ? { authorization: `Bearer ${token}` } : {};
  const engines: Proc[] = [];
  let router: Proc | undefined;
  let publisher: VllmPublisherProcess | undefined;
  let vllm: StandInVllm | undefined;
  const zmqProblem = o.zmqWorker ? pythonZmqProblem() : undefined;
  if (zmqProblem !== undefined) console.warn(`the fleet has no ZMQ worker: ${zmqProblem}`);
  const stop = async () => {
    await stopAll([router, ...engines]);
    await publisher?.stop();
    vllm?.server.stop(true);
  };
  try {
    const common = [
      "--model",
      FLEET_MODEL,
      "--event-batch-ms",
      "5",
      "--decode-ms-per-step",
      "3",
      ...(token ? ["--admin-token", token, "--events-token", eventsToken(token)] : []),
      ...(o.engineArgs ?? []),
    ];
    engines.push(
      ...(await Promise.all(
        Array.from({ length: o.engines }, (_, i) =>
          startMain([
            "mocker",
            "--port",
            "0",
            "--router-url",
            url,
            "--seed",
            String(i + 1),
            ...common,
          ]),
        ),
      )),
    );
    router = await startMain([
      "serve",
      "--port",
      String(port),
      "--host",
      "127.0.0.1",
      "--health-interval",
      "0.5",
      "--engine-metrics-interval",
      "0.5",
      "--log-level",
      "warn",
      ...(token ? ["--admin-token", token, "--events-token", eventsToken(token)] : []),
      ...engines.flatMap((e) => ["--worker", String(e.info.url)]),
      ...(o.extraWorkers ?? []).flatMap((u) => ["--worker", u]),
      ...(o.routerArgs ?? []),
    ]);
    if (o.zmqWorker && zmqProblem === undefined) {
      vllm = startStandInVllm();
      publisher = await VllmPublisherProcess.start();
      const r = await fetch(`${url}/v1/workers`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({
          url: vllm.url,
          kv_events: { endpoint: publisher.pub, replay_endpoint: publisher.replay },
        }),
      });
      if (!r.ok) throw new Error(`registering the ZMQ worker: ${r.status} ${await r.text()}`);
      await publisher.waitSubscriber();
      await publisher.publish([
        {
          events: [
            {
              type: "BlockStored",
              block_hashes: [1, 2],
              parent_block_hash: null,
              token_ids: Array.from({ length: 32 }, (_, i) => i),
              block_size: 16,
              lora_id: null,
              medium: "GPU",
            },
          ],
        },
      ]);
    }
    const expected = o.engines + (vllm ? 1 : 0) + (o.extraWorkers?.length ?? 0);
    await until(
      async () =>
        ((await (await fetch(`${url}/health`)).json()) as { healthy_workers: number })
          .healthy_workers === expected,
      `${expected} healthy workers`,
      20_000,
    );
  } catch (e) {
    await stop();
    throw e;
  }
  const r = router;

  const load = async (
    seconds: number,
    concurrency: number,
    requests = Infinity,
  ): Promise<Map<number, number>> => {
    const end = performance.now() + seconds * 1000;
    const statuses = new Map<number, number>();
    let n = 0;
    const client = async (c: number) => {
      while (performance.now() < end && n < requests) {
        const i = n++;
        // One request in 25 is a client's mistake (a prompt that is not text or tokens): a 400 the router answers itself.
        const bad = i % 25 === 24;
        const body = bad
          ? { model: FLEET_MODEL, prompt: 3 }
          : {
              model: FLEET_MODEL,
              prompt: `${CONVERSATIONS[(i + c) % CONVERSATIONS.length]} turn ${i}`,
              max_tokens: 6,
              stream: i % 2 === 0,
            };
        try {
          // Half the clients hold a sticky session, half are routed afresh on every request.
          const session: Record<string, string> =
            c % 2 === 0 ? { "x-session-id": `client-${c}` } : {};
          const res = await fetch(`${url}/v1/completions`, {
            method: "POST",
            headers: { "content-type": "application/json", ...session },
            body: JSON.stringify(body),
          });
          await res.arrayBuffer();
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        } catch {
          statuses.set(0, (statuses.get(0) ?? 0) + 1);
        }
      }
    };
    await Promise.all(Array.from({ length: concurrency }, (_, c) => client(c)));
    return statuses;
  };

  return { url, router: r, engines, zmqProblem, headers, load, stop };
}
