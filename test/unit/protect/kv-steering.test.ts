import { describe, expect, test } from "bun:test";
import { RouterError } from "../../../src/core/errors.ts";
import {
  KV_STEERING_FIELDS,
  kvSteeringField,
  refuseKvSteering,
} from "../../../src/protect/kv-steering.ts";

describe("a client's KV-steering fields", () => {
  test("each field at the top level is named, null and empty values included", () => {
    for (const f of KV_STEERING_FIELDS) {
      expect(kvSteeringField({ model: "m", [f]: { remote_host: "10.0.0.1" } })).toBe(f);
      expect(kvSteeringField({ [f]: null })).toBe(f);
      expect(kvSteeringField({ [f]: {} })).toBe(f);
    }
    expect(kvSteeringField({ vllm_xargs: { kv_transfer_params: "x" } })).toBe(
      "vllm_xargs.kv_transfer_params",
    );
  });

  test("other bodies pass: the same words inside text, other vllm_xargs, a P/D-free body", () => {
    expect(kvSteeringField({ model: "m", prompt: "kv_transfer_params" })).toBeUndefined();
    expect(
      kvSteeringField({ messages: [{ role: "user", content: "x", kv_transfer_params: {} }] }),
    ).toBeUndefined();
    expect(kvSteeringField({ vllm_xargs: { my_arg: 1 } })).toBeUndefined();
    expect(kvSteeringField({ vllm_xargs: null })).toBeUndefined();
    expect(kvSteeringField({})).toBeUndefined();
  });

  test("refused as a 400 naming the field and the flag; trusted, it passes", () => {
    let e: unknown;
    try {
      refuseKvSteering({ bootstrap_host: "evil" }, false);
    } catch (x) {
      e = x;
    }
    expect(e).toBeInstanceOf(RouterError);
    const r = e as RouterError;
    expect(r.code).toBe("invalid_request");
    expect(r.message).toStartWith("bootstrap_host: set by the router");
    expect(r.message).toContain("--trust-kv-transfer-params");
    expect(() => refuseKvSteering({ bootstrap_host: "evil" }, true)).not.toThrow();
    expect(() => refuseKvSteering({ prompt: "x" }, false)).not.toThrow();
  });
});
