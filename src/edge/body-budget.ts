/**
 * Large request bodies being read at once, bounded router-wide: every client route that carries
 * a prompt holds, from its first byte read until its JSON is parsed, the bytes of a body it
 * streams (a Content-Length of 1 MiB or more is held in full up front, a chunked body as its
 * bytes arrive). Past the bound the request is refused at once with 503 `unavailable` and
 * `Retry-After: 1`, never queued: a wait would hold the client's connection and its unread
 * bytes in the kernel's buffers, and a client that retries comes back once the reads in
 * progress are done. So however many clients send large bodies, the router holds at most this
 * many of their bytes, plus what the parse pool holds (runtime/bun/json-parse-pool.ts).
 */
import { RouterError } from "../core/errors.ts";

/**
 * 64 MiB: four bodies at the prompt bound of the default --max-prompt-chars (13 MiB each). The
 * router uses --max-body-bytes instead when that is larger, so one body alone always fits.
 */
export const BODY_READ_BUDGET_BYTES = 64 * 1024 * 1024;

/** 503 `unavailable`, Retry-After 1; answered with the connection closed (errors.ts), as the body is left unread. */
export class BodyBudgetFull extends RouterError {
  constructor(message: string) {
    super("unavailable", message, undefined, 1);
  }
}

export class BodyReadBudget {
  private used = 0;

  constructor(readonly maxBytes: number = BODY_READ_BUDGET_BYTES) {}

  /** Bytes held by bodies being read or parsed now. */
  get held(): number {
    return this.used;
  }

  /** One request's hold: `take` as bytes come, `release` once when the body is parsed or refused. */
  hold(): BodyHold {
    let mine = 0;
    return {
      take: (bytes: number) => {
        if (this.used + bytes > this.maxBytes) {
          throw new BodyBudgetFull(
            `the router is busy reading large request bodies: ${this.used} bytes are being read (at most ${this.maxBytes}); retry shortly`,
          );
        }
        this.used += bytes;
        mine += bytes;
      },
      release: () => {
        this.used -= mine;
        mine = 0;
      },
    };
  }
}

export interface BodyHold {
  /** Throws BodyBudgetFull (503, Retry-After 1) when the budget has no room for `bytes` more. */
  take(bytes: number): void;
  release(): void;
}
