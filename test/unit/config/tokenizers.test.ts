import { describe, expect, test } from "bun:test";
import { loadConfig } from "../../../src/config/load.ts";
import { parseTokenizerSpec } from "../../../src/config/tokenizers.ts";

describe("--tokenizer", () => {
  test("PATH is the default, MODEL=PATH one model's", () => {
    expect(parseTokenizerSpec("/models/llama")).toEqual({ model: undefined, path: "/models/llama" });
    expect(parseTokenizerSpec("llama=/models/llama")).toEqual({ model: "llama", path: "/models/llama" });
    expect(typeof parseTokenizerSpec("=/x")).toBe("string");
    expect(typeof parseTokenizerSpec("m=")).toBe("string");
  });

  test("repeatable flag, comma list in the env; one default and one entry per model at most", () => {
    expect(loadConfig({ argv: ["--tokenizer", "/a", "--tokenizer", "m=/b"], env: {} }).tokenizers).toEqual([{ model: undefined, path: "/a" }, { model: "m", path: "/b" }]);
    expect(loadConfig({ argv: [], env: { SWITCHYARD_TOKENIZER: "m=/b, n=/c" } }).tokenizers).toEqual([{ model: "m", path: "/b" }, { model: "n", path: "/c" }]);
    expect(loadConfig({ argv: [], env: {} }).tokenizers).toEqual([]);
    expect(() => loadConfig({ argv: ["--tokenizer", "/a", "--tokenizer", "/b"], env: {} })).toThrow("only one default PATH");
    expect(() => loadConfig({ argv: ["--tokenizer", "m=/a", "--tokenizer", "m=/b"], env: {} })).toThrow("model m is given twice");
  });
});
