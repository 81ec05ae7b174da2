/**
 * The fetch implementation of UpstreamCall (https engines, other runtimes) honours the
 * proxy's abort signal the way the socket client does: the call rejects with the signal's
 * reason and the engine sees its connection closed. Real loopback server, real fetch.
 */
import { afterAll, expect, test } from "bun:test";
import { DeadlineMissedError } from "../../../../src/edge/proxy/deadlines.ts";
import { fetchUpstream } from "../../../../src/edge/proxy/upstream.ts";
import { until } from "../../../support/processes.ts";

const state = { opened: 0, closed: 0 };
const server = Bun.listen({
  hostname: "127.0.0.1",
  port: 0,
  socket: {
    open() {
      state.opened++;
    },
    data() {}, // reads the request, never answers
    close() {
      state.closed++;
    },
  },
});
afterAll(() => server.stop(true));

test("an abort before the head rejects with its reason and closes the engine connection", async () => {
  const call = fetchUpstream((u, init) => fetch(u, init));
  const ctl = new AbortController();
  const pending = call(`http://127.0.0.1:${server.port}`, "/v1/completions", {
    headers: {},
    body: new Uint8Array([123, 125]),
    signal: ctl.signal,
  });
  await until(() => state.opened === 1, "the request's connection");
  ctl.abort(new DeadlineMissedError("first_byte", 10));
  await expect(pending).rejects.toBeInstanceOf(DeadlineMissedError);
  await until(() => state.closed === 1, "the server to see the connection closed");
});
