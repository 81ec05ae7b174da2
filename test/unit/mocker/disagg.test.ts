import { describe, expect, test } from "bun:test";
import { blockMatches, fillBlock } from "../../../src/mocker/kv-content.ts";
import { parseDisaggDirective } from "../../../src/mocker/disagg-request.ts";
import { type GenerateRequest, MockEngine } from "../../../src/mocker/engine.ts";
import {
  resolveMockerOptions,
  parseMockerArgs,
  type MockerOptions,
} from "../../../src/mocker/options.ts";
import { VirtualClock } from "./virtual-clock.ts";

/** On the FIFO prefill lane (`--scheduler fifo`), whose timing these tests pin. */
const BASE: MockerOptions = {
  scheduler: "fifo",
  blockSize: 4,
  kvBlocks: 64,
  prefillUsPerToken: 1000,
  prefillOverheadMs: 0,
  decodeMsPerStep: 10,
  decodeBatchFactor: 0,
};
const prompt = (n: number, base = 0) => Uint32Array.from({ length: n }, (_, i) => base + i);

function run(
  engine: MockEngine,
  clock: VirtualClock,
  req: Partial<GenerateRequest> & { tokens: Uint32Array },
) {
  const at: number[] = [];
  const done = engine.generate(
    { maxTokens: 3, dpRank: 0, ...req },
    { start: () => {}, token: () => at.push(clock.now()) },
  );
  return { at, done };
}

describe("kv-content", () => {
  test("a block's bytes are a function of its hash; one flipped byte is caught", () => {
    const a = new Uint8Array(1024);
    const b = new Uint8Array(1024);
    const scratch = new Uint8Array(1024);
    fillBlock(0x1234_5678_9abc_def0n, a);
    fillBlock(0x1234_5678_9abc_def0n, b);
    expect(a).toEqual(b);
    expect(blockMatches(0x1234_5678_9abc_def0n, a, scratch)).toBe(true);
    expect(blockMatches(0x1234_5678_9abc_def1n, a, scratch)).toBe(false);
    a[1000]! ^= 1;
    expect(blockMatches(0x1234_5678_9abc_def0n, a, scratch)).toBe(false);
  });
});

describe("parseDisaggDirective", () => {
  test("vLLM's prefill and decode halves, SGLang's bootstrap fields", () => {
    expect(parseDisaggDirective({})).toEqual({ kind: "none" });
    expect(
      parseDisaggDirective({
        kv_transfer_params: {
          do_remote_decode: true,
          do_remote_prefill: false,
          remote_engine_id: null,
        },
      }),
    ).toEqual({
      kind: "vllm-prefill",
    });
    expect(
      parseDisaggDirective({
        kv_transfer_params: { do_remote_prefill: true, switchyard_shm: "sy-kv-ab-1-2" },
      }),
    ).toEqual({
      kind: "vllm-decode",
      segment: "sy-kv-ab-1-2",
    });
    expect(
      parseDisaggDirective({
        bootstrap_host: "10.0.0.1",
        bootstrap_port: 8998,
        bootstrap_room: 2 ** 62,
      }),
    ).toEqual({
      kind: "sglang",
      host: "10.0.0.1",
      port: 8998,
      room: (2n ** 62n).toString(),
    });
  });

  test("bad values are 400s naming the field", () => {
    expect(() => parseDisaggDirective({ kv_transfer_params: [] })).toThrow(/kv_transfer_params/);
    expect(() =>
      parseDisaggDirective({
        kv_transfer_params: { do_remote_decode: true, do_remote_prefill: true },
      }),
    ).toThrow(/both true/);
    expect(() =>
      parseDisaggDirective({ kv_transfer_params: { do_remote_prefill: true, switchyard_shm: 5 } }),
    ).toThrow(/switchyard_shm/);
    expect(() => parseDisaggDirective({ bootstrap_room: -1, bootstrap_host: "h" })).toThrow(
      /bootstrap_room/,
    );
    expect(() => parseDisaggDirective({ bootstrap_room: 1, bootstrap_host: "a/b" })).toThrow(
      /bootstrap_host/,
    );
    expect(() =>
      parseDisaggDirective({ bootstrap_room: 1, bootstrap_host: "h", bootstrap_port: 70000 }),
    ).toThrow(/bootstrap_port/);
  });
});

describe("MockEngine disaggregated timing", () => {
  test("imported blocks are not prefilled: only the rest is computed, and the blocks are cached", async () => {
    const clock = new VirtualClock();
    const engine = new MockEngine({ config: resolveMockerOptions(BASE), workerId: 1n, clock });
    const calls: [number, number][] = [];
    const a = run(engine, clock, {
      tokens: prompt(10),
      importKv: async (h, from, to) => {
        calls.push([from, to]);
        expect(h.length).toBe(2);
        return { blocks: to - from, bytes: 64 };
      },
    });
    await clock.run();
    const r = await a.done;
    expect(calls).toEqual([[0, 2]]);
    expect(a.at[0]).toBe(2); // 10 tokens - 8 imported = 2 computed at 1 ms each
    expect(r).toMatchObject({ transferredBlocks: 2, transferredBytes: 64, cachedTokens: 0 });
    const b = run(engine, clock, {
      tokens: prompt(10),
      importKv: async () => ({ blocks: 99, bytes: 0 }),
    });
    await clock.run();
    expect((await b.done).cachedTokens).toBe(8); // stored by the first request; nothing left to import
  });

  test("a pull that waits (SGLang: the prefill engine's room) does not hold back the rank's other prefills", async () => {
    const clock = new VirtualClock();
    const engine = new MockEngine({ config: resolveMockerOptions(BASE), workerId: 1n, clock });
    const a = run(engine, clock, {
      tokens: prompt(8, 500),
      importKv: async (_h, from, to) => {
        await clock.sleep(100); // waiting for the prefill engine
        return { blocks: to - from, bytes: 0 };
      },
    });
    const b = run(engine, clock, { tokens: prompt(4) });
    await clock.run();
    expect(b.at[0]).toBe(4); // B prefilled at once, not after A's 100 ms wait
    expect(a.at[0]).toBe(100); // A: everything imported, nothing computed
    await Promise.all([a.done, b.done]);
  });

  test("--prefill-stalls-decode: a prefill holds back running decodes; without it they run on", async () => {
    for (const stall of [false, true]) {
      const clock = new VirtualClock();
      const engine = new MockEngine({
        config: resolveMockerOptions({ ...BASE, prefillStallsDecode: stall }),
        workerId: 1n,
        clock,
      });
      const a = run(engine, clock, { tokens: prompt(4), maxTokens: 4 }); // first token at 4, then 14, 24, 34
      await clock.run(5);
      run(engine, clock, { tokens: prompt(40, 1000), maxTokens: 1 }); // prefill 5..45
      await clock.run();
      await a.done;
      // The step already running at 5 ends at 14; the next ones wait for the prefill (ends 45).
      expect(a.at).toEqual(stall ? [4, 14, 55, 65] : [4, 14, 24, 34]);
    }
  });

  test("flags: --role, --disagg, --prefill-stalls-decode, and bad values", () => {
    const o = resolveMockerOptions(
      parseMockerArgs([
        "--role",
        "decode",
        "--disagg",
        "sglang",
        "--prefill-stalls-decode",
        "--kv-block-bytes",
        "4096",
      ]),
    );
    expect(o).toMatchObject({
      role: "decode",
      disagg: "sglang",
      prefillStallsDecode: true,
      kvBlockBytes: 4096,
    });
    expect(() =>
      resolveMockerOptions({ role: "x" as never, disagg: "y" as never, kvBlockBytes: 6 }),
    ).toThrow(/--role[\s\S]*--disagg[\s\S]*multiple of 4/);
  });
});
