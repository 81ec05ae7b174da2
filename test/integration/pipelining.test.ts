/**
 * HTTP/1.1 pipelining, documented as it is (docs/chaos.md, "Found by probing"): Bun 1.4.5's server refuses
 * async pipelining, so a completion with another request pipelined behind it on the same
 * connection gets no answer at all: the connection is closed at once. The router is left
 * clean (no booking held). What can be answered is: requests answered without waiting
 * (/livez, /health) ahead of a completion are answered in order, and requests sent one after
 * the other on one keep-alive connection are all answered. Clients and proxies in front of
 * the router should not pipeline. If a Bun upgrade changes this, this test says so.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bookedLoad } from "../chaos/faults.ts";
import { stopAll, until, type Proc } from "../support/processes.ts";
import { startEngines, startRouter, urlOf } from "./multi-router-cluster.ts";

let procs: Proc[] = [];
let port = 0;
let url = "";

beforeAll(async () => {
  const engines = await startEngines(1, [], ["--decode-ms-per-step", "1"]);
  const router = await startRouter(engines, 0, ["--log-level", "error"]);
  procs = [...engines, router];
  url = urlOf(router);
  port = Number(new URL(url).port);
});
afterAll(() => stopAll(procs));

const completion = (tag: string) => {
  const body = JSON.stringify({ prompt: `pipelining ${tag}`, max_tokens: 2 });
  return `POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
};
const livez = "GET /livez HTTP/1.1\r\nhost: x\r\n\r\n";

/** Write `wire` in one go; collect what comes back until the server closes or `statuses` answers arrived. */
async function exchange(
  wire: string,
  statuses: number,
): Promise<{ text: string; closed: boolean }> {
  let text = "";
  let closed = false;
  const s = await Bun.connect({
    hostname: "127.0.0.1",
    port,
    socket: {
      data(_s, d) {
        text += new TextDecoder().decode(d);
      },
      close() {
        closed = true;
      },
    },
  });
  s.write(wire);
  const count = () => text.split("HTTP/1.1 ").length - 1;
  await until(
    () => closed || (count() >= statuses && text.endsWith("}")),
    "an answer or a close",
    5_000,
  );
  s.end();
  return { text, closed };
}

describe("HTTP/1.1 pipelining", () => {
  test("a completion with a request pipelined behind it: no answer, the connection closed, nothing left booked", async () => {
    for (const behind of [livez, completion("second")]) {
      const r = await exchange(completion("first") + behind, 1);
      expect(r.closed).toBe(true);
      expect(r.text).toBe("");
    }
    await until(async () => (await bookedLoad(url)) === 0, "no booking left", 3_000);
  });

  test("what is answered at once (/livez) ahead of a completion: both answered, in order", async () => {
    const r = await exchange(livez + completion("after livez"), 2);
    const statuses = [...r.text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));
    expect(statuses).toEqual([200, 200]);
    expect(r.text.indexOf('{"status":"ok"}')).toBeLessThan(r.text.indexOf("text_completion"));
  });

  test("requests one after the other on one keep-alive connection: all answered", async () => {
    let text = "";
    const s = await Bun.connect({
      hostname: "127.0.0.1",
      port,
      socket: {
        data(_s, d) {
          text += new TextDecoder().decode(d);
        },
      },
    });
    for (let i = 1; i <= 3; i++) {
      s.write(completion(`sequential ${i}`));
      await until(() => text.split("text_completion").length - 1 === i, `answer ${i}`, 5_000);
    }
    s.end();
    expect(text.split("HTTP/1.1 200").length - 1).toBe(3);
  });
});
