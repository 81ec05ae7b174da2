import { describe, expect, test } from "bun:test";
import { outputBooking, withOutputCap } from "../../../src/protect/output-cap.ts";

describe("outputBooking", () => {
  test("an ask is booked as is (the limiter refuses it when it passes the limit)", () => {
    expect(outputBooking(300, { n: 3 }, 256, 1000)).toEqual({ booked: 300, perChoice: 100 });
    expect(outputBooking(5000, {}, 256, 1000)).toEqual({ booked: 5000, perChoice: 5000 });
  });
  test("no ask: the tenant's default, never more than the per-minute limit, split among the choices", () => {
    expect(outputBooking(undefined, {}, 256, 1000)).toEqual({ booked: 256, perChoice: 256 });
    expect(outputBooking(undefined, {}, 256, 100)).toEqual({ booked: 100, perChoice: 100 });
    expect(outputBooking(undefined, { n: 4 }, 256, 100)).toEqual({ booked: 100, perChoice: 25 });
    // More choices than the limit holds: one token each, past the limit (refused as too large).
    expect(outputBooking(undefined, { n: 8 }, 256, 5)).toEqual({ booked: 8, perChoice: 1 });
  });
});

describe("withOutputCap", () => {
  test("every field the route's engine reads its cap from", () => {
    expect(withOutputCap("/v1/chat/completions", { max_completion_tokens: 9000, x: 1 }, 7)).toEqual(
      { max_completion_tokens: 7, max_tokens: 7, x: 1 },
    );
    expect(withOutputCap("/v1/completions", { prompt: "p" }, 7)).toEqual({
      prompt: "p",
      max_tokens: 7,
    });
    expect(withOutputCap("/v1/responses", { input: "p", max_output_tokens: 1e6 }, 7)).toEqual({
      input: "p",
      max_output_tokens: 7,
    });
    expect(
      withOutputCap(
        "/generate",
        { text: "p", sampling_params: { temperature: 0, max_new_tokens: 1e6 } },
        7,
      ),
    ).toEqual({ text: "p", sampling_params: { temperature: 0, max_new_tokens: 7 } });
    expect(withOutputCap("/generate", { text: "p" }, 7)).toEqual({
      text: "p",
      sampling_params: { max_new_tokens: 7 },
    });
  });
});
