import { describe, expect, test } from "bun:test";
import { ConfigError, loadConfig, MAX_CONFIG_CHARS } from "../../../src/config/load.ts";
import { thrownBy } from "../../support/errors.ts";

const problems = (fn: () => unknown): readonly string[] => thrownBy(ConfigError, fn).problems;

describe("loadConfig", () => {
  test("defaults: port 8080, kv policy, block size 16, loopback host without a token", () => {
    const c = loadConfig({ argv: [], env: {} });
    expect(c).toMatchObject({
      port: 8080,
      policy: "kv",
      blockSize: 16,
      sessionTtl: 300,
      host: "127.0.0.1",
      engines: 0,
    });
    expect(c.workers).toEqual([]);
    expect(c.adminToken).toBeUndefined();
  });

  test("an admin token makes every interface the default host", () => {
    expect(loadConfig({ argv: ["--admin-token", "s3cret-token"], env: {} }).host).toBe("0.0.0.0");
    expect(
      loadConfig({ argv: ["--admin-token", "s3cret-token", "--host", "10.0.0.1"], env: {} }).host,
    ).toBe("10.0.0.1");
  });

  test("flags beat env, env beats the file; PORT is read too", () => {
    const file = JSON.stringify({
      port: 7000,
      "block-size": 32,
      policy: "random",
      workers: ["http://f:1"],
    });
    const c = loadConfig({
      argv: ["--config", "cfg.json", "--policy", "approx"],
      env: { PORT: "7100", SWITCHYARD_POLICY: "least-loaded" },
      readFile: () => file,
    });
    expect(c.port).toBe(7100);
    expect(c.blockSize).toBe(32);
    expect(c.policy).toBe("approx");
    expect(c.workers).toEqual(["http://f:1"]);
  });

  test("--worker repeats; env takes a comma list; --flag=value works", () => {
    expect(
      loadConfig({ argv: ["--worker", "http://a:1", "--worker=http://b:2"], env: {} }).workers,
    ).toEqual(["http://a:1", "http://b:2"]);
    expect(
      loadConfig({ argv: [], env: { SWITCHYARD_WORKERS: "http://a:1, http://b:2" } }).workers,
    ).toEqual(["http://a:1", "http://b:2"]);
  });

  test("numbers given as strings are coerced, fractions allowed where they make sense", () => {
    const c = loadConfig({
      argv: ["--temperature", "0.5", "--health-interval", "0.25", "--overlap-weight", "2"],
      env: {},
    });
    expect(c).toMatchObject({
      scheduler: { temperature: 0.5, overlapScoreWeight: 2 },
      healthInterval: 0.25,
    });
  });

  test("every bad field is named in one error, with the value it got", () => {
    const p = problems(() =>
      loadConfig({
        argv: [
          "--port",
          "99999",
          "--policy",
          "fastest",
          "--block-size",
          "1.5",
          "--worker",
          "ftp://x",
          "--bogus",
          "1",
          "--temperature",
          "-1",
        ],
        env: { SWITCHYARD_REDIS: "mysql://db" },
      }),
    );
    const text = p.join("\n");
    for (const needle of [
      "--port",
      "--policy",
      "--block-size",
      "--worker",
      "--bogus",
      "--temperature",
      "--redis",
    ]) {
      expect(text).toContain(needle);
    }
    expect(p.length).toBe(7);
    expect(text).toContain('"fastest"');
  });

  test("the error message lists the problems one per line", () => {
    try {
      loadConfig({ argv: ["--port", "x", "--engines", "-1"], env: {} });
      throw new Error("unreachable");
    } catch (e) {
      expect((e as Error).message).toMatch(
        /invalid configuration:\n {2}- --port.*\n {2}- --engines/,
      );
    }
  });

  test("a flag without a value, a stray argument and a bad config file are reported together", () => {
    const p = problems(() =>
      loadConfig({
        argv: ["stray", "--config", "x.json", "--port"],
        env: {},
        readFile: () => "{not json",
      }),
    );
    expect(p.some((x) => x.includes('"stray"'))).toBe(true);
    expect(p.some((x) => x.includes("--port: needs a value"))).toBe(true);
    expect(p.some((x) => x.includes("not valid JSON"))).toBe(true);
  });

  test("a config file larger than a config file can be is refused by its size, not parsed", () => {
    const huge = JSON.stringify({ port: 7000, padding: "x".repeat(MAX_CONFIG_CHARS) });
    const p = problems(() =>
      loadConfig({ argv: ["--config", "big.json"], env: {}, readFile: () => huge }),
    );
    expect(p).toHaveLength(1);
    expect(p[0]).toContain("--config big.json:");
    expect(p[0]).toContain(`more than a config file may have (${MAX_CONFIG_CHARS})`);
  });

  test("unknown fields in the config file are errors", () => {
    const p = problems(() =>
      loadConfig({ argv: ["--config", "c.json"], env: {}, readFile: () => '{"prot": 1}' }),
    );
    expect(p[0]).toContain('unknown field "prot"');
  });

  test("redis accepts redis://, rediss:// and https:// URLs", () => {
    for (const u of ["redis://localhost:6379", "rediss://h:1", "https://x.upstash.io"]) {
      expect(loadConfig({ argv: ["--redis", u, "--redis-token", "t"], env: {} }).redis).toBe(u);
    }
  });

  test("scheduler knobs: load guard off by default, on with a factor >= 1, bad values named", () => {
    const d = loadConfig({ argv: [], env: {} }).scheduler;
    expect(d).toMatchObject({
      loadGuardFactor: null,
      loadGuardMetric: "requests",
      activeRequestWeight: 0,
      busyThreshold: null,
      overlapCredit: 16,
    });
    expect(d).toMatchObject({ prefillWaitFactor: 1.05, prefillWaitQueueShare: 0.75 });
    expect(loadConfig({ argv: ["--overlap-credit", "0"], env: {} }).scheduler.overlapCredit).toBe(
      0,
    );
    expect(
      loadConfig({ argv: ["--prefill-wait-factor", "0"], env: {} }).scheduler.prefillWaitFactor,
    ).toBeNull();
    expect(() => loadConfig({ argv: ["--prefill-wait-factor", "0.5"], env: {} })).toThrow(
      /--prefill-wait-factor/,
    );
    const c = loadConfig({
      argv: ["--load-guard", "1.25", "--load-guard-metric", "blocks", "--busy-threshold", "0.9"],
      env: {},
    }).scheduler;
    expect(c).toMatchObject({
      loadGuardFactor: 1.25,
      loadGuardMetric: "blocks",
      busyThreshold: 0.9,
    });
    const p = problems(() =>
      loadConfig({ argv: ["--load-guard", "0.5", "--load-guard-metric", "tokens"], env: {} }),
    );
    expect(p.some((m) => m.includes("--load-guard") && m.includes(">= 1"))).toBe(true);
    expect(p.some((m) => m.includes("--load-guard-metric"))).toBe(true);
  });

  test("--inflight-overlap takes a boolean", () => {
    expect(loadConfig({ argv: [], env: {} }).scheduler.inflightOverlap).toBe(true);
    expect(
      loadConfig({ argv: ["--inflight-overlap", "false"], env: {} }).scheduler.inflightOverlap,
    ).toBe(false);
    expect(
      loadConfig({ argv: ["--inflight-overlap", "true"], env: {} }).scheduler.inflightOverlap,
    ).toBe(true);
    expect(
      loadConfig({ argv: [], env: { SWITCHYARD_INFLIGHT_OVERLAP: "false" } }).scheduler
        .inflightOverlap,
    ).toBe(false);
    expect(
      problems(() => loadConfig({ argv: ["--inflight-overlap", "maybe"], env: {} })).join(),
    ).toContain("--inflight-overlap");
  });
});

describe("shared state, LoRA and ZMQ options", () => {
  test("--redis also comes from SWITCHYARD_REDIS_URL (first) or SWITCHYARD_REDIS; the token from either token variable", () => {
    expect(
      loadConfig({
        argv: [],
        env: { SWITCHYARD_REDIS_URL: "redis://a:1", SWITCHYARD_REDIS: "redis://b:2" },
      }).redis,
    ).toBe("redis://a:1");
    expect(loadConfig({ argv: [], env: { SWITCHYARD_REDIS: "redis://b:2" } }).redis).toBe(
      "redis://b:2",
    );
    const up = loadConfig({
      argv: ["--redis", "https://eu1.upstash.io"],
      env: { UPSTASH_REDIS_REST_TOKEN: "tok-1" },
    });
    expect(up.redisToken).toBe("tok-1");
    expect(
      loadConfig({
        argv: ["--redis", "https://x", "--redis-token", "flag"],
        env: { SWITCHYARD_REDIS_TOKEN: "env" },
      }).redisToken,
    ).toBe("flag");
    expect(loadConfig({ argv: [], env: {} }).redis).toBeUndefined();
  });

  test("an https:// Redis without a token is refused, naming both token variables", () => {
    const p = problems(() => loadConfig({ argv: ["--redis", "https://eu1.upstash.io"], env: {} }));
    expect(p).toHaveLength(1);
    expect(p[0]).toContain("--redis-token");
    expect(p[0]).toContain("UPSTASH_REDIS_REST_TOKEN");
  });

  test("switches: alone true, =false / false off, env words; default off", () => {
    expect(loadConfig({ argv: [], env: {} })).toMatchObject({
      loraEvict: false,
      loraLoadOnDemand: false,
      loraPath: "{name}",
    });
    expect(loadConfig({ argv: ["--lora-evict"], env: {} }).loraEvict).toBe(true);
    expect(loadConfig({ argv: ["--lora-evict", "--port", "1"], env: {} })).toMatchObject({
      loraEvict: true,
      port: 1,
    });
    expect(loadConfig({ argv: ["--lora-evict=false"], env: {} }).loraEvict).toBe(false);
    expect(
      loadConfig({ argv: ["--lora-evict", "false"], env: { SWITCHYARD_LORA_EVICT: "yes" } })
        .loraEvict,
    ).toBe(false);
    expect(
      loadConfig({ argv: [], env: { SWITCHYARD_LORA_LOAD_ON_DEMAND: "1" } }).loraLoadOnDemand,
    ).toBe(true);
    expect(
      problems(() => loadConfig({ argv: [], env: { SWITCHYARD_LORA_EVICT: "maybe" } }))[0],
    ).toContain("--lora-evict");
  });

  test("--lora-path must contain {name}", () => {
    expect(loadConfig({ argv: ["--lora-path", "/models/{name}"], env: {} }).loraPath).toBe(
      "/models/{name}",
    );
    expect(
      problems(() => loadConfig({ argv: ["--lora-path", "/models/x"], env: {} }))[0],
    ).toContain("{name}");
  });

  test("--zmq-endpoint pairs a worker URL with its endpoint; the replay endpoint joins by URL", () => {
    const c = loadConfig({
      argv: [
        "--zmq-endpoint",
        "http://10.0.0.5:8000=tcp://10.0.0.5:5557",
        "--zmq-endpoint=http://10.0.0.6:8000/=tcp://10.0.0.6:5557",
        "--zmq-replay-endpoint",
        "http://10.0.0.6:8000=tcp://10.0.0.6:5558",
        "--zmq-dp-ranks",
        "http://10.0.0.6:8000=4",
      ],
      env: {},
    });
    expect(c.zmqEndpoints).toEqual([
      {
        workerUrl: "http://10.0.0.5:8000",
        endpoint: "tcp://10.0.0.5:5557",
        replayEndpoint: undefined,
        dpRanks: 1,
      },
      {
        workerUrl: "http://10.0.0.6:8000/",
        endpoint: "tcp://10.0.0.6:5557",
        replayEndpoint: "tcp://10.0.0.6:5558",
        dpRanks: 4,
      },
    ]);
    const fromEnv = loadConfig({
      argv: [],
      env: { SWITCHYARD_ZMQ_ENDPOINTS: "http://a:1=tcp://a:2,http://b:1=ipc:///tmp/b" },
    });
    expect(fromEnv.zmqEndpoints.map((z) => z.endpoint)).toEqual(["tcp://a:2", "ipc:///tmp/b"]);
    const fromFile = loadConfig({
      argv: ["--config", "c.json"],
      env: {},
      readFile: () => JSON.stringify({ "zmq-endpoints": ["http://a:1=tcp://a:2"] }),
    });
    expect(fromFile.zmqEndpoints).toHaveLength(1);
  });

  test("--zmq-dp-ranks needs an integer rank count and a --zmq-endpoint of the same worker", () => {
    expect(
      problems(() =>
        loadConfig({
          argv: ["--zmq-endpoint", "http://a:1=tcp://a:2", "--zmq-dp-ranks", "http://a:1=0"],
          env: {},
        }),
      )[0],
    ).toContain("--zmq-dp-ranks");
    expect(
      problems(() =>
        loadConfig({
          argv: ["--zmq-endpoint", "http://a:1=tcp://a:2", "--zmq-dp-ranks", "http://b:1=2"],
          env: {},
        }),
      )[0],
    ).toContain("http://b:1 has no --zmq-endpoint");
  });

  test("admission and engine-metrics flags: defaults and validation", () => {
    const c = loadConfig({ argv: [], env: {} });
    expect([
      c.maxQueue,
      c.queueTimeout,
      c.engineMetricsInterval,
      c.busyWaiting,
      c.workerCapacity,
      c.workersFile,
    ]).toEqual([1024, 30, 2, null, null, undefined]);
    const d = loadConfig({
      argv: [
        "--max-queue",
        "0",
        "--queue-timeout",
        "0.5",
        "--busy-waiting",
        "3",
        "--worker-capacity",
        "8192",
        "--workers-file",
        "/etc/w.yaml",
      ],
      env: {},
    });
    expect([d.maxQueue, d.queueTimeout, d.busyWaiting, d.workerCapacity, d.workersFile]).toEqual([
      0,
      0.5,
      3,
      8192,
      "/etc/w.yaml",
    ]);
    expect(problems(() => loadConfig({ argv: ["--queue-timeout", "0"], env: {} }))[0]).toContain(
      "--queue-timeout",
    );
  });

  test("bad ZMQ pairs, a replay endpoint without its worker and a worker given twice are named", () => {
    expect(
      problems(() => loadConfig({ argv: ["--zmq-endpoint", "tcp://a:2"], env: {} }))[0],
    ).toContain("--zmq-endpoint");
    expect(
      problems(() => loadConfig({ argv: ["--zmq-endpoint", "http://a:1=http://a:2"], env: {} }))[0],
    ).toContain("tcp://host:port");
    const p = problems(() =>
      loadConfig({
        argv: [
          "--zmq-endpoint",
          "http://a:1=tcp://a:2",
          "--zmq-endpoint",
          "http://a:1=tcp://a:3",
          "--zmq-replay-endpoint",
          "http://b:1=tcp://b:3",
        ],
        env: {},
      }),
    );
    expect(p.join("\n")).toContain("http://b:1 has no --zmq-endpoint");
    expect(p.join("\n")).toContain("given twice");
  });
});

describe("secrets in errors", () => {
  test("a refused credential is named, never echoed: --events-token (flag or environment) and a Redis URL with a password", () => {
    for (const argv of [
      ["--events-token", "ev19609-short"],
      ["--redis", "ftp://user:hunter2-password@redis:6379"],
    ]) {
      let message = "";
      try {
        loadConfig({ argv, env: {} });
      } catch (e) {
        message = (e as Error).message;
      }
      expect(message).toContain(argv[0]!);
      expect(message).toContain("not shown");
      expect(message).not.toContain(argv[1]!);
      expect(message).not.toContain(argv[1]!.includes("hunter2") ? "hunter2" : argv[1]!);
    }
    let fromEnv = "";
    try {
      loadConfig({ argv: [], env: { SWITCHYARD_EVENTS_TOKEN: "tiny-secret" } });
    } catch (e) {
      fromEnv = (e as Error).message;
    }
    expect(fromEnv).toContain("not shown");
    expect(fromEnv).not.toContain("tiny-secret");
  });
});
