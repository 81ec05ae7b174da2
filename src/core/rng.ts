/** Uniform in [0, 1). Injected wherever a choice is random, so tests and benches are deterministic. */
export type Rng = () => number;
