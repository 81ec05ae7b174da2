/**
 * The keys file kept in force: read at start (a bad file stops the start), re-read on a change
 * notification or a poll, a bad file later keeps the last good keys and is logged once with
 * the entry and field, and nothing re-applies while the text is unchanged.
 */
import { describe, expect, test } from "bun:test";
import { sha256Hex } from "../../../src/protect/key-set.ts";
import { KeysWatch } from "../../../src/protect/keys-watch.ts";

const H1 = await sha256Hex("sk-one");
const H2 = await sha256Hex("sk-two");

function setup(initial: string) {
  let text = initial;
  let reads = 0;
  const ticks: (() => void)[] = [];
  let changed: (() => void) | undefined;
  const errors: string[] = [];
  const applied: number[] = [];
  const watch = new KeysWatch({
    path: "/etc/switchyard/keys.json",
    source: {
      read: async () => {
        reads++;
        if (text === "<gone>") throw new Error("ENOENT");
        return text;
      },
      parse: (t) => JSON.parse(t),
      watchDir: (dir, onChange) => {
        expect(dir).toBe("/etc/switchyard");
        changed = onChange;
        return () => (changed = undefined);
      },
    },
    pollMs: 1000,
    every: (_ms, fn) => {
      ticks.push(fn);
      return () => ticks.splice(0);
    },
    log: { info() {}, error: (m) => errors.push(m) },
    onChange: (k) => applied.push(k.size),
  });
  return {
    watch,
    set: (t: string) => (text = t),
    tick: () => ticks.forEach((f) => f()),
    notify: () => changed?.(),
    errors,
    applied,
    reads: () => reads,
  };
}

const doc = (...keys: [string, string][]) =>
  JSON.stringify({ keys: keys.map(([tenant, key_sha256]) => ({ tenant, key_sha256 })) });

describe("KeysWatch", () => {
  test("start reads and applies; a change is picked up on notification or poll", async () => {
    const s = setup(doc(["a", H1]));
    const keys = await s.watch.start();
    expect(keys.size).toBe(1);
    s.set(doc(["a", H1], ["b", H2]));
    s.notify();
    await s.watch.check();
    expect(s.watch.keys!.size).toBe(2);
    expect((await s.watch.keys!.lookup("sk-two"))?.name).toBe("b");
    s.set(doc(["b", H2]));
    s.tick();
    await s.watch.check();
    expect(await s.watch.keys!.lookup("sk-one")).toBeUndefined();
    expect(s.applied).toEqual([1, 2, 1]);
  });

  test("a bad file later keeps the last good keys, logs the entry and field once", async () => {
    const s = setup(doc(["a", H1]));
    await s.watch.start();
    s.set(
      JSON.stringify({
        keys: [
          { tenant: "a", key_sha256: H1 },
          { tenant: "b", key_sha256: "nope" },
        ],
      }),
    );
    await s.watch.check();
    await s.watch.check();
    expect((await s.watch.keys!.lookup("sk-one"))?.name).toBe("a");
    expect(s.errors.length).toBe(1);
    expect(s.errors[0]).toContain("keys[1].key_sha256");
    expect(s.errors[0]).toContain("keeping the 1 keys in force");
    s.set("<gone>");
    await s.watch.check();
    expect(s.errors.at(-1)).toContain("cannot read");
    expect(s.watch.keys!.size).toBe(1);
  });

  test("a bad file at start stops the start, naming the problem", async () => {
    await expect(setup("{not json").watch.start()).rejects.toThrow(
      /--api-keys \/etc\/switchyard\/keys.json: cannot parse/,
    );
    await expect(setup(JSON.stringify([{ tenant: "a" }])).watch.start()).rejects.toThrow(
      /keys\[0\]\.key_sha256/,
    );
    await expect(setup("<gone>").watch.start()).rejects.toThrow(/cannot read/);
  });

  test("an unchanged text is not applied again", async () => {
    const s = setup(doc(["a", H1]));
    await s.watch.start();
    s.tick();
    await s.watch.check();
    expect(s.applied).toEqual([1]);
    expect(s.reads()).toBeGreaterThanOrEqual(2);
    s.watch.stop();
  });
});
