/**
 * vLLM's per-data-parallel-rank endpoints (its ZmqEventPublisher): each DP rank runs its own
 * publisher with its own seq space, on `port + rank` for tcp and `<name>_dp<rank>` for inproc
 * (rank 0 keeps the configured endpoint). The same rule gives the replay endpoint. Pure.
 */

/** The endpoint rank `dpRank` of an engine publishes on, given its configured (rank 0) one. */
export function endpointForDpRank(endpoint: string, dpRank: number): string {
  if (!Number.isInteger(dpRank) || dpRank < 0)
    throw new Error(`dp rank must be a non-negative integer, got ${dpRank}`);
  if (dpRank === 0) return endpoint;
  if (endpoint.startsWith("inproc://")) return `${endpoint}_dp${dpRank}`;
  if (!endpoint.startsWith("tcp://")) return endpoint;
  const colon = endpoint.lastIndexOf(":");
  const port = Number(endpoint.slice(colon + 1));
  if (colon <= "tcp://".length || !Number.isInteger(port) || port <= 0) {
    throw new Error(
      `cannot offset the port of ${JSON.stringify(endpoint)}: expected tcp://host:port`,
    );
  }
  return `${endpoint.slice(0, colon)}:${port + dpRank}`;
}
