/**
 * A worker's id must mean the same worker on every router (sticky bindings written by one
 * router are read by another). When a worker registers without an id, the id is derived
 * from its URL, so every router derives the same one. Engines that push events with
 * their own id must use the same derivation (the simulated engine does).
 */
import { xxh3_64 } from "./xxh3.ts";
import type { WorkerId } from "./ids.ts";

/** Scheme + host + port + path without trailing slash, lower-cased host. */
export function normalizeWorkerUrl(url: string): string {
  const u = new URL(url);
  const path = u.pathname.replace(/\/+$/, "");
  return `${u.protocol}//${u.host.toLowerCase()}${path}`;
}

/** u63 (top bit clear, so it is also a valid signed i64 for engines that use one). */
export function workerIdFromUrl(url: string): WorkerId {
  const bytes = new TextEncoder().encode(normalizeWorkerUrl(url));
  return xxh3_64(bytes, 0n) & ((1n << 63n) - 1n);
}
