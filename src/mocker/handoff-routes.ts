/**
 * The HTTP side of disaggregated prefill/decode (kv-handoff.ts moves the bytes): reading a
 * completion's P/D fields, answering the prefill half with the hand-off, giving the decode half
 * the way to pull its blocks (straight from the named segment for vLLM, after asking the prefill
 * engine's bootstrap route for SGLang), and that bootstrap route itself. An ordinary engine
 * (role both, no hand-off) reads no P/D field and its bootstrap route is a 404.
 */
import type { WorkerId } from "../core/ids.ts";
import { computeBlockHashes } from "../core/block-hash.ts";
import { parseDisaggDirective, type DisaggDirective } from "./disagg-request.ts";
import type { GenerateRequest, ImportedKv, MockEngine } from "./engine.ts";
import { engineBlockHashes } from "./engine-hash.ts";
import { AbortedError } from "./fifo.ts";
import { answerHeaders, CACHED_TOKENS_HEADER } from "./headers.ts";
import { error, json, type Route } from "./http.ts";
import type { ExportedKv, KvHandoff } from "./kv-handoff.ts";
import type { MockerConfig } from "./options.ts";
import { completionResponse, type ApiKind, type ResponseMeta } from "./openai.ts";

export type GenerateRequestOf = GenerateRequest & {
  readonly tokens: Uint32Array;
  readonly loraName?: string;
};

export interface HandoffRouteDeps {
  /** Null on an ordinary engine (role both): it never loads the native library. */
  readonly handoff: KvHandoff | null;
  readonly engine: MockEngine;
  readonly config: Pick<MockerConfig, "role" | "blockSize" | "host" | "kvLeaseMs">;
  /** This engine's own HTTP port: vLLM's `remote_port`, SGLang's bootstrap port. */
  readonly port: number;
  readonly workerId: WorkerId;
  readonly fetch: typeof fetch;
  readonly log: (line: string) => void;
}

export interface HandoffHttp {
  /** The P/D fields of a completion body (none on an ordinary engine); bad values throw a 400. */
  directive(body: Record<string, unknown>): DisaggDirective;
  /** Whether this request is the prefill half of a hand-off (this engine must write its blocks). */
  exportsKv(d: DisaggDirective): boolean;
  prefillAndExport(
    kind: ApiKind,
    m: ResponseMeta,
    genReq: GenerateRequestOf,
    d: DisaggDirective,
  ): Promise<Response>;
  /** The decode half: where this request's prompt blocks come from, if anywhere. */
  importerFor(
    d: DisaggDirective,
  ): ((h: BigUint64Array, from: number, to: number) => Promise<ImportedKv>) | undefined;
  /** GET /v1/kv/bootstrap/:room?wait_ms=N */
  readonly routes: readonly Route[];
}

export function handoffRoutes(deps: HandoffRouteDeps): HandoffHttp {
  const { handoff, engine: eng, config, port, workerId, log } = deps;
  const fetchFn = deps.fetch;

  function exportsKv(d: DisaggDirective): boolean {
    return d.kind === "vllm-prefill" || (d.kind === "sglang" && config.role === "prefill");
  }

  /**
   * The prefill half: the prompt is prefilled (one output token, as vLLM's proxy asks), its
   * full blocks are written into a shared-memory segment, and the answer names it: vLLM in
   * `kv_transfer_params` (NixlConnector's fields, block ids = segment slots), SGLang under the
   * bootstrap room, which the decode engine asks for. Always a JSON answer, never a stream.
   */
  async function prefillAndExport(
    kind: ApiKind,
    m: ResponseMeta,
    genReq: GenerateRequestOf,
    d: DisaggDirective,
  ): Promise<Response> {
    let r;
    try {
      r = await eng.generate(
        { ...genReq, maxTokens: 1, importKv: undefined },
        { start: () => {}, token: () => {} },
      );
    } catch (e) {
      if (e instanceof AbortedError)
        return error(499, "client closed the request", "aborted", { [CACHED_TOKENS_HEADER]: "0" });
      throw e;
    }
    const hashes = engineBlockHashes(
      computeBlockHashes(genReq.tokens, config.blockSize, { loraName: genReq.loraName }),
    );
    let exported: ExportedKv;
    try {
      exported = handoff!.exportBlocks(hashes);
    } catch (e) {
      return error(
        500,
        `kv export failed: ${e instanceof Error ? e.message : String(e)}`,
        "kv_transfer_error",
      );
    }
    const body = JSON.parse(completionResponse(kind, m, r.text, r)) as Record<string, unknown>;
    if (d.kind === "sglang") {
      handoff!.publishRoom(d.room, exported);
    } else {
      body.kv_transfer_params = {
        do_remote_prefill: true,
        do_remote_decode: false,
        remote_block_ids: Array.from({ length: exported.blocks }, (_, i) => i),
        remote_engine_id: workerId.toString(),
        remote_request_id: m.id,
        remote_host: config.host,
        remote_port: port,
        remote_block_size: config.blockSize,
        num_prompt_blocks: Math.ceil(genReq.tokens.length / config.blockSize),
        tp_size: 1,
        switchyard_shm: exported.segment,
      };
    }
    return json(body, 200, {
      ...answerHeaders(r, false, workerId),
      "x-mocker-kv-exported-blocks": String(exported.blocks),
    });
  }

  function importerFor(
    d: DisaggDirective,
  ): ((h: BigUint64Array, from: number, to: number) => Promise<ImportedKv>) | undefined {
    if (handoff === null) return undefined;
    if (d.kind === "vllm-decode") {
      const segment = d.segment;
      if (segment === null) return undefined; // nothing was exported (a prompt under one block)
      return (h, from, to) => handoff.importBlocks(segment, h, from, to);
    }
    if (d.kind === "sglang" && config.role === "decode") {
      return async (h, from, to) => {
        const room = await askBootstrap(d);
        if (room === null || room.segment === null) return { blocks: 0, bytes: 0 };
        return handoff.importBlocks(room.segment, h, from, to);
      };
    }
    return undefined;
  }

  /** SGLang: the prefill engine's hand-off for the room, once its prefill is done; null if it never comes. */
  async function askBootstrap(
    d: Extract<DisaggDirective, { kind: "sglang" }>,
  ): Promise<ExportedKv | null> {
    const host = d.host.includes(":") && !d.host.startsWith("[") ? `[${d.host}]` : d.host;
    const waitMs = Math.min(config.kvLeaseMs, 30_000);
    try {
      const res = await fetchFn(
        `http://${host}:${d.port}/v1/kv/bootstrap/${d.room}?wait_ms=${waitMs}`,
        {
          signal: AbortSignal.timeout(waitMs + 2_000),
        },
      );
      if (!res.ok) {
        log(
          `kv bootstrap: room ${d.room} at ${host}:${d.port} answered ${res.status}; prefilling here`,
        );
        return null;
      }
      return (await res.json()) as ExportedKv;
    } catch (e) {
      log(
        `kv bootstrap: room ${d.room} at ${host}:${d.port} failed (${e instanceof Error ? e.message : String(e)}); prefilling here`,
      );
      return null;
    }
  }

  /** GET /v1/kv/bootstrap/:room?wait_ms=N — the prefill engine's hand-off for one room (long-poll). */
  async function bootstrapRoom(req: Request, room: string): Promise<Response> {
    if (handoff === null || config.role !== "prefill")
      return error(404, "this engine is not a prefill engine", "not_found");
    const wait = Number(new URL(req.url).searchParams.get("wait_ms") ?? "0");
    if (!Number.isFinite(wait) || wait < 0)
      return error(400, "wait_ms: must be a non-negative number", "invalid_request_error");
    const r = await handoff.waitRoom(room, wait);
    return r === null ? json({ status: "pending", room }, 404) : json(r);
  }

  return {
    directive: (body) => (handoff === null ? { kind: "none" } : parseDisaggDirective(body)),
    exportsKv,
    prefillAndExport,
    importerFor,
    routes: [
      {
        method: "GET",
        // The room is the rest of the path: anything but a decimal room id is a 400, not a 404.
        path: "/v1/kv/bootstrap/*",
        handle: (c) => {
          const room = c.req.path.slice("/v1/kv/bootstrap/".length);
          if (!/^\d{1,20}$/.test(room))
            return error(
              400,
              "bootstrap room: must be a non-negative integer",
              "invalid_request_error",
            );
          return bootstrapRoom(c.req.raw, room);
        },
      },
    ],
  };
}
