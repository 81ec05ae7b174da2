/**
 * The official Python `openai` client reads migrated streams: real router and 4 simulated engine
 * processes, 8 seeded streams (completions and chat) read by the client in threads
 * (test/support/openai-clients/migrated_streams.py); once every stream is under way the engine
 * serving most of them is killed (SIGKILL). The client raises nothing, and the per-choice text,
 * usage and (for the half that ask) logprobs it assembles equal what the same seeded engine
 * writes for the whole request.
 * Skipped, with the reason, where no venv can install `openai` from the local wheel index.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bookedLoad, metric } from "../chaos/faults.ts";
import { stopAll, until, type Proc } from "../support/processes.ts";
import { pythonOpenai } from "../support/python-openai.ts";
import {
  busiest,
  cluster,
  reference,
  requestBody,
  wholeLogprobs,
  type Kind,
  type Live,
} from "./migration-support.ts";
import { runPython } from "./migration-python.ts";
import { urlOf } from "./multi-router-cluster.ts";

const dir = mkdtempSync(join(tmpdir(), "switchyard-migration-python-"));
const py = pythonOpenai(dir);
const procs: Proc[] = [];
afterAll(async () => {
  await stopAll(procs);
  rmSync(dir, { recursive: true, force: true });
});

const MAX_TOKENS = 60;
describe("the official Python openai client across a migration", () => {
  test.skipIf("missing" in py)(
    `8 streams (completions and chat) across a SIGKILL: no client error, exact text, usage and logprobs${"missing" in py ? ` (skipped: ${py.missing})` : ""}`,
    async () => {
      const python = (py as { python: string }).python;
      const { url, engines } = await cluster(procs);
      const requests = Array.from({ length: 8 }, (_, i) => {
        const kind: Kind = i % 2 === 0 ? "completions" : "chat";
        const body: Record<string, unknown> = {
          ...requestBody(kind, 400 + i, MAX_TOKENS),
          model: "switchyard-sim",
        };
        // Half of them ask for logprobs: the client assembles them across the move too.
        if (i >= 4)
          Object.assign(
            body,
            kind === "chat" ? { logprobs: true, top_logprobs: 2 } : { logprobs: 2 },
          );
        return { kind, body };
      });
      const movedBefore = await metric(
        url,
        "switchyard_stream_migrations_total",
        '{outcome="moved"}',
      );
      let victim: Proc | undefined;
      let on = 0;
      const results = await runPython(python, `${url}/v1`, requests, dir, async (workers) => {
        const b = await busiest(
          url,
          engines,
          workers.map((worker) => ({ live: { worker } as Live })),
        );
        victim = b.proc;
        on = b.on;
        victim.proc.kill("SIGKILL");
      });
      expect(victim).toBeDefined();
      const moved =
        (await metric(url, "switchyard_stream_migrations_total", '{outcome="moved"}')) -
        movedBefore;
      expect(moved).toBeGreaterThanOrEqual(on);
      console.log(
        `migration, python openai: ${requests.length} streams, ${on} on the killed engine`,
      );
      const survivor = engines.find((e) => e !== victim)!;
      const refs = await Promise.all(
        requests.map((r) => reference(urlOf(survivor), r.kind, r.body)),
      );
      for (const [k, r] of results.entries()) {
        expect(r.error).toBeNull();
        expect(r.text).toBe(refs[k]!.text);
        expect(r.text.length).toBe(MAX_TOKENS);
        expect(r.usage?.prompt_tokens).toBe(refs[k]!.usage.prompt_tokens);
        expect(r.usage?.completion_tokens).toBe(MAX_TOKENS);
        expect(r.usage?.total_tokens).toBe(refs[k]!.usage.prompt_tokens + MAX_TOKENS);
        if (k >= 4) {
          const lp: unknown = r.logprobs;
          const whole = await wholeLogprobs(urlOf(survivor), requests[k]!.kind, requests[k]!.body);
          expect(requests[k]!.kind === "chat" ? { content: lp } : lp).toEqual(whole);
        }
      }
      await until(async () => (await bookedLoad(url)) === 0, "every booking to be freed", 5_000);
    },
    90_000,
  );
});
