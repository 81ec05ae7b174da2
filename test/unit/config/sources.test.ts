/**
 * Where serve's options come from besides flags: a YAML --config file (as JSON), unknown
 * SWITCHYARD_* variables named in a warning, and what Deno and workerd accept (an option they
 * lack, left at its default, starts; any other value is refused by name, from env too).
 */
import { describe, expect, test } from "bun:test";
import { ConfigError, loadConfig, unknownEnvWarnings } from "../../../src/config/load.ts";
import { closestName, editDistance } from "../../../src/config/closest-name.ts";
import { thrownBy } from "../../support/errors.ts";

const problems = (fn: () => unknown): readonly string[] => thrownBy(ConfigError, fn).problems;
const parseYaml = (text: string): unknown => Bun.YAML.parse(text);

describe("--config as YAML", () => {
  const yaml = [
    "port: 7001",
    "block-size: 32",
    "policy: approx",
    "workers:",
    "  - http://10.0.0.5:8000",
    "  - http://10.0.0.6:8000",
    "overlap-weight: 2",
    "outlier-base-ejection-time: 5",
    "lora-evict: true",
  ].join("\n");

  test("a .yaml file gives the same options a JSON file does, groups included", () => {
    const c = loadConfig({
      argv: ["--config", "/etc/switchyard.yaml"],
      env: {},
      readFile: () => yaml,
      parseYaml,
    });
    expect(c).toMatchObject({
      port: 7001,
      blockSize: 32,
      policy: "approx",
      workers: ["http://10.0.0.5:8000", "http://10.0.0.6:8000"],
      loraEvict: true,
    });
    expect(c.scheduler.overlapScoreWeight).toBe(2);
    expect(c.outlier.baseEjectionTime).toBe(5);
    const json = loadConfig({
      argv: ["--config", "c.json"],
      env: {},
      readFile: () => JSON.stringify(parseYaml(yaml)),
    });
    expect(json).toEqual(c);
  });

  test(".yml counts as YAML, SWITCHYARD_CONFIG names the file, flags and env still win", () => {
    const c = loadConfig({
      argv: ["--block-size", "64"],
      env: { SWITCHYARD_CONFIG: "c.yml", SWITCHYARD_POLICY: "random" },
      readFile: () => yaml,
      parseYaml,
    });
    expect(c).toMatchObject({ port: 7001, blockSize: 64, policy: "random" });
  });

  test("bad YAML, a list instead of a mapping, an unknown field and YAML without a parser are named", () => {
    expect(
      problems(() =>
        loadConfig({ argv: ["--config", "c.yaml"], env: {}, readFile: () => "port: [", parseYaml }),
      )[0],
    ).toContain("--config c.yaml: not valid YAML");
    expect(
      problems(() =>
        loadConfig({
          argv: ["--config", "c.yaml"],
          env: {},
          readFile: () => "- 1\n- 2",
          parseYaml,
        }),
      )[0],
    ).toContain("must hold a YAML mapping");
    expect(
      problems(() =>
        loadConfig({ argv: ["--config", "c.yaml"], env: {}, readFile: () => "prot: 1", parseYaml }),
      )[0],
    ).toContain('unknown field "prot"');
    expect(
      problems(() =>
        loadConfig({ argv: ["--config", "c.yaml"], env: {}, readFile: () => yaml }),
      )[0],
    ).toBe("--config c.yaml: YAML cannot be read on this runtime; give the file as JSON");
  });

  test("a file that cannot be read is one problem naming it", () => {
    const p = problems(() =>
      loadConfig({ argv: ["--config", "/nowhere/c.yaml"], env: {}, parseYaml }),
    );
    expect(p).toHaveLength(1);
    expect(p[0]).toStartWith("--config /nowhere/c.yaml: cannot read (");
  });
});

describe("unknown SWITCHYARD_* variables", () => {
  test("each is named once, with the closest known variable when one is close", () => {
    expect(
      unknownEnvWarnings({
        SWITCHYARD_BLOCKSIZE: "32",
        SWITCHYARD_WORKER: "http://a:1",
        SWITCHYARD_FROBNICATE: "1",
      }),
    ).toEqual([
      "environment variable SWITCHYARD_BLOCKSIZE is not a switchyard setting and is ignored (did you mean SWITCHYARD_BLOCK_SIZE?)",
      "environment variable SWITCHYARD_FROBNICATE is not a switchyard setting and is ignored",
      "environment variable SWITCHYARD_WORKER is not a switchyard setting and is ignored (did you mean SWITCHYARD_WORKERS?)",
    ]);
  });

  test("known ones (every option's, the config file's, the native libraries') and other variables are quiet", () => {
    expect(
      unknownEnvWarnings({
        SWITCHYARD_BLOCK_SIZE: "16",
        SWITCHYARD_REDIS_URL: "redis://h",
        SWITCHYARD_OUTLIER_BASE_EJECTION_TIME: "3",
        SWITCHYARD_DRAIN_DELAY: "5",
        SWITCHYARD_CONFIG: "c.json",
        SWITCHYARD_FFI_LIB: "/x.so",
        SWITCHYARD_LIBZMQ: "libzmq.so.5",
        PORT: "1",
        HOME: "/root",
      }),
    ).toEqual([]);
  });

  test("the closest name is a typo's distance away, not any name", () => {
    expect(editDistance("BLOCKSIZE", "BLOCK_SIZE")).toBe(1);
    expect(closestName("PORTT", ["PORT", "HOST"])).toBe("PORT");
    expect(closestName("FOO", ["PORT", "HOST"])).toBeUndefined();
  });
});

describe("options Deno and workerd lack", () => {
  test("left at their default they are accepted (one configuration starts on every runtime)", () => {
    const argv = [
      "--engines",
      "0",
      "--disagg",
      "off",
      "--idle-timeout",
      "10",
      "--engine-metrics-interval",
      "2",
      "--zmq-dp-ranks",
      "http://a:1=1",
      "--zmq-endpoint",
      "http://a:1=tcp://a:2",
    ];
    // The zmq pair is not a default: it is refused, the rest are not.
    expect(problems(() => loadConfig({ argv, env: {}, runtime: "deno" }))).toEqual([
      "--zmq-endpoint: not available on Deno (ZMQ event streams use libzmq over bun:ffi (send events over HTTP instead))",
      "--zmq-dp-ranks: not available on Deno (ZMQ event streams use libzmq over bun:ffi (send events over HTTP instead))",
    ]);
    expect(
      loadConfig({
        argv: [
          "--engines",
          "0",
          "--tokenizer-workers",
          "4",
          "--drain-timeout",
          "5",
          "--drain-delay",
          "2",
        ],
        env: {},
        runtime: "bun",
      }).engines,
    ).toBe(0);
    expect(
      loadConfig({
        argv: ["--engines", "0", "--disagg", "off", "--drain-timeout", "30"],
        env: {},
        runtime: "workerd",
      }).engines,
    ).toBe(0);
  });

  test("any other value is refused by name, whether from a flag, the environment or the file", () => {
    expect(
      problems(() => loadConfig({ argv: ["--engines", "2"], env: {}, runtime: "deno" })),
    ).toEqual([
      "--engines: not available on Deno (embedded simulated engines run on Bun's server)",
    ]);
    expect(
      problems(() =>
        loadConfig({ argv: [], env: { SWITCHYARD_TOKENIZER_WORKERS: "2" }, runtime: "deno" }),
      )[0],
    ).toStartWith("--tokenizer-workers: not available on Deno");
    expect(
      problems(() =>
        loadConfig({
          argv: ["--config", "c.json"],
          env: {},
          readFile: () => '{"drain-delay": 5}',
          runtime: "workerd",
        }),
      )[0],
    ).toStartWith("--drain-delay: not available on workerd");
    // Deno drains, so it takes --drain-delay; workerd reads no tokenizer files, Deno does.
    expect(loadConfig({ argv: ["--drain-delay", "5"], env: {}, runtime: "deno" }).drainDelay).toBe(
      5,
    );
    expect(
      problems(() => loadConfig({ argv: ["--tokenizer", "/m/x"], env: {}, runtime: "workerd" }))[0],
    ).toStartWith("--tokenizer: not available on workerd");
    expect(
      loadConfig({ argv: ["--tokenizer", "/m/x"], env: {}, runtime: "deno" }).tokenizers,
    ).toEqual([{ model: undefined, path: "/m/x" }]);
  });

  test("refusals are listed with every other problem, in one error", () => {
    const p = problems(() =>
      loadConfig({
        argv: ["--engines", "1", "--port", "x", "--workers-file", "/w.yaml"],
        env: {},
        runtime: "deno",
      }),
    );
    expect(p.map((x) => x.slice(0, x.indexOf(":")))).toEqual([
      "--port (SWITCHYARD_PORT / PORT)",
      "--engines",
      "--workers-file",
    ]);
  });
});

describe("typos are answered with what was probably meant", () => {
  test("an unknown flag names the closest flag (serve and mocker share the table machinery)", () => {
    expect(problems(() => loadConfig({ argv: ["--blokc-size", "4"], env: {} }))).toContain(
      "--blokc-size: unknown flag; did you mean --block-size?",
    );
    expect(problems(() => loadConfig({ argv: ["--confg", "c.json"], env: {} }))).toContain(
      "--confg: unknown flag; did you mean --config?",
    );
    // Nothing close: no guess.
    expect(problems(() => loadConfig({ argv: ["--zzzzzzzz", "4"], env: {} }))).toContain(
      "--zzzzzzzz: unknown flag",
    );
  });

  test("an unknown config field names the closest field, spelled as the file spells keys", () => {
    expect(
      problems(() =>
        loadConfig({
          argv: ["--config", "c.yaml"],
          env: {},
          readFile: () => "blokc-size: 4",
          parseYaml,
        }),
      )[0],
    ).toBe('--config c.yaml: unknown field "blokc-size"; did you mean "block-size"?');
    expect(
      problems(() =>
        loadConfig({ argv: ["--config", "c.json"], env: {}, readFile: () => '{"blokcSize": 4}' }),
      )[0],
    ).toBe('--config c.json: unknown field "blokcSize"; did you mean "blockSize"?');
  });
});

describe("YAML errors say where", () => {
  test("line and column of the first place the file stops being readable, with the line", () => {
    const text = "port: 0\nblock-size: [16\npolicy: approx\n";
    expect(
      problems(() =>
        loadConfig({ argv: ["--config", "c.yaml"], env: {}, readFile: () => text, parseYaml }),
      )[0],
    ).toStartWith('--config c.yaml: not valid YAML at line 2, column 13 ("block-size: [16"): ');
    const indented = "port: 0\n  block-size: 16\n";
    expect(
      problems(() =>
        loadConfig({ argv: ["--config", "c.yaml"], env: {}, readFile: () => indented, parseYaml }),
      )[0],
    ).toContain("at line 2, column 13");
  });
});
