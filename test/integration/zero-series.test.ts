/**
 * A real router (one embedded simulated engine), scraped before any request: the counters the
 * dashboard graphs by a known label (routing errors by code, KV events by type, requests by
 * worker) are present at 0, so a healthy fleet's panels read 0 instead of "No data", and the
 * first event counts in rate() and increase(). After a request they still parse and count on.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { startMain, until, type Proc } from "../support/processes.ts";

setDefaultTimeout(30_000);

let router: Proc | undefined;
let url = "";

beforeAll(async () => {
  router = await startMain(["serve", "--port", "0", "--host", "127.0.0.1", "--engines", "1"]);
  url = String(router.info.url);
});

afterAll(async () => {
  await router?.stop();
});

const scrape = async () => (await fetch(`${url}/metrics`)).text();
const value = (text: string, series: string): number | undefined => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

describe("counters present at 0 from the start", () => {
  test("routing errors by code, KV events by type and requests by worker, before any request", async () => {
    const workers = await until(
      async () =>
        ((await (await fetch(`${url}/v1/workers`)).json()) as { workers: { id: string }[] })
          .workers,
      "the engine registered",
    );
    const text = await scrape();
    for (const code of [
      "no_endpoints",
      "upstream_failed",
      "model_not_found",
      "queue_full",
      "invalid_request",
      "internal",
    ]) {
      expect(value(text, `switchyard_routing_errors_total{code="${code}"}`)).toBe(0);
    }
    for (const type of ["stored", "removed", "cleared"])
      expect(
        value(text, `switchyard_kv_events_applied_total{event_type="${type}",status="ok"}`),
      ).toBe(0);
    expect(value(text, `switchyard_requests_total{worker="${workers[0]!.id}",status="200"}`)).toBe(
      0,
    );
    // Burst claims are off without --redis: no outcome series claims otherwise.
    expect(text).not.toContain("switchyard_burst_claims_total{");
  });

  test("a request and a refused one count on from those zeros", async () => {
    const ok = await fetch(`${url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        prompt: "a prompt long enough to fill more than two sixteen-token blocks",
        max_tokens: 2,
      }),
    });
    expect(ok.status).toBe(200);
    await ok.text();
    const bad = await fetch(`${url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{not json",
    });
    expect(bad.status).toBe(400);
    await bad.text();
    const text = await scrape();
    expect(value(text, `switchyard_routing_errors_total{code="invalid_request"}`)).toBe(1);
    expect(value(text, `switchyard_routing_errors_total{code="no_endpoints"}`)).toBe(0);
    await until(
      async () =>
        (value(
          await scrape(),
          `switchyard_kv_events_applied_total{event_type="stored",status="ok"}`,
        ) ?? 0) >= 1,
      "the engine's stored event counted",
    );
    const served = text
      .split("\n")
      .filter((l) => l.startsWith("switchyard_requests_total{") && l.includes('status="200"'));
    expect(served.map((l) => Number(l.split(" ").pop()))).toEqual([1]);
  });
});
