/** Placeholder; replaced below. */
export const SUITES = ["quick", "full", "smoke"] as const;
export type SuiteName = (typeof SUITES)[number];
export async function runSuite(_n: SuiteName, _o: unknown): Promise<void> {}
