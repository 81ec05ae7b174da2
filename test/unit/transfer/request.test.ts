import { describe, expect, test } from "bun:test";
import { TransferError } from "../../../src/transfer/errors.ts";
import { parseTransferRequest, parseWireRequest } from "../../../src/transfer/request.ts";
import { thrownBy } from "../../support/errors.ts";

function refused(value: unknown): string {
  const e = thrownBy(TransferError, () => parseTransferRequest(value));
  expect(e.code).toBe("invalid-argument");
  return e.message;
}

describe("transfer request parsing", () => {
  test("the leader's serde JSON (capitalised pools, connector part) parses", () => {
    const json =
      '{"from_pool":"Disk","to_pool":"Device","blocks":[[3,0],[4,1]],"connector_req":{"request_id":"req-9","uuid":"5b8f","requirement":null,"request_type":"Immediate"}}';
    expect(parseWireRequest(new TextEncoder().encode(json))).toEqual({
      fromPool: "disk",
      toPool: "device",
      blocks: [
        [3, 0],
        [4, 1],
      ],
      connectorReq: {
        requestId: "req-9",
        uuid: "5b8f",
        requirement: null,
        requestType: "Immediate",
      },
    });
  });

  test("the agent's body (lowercase pools, no connector part) parses", () => {
    expect(parseTransferRequest({ from_pool: "host", to_pool: "disk", blocks: [] })).toEqual({
      fromPool: "host",
      toPool: "disk",
      blocks: [],
    });
    expect(
      parseTransferRequest({
        from_pool: "host",
        to_pool: "disk",
        blocks: [[0, 1]],
        connector_req: null,
      }).connectorReq,
    ).toBeUndefined();
  });

  test("bad fields are refused with the field named", () => {
    expect(refused({ from_pool: "gpu", to_pool: "disk", blocks: [] })).toContain("from_pool");
    expect(refused({ from_pool: "host", blocks: [] })).toContain("to_pool");
    expect(refused({ from_pool: "host", to_pool: "disk", blocks: [[0]] })).toContain("blocks");
    expect(refused({ from_pool: "host", to_pool: "disk", blocks: [[0, -1]] })).toContain(
      "blocks.0.1",
    );
    expect(refused({ from_pool: "host", to_pool: "disk", blocks: [[0, 1.5]] })).toContain(
      "integer",
    );
    expect(refused({ from_pool: "host", to_pool: "disk", blocks: [[0, 2 ** 32]] })).toContain(
      "uint32",
    );
    expect(refused({ from_pool: "host", to_pool: "disk", blocks: "0,1" })).toContain("blocks");
    expect(refused(null)).toContain("invalid transfer request");
  });

  test("a triple instead of a pair, or an unknown field, is refused by name (they were taken silently)", () => {
    expect(refused({ from_pool: "host", to_pool: "disk", blocks: [[0, 1, 2]] })).toContain(
      "blocks.0",
    );
    expect(refused({ from_pool: "host", to_pool: "disk", blocks: [[0, 1, 2]] })).toContain(
      "exactly two",
    );
    expect(
      refused({ from_pool: "host", to_pool: "disk", blocks: [[0, 1]], priority: 1 }),
    ).toContain("unknown field");
    expect(
      refused({
        from_pool: "host",
        to_pool: "disk",
        blocks: [[0, 1]],
        connector_req: { request_id: "r", uuid: "u", extra: 1 },
      }),
    ).toContain("unknown field");
    expect(
      parseTransferRequest({ from_pool: "host", to_pool: "disk", blocks: [[0, 1]] }).blocks,
    ).toEqual([[0, 1]]);
  });

  test("bytes that are not JSON are refused", () => {
    expect(() => parseWireRequest(new TextEncoder().encode("{"))).toThrow(/not JSON/);
  });
});
