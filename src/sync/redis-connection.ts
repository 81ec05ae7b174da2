/**
 * The little of Redis the stores need, as one interface: RESP (runtime/bun/resp-client.ts),
 * Upstash REST (upstash-client.ts) and the hang guard around either (redis-guard.ts) implement
 * it; redis-client.ts opens one by URL. Types only.
 */
export interface RedisConnection {
  readonly kind: "resp" | "rest";
  eval(script: string, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  evalsha(sha1: string, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  /** Any other command, e.g. ["PING"]. */
  command(args: readonly string[]): Promise<unknown>;
  close(): Promise<void>;
}
