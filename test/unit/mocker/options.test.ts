import { describe, expect, test } from "bun:test";
import {
  MOCKER_DEFAULTS,
  MockerOptionsError,
  parseMockerArgs,
  resolveMockerOptions,
} from "../../../src/mocker/options.ts";
import { thrownBy } from "../../support/errors.ts";

const problems = (fn: () => unknown): readonly string[] =>
  thrownBy(MockerOptionsError, fn).problems;

describe("mocker options", () => {
  test("defaults match the documented engine", () => {
    const c = resolveMockerOptions();
    expect(c).toMatchObject({
      port: 0,
      host: "127.0.0.1",
      dpRanks: 1,
      blockSize: 16,
      kvBlocks: 16384,
      eventBatchMs: 5,
      speedup: 1,
      maxConcurrency: 64,
      maxLoras: 4,
      model: "switchyard-sim",
      eventBufferSize: 1024,
    });
    expect(c.workerId).toBeUndefined();
    expect(c.prefillUsPerToken).toBe(MOCKER_DEFAULTS.prefillUsPerToken);
  });

  test("flags in both spellings become options", () => {
    const o = parseMockerArgs([
      "--port",
      "8001",
      "--dp-ranks=2",
      "--worker-id",
      "18446744073709551615",
      "--router-url",
      "http://r:1",
      "--lora",
      "a",
      "--lora=b",
      "--speedup",
      "2.5",
      "--model",
      "m",
    ]);
    expect(o).toEqual({
      port: 8001,
      dpRanks: 2,
      workerId: 18446744073709551615n,
      routerUrls: ["http://r:1"],
      loras: ["a", "b"],
      speedup: 2.5,
      model: "m",
    });
    expect(resolveMockerOptions(o).loras).toEqual(["a", "b"]);
  });

  test("--router-url is repeatable and takes comma lists; routerUrl still works; duplicates go", () => {
    const o = parseMockerArgs([
      "--router-url",
      "http://r:1",
      "--router-url=http://r:2/,http://r:3",
      "--router-url",
      "http://r:1/",
    ]);
    expect(o.routerUrls).toEqual(["http://r:1", "http://r:2/,http://r:3", "http://r:1/"]);
    expect(resolveMockerOptions(o).routerUrls).toEqual(["http://r:1", "http://r:2", "http://r:3"]);
    expect(
      resolveMockerOptions({ routerUrl: "http://a:1", routerUrls: ["http://b:2, http://a:1"] })
        .routerUrls,
    ).toEqual(["http://a:1", "http://b:2"]);
    expect(resolveMockerOptions().routerUrls).toEqual([]);
    expect(
      problems(() => resolveMockerOptions({ routerUrls: ["http://ok:1,nope", "ftp://x"] })),
    ).toEqual([
      '--router-url: not an http(s) URL (got "nope")',
      '--router-url: not an http(s) URL (got "ftp://x")',
    ]);
  });

  test("an unknown flag close to a known one says which was probably meant", () => {
    expect(problems(() => parseMockerArgs(["--advertize-url", "http://e:1"]))).toEqual([
      "--advertize-url: unknown flag; did you mean --advertise-url?",
    ]);
  });

  test("--advertise-url must be an http(s) URL", () => {
    expect(resolveMockerOptions({ advertiseUrl: "http://engine-1:8000" }).advertiseUrl).toBe(
      "http://engine-1:8000",
    );
    expect(problems(() => resolveMockerOptions({ advertiseUrl: "engine-1:8000" }))[0]).toContain(
      "--advertise-url: must be an http:// or https:// URL",
    );
  });

  test("every bad flag is reported at once", () => {
    expect(
      problems(() =>
        parseMockerArgs(["--nope", "1", "--port", "x", "--worker-id", "-1", "stray", "--seed"]),
      ),
    ).toEqual([
      "--nope: unknown flag",
      '--port: not a number ("x")',
      '--worker-id: must be a decimal u64 ("-1")',
      'unexpected argument "stray"',
      "--seed: needs a value",
    ]);
    const p = problems(() =>
      resolveMockerOptions({
        blockSize: 0,
        speedup: 0,
        kvBlocks: 1.5,
        routerUrl: "::",
        maxLoras: 1,
        loras: ["a", "b"],
      }),
    );
    expect(p.length).toBe(5);
    expect(p.join("\n")).toContain("--block-size");
    expect(p.join("\n")).toContain("--speedup");
    expect(p.join("\n")).toContain("--kv-blocks");
    expect(p.join("\n")).toContain("--router-url");
    expect(p.join("\n")).toContain("--max-loras");
  });
});

describe("mocker models and tokenizer", () => {
  test("--model is repeatable and takes comma lists; the first is the default; --tokenizer is a directory", () => {
    const o = parseMockerArgs(["--model", "a", "--model", "b,c", "--tokenizer", "/tok"]);
    expect(o).toEqual({ model: "a", models: ["b", "c"], tokenizer: "/tok" });
    const c = resolveMockerOptions(o);
    expect(c.model).toBe("a");
    expect(c.models).toEqual(["a", "b", "c"]);
    expect(c.tokenizer).toBe("/tok");
    expect(resolveMockerOptions().models).toEqual(["switchyard-sim"]);
    expect(resolveMockerOptions().tokenizer).toBeUndefined();
  });

  test("an adapter may not share a base model's name", () => {
    expect(
      problems(() => resolveMockerOptions({ model: "a", models: ["b"], loras: ["b"] })),
    ).toEqual(["--lora: names must be non-empty and differ from every --model"]);
  });
});
