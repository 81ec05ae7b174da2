/**
 * The one tokenizer shared by the router and the simulated engine, so the block hashes the
 * router computes for a prompt equal the ones the engine reports in its KV events.
 * A token is one UTF-8 byte (ids 0..255): deterministic, dependency-free and cheap.
 */

const encoder = new TextEncoder();

/** UTF-8 bytes of `text`, each one a token id. */
export function tokenizeText(text: string): Uint32Array {
  return Uint32Array.from(encoder.encode(text));
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
 */
export function renderChat(messages: readonly ChatMessage[]): string {
  let out = "";
  for (const m of messages) out += `<|${m.role}|>\n${m.content}\n`;
  return out + ASSISTANT_PREFIX;
}

export function tokenizeChat(messages: readonly ChatMessage[]): Uint32Array {
  return tokenizeText(renderChat(messages));
}
