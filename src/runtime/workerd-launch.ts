/**
 * `bun run start:workerd -- FLAGS`: `switchyard serve` on Cloudflare's workerd. On the Bun side
 * it only prepares and supervises: parses the serve flags (the same loadConfig; flags that
 * need Bun are refused by name unless left at their default, exit 2), bundles ./workerd.ts with Bun.build into a temporary
 * directory, writes a workerd config (the worker, its Durable Object namespace, a network
 * service that may reach engines on private and loopback addresses, one HTTP socket), starts
 * the workerd binary from the `workerd` npm devDependency, waits until the router answers
 * /livez, and prints the same {"url","port"} line. SIGTERM/SIGINT stop workerd and remove the
 * directory. --port 0 picks a free port first (workerd's config names a fixed address).
 */
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError, loadConfig, serveUsage, unknownEnvWarnings } from "../config/load.ts";
import { buildInfo, versionLine } from "../core/build-info.ts";
import { createLogger } from "../observe/logger.ts";
import { parseKeysDocument } from "../protect/keys-document.ts";

const ROOT = join(import.meta.dir, "..", "..");
/** The largest keys file read (as on Bun's router: src/runtime/bun/keys-file.ts). */
const MAX_KEYS_FILE_BYTES = 32 * 1024 * 1024;

/** The --api-keys document, read and checked here: a regular file, size-capped, JSON or YAML by extension. */
function readKeysDocument(path: string): unknown {
  const s = statSync(path);
  if (!s.isFile()) throw new Error("not a regular file");
  if (s.size > MAX_KEYS_FILE_BYTES)
    throw new Error(`${s.size} bytes; at most ${MAX_KEYS_FILE_BYTES}`);
  const text = readFileSync(path, "utf8");
  const doc = /\.ya?ml$/i.test(path) ? Bun.YAML.parse(text) : JSON.parse(text);
  parseKeysDocument(doc, `--api-keys ${path}`);
  return doc;
}

/** Deadline for workerd to answer /livez after it starts. */
const START_DEADLINE_MS = 30_000;

export function workerdBinary(): string {
  const dir = join(ROOT, "node_modules", "@cloudflare");
  if (existsSync(dir)) {
    for (const p of readdirSync(dir)) {
      const bin = join(dir, p, "bin", "workerd");
      if (p.startsWith("workerd-") && existsSync(bin)) return bin;
    }
  }
  return join(ROOT, "node_modules", ".bin", "workerd");
}

/** A capnp text literal. */
const capnpString = (s: string) => JSON.stringify(s);

function workerdConfig(configJson: string, address: string): string {
  return `using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .router),
    (name = "engines", network = (allow = ["public", "private", "local"])),
  ],
  sockets = [ (name = "http", address = ${capnpString(address)}, http = (), service = "main") ],
);

const router :Workerd.Worker = (
  modules = [ (name = "router.js", esModule = embed "router.js") ],
  compatibilityDate = "2025-09-01",
  compatibilityFlags = ["nodejs_compat"],
  bindings = [
    (name = "ROUTER", durableObjectNamespace = "RouterObject"),
    (name = "CONFIG", json = ${capnpString(configJson)}),
  ],
  durableObjectNamespaces = [ (className = "RouterObject", uniqueKey = "switchyard-router") ],
  durableObjectStorage = (inMemory = void),
  globalOutbound = "engines",
);
`;
}

function freePort(host: string): number {
  const probe = Bun.listen({ hostname: host, port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  return port;
}

async function main(argvIn: readonly string[]): Promise<void> {
  const argv = argvIn[0] === "serve" ? argvIn.slice(1) : argvIn;
  if (argv.includes("--help") || argv.includes("-h")) {
    console.log(
      `${serveUsage("workerd")}\nAdmin endpoints need --admin-token on workerd (it does not tell a request's peer).`,
    );
    return;
  }
  if (argv.includes("--version")) {
    // This launcher runs on Bun; the router itself runs in workerd.
    console.log(versionLine({ ...buildInfo(), runtime: "Cloudflare-Workers" }));
    return;
  }
  let config;
  try {
    // Parsed here, on Bun, so a YAML --config works; what workerd cannot honour is refused by name.
    config = loadConfig({
      argv,
      env: process.env,
      parseYaml: (text) => Bun.YAML.parse(text),
      runtime: "workerd",
    });
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(`${e.message}\n\nrun \`switchyard serve --help\` for the list of flags`);
      process.exit(2);
    }
    throw e;
  }
  const log = createLogger(config.logLevel);
  for (const w of unknownEnvWarnings(process.env)) log.warn(w);
  // workerd has no file system: the keys file is read here, once, and handed over in CONFIG
  // (a change needs a restart). A file that cannot be used stops the start, as on Bun.
  let apiKeysDocument: string | undefined;
  if (config.apiKeys !== undefined) {
    try {
      apiKeysDocument = JSON.stringify(readKeysDocument(config.apiKeys));
    } catch (e) {
      const m = (e as Error).message;
      console.error(m.startsWith("--api-keys") ? m : `--api-keys ${config.apiKeys}: ${m}`);
      process.exit(2);
    }
  }
  const host = config.host === "0.0.0.0" ? "127.0.0.1" : config.host;
  const port = config.port === 0 ? freePort(host) : config.port;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;

  const dir = mkdtempSync(join(tmpdir(), "switchyard-workerd-"));
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  const built = await Bun.build({
    entrypoints: [join(ROOT, "src", "runtime", "workerd.ts")],
    target: "browser",
    format: "esm",
    minify: false,
  });
  if (!built.success) {
    cleanup();
    console.error(`bundling the workerd router failed:\n${built.logs.map(String).join("\n")}`);
    process.exit(1);
  }
  writeFileSync(join(dir, "router.js"), await built.outputs[0]!.text());
  writeFileSync(
    join(dir, "config.capnp"),
    workerdConfig(
      JSON.stringify({ ...config, port, publicUrl: url, apiKeysDocument }),
      `${host}:${port}`,
    ),
  );

  const child = Bun.spawn({
    cmd: [workerdBinary(), "serve", join(dir, "config.capnp"), "--experimental"],
    stdout: "inherit",
    stderr: "inherit",
  });
  const stop = () => {
    child.kill("SIGTERM");
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  const end = performance.now() + START_DEADLINE_MS;
  for (;;) {
    if (child.exitCode !== null) {
      cleanup();
      console.error(`workerd exited with code ${child.exitCode} before answering`);
      process.exit(1);
    }
    const ok = await fetch(`${url}/livez`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (performance.now() > end) {
      child.kill("SIGKILL");
      cleanup();
      console.error(`workerd did not answer ${url}/livez within ${START_DEADLINE_MS / 1000} s`);
      process.exit(1);
    }
    await Bun.sleep(50);
  }
  console.log(JSON.stringify({ url, port }));
  const code = await child.exited;
  cleanup();
  process.exit(child.signalCode === "SIGTERM" ? 0 : code);
}

await main(process.argv.slice(2));
