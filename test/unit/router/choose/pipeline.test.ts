import { describe, expect, test } from "bun:test";
import { runPipeline } from "../../../../src/router/choose/pipeline.ts";
import type { CostTerm, Filter, Pipeline } from "../../../../src/router/choose/types.ts";
import { minCostPicker } from "../../../../src/router/choose/pickers/min-cost.ts";
import { routerErrorCode as errorCode } from "../../../support/errors.ts";
import { candidate, context } from "./helpers.ts";

const byId: CostTerm = { type: "by-id", cost: (_ctx, c) => Number(c.endpoint.worker.workerId) };
const constant: CostTerm = { type: "const", cost: () => 10 };
const dropOdd: Filter = {
  type: "drop-odd",
  filter: (_ctx, cs) => cs.filter((c) => c.endpoint.worker.workerId % 2n === 0n),
};
const dropAll: Filter = { type: "drop-all", whenEmpty: "lora_no_capacity", filter: () => [] };

function pipeline(p: Partial<Pipeline>): Pipeline {
  return {
    name: "t",
    filters: [],
    costs: [{ term: byId, weight: 1 }],
    picker: minCostPicker(),
    ...p,
  };
}

describe("pipeline: filters → Σ weight·cost → picker", () => {
  test("costs are the weighted sum of the terms, set on the survivors", () => {
    const cs = [candidate(1), candidate(2), candidate(3)];
    const r = runPipeline(
      pipeline({
        costs: [
          { term: byId, weight: -2 },
          { term: constant, weight: 0.5 },
        ],
      }),
      context(),
      cs,
    );
    expect(r.candidates.map((c) => c.cost)).toEqual([3, 1, -1]);
    expect(r.chosen.key).toBe("3:0");
  });

  test("filters run in order and narrow the set before costing", () => {
    const cs = [candidate(1), candidate(2), candidate(3), candidate(4)];
    const r = runPipeline(pipeline({ filters: [dropOdd] }), context(), cs);
    expect(r.candidates.map((c) => c.key)).toEqual(["2:0", "4:0"]);
    expect(r.chosen.key).toBe("2:0");
  });

  test("a filter that leaves nothing ends the run with its error code (default no_endpoints)", () => {
    expect(
      errorCode(() => runPipeline(pipeline({ filters: [dropAll] }), context(), [candidate(1)])),
    ).toBe("lora_no_capacity");
    expect(
      errorCode(() => runPipeline(pipeline({ filters: [dropOdd] }), context(), [candidate(1)])),
    ).toBe("no_endpoints");
  });

  test("no candidates at all is no_endpoints", () => {
    expect(errorCode(() => runPipeline(pipeline({}), context(), []))).toBe("no_endpoints");
  });
});
