/**
 * vLLM's P/D request shapes, field for field as vLLM's own proxy sends them
 * (tests/v1/kv_connector/nixl_integration/toy_proxy_server.py, vllm-project/vllm @030ea52e,
 * `send_request_to_service` and `_handle_completions`); every KV connector that reads
 * `kv_transfer_params` (NixlConnector, Mooncake, LMCache's) expects this exchange:
 * - to the prefill engine: the client's body with `kv_transfer_params` asking for a remote
 *   decode, `stream: false`, `max_tokens: 1` (and `max_completion_tokens: 1` when present),
 *   without `stream_options`, `min_tokens`, `min_completion_tokens`;
 * - to the decode engine: the client's body unchanged but for the prefill answer's
 *   `kv_transfer_params` (when it has any); its answer, streamed or not, goes to the client.
 * Pure: JSON objects in, JSON objects out.
 */

export function vllmPrefillBody(
  client: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  const body: Record<string, unknown> = { ...client };
  body.kv_transfer_params = {
    do_remote_decode: true,
    do_remote_prefill: false,
    remote_engine_id: null,
    remote_block_ids: null,
    remote_host: null,
    remote_port: null,
  };
  body.stream = false;
  body.max_tokens = 1;
  if ("max_completion_tokens" in body) body.max_completion_tokens = 1;
  delete body.stream_options;
  // "These args are not supported for P" (the proxy's words); the decode request keeps them.
  delete body.min_tokens;
  delete body.min_completion_tokens;
  return body;
}

/** The prefill answer's kv_transfer_params, or undefined when it has none (an empty object counts as none, as in the proxy). */
export function kvTransferParamsOf(prefillAnswer: unknown): Record<string, unknown> | undefined {
  if (prefillAnswer === null || typeof prefillAnswer !== "object") return undefined;
  const p = (prefillAnswer as Record<string, unknown>).kv_transfer_params;
  if (p === null || typeof p !== "object" || Array.isArray(p) || Object.keys(p).length === 0)
    return undefined;
  return p as Record<string, unknown>;
}

export function vllmDecodeBody(
  client: Readonly<Record<string, unknown>>,
  params: Record<string, unknown> | undefined,
): Record<string, unknown> {
  return params === undefined ? { ...client } : { ...client, kv_transfer_params: params };
}
