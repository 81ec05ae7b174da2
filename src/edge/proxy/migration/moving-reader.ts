/**
 * The engine's SSE answer as the client's stream reads it, able to move to another engine when
 * the first fails after its first byte: the connection breaks, the engine goes silent past the
 * stream-idle deadline (observe-stream.ts asks `engineSilent`), it sends an event that is not an
 * OpenAI chunk (an error event, broken JSON), it ends without `[DONE]`, or the router takes its
 * worker out of rotation (fenced, ejected, removed, unhealthy).
 *
 * No-failure path: the engine's bytes pass unchanged; only whole events are passed (a chunk
 * that ends inside an event is held until the event completes, so a move never leaves half an
 * event with the client), each event's payload is checked by its first and last bytes only,
 * and the bytes passed are kept raw (a copy) up to FOLD_BYTES, then parsed once into the
 * transcript (transcript.ts). A stream that ends before that parses nothing.
 *
 * On a failure: what was kept is folded into the transcript, the continuation is planned
 * (continuation.ts) and started by the host (a new routing decision and settlement:
 * move.ts), and from then on every event is rewritten by the splicer (splice.ts). When the
 * stream cannot be moved (refused, the move limit, the memory bound) it ends as it would
 * without migration: a broken connection breaks the client's, a malformed event is passed on, a
 * silent engine ends with the idle deadline's error event.
 */
import { vllmStreamFailure } from "../../../protocol/openai-error.ts";
import type { ChunkReader } from "../observe-stream.ts";
import { planContinuation, type ApiKind } from "./continuation.ts";
import type { KeptMemory } from "./kept-memory.ts";
import { Splicer } from "./splice.ts";
import { Transcript } from "./transcript.ts";

/** Raw bytes kept before they are parsed into the transcript: most answers end before this. */
const FOLD_BYTES = 64 * 1024;

const NL = 10;
const CR = 13;
const decoder = new TextDecoder();
const encoder = new TextEncoder();

/** A continuation under way on another worker: its reader and its first chunk (already read). */
export interface Continuation {
  readonly reader: ChunkReader;
  readonly first: Uint8Array | undefined;
  /** The worker now answering, for the note in the stream. */
  readonly workerId: bigint;
}

/** What the reader asks of the proxy: it owns routing, settlements and the retry budget. */
export interface MoveHost {
  /** The worker the stream comes from now. */
  readonly workerId: bigint;
  /** Subscribe to the current worker leaving rotation (`planned`: to drain, past --migrate-after); returns the unsubscribe. */
  watch(onDown: (reason: string, planned: boolean) => void): () => void;
  /** May one more move be spent (the fleet-wide retry budget)? */
  budget(): boolean;
  /** End the current try as failed (`why`, fenced when `fence`; a `planned` move blames nobody) and start `body` on another worker; undefined: none took it. */
  move(
    body: Uint8Array,
    why: string,
    fence: boolean,
    planned: boolean,
  ): Promise<Continuation | undefined>;
  /** The stream could not be moved: `outcome` says why, for the metric. */
  gaveUp(outcome: "refused" | "failed", why: string): void;
}

export interface MoveLimits {
  readonly kind: ApiKind;
  /** The client's body, as sent to the first engine. */
  readonly body: Uint8Array;
  /** Moves allowed for this request. */
  readonly maxMoves: number;
  /** Bytes this request may keep (text sent + raw events not yet folded, text counted 2 bytes a unit). */
  readonly keepBytes: number;
  readonly memory: KeptMemory;
}

interface Failure {
  readonly why: string;
  /** The engine connection broke: its worker is fenced. */
  readonly fence: boolean;
  /** What ends the client's stream when no move is possible: the upstream's error (rethrown), or an event to send last. */
  readonly error?: unknown;
  /** Bytes held back (a malformed event and what followed it), passed on when no move is possible. */
  readonly held?: Uint8Array;
  /** The engine was silent past the idle deadline. */
  readonly idle?: boolean;
  /** A planned move (the worker drains): nothing failed. */
  readonly planned?: boolean;
}

export class MovingReader implements ChunkReader {
  readonly #t = new Transcript();
  #up: ChunkReader;
  /** The first chunk of the current upstream, already read. */
  #pending: Uint8Array | undefined;
  /** The tail of an event not yet complete. */
  #carry: Uint8Array | undefined;
  /** Whole events passed since the last fold (copies). */
  #raw: Uint8Array[] = [];
  #rawBytes = 0;
  /** Bytes taken from the router-wide account. */
  #held = 0;
  /** Keeping stopped (the bounds, or the stream cannot be moved): plain pass-through from here. */
  #off = false;
  #splicer: Splicer | undefined;
  #moves = 0;
  /** A failure noticed outside read() (silence, the worker leaving), ending the current upstream. */
  #interrupt: Failure | undefined;
  #failure: Failure | undefined;
  #queue: Uint8Array[] = [];
  /** A read of the engine the fast path handed over to the slow one. */
  #got: { done: boolean; value?: Uint8Array | undefined } | { error: unknown } | undefined;
  #finished = false;
  #sawDone = false;
  #unwatch: (() => void) | undefined;
  #workerId: bigint;
  /** The stream ended because no move was possible after a failure: how its end counts (not "done"). */
  failedEnd: "error" | "timeout" | undefined;

  constructor(
    first: Uint8Array | undefined,
    upstream: ChunkReader,
    private readonly host: MoveHost,
    private readonly limits: MoveLimits,
  ) {
    this.#up = upstream;
    this.#pending = first;
    this.#workerId = host.workerId;
    this.#unwatch = host.watch((reason, planned) =>
      this.#interruptWith({
        why: planned ? `planned move (${reason})` : `worker left rotation (${reason})`,
        fence: false,
        planned,
      }),
    );
  }

  get drained(): boolean | undefined {
    return (
      this.#queue.length === 0 &&
      this.#pending === undefined &&
      this.#carry === undefined &&
      this.#failure === undefined &&
      this.#sawDone &&
      this.#up.drained === true
    );
  }

  /** Moves so far. */
  get moves(): number {
    return this.#moves;
  }

  /** observe-stream.ts: the engine sent nothing for the idle deadline. True: a move is under way, time it afresh. */
  engineSilent(): boolean {
    if (!this.#movable()) return false;
    this.#interruptWith({ why: "stream idle deadline missed", fence: false, idle: true });
    return true;
  }

  /**
   * The no-failure path costs one `then` on the engine's read (no async frame): a chunk of whole,
   * well-formed events is passed at once; anything else (an end, a failure, a split event, a
   * move under way) goes the slow way.
   */
  read(): Promise<{ done: boolean; value?: Uint8Array | undefined }> {
    if (
      this.#queue.length > 0 ||
      this.#failure !== undefined ||
      this.#finished ||
      this.#pending !== undefined ||
      this.#splicer !== undefined ||
      this.#interrupt !== undefined ||
      this.#got !== undefined
    ) {
      return this.#slow();
    }
    return this.#up.read().then(
      (r) => {
        if (this.#off && !r.done) return r;
        if (!r.done && r.value !== undefined && this.#interrupt === undefined) {
          const out = this.#accept(r.value);
          if (out === r.value) return r; // whole events, as they came
          if (out !== undefined && out.byteLength > 0) return { done: false, value: out };
          return this.#slow();
        }
        if (r.done && this.#sawDone && this.#carry === undefined && this.#interrupt === undefined) {
          // The engine ended after [DONE]: the end, without the slow path's async step.
          this.#end();
          this.#finished = true;
          return r;
        }
        this.#got = r;
        return this.#slow();
      },
      (e: unknown) => {
        this.#got = { error: e };
        return this.#slow();
      },
    );
  }

  /**
   * The first chunk's whole events, checked and kept now, for the caller to pass before its
   * first read (one async step fewer per stream); undefined: read() gives what there is.
   */
  takeFirst(): Uint8Array | undefined {
    const first = this.#pending;
    if (first === undefined || this.#splicer !== undefined) return undefined;
    this.#pending = undefined;
    const out = this.#accept(first);
    return out !== undefined && out.byteLength > 0 ? out : undefined;
  }

  async #slow(): Promise<{ done: boolean; value?: Uint8Array | undefined }> {
    for (;;) {
      const q = this.#queue.shift();
      if (q !== undefined) return { done: false, value: q };
      if (this.#failure !== undefined) {
        const f = this.#failure;
        this.#failure = undefined;
        await this.#recover(f);
        continue;
      }
      if (this.#finished) return { done: true };
      let r: { done: boolean; value?: Uint8Array | undefined };
      const got = this.#got;
      this.#got = undefined;
      if (this.#pending !== undefined) {
        r = { done: false, value: this.#pending };
        this.#pending = undefined;
      } else {
        try {
          if (got !== undefined && "error" in got) throw got.error;
          r = got ?? (await this.#up.read());
        } catch (e) {
          this.#failure = this.#interrupt ?? {
            why: `stream cut: ${(e as Error)?.message ?? String(e)}`,
            fence: true,
            error: e,
          };
          this.#interrupt = undefined;
          continue;
        }
      }
      if (r.done || r.value === undefined) {
        if (this.#interrupt !== undefined) {
          this.#failure = this.#interrupt;
          this.#interrupt = undefined;
          continue;
        }
        if (this.#off || this.#sawDone || this.#t.done || this.#finishedByTranscript()) {
          this.#end();
          return this.#carryOut() ?? { done: true };
        }
        this.#failure = { why: "the engine ended the stream before [DONE]", fence: false };
        continue;
      }
      if (this.#interrupt !== undefined) {
        // Bytes raced the interrupt: the upstream is cancelled already, so pass them and move.
        this.#failure = this.#interrupt;
        this.#interrupt = undefined;
      }
      const out = this.#off
        ? r.value
        : this.#splicer !== undefined
          ? this.#spliced(r.value)
          : this.#accept(r.value);
      if (out !== undefined && out.byteLength > 0) return { done: false, value: out };
    }
  }

  async cancel(reason?: unknown): Promise<void> {
    this.#finished = true;
    this.#end();
    await this.#up.cancel(reason).catch(() => {});
  }

  /** No-failure path: pass whole events unchanged, keep them raw; a malformed one is a failure. */
  #accept(chunk: Uint8Array): Uint8Array | undefined {
    let buf = chunk;
    if (this.#carry !== undefined) {
      buf = new Uint8Array(this.#carry.byteLength + chunk.byteLength);
      buf.set(this.#carry);
      buf.set(chunk, this.#carry.byteLength);
      this.#carry = undefined;
    }
    let pos = 0;
    for (;;) {
      const end = eventEnd(buf, pos);
      if (end < 0) break;
      const bad = this.#check(buf, pos, end);
      if (bad !== undefined) {
        this.#failure = { why: `malformed event: ${bad}`, fence: false, held: buf.slice(pos) };
        break;
      }
      pos = end;
    }
    if (this.#failure === undefined && pos < buf.byteLength) this.#carry = buf.slice(pos);
    if (pos === 0) return undefined;
    const pass = pos === buf.byteLength ? buf : buf.subarray(0, pos);
    this.#keep(pass);
    return pass;
  }

  /** One whole event [from, to): undefined when it may pass, else what is wrong with it. */
  #check(buf: Uint8Array, from: number, to: number): string | undefined {
    let dataLines = 0;
    let first = -1;
    let last = -1;
    let i = from;
    while (i < to) {
      let e = buf.indexOf(NL, i);
      if (e < 0 || e > to) e = to;
      let le = e;
      if (le > i && buf[le - 1] === CR) le--;
      // "data:" lines only; comments, `event:` and `id:` lines pass (an id is read when folding).
      if (
        le - i >= 5 &&
        buf[i] === 100 &&
        buf[i + 1] === 97 &&
        buf[i + 2] === 116 &&
        buf[i + 3] === 97 &&
        buf[i + 4] === 58
      ) {
        let p = i + 5;
        if (buf[p] === 32) p++;
        if (dataLines === 0) first = p;
        last = le;
        dataLines++;
      }
      i = e + 1;
    }
    if (dataLines === 0) return undefined;
    if (dataLines > 1) return undefined; // a payload over several lines: read when folding
    const n = last - first;
    if (n === 6 && buf[first] === 91 && buf[first + 1] === 68) {
      // "[DONE]"
      this.#sawDone = true;
      return undefined;
    }
    if (n < 2 || buf[first] !== 123 || buf[last - 1] !== 125) return "not a JSON object";
    // {"error" or {"object":"error": the engine failed mid-answer (vLLM, SGLang).
    if (
      startsWith(buf, first, ERROR_KEY) ||
      startsWith(buf, first, OBJECT_ERROR) ||
      startsWith(buf, first, OBJECT_ERROR_SPACED)
    )
      return "an error event";
    return undefined;
  }

  /** Keep what passed (raw), within the request's and the router's bounds; fold past FOLD_BYTES. */
  #keep(bytes: Uint8Array): void {
    if (this.#off) return;
    const n = bytes.byteLength;
    if (this.#held + n > this.limits.keepBytes || !this.limits.memory.take(n)) {
      this.#stopKeeping(`more than ${this.limits.keepBytes} bytes to keep`);
      return;
    }
    this.#held += n;
    // A reference, not a copy: the upstream readers hand out a fresh array per read.
    this.#raw.push(bytes);
    this.#rawBytes += n;
    if (this.#rawBytes > FOLD_BYTES) this.#fold();
  }

  /** Parse the raw events kept into the transcript, and hold only the text from here. */
  #fold(): void {
    if (this.#raw.length === 0) return;
    const text = decoder.decode(this.#raw.length === 1 ? this.#raw[0]! : concat(this.#raw));
    this.#raw = [];
    const before = this.#t.chars;
    for (const ev of text.split(/\r?\n\r?\n/)) {
      let data: string | undefined;
      for (const line of ev.split(/\r?\n/)) {
        if (line.startsWith("data:")) {
          const v = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
          data = data === undefined ? v : `${data}\n${v}`;
        } else if (line.startsWith("id:"))
          this.#t.eventId(line.charCodeAt(3) === 32 ? line.slice(4) : line.slice(3));
      }
      if (data !== undefined && !this.#t.data(data))
        this.#t.refuse("an event the router could not read was sent");
    }
    // The raw bytes go; the text kept (2 bytes a UTF-16 unit) stays accounted.
    const textBytes = 2 * (this.#t.chars - before);
    this.limits.memory.give(this.#rawBytes);
    this.#held -= this.#rawBytes;
    this.#rawBytes = 0;
    if (this.#held + textBytes > this.limits.keepBytes || !this.limits.memory.take(textBytes)) {
      this.#stopKeeping(`more than ${this.limits.keepBytes} bytes to keep`);
      return;
    }
    this.#held += textBytes;
  }

  #stopKeeping(why: string): void {
    this.#t.refuse(why);
    this.#off = true;
    this.#raw = [];
    this.#rawBytes = 0;
    this.limits.memory.give(this.#held);
    this.#held = 0;
  }

  #finishedByTranscript(): boolean {
    this.#fold();
    return this.#t.finished;
  }

  #movable(): boolean {
    return !this.#off && !this.#finished && !this.#sawDone && this.#moves < this.limits.maxMoves;
  }

  #interruptWith(f: Failure): void {
    if (this.#interrupt !== undefined || this.#finished || !this.#movable()) return;
    this.#interrupt = f;
    // The pending read returns (done or an error) and read() moves the stream.
    void this.#up.cancel(new Error(f.why)).catch(() => {});
  }

  /** After a failure: move the stream, or end it as it would end without migration. */
  async #recover(f: Failure): Promise<void> {
    this.#unwatch?.();
    this.#unwatch = undefined;
    const wasOff = this.#off;
    if (!wasOff) this.#fold();
    if (!this.#movable())
      return this.#giveUp(
        f,
        "refused",
        this.#off
          ? (this.#t.refused ?? "not kept")
          : `the limit of ${this.limits.maxMoves} moves was reached`,
        wasOff,
      );
    const plan = planContinuation(this.limits.kind, this.limits.body, this.#t);
    if (plan.kind === "refused") return this.#giveUp(f, "refused", plan.why, false);
    if (plan.kind === "finished") {
      void this.#up.cancel().catch(() => {});
      this.#queue.push(...this.#closing());
      this.#end();
      this.#finished = true;
      return;
    }
    if (!this.host.budget()) return this.#giveUp(f, "refused", "the retry budget is spent", false);
    void this.#up.cancel().catch(() => {});
    this.#carry = undefined;
    this.#moves++;
    const from = this.#workerId;
    const c = await this.host.move(plan.body, f.why, f.fence, f.planned === true);
    if (c === undefined) {
      this.failedEnd = "error";
      this.host.gaveUp("failed", f.why);
      this.#queue.push(
        vllmStreamFailure("the engine failed mid-answer and no other worker could continue it"),
      );
      this.#end();
      this.#finished = true;
      return;
    }
    this.#up = c.reader;
    this.#pending = c.first;
    this.#workerId = c.workerId;
    this.#splicer = new Splicer(this.#t, plan.produced, plan.sentChars);
    // An SSE comment: clients skip it; a person reading the raw stream sees the move.
    this.#queue.push(
      encoder.encode(
        `: switchyard moved this stream from worker ${from} to worker ${c.workerId} (${oneLine(f.why)})\n\n`,
      ),
    );
    this.#unwatch = this.host.watch((reason, planned) =>
      this.#interruptWith({
        why: planned ? `planned move (${reason})` : `worker left rotation (${reason})`,
        fence: false,
        planned,
      }),
    );
  }

  /** No move: the stream ends the way it would have without migration. */
  #giveUp(f: Failure, outcome: "refused" | "failed", why: string, quiet: boolean): void {
    if (!quiet) this.host.gaveUp(outcome, why);
    this.#off = true;
    this.#end();
    if (f.held !== undefined) {
      // A malformed event: passed on as it came, and the stream goes on as it does today.
      this.#queue.push(f.held);
      return;
    }
    this.#finished = true;
    this.failedEnd = "error";
    if (f.error !== undefined) throw f.error;
    if (f.idle === true) {
      this.failedEnd = "timeout";
      this.#queue.push(
        vllmStreamFailure(
          "stream idle deadline missed: the engine sent nothing; the answer is incomplete",
        ),
      );
      return;
    }
    throw new Error(f.why);
  }

  /** After a continuation: rewrite every event (whole events only) onto the first stream. */
  #spliced(chunk: Uint8Array): Uint8Array | undefined {
    let buf = chunk;
    if (this.#carry !== undefined) {
      buf = new Uint8Array(this.#carry.byteLength + chunk.byteLength);
      buf.set(this.#carry);
      buf.set(chunk, this.#carry.byteLength);
      this.#carry = undefined;
    }
    let pos = 0;
    let out = "";
    for (;;) {
      const end = eventEnd(buf, pos);
      if (end < 0) break;
      const start = pos;
      const ev = decoder.decode(buf.subarray(pos, end));
      pos = end;
      let data: string | undefined;
      let id: string | undefined;
      for (const line of ev.split(/\r?\n/)) {
        if (line.startsWith("data:")) {
          const v = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
          data = data === undefined ? v : `${data}\n${v}`;
        } else if (line.startsWith("id:"))
          id = line.charCodeAt(3) === 32 ? line.slice(4) : line.slice(3);
      }
      if (data === undefined) continue;
      const r = this.#splicer!.data(data);
      if (!r.ok) {
        this.#failure = { why: `malformed event: ${r.why}`, fence: false, held: buf.slice(start) };
        break;
      }
      if (r.payload === undefined) continue;
      if (r.payload === "[DONE]") this.#sawDone = true;
      if (id !== undefined) this.#t.eventId(id);
      out += `${id !== undefined ? `id: ${id}\n` : ""}data: ${r.payload}\n\n`;
    }
    if (this.#failure === undefined && pos < buf.byteLength) this.#carry = buf.slice(pos);
    return out === "" ? undefined : encoder.encode(out);
  }

  /** Nothing is left to write: the last choice's finish and [DONE]. */
  #closing(): Uint8Array[] {
    const t = this.#t;
    const out: Uint8Array[] = [];
    const c = t.choices.get(0);
    if (c === undefined || c.finish === null) {
      const choice =
        this.limits.kind === "chat"
          ? { index: 0, delta: {}, logprobs: null, finish_reason: "length" }
          : { index: 0, text: "", logprobs: null, finish_reason: "length" };
      const chunk = {
        id: t.id,
        object: this.limits.kind === "chat" ? "chat.completion.chunk" : "text_completion",
        created: t.created,
        model: t.model,
        choices: [choice],
      };
      out.push(encoder.encode(`data: ${JSON.stringify(chunk)}\n\n`));
    }
    out.push(encoder.encode("data: [DONE]\n\n"));
    this.#sawDone = true;
    return out;
  }

  /** The stream is over (its end was reported): what it kept goes back to the router's account. */
  release(): void {
    this.#end();
  }

  /** The stream is over: the bytes it kept go back to the router's account, the watch ends. */
  #end(): void {
    this.#unwatch?.();
    this.#unwatch = undefined;
    this.#raw = [];
    this.#rawBytes = 0;
    this.limits.memory.give(this.#held);
    this.#held = 0;
  }

  /** A partial event left when the engine ended cleanly: passed as it came. */
  #carryOut(): { done: false; value: Uint8Array } | undefined {
    const c = this.#carry;
    this.#carry = undefined;
    this.#finished = true;
    return c !== undefined ? { done: false, value: c } : undefined;
  }
}

const ERROR_KEY = encoder.encode('{"error"');
const OBJECT_ERROR = encoder.encode('{"object":"error"');
const OBJECT_ERROR_SPACED = encoder.encode('{"object": "error"');

function startsWith(buf: Uint8Array, at: number, prefix: Uint8Array): boolean {
  if (at + prefix.byteLength > buf.byteLength) return false;
  for (let k = 0; k < prefix.byteLength; k++) if (buf[at + k] !== prefix[k]) return false;
  return true;
}

/** The index just past the blank line ending the event that starts at `from`; -1 when it is not complete. */
function eventEnd(buf: Uint8Array, from: number): number {
  let i = buf.indexOf(NL, from);
  while (i >= 0) {
    const next = buf[i + 1];
    if (next === NL) return i + 2;
    if (next === CR && buf[i + 2] === NL) return i + 3;
    i = buf.indexOf(NL, i + 1);
  }
  return -1;
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.byteLength;
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.byteLength;
  }
  return out;
}

function oneLine(s: string): string {
  return s.replace(/[\r\n]+/g, " ");
}
