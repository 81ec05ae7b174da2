/**
 * A small server speaking Upstash's REST protocol in front of a real redis-server, so the
 * @upstash/redis client can be tested locally (see NOTES-toolchain.md, "@upstash/redis
 * against a local Redis"):
 *   POST /           one command (JSON array)            → {result} | 4xx {error}
 *   POST /pipeline   array of commands                   → [{result} | {error}, …]
 *   POST /multi-exec array of commands, in MULTI … EXEC  → [{result} | {error}, …] | 4xx {error}
 * `Authorization: Bearer <token>` is checked. With `Upstash-Encoding: base64` every string
 * in a result, nested ones too, is base64 of its bytes. Results have RESP2 shapes, because
 * the bridge talks raw RESP2 to Redis over one TCP socket (replies come back in order, so a
 * request's commands written in one go get their replies in one contiguous run; MULTI …
 * EXEC written in one go cannot interleave with another request's commands).
 */
import type { Server, Socket } from "bun";

export interface UpstashBridge {
  readonly url: string;
  readonly token: string;
  /** HTTP requests served, by path. */
  readonly requests: Map<string, number>;
  stop(): Promise<void>;
}

type Resp = Uint8Array | string | number | null | RespError | Resp[];

class RespError {
  constructor(readonly message: string) {}
}

export async function startUpstashBridge(opts: {
  redisPort: number;
  token?: string;
}): Promise<UpstashBridge> {
  const token = opts.token ?? `test-token-${crypto.randomUUID()}`;
  const redis = new RespSocket(opts.redisPort);
  const requests = new Map<string, number>();

  const server: Server<undefined> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      requests.set(path, (requests.get(path) ?? 0) + 1);
      if (req.method !== "POST") return json({ error: "ERR only POST is supported" }, 405);
      if (req.headers.get("authorization") !== `Bearer ${token}`)
        return json({ error: "Unauthorized" }, 401);
      const base64 = req.headers.get("upstash-encoding")?.toLowerCase() === "base64";
      const out = (v: Resp) => toJson(v, base64);
      let body: unknown;
      try {
        body = await req.json();
      } catch {
        return json({ error: "ERR request body is not JSON" }, 400);
      }
      try {
        if (path === "/" || path === "") {
          const [reply] = await redis.run([commandOf(body)]);
          return reply instanceof RespError
            ? json({ error: reply.message }, 400)
            : json({ result: out(reply!) });
        }
        if (path === "/pipeline") {
          const replies = await redis.run(commandsOf(body));
          return json(
            replies.map((r) =>
              r instanceof RespError ? { error: r.message } : { result: out(r) },
            ),
          );
        }
        if (path === "/multi-exec") {
          const commands = commandsOf(body);
          const replies = await redis.run([["MULTI"], ...commands, ["EXEC"]]);
          const exec = replies[replies.length - 1];
          if (exec instanceof RespError) return json({ error: exec.message }, 400);
          if (!Array.isArray(exec)) return json({ error: "ERR transaction aborted" }, 400);
          return json(
            exec.map((r) => (r instanceof RespError ? { error: r.message } : { result: out(r) })),
          );
        }
        return json({ error: `ERR unknown path ${path}` }, 404);
      } catch (e) {
        if (e instanceof BadRequest) return json({ error: e.message }, 400);
        return json({ error: `ERR redis unavailable: ${(e as Error).message}` }, 503);
      }
    },
  });

  return {
    url: `http://127.0.0.1:${server.port}`,
    token,
    requests,
    async stop() {
      await server.stop(true);
      redis.close();
    },
  };
}

class BadRequest extends Error {}

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json" },
  });
}

/** Numbers and booleans arrive as JSON values; Redis wants every argument as a string. */
function commandOf(body: unknown): string[] {
  if (!Array.isArray(body) || body.length === 0)
    throw new BadRequest("ERR a command is a non-empty array");
  return body.map((a) => (typeof a === "string" ? a : JSON.stringify(a)));
}

function commandsOf(body: unknown): string[][] {
  if (!Array.isArray(body) || body.length === 0)
    throw new BadRequest("ERR expected an array of commands");
  return body.map(commandOf);
}

const utf8 = new TextDecoder();

function toJson(v: Resp, base64: boolean): unknown {
  if (v === null || typeof v === "number") return v;
  if (v instanceof RespError) return v.message;
  if (Array.isArray(v)) return v.map((x) => toJson(x, base64));
  const bytes = typeof v === "string" ? new TextEncoder().encode(v) : v;
  return base64 ? bytes.toBase64() : utf8.decode(bytes);
}

// ---------------------------------------------------------------------------------------
// Raw RESP2 over one TCP socket

interface Pending {
  readonly resolve: (r: Resp) => void;
  readonly reject: (e: Error) => void;
}

class RespSocket {
  #socket: Socket<undefined> | undefined;
  #connecting: Promise<Socket<undefined>> | undefined;
  #buffer = new Uint8Array(0);
  readonly #pending: Pending[] = [];
  #closed = false;

  constructor(readonly port: number) {}

  /** Write all commands at once; resolve with their replies, in order. */
  async run(commands: readonly string[][]): Promise<Resp[]> {
    const socket = await this.#connect();
    const replies = commands.map(
      () => new Promise<Resp>((resolve, reject) => this.#pending.push({ resolve, reject })),
    );
    socket.write(encodeCommands(commands));
    return Promise.all(replies);
  }

  close(): void {
    this.#closed = true;
    this.#socket?.end();
    this.#failAll(new Error("bridge closed"));
  }

  #connect(): Promise<Socket<undefined>> {
    if (this.#closed) return Promise.reject(new Error("bridge closed"));
    if (this.#socket) return Promise.resolve(this.#socket);
    this.#connecting ??= Bun.connect({
      hostname: "127.0.0.1",
      port: this.port,
      socket: {
        data: (_s, chunk) => this.#onData(chunk),
        close: () => this.#onClose(),
        error: () => this.#onClose(),
      },
    }).then(
      (s) => {
        this.#connecting = undefined;
        this.#socket = s;
        this.#buffer = new Uint8Array(0);
        return s;
      },
      (e) => {
        this.#connecting = undefined;
        throw e;
      },
    );
    return this.#connecting;
  }

  #onClose(): void {
    this.#socket = undefined;
    this.#failAll(new Error("connection to redis closed"));
  }

  #failAll(e: Error): void {
    for (const p of this.#pending.splice(0)) p.reject(e);
  }

  #onData(chunk: Uint8Array): void {
    const merged = new Uint8Array(this.#buffer.length + chunk.length);
    merged.set(this.#buffer);
    merged.set(chunk, this.#buffer.length);
    let offset = 0;
    for (;;) {
      const parsed = parseReply(merged, offset);
      if (!parsed) break;
      offset = parsed.next;
      this.#pending.shift()?.resolve(parsed.value);
    }
    this.#buffer = merged.slice(offset);
  }
}

function encodeCommands(commands: readonly string[][]): Uint8Array {
  const enc = new TextEncoder();
  const parts: Uint8Array[] = [];
  for (const args of commands) {
    parts.push(enc.encode(`*${args.length}\r\n`));
    for (const a of args) {
      const bytes = enc.encode(a);
      parts.push(enc.encode(`$${bytes.length}\r\n`), bytes, enc.encode("\r\n"));
    }
  }
  const total = parts.reduce((n, p) => n + p.length, 0);
  const out = new Uint8Array(total);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** One RESP2 reply starting at `offset`, or undefined if the buffer does not hold it all yet. */
function parseReply(buf: Uint8Array, offset: number): { value: Resp; next: number } | undefined {
  const lineEnd = buf.indexOf(13, offset); // \r
  if (lineEnd < 0 || lineEnd + 1 >= buf.length) return undefined;
  const type = buf[offset];
  const line = utf8.decode(buf.subarray(offset + 1, lineEnd));
  const next = lineEnd + 2;
  switch (type) {
    case 43: // + simple string
      return { value: line, next };
    case 45: // - error
      return { value: new RespError(line), next };
    case 58: // : integer
      return { value: Number(line), next };
    case 36: {
      // $ bulk string
      const len = Number(line);
      if (len < 0) return { value: null, next };
      if (next + len + 2 > buf.length) return undefined;
      return { value: buf.slice(next, next + len), next: next + len + 2 };
    }
    case 42: {
      // * array
      const n = Number(line);
      if (n < 0) return { value: null, next };
      const items: Resp[] = [];
      let at = next;
      for (let i = 0; i < n; i++) {
        const item = parseReply(buf, at);
        if (!item) return undefined;
        items.push(item.value);
        at = item.next;
      }
      return { value: items, next: at };
    }
    default:
      throw new Error(`unexpected RESP type byte ${type}`);
  }
}
