/**
 * `--zmq-endpoint URL=tcp://H:P`, `--zmq-replay-endpoint URL=tcp://H:P` and `--zmq-dp-ranks
 * URL=N`: a vLLM worker's URL paired with where it publishes its KV events, its replay
 * endpoint and its data-parallel rank count. Three options, joined by worker URL into one
 * `ZmqWorker` each once all three are parsed (schema.ts, finishConfig). Parsing only.
 */
import * as v from "valibot";
import { MAX_DP_RANKS } from "../fleet/membership.ts";
import { toList } from "./values.ts";

/** vLLM's ZMQ endpoints: tcp://host:port, ipc://path or inproc://name. */
const ZMQ_SCHEMES = ["tcp://", "ipc://", "inproc://"];

/** One `WORKER_URL=ENDPOINT` pair. */
export interface ZmqEndpointPair {
  /** The worker's HTTP base URL (it is registered with it). */
  readonly workerUrl: string;
  /** Its rank-0 endpoint; rank r uses endpointForDpRank(endpoint, r). */
  readonly endpoint: string;
}

/** A vLLM worker whose KV events come over ZMQ. */
export interface ZmqWorker extends ZmqEndpointPair {
  readonly replayEndpoint: string | undefined;
  /** Data-parallel ranks publishing (--zmq-dp-ranks; default 1). */
  readonly dpRanks: number;
}

/** One `WORKER_URL=N` pair of --zmq-dp-ranks. */
export interface DpRanksPair {
  readonly workerUrl: string;
  readonly dpRanks: number;
}

/** "http://w:8000=tcp://w:5557" -> pair; the split is at the last "=" (endpoints have none). */
export function parseZmqPair(s: string): ZmqEndpointPair | string {
  const eq = s.lastIndexOf("=");
  if (eq <= 0) return `must be WORKER_URL=tcp://host:port (got ${JSON.stringify(s)})`;
  const workerUrl = s.slice(0, eq).trim();
  const endpoint = s.slice(eq + 1).trim();
  try {
    const u = new URL(workerUrl);
    if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error("scheme");
  } catch {
    return `worker URL must be http:// or https:// (got ${JSON.stringify(workerUrl)})`;
  }
  if (!ZMQ_SCHEMES.some((p) => endpoint.startsWith(p) && endpoint.length > p.length)) {
    return `endpoint must be tcp://host:port, ipc://path or inproc://name (got ${JSON.stringify(endpoint)})`;
  }
  return { workerUrl, endpoint };
}

/** "URL=N" -> pair, N an integer in [1, MAX_DP_RANKS]: the one cap every source of a rank count shares. */
function parseDpRanksPair(s: string): DpRanksPair | string {
  const eq = s.lastIndexOf("=");
  const n = Number(s.slice(eq + 1).trim());
  if (eq <= 0 || !Number.isInteger(n) || n < 1 || n > MAX_DP_RANKS)
    return `must be WORKER_URL=N with N an integer in [1, ${MAX_DP_RANKS}] (got ${JSON.stringify(s)})`;
  return { workerUrl: s.slice(0, eq).trim(), dpRanks: n };
}

/** A list (or comma list) of pairs, each parsed by `parse`; the first bad one is the issue. */
const pairs = <T>(shape: string, parse: (s: string) => T | string) =>
  v.pipe(
    v.unknown(),
    v.transform(toList),
    v.array(v.string(`must be ${shape}`), `must be a list of ${shape}`),
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      const out: T[] = [];
      for (const item of dataset.value) {
        const p = parse(item);
        if (typeof p === "string") {
          addIssue({ message: p });
          return NEVER;
        }
        out.push(p);
      }
      return out;
    }),
  );

export const zmqPairs = pairs("WORKER_URL=ENDPOINT", parseZmqPair);
export const dpRankPairs = pairs("WORKER_URL=N", parseDpRanksPair);
/** --zmq-endpoint: each a worker of its own, without replay endpoint and with one rank until finishConfig joins the other two. */
export const zmqWorkers = v.pipe(
  zmqPairs,
  v.transform((list): ZmqWorker[] =>
    list.map((p) => ({ ...p, replayEndpoint: undefined, dpRanks: 1 })),
  ),
);

export function sameWorkerUrl(a: string, b: string): boolean {
  return a.replace(/\/+$/, "").toLowerCase() === b.replace(/\/+$/, "").toLowerCase();
}
