/**
 * How many output tokens a request asks for, read from its body the way each API names it:
 * `max_completion_tokens` or `max_tokens` (chat), `max_tokens` (completions),
 * `max_output_tokens` (responses), SGLang's `sampling_params.max_new_tokens`; times `n`
 * choices where the API has them. Routes that generate nothing (embeddings, scores,
 * tokenize) ask 0. Undefined: the body does not say (the tenant's default is booked). Pure.
 */

/** Paths whose answers generate no tokens. */
const NO_OUTPUT = new Set([
  "/v1/embeddings",
  "/pooling",
  "/classify",
  "/score",
  "/v1/score",
  "/rerank",
  "/v1/rerank",
  "/v2/rerank",
  "/detokenize",
  "/tokenize",
]);
/** Choices a body may ask for, as far as booking goes (vLLM refuses far fewer anyway). */
const MAX_CHOICES = 128;

/** Whether answers on `path` generate no tokens (embeddings, scores, tokenize). */
export function generatesNoOutput(path: string): boolean {
  return NO_OUTPUT.has(path);
}

export function outputTokensAsked(path: string, body: Record<string, unknown>): number | undefined {
  if (NO_OUTPUT.has(path)) return 0;
  let asked: unknown;
  if (path === "/v1/chat/completions") asked = body.max_completion_tokens ?? body.max_tokens;
  else if (path === "/v1/responses") asked = body.max_output_tokens;
  else if (path === "/generate") {
    const sp = body.sampling_params;
    asked =
      typeof sp === "object" && sp !== null
        ? (sp as Record<string, unknown>).max_new_tokens
        : undefined;
  } else asked = body.max_tokens;
  if (typeof asked !== "number" || !Number.isFinite(asked) || asked < 0) return undefined;
  return Math.floor(asked) * choicesAsked(body);
}

/** The choices a body asks for (`n`, at least 1), as far as booking goes. */
export function choicesAsked(body: Record<string, unknown>): number {
  return typeof body.n === "number" && Number.isSafeInteger(body.n) && body.n > 1
    ? Math.min(body.n, MAX_CHOICES)
    : 1;
}
