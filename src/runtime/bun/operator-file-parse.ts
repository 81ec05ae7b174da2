/**
 * Parsing and checking an operator's file (--api-keys, --workers-file) off the event loop: the
 * text goes to a Worker (operator-file-worker.ts), which runs the same pure parsers as the
 * main thread and sends back the entries or the problem; the main thread waits for that one
 * reply under a deadline, and the Worker ends either way. A 100,001-key file took 948 ms of
 * the loop to parse and refuse; now the loop spends only the hand-over. Files change rarely,
 * so no Worker idles between them. A binary built without the worker embedded parses on the
 * main thread instead (still under the files' size bounds) and says so. Bun only.
 */
import { existsSync } from "node:fs";
import { parseWorkersFile } from "../../fleet/workers-file.ts";
import { packKeys } from "../../protect/key-set.ts";
import { parseKeysDocument } from "../../protect/keys-document.ts";

export type OperatorFileJob =
  | { readonly kind: "keys"; readonly text: string; readonly path: string; readonly where: string }
  | { readonly kind: "workers"; readonly text: string; readonly path: string };

export type OperatorFileReply =
  | { readonly ok: true; readonly value: unknown }
  /** parse: not JSON/YAML; check: the document is not a valid file of its kind. */
  | { readonly ok: false; readonly stage: "parse" | "check"; readonly message: string };

/** Longest a parse may take before the Worker is ended and the file refused. */
export const PARSE_DEADLINE_MS = 30_000;

/** Compiled binary: the worker embedded at its path under the build root (see runtime/bun/zmq/worker-url.ts). */
const COMPILED_PATHS = [
  "runtime/bun/operator-file-worker.js",
  "src/runtime/bun/operator-file-worker.js",
  "operator-file-worker.js",
];

function workerUrl(): string | undefined {
  const beside = new URL("./operator-file-worker.ts", import.meta.url);
  if (!decodeURIComponent(beside.pathname).includes("/$bunfs/")) return beside.href;
  const root = new URL(".", import.meta.url);
  for (const rel of COMPILED_PATHS) {
    const candidate = new URL(rel, root);
    if (existsSync(decodeURIComponent(candidate.pathname))) return candidate.href;
  }
  return undefined;
}

const isYaml = (path: string) => /\.ya?ml$/i.test(path);

/** Run `job` here (the Worker's body; the fallback without one). */
export function runOperatorFileJob(job: OperatorFileJob): OperatorFileReply {
  if (job.kind === "workers") {
    try {
      return { ok: true, value: parseWorkersFile(job.text, job.path, (t) => Bun.YAML.parse(t)) };
    } catch (e) {
      return { ok: false, stage: "check", message: (e as Error).message };
    }
  }
  let doc: unknown;
  try {
    doc = isYaml(job.path) ? Bun.YAML.parse(job.text) : JSON.parse(job.text);
  } catch (e) {
    return { ok: false, stage: "parse", message: (e as Error).message };
  }
  try {
    return { ok: true, value: packKeys(parseKeysDocument(doc, job.where)) };
  } catch (e) {
    return { ok: false, stage: "check", message: (e as Error).message };
  }
}

/** The reply to `job` from a Worker; here when this build has none (`onInline` is told). */
export function parseOffLoop(
  job: OperatorFileJob,
  onInline?: () => void,
): Promise<OperatorFileReply> {
  const url = workerUrl();
  if (url === undefined) {
    onInline?.();
    return Promise.resolve(runOperatorFileJob(job));
  }
  return new Promise((resolve) => {
    const worker = new Worker(url);
    let done = false;
    const finish = (r: OperatorFileReply) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      worker.terminate();
      resolve(r);
    };
    const timer = setTimeout(
      () =>
        finish({
          ok: false,
          stage: "parse",
          message: `not parsed within ${PARSE_DEADLINE_MS / 1000} s`,
        }),
      PARSE_DEADLINE_MS,
    );
    worker.onmessage = (e: MessageEvent<OperatorFileReply>) => finish(e.data);
    worker.onerror = (e) =>
      finish({ ok: false, stage: "parse", message: `the parse worker failed (${e.message})` });
    worker.postMessage(job);
  });
}
