/**
 * Counts SSE `data:` events in a byte stream without decoding or copying it: the router
 * observes a streamed response on the side and passes the bytes on unchanged. One event
 * line = one output chunk (one token for the engines we front); `data: [DONE]` is not one.
 * Lines may be split across chunks; only the first few bytes of each line are kept.
 */

const NL = 10;
const CR = 13;
/** Longest line prefix we need to classify: "data: [DONE]\r". */
const HEAD = 13;
const DATA = [100, 97, 116, 97, 58]; // "data:"
const DONE = [91, 68, 79, 78, 69, 93]; // "[DONE]"

export class SseDataCounter {
  /** Data events seen so far ([DONE] excluded). */
  events = 0;
  /** A `data: [DONE]` line was seen: nothing meaningful follows. */
  done = false;
  readonly #head = new Uint8Array(HEAD);
  #headLen = 0;

  /** Scan one chunk; returns how many data events ended in it. */
  push(chunk: Uint8Array): number {
    const before = this.events;
    let i = 0;
    const n = chunk.length;
    while (i < n) {
      const nl = chunk.indexOf(NL, i);
      const end = nl < 0 ? n : nl;
      // At most HEAD bytes per line, copied one by one: cheaper than a subarray view.
      const head = this.#head;
      let len = this.#headLen;
      for (let k = i; k < end && len < HEAD; k++) head[len++] = chunk[k]!;
      this.#headLen = len;
      if (nl < 0) break;
      this.#endLine();
      i = nl + 1;
    }
    return this.events - before;
  }

  /** The stream ended: a last line without a newline still counts. */
  finish(): number {
    if (this.#headLen === 0) return 0;
    const before = this.events;
    this.#endLine();
    return this.events - before;
  }

  #endLine(): void {
    const h = this.#head;
    let len = this.#headLen;
    this.#headLen = 0;
    if (len < DATA.length) return;
    for (let k = 0; k < DATA.length; k++) if (h[k] !== DATA[k]) return;
    if (len > 0 && h[len - 1] === CR) len--;
    let p = DATA.length;
    if (h[p] === 32) p++;
    if (len - p === DONE.length) {
      let done = true;
      for (let k = 0; k < DONE.length; k++) if (h[p + k] !== DONE[k]) done = false;
      if (done) {
        this.done = true;
        return;
      }
    }
    this.events++;
  }
}
