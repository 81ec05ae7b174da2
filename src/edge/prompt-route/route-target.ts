/**
 * What POST /v1/route routes on: `tokens` as given, or the `prompt` / `messages`
 * of an OpenAI body tokenized as the OpenAI routes do (prompt-routing.ts), restricted to the
 * workers serving `model` (model-routing.ts; a LoRA adapter is placed first when needed).
 * It books nothing.
 */
import { RouterError } from "../../core/errors.ts";
import type { WorkerId } from "../../core/ids.ts";
import type { FleetView } from "../deps.ts";
import { modelRoute } from "./model-routing.ts";
import { readPrompt } from "./prompt-routing.ts";

export interface RouteTarget {
  readonly tokens: Uint32Array;
  readonly approximate: boolean;
  readonly loraName?: string;
  readonly allowedWorkerIds?: ReadonlySet<WorkerId>;
}

export async function routeTarget(
  fleet: FleetView,
  raw: Record<string, unknown>,
  b: { tokens?: number[]; lora?: string | null; model?: string | null },
  maxPromptChars?: number,
): Promise<RouteTarget> {
  let tokens: Uint32Array;
  let approximate = false;
  if (b.tokens !== undefined) tokens = Uint32Array.from(b.tokens);
  else if (raw.messages !== undefined || raw.prompt !== undefined) {
    const p = await readPrompt(
      fleet.tokenizers,
      raw,
      raw.messages !== undefined ? "chat" : "completions",
      maxPromptChars,
    );
    tokens = p.tokens;
    approximate = p.approximate;
  } else {
    throw new RouterError(
      "invalid_request",
      "invalid route request: one of tokens, prompt or messages is required",
      "tokens",
    );
  }
  const route = modelRoute(b.model ?? undefined, fleet);
  switch (route.kind) {
    case "any":
      return { tokens, approximate, loraName: b.lora ?? undefined };
    case "lora":
      return {
        tokens,
        approximate,
        loraName: route.loraName,
        allowedWorkerIds: await fleet.lora.ensure(route.loraName),
      };
    case "workers":
      return {
        tokens,
        approximate,
        loraName: route.loraName ?? b.lora ?? undefined,
        allowedWorkerIds: route.workerIds,
      };
  }
}
