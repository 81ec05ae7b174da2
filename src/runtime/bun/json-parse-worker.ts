/**
 * The Worker side of json-parse-pool.ts: decode, parse and check the prompt size of one large
 * client body with the edge's own functions (the same 400s and 413s, word for word), and hand
 * the bytes back (transferred, not copied) with the object, or the refusal alone.
 */
import { RouterError } from "../../core/errors.ts";
import { parseJsonObject } from "../../edge/body.ts";
import { checkPromptSize } from "../../edge/prompt-route/prompt-size.ts";
import type { ParseJob, ParseReply } from "./json-parse-pool.ts";

declare const self: Worker;

self.onmessage = (e: MessageEvent<ParseJob>) => {
  const { id, body, promptFields, maxPromptChars } = e.data;
  let reply: ParseReply;
  try {
    const json = parseJsonObject(body);
    for (const f of promptFields) checkPromptSize(json[f], f, maxPromptChars);
    reply = { id, ok: true, body, json };
    self.postMessage(reply, [body.buffer as ArrayBuffer]);
    return;
  } catch (err) {
    reply =
      err instanceof RouterError
        ? { id, ok: false, code: err.code, message: err.message, param: err.field }
        : { id, ok: false, code: "internal", message: (err as Error).message ?? String(err) };
  }
  self.postMessage(reply);
};
