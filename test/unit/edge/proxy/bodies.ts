/** Engine answer bodies the proxy tests share. */
import type { UpstreamBody } from "../../../../src/edge/proxy/upstream.ts";

const enc = new TextEncoder();

/** A whole answer in one chunk, which knows it is drained once read (a non-streamed answer). */
export function okBody(text: string): UpstreamBody {
  let done = false;
  return {
    get drained() {
      return done;
    },
    async read() {
      if (done) return { done: true };
      done = true;
      return { done: false, value: enc.encode(text) };
    },
    async cancel() {},
  };
}
