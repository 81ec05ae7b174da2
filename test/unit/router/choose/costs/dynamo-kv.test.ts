import { describe, expect, test } from "bun:test";
import {
  dynamoKvCost,
  explainDynamoKvCost,
} from "../../../../../src/router/choose/costs/dynamo-kv.ts";
import { candidate, context } from "../helpers.ts";

describe("dynamo-kv cost (§4.4)", () => {
  test("weight × prefillTokens / blockSize + decodeBlocks, fractional prefill blocks kept", () => {
    const c = candidate(1, { prefillTokens: 40, decodeBlocks: 3 });
    expect(dynamoKvCost.cost(context({ blockSize: 16 }), c)).toBe(2.5 + 3);
    expect(dynamoKvCost.cost(context({ blockSize: 16, overlapScoreWeight: 2 }), c)).toBe(5 + 3);
    expect(dynamoKvCost.cost(context({ blockSize: 16, overlapScoreWeight: 0 }), c)).toBe(3);
  });

  test("the explanation shows the arithmetic", () => {
    const c = candidate(3, { prefillTokens: 40, decodeBlocks: 3, overlapBlocks: 2 });
    expect(explainDynamoKvCost(context({ blockSize: 16 }), c)).toStartWith(
      "cost=5.500 = 1·40/16 + 3 (worker=3:0 overlap=2",
    );
  });
});
