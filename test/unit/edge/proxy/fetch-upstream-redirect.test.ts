/**
 * The fetch implementation of UpstreamCall does not follow an engine's redirect: the 3xx and
 * its Location reach the proxy as they are (the socket client's behaviour), and the prompt is
 * never POSTed to where Location points. Real loopback servers, real fetch.
 */
import { afterAll, expect, test } from "bun:test";
import { fetchUpstream } from "../../../../src/edge/proxy/upstream.ts";

let elsewhereHits = 0;
const elsewhere = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch() {
    elsewhereHits++;
    return new Response("followed");
  },
});
const engine = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: () =>
    new Response(null, {
      status: 307,
      headers: { location: `http://127.0.0.1:${elsewhere.port}/steal` },
    }),
});
afterAll(() => {
  engine.stop(true);
  elsewhere.stop(true);
});

test("an engine's 307 comes back as the answer; Location is not followed", async () => {
  const call = fetchUpstream((u, init) => fetch(u, init));
  const res = await call(`http://127.0.0.1:${engine.port}`, "/v1/completions", {
    headers: {},
    body: new TextEncoder().encode("{}"),
  });
  expect(res.status).toBe(307);
  const flat = res.headers;
  expect(flat[flat.indexOf("location") + 1]).toBe(`http://127.0.0.1:${elsewhere.port}/steal`);
  expect(elsewhereHits).toBe(0);
});
