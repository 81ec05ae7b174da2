/**
 * The floor of a proxy on Bun, for bench:proxy's "floor" target: Bun.serve reading the body and
 * forwarding it over the router's own pooled socket client (src/runtime/bun/upstream), answering
 * the engine's bytes — no routing, no validation, no metrics, no deadlines. What the router
 * spends per request above this is the router's own work; what this spends above nginx is Bun's.
 *
 *   bun bench/proxy/floor.ts --upstream http://127.0.0.1:PORT   (prints {"url","port"})
 */
import { parseArgs } from "node:util";
import { SocketHttpClient } from "../../src/runtime/bun/upstream/socket-client.ts";

const { values } = parseArgs({
  options: { upstream: { type: "string" }, port: { type: "string", default: "0" } },
});
const upstream = values.upstream!;
const client = new SocketHttpClient();
const HOP = new Set(["connection", "keep-alive", "transfer-encoding", "content-length"]);

async function proxy(req: Request): Promise<Response> {
  const body = new Uint8Array(await req.arrayBuffer());
  const res = await client.request(upstream, "/v1/completions", {
    headers: { "content-type": "application/json" },
    body,
  });
  const headers: Record<string, string> = {};
  for (let i = 0; i < res.headers.length; i += 2)
    if (!HOP.has(res.headers[i]!)) headers[res.headers[i]!] = res.headers[i + 1]!;
  const reader = res.body;
  if (reader === null || reader === undefined)
    return new Response(null, { status: res.status, headers });
  const first = await reader.read();
  if (reader.drained === true || first.done)
    return new Response(first.value ?? null, { status: res.status, headers });
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      if (first.value) c.enqueue(first.value);
    },
    async pull(c) {
      const r = await reader.read();
      if (r.done) c.close();
      else c.enqueue(r.value!);
    },
    cancel() {
      return reader.cancel();
    },
  });
  return new Response(stream, { status: res.status, headers });
}

const server = Bun.serve({
  port: Number(values.port),
  hostname: "127.0.0.1",
  routes: { "/v1/completions": { POST: proxy } },
  fetch: () => new Response("ok"),
});
console.log(JSON.stringify({ url: `http://127.0.0.1:${server.port}`, port: server.port }));
