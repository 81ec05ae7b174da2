/**
 * Defaults of options whose value the edge reads, kept with the options table (schema.ts) so
 * the table depends on nothing above it.
 */

/** --max-prompt-chars' default: 1 Mi characters, about 256k tokens of English text, twice the 128k-token prompts the router is built for. */
export const DEFAULT_MAX_PROMPT_CHARS = 1 << 20;

/** --retry-on's default: the statuses an answer is tried again elsewhere on (before its first byte). */
export const DEFAULT_RETRY_STATUSES: readonly number[] = [429, 500, 502, 503, 504];
