/**
 * Catching the error a test expects, typed: `thrownBy` for a call, `rejectionOf` for a
 * promise. Anything else thrown propagates (the test fails with the real error), and
 * throwing nothing fails the test too; the caller then asserts on the error's fields.
 */
import { RouterError } from "../../src/core/errors.ts";

type ErrorClass<E extends Error> = abstract new (...args: never[]) => E;

/** The `type` error that `fn` throws. */
export function thrownBy<E extends Error>(type: ErrorClass<E>, fn: () => unknown): E {
  try {
    fn();
  } catch (e) {
    if (e instanceof type) return e;
    throw e;
  }
  throw new Error(`expected a ${type.name}, but nothing was thrown`);
}

/** The `type` error that `p` rejects with. */
export async function rejectionOf<E extends Error>(
  type: ErrorClass<E>,
  p: Promise<unknown>,
): Promise<E> {
  try {
    await p;
  } catch (e) {
    if (e instanceof type) return e;
    throw e;
  }
  throw new Error(`expected a ${type.name}, but the promise resolved`);
}

/** The RouterError code `fn` throws; "not a RouterError" for any other error; undefined when it returns. */
export function routerErrorCode(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    return e instanceof RouterError ? e.code : "not a RouterError";
  }
  return undefined;
}
