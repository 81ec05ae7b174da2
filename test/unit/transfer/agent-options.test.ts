import { describe, expect, test } from "bun:test";
import { parseTransferAgentArgs } from "../../../src/transfer/agent-options.ts";

describe("switchyard transfer flags", () => {
  test("no flags: small pools that can be tried at once (64 device, 128 host, 128 disk in a temp file)", () => {
    const o = parseTransferAgentArgs([], {});
    expect([o.deviceBlocks, o.hostBlocks, o.diskBlocks]).toEqual([64, 128, 128]);
    expect(o.diskPath).toBeUndefined();
    expect(o.layout).toEqual({
      kind: "fully-contiguous",
      numLayers: 2,
      outerDim: 2,
      pageSize: 16,
      innerDim: 1024,
      elemBytes: 2,
    });
    expect(o.backend).toBe("auto");
    expect(o.maxBatchSize).toBe(16);
    expect(o.worldSize).toBe(1);
    expect(o.adminToken).toBeUndefined();
  });

  test("flags and env are read", () => {
    const o = parseTransferAgentArgs(
      [
        "--port",
        "0",
        "--disk-path",
        "/data/kv.bin",
        "--layout",
        "layer-separate",
        "--num-layers",
        "32",
        "--backend",
        "cpu",
        "--no-direct-io",
        "--world-size",
        "3",
        "--rank",
        "2",
        "--group",
        "kv-1",
      ],
      { SWITCHYARD_ADMIN_TOKEN: "secret-token", DYN_KVBM_MAX_TRANSFER_BATCH_SIZE: "32" },
    );
    expect(o.port).toBe(0);
    expect(o.diskPath).toBe("/data/kv.bin");
    expect(o.layout.kind).toBe("layer-separate");
    expect(o.layout.numLayers).toBe(32);
    expect(o.directIo).toBe(false);
    expect(o.adminToken).toBe("secret-token");
    expect(o.maxBatchSize).toBe(32);
    expect([o.rank, o.worldSize, o.group]).toEqual([2, 3, "kv-1"]);
    expect(
      parseTransferAgentArgs(["--admin-token", "flag-token-1"], {
        SWITCHYARD_ADMIN_TOKEN: "env-token-1",
      }).adminToken,
    ).toBe("flag-token-1");
  });

  test("every bad flag is reported in one error", () => {
    let message = "";
    try {
      parseTransferAgentArgs(
        [
          "--port",
          "http",
          "--layout",
          "diagonal",
          "--rank",
          "3",
          "--world-size",
          "3",
          "--admin-token",
          "short",
        ],
        {},
      );
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toContain("--port");
    expect(message).toContain("--layout");
    expect(message).toContain("0 <= rank < world size");
    expect(message).toContain("--group is required");
    expect(message).toContain("--admin-token");
  });

  test("an unknown flag is an error with the usage", () => {
    expect(() => parseTransferAgentArgs(["--gpus", "8"], {})).toThrow(
      /switchyard transfer \[flags\]/,
    );
  });
});
