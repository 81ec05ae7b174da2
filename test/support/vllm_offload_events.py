"""KV events of a vLLM engine with the OffloadingConnector (a CPU or STORAGE tier), built the way
vLLM builds them, for the router's tier contract test (test/integration/zmq-tiers.test.ts).

Written from vLLM's source (github.com/vllm-project/vllm):
- vllm/distributed/kv_transfer/kv_connector/v1/offloading/events.py, commit 030ea52e
  (OffloadingEventsTracker: record_store, take_events, _build_event_metadata,
  _placeholder_stored, _take_stored_event, _take_removed_event);
- vllm/v1/kv_offload/base.py, commit 0105e232 (OffloadKey = block hash + 4-byte big-endian
  group index; Medium CPU / STORAGE; Locality; OffloadingEvent with removal_expected);
- tests/v1/kv_connector/unit/offloading_connector/test_events.py, commit 0c135e43 (the chunk
  key is the chunk's last block hash; chunk events carry the per-block hashes);
- vllm/distributed/kv_events.py (BlockStored / BlockRemoved / AllBlocksCleared; the newest
  declaration order ends "... lora_name, event_version, extra_keys, group_idx,
  kv_cache_spec_kind, kv_cache_spec_sliding_window, locality, ownership"; tag=True, omit_defaults).

What it models, and what it leaves out:
- GPU: the block pool's BlockStored for each request's newly cached full blocks (medium "GPU",
  parent = the previous block's hash, token_ids of those blocks) and BlockRemoved on eviction.
- Offloading: a request's blocks are offloaded in chunks of `blocks_per_chunk` GPU blocks (CPU
  block size = GPU block size x blocks_per_chunk, e.g. 16 and 48). Each chunk is named by the
  OffloadKey of its last block. Self-describing mode snapshots the chunk's payload at store time
  (record_store) and emits it; placeholder mode emits the key's hash with no tokens,
  block_size 0 and no parent. Removal fans out to the same hashes; a chunk's metadata is kept
  while any (medium, ownership) residency that expects a removal is left.
- `legacy`: the connector as in vLLM 0.11 until self-describing events (its take_events as
  tests/v1/kv_connector/unit/test_offloading_connector.py, commit 0274e03c, checks it): one
  BlockStored per manager event with every stored chunk's hash (the chunk's last block hash,
  `_get_block_hashes`), token_ids [], parent None and block_size = the offloaded block size;
  BlockRemoved with the same hashes; no group_idx.
- Block hashes are 32-byte digests chained over (parent, tokens), sent as bytes as vLLM does
  unless VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES is set. The digest input is not vLLM's pickle/cbor
  of the tuple: the router never recomputes an engine's hash, only relays it.
"""

import hashlib

MEDIUM_GPU = "GPU"
MEDIUM_CPU = "CPU"
MEDIUM_STORAGE = "STORAGE"
FULL_ATTENTION = "full_attention"
NONE_HASH = hashlib.sha256(b"vllm-none-hash").digest()


def make_offload_key(block_hash, group_idx):
    return block_hash + group_idx.to_bytes(4, "big", signed=False)


def get_offload_block_hash(key):
    return key[:-4]


def get_offload_group_idx(key):
    return int.from_bytes(key[-4:], "big", signed=False)


def u64_of(block_hash):
    """What the router makes of a bytes hash (int mode: the last 8 bytes, big-endian)."""
    return int.from_bytes(block_hash, "big") & ((1 << 64) - 1)


def stored(block_hashes, parent, token_ids, block_size, medium, group_idx, spec_kind, locality=None, ownership=None):
    """A BlockStored in map form with omit_defaults: fields equal to their default left out."""
    ev = {
        "type": "BlockStored",
        "block_hashes": list(block_hashes),
        "parent_block_hash": parent,
        "token_ids": list(token_ids),
        "block_size": block_size,
        "lora_id": None,
        "medium": medium,
        "lora_name": None,
    }
    if group_idx is not None:
        ev["group_idx"] = group_idx
    if spec_kind is not None:
        ev["kv_cache_spec_kind"] = spec_kind
    if locality is not None:
        ev["locality"] = locality
    if ownership is not None:
        ev["ownership"] = ownership
    return ev


def removed(block_hashes, medium, group_idx, locality=None, ownership=None):
    ev = {"type": "BlockRemoved", "block_hashes": list(block_hashes), "medium": medium}
    if group_idx is not None:
        ev["group_idx"] = group_idx
    if locality is not None:
        ev["locality"] = locality
    if ownership is not None:
        ev["ownership"] = ownership
    return ev


class Request:
    def __init__(self, token_ids, block_size):
        self.all_token_ids = list(token_ids)
        self.block_hashes = []
        parent = NONE_HASH
        for i in range(len(token_ids) // block_size):
            tokens = token_ids[i * block_size:(i + 1) * block_size]
            parent = hashlib.sha256(parent + b"".join(t.to_bytes(4, "little") for t in tokens)).digest()
            self.block_hashes.append(parent)


class Meta:
    def __init__(self, block_hashes, parent, token_ids, block_size, group_idx):
        self.block_hashes = block_hashes
        self.parent_block_hash = parent
        self.token_ids = token_ids
        self.block_size = block_size
        self.group_idx = group_idx
        self.active_residencies = {(MEDIUM_CPU, None)}


class OffloadingEngine:
    """One engine: GPU block size, chunk size in blocks, self-describing or placeholder events."""

    def __init__(self, block_size, blocks_per_chunk, self_describing, legacy=False):
        self.block_size = block_size
        self.blocks_per_chunk = blocks_per_chunk
        self.self_describing = self_describing and not legacy
        self.legacy = legacy
        self.group_idx = 0
        self.requests = {}
        self.gpu_cached = set()
        self.pending = {}  # OffloadKey -> Meta (the tracker's _pending_event_metadata)

    def request(self, name, token_ids):
        req = Request(token_ids, self.block_size)
        self.requests[name] = req
        return req

    # ---------------------------------------------------------------- GPU (block pool)

    def gpu_store(self, name):
        req = self.requests[name]
        events = []
        start = None
        for i, h in enumerate(req.block_hashes):
            if h in self.gpu_cached:
                continue
            if start is None:
                start = i
            self.gpu_cached.add(h)
        if start is None:
            return events
        hashes = req.block_hashes[start:]
        parent = req.block_hashes[start - 1] if start > 0 else None
        tokens = req.all_token_ids[start * self.block_size:len(req.block_hashes) * self.block_size]
        events.append(stored(hashes, parent, tokens, self.block_size, MEDIUM_GPU, self.group_idx, FULL_ATTENTION))
        return events

    def gpu_evict(self, name, blocks):
        req = self.requests[name]
        hashes = [req.block_hashes[i] for i in blocks]
        for h in hashes:
            self.gpu_cached.discard(h)
        return [removed(hashes, MEDIUM_GPU, self.group_idx)]

    # ---------------------------------------------------------------- offloading (the tracker)

    def chunk_key(self, req, chunk_idx):
        tail_hash = req.block_hashes[(chunk_idx + 1) * self.blocks_per_chunk - 1]
        return make_offload_key(tail_hash, self.group_idx)

    def record_store(self, req, chunk_idx, key):
        if not self.self_describing:
            return
        hbf = self.blocks_per_chunk
        first = chunk_idx * hbf
        meta = Meta(
            block_hashes=tuple(req.block_hashes[first:first + hbf]),
            parent=req.block_hashes[first - 1] if first > 0 else None,
            token_ids=tuple(req.all_token_ids[first * self.block_size:(first + hbf) * self.block_size]),
            block_size=self.block_size,
            group_idx=self.group_idx,
        )
        existing = self.pending.get(key)
        if existing is not None:
            meta.active_residencies.update(existing.active_residencies)
        self.pending[key] = meta

    def offload(self, name, chunks, medium, locality=None, ownership=None, removal_expected=False):
        """The scheduler stores chunks (record_store), the manager reports them stored, take_events."""
        req = self.requests[name]
        keys = []
        for c in chunks:
            key = self.chunk_key(req, c)
            self.record_store(req, c, key)
            keys.append(key)
        return list(self._take_stored(keys, medium, locality, ownership, removal_expected))

    def offload_evict(self, name, chunks, medium, locality=None, ownership=None):
        req = self.requests[name]
        keys = [self.chunk_key(req, c) for c in chunks]
        return list(self._take_removed(keys, medium, locality, ownership))

    def _take_stored(self, keys, medium, locality, ownership, removal_expected):
        if self.legacy:
            yield stored([get_offload_block_hash(k) for k in keys], None, [], self.block_size * self.blocks_per_chunk,
                         medium, None, None)
            return
        for key in keys:
            meta = self.pending.get(key)
            if meta is None:
                yield stored([get_offload_block_hash(key)], None, [], 0, medium, get_offload_group_idx(key), None, locality, ownership)
                continue
            if removal_expected:
                meta.active_residencies.add((medium, ownership))
            yield stored(meta.block_hashes, meta.parent_block_hash, meta.token_ids, meta.block_size, medium,
                         meta.group_idx, FULL_ATTENTION, locality, ownership)

    def _take_removed(self, keys, medium, locality, ownership):
        if self.legacy:
            yield removed([get_offload_block_hash(k) for k in keys], medium, None)
            return
        by_group = {}
        for key in keys:
            meta = self.pending.get(key)
            if meta is not None:
                by_group.setdefault(meta.group_idx, []).extend(meta.block_hashes)
                meta.active_residencies.discard((medium, ownership))
                if not meta.active_residencies:
                    self.pending.pop(key)
            else:
                by_group.setdefault(get_offload_group_idx(key), []).append(get_offload_block_hash(key))
        for group_idx, hashes in by_group.items():
            yield removed(hashes, medium, group_idx, locality, ownership)


def run_ops(engine, ops):
    """One batch's events from a list of operations (the test's JSON commands)."""
    events = []
    for op in ops:
        kind = op["op"]
        if kind == "request":
            engine.request(op["req"], op["tokens"])
        elif kind == "gpu_store":
            events += engine.gpu_store(op["req"])
        elif kind == "gpu_evict":
            events += engine.gpu_evict(op["req"], op["blocks"])
        elif kind == "offload":
            events += engine.offload(op["req"], op["chunks"], op.get("medium", MEDIUM_CPU), op.get("locality"),
                                     op.get("ownership"), op.get("removal_expected", False))
        elif kind == "offload_evict":
            events += engine.offload_evict(op["req"], op["chunks"], op.get("medium", MEDIUM_CPU), op.get("locality"),
                                           op.get("ownership"))
        elif kind == "cleared":
            events.append({"type": "AllBlocksCleared"})
        else:
            raise ValueError(f"unknown op {kind!r}")
    return events
