/**
 * Fair admission between tenants: the Virtual Token Counter (Sheng et al., "Fairness in
 * Serving Large Language Models", OSDI 2024). Each tenant has a counter of the service it
 * received, in tokens: prompt tokens plus output tokens weighted by OUTPUT_TOKEN_WEIGHT,
 * divided by the tenant's weight. When requests wait, the backlogged tenant with the least
 * service goes next (admission-queue.ts orders by it within a priority band), so the service
 * difference between two backlogged tenants stays bounded in tokens, not requests: a tenant
 * sending ten times the traffic gets its share, not ten times everyone else's.
 *
 * A tenant that was not waiting is lifted, on arrival, to the least counter among the tenants
 * waiting in its band (or, when nobody waits, to the counter of the tenant served last): time
 * spent idle is not banked, so a tenant back from a quiet hour cannot take the engines for an
 * hour. Pure: no clock; the gate charges it as it admits.
 */

/**
 * Output tokens cost more than prompt tokens: each is a decode step holding a batch slot and
 * its KV blocks for the whole answer, where a prompt token is one pass of a batched prefill.
 * 2 is the paper's own choice (its w_q = 2 w_p), which we take rather than invent one.
 */
export const OUTPUT_TOKEN_WEIGHT = 2;

/** What one request asks of the engines, as fair admission counts it. */
export interface TenantShare {
  /** Who asks (a configured tenant's name). */
  readonly tenant: string;
  /** Its share within a band relative to others (keys file `weight`, default 1); > 0. */
  readonly weight: number;
  readonly promptTokens: number;
  /** Booked from `max_tokens` (or a default) at admission; settled with the answer's count. */
  readonly outputTokens: number;
}

/** The service a request is charged, in the tenant's own (unweighted) tokens. */
export function serviceTokens(promptTokens: number, outputTokens: number): number {
  return promptTokens + OUTPUT_TOKEN_WEIGHT * outputTokens;
}

export class VirtualTokenCounters {
  readonly #counters = new Map<string, number>();
  /** The counter of the tenant charged last: where a tenant joining an idle band starts from. */
  #lastServed = 0;

  /** A tenant's service so far (0 for one never seen). */
  counter(tenant: string): number {
    return this.#counters.get(tenant) ?? 0;
  }

  /** A request of `share` was admitted: its tenant's counter grows by its cost over its weight. */
  charge(share: TenantShare): void {
    this.#add(share.tenant, serviceTokens(share.promptTokens, share.outputTokens) / share.weight);
  }

  /**
   * The answer of an admitted request is over with `outputTokens` generated: the difference
   * from what was booked is charged (a refund when it stopped early).
   */
  settle(share: TenantShare, outputTokens: number): void {
    const delta = OUTPUT_TOKEN_WEIGHT * (outputTokens - share.outputTokens);
    if (delta !== 0)
      this.#counters.set(share.tenant, this.counter(share.tenant) + delta / share.weight);
  }

  /**
   * `tenant` starts waiting without being backlogged: raise its counter to `floor` (the least
   * counter of the tenants waiting in its band), or to the last served tenant's when nobody waits.
   */
  lift(tenant: string, floor: number | undefined): void {
    const to = floor ?? this.#lastServed;
    if (this.counter(tenant) < to) this.#counters.set(tenant, to);
  }

  /** Tenants with a counter (bounded by the configured tenants). */
  get size(): number {
    return this.#counters.size;
  }

  #add(tenant: string, amount: number): void {
    const c = this.counter(tenant) + amount;
    this.#counters.set(tenant, c);
    this.#lastServed = c;
  }
}
