/**
 * What a completion request asks of a disaggregated engine, read from its body:
 * - vLLM (tests/v1/kv_connector/nixl_integration/toy_proxy_server.py, vllm-project/vllm
 *   @030ea52e): `kv_transfer_params.do_remote_decode: true` = a prefill request (answer with
 *   the hand-off in `kv_transfer_params`); `do_remote_prefill: true` = a decode request whose
 *   prompt blocks wait on the prefill engine (`switchyard_shm` names our segment; the other
 *   fields are NixlConnector's and pass through unread).
 * - SGLang (python/sglang/srt/disaggregation/mini_lb.py, sgl-project/sglang @001c2ae0):
 *   `bootstrap_host`, `bootstrap_port`, `bootstrap_room` on the same request sent to both.
 * Parses only; bad values are RouterError("invalid_request") (a 400 naming the field).
 */
import { RouterError } from "../core/errors.ts";

export type DisaggDirective =
  | { readonly kind: "none" }
  | { readonly kind: "vllm-prefill" }
  | { readonly kind: "vllm-decode"; readonly segment: string | null }
  | {
      readonly kind: "sglang";
      readonly host: string;
      readonly port: number;
      readonly room: string;
    };

const NONE: DisaggDirective = { kind: "none" };

function bad(message: string): never {
  throw new RouterError("invalid_request", message);
}

export function parseDisaggDirective(body: Record<string, unknown>): DisaggDirective {
  const kvp = body.kv_transfer_params;
  if (kvp !== undefined && kvp !== null) {
    if (typeof kvp !== "object" || Array.isArray(kvp)) bad("kv_transfer_params: must be an object");
    const p = kvp as Record<string, unknown>;
    if (p.do_remote_decode === true && p.do_remote_prefill === true)
      bad("kv_transfer_params: do_remote_decode and do_remote_prefill are both true");
    if (p.do_remote_decode === true) return { kind: "vllm-prefill" };
    if (p.do_remote_prefill === true) {
      const seg = p.switchyard_shm;
      if (seg !== undefined && seg !== null && typeof seg !== "string")
        bad("kv_transfer_params.switchyard_shm: must be a string");
      return { kind: "vllm-decode", segment: typeof seg === "string" ? seg : null };
    }
  }
  const room = body.bootstrap_room;
  if (room === undefined || room === null) return NONE;
  if (
    !(typeof room === "number" && Number.isInteger(room) && room >= 0) &&
    !(typeof room === "string" && /^\d{1,20}$/.test(room))
  ) {
    bad("bootstrap_room: must be a non-negative integer");
  }
  const host = body.bootstrap_host;
  if (typeof host !== "string" || host === "" || host.length > 255 || /[/\s@?#]/.test(host))
    bad("bootstrap_host: must be a host name or address");
  const port = body.bootstrap_port ?? null;
  if (
    port !== null &&
    !(typeof port === "number" && Number.isInteger(port) && port > 0 && port < 65536)
  )
    bad("bootstrap_port: must be a port number");
  // SGLang draws rooms up to 2^63: past 2^53 both engines round the same JSON number alike.
  return {
    kind: "sglang",
    host,
    port: port ?? 8998,
    room: typeof room === "number" ? BigInt(room).toString() : room,
  };
}
