/**
 * The router on Cloudflare's workerd (the worker module; `bun run start:workerd -- FLAGS`
 * bundles it and starts workerd through ./workerd-launch.ts).
 *
 * workerd keeps no process-wide state across isolates, so the index, the load books, the
 * sessions and the worker registry live in ONE Durable Object (class `RouterObject`, one
 * instance named "router"): the worker's fetch forwards every request (client requests,
 * engines' KV event pushes, admin calls) to it, and that object runs the same
 * createRouter + createApp as the other runtimes (./portable.ts). Every decision is therefore
 * made on the full, precise state; the cost is that one object (one thread) takes all the
 * traffic, which is what a single Bun process does too. The object holds its state in memory
 * only (no storage API): if workerd evicts or restarts it, it starts empty and re-learns
 * workers from `--worker` and engines re-registering — like a restarted router process.
 *
 * The configuration (the parsed serve flags) comes in the CONFIG binding as JSON.
 */
import { createFormattedLogger } from "../observe/logger.ts";
import type { Config } from "../config/schema.ts";
import { startPortableRouter, type PortablePlatform } from "./portable.ts";

interface DurableObjectId {
  readonly name?: string;
}
interface DurableObjectStub {
  fetch(req: Request): Promise<Response>;
}
interface DurableObjectNamespace {
  idFromName(name: string): DurableObjectId;
  get(id: DurableObjectId): DurableObjectStub;
}
interface Env {
  readonly ROUTER: DurableObjectNamespace;
  /** Config as JSON; bigint-free (worker ids are not part of it). */
  readonly CONFIG: Config & { readonly publicUrl: string; readonly apiKeysDocument?: string };
}

/** The one object that owns the router's state. */
export class RouterObject {
  #handler: Promise<(req: Request) => Response | Promise<Response>>;

  constructor(_state: unknown, env: Env) {
    const config = env.CONFIG;
    let handler: ((req: Request) => Response | Promise<Response>) | undefined;
    const platform: PortablePlatform = {
      async serve(fetch) {
        handler = fetch;
        return { port: config.port, stop: async () => {} };
      },
      // workerd does not tell the peer's address: admin endpoints need --admin-token here.
      peer: () => undefined,
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      // The keys file as the launcher read it (workerd has no file system; a change needs a restart).
      keysFile:
        config.apiKeysDocument === undefined
          ? undefined
          : { read: async () => config.apiKeysDocument!, parse: (t) => JSON.parse(t) },
    };
    const log = createFormattedLogger({ level: config.logLevel, format: config.logFormat });
    this.#handler = startPortableRouter(config, platform, log).then(() => handler!);
  }

  async fetch(req: Request): Promise<Response> {
    return (await this.#handler)(req);
  }
}

export default {
  fetch(req: Request, env: Env): Promise<Response> {
    return env.ROUTER.get(env.ROUTER.idFromName("router")).fetch(req);
  },
};
