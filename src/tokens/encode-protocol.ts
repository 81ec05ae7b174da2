/**
 * Messages between the encode pool (encode-pool.ts, main thread) and its Workers
 * (encode-worker.ts). Types only.
 */

/** Main -> worker, once: load this model directory's pure encoder. */
export interface WorkerInit {
  readonly type: "init";
  readonly dir: string;
  readonly byteLevelBpe: boolean;
}

/** Main -> worker: encode these texts (pieces of one request), each with add_special_tokens as given. */
export interface EncodeJob {
  readonly type: "encode";
  readonly id: number;
  readonly texts: readonly string[];
  readonly addSpecialTokens: boolean;
}

/** Worker -> main. */
export type WorkerReply =
  | { readonly type: "ready"; readonly implementation: string }
  | { readonly type: "init-failed"; readonly message: string }
  | { readonly type: "done"; readonly id: number; readonly ids: Uint32Array[] }
  | { readonly type: "failed"; readonly id: number; readonly message: string };
