/**
 * One encode Worker of the pool (encode-pool.ts): loads the model's tokenizer once, the same
 * pure encoder the main thread uses (the byte-level BPE, or @huggingface/tokenizers where the
 * tokenizer does not qualify), then answers encode jobs in arrival order. Ids go back as
 * transferred buffers (no copy). Bun only; it renders no template and keeps no segment cache:
 * the main thread does both and sends only the text pieces to encode.
 */
import type { TokenizerLibrary } from "../../../tokens/engine-tokenizer.ts";
import type { EncodeJob, WorkerInit, WorkerReply } from "../../../tokens/encode-protocol.ts";
import { loadPureLibrary } from "../../../tokens/load.ts";

declare const self: Worker;

let library: TokenizerLibrary | undefined;
const early: EncodeJob[] = [];

function post(msg: WorkerReply, transfer: ArrayBuffer[] = []): void {
  self.postMessage(msg, transfer);
}

async function run(job: EncodeJob): Promise<void> {
  try {
    const ids: Uint32Array[] = [];
    for (const text of job.texts) ids.push(await library!.encode(text, job.addSpecialTokens));
    post(
      { type: "done", id: job.id, ids },
      ids.map((a) => a.buffer as ArrayBuffer),
    );
  } catch (e) {
    post({ type: "failed", id: job.id, message: (e as Error).message });
  }
}

self.onmessage = (e: MessageEvent<WorkerInit | EncodeJob>) => {
  const m = e.data;
  if (m.type === "init") {
    // Bun's reader here rather than ./bun.ts's, which would load the native addon into the worker too.
    loadPureLibrary(m.dir, {
      readText: (path) => Bun.file(path).text(),
      byteLevelBpe: m.byteLevelBpe,
    })
      .then(async (lib) => {
        library = lib;
        post({ type: "ready", implementation: lib.implementation });
        for (const job of early.splice(0)) await run(job);
      })
      .catch((err: Error) => post({ type: "init-failed", message: err.message }));
  } else if (m.type === "encode") {
    if (library === undefined) early.push(m);
    else void run(m);
  }
};
