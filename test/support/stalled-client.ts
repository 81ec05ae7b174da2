/**
 * A client that sends one HTTP/1.1 request and then stops reading: its socket is paused after
 * the first bytes of the answer, so the kernel's buffers fill and the server sees a client
 * whose socket takes nothing more (a slow consumer, or an attacker holding an answer open).
 * `closed` resolves when the server cuts the connection.
 */
import type { Socket } from "bun";

export interface StalledClient {
  /** Answer bytes received before the socket was paused (and any the kernel still handed over). */
  received(): number;
  /** Resolves when the connection closed (the server cut it, or close()). */
  readonly closed: Promise<void>;
  /** Whether the connection is closed. */
  isClosed(): boolean;
  close(): void;
}

export async function stalledClient(port: number, request: string): Promise<StalledClient> {
  let got = 0;
  let isClosed = false;
  let onClosed!: () => void;
  const closed = new Promise<void>((resolve) => (onClosed = resolve));
  const done = () => {
    isClosed = true;
    onClosed();
  };
  const socket: Socket<undefined> = await Bun.connect({
    hostname: "127.0.0.1",
    port,
    socket: {
      data(s, d) {
        got += d.length;
        s.pause(); // read nothing more: the kernel's receive buffer fills, then the server's send buffer
      },
      close: done,
      end: done,
      error: done,
    },
  });
  socket.write(request);
  return { received: () => got, closed, isClosed: () => isClosed, close: () => socket.terminate() };
}

/** A POST of `json` as one HTTP/1.1 request, with `headers` besides its own. */
export function postRequest(
  path: string,
  json: unknown,
  headers: Record<string, string> = {},
): string {
  const body = JSON.stringify(json);
  const extra = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("");
  return `POST ${path} HTTP/1.1\r\nhost: test\r\n${extra}content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}
