/**
 * vLLM's KV event batch (vllm/distributed/kv_events.py) → RouterEvents for one (worker,
 * block size). Pure.
 *
 * The payload is `msgspec.msgpack` of `KVEventBatch`: an array `[ts, events, dp_rank]`
 * (older: `[ts, events]`; one 2026 version: a map). Each event is a tagged struct, either
 * positional (`["BlockStored", block_hashes, parent, token_ids, …]`, vLLM ≈0.9–0.10,
 * `array_like=True`) or a map with the tag under "type" (newer vLLM). Both are read; the
 * field readers do not depend on the form, so map keys may come in any order.
 *
 * Mapping (Dynamo's `convert_event` in lib/kv-router/src/zmq_wire.rs):
 * - BlockStored → Stored. Block hashes and the parent pass through as u64 (`bytes` hashes are
 *   read like vLLM's own int mode, `int.from_bytes(h, "big") & (2^64−1)`, so both modes give the
 *   same ids; negative ints are reinterpreted). tokens_hash is recomputed from token_ids with the
 *   router's block hash (core/block-hash.ts): the worker's block size, the event's lora_name, MM
 *   hashes from extra_keys. Blocks stop where token_ids run out; an event whose block_size is not
 *   the worker's, or that repeats a hash (parent included), is dropped (Dynamo turns it into a
 *   no-op).
 * - BlockRemoved → Removed. AllBlocksCleared → Cleared of every medium (vLLM's block pool sends it
 *   on a prefix-cache reset; it names no medium).
 * - The medium is the holder's third part (core/events.ts KvMedium), mapped as Dynamo maps a
 *   medium to its StorageTier (shared/spec/router.md §1.1): nil/"GPU"/"DEVICE" → GPU (the event
 *   carries no medium, exactly as before tiers); "CPU"/"CPU_PINNED"/"CPU_TIER1" → CPU;
 *   "CPU_TIER2"/"DISK"/"NVME"/"STORAGE"/"FS" → disk. Other media (external, network, shared) and
 *   `locality` "REMOTE" tiers are not one engine's memory: counted and skipped.
 * - vLLM's OffloadingConnector (distributed/kv_transfer/kv_connector/v1/offloading/events.py,
 *   commit 030ea52e; base.py Medium/Locality/OffloadingEvent, commit 0105e232) publishes a CPU or
 *   STORAGE tier two ways. Self-describing (kv_connector_extra_config "self_describing_kv_events"):
 *   one BlockStored per offloaded chunk with the chunk's GPU-block hashes, its tokens, the GPU
 *   block size and the parent, so a 48-token CPU chunk over 16-token GPU blocks is three blocks
 *   here; a hash shared by two chunks is announced (and later removed) once per chunk, which the
 *   index reference-counts. Placeholder (the default, and every version before it): one hash per
 *   chunk, no token ids, no parent. The hash is the engine's hash of the chunk's last GPU block
 *   (the 0.11+ connector's `_get_block_hashes`: every block_size_factor-th request block hash).
 *   Where block_size is the CPU block size, a multiple of the GPU's (0.11 until self-describing
 *   events; tests/v1/kv_connector/unit/test_offloading_connector.py, commit 0274e03c), the event
 *   becomes StoredData.chunks: the index places each chunk through the GPU blocks the same engine
 *   reported. The newest placeholders say block_size 0 (a chunk of unknown length): counted as
 *   `placeholder` and skipped, as vLLM's comment says consumers may.
 * - Only KV group 0 (or a full / MLA / sink-full attention spec kind). Unknown tags are counted
 *   and skipped.
 *
 * Event ids: the events this batch yields get `firstEventId, firstEventId+1, …` (dense);
 * the caller owns the counter (see subscriber.ts for why ids are not the ZMQ seq itself).
 *
 * Throws VllmDecodeError only when the batch itself cannot be read (truncated msgpack, not
 * an array/map); one bad event is counted as malformed and skipped.
 */
import {
  computeBlockHashesWith,
  hashMmIdentifier,
  portableBatchHasher,
  type BatchBlockHasher,
  type BlockExtraInfo,
} from "../../../core/block-hash.ts";
import type {
  KvCacheEvent,
  KvCacheEventData,
  KvMedium,
  RouterEvent,
  StoredBlock,
} from "../../../core/events.ts";
import type { DpRank, EventId, WorkerId } from "../../../core/ids.ts";
import { MsgpackError, MsgpackReader, type MsgpackValue } from "./msgpack.ts";

export class VllmDecodeError extends Error {
  override readonly name = "VllmDecodeError";
}

export interface VllmDecodeOptions {
  readonly workerId: WorkerId;
  /** The worker's KV block size (tokens per block). */
  readonly blockSize: number;
  /** Rank used when the batch carries none (default 0). */
  readonly dpRank?: DpRank;
  /** Id of the first event produced from this batch. */
  readonly firstEventId: EventId;
  /** Block hasher for tokens_hash (default: the portable one). */
  readonly hasher?: BatchBlockHasher;
}

export interface VllmDecodedBatch {
  /** The batch's `ts` (seconds since the epoch, engine clock). */
  readonly ts: number;
  /** `data_parallel_rank` of the batch, else the configured rank. */
  readonly dpRank: DpRank;
  readonly events: RouterEvent[];
}

/** Monotonic counters; one object may be shared by many calls. */
export interface VllmDecodeCounters {
  batches: number;
  /** Events found in batches (every tag). */
  seen: number;
  stored: number;
  removed: number;
  cleared: number;
  unknownTag: number;
  /** Names of unknown tags seen (the first 16 distinct). */
  unknownTags: string[];
  /** Skipped: a medium that is not this engine's GPU, CPU or disk, or a REMOTE-locality tier. */
  otherMedium: number;
  /** Events kept for a CPU or disk tier (counted in stored / removed too). */
  tier: number;
  /** Skipped: a tier's BlockStored without token ids nor a usable block size (vLLM's newest placeholder). */
  placeholder: number;
  /** Kept: a tier's BlockStored naming chunks by their last block's hash (StoredData.chunks). */
  chunkRefs: number;
  /** Skipped: KV cache group other than 0, or an attention kind the router does not index. */
  otherGroup: number;
  /** Skipped: the event's block_size is not the worker's. */
  blockSizeMismatch: number;
  /** Skipped: a block hash repeated inside the event (parent included). */
  duplicateHash: number;
  /** Skipped: no complete block (or an empty Removed). */
  empty: number;
  /** Stored events cut short because token_ids ran out. */
  truncated: number;
  /** Skipped: a field of the wrong type. */
  malformed: number;
}

export function newVllmDecodeCounters(): VllmDecodeCounters {
  return {
    batches: 0,
    seen: 0,
    stored: 0,
    removed: 0,
    cleared: 0,
    unknownTag: 0,
    unknownTags: [],
    otherMedium: 0,
    tier: 0,
    placeholder: 0,
    chunkRefs: 0,
    otherGroup: 0,
    blockSizeMismatch: 0,
    duplicateHash: 0,
    empty: 0,
    truncated: 0,
    malformed: 0,
  };
}

/** Attention kinds whose blocks the router indexes (Dynamo keeps only these). */
const INDEXED_SPEC_KINDS = new Set(["full_attention", "mla_attention", "sink_full_attention"]);
/** Medium strings (upper-cased) → the holder's medium; Dynamo's StorageTier mapping plus vLLM's "FS". */
const MEDIA = new Map<string, KvMedium>([
  ["GPU", "gpu"],
  ["DEVICE", "gpu"],
  ["CPU", "cpu"],
  ["CPU_PINNED", "cpu"],
  ["CPU_TIER1", "cpu"],
  ["CPU_TIER2", "disk"],
  ["DISK", "disk"],
  ["NVME", "disk"],
  ["STORAGE", "disk"],
  ["FS", "disk"],
]);

/**
 * Positional field order after the tag: BlockStored's fields as declared by the vLLM versions
 * that send arrays (older ones stop early and trailing defaults are omitted, so a short array
 * is fine; later versions send maps, read by key).
 */
const STORED_FIELDS = [
  "block_hashes",
  "parent_block_hash",
  "token_ids",
  "block_size",
  "lora_id",
  "medium",
  "lora_name",
  "extra_keys",
  "group_idx",
  "kv_cache_spec_kind",
  "kv_cache_spec_sliding_window",
  "locality",
  "ownership",
] as const;
/** The newest vLLM declares event_version between lora_name and extra_keys. */
const STORED_FIELDS_VERSIONED = [
  "block_hashes",
  "parent_block_hash",
  "token_ids",
  "block_size",
  "lora_id",
  "medium",
  "lora_name",
  "event_version",
  "extra_keys",
  "group_idx",
  "kv_cache_spec_kind",
  "kv_cache_spec_sliding_window",
  "locality",
  "ownership",
] as const;
const REMOVED_FIELDS = ["block_hashes", "medium", "group_idx", "locality", "ownership"] as const;
const NO_FIELDS: readonly string[] = [];
const EVENT_VERSION_POSITION = 7;

/** One event's fields as read, before it is checked and converted. */
interface RawEvent {
  tag: string | undefined;
  blockHashes: bigint[] | undefined;
  parent: bigint | null;
  tokens: Uint32Array | undefined;
  blockSize: number | undefined;
  medium: string | null;
  locality: string | null;
  loraName: string | null;
  extraKeys: MsgpackValue;
  groupIdx: number | null;
  specKind: string | null;
  bad: boolean;
}

function rawEvent(): RawEvent {
  return {
    tag: undefined,
    blockHashes: undefined,
    parent: null,
    tokens: undefined,
    blockSize: undefined,
    medium: null,
    locality: null,
    loraName: null,
    extraKeys: null,
    groupIdx: null,
    specKind: null,
    bad: false,
  };
}

export function decodeVllmBatch(
  payload: Uint8Array,
  opts: VllmDecodeOptions,
  counters: VllmDecodeCounters = newVllmDecodeCounters(),
): VllmDecodedBatch {
  const r = new MsgpackReader(payload);
  let ts = 0;
  let dpRank: DpRank | undefined;
  let raws: RawEvent[] = [];
  try {
    const kind = r.peekKind();
    if (kind === "array") {
      const n = r.readArrayHeader();
      if (n < 2)
        throw new VllmDecodeError(
          `event batch array has ${n} element(s), expected [ts, events, dp_rank?]`,
        );
      ts = readNumberOr(r, 0);
      raws = readEvents(r);
      if (n >= 3) dpRank = readRank(r);
      for (let i = 3; i < n; i++) r.skip();
    } else if (kind === "map") {
      const n = r.readMapHeader();
      let sawEvents = false;
      for (let i = 0; i < n; i++) {
        const key = r.peekKind() === "str" ? r.readStr() : (r.skip(), "");
        if (key === "ts") ts = readNumberOr(r, 0);
        else if (key === "events") {
          raws = readEvents(r);
          sawEvents = true;
        } else if (key === "data_parallel_rank" || key === "dp_rank") dpRank = readRank(r);
        else r.skip();
      }
      if (!sawEvents) throw new VllmDecodeError('event batch map has no "events"');
    } else {
      throw new VllmDecodeError(`event batch is a msgpack ${kind}, expected an array or a map`);
    }
    if (!r.done)
      throw new VllmDecodeError(`${payload.length - r.pos} trailing byte(s) after the event batch`);
  } catch (e) {
    if (e instanceof MsgpackError) throw new VllmDecodeError(`malformed event batch: ${e.message}`);
    throw e;
  }

  counters.batches++;
  counters.seen += raws.length;
  const rank = dpRank ?? opts.dpRank ?? 0;
  const events: RouterEvent[] = [];
  let id = opts.firstEventId;
  for (const raw of raws) {
    const data = toEventData(raw, opts, counters);
    if (data === undefined) continue;
    // GPU events carry no medium: an engine without tiers yields exactly what it always did.
    const medium = data.type === "cleared" ? "gpu" : mediumOf(raw);
    const event: KvCacheEvent =
      medium === "gpu"
        ? { eventId: id, dpRank: rank, data }
        : { eventId: id, dpRank: rank, data, medium: medium! };
    events.push({ workerId: opts.workerId, event });
    id++;
  }
  return { ts, dpRank: rank, events };
}

// ---------------------------------------------------------------- reading

function readEvents(r: MsgpackReader): RawEvent[] {
  const n = r.readArrayHeader();
  const out: RawEvent[] = [];
  for (let i = 0; i < n; i++) out.push(readEvent(r));
  return out;
}

function readEvent(r: MsgpackReader): RawEvent {
  const ev = rawEvent();
  const kind = r.peekKind();
  if (kind === "array") {
    const n = r.readArrayHeader();
    if (n === 0) {
      ev.bad = true;
      return ev;
    }
    if (r.peekKind() !== "str") {
      ev.bad = true;
      for (let i = 0; i < n; i++) r.skip();
      return ev;
    }
    ev.tag = r.readStr();
    let names: readonly string[] = fieldsOf(ev.tag);
    for (let i = 1; i < n; i++) {
      const pos = i - 1;
      if (names === STORED_FIELDS && pos === EVENT_VERSION_POSITION && r.peekKind() === "int")
        names = STORED_FIELDS_VERSIONED;
      const name = names[pos];
      if (name === undefined) r.skip();
      else readField(r, name, ev);
    }
  } else if (kind === "map") {
    const n = r.readMapHeader();
    for (let i = 0; i < n; i++) {
      if (r.peekKind() !== "str") {
        r.skip();
        r.skip();
        continue;
      }
      const key = r.readStr();
      if (key === "type") {
        if (r.peekKind() === "str") ev.tag = r.readStr();
        else {
          r.skip();
          ev.bad = true;
        }
      } else readField(r, key, ev);
    }
  } else {
    r.skip();
    ev.bad = true;
  }
  return ev;
}

function fieldsOf(tag: string): readonly string[] {
  if (tag === "BlockStored") return STORED_FIELDS;
  if (tag === "BlockRemoved") return REMOVED_FIELDS;
  return NO_FIELDS;
}

/** Read one named field into `ev`; a value of the wrong type is skipped and marks it bad. */
function readField(r: MsgpackReader, name: string, ev: RawEvent): void {
  const kind = r.peekKind();
  switch (name) {
    case "block_hashes":
      if (kind !== "array") break;
      ev.blockHashes = readHashList(r, ev);
      return;
    case "parent_block_hash":
      if (kind === "nil") {
        r.skip();
        ev.parent = null;
        return;
      }
      {
        const h = readHash(r);
        if (h === undefined) ev.bad = true;
        else ev.parent = h;
      }
      return;
    case "token_ids":
      if (kind !== "array") break;
      ev.tokens = readTokens(r, ev);
      return;
    case "block_size":
      if (kind !== "int") break;
      ev.blockSize = Number(r.readInt());
      return;
    case "medium":
      if (kind !== "nil" && kind !== "str") break;
      ev.medium = r.tryNil() ? null : r.readStr();
      return;
    case "lora_name":
      if (kind !== "nil" && kind !== "str") break;
      ev.loraName = r.tryNil() ? null : r.readStr();
      return;
    case "locality":
      if (kind !== "nil" && kind !== "str") break;
      ev.locality = r.tryNil() ? null : r.readStr();
      return;
    case "extra_keys":
      ev.extraKeys = r.readValue();
      return;
    case "group_idx":
      if (kind !== "nil" && kind !== "int") break;
      ev.groupIdx = r.tryNil() ? null : Number(r.readInt());
      return;
    case "kv_cache_spec_kind":
      if (kind !== "nil" && kind !== "str") break;
      ev.specKind = r.tryNil() ? null : r.readStr();
      return;
    default:
      // lora_id (deprecated), sliding window, event_version, ownership, future fields.
      r.skip();
      return;
  }
  r.skip();
  ev.bad = true;
}

/** An ExternalBlockHash: an int (any width or sign) or bytes (vLLM's int mode applied). */
function readHash(r: MsgpackReader): bigint | undefined {
  const kind = r.peekKind();
  if (kind === "int") return r.readU64();
  if (kind === "bin") return bytesToU64(r.readBin());
  r.skip();
  return undefined;
}

/** `int.from_bytes(b, "big") & (2^64 − 1)`: the last 8 bytes, big-endian. */
export function bytesToU64(b: Uint8Array): bigint {
  let hi = 0,
    lo = 0;
  const start = Math.max(0, b.length - 8);
  for (let i = start; i < b.length; i++) {
    hi = ((hi << 8) | (lo >>> 24)) >>> 0;
    lo = ((lo << 8) | b[i]!) >>> 0;
  }
  return (BigInt(hi) << 32n) | BigInt(lo);
}

function readHashList(r: MsgpackReader, ev: RawEvent): bigint[] {
  const n = r.readArrayHeader();
  const out = new Array<bigint>(n);
  for (let i = 0; i < n; i++) {
    const h = readHash(r);
    if (h === undefined) ev.bad = true;
    out[i] = h ?? 0n;
  }
  return out;
}

/**
 * token_ids straight into a Uint32Array. The eagle/bigram form `[[a, b], …]` is flattened
 * as Dynamo does: every first element, then the last pair's second.
 */
function readTokens(r: MsgpackReader, ev: RawEvent): Uint32Array {
  const n = r.readArrayHeader();
  if (n > 0 && r.peekKind() === "array") return readTokenPairs(r, n, ev);
  // An explicit ArrayBuffer: the hasher views tokens.buffer, and materializing the buffer
  // of a small engine-allocated typed array later costs more than the whole copy.
  const out = new Uint32Array(new ArrayBuffer(4 * n));
  if (!r.readU32Array(out, n)) ev.bad = true;
  return out;
}

function readTokenPairs(r: MsgpackReader, n: number, ev: RawEvent): Uint32Array {
  const out = new Uint32Array(n + 1);
  const pair = new Uint32Array(2);
  for (let i = 0; i < n; i++) {
    if (r.peekKind() !== "array" || r.readArrayHeader() !== 2) {
      ev.bad = true;
      return out;
    }
    if (!r.readU32Array(pair, 2)) ev.bad = true;
    out[i] = pair[0]!;
    out[n] = pair[1]!;
  }
  return out;
}

function readNumberOr(r: MsgpackReader, fallback: number): number {
  const k = r.peekKind();
  if (k === "float" || k === "int") return r.readFloat();
  r.skip();
  return fallback;
}

function readRank(r: MsgpackReader): DpRank | undefined {
  if (r.peekKind() !== "int") {
    r.skip();
    return undefined;
  }
  const v = r.readInt();
  return typeof v === "number" && v >= 0 && v <= 0xffffffff ? v : undefined;
}

// ---------------------------------------------------------------- converting

function toEventData(
  raw: RawEvent,
  opts: VllmDecodeOptions,
  c: VllmDecodeCounters,
): KvCacheEventData | undefined {
  if (raw.bad || raw.tag === undefined) {
    c.malformed++;
    return undefined;
  }
  switch (raw.tag) {
    case "BlockStored":
      return toStored(raw, opts, c);
    case "BlockRemoved": {
      if (raw.blockHashes === undefined) {
        c.malformed++;
        return undefined;
      }
      if (!onIndexedMedium(raw, c)) return undefined;
      if (raw.blockHashes.length === 0) {
        c.empty++;
        return undefined;
      }
      c.removed++;
      if (mediumOf(raw) !== "gpu") c.tier++;
      return { type: "removed", blockHashes: raw.blockHashes };
    }
    case "AllBlocksCleared":
      c.cleared++;
      return { type: "cleared" };
    default:
      c.unknownTag++;
      if (c.unknownTags.length < 16 && !c.unknownTags.includes(raw.tag))
        c.unknownTags.push(raw.tag);
      return undefined;
  }
}

/** The event's medium: GPU when none is named; undefined for a medium the index does not hold. */
function mediumOf(raw: RawEvent): KvMedium | undefined {
  if (raw.medium === null || raw.medium === "GPU") return "gpu";
  return MEDIA.get(raw.medium.toUpperCase());
}

/** This engine's GPU, CPU or disk, KV group 0 / an indexed attention kind; counts what it rejects. */
function onIndexedMedium(raw: RawEvent, c: VllmDecodeCounters): boolean {
  const medium = mediumOf(raw);
  if (
    medium === undefined ||
    (medium !== "gpu" && raw.locality !== null && raw.locality.toUpperCase() === "REMOTE")
  ) {
    c.otherMedium++;
    return false;
  }
  const groupOk =
    raw.specKind !== null
      ? INDEXED_SPEC_KINDS.has(raw.specKind)
      : raw.groupIdx === null || raw.groupIdx === 0;
  if (!groupOk) {
    c.otherGroup++;
    return false;
  }
  return true;
}

function toStored(
  raw: RawEvent,
  opts: VllmDecodeOptions,
  c: VllmDecodeCounters,
): KvCacheEventData | undefined {
  const hashes = raw.blockHashes;
  const tokens = raw.tokens;
  if (hashes === undefined || tokens === undefined || raw.blockSize === undefined) {
    c.malformed++;
    return undefined;
  }
  if (!onIndexedMedium(raw, c)) return undefined;
  const tier = mediumOf(raw) !== "gpu";
  const bs = opts.blockSize;
  if (tier && tokens.length === 0) {
    if (raw.blockSize > 0 && raw.blockSize % bs === 0 && hashes.length > 0) {
      c.chunkRefs++;
      c.stored++;
      c.tier++;
      return {
        type: "stored",
        parentHash: null,
        blocks: [],
        chunks: { tailHashes: hashes, span: raw.blockSize / bs },
      };
    }
    c.placeholder++;
    return undefined;
  }
  if (raw.blockSize !== bs) {
    c.blockSizeMismatch++;
    return undefined;
  }
  const n = Math.min(hashes.length, Math.floor(tokens.length / bs));
  if (n < hashes.length) c.truncated++;
  if (n === 0) {
    c.empty++;
    return undefined;
  }
  if (hasDuplicate(hashes, n, raw.parent)) {
    c.duplicateHash++;
    return undefined;
  }
  const local = computeBlockHashesWith(
    opts.hasher ?? portableBatchHasher,
    tokens.length === n * bs ? tokens : tokens.subarray(0, n * bs),
    bs,
    {
      loraName: raw.loraName ?? undefined,
      mmInfos: mmInfosOf(raw.extraKeys, n),
    },
  );
  const blocks = new Array<StoredBlock>(n);
  for (let i = 0; i < n; i++) blocks[i] = { blockHash: hashes[i]!, tokensHash: local[i]! };
  c.stored++;
  if (tier) c.tier++;
  return { type: "stored", parentHash: raw.parent, blocks };
}

function hasDuplicate(hashes: readonly bigint[], n: number, parent: bigint | null): boolean {
  // Events are small (a few to a few dozen blocks): compare pairwise below 32, hash above.
  if (n < 32) {
    for (let i = 0; i < n; i++) {
      const h = hashes[i]!;
      if (h === parent) return true;
      for (let j = 0; j < i; j++) if (hashes[j] === h) return true;
    }
    return false;
  }
  const seen = new Set<bigint>();
  if (parent !== null) seen.add(parent);
  for (let i = 0; i < n; i++) {
    const h = hashes[i]!;
    if (seen.has(h)) return true;
    seen.add(h);
  }
  return false;
}

const HEX64 = /^[0-9a-fA-F]{64}$/;

/**
 * Per-block MM hashes from vLLM's extra_keys (one tuple or nil per block). An item counts
 * when it is a 64-hex MM identifier, a `(identifier, offset)` pair, or a map with such a
 * "hash" (newest typed keys); LoRA names, cache salts and embeddings are ignored (the LoRA
 * name reaches the hash through lora_name). Undefined when no block has one.
 */
function mmInfosOf(extraKeys: MsgpackValue, n: number): (BlockExtraInfo | null)[] | undefined {
  if (!Array.isArray(extraKeys)) return undefined;
  let out: (BlockExtraInfo | null)[] | undefined;
  const end = Math.min(n, extraKeys.length);
  for (let b = 0; b < end; b++) {
    const keys = extraKeys[b];
    if (!Array.isArray(keys)) continue;
    const objs: { mmHash: bigint; offsets: [] }[] = [];
    for (const k of keys) {
      const id = mmIdentifier(k);
      const h = id === undefined ? undefined : hashMmIdentifier(id);
      if (h !== undefined) objs.push({ mmHash: h, offsets: [] });
    }
    if (objs.length === 0) continue;
    out ??= new Array<BlockExtraInfo | null>(n).fill(null);
    out[b] = { mmObjects: objs };
  }
  return out;
}

function mmIdentifier(k: MsgpackValue): string | undefined {
  if (typeof k === "string") return HEX64.test(k) ? k : undefined;
  if (Array.isArray(k)) return typeof k[0] === "string" && HEX64.test(k[0]) ? k[0] : undefined;
  if (k instanceof Map) {
    const h = k.get("hash");
    return typeof h === "string" && HEX64.test(h) ? h : undefined;
  }
  return undefined;
}
