import { expect, test } from "bun:test";
import { endpointForDpRank } from "../../../../../src/runtime/bun/zmq/endpoints.ts";

test("rank 0 keeps the endpoint; tcp ranks add the rank to the port (IPv6 hosts too)", () => {
  expect(endpointForDpRank("tcp://10.0.0.5:5557", 0)).toBe("tcp://10.0.0.5:5557");
  expect(endpointForDpRank("tcp://10.0.0.5:5557", 3)).toBe("tcp://10.0.0.5:5560");
  expect(endpointForDpRank("tcp://[::1]:5557", 1)).toBe("tcp://[::1]:5558");
});

test("inproc endpoints get a _dp<rank> suffix; ipc endpoints are left alone", () => {
  expect(endpointForDpRank("inproc://kv", 2)).toBe("inproc://kv_dp2");
  expect(endpointForDpRank("ipc:///tmp/kv", 2)).toBe("ipc:///tmp/kv");
});

test("a tcp endpoint without a port, or a bad rank, is an error", () => {
  expect(() => endpointForDpRank("tcp://host", 1)).toThrow(/tcp:\/\/host:port/);
  expect(() => endpointForDpRank("tcp://h:5557", -1)).toThrow(/non-negative/);
});
