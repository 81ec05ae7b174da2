/**
 * `switchyard serve` on Deno: `bun run start:deno -- FLAGS` (or `deno run --allow-net
 * --allow-env --allow-read src/runtime/deno.ts FLAGS`). The same router as the Bun entry
 * (src/main.ts), built by ./portable.ts from portable pieces and served with Deno.serve; flags
 * that need Bun are refused by name (exit 2), like any bad flag. Prints the same one line,
 * {"url","port"}, once listening. Deno comes from the `deno` npm devDependency.
 */
import { createFormattedLogger } from "../observe/logger.ts";
import { ConfigError, loadConfig, serveUsage } from "../config/load.ts";
import { BUN_ONLY_FLAGS, PortableStartupError, refusedFlags, refusedValues, startPortableRouter, type PortablePlatform } from "./portable.ts";

/** The part of Deno's global this entry uses (tsc here checks against Bun's types, not Deno's). */
interface DenoServeInfo {
  readonly remoteAddr: { readonly hostname: string };
}
interface DenoHttpServer {
  readonly addr: { readonly port: number };
  shutdown(): Promise<void>;
}
declare const Deno: {
  readonly args: string[];
  readonly env: { toObject(): Record<string, string> };
  readTextFileSync(path: string): string;
  readTextFile(path: string): Promise<string>;
  serve(
    options: { port: number; hostname: string; onListen?: (addr: unknown) => void },
    handler: (req: Request, info: DenoServeInfo) => Response | Promise<Response>,
  ): DenoHttpServer;
  addSignalListener(signal: "SIGTERM" | "SIGINT", fn: () => void): void;
  exit(code: number): never;
};

const argv = Deno.args[0] === "serve" ? Deno.args.slice(1) : Deno.args;
if (argv.includes("--help") || argv.includes("-h")) {
  console.log(`${serveUsage()}\n\nOn Deno these are refused: ${Object.keys(BUN_ONLY_FLAGS).join(", ")}; --redis takes https:// (Upstash REST) only.`);
  Deno.exit(0);
}
const refused = refusedFlags(argv, "Deno", BUN_ONLY_FLAGS);
let config;
try {
  config = loadConfig({ argv, env: Deno.env.toObject(), readFile: (p) => Deno.readTextFileSync(p) });
  const problems = [...refused, ...refusedValues(config, "Deno")];
  if (problems.length > 0) throw new ConfigError(problems);
} catch (e) {
  if (e instanceof ConfigError) {
    const all = refused.length > 0 && !e.problems.some((p) => refused.includes(p)) ? new ConfigError([...refused, ...e.problems]) : e;
    console.error(`${all.message}\n\nrun \`switchyard serve --help\` for the list of flags`);
    Deno.exit(2);
  }
  throw e;
}

const peers = new WeakMap<Request, string>();
const platform: PortablePlatform = {
  async serve(fetch, port, hostname) {
    const server = Deno.serve({ port, hostname, onListen() {} }, (req, info) => {
      peers.set(req, info.remoteAddr.hostname);
      return fetch(req);
    });
    return { port: server.addr.port, stop: () => server.shutdown() };
  },
  peer: (req) => peers.get(req),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  readText: (path) => Deno.readTextFile(path),
};

const log = createFormattedLogger({ level: config.logLevel, format: config.logFormat });
let router;
try {
  router = await startPortableRouter(config, platform, log);
} catch (e) {
  // A tokenizer directory that cannot load: one line, exit 2 (as on Bun).
  if (e instanceof PortableStartupError) {
    console.error(e.message);
    Deno.exit(2);
  }
  throw e;
}
console.log(JSON.stringify({ url: router.url, port: router.port }));
// Drain: new requests get 503 while those in flight finish, for at most --drain-timeout.
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  Deno.addSignalListener(signal, () => {
    const bound = new Promise((resolve) => setTimeout(resolve, config.drainTimeout * 1000));
    void Promise.race([router.stop(), bound]).finally(() => Deno.exit(0));
  });
}
