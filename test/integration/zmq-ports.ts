/**
 * Consecutive free loopback ports, for publishers that must sit at port + rank (vLLM's
 * per-DP-rank rule). Probes random bases until `n` ports in a row can all be bound.
 */
export function consecutiveFreePorts(n: number, attempts = 200): number[] {
  for (let a = 0; a < attempts; a++) {
    const base = 20_000 + Math.floor(Math.random() * 40_000);
    const probes: { stop(force?: boolean): void }[] = [];
    try {
      for (let i = 0; i < n; i++)
        probes.push(Bun.listen({ hostname: "127.0.0.1", port: base + i, socket: { data() {} } }));
      return Array.from({ length: n }, (_, i) => base + i);
    } catch {
      // taken: try another base
    } finally {
      for (const p of probes) p.stop(true);
    }
  }
  throw new Error(`no ${n} consecutive free ports found in ${attempts} tries`);
}
