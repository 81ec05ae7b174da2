export { ASSISTANT_PREFIX, type ChatMessage, renderChat, tokenizeChat, tokenizeText } from "./tokenize.ts";
export { chatPromptTokens, completionPromptTokens, promptTokens } from "./prompt.ts";
