/**
 * What `--version` and GET /version report: package.json's version, the commit the compile
 * step defined (unknown from source), the runtime's user agent (named for people in --version).
 */
import { describe, expect, test } from "bun:test";
import pkg from "../../../package.json" with { type: "json" };
import { buildInfo, runtimeName, versionLine } from "../../../src/core/build-info.ts";

describe("buildInfo", () => {
  test("from source: package.json's version, commit unknown, this Bun's user agent", () => {
    expect(buildInfo()).toEqual({
      version: pkg.version,
      commit: "unknown",
      runtime: `Bun/${Bun.version}`,
    });
  });

  test("the runtime from each runtime's user agent", () => {
    expect(runtimeName("Bun/1.4.5")).toBe("bun 1.4.5");
    expect(runtimeName("Deno/2.9.6")).toBe("deno 2.9.6");
    expect(runtimeName("Cloudflare-Workers")).toBe("workerd");
    expect(runtimeName(undefined)).toBe("unknown");
  });

  test("the --version line", () => {
    expect(versionLine({ version: "1.2.3", commit: "abc1234", runtime: "Bun/1.4.5" })).toBe(
      "switchyard 1.2.3 (abc1234, bun 1.4.5)",
    );
  });
});
