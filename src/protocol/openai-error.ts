/**
 * OpenAI's error body, {"error":{"message","type","param","code"}}, built in one place for
 * every program here: the router, the transfer agent and the simulated engine, as a whole
 * answer or as the SSE event that ends a stream which already started. Shape only: which
 * status an error gets is the caller's business (src/edge/errors.ts for the router). Uses
 * only web standards (Response, TextEncoder).
 *
 * `code` differs between the two families we speak: OpenAI's is a short string or null,
 * vLLM's (ErrorInfo in vllm/entrypoints/openai/protocol.py) is the HTTP status as an int.
 * The router and the agent answer OpenAI's; the simulated engine imitates vLLM, so a client
 * behind the router sees what a real vLLM fleet would send (`codeIsStatus`). A stream the router
 * relays and must end itself (the engine silent or gone mid-answer) ends as vLLM ends one
 * (`vllmStreamFailure`), since the client is reading an engine's stream.
 */

/** The object under `error`. */
export interface OpenAiErrorObject {
  readonly message: string;
  readonly type: string;
  readonly param: string | null;
  readonly code: string | number | null;
}

export interface OpenAiErrorOptions {
  /** OpenAI's machine-readable `code`; default null. Ignored with `codeIsStatus`. */
  readonly code?: string;
  /** The request field at fault; default null. */
  readonly param?: string;
  /** OpenAI's `type`; default from the status (openAiErrorType). */
  readonly type?: string;
  /** vLLM's shape: `code` is the HTTP status, an int. */
  readonly codeIsStatus?: boolean;
}

/** OpenAI's `type` field: what kind of problem, from the status. */
export function openAiErrorType(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 400 && status < 500) return "invalid_request_error";
  if (status === 503) return "service_unavailable";
  return "server_error";
}

/** The error body as an object. */
export function openAiError(
  status: number,
  message: string,
  o: OpenAiErrorOptions = {},
): { error: OpenAiErrorObject } {
  return {
    error: {
      message,
      type: o.type ?? openAiErrorType(status),
      param: o.param ?? null,
      code: o.codeIsStatus === true ? status : (o.code ?? null),
    },
  };
}

/** The error body as JSON text. */
export function openAiErrorJson(status: number, message: string, o?: OpenAiErrorOptions): string {
  return JSON.stringify(openAiError(status, message, o));
}

const encoder = new TextEncoder();

/**
 * One SSE event carrying the error body, for a stream whose 200 and first events are already
 * sent: a client reading events sees why the answer stopped (OpenAI's SDKs raise on it).
 * `status` only picks `type` (and vLLM's numeric `code`); the stream's own status stays.
 */
export function openAiErrorEvent(
  status: number,
  message: string,
  o?: OpenAiErrorOptions,
): Uint8Array {
  return encoder.encode(`data: ${openAiErrorJson(status, message, o)}\n\n`);
}

/**
 * How a stream the router relays ends when it fails after its first event, byte for byte as
 * vLLM ends its own (vllm-project/vllm @030ea52e, vllm/entrypoints/openai/completion/serving.py
 * `completion_stream_generator`, and chat_completion/serving.py the same: `except Exception as
 * e: data = self.create_streaming_error_response(e); yield f"data: {data}\n\n"`, then `yield
 * "data: [DONE]\n\n"`). The data is `json.dumps(ErrorResponse(error=ErrorInfo(...)).model_dump())`:
 * fields in ErrorInfo's order (message, type, param, code), Python's separators (", ", ": ") and
 * ASCII escapes, `type` "InternalServerError" and `code` 500 (an exception that is not a
 * validation error, in `create_error_response`). A client written against vLLM therefore meets
 * nothing new behind the router: one that reads `choices` from every event fails on this one
 * exactly as it does on vLLM's, and one that checks `error` sees it.
 */
export function vllmStreamFailure(message: string): Uint8Array {
  return encoder.encode(
    `data: {"error": {"message": ${pythonJsonString(message)}, "type": "InternalServerError", "param": null, "code": 500}}\n\ndata: [DONE]\n\n`,
  );
}

/** A string as Python's json.dumps writes it (ensure_ascii): every character outside space..~ escaped. */
export function pythonJsonString(s: string): string {
  return JSON.stringify(s).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** An error response in OpenAI's shape; `code` is OpenAI's string code. */
export function errorResponse(
  status: number,
  code: string,
  message: string,
  param?: string,
): Response {
  return new Response(openAiErrorJson(status, message, { code, param }), {
    status,
    headers: { "content-type": "application/json" },
  });
}
