/**
 * An HTTP stand-in for a vLLM server whose KV events come from the Python vLLM publisher
 * (vllm-kv-publisher.ts): /health answers ok, /v1/completions a one-token completion, anything
 * else 404. It counts requests by path (a router must never call /kv/query on vLLM, which serves
 * none) and hands each completion request to `onCompletion` first. Stop it with `server.stop(true)`.
 */
import type { Server } from "bun";

export interface StandInVllm {
  readonly server: Server<undefined>;
  readonly url: string;
  /** Requests received, by path. */
  readonly hits: Map<string, number>;
}

export function startStandInVllm(
  onCompletion?: (req: Request) => void | Promise<void>,
): StandInVllm {
  const hits = new Map<string, number>();
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      hits.set(path, (hits.get(path) ?? 0) + 1);
      if (path === "/health") return new Response("ok");
      if (path === "/v1/completions") {
        await onCompletion?.(req);
        return Response.json({
          id: "cmpl-1",
          object: "text_completion",
          choices: [{ index: 0, text: "ok", finish_reason: "stop" }],
        });
      }
      return new Response("not found", { status: 404 });
    },
  });
  return { server, url: `http://127.0.0.1:${server.port}`, hits };
}
