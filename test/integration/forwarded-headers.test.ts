/**
 * Headers across the proxy, real router and real engine processes (the engine echoes what it
 * received): every hop-by-hop header and every name the client lists in `Connection` stays
 * here; the client's address reaches the engine in X-Forwarded-For and Forwarded (the client's
 * own claims replaced, or appended to with --trust-forwarded); Cookie only with
 * --forward-cookies; an engine's Connection-named header never reaches the client.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { startCommand, startMain, stopAll, type Proc } from "../support/processes.ts";
import { join } from "node:path";

let engine: Proc | undefined;
let plain: Proc | undefined;
let trusting: Proc | undefined;

beforeAll(async () => {
  engine = await startCommand(
    [process.execPath, join(import.meta.dir, "..", "support", "header-echo-engine.ts")],
    "header-echo engine",
  );
  const common = [
    "serve",
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    "--worker",
    String(engine.info.url),
    "--health-interval",
    "30",
  ];
  [plain, trusting] = await Promise.all([
    startMain(common),
    startMain([...common, "--trust-forwarded", "--forward-cookies"]),
  ]);
});

afterAll(async () => {
  await stopAll([plain, trusting, engine]);
});

/** One HTTP/1.1 request written byte for byte (a fetch client would drop or refuse some of these headers). */
function rawRequest(
  url: string,
  headerLines: readonly string[],
  body: string,
): Promise<{ head: string; body: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const sock = connect(Number(port), hostname);
    let data = "";
    sock.setEncoding("utf8");
    sock.on("data", (d: string) => (data += d));
    sock.on("error", reject);
    sock.on("end", () => {
      const at = data.indexOf("\r\n\r\n");
      resolve({ head: data.slice(0, at), body: data.slice(at + 4) });
    });
    sock.write(
      [
        `POST /v1/completions HTTP/1.1`,
        `Host: ${hostname}:${port}`,
        "Content-Type: application/json",
        `Content-Length: ${Buffer.byteLength(body)}`,
        "Connection: close, x-secret",
        ...headerLines,
        "",
        body,
      ].join("\r\n"),
    );
  });
}

const HOSTILE = [
  "X-Secret: for-the-router-only",
  "Keep-Alive: timeout=5",
  "TE: trailers",
  "Trailer: x-late",
  "Upgrade: websocket",
  "Proxy-Authorization: Basic Zm9vOmJhcg==",
  "Proxy-Connection: keep-alive",
  "X-Forwarded-For: 6.6.6.6",
  "Forwarded: for=6.6.6.6",
  "X-Real-IP: 6.6.6.6",
  "Cookie: session=browser-secret",
  "X-Kept: yes",
];

async function echoed(
  router: Proc,
): Promise<{ engineSaw: Record<string, string>; clientHead: string }> {
  const res = await rawRequest(
    String(router.info.url),
    HOSTILE,
    JSON.stringify({ model: "echo", prompt: "hi", max_tokens: 1 }),
  );
  expect(res.head).toStartWith("HTTP/1.1 200");
  // The body may be chunked; the echo is the one JSON object in it.
  const json = res.body.slice(res.body.indexOf("{"), res.body.lastIndexOf("}") + 1);
  return {
    engineSaw: (JSON.parse(json) as { headers: Record<string, string> }).headers,
    clientHead: res.head.toLowerCase(),
  };
}

describe("headers across the proxy (real router, header-echoing engine process)", () => {
  test("hop-by-hop and Connection-named headers stay here; the client's forwarding claims are replaced; Cookie dropped", async () => {
    const { engineSaw, clientHead } = await echoed(plain!);
    for (const name of [
      "x-secret",
      "keep-alive",
      "te",
      "trailer",
      "upgrade",
      "proxy-authorization",
      "proxy-connection",
      "cookie",
      "x-real-ip",
    ]) {
      expect(engineSaw[name]).toBeUndefined();
    }
    expect(engineSaw["x-kept"]).toBe("yes");
    expect(engineSaw["x-forwarded-for"]).toBe("127.0.0.1");
    const port = new URL(String(plain!.info.url)).port;
    expect(engineSaw.forwarded).toBe(`for=127.0.0.1;proto=http;host="127.0.0.1:${port}"`);
    // The engine's own Connection-named header stays between engine and router.
    expect(clientHead).not.toContain("x-engine-secret");
  });

  test("--trust-forwarded appends the peer to the chain; --forward-cookies passes Cookie", async () => {
    const { engineSaw } = await echoed(trusting!);
    expect(engineSaw["x-forwarded-for"]).toBe("6.6.6.6, 127.0.0.1");
    expect(engineSaw.forwarded).toStartWith("for=6.6.6.6, for=127.0.0.1;proto=http;");
    expect(engineSaw["x-real-ip"]).toBe("6.6.6.6");
    expect(engineSaw.cookie).toBe("session=browser-secret");
    expect(engineSaw["x-secret"]).toBeUndefined();
  });
});
