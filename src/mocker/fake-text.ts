/**
 * Deterministic fake output. One output token is one ASCII character, which is exactly one
 * token of the shared byte tokenizer (src/tokens), so an answer sent back in the next chat
 * turn tokenizes to the same ids the engine "generated". Same prompt + seed = same text.
 */

const TEXT =
  "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua " +
  "ut enim ad minim veniam quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat ";

/** Where in the text a request starts: a cheap mix of the seed and the prompt's ends. */
export function fakeTextOffset(seed: number, prompt: Uint32Array): number {
  let h = (seed ^ 0x9e3779b9 ^ prompt.length) >>> 0;
  const n = Math.min(prompt.length, 32);
  for (let i = 0; i < n; i++) h = Math.imul(h ^ prompt[prompt.length - 1 - i]!, 0x01000193) >>> 0;
  return h % TEXT.length;
}

/** The i-th output token's text for a request starting at `offset`. */
export function fakeToken(offset: number, i: number): string {
  return TEXT[(offset + i) % TEXT.length]!;
}
