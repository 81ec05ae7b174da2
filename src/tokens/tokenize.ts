/**
 * The one tokenizer shared by the router and the simulated engine, so the block hashes the
 * router computes for a prompt equal the ones the engine reports in its KV events.
 * A token is one UTF-8 byte (ids 0..255): deterministic, dependency-free and cheap.
 */

const encoder = new TextEncoder();

/** Strings up to this many UTF-16 units are encoded into a reused buffer (3 bytes per unit at most). */
const SCRATCH_MAX_UNITS = 1 << 18;
let scratch = new Uint8Array(3 * 4096);

/**
 * UTF-8 bytes of `text`, each one a token id. Hot path (every request): the bytes go into
 * a reused buffer, then one plain loop widens them; no intermediate byte array, no
 * `Uint32Array.from` (which walks its input generically).
 */
export function tokenizeText(text: string): Uint32Array {
  let bytes: Uint8Array;
  let n: number;
  if (text.length <= SCRATCH_MAX_UNITS) {
    if (scratch.length < 3 * text.length) scratch = new Uint8Array(3 * text.length);
    bytes = scratch;
    n = encoder.encodeInto(text, scratch).written;
  } else {
    bytes = encoder.encode(text);
    n = bytes.length;
  }
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = bytes[i]!;
  return out;
}

export interface ChatMessage {
  readonly role: string;
  readonly content: string;
}

/** Opens the model's turn; the engine's output continues right after it. */
export const ASSISTANT_PREFIX = "<|assistant|>\n";

/**
 * The chat template as text: `<|role|>\ncontent\n` per message, then `<|assistant|>\n`.
 * A finished multi-turn conversation therefore starts with the previous turn's prompt
 * followed by the previous answer's tokens, as with a real chat template.
 * `continueFinal` (vLLM's `continue_final_message` with `add_generation_prompt: false`): the
 * final message stays open (no closing newline, no new turn), so `[..., {assistant, "abc"}]`
 * renders as the prompt that was answered followed by `abc`.
 */
export function renderChat(messages: readonly ChatMessage[], continueFinal = false): string {
  let out = "";
  for (const m of messages) out += `<|${m.role}|>\n${m.content}\n`;
  return continueFinal && messages.length > 0 ? out.slice(0, -1) : out + ASSISTANT_PREFIX;
}

export function tokenizeChat(messages: readonly ChatMessage[], continueFinal = false): Uint32Array {
  return tokenizeText(renderChat(messages, continueFinal));
}
