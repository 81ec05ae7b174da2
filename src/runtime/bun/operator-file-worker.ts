/**
 * The Worker that parses and checks an operator's file (--api-keys, --workers-file) off the
 * event loop: one job, one reply (operator-file-parse.ts starts it and ends it). Bun only.
 */
import { runOperatorFileJob, type OperatorFileJob } from "./operator-file-parse.ts";

declare const self: Worker;

self.onmessage = (e: MessageEvent<OperatorFileJob>) => {
  self.postMessage(runOperatorFileJob(e.data));
};
