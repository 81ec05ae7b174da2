import { describe, expect, test } from "bun:test";
import { workerIdFromUrl } from "../../../../src/core/worker-id.ts";
import {
  podWorker,
  rankedEndpoints,
  type PodWorker,
} from "../../../../src/fleet/discovery/pod-worker.ts";

interface PodOpts {
  name?: string;
  ip?: string;
  ready?: boolean;
  terminating?: boolean;
  annotations?: Record<string, string>;
  ports?: { name?: string; containerPort: number }[];
  phase?: string;
}

function pod(o: PodOpts = {}): unknown {
  return {
    metadata: {
      name: o.name ?? "engine-0",
      namespace: "ml",
      resourceVersion: "7",
      ...(o.annotations ? { annotations: o.annotations } : {}),
      ...(o.terminating ? { deletionTimestamp: "2025-01-01T00:00:00Z" } : {}),
    },
    spec: {
      containers: [
        { name: "sidecar", ports: [{ name: "metrics", containerPort: 9090 }] },
        { name: "vllm", ports: o.ports ?? [{ name: "http", containerPort: 8000 }] },
      ],
    },
    status: {
      phase: o.phase ?? "Running",
      ...(o.ip === "" ? {} : { podIP: o.ip ?? "10.1.2.3" }),
      conditions: [
        { type: "PodScheduled", status: "True" },
        { type: "Ready", status: (o.ready ?? true) ? "True" : "False" },
      ],
    },
  };
}

function worker(w: PodWorker): Extract<PodWorker, { kind: "worker" }> {
  if (w.kind !== "worker") throw new Error(`expected a worker, got ${JSON.stringify(w)}`);
  return w;
}

function rejected(w: PodWorker): Extract<PodWorker, { kind: "rejected" }> {
  if (w.kind !== "rejected") throw new Error(`expected a rejection, got ${JSON.stringify(w)}`);
  return w;
}

describe("a pod as a worker", () => {
  test("address and named port make the URL; the id is the URL's, as every router derives it", () => {
    const w = worker(podWorker(pod(), "http"));
    expect(w.key).toBe("ml/engine-0");
    expect(w.spec.url).toBe("http://10.1.2.3:8000");
    expect(w.id).toBe(workerIdFromUrl("http://10.1.2.3:8000"));
    expect(w.state).toBe("ready");
    expect(w.spec.kvEvents).toBeUndefined();
  });

  test("an IPv6 pod address is bracketed in the URL and in $(POD_IP)", () => {
    const w = worker(
      podWorker(
        pod({ ip: "fd00::5", annotations: { "switchyard.dev/kv-events": "tcp://$(POD_IP):5557" } }),
        "http",
      ),
    );
    expect(w.spec.url).toBe("http://[fd00::5]:8000");
    expect(w.spec.kvEvents?.endpoint).toBe("tcp://[fd00::5]:5557");
  });

  test("ready, not ready and terminating are told apart; the fingerprint ignores readiness", () => {
    const ready = worker(podWorker(pod(), "http"));
    const notReady = worker(podWorker(pod({ ready: false }), "http"));
    const terminating = worker(podWorker(pod({ terminating: true }), "http"));
    expect([ready.state, notReady.state, terminating.state]).toEqual([
      "ready",
      "not-ready",
      "terminating",
    ]);
    expect(notReady.fingerprint).toBe(ready.fingerprint);
    expect(terminating.fingerprint).toBe(ready.fingerprint);
  });

  test("a pod without an address, or finished, is pending: nothing to register", () => {
    expect(podWorker(pod({ ip: "" }), "http")).toMatchObject({
      kind: "pending",
      why: "no pod IP yet",
    });
    expect(podWorker(pod({ phase: "Succeeded" }), "http").kind).toBe("pending");
    expect(podWorker(pod({ phase: "Failed" }), "http").kind).toBe("pending");
  });

  test("no container port of that name: rejected, field port", () => {
    const r = rejected(podWorker(pod(), "api"));
    expect(r.field).toBe("port");
    expect(r.message).toContain('no container port named "api"');
  });

  test("every annotation gives what its flag or registration field gives", () => {
    const w = worker(
      podWorker(
        pod({
          annotations: {
            "switchyard.dev/kv-events": "0=tcp://$(POD_IP):5557, 1=tcp://$(POD_IP):5558",
            "switchyard.dev/replay": "tcp://$(POD_IP):5600",
            "switchyard.dev/role": "decode",
            "switchyard.dev/models": "llama-3, llama-3-instruct",
            "switchyard.dev/tokenizer": "/models/llama-3",
            "switchyard.dev/lora-slots": "8",
            "app.kubernetes.io/name": "vllm",
          },
        }),
        "http",
      ),
    );
    expect(w.spec.kvEvents).toEqual({
      endpoint: "tcp://10.1.2.3:5557",
      replayEndpoint: "tcp://10.1.2.3:5600",
      dpRanks: 2,
      topic: "",
    });
    expect(w.spec.dpRanks).toBe(2);
    expect(w.spec.role).toBe("decode");
    expect(w.spec.models).toEqual(["llama-3", "llama-3-instruct"]);
    expect(w.spec.maxLoras).toBe(8);
    expect(w.tokenizer).toBe("/models/llama-3");
  });

  test("a changed annotation changes the fingerprint", () => {
    const a = worker(podWorker(pod({ annotations: { "switchyard.dev/role": "decode" } }), "http"));
    const b = worker(podWorker(pod({ annotations: { "switchyard.dev/role": "prefill" } }), "http"));
    expect(a.fingerprint).not.toBe(b.fingerprint);
  });

  const bad: [string, Record<string, string>, string, string][] = [
    [
      "role",
      { "switchyard.dev/role": "chef" },
      "role",
      "switchyard.dev/role: must be prefill, decode or both",
    ],
    [
      "lora-slots",
      { "switchyard.dev/lora-slots": "many" },
      "lora-slots",
      "switchyard.dev/lora-slots: must be a number",
    ],
    ["negative lora-slots", { "switchyard.dev/lora-slots": "-1" }, "lora-slots", "must be >= 0"],
    [
      "empty models",
      { "switchyard.dev/models": " , " },
      "models",
      "switchyard.dev/models: must not be empty",
    ],
    [
      "kv-events without a port",
      { "switchyard.dev/kv-events": "tcp://$(POD_IP)" },
      "kv-events",
      "needs a port",
    ],
    [
      "kv-events with an unknown scheme",
      { "switchyard.dev/kv-events": "udp://$(POD_IP):5557" },
      "kv-events",
      "must be tcp://host:port",
    ],
    [
      "kv-events with another variable",
      { "switchyard.dev/kv-events": "tcp://$(NODE_IP):5557" },
      "kv-events",
      "only $(POD_IP) is substituted",
    ],
    [
      "kv-events ranks off the port + r layout",
      { "switchyard.dev/kv-events": "0=tcp://$(POD_IP):5557,1=tcp://$(POD_IP):6000" },
      "kv-events",
      "rank r must be rank 0's port + r",
    ],
    [
      "kv-events with a rank missing",
      { "switchyard.dev/kv-events": "0=tcp://a:5557,2=tcp://a:5559" },
      "kv-events",
      "rank 1 is missing",
    ],
    [
      "replay without kv-events",
      { "switchyard.dev/replay": "tcp://$(POD_IP):5600" },
      "replay",
      "needs switchyard.dev/kv-events",
    ],
    [
      "replay with other ranks",
      {
        "switchyard.dev/kv-events": "0=tcp://a:1,1=tcp://a:2",
        "switchyard.dev/replay": "0=tcp://a:7,1=tcp://a:8,2=tcp://a:9",
      },
      "replay",
      "3 ranks",
    ],
    ["empty tokenizer", { "switchyard.dev/tokenizer": " " }, "tokenizer", "must not be empty"],
    [
      "a misspelt annotation",
      { "switchyard.dev/kv-event": "tcp://$(POD_IP):5557" },
      "unknown-annotation",
      "switchyard.dev/kv-event: unknown annotation",
    ],
  ];
  for (const [what, annotations, field, says] of bad) {
    test(`rejected, naming the field: ${what}`, () => {
      const r = rejected(podWorker(pod({ annotations }), "http"));
      expect(r.field).toBe(field);
      expect(r.message).toContain(says);
      expect(r.key).toBe("ml/engine-0");
    });
  }

  test("a rejection's fingerprint follows the bad value, so a fixed pod is seen as new", () => {
    const a = rejected(podWorker(pod({ annotations: { "switchyard.dev/role": "chef" } }), "http"));
    const b = rejected(podWorker(pod({ annotations: { "switchyard.dev/role": "cook" } }), "http"));
    expect(a.fingerprint).not.toBe(b.fingerprint);
  });

  test("something that is not a pod is rejected, not thrown", () => {
    expect(podWorker({ kind: "Status" }, "http")).toMatchObject({
      kind: "rejected",
      field: "object",
    });
  });
});

describe("rankedEndpoints", () => {
  test("one endpoint is rank 0 of one rank; inproc ranks follow the subscriber's _dpR names", () => {
    expect(rankedEndpoints("tcp://$(POD_IP):5557", "10.0.0.1")).toEqual({
      endpoint: "tcp://10.0.0.1:5557",
      ranks: 1,
    });
    expect(rankedEndpoints("0=inproc://ev,1=inproc://ev_dp1", "h")).toEqual({
      endpoint: "inproc://ev",
      ranks: 2,
    });
  });

  test("mixed and repeated forms are refused", () => {
    expect(rankedEndpoints("tcp://a:1,tcp://a:2", "h")).toContain("give one endpoint");
    expect(rankedEndpoints("0=tcp://a:1,tcp://a:2", "h")).toContain("for every rank");
    expect(rankedEndpoints("0=tcp://a:1,0=tcp://a:1", "h")).toContain("rank 0 is given twice");
    expect(rankedEndpoints("", "h")).toBe("must not be empty");
  });
});
