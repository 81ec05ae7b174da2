import { describe, expect, test } from "bun:test";
import { LoraRegistry } from "../../../src/mocker/lora.ts";
import { SessionRegistry } from "../../../src/mocker/sessions.ts";

describe("LoraRegistry", () => {
  test("loads up to --max-loras, then refuses with a 400 naming the limit", () => {
    const r = new LoraRegistry(2, "base");
    expect(r.load("a", "/p/a").ok).toBe(true);
    expect(r.load("b", "/p/b").ok).toBe(true);
    const full = r.load("c", "/p/c");
    expect(full).toMatchObject({ ok: false, status: 400 });
    expect(full.message).toContain("--max-loras");
    expect(r.list()).toEqual(["a", "b"]);
  });
  test("loading twice is a 400, unloading an unknown adapter a 404, as vLLM answers", () => {
    const r = new LoraRegistry(4, "base", ["a"]);
    expect(r.load("a", "x")).toMatchObject({ ok: false, status: 400 });
    expect(r.load("base", "x")).toMatchObject({ ok: false, status: 400 });
    expect(r.unload("zz")).toMatchObject({ ok: false, status: 404 });
    expect(r.unload("a").ok).toBe(true);
    expect(r.has("a")).toBe(false);
    expect(r.load("a", "x").ok).toBe(true);
  });
});

describe("SessionRegistry", () => {
  test("counts every open and close, so a double close is visible", () => {
    const s = new SessionRegistry();
    s.open("s1", 60, 1000);
    s.close("s1", 2000);
    s.close("s1", 3000);
    s.close("never-opened", 3000);
    expect(s.get("s1", 3000)).toMatchObject({
      open: false,
      opened_count: 1,
      closed_count: 2,
      timeout: 60,
    });
    expect(s.get("never-opened", 3000)).toMatchObject({
      open: false,
      opened_count: 0,
      closed_count: 1,
    });
    expect(s.openCount).toBe(0);
  });
  test("an open session unused past its timeout is reported expired; use keeps it alive", () => {
    const s = new SessionRegistry();
    s.open("s", 10, 0);
    expect(s.get("s", 9_000)!.expired).toBe(false);
    s.touch("s", 9_000);
    expect(s.get("s", 18_000)!.expired).toBe(false);
    expect(s.get("s", 19_001)!.expired).toBe(true);
    expect(s.list(0).map((x) => x.session_id)).toEqual(["s"]);
  });
});
