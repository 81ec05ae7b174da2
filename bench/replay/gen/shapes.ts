/**
 * Seeded generators for traffic shapes the Mooncake traces lack (issue 14), in the same
 * form as a Mooncake trace (arrival ms, input/output length, one hash id per 512-token block,
 * equal ids = equal prefix block) plus a session id per conversation / task. Same seed, same
 * trace. Each shape's parameters are documented in bench/replay/findings.md; defaults put an 8-engine
 * simulated cluster (200 µs per uncached token) at roughly half to two thirds utilisation for
 * kv-like hit rates at --arrival-scale 1.
 */
import { mulberry32, type Rng } from "../../../test/support/prng.ts";
import { TRACE_BLOCK_TOKENS, type TraceRequest } from "../trace.ts";
import { fanOut } from "./fan-out.ts";

const B = TRACE_BLOCK_TOKENS;

export const SHAPES = ["chat", "agentic", "rag", "shared-prefix", "fan-out"] as const;
export type Shape = (typeof SHAPES)[number];

const exp = (rng: Rng, mean: number) => -Math.log(1 - rng()) * mean;
const int = (rng: Rng, lo: number, hi: number) => lo + Math.floor(rng() * (hi - lo + 1));

/** Fresh block ids; negative ones are never produced, so they cannot collide with filler. */
class Blocks {
  #next = 0;
  take(n: number): number[] {
    return Array.from({ length: n }, () => this.#next++);
  }
}

interface Draft {
  t: number;
  ids: number[];
  out: number;
  session: string;
  tail: number;
}

function finish(drafts: Draft[]): TraceRequest[] {
  drafts.sort((a, b) => a.t - b.t || a.session.localeCompare(b.session));
  return drafts.map((d, index) => ({
    index,
    timestamp: Math.round(d.t),
    // The last block is partial by `tail` tokens (a partial block is never a cache hit).
    inputLength: d.ids.length * B - d.tail,
    outputLength: d.out,
    hashIds: d.ids,
    sessionId: d.session,
  }));
}

export interface ChatParams {
  /** Conversations; each starts at a Poisson arrival. */
  conversations: number;
  /** Distinct system prompts shared by conversations (uniformly chosen). */
  systemPrompts: number;
  systemBlocks: number;
  minTurns: number;
  maxTurns: number;
  /** Blocks a user message adds; the answer adds answerBlocks to the next turn's history. */
  userBlocks: number;
  answerBlocks: number;
  /** Mean seconds between conversation starts, and mean think time between turns. */
  meanGapS: number;
  meanThinkS: number;
  outputTokens: number;
}

export const CHAT_DEFAULTS: ChatParams = {
  conversations: 320,
  systemPrompts: 12,
  systemBlocks: 4,
  minTurns: 2,
  maxTurns: 7,
  userBlocks: 1,
  answerBlocks: 1,
  meanGapS: 0.15,
  meanThinkS: 10,
  outputTokens: 200,
};

/** Multi-turn chat: shared system prompts, each turn's prompt = the whole history + a new message. */
export function chat(seed: number, p: ChatParams = CHAT_DEFAULTS): TraceRequest[] {
  const rng = mulberry32(seed);
  const blocks = new Blocks();
  const systems = Array.from({ length: p.systemPrompts }, () => blocks.take(p.systemBlocks));
  const drafts: Draft[] = [];
  let start = 0;
  for (let c = 0; c < p.conversations; c++) {
    start += exp(rng, p.meanGapS * 1000);
    let t = start;
    let history = [...systems[Math.floor(rng() * systems.length)]!];
    const turns = int(rng, p.minTurns, p.maxTurns);
    for (let k = 0; k < turns; k++) {
      history = [...history, ...blocks.take(p.userBlocks)];
      drafts.push({
        t,
        ids: history,
        out: p.outputTokens,
        session: `chat-${c}`,
        tail: int(rng, 0, 200),
      });
      history = [...history, ...blocks.take(p.answerBlocks)];
      t += exp(rng, p.meanThinkS * 1000);
    }
  }
  return finish(drafts);
}

export interface AgenticParams {
  /** Agent tasks; each starts at a Poisson arrival. */
  tasks: number;
  /** Distinct agents, each with its own long tool prompt shared by all its tasks. */
  agents: number;
  toolBlocks: number;
  minSteps: number;
  maxSteps: number;
  /** Parallel tool calls per step (fan-out), each with its own short suffix. */
  minFanOut: number;
  maxFanOut: number;
  /** Blocks each step's results add to the task context. */
  resultBlocks: number;
  meanGapS: number;
  /** Mean seconds between steps of a task; a step's parallel calls arrive within 20 ms. */
  meanStepS: number;
  outputTokens: number;
}

export const AGENTIC_DEFAULTS: AgenticParams = {
  tasks: 120,
  agents: 6,
  toolBlocks: 12,
  minSteps: 2,
  maxSteps: 5,
  minFanOut: 2,
  maxFanOut: 6,
  resultBlocks: 1,
  meanGapS: 0.8,
  meanStepS: 2,
  outputTokens: 30,
};

/** Agentic tool loops: long shared tool prompt, bursts of parallel calls, short outputs. */
export function agentic(seed: number, p: AgenticParams = AGENTIC_DEFAULTS): TraceRequest[] {
  const rng = mulberry32(seed);
  const blocks = new Blocks();
  const tools = Array.from({ length: p.agents }, () => blocks.take(p.toolBlocks));
  const drafts: Draft[] = [];
  let start = 0;
  for (let task = 0; task < p.tasks; task++) {
    start += exp(rng, p.meanGapS * 1000);
    let t = start;
    let context = [...tools[Math.floor(rng() * tools.length)]!, ...blocks.take(1)];
    const steps = int(rng, p.minSteps, p.maxSteps);
    for (let s = 0; s < steps; s++) {
      const fan = int(rng, p.minFanOut, p.maxFanOut);
      for (let f = 0; f < fan; f++) {
        drafts.push({
          t: t + rng() * 20,
          ids: [...context, ...blocks.take(1)],
          out: p.outputTokens,
          session: `task-${task}`,
          tail: int(rng, 100, 400),
        });
      }
      context = [...context, ...blocks.take(p.resultBlocks)];
      t += exp(rng, p.meanStepS * 1000);
    }
  }
  return finish(drafts);
}

export interface RagParams {
  requests: number;
  documents: number;
  minDocBlocks: number;
  maxDocBlocks: number;
  /** Documents per request (retrieved chunks in front of the question). */
  docsPerRequest: number;
  /** Zipf exponent of document popularity (higher = a few documents reused much more). */
  zipf: number;
  systemBlocks: number;
  meanGapS: number;
  outputTokens: number;
}

export const RAG_DEFAULTS: RagParams = {
  requests: 1200,
  documents: 400,
  minDocBlocks: 2,
  maxDocBlocks: 8,
  docsPerRequest: 1,
  zipf: 0.6,
  systemBlocks: 1,
  meanGapS: 0.08,
  outputTokens: 100,
};

/** RAG: one shared instruction block, then a retrieved document (popular ones reused a few times), then the question. */
export function rag(seed: number, p: RagParams = RAG_DEFAULTS): TraceRequest[] {
  const rng = mulberry32(seed);
  const blocks = new Blocks();
  const system = blocks.take(p.systemBlocks);
  const docs = Array.from({ length: p.documents }, () =>
    blocks.take(int(rng, p.minDocBlocks, p.maxDocBlocks)),
  );
  const weights = docs.map((_, i) => 1 / (i + 1) ** p.zipf);
  const total = weights.reduce((s, w) => s + w, 0);
  const pickDoc = () => {
    let x = rng() * total;
    for (let i = 0; i < weights.length; i++) if ((x -= weights[i]!) <= 0) return i;
    return weights.length - 1;
  };
  const drafts: Draft[] = [];
  let t = 0;
  for (let r = 0; r < p.requests; r++) {
    t += exp(rng, p.meanGapS * 1000);
    const ids = [...system];
    for (let d = 0; d < p.docsPerRequest; d++) ids.push(...docs[pickDoc()]!);
    ids.push(...blocks.take(1));
    drafts.push({ t, ids, out: p.outputTokens, session: `rag-${r}`, tail: int(rng, 100, 400) });
  }
  return finish(drafts);
}

export interface SharedPrefixParams {
  groups: number;
  promptsPerGroup: number;
  systemBlocks: number;
  /** Tokens of each request's own question, after its group's system prompt (less than a block). */
  questionTokens: number;
  /** Requests per second (Poisson). */
  rate: number;
  outputTokens: number;
}

/**
 * SGLang's generated-shared-prefix load (python/sglang/bench_serving.py,
 * `sample_generated_shared_prefix_requests`, sgl-project/sglang main): `groups` system prompts of
 * 2,048 tokens, `promptsPerGroup` questions of 128 tokens on each, the requests shuffled
 * (`random.shuffle(input_requests)`) and sent at Poisson arrivals of `rate` per second. The
 * issue's setting: 16 × 16 at 32 req/s, so every group's siblings arrive through the whole run
 * and most groups' first requests come in its first second.
 */
export const SHARED_PREFIX_DEFAULTS: SharedPrefixParams = {
  groups: 16,
  promptsPerGroup: 16,
  systemBlocks: 4,
  questionTokens: 128,
  rate: 32,
  outputTokens: 256,
};

export function sharedPrefix(
  seed: number,
  p: SharedPrefixParams = SHARED_PREFIX_DEFAULTS,
): TraceRequest[] {
  const rng = mulberry32(seed);
  const blocks = new Blocks();
  const systems = Array.from({ length: p.groups }, () => blocks.take(p.systemBlocks));
  const rows: { ids: number[]; session: string }[] = [];
  for (let g = 0; g < p.groups; g++)
    for (let q = 0; q < p.promptsPerGroup; q++)
      rows.push({ ids: [...systems[g]!, ...blocks.take(1)], session: `group-${g}` });
  for (let i = rows.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [rows[i], rows[j]] = [rows[j]!, rows[i]!];
  }
  let t = 0;
  const drafts: Draft[] = rows.map((r) => {
    const d = {
      t,
      ids: r.ids,
      out: p.outputTokens,
      session: r.session,
      tail: B - p.questionTokens,
    };
    t += exp(rng, 1000 / p.rate);
    return d;
  });
  return finish(drafts);
}

export function generate(shape: Shape, seed: number): TraceRequest[] {
  switch (shape) {
    case "shared-prefix":
      return sharedPrefix(seed);
    case "chat":
      return chat(seed);
    case "agentic":
      return agentic(seed);
    case "rag":
      return rag(seed);
    case "fan-out":
      return fanOut(seed);
  }
}

/** Mooncake JSONL (plus session_id), for `--trace FILE` or other tools. */
export function toJsonl(trace: readonly TraceRequest[]): string {
  return (
    trace
      .map((r) =>
        JSON.stringify({
          timestamp: r.timestamp,
          input_length: r.inputLength,
          output_length: r.outputLength,
          hash_ids: r.hashIds,
          session_id: r.sessionId,
        }),
      )
      .join("\n") + "\n"
  );
}
