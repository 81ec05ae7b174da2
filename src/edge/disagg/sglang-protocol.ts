/**
 * SGLang's P/D request shape, as its load balancer sends it
 * (python/sglang/srt/disaggregation/mini_lb.py, sgl-project/sglang @001c2ae0,
 * `_forward_to_backend`): the client's body plus `bootstrap_host` (the prefill engine's host
 * name), `bootstrap_port` (its bootstrap server's port) and a fresh random `bootstrap_room`,
 * the same body to the prefill and the decode engine at once; the decode answer goes to the
 * client. SGLang draws the room from 0..2^63-1; we draw from 0..2^53-1 so the number survives
 * every JSON parser exactly (any integer is a valid room). Pure, randomness passed in.
 */

export function sglangBody(
  client: Readonly<Record<string, unknown>>,
  bootstrap: { readonly host: string; readonly port: number; readonly room: number },
): Record<string, unknown> {
  return {
    ...client,
    bootstrap_host: bootstrap.host,
    bootstrap_port: bootstrap.port,
    bootstrap_room: bootstrap.room,
  };
}

/** A room id in 0..2^53-1 from two uniform u32 draws. */
export function bootstrapRoom(randomU32: () => number): number {
  return (randomU32() & 0x1f_ffff) * 2 ** 32 + (randomU32() >>> 0);
}

/** The host part of a worker URL as SGLang's balancer puts it in bootstrap_host (IPv6 bracketed). */
export function bootstrapHostOf(workerUrl: string): string {
  return new URL(workerUrl).hostname;
}
