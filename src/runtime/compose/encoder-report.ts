/**
 * What a loaded tokenizer's encoder choice tells the operator: one log line (a warning when the
 * differential check sent a model to the library, with the input that differed, so it can be
 * reproduced and reported) and `switchyard_tokenizer_encoder{tokenizer, encoder, reason}` = 1.
 * Tokenizers load at start and at registration, both through here.
 */
import type { Logger } from "../../core/logger.ts";
import type { RouterMetrics } from "../../observe/names.ts";
import type { EngineTokenizer } from "../../tokens/index.ts";

export function reportEncoderChoice(
  tok: EngineTokenizer,
  metrics: RouterMetrics,
  log: Logger,
): EngineTokenizer {
  const choice = tok.encoderChoice;
  if (choice === undefined) return tok;
  const guard = choice.guard;
  const reason = choice.reason ?? "";
  metrics.tokenizerEncoder.set([tok.source, choice.encoder, reason], 1);
  if (guard !== undefined && !guard.agree) {
    log.warn(
      `tokenizer ${tok.source}: the byte-level BPE and the library differ on the differential corpus; this model uses the library`,
      {
        first_difference: guard.difference.input,
        input_index: guard.difference.inputIndex,
        add_special_tokens: guard.difference.addSpecialTokens,
        bpe_ids: guard.difference.bpe,
        library_ids: guard.difference.library,
      },
    );
  } else if (guard !== undefined) {
    log.info(
      `tokenizer ${tok.source}: the byte-level BPE encodes as the library does on the differential corpus (${guard.inputs} inputs, ${guard.tokens} tokens): using it`,
    );
  }
  return tok;
}
