/** Opens the sync transport its Redis URL's scheme names (transport.ts); the stream transport is loaded only when used. */
import type { SyncTransport, SyncTransportOptions } from "./transport.ts";

export async function openSyncTransport(opts: SyncTransportOptions): Promise<SyncTransport> {
  const scheme = opts.url.slice(0, opts.url.indexOf(":") + 1).toLowerCase();
  switch (scheme) {
    case "redis:":
    case "rediss:": {
      if (opts.pubsub === undefined)
        throw new Error(
          `${scheme}// load sync needs RESP pub/sub, which runs on Bun only (use an Upstash REST https:// URL here)`,
        );
      return opts.pubsub(opts);
    }
    case "https:":
    case "http:": {
      const { StreamTransport } = await import("./stream-transport.ts");
      return StreamTransport.open(opts);
    }
    default:
      throw new Error(
        `unsupported Redis URL scheme "${scheme}" for load sync (use redis://, rediss:// or https://)`,
      );
  }
}
