/**
 * A stand-in engine as its own process that answers every completion with the request headers
 * it received (JSON: name -> value), and whose answers name a header in `Connection` (it must
 * not reach the client). Prints `{"url": …}` on stdout once listening, as the other processes do.
 * Run: bun test/support/header-echo-engine.ts
 */
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch(req) {
    const path = new URL(req.url).pathname;
    if (path === "/health") return new Response("ok");
    if (path === "/v1/models")
      return Response.json({ object: "list", data: [{ id: "echo", object: "model" }] });
    const seen: Record<string, string> = {};
    req.headers.forEach((v, k) => (seen[k] = v));
    return new Response(JSON.stringify({ choices: [{ text: "ok" }], headers: seen }), {
      headers: {
        "content-type": "application/json",
        connection: "x-engine-secret",
        "x-engine-secret": "engine-only",
      },
    });
  },
});
console.log(JSON.stringify({ url: `http://127.0.0.1:${server.port}` }));
