/**
 * Awaiting a native job without blocking the event loop: a short blocking wait first (small
 * transfers finish inside it, with no timer), then polls with a growing sleep. The C side
 * keeps running the job whether or not anyone awaits the promise, and the final poll releases
 * it, so a job is never leaked by an abandoned promise (the loop always runs to the end).
 */
import { SY_PENDING } from "./native/ffi.ts";
import type { NativeLibrary } from "./native/library.ts";
import { fromStatus } from "./errors.ts";

/** Blocking wait on the first poll: a job that is nearly done needs no timer at all. */
const FIRST_WAIT_US = 100;
/** Upper bound of the sleep between polls: bounds the latency added to long jobs. */
const MAX_POLL_SLEEP_MS = 4;

/** Resolves when the job (a handle from a *_submit call, or its error status) finishes. */
export async function awaitJob(lib: NativeLibrary, job: number, what: string): Promise<void> {
  const sym = lib.unsafeSymbols;
  if (job < 0) throw fromStatus(job, lib.lastError(), what);
  let st = sym.sy_job_wait(job, FIRST_WAIT_US);
  let sleepMs = 0;
  while (st === SY_PENDING) {
    await Bun.sleep(sleepMs);
    sleepMs = Math.min(sleepMs === 0 ? 1 : sleepMs * 2, MAX_POLL_SLEEP_MS);
    st = sym.sy_job_wait(job, 0);
  }
  if (st < 0) throw fromStatus(st, lib.lastError(), what);
}
