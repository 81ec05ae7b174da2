/**
 * Planned moves with real processes: the router discovers two simulated engines from the
 * stand-in Kubernetes API server; a seeded stream runs on engine-0 when its pod begins
 * terminating. The pod is held (no new requests) and, past --migrate-after, the stream moves to
 * engine-1 instead of running on an engine that is going away: the client reads one whole
 * stream whose text is exactly what one engine writes for the whole request, and engine-0 is not
 * blamed (a planned move is not a failure).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { workerIdFromUrl } from "../../src/core/worker-id.ts";
import { until } from "../support/processes.ts";
import {
  enginePod,
  metric,
  NAMESPACE,
  startK8sCluster,
  workers,
  type K8sCluster,
} from "./k8s-cluster.ts";
import { assemble, openStream, received, reference } from "./migration-support.ts";

setDefaultTimeout(60_000);

let c: K8sCluster;
const urlOf = (i: number) => String(c.engines[i]!.info.url);
const idOf = (i: number) => workerIdFromUrl(urlOf(i)).toString();

beforeAll(async () => {
  c = await startK8sCluster({
    engines: 2,
    seed: 3,
    engineArgs: ["--speedup", "1", "--decode-ms-per-step", "20"],
    routerArgs: ["--health-interval", "0.3", "--migrate-after", "0.3", "--log-level", "error"],
    before: ({ api, engines }) => {
      api.createPod(enginePod(engines[0]!, "engine-0"));
      api.createPod(enginePod(engines[1]!, "engine-1", { ready: false }));
    },
  });
});

afterAll(async () => {
  await c?.stop();
});

test("a stream on a pod that begins terminating moves after --migrate-after; exact text, the worker not blamed", async () => {
  await until(
    async () => (await workers(c.routerUrl)).find((w) => w.url === urlOf(0))?.healthy === true,
    "engine-0 routable",
  );
  const body = {
    prompt: "a long answer from a pod about to go",
    max_tokens: 150,
    seed: 11,
    stream_options: { include_usage: true },
  };
  const live = openStream(c.routerUrl, "completions", body);
  await until(() => received(live) >= 3, "the stream under way on engine-0");
  expect(live.worker).toBe(idOf(0));
  c.api.setReady("engine-1", true, NAMESPACE);
  await until(
    async () => (await workers(c.routerUrl)).find((w) => w.url === urlOf(1))?.healthy === true,
    "engine-1 routable",
  );
  c.api.terminatePod("engine-0", NAMESPACE);
  await live.done;
  const a = assemble(live.raw);
  const ref = await reference(urlOf(1), "completions", body);
  expect(live.broken).toBeUndefined();
  expect(a.errors).toBe(0);
  expect(a.dones).toBe(1);
  expect(a.text).toBe(ref.text);
  expect(a.usage?.completion_tokens).toBe(150);
  expect(a.usage?.prompt_tokens).toBe(ref.usage.prompt_tokens);
  expect(
    a.notes.some((n) => n.includes(`from worker ${idOf(0)} to worker ${idOf(1)} (planned move`)),
  ).toBe(true);
  expect(await metric(c.routerUrl, "switchyard_stream_migrations_total", 'outcome="moved"')).toBe(
    1,
  );
  expect(
    await metric(c.routerUrl, "switchyard_requests_total", `worker="${idOf(0)}",status="migrated"`),
  ).toBe(1);
  expect(
    await metric(c.routerUrl, "switchyard_worker_ejections_total", `worker="${idOf(0)}"`),
  ).toBe(0);
  await until(
    async () => (await metric(c.routerUrl, "switchyard_active_decode_blocks")) === 0,
    "every booking to be freed",
  );
});
