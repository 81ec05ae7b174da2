/** What --disagg configures: the protocol, the workers' roles and when a prompt is worth a separate prefill. Types only. */
import type { WorkerRoles } from "./roles.ts";

export type DisaggProtocol = "vllm" | "sglang";

export interface DisaggOptions {
  readonly protocol: DisaggProtocol;
  readonly roles: WorkerRoles;
  /** Uncached prompt tokens on the decode worker below which it prefills locally. */
  readonly minPrefillTokens: number;
  /** Tokens per KV block (--block-size): cached blocks -> cached tokens. */
  readonly blockSize: number;
  /** SGLang: the prefill engines' bootstrap port when their engine info does not say. */
  readonly defaultBootstrapPort: number;
  /** Uniform u32 draws (bootstrap rooms); injected so tests are deterministic. */
  readonly randomU32?: () => number;
}
