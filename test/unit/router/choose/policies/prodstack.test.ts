import { describe, expect, test } from "bun:test";
import { HashRing } from "../../../../../src/router/choose/policies/consistent-hash-ring.ts";
import {
  prodstackPrefixPicker,
  prodstackSessionPicker,
} from "../../../../../src/router/choose/policies/prodstack.ts";
import { candidate, chain, context, request, seededRng } from "../helpers.ts";

const BS = 16;

describe("production-stack prefixaware", () => {
  test("no load term: every request sharing a first block follows the first one, however loaded", () => {
    const p = prodstackPrefixPicker();
    const counts = new Map<string, number>();
    const rng = seededRng(3);
    for (let i = 0; i < 50; i++) {
      const cs = [1, 2, 3, 4].map((w) =>
        candidate(w, { activeRequests: counts.get(`${w}:0`) ?? 0 }),
      );
      const prompt = new BigUint64Array(4);
      prompt.set(chain(1, 1));
      prompt.set(chain(100 + i, 3, 1), 1);
      const c = p.pick(context({ rng, request: request({ isl: 4 * BS, seqHashes: prompt }) }), cs);
      counts.set(c.key, (counts.get(c.key) ?? 0) + 1);
    }
    expect([...counts.values()]).toEqual([50]);
  });

  test("the longest match wins; nothing matched: uniform over all candidates", () => {
    const p = prodstackPrefixPicker();
    const cs = [candidate(1), candidate(2), candidate(3)];
    p.trie.record(cs[0]!.key, chain(1, 2));
    p.trie.record(cs[2]!.key, chain(1, 5));
    expect(p.pick(context({ request: request({ seqHashes: chain(1, 6) }) }), cs).key).toBe(
      cs[2]!.key,
    );
    const seen = new Set<string>();
    for (let s = 1; s <= 30; s++)
      seen.add(
        prodstackPrefixPicker().pick(
          context({ rng: seededRng(s), request: request({ seqHashes: chain(9, 3) }) }),
          cs,
        ).key,
      );
    expect(seen.size).toBe(3);
  });
});

describe("production-stack session", () => {
  test("a session id always maps to the same endpoint, whatever the load", () => {
    const p = prodstackSessionPicker();
    const first = p.pick(context({ request: request({ sessionId: "chat-42" }) }), [
      candidate(1),
      candidate(2),
      candidate(3),
    ]);
    for (let i = 0; i < 10; i++) {
      const cs = [1, 2, 3].map((w) =>
        candidate(w, { activeRequests: w === Number(first.key.split(":")[0]) ? 100 : 0 }),
      );
      expect(
        p.pick(context({ now: i * 1000, request: request({ sessionId: "chat-42" }) }), cs).key,
      ).toBe(first.key);
    }
  });

  test("consistent hashing: removing one endpoint moves only its own sessions", () => {
    const ring = new HashRing();
    const nodes = ["1:0", "2:0", "3:0", "4:0"];
    ring.setNodes(nodes);
    const before = Array.from({ length: 2000 }, (_, i) => ring.nodeFor(`s${i}`)!);
    const share = nodes.map((n) => before.filter((x) => x === n).length / before.length);
    for (const s of share) expect(s).toBeGreaterThan(0.15); // 160 points per node: roughly even
    ring.setNodes(["1:0", "2:0", "4:0"]);
    before.forEach((n, i) => {
      if (n !== "3:0") expect(ring.nodeFor(`s${i}`)).toBe(n);
    });
  });

  test("without a session id: the endpoint with the lowest recent request rate", () => {
    const p = prodstackSessionPicker();
    const cs = [candidate(1), candidate(2), candidate(3)];
    const picks = [0, 1, 2].map((i) => p.pick(context({ now: i, request: request() }), cs).key);
    expect(new Set(picks).size).toBe(3);
  });
});
