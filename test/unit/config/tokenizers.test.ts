import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../../src/config/load.ts";
import { parseTokenizerSpec } from "../../../src/config/tokenizers.ts";

describe("--tokenizer", () => {
  test("PATH is the default, MODEL=PATH one model's", () => {
    expect(parseTokenizerSpec("/models/llama")).toEqual({
      model: undefined,
      path: "/models/llama",
    });
    expect(parseTokenizerSpec("llama=/models/llama")).toEqual({
      model: "llama",
      path: "/models/llama",
    });
    expect(typeof parseTokenizerSpec("=/x")).toBe("string");
    expect(typeof parseTokenizerSpec("m=")).toBe("string");
  });

  test("repeatable flag, comma list in the env; one default and one entry per model at most", () => {
    expect(
      loadConfig({ argv: ["--tokenizer", "/a", "--tokenizer", "m=/b"], env: {} }).tokenizers,
    ).toEqual([
      { model: undefined, path: "/a" },
      { model: "m", path: "/b" },
    ]);
    expect(
      loadConfig({ argv: [], env: { SWITCHYARD_TOKENIZER: "m=/b, n=/c" } }).tokenizers,
    ).toEqual([
      { model: "m", path: "/b" },
      { model: "n", path: "/c" },
    ]);
    expect(loadConfig({ argv: [], env: {} }).tokenizers).toEqual([]);
    expect(() => loadConfig({ argv: ["--tokenizer", "/a", "--tokenizer", "/b"], env: {} })).toThrow(
      "only one default PATH",
    );
    expect(() =>
      loadConfig({ argv: ["--tokenizer", "m=/a", "--tokenizer", "m=/b"], env: {} }),
    ).toThrow("model m is given twice");
  });

  test("a config file gives a list, one path, or {MODEL: PATH}", () => {
    const dir = mkdtempSync(join(tmpdir(), "switchyard-tok-"));
    const file = (name: string, value: unknown) => {
      const f = join(dir, name);
      writeFileSync(f, JSON.stringify(value));
      return f;
    };
    const load = (f: string) => loadConfig({ argv: ["--config", f], env: {} }).tokenizers;
    expect(load(file("a.json", { tokenizers: { llama: "/m/llama", qwen: "/m/qwen" } }))).toEqual([
      { model: "llama", path: "/m/llama" },
      { model: "qwen", path: "/m/qwen" },
    ]);
    expect(load(file("b.json", { tokenizer: "/m/default" }))).toEqual([
      { model: undefined, path: "/m/default" },
    ]);
    expect(load(file("c.json", { tokenizers: ["/m/d", "x=/m/x"] }))).toEqual([
      { model: undefined, path: "/m/d" },
      { model: "x", path: "/m/x" },
    ]);
  });
});
