/**
 * `switchyard serve` on Deno: `bun run start:deno -- FLAGS` (or `deno run --allow-net
 * --allow-env --allow-read src/runtime/deno.ts FLAGS`). The same router as the Bun entry
 * (src/main.ts), built by ./portable.ts from portable pieces and served with Deno.serve; flags
 * that need Bun are refused by name (exit 2) unless left at their default, like any bad flag.
 * Prints the same one line, {"url","port"}, once listening. Deno comes from the `deno` npm
 * devDependency.
 */
import { createFormattedLogger } from "../observe/logger.ts";
import { ConfigError, loadConfig, serveUsage, unknownEnvWarnings } from "../config/load.ts";
import { versionLine } from "../core/build-info.ts";
import { PortableStartupError, startPortableRouter, type PortablePlatform } from "./portable.ts";

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
  stat(
    path: string,
  ): Promise<{ readonly isFile: boolean; readonly size: number; readonly mtime: Date | null }>;
  serve(
    options: { port: number; hostname: string; onListen?: (addr: unknown) => void },
    handler: (req: Request, info: DenoServeInfo) => Response | Promise<Response>,
  ): DenoHttpServer;
  addSignalListener(signal: "SIGTERM" | "SIGINT", fn: () => void): void;
  exit(code: number): never;
};

const argv = Deno.args[0] === "serve" ? Deno.args.slice(1) : Deno.args;
if (argv.includes("--help") || argv.includes("-h")) {
  console.log(serveUsage("deno"));
  Deno.exit(0);
}
if (argv.includes("--version")) {
  console.log(versionLine());
  Deno.exit(0);
}
let config;
try {
  // Options Deno cannot honour are refused by name unless left at their default; a YAML
  // --config needs a parser Deno does not have built in, so it is refused by name too.
  config = loadConfig({
    argv,
    env: Deno.env.toObject(),
    readFile: (p) => Deno.readTextFileSync(p),
    runtime: "deno",
  });
} catch (e) {
  if (e instanceof ConfigError) {
    console.error(`${e.message}\n\nrun \`switchyard serve --help\` for the list of flags`);
    Deno.exit(2);
  }
  throw e;
}

const peers = new WeakMap<Request, string>();
const platform: PortablePlatform = {
  async serve(fetch, port, hostname) {
    let server: DenoHttpServer;
    try {
      server = Deno.serve({ port, hostname, onListen() {} }, (req, info) => {
        peers.set(req, info.remoteAddr.hostname);
        return fetch(req);
      });
    } catch (e) {
      // One line for the operator, as on Bun (Deno names the error class AddrInUse).
      if ((e as Error).name === "AddrInUse")
        throw new PortableStartupError(
          `--port ${port}: ${hostname}:${port} is already in use (pick another --port, or 0 for any free one)`,
        );
      throw new PortableStartupError(
        `--port ${port} / --host ${hostname}: cannot listen (${(e as Error).message})`,
      );
    }
    return { port: server.addr.port, stop: () => server.shutdown() };
  },
  peer: (req) => peers.get(req),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  readText: (path) => Deno.readTextFile(path),
  keysFile: denoKeysFile(),
};

/**
 * --api-keys on Deno: a regular file of at most 32 MiB, read again only when its size or time
 * changed (polled each second); JSON only, as Deno has no YAML parser without a download.
 */
function denoKeysFile() {
  const MAX_BYTES = 32 * 1024 * 1024;
  let last: { stamp: string; text: string } | undefined;
  return {
    async read(path: string): Promise<string> {
      const s = await Deno.stat(path);
      if (!s.isFile) throw new Error("not a regular file");
      if (s.size > MAX_BYTES) throw new Error(`${s.size} bytes; at most ${MAX_BYTES}`);
      const stamp = `${s.size}:${s.mtime?.getTime() ?? 0}`;
      if (last?.stamp === stamp) return last.text;
      const text = await Deno.readTextFile(path);
      last = { stamp, text };
      return text;
    },
    parse(text: string, path: string): unknown {
      if (/\.ya?ml$/i.test(path))
        throw new Error(
          "a YAML keys file is read on Bun only (its YAML parser); give the same document as JSON on Deno",
        );
      return JSON.parse(text);
    },
  };
}

const log = createFormattedLogger({ level: config.logLevel, format: config.logFormat });
for (const w of unknownEnvWarnings(Deno.env.toObject())) log.warn(w);
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
// Drain: first --drain-delay with /health at 503 and requests still served (load balancers
// take the router out meanwhile), then new requests get 503 while those in flight finish, for
// at most --drain-timeout. A second signal exits at once.
let stopping = false;
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  Deno.addSignalListener(signal, () => {
    if (stopping) Deno.exit(1);
    stopping = true;
    router.stopReadiness();
    const sleep = (s: number) => new Promise((resolve) => setTimeout(resolve, s * 1000));
    void sleep(config.drainDelay)
      .then(() => Promise.race([router.stop(), sleep(config.drainTimeout)]))
      .finally(() => Deno.exit(0));
  });
}
