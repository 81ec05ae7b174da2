export {
  ASSISTANT_PREFIX,
  type ChatMessage,
  renderChat,
  tokenizeChat,
  tokenizeText,
} from "./tokenize.ts";
export { chatPromptTokens, completionPromptTokens, promptTokens } from "./prompt.ts";
export type {
  ChatTemplateRequest,
  EncoderChoice,
  EngineTokenizer,
  ReadText,
  TokenizerLibrary,
  TokenizerLibraryFactory,
  TokenizerImpl,
} from "./engine-tokenizer.ts";
export { DEFAULT_CACHE_TOKENS, type LoadTokenizerOptions, loadEngineTokenizer } from "./load.ts";
export { type RequestPrompt, requestPrompts } from "./request-prompts.ts";
