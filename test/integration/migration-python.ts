/**
 * The official Python `openai` client over several streams at once
 * (test/support/openai-clients/migrated_streams.py), for the stream-migration tests: a hook runs
 * once every stream is under way (to kill or drain an engine then), and what the client
 * assembled per stream comes back when it exits.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../support/processes.ts";
import type { Kind } from "./migration-support.ts";

const SCRIPT = join(ROOT, "test/support/openai-clients/migrated_streams.py");

export interface PyResult {
  readonly i: number;
  readonly text: string;
  readonly usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
  readonly logprobs: unknown;
  readonly error: string | null;
}

/**
 * Runs the Python client over `requests`; `onStarted` is called once every stream is under way
 * (with the worker each one is on), and the results come back once the client exits.
 */
export async function runPython(
  python: string,
  base: string,
  requests: { kind: Kind; body: Record<string, unknown> }[],
  workDir: string,
  onStarted: (workers: string[]) => Promise<void>,
): Promise<PyResult[]> {
  const file = join(workDir, `requests-${crypto.randomUUID()}.json`);
  writeFileSync(file, JSON.stringify(requests));
  const p = Bun.spawn({ cmd: [python, SCRIPT, base, file], stdout: "pipe", stderr: "pipe" });
  const workers: string[] = Array(requests.length).fill("");
  const results: PyResult[] = [];
  let started = 0;
  let fired: Promise<void> | undefined;
  const errText = new Response(p.stderr).text();
  const dec = new TextDecoder();
  let buf = "";
  for await (const chunk of p.stdout as unknown as AsyncIterable<Uint8Array>) {
    buf += dec.decode(chunk, { stream: true });
    let nl = buf.indexOf("\n");
    while (nl >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      nl = buf.indexOf("\n");
      if (!line.startsWith("{")) continue;
      const ev = JSON.parse(line) as { event: string; i: number; worker?: string } & PyResult;
      if (ev.event === "started") {
        workers[ev.i] = ev.worker ?? "";
        if (++started === requests.length) fired = onStarted(workers);
      } else if (ev.event === "result") results[ev.i] = ev;
    }
  }
  const code = await p.exited;
  await fired;
  if (code !== 0) throw new Error(`python client: exit ${code}\n${await errText}`);
  return results;
}
