/**
 * Deterministic fake output. One output token is one ASCII character, which is exactly one
 * token of the shared byte tokenizer (src/tokens), so an answer sent back in the next chat
 * turn tokenizes to the same ids the engine "generated". Same prompt + seed = same text.
 *
 * A request with its own `seed` gets text that depends on that seed and on each token's
 * position in the sequence (prompt length + output index) only: a continuation whose prompt is
 * the first prompt plus the text so far (the router moving a stream to another engine) goes on
 * with exactly the characters the first engine would have written next. Without a request
 * seed the text also depends on the prompt's last tokens (an unseeded sampler is not
 * reproducible either).
 */

const TEXT =
  "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua " +
  "ut enim ad minim veniam quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat ";

/**
 * Where in the text a request starts. `requestSeed` (the body's `seed`): the engine seed, the
 * request seed and the prompt's length; without it, a cheap mix of the engine seed and the
 * prompt's ends.
 */
export function fakeTextOffset(seed: number, prompt: Uint32Array, requestSeed?: number): number {
  if (requestSeed !== undefined) {
    const h =
      Math.imul((seed ^ 0x9e3779b9) >>> 0, 0x01000193) ^
      Math.imul(requestSeed >>> 0, 0x85ebca6b) ^
      Math.floor(requestSeed / 2 ** 32);
    return ((h >>> 0) + prompt.length) % TEXT.length;
  }
  let h = (seed ^ 0x9e3779b9 ^ prompt.length) >>> 0;
  const n = Math.min(prompt.length, 32);
  for (let i = 0; i < n; i++) h = Math.imul(h ^ prompt[prompt.length - 1 - i]!, 0x01000193) >>> 0;
  return h % TEXT.length;
}

/** The i-th output token's text for a request starting at `offset`. */
export function fakeToken(offset: number, i: number): string {
  return TEXT[(offset + i) % TEXT.length]!;
}

/** The place in the text of the i-th output token (what its logprobs depend on: fake-logprobs.ts). */
export function fakePlace(offset: number, i: number): number {
  return (offset + i) % TEXT.length;
}
