import { describe, expect, test } from "bun:test";
import { RestartDetector } from "../../../src/fleet/restart-detector.ts";

describe("RestartDetector", () => {
  test("reports a changed instance once, not the first sight, a silent engine or a failed probe", async () => {
    let answer: string | undefined | Error = "a";
    const seen: string[] = [];
    const d = new RestartDetector({
      probe: async () => {
        if (answer instanceof Error) throw answer;
        return answer;
      },
      onRestart: (id, prev, cur) => void seen.push(`${id}:${prev}->${cur}`),
    });
    const signal = new AbortController().signal;
    expect(await d.check(1n, "http://e", signal)).toBe(false); // first sight: the baseline
    expect(await d.check(1n, "http://e", signal)).toBe(false);
    answer = new Error("down");
    expect(await d.check(1n, "http://e", signal)).toBe(false);
    answer = undefined; // an engine that does not say who it is
    expect(await d.check(1n, "http://e", signal)).toBe(false);
    answer = "b";
    expect(await d.check(1n, "http://e", signal)).toBe(true);
    expect(await d.check(1n, "http://e", signal)).toBe(false);
    expect(seen).toEqual(["1:a->b"]);
    expect(d.restarts).toBe(1);
    d.forget(1n);
    answer = "c";
    expect(await d.check(1n, "http://e", signal)).toBe(false); // forgotten: a new baseline
  });
});
