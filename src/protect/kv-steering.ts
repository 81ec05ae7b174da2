/**
 * The body fields that tell an engine where to get KV from, or which transfer it belongs to. The
 * router sets them itself (a peer pull: edge/proxy/kv-source.ts; the halves of a P/D pair:
 * edge/disagg); from a client they would make an engine open a connection to any host the client
 * names, or join a transfer that is not its own. So a client's body carrying one is refused,
 * 400 naming the field, unless the operator trusts whoever sends to the router
 * (`--trust-kv-transfer-params`, e.g. a P/D proxy of one's own in front of it).
 *
 * The fields, by the engines that read them:
 * - vLLM: `kv_transfer_params` (every KV connector: NixlConnector's `do_remote_prefill`,
 *   `remote_host`, `remote_port`, `remote_block_ids`; llm-d's P2P `remote_kv_source`), and the
 *   same name inside `vllm_xargs` (vLLM merges `vllm_xargs` into the sampling params' extra args,
 *   where its connectors look for `kv_transfer_params`). vLLM itself strips a client's
 *   `remote_host`/`remote_port` at its API since vllm-project/vllm @69204788
 *   (vllm/entrypoints/openai/kv_transfer_params_sanitizer.py: "must only come from a trusted
 *   router/proxy, never from a public API client", CWE-918); older engines do not.
 * - SGLang (python/sglang/srt/managers/io_struct.py @001067ff, GenerateReqInput, "For
 *   disaggregated inference"): `bootstrap_host`, `bootstrap_port`, `bootstrap_room`,
 *   `bootstrap_pair_key`; and `kv_router_hint` (a peer's control endpoint holding a prefix).
 * Only the top level of the body is read (and `vllm_xargs`): that is where both engines read them.
 * PURE: a parsed body in, the field at fault out.
 */
import { RouterError } from "../core/errors.ts";

/** Top-level body fields only the router may set. */
export const KV_STEERING_FIELDS = [
  "kv_transfer_params",
  "bootstrap_host",
  "bootstrap_port",
  "bootstrap_room",
  "bootstrap_pair_key",
  "kv_router_hint",
] as const;

/** The first KV-steering field a client's body carries (`vllm_xargs.kv_transfer_params` by its path), or undefined. */
export function kvSteeringField(body: Readonly<Record<string, unknown>>): string | undefined {
  for (const f of KV_STEERING_FIELDS) if (Object.hasOwn(body, f)) return f;
  const xargs = body.vllm_xargs;
  if (xargs !== null && typeof xargs === "object" && Object.hasOwn(xargs, "kv_transfer_params"))
    return "vllm_xargs.kv_transfer_params";
  return undefined;
}

/**
 * Refuses a client's body that names a KV source or transfer (400 naming the field), unless
 * `trusted` (--trust-kv-transfer-params): then it passes as the client sent it.
 */
export function refuseKvSteering(body: Readonly<Record<string, unknown>>, trusted: boolean): void {
  if (trusted) return;
  const f = kvSteeringField(body);
  if (f === undefined) return;
  throw new RouterError(
    "invalid_request",
    `${f}: set by the router (peer pulls, prefill/decode pairs), not by a client: it would tell an engine which host to fetch KV from. Remove it, or have the operator start the router with --trust-kv-transfer-params behind a trusted proxy`,
    f,
  );
}
