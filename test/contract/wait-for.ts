/** Poll `condition` until it holds or the deadline passes; the failure says what was awaited. */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  what: string,
  { timeoutMs = 3_000, everyMs = 5 }: { timeoutMs?: number; everyMs?: number } = {},
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
