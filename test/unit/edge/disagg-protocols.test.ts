import { describe, expect, test } from "bun:test";
import { WorkerRoles } from "../../../src/edge/disagg/roles.ts";
import {
  bootstrapHostOf,
  bootstrapRoom,
  sglangBody,
} from "../../../src/edge/disagg/sglang-protocol.ts";
import {
  kvTransferParamsOf,
  vllmDecodeBody,
  vllmPrefillBody,
} from "../../../src/edge/disagg/vllm-protocol.ts";
import { WorkerRegistry } from "../../../src/fleet/registry.ts";

describe("vLLM P/D bodies (as toy_proxy_server.py)", () => {
  test("the prefill body asks for a remote decode, one token, no stream, no min tokens; the decode body carries the answer's params", () => {
    const client = {
      model: "m",
      prompt: "hi",
      max_tokens: 50,
      max_completion_tokens: 50,
      stream: true,
      stream_options: { include_usage: true },
      min_tokens: 3,
      min_completion_tokens: 2,
      temperature: 0,
    };
    expect(vllmPrefillBody(client)).toEqual({
      model: "m",
      prompt: "hi",
      max_tokens: 1,
      max_completion_tokens: 1,
      stream: false,
      temperature: 0,
      kv_transfer_params: {
        do_remote_decode: true,
        do_remote_prefill: false,
        remote_engine_id: null,
        remote_block_ids: null,
        remote_host: null,
        remote_port: null,
      },
    });
    expect(client.stream).toBe(true); // the client's object is not changed
    expect("max_completion_tokens" in vllmPrefillBody({ prompt: "x" })).toBe(false);
    const params = kvTransferParamsOf({
      kv_transfer_params: { do_remote_prefill: true, remote_block_ids: [1, 2] },
    });
    expect(vllmDecodeBody(client, params)).toEqual({
      ...client,
      kv_transfer_params: { do_remote_prefill: true, remote_block_ids: [1, 2] },
    });
    expect(kvTransferParamsOf({ kv_transfer_params: {} })).toBeUndefined();
    expect(kvTransferParamsOf({})).toBeUndefined();
    expect(vllmDecodeBody(client, undefined)).toEqual(client);
  });
});

describe("SGLang P/D body (as mini_lb.py)", () => {
  test("bootstrap host, port and a room in 0..2^53-1", () => {
    let i = 0;
    const draws = [0xffff_ffff, 0xffff_ffff, 0, 7];
    const rand = () => draws[i++]!;
    expect(bootstrapRoom(rand)).toBe(2 ** 53 - 1);
    expect(bootstrapRoom(rand)).toBe(7);
    expect(sglangBody({ prompt: "x" }, { host: "10.0.0.1", port: 8998, room: 5 })).toEqual({
      prompt: "x",
      bootstrap_host: "10.0.0.1",
      bootstrap_port: 8998,
      bootstrap_room: 5,
    });
    expect(bootstrapHostOf("http://10.0.0.1:30000")).toBe("10.0.0.1");
    expect(bootstrapHostOf("http://[::1]:30000")).toBe("[::1]");
  });
});

describe("WorkerRoles", () => {
  test("flags and registrations win over engine info; pools hold healthy workers; both = decode", () => {
    const reg = new WorkerRegistry();
    reg.add(1n, "http://a:1", 1);
    reg.add(2n, "http://b:1", 1);
    reg.add(3n, "http://c:1/", 1);
    reg.add(4n, "http://d:1", 1);
    const roles = new WorkerRoles();
    roles.set("http://A:1", "prefill"); // normalized
    roles.learn("http://a:1", { role: "decode" });
    roles.learn("http://b:1", { role: "prefill", bootstrapPort: 9000 });
    roles.learn("http://c:1", { role: "decode" });
    expect(roles.roleOf("http://a:1")).toBe("prefill");
    expect(roles.roleOf("http://d:1")).toBe("both");
    expect(roles.bootstrapPortOf("http://b:1")).toBe(9000);
    let p = roles.pools(reg);
    expect([...p.prefill].sort()).toEqual([1n, 2n]);
    expect([...p.decode].sort()).toEqual([3n, 4n]);
    reg.setHealthy(2n, false);
    p = roles.pools(reg);
    expect([...p.prefill]).toEqual([1n]);
  });
});
