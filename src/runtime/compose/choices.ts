/**
 * What a runtime hands the shared composition: its choices (`RuntimeChoices`, for building the
 * router) and what it adds to the edge's deps (`RuntimeEdge`). Types only, and `reachableHost`.
 */
import type { OffLoopJsonParser } from "../../edge/request-json.ts";
import type { PeerAddress } from "../../edge/auth.ts";
import type { DisaggOptions } from "../../edge/disagg/options.ts";
import type { UpstreamCall } from "../../edge/proxy/upstream.ts";
import type { RouterTokenizersDeps } from "../../edge/prompt-route/tokenizers.ts";
import type { BatchBlockHasher } from "../../core/block-hash.ts";
import type { WorkerId, WorkerKey } from "../../core/ids.ts";
import type { EngineInfo } from "../../fleet/engine-info.ts";
import type { WorkerProvisioner } from "../../fleet/provisioner.ts";
import type { ProcessProbe } from "../../observe/process-metrics.ts";
import type { Tracer } from "../../observe/tracing.ts";
import type { KeysFileSource } from "../../protect/keys-watch.ts";
import type { RespOpener } from "../../sync/redis-client.ts";
import type { PubSubOpener } from "../../sync/transport.ts";

/** What the runtime chooses; everything else is built the same way everywhere. */
export interface RuntimeChoices {
  readonly hasher: BatchBlockHasher;
  /** Loads a tokenizer directory; without it --tokenizer is refused (the runtime cannot read files). */
  readonly loadTokenizer?: RouterTokenizersDeps["load"];
  /** redis:// openers (Bun injects its RESP code); without them only https:// (Upstash REST) opens. */
  readonly resp?: RespOpener;
  readonly pubsub?: PubSubOpener;
  readonly sleep: (ms: number) => Promise<void>;
  /** This machine's addresses: POST /v1/workers refuses this router's own port on them. */
  readonly localHosts: () => readonly string[];
  /** The engines' own load (Bun's metrics scraper), read by the scheduler at each decision. */
  readonly busyKeys?: () => ReadonlySet<WorkerKey> | undefined;
  readonly engineWaiting?: () => ReadonlyMap<WorkerKey, number> | undefined;
  /** Hooks for what the runtime wires beside: an engine's info at registration (disagg roles), a removed worker. */
  readonly onEngineInfo?: (url: string, info: EngineInfo) => void;
  readonly onWorkerRemoved?: (id: WorkerId) => void;
  /** Reads (and watches) the --api-keys file; without it --api-keys is refused at start. */
  readonly keysFile?: KeysFileSource;
  /** Random bytes for this router's identity (default: the web-standard crypto.getRandomValues). */
  readonly randomValues?: (into: BigUint64Array) => BigUint64Array;
  /** Where spans go (--otlp-endpoint: Bun's OpenTelemetry exporter); without it, no spans. */
  readonly tracer?: Tracer;
  /** The process's CPU, memory and fds for /metrics (Bun: /proc); without it, no process_* series. */
  readonly processProbe?: ProcessProbe;
  /** A worker's role under --disagg (prefill | decode | both), for switchyard_worker_info. */
  readonly roleOf?: (url: string) => string;
}

/** What the runtime adds to the edge's deps: what only it can know or offer. */
export interface RuntimeEdge {
  /** The peer address of a request (Bun: server.requestIP). */
  readonly peer: PeerAddress;
  /** The proxy's upstream client (Bun: pooled sockets); without one, over fetch. */
  readonly upstream?: UpstreamCall;
  /** The runtime is Bun: stream response bodies through Bun's direct streams. */
  readonly directStreams?: boolean;
  /** Lift the server's idle timeout for a request whose body is read (its answer may stream long). */
  readonly keepOpen?: (request: Request) => void;
  /** --disagg vllm|sglang (wired by the Bun entry). */
  readonly disagg?: DisaggOptions;
  /** Registration with a KV event subscription (`kv_events`); without it, plain registration. */
  readonly provisioner?: WorkerProvisioner;
  /** Per-worker extras for GET /v1/workers: KV event subscriptions, engine metrics. */
  readonly workerDetails?: (id: WorkerId) => Record<string, unknown>;
  /** Large client bodies parsed off the event loop (Bun: a Worker); without it, in-thread. */
  readonly parseOffLoop?: OffLoopJsonParser;
  /** The events token when the runtime found it elsewhere than --events-token (a file, or one made for embedded engines). */
  readonly eventsToken?: string;
}

/** A listen address clients on this machine can use (wildcards -> loopback). */
export function reachableHost(host: string): string {
  if (host === "0.0.0.0") return "127.0.0.1";
  if (host === "::" || host === "[::]") return "[::1]";
  return host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
}
