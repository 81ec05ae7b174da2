/**
 * Messages between subscriber.ts (main thread) and recv-worker.ts (the Worker that blocks
 * in libzmq), and the shared control words. Types and constants only.
 */
import type { SequencerStats } from "./sequencer.ts";

/** Int32 slots of the shared control buffer. */
export const CONTROL_STOP = 0;
/** Hand-offs posted by the worker and not yet processed by the main thread. */
export const CONTROL_INFLIGHT = 1;
export const CONTROL_WORDS = 2;

/** Flag bits of each batch entry. */
export const FLAG_REPLAYED = 1;
export const FLAG_RESTART = 2;

export interface WorkerStart {
  readonly type: "start";
  readonly endpoint: string;
  readonly replayEndpoint: string | undefined;
  /** Subscription prefix; "" = everything (vLLM's default topic). */
  readonly topic: string;
  readonly libzmqPath: string;
  /** Receive timeout of the live socket: how quickly the worker notices a stop. */
  readonly pollMs: number;
  /** Receive timeout while waiting for a replay answer. */
  readonly replayTimeoutMs: number;
  /** Messages per hand-off at most. */
  readonly maxBatch: number;
  /** Hand-offs in flight before the worker waits for the main thread. */
  readonly maxInflight: number;
  readonly rcvHwm: number;
  /** Largest message accepted (ZMQ_MAXMSGSIZE); a longer one ends the session (then subscribed again). */
  readonly maxMessageBytes: number;
  /** Disconnected this long with no retry from libzmq: the session is dead, subscribe again (ms). */
  readonly deadSessionMs: number;
  /** CONTROL_WORDS int32 slots. */
  readonly control: SharedArrayBuffer;
}

export interface WorkerCounters extends SequencerStats {
  /** Messages that were not [topic, seq (8 bytes), payload]. */
  malformedFrames: number;
}

/** Up to maxBatch messages in seq order, payloads packed into one buffer. */
export interface WorkerBatch {
  readonly type: "batch";
  readonly count: number;
  readonly seqs: Float64Array;
  /** FLAG_* bits. */
  readonly flags: Uint8Array;
  /** Batches lost right before each message (not replayable). */
  readonly lost: Float64Array;
  /** count + 1 offsets into bytes. */
  readonly offsets: Uint32Array;
  readonly bytes: Uint8Array;
  readonly counters: WorkerCounters;
}

export type WorkerToMain =
  | { readonly type: "ready"; readonly version: string }
  | { readonly type: "fatal"; readonly message: string }
  | { readonly type: "log"; readonly level: "warn" | "info"; readonly message: string }
  /** The live socket's connection as libzmq's monitor tells it, and subscriptions started again. */
  | {
      readonly type: "session";
      readonly state: "connecting" | "connected" | "disconnected";
      readonly resubscribes: number;
    }
  | WorkerBatch
  | { readonly type: "stopped"; readonly counters: WorkerCounters };
