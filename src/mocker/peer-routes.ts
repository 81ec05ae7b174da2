/**
 * The HTTP side of peer pulls (peer-pull.ts moves the bytes): reading a completion's
 * `kv_transfer_params.remote_kv_source` (llm-d's P2P source fields; bad values are 400s naming
 * the field) and the peer's export route, POST /v1/kv/p2p/export
 * `{kv_request_id, block_hashes: ["<u64 decimal>", ...]}` -> `{segment, blocks}`.
 */
import { RouterError } from "../core/errors.ts";
import type { ImportedKv } from "./engine.ts";
import { AbortedError } from "./fifo.ts";
import { error, json, readJson, type Route } from "./http.ts";
import { peerSegmentName } from "./kv-handoff.ts";
import { MAX_EXPORT_BLOCKS, type PeerKv, type RemoteKvSource } from "./peer-pull.ts";

function bad(message: string): never {
  throw new RouterError("invalid_request", message);
}

/** `kv_transfer_params.remote_kv_source` of a completion body, or null when it names none. */
export function parseRemoteKvSource(body: Record<string, unknown>): RemoteKvSource | null {
  const kvp = body.kv_transfer_params;
  if (kvp === undefined || kvp === null || typeof kvp !== "object" || Array.isArray(kvp))
    return null;
  const src = (kvp as Record<string, unknown>).remote_kv_source;
  if (src === undefined || src === null) return null;
  if (typeof src !== "object" || Array.isArray(src))
    bad("kv_transfer_params.remote_kv_source: must be an object");
  const s = src as Record<string, unknown>;
  const id = s.kv_request_id;
  if (typeof id !== "string" || peerSegmentName(id) === null)
    bad("kv_transfer_params.remote_kv_source.kv_request_id: 1 to 64 letters, digits or '-'");
  const host = s.remote_host;
  if (typeof host !== "string" || host === "" || host.length > 255 || /[/\s@?#]/.test(host))
    bad("kv_transfer_params.remote_kv_source.remote_host: must be a host name or address");
  const port = s.remote_port;
  if (!(typeof port === "number" && Number.isInteger(port) && port > 0 && port < 65536))
    bad("kv_transfer_params.remote_kv_source.remote_port: must be a port number");
  return { kvRequestId: id, host, port };
}

export interface PeerHttp {
  /** The pull a completion body asks for, if any (400 on bad fields). */
  sourceOf(body: Record<string, unknown>): RemoteKvSource | null;
  importerFor(
    src: RemoteKvSource | null,
  ): ((h: BigUint64Array, from: number, to: number) => Promise<ImportedKv>) | undefined;
  readonly routes: readonly Route[];
}

export function peerRoutes(peer: PeerKv): PeerHttp {
  async function exportRoute(req: Request): Promise<Response> {
    const body = await readJson(req);
    const b =
      body !== null && typeof body === "object" && !Array.isArray(body)
        ? (body as Record<string, unknown>)
        : {};
    const id = b.kv_request_id;
    if (typeof id !== "string" || peerSegmentName(id) === null)
      return error(400, "kv_request_id: 1 to 64 letters, digits or '-'", "invalid_request_error");
    const list = b.block_hashes;
    if (!Array.isArray(list) || list.length > MAX_EXPORT_BLOCKS)
      return error(
        400,
        `block_hashes: an array of at most ${MAX_EXPORT_BLOCKS} u64 decimal strings`,
        "invalid_request_error",
      );
    const hashes = new BigUint64Array(list.length);
    for (const [i, h] of list.entries()) {
      if (typeof h !== "string" || !/^\d{1,20}$/.test(h) || BigInt(h) >= 1n << 64n)
        return error(400, `block_hashes[${i}]: not a u64 decimal string`, "invalid_request_error");
      hashes[i] = BigInt(h);
    }
    try {
      const r = await peer.export(id, hashes, req.signal);
      return json(r);
    } catch (e) {
      if (e instanceof AbortedError) return error(499, "the puller left", "aborted");
      return error(
        409,
        `kv export failed: ${e instanceof Error ? e.message : String(e)}`,
        "kv_transfer_error",
      );
    }
  }

  return {
    sourceOf: parseRemoteKvSource,
    importerFor: (src) => (src === null ? undefined : peer.importer(src)),
    routes: [{ method: "POST", path: "/v1/kv/p2p/export", handle: (c) => exportRoute(c.req.raw) }],
  };
}
