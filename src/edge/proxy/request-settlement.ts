/**
 * The one end of a client's request, above the settlements of its routing decisions (a
 * retry, the LoRA 404 retry and a P/D pair make several): a tenant's charge subscribes with
 * `onEnd` and hears, once, the output and prompt tokens of the answer the client got, read
 * by the settlement of the decision that made that answer (settlement.ts) from the bytes the
 * client got. The caller that holds the request says which answer that was (`answered`) or
 * that there was none (`failed`); the charge settles when both that is known and that
 * decision's answer is over, whichever comes last.
 *
 * What it does not do: free bookings, report outcomes or count metrics (each decision's
 * settlement does), or read a body itself.
 */
import { SseDataCounter } from "./sse-counter.ts";
import { UsageSniffer } from "../../protect/usage-sniffer.ts";

/** What a charge hears: the answer's output tokens, and the prompt tokens it reports (undefined: it says none). */
export type AnswerTokens = (outputTokens: number, promptTokens: number | undefined) => void;

/** The answer's own `usage` read as its bytes pass, and its SSE events with output when it has none. */
export class AnswerCount {
  readonly #usage = new UsageSniffer();
  readonly #sse = new SseDataCounter();

  push(chunk: Uint8Array): void {
    this.#usage.push(chunk);
    this.#sse.push(chunk);
  }

  /**
   * The output tokens: the answer's usage when it reports one, else its SSE events with
   * output, else `fallback` for a success and 0 for an error answer; and its usage's prompt tokens.
   */
  read(status: number, fallback: number): [outputTokens: number, promptTokens: number | undefined] {
    this.#sse.finish();
    const out =
      this.#usage.completionTokens ??
      (this.#sse.events > 0 ? this.#sse.tokens : status >= 400 ? 0 : fallback);
    return [out, this.#usage.promptTokens];
  }
}

/** A decision's answer as its settlement hands it over: status and what was counted of its bytes (none: no body). */
export interface DecisionAnswer {
  readonly status: number;
  readonly count?: AnswerCount;
}

/** The settlement (settlement.ts) that made each answer the client may get. */
const madeBy = new WeakMap<Response, object>();

export class RequestSettlement {
  /** The output tokens charged for a success whose answer says nothing (what was booked). */
  readonly #fallback: number;
  readonly #listeners: AnswerTokens[] = [];
  readonly #ended = new Map<object, DecisionAnswer>();
  /** The decision that made the client's answer (null: none did), once the caller said. */
  #answer: object | null | undefined;
  #done = false;

  constructor(fallback: number) {
    this.#fallback = fallback;
  }

  /** `fn` hears the answer's tokens once, when the request is over. */
  onEnd(fn: AnswerTokens): void {
    this.#listeners.push(fn);
  }

  /** `res` was made from the answer of `decision` (forward.ts). */
  made(res: Response, decision: object): void {
    madeBy.set(res, decision);
  }

  /** A decision's answer is over (settlement.ts): its answer, in case it is the client's. */
  decisionEnded(decision: object, a: DecisionAnswer): void {
    if (this.#done) return;
    if (this.#answer === undefined) this.#ended.set(decision, a);
    else if (this.#answer === decision) this.#settle(a);
  }

  /**
   * The client gets `res`. An answer no decision made (a prefill worker's client error passed
   * on, a client gone before any decision answered) has no body the router reads: an error
   * answer, charged nothing for output.
   */
  answered(res: Response): void {
    if (this.#done || this.#answer !== undefined) return;
    const decision = madeBy.get(res);
    this.#answer = decision ?? null;
    if (decision === undefined) return this.#settle({ status: res.status });
    const a = this.#ended.get(decision);
    this.#ended.clear();
    if (a !== undefined) this.#settle(a);
  }

  /** No answer: the request ended in an error thrown before one. */
  failed(): void {
    this.#answer = null;
    this.#settle({ status: 500 });
  }

  #settle(a: DecisionAnswer): void {
    if (this.#done) return;
    this.#done = true;
    this.#ended.clear();
    const [out, prompt] = a.count?.read(a.status, this.#fallback) ?? [
      a.status >= 400 ? 0 : this.#fallback,
      undefined,
    ];
    for (const fn of this.#listeners) fn(out, prompt);
  }
}
