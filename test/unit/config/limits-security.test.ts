import { describe, expect, test } from "bun:test";
import { ConfigError, loadConfig } from "../../../src/config/load.ts";
import { thrownBy } from "../../support/errors.ts";

describe("limits and security options (issue 12)", () => {
  test("defaults: 100000 sessions, 256-character ids, no allowlists, no engine token", () => {
    const c = loadConfig({ argv: [], env: {} });
    expect(c).toMatchObject({
      maxSessions: 100_000,
      maxSessionIdLength: 256,
      loraAllow: [],
      workerAllow: [],
    });
    expect(c.engineToken).toBeUndefined();
  });
  test("flags, env lists and repeats", () => {
    const c = loadConfig({
      argv: [
        "--max-sessions",
        "10",
        "--max-session-id-length",
        "64",
        "--lora-allow",
        "team-a-*",
        "--lora-allow",
        "sql",
        "--engine-token",
        "eng",
      ],
      env: { SWITCHYARD_WORKER_ALLOW: "http://10.0.0.*:8000, https://gpu-*.internal" },
    });
    expect(c).toMatchObject({
      maxSessions: 10,
      maxSessionIdLength: 64,
      loraAllow: ["team-a-*", "sql"],
      engineToken: "eng",
    });
    expect(c.workerAllow).toEqual(["http://10.0.0.*:8000", "https://gpu-*.internal"]);
  });
  test("bad values are named", () => {
    const p = thrownBy(ConfigError, () =>
      loadConfig({ argv: ["--max-sessions", "0", "--max-session-id-length", "x"], env: {} }),
    ).problems.join("\n");
    expect(p).toContain("--max-sessions");
    expect(p).toContain("--max-session-id-length");
  });
});
