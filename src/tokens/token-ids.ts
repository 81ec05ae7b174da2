/**
 * Token ids given in a request (`prompt: [1, 2, 3]`), checked: integers in [0, 2^32), never
 * empty. Shared by the vLLM request rules (request-prompts.ts) and the simulated engine's byte
 * tokenizer (prompt.ts). Throws RouterError("invalid_request") naming the bad element.
 */
import { RouterError } from "../core/errors.ts";

const MAX_TOKEN_ID = 0xffffffff;

/** A 400 naming `field`. */
export function invalid(field: string, message: string): never {
  throw new RouterError("invalid_request", `${field}: ${message}`, field);
}

export function tokenIds(arr: readonly unknown[], field: string): Uint32Array {
  if (arr.length === 0) invalid(field, "must not be empty");
  const out = new Uint32Array(arr.length);
  for (let i = 0; i < arr.length; i++) {
    const t = arr[i];
    if (typeof t !== "number" || !Number.isInteger(t) || t < 0 || t > MAX_TOKEN_ID) {
      invalid(`${field}[${i}]`, "token ids must be integers in [0, 2^32)");
    }
    out[i] = t;
  }
  return out;
}
