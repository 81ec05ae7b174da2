/** The observability flags as the options table reads them: flags, env (OpenTelemetry's names too), checks, the runtime column. */
import { describe, expect, test } from "bun:test";
import { loadConfig } from "../../../src/config/load.ts";
import { configProblems } from "../../support/config-problems.ts";

const problems = configProblems;

describe("--log-format, --otlp-endpoint, --otlp-sample-ratio", () => {
  test("defaults: text lines, no spans, every new trace recorded", () => {
    const c = loadConfig({ argv: [], env: {} });
    expect([c.logFormat, c.otlpEndpoint, c.otlpSampleRatio]).toEqual(["text", undefined, 1]);
  });

  test("flags, SWITCHYARD_* and OpenTelemetry's own variables set them", () => {
    const c = loadConfig({
      argv: ["--log-format", "json", "--otlp-endpoint", "http://collector:4318"],
      env: { SWITCHYARD_OTLP_SAMPLE_RATIO: "0.25" },
    });
    expect([c.logFormat, c.otlpEndpoint, c.otlpSampleRatio]).toEqual([
      "json",
      "http://collector:4318",
      0.25,
    ]);
    const o = loadConfig({
      argv: [],
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: "https://otel.example",
        OTEL_TRACES_SAMPLER_ARG: "0.1",
        SWITCHYARD_LOG_FORMAT: "json",
      },
    });
    expect([o.logFormat, o.otlpEndpoint, o.otlpSampleRatio]).toEqual([
      "json",
      "https://otel.example",
      0.1,
    ]);
  });

  test("bad values are named", () => {
    expect(problems(["--log-format", "xml"])[0]).toContain("--log-format");
    expect(problems(["--otlp-endpoint", "collector:4318"])[0]).toContain("--otlp-endpoint");
    expect(problems(["--otlp-sample-ratio", "1.5"])[0]).toContain("must be <= 1");
    expect(problems(["--otlp-sample-ratio", "-0.1"])[0]).toContain("--otlp-sample-ratio");
  });

  test("Deno and workerd refuse span export by name, from a flag or the environment, but take the default and the other two", () => {
    expect(problems(["--otlp-endpoint", "http://c:4318"], {}, "deno")).toEqual([
      expect.stringMatching(/^--otlp-endpoint: not available on Deno \(the OpenTelemetry exporter/),
    ]);
    expect(problems([], { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" }, "workerd")).toEqual([
      expect.stringMatching(/^--otlp-endpoint: not available on workerd/),
    ]);
    expect(problems(["--log-format", "json", "--otlp-sample-ratio", "0.5"], {}, "deno")).toEqual(
      [],
    );
    expect(problems(["--log-format", "json", "--otlp-sample-ratio", "0.5"], {}, "workerd")).toEqual(
      [],
    );
  });
});
