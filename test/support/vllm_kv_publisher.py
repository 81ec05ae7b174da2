#!/usr/bin/python3
"""A stand-in for vLLM's ZmqEventPublisher (vllm/distributed/kv_events.py, spec §8), for
integration tests and benchmarks of the router's ZeroMQ KV event subscriber.

Wire behaviour, as vLLM's:
- binds a publisher on tcp://127.0.0.1:<pub port> with send HWM 100000 and sends 3-frame
  messages [topic, seq (8 bytes, big-endian), payload (msgpack)]; seq starts at 0 and goes
  up by 1 per batch;
- keeps the last 10000 (seq, payload) pairs and serves replays on a ROUTER bound on
  tcp://127.0.0.1:<replay port>: [client, "", start_seq] -> one [client, "", seq, payload]
  per buffered batch with seq >= start_seq, then [client, "", 0xFF*8, ""];
- payloads are msgspec's encoding of KVEventBatch: [ts, events, data_parallel_rank] with
  each event either positional ["BlockStored", field, ...] (vLLM ~0.10, array_like: every
  field written, defaults as nil) or a map {"type": "BlockStored", ...} (newer vLLM:
  fields equal to their default omitted). Written with python3-msgpack, byte-identical to
  msgspec's output for these structs.

One difference: the socket is an XPUB, not a PUB, so that `wait_subscriber` can tell a
test when a subscription has arrived (no sleeps). A SUB peer cannot tell the two apart.

Control: one JSON command per line on stdin, one JSON reply per line on stdout. The first
line printed is {"pub": endpoint, "replay": endpoint, "pid": n}.
  {"cmd": "wait_subscriber", "timeout_ms": 5000, "subscribed": true}
      waits until a subscription is present (or, with false, gone); replies with the state.
  {"cmd": "publish", "format": "array"|"map", "batches": [{"events": [...], "dp_rank": null, "send": true}]}
      send=false buffers the batch (replayable) without sending it: a lost message.
      Events are JSON objects {"type": "BlockStored", "block_hashes": [...], ...}; a hash is
      a number, "int:<decimal>" (any size or sign) or "hex:<bytes as hex>".
  {"cmd": "bench", "batches": N, "events_per_batch": k, "blocks_per_event": b,
   "block_size": 16, "format": "array"}  -> sends N batches as fast as it can.
  {"cmd": "publish_oversized", "bytes": N}
      sends one [topic, seq, N zero bytes] message without using up a seq or buffering it:
      a frame past the subscriber's message limit (a hostile or broken publisher).
  {"cmd": "tiered", "engine": {"block_size": 16, "blocks_per_chunk": 3, "self_describing": true, "legacy": false},
   "batches": [{"ops": [...], "dp_rank": null}]}
      an engine with vLLM's OffloadingConnector (vllm_offload_events.py): each batch's ops make
      its events (GPU stores and evictions, offloads to CPU / STORAGE and their evictions,
      AllBlocksCleared), sent in the newest map form. The engine lives until the next
      "tiered" command that names one. Replies with the seqs and each request's block hashes
      as the router reads them ("u64" decimal strings).
  {"cmd": "exit"}
Needs Debian's python3-zmq and python3-msgpack (run with /usr/bin/python3).
"""

import argparse
import collections
import json
import os
import sys
import time

import msgpack
import zmq

import vllm_offload_events

END_SEQ = (-1).to_bytes(8, "big", signed=True)
BUFFER_STEPS = 10_000
HWM = 100_000

# Declaration order of each event's fields (vLLM with extra_keys, group_idx and the spec
# kind), and how many leading fields have no default.
FIELDS = {
    "BlockStored": (
        [
            "block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium", "lora_name",
            "extra_keys", "group_idx", "kv_cache_spec_kind", "kv_cache_spec_sliding_window",
        ],
        7,
    ),
    "BlockRemoved": (["block_hashes", "medium", "group_idx"], 2),
    "AllBlocksCleared": ([], 0),
}
HASH_FIELDS = ("block_hashes", "parent_block_hash")


def hash_value(v):
    if isinstance(v, str) and v.startswith("int:"):
        return int(v[4:])
    if isinstance(v, str) and v.startswith("hex:"):
        return bytes.fromhex(v[4:])
    return v


def event_value(ev, fmt):
    tag = ev["type"]
    names, required = FIELDS.get(tag, ([k for k in ev if k != "type"], 0))
    values = {}
    for name in names:
        v = ev.get(name)
        if name == "block_hashes" and v is not None:
            v = [hash_value(h) for h in v]
        elif name == "parent_block_hash" and v is not None:
            v = hash_value(v)
        values[name] = v
    if fmt == "array":
        return [tag] + [values[n] for n in names]
    out = {"type": tag}
    for i, n in enumerate(names):
        if i < required or values[n] is not None:
            out[n] = values[n]
    return out


def encode_batch(events, dp_rank, fmt, ts=None):
    batch = [time.time() if ts is None else ts, [event_value(e, fmt) for e in events], dp_rank]
    return msgpack.packb(batch, use_bin_type=True)


class Publisher:
    def __init__(self, pub_port, replay_port, topic):
        self.ctx = zmq.Context()
        self.pub = self.ctx.socket(zmq.XPUB)
        self.pub.setsockopt(zmq.SNDHWM, HWM)
        self.pub.setsockopt(zmq.LINGER, 0)
        self.replay = self.ctx.socket(zmq.ROUTER)
        self.replay.setsockopt(zmq.LINGER, 0)
        self.pub_port = self._bind(self.pub, pub_port)
        self.replay_port = self._bind(self.replay, replay_port)
        self.topic = topic.encode()
        self.seq = 0
        self.buffer = collections.deque(maxlen=BUFFER_STEPS)
        self.subscribed = False

    @staticmethod
    def _bind(sock, port):
        if port == 0:
            return sock.bind_to_random_port("tcp://127.0.0.1")
        sock.bind(f"tcp://127.0.0.1:{port}")
        return port

    def publish(self, payload, send=True):
        seq = self.seq
        self.seq += 1
        seq_bytes = seq.to_bytes(8, "big")
        if send:
            self.pub.send_multipart((self.topic, seq_bytes, payload), copy=False)
        self.buffer.append((seq, payload))
        return seq

    def service(self, timeout_ms=0):
        """Answer replay requests and note subscriptions, waiting up to timeout_ms."""
        poller = zmq.Poller()
        poller.register(self.pub, zmq.POLLIN)
        poller.register(self.replay, zmq.POLLIN)
        for sock, _ in poller.poll(timeout_ms):
            if sock is self.pub:
                msg = self.pub.recv()
                if msg[:1] in (b"\x00", b"\x01"):
                    self.subscribed = msg[:1] == b"\x01"
            else:
                self._service_replay()

    def _service_replay(self):
        frame = self.replay.recv_multipart()
        if len(frame) != 3:
            print(json.dumps({"warning": f"invalid replay request with {len(frame)} frames"}), flush=True)
            return
        client_id, _, start_seq_bytes = frame
        start_seq = int.from_bytes(start_seq_bytes, "big")
        for seq, buf in self.buffer:
            if seq >= start_seq:
                self.replay.send_multipart((client_id, b"", seq.to_bytes(8, "big"), buf))
        self.replay.send_multipart((client_id, b"", END_SEQ, b""))


def bench(pub, cmd):
    n = int(cmd["batches"])
    k = int(cmd.get("events_per_batch", 1))
    b = int(cmd.get("blocks_per_event", 4))
    bs = int(cmd.get("block_size", 16))
    fmt = cmd.get("format", "array")
    variants = []
    for v in range(64):
        events = []
        for e in range(k):
            base = (v * k + e) * b
            events.append({
                "type": "BlockStored", "block_hashes": [f"int:{(base + i) * 0x9E3779B97F4A7C15 % 2**64}" for i in range(b)],
                "parent_block_hash": None, "token_ids": list(range(base * bs, (base + b) * bs)), "block_size": bs,
                "lora_id": None, "medium": "GPU", "lora_name": None,
            })
        variants.append(encode_batch(events, None, fmt, ts=1.0))
    first = pub.seq
    t0 = time.perf_counter()
    for i in range(n):
        pub.publish(variants[i & 63])
        if (i & 1023) == 0:
            pub.service(0)
    dt = time.perf_counter() - t0
    return {"ok": "bench", "seconds": dt, "first_seq": first, "last_seq": pub.seq - 1, "payload_bytes": len(variants[0])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pub-port", type=int, default=0)
    ap.add_argument("--replay-port", type=int, default=0)
    ap.add_argument("--topic", default="")
    args = ap.parse_args()
    pub = Publisher(args.pub_port, args.replay_port, args.topic)
    engine = None
    print(json.dumps({
        "pub": f"tcp://127.0.0.1:{pub.pub_port}", "replay": f"tcp://127.0.0.1:{pub.replay_port}", "pid": os.getpid(),
    }), flush=True)

    stdin = sys.stdin.fileno()
    pending = b""
    poller = zmq.Poller()
    poller.register(stdin, zmq.POLLIN)
    poller.register(pub.pub, zmq.POLLIN)
    poller.register(pub.replay, zmq.POLLIN)
    while True:
        ready = dict(poller.poll(1000))
        if pub.pub in ready or pub.replay in ready:
            pub.service(0)
        if stdin not in ready:
            continue
        chunk = os.read(stdin, 1 << 20)
        if not chunk:
            return
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            if not line.strip():
                continue
            cmd = json.loads(line)
            name = cmd.get("cmd")
            if name == "exit":
                return
            if name == "wait_subscriber":
                want = cmd.get("subscribed", True)
                deadline = time.monotonic() + cmd.get("timeout_ms", 5000) / 1000
                while pub.subscribed != want and time.monotonic() < deadline:
                    pub.service(20)
                reply = {"ok": name, "subscribed": pub.subscribed}
            elif name == "publish":
                fmt = cmd.get("format", "array")
                seqs = []
                for b in cmd["batches"]:
                    payload = encode_batch(b["events"], b.get("dp_rank"), fmt, b.get("ts"))
                    seqs.append(pub.publish(payload, b.get("send", True)))
                reply = {"ok": name, "seqs": seqs}
            elif name == "publish_oversized":
                seq_bytes = pub.seq.to_bytes(8, "big")
                pub.pub.send_multipart((pub.topic, seq_bytes, bytes(int(cmd["bytes"]))), copy=False)
                reply = {"ok": name}
            elif name == "bench":
                reply = bench(pub, cmd)
            elif name == "tiered":
                if "engine" in cmd:
                    e = cmd["engine"]
                    engine = vllm_offload_events.OffloadingEngine(
                        e["block_size"], e["blocks_per_chunk"], e["self_describing"], e.get("legacy", False)
                    )
                seqs = []
                for b in cmd["batches"]:
                    events = vllm_offload_events.run_ops(engine, b["ops"])
                    payload = msgpack.packb([time.time(), events, b.get("dp_rank")], use_bin_type=True)
                    seqs.append(pub.publish(payload, b.get("send", True)))
                hashes = {name: [str(vllm_offload_events.u64_of(h)) for h in r.block_hashes] for name, r in engine.requests.items()}
                reply = {"ok": name, "seqs": seqs, "hashes": hashes}
            else:
                reply = {"error": f"unknown command {name!r}"}
            print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
