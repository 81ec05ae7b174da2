import { describe, expect, test } from "bun:test";
import {
  Sequencer,
  type ReplayFn,
  type SeqMessage,
  type SequencedMessage,
} from "../../../../../src/runtime/bun/zmq/sequencer.ts";

const msg = (seq: number): SeqMessage => ({ seq, payload: Uint8Array.of(seq & 0xff) });

/** A publisher buffer holding `seqs`, answering like vLLM's ROUTER (every seq >= start). */
function bufferReplay(seqs: readonly number[], calls: number[] = []): ReplayFn {
  return (start) => {
    calls.push(start);
    return seqs.filter((s) => s >= start).map(msg);
  };
}

function run(seq: Sequencer, live: readonly number[]): SequencedMessage[] {
  const out: SequencedMessage[] = [];
  for (const s of live) seq.push(msg(s), (m) => out.push(m));
  return out;
}

const brief = (ms: SequencedMessage[]) =>
  ms.map(
    (m) =>
      `${m.seq}${m.replayed ? "r" : ""}${m.lostBefore ? `-${m.lostBefore}` : ""}${m.restart ? "!" : ""}`,
  );

describe("Sequencer", () => {
  test("contiguous live batches pass straight through without a replay", () => {
    const calls: number[] = [];
    const s = new Sequencer(bufferReplay([], calls));
    expect(brief(run(s, [0, 1, 2]))).toEqual(["0", "1", "2"]);
    expect(calls).toEqual([]);
    expect(s.stats.lastSeq).toBe(2);
  });

  test("a late joiner replays [0, first) before the first live batch", () => {
    const calls: number[] = [];
    const s = new Sequencer(bufferReplay([0, 1, 2, 3, 4, 5], calls));
    expect(brief(run(s, [3, 4]))).toEqual(["0r", "1r", "2r", "3", "4"]);
    expect(calls).toEqual([0]);
  });

  test("history older than the replay buffer is not a loss for a late joiner", () => {
    const s = new Sequencer(bufferReplay([7, 8, 9, 10]));
    expect(brief(run(s, [10]))).toEqual(["7r", "8r", "9r", "10"]);
    expect(s.stats.lostBatches).toBe(0);
  });

  test("a gap is filled from the replay, in order, and later replayed batches are ignored", () => {
    const calls: number[] = [];
    const s = new Sequencer(bufferReplay([0, 1, 2, 3, 4, 5, 6], calls));
    expect(brief(run(s, [0, 1, 4, 5]))).toEqual(["0", "1", "2r", "3r", "4", "5"]);
    expect(calls).toEqual([2]);
    expect(s.stats).toMatchObject({ gaps: 1, replayed: 2, lostBatches: 0, live: 4 });
  });

  test("what the replay cannot supply is reported as lost before the next delivery", () => {
    const s = new Sequencer(bufferReplay([0, 1, 3, 5, 6]));
    expect(brief(run(s, [0, 1, 5]))).toEqual(["0", "1", "3r-1", "5-1"]);
    expect(s.stats.lostBatches).toBe(2);
  });

  test("without a replay function a gap is counted as lost batches", () => {
    const s = new Sequencer();
    expect(brief(run(s, [4, 5, 9]))).toEqual(["4", "5", "9-3"]);
    expect(s.stats).toMatchObject({ gaps: 1, lostBatches: 3, replayRequests: 0 });
  });

  test("a failed or throwing replay counts as a failure and the gap as lost", () => {
    const failing = new Sequencer(() => undefined);
    expect(brief(run(failing, [0, 3]))).toEqual(["0", "3-2"]);
    const throwing = new Sequencer(() => {
      throw new Error("socket closed");
    });
    expect(brief(run(throwing, [0, 2]))).toEqual(["0", "2-1"]);
    expect([failing.stats.replayFailures, throwing.stats.replayFailures]).toEqual([1, 1]);
  });

  test("a seq at or below the last one is a restarted publisher: flagged once, counted from seq 0", () => {
    const s = new Sequencer();
    expect(brief(run(s, [0, 1, 2, 0, 1]))).toEqual(["0", "1", "2", "0!", "1"]);
    expect(s.stats.restarts).toBe(1);
    // The new process's first seen batch is 2: batches 0 and 1 of it are lost.
    const t = new Sequencer();
    expect(brief(run(t, [5, 6, 2]))).toEqual(["5", "6", "2-2!"]);
  });

  test("after a restart the new publisher's buffer is replayed from 0 and the first replayed batch carries the flag", () => {
    const s = new Sequencer(bufferReplay([0, 1, 2]));
    const out = run(s, [7, 8]);
    s.push(msg(2), (m) => out.push(m));
    // First sight of 7 replays [0,7) from the (new) buffer too: 0,1,2 then 7, 8.
    expect(brief(out)).toEqual(["0r", "1r", "2r", "7-4", "8", "0r!", "1r", "2"]);
  });
});
