#!/usr/bin/env bun
/**
 * The command line: `switchyard serve | mocker | transfer`. `serve` parses the flags and
 * starts the router on Bun (src/runtime/bun.ts, the composition root that builds the router
 * and the app with Bun's pieces); `mocker` and `transfer` start the simulated engine and
 * the KV block transfer agent. Each prints one {"url","port"} line once listening and drains
 * on SIGTERM/SIGINT.
 */
import type { Logger } from "./core/logger.ts";
import { createFormattedLogger } from "./observe/logger.ts";
import { ConfigError, loadConfig, serveUsage, unknownEnvWarnings } from "./config/load.ts";
import { versionLine } from "./core/build-info.ts";
import type { Config } from "./config/schema.ts";
import { closestName } from "./config/closest-name.ts";
import { runMockerCli } from "./mocker/index.ts";
import { runTransferAgent, TRANSFER_DRAIN_MS } from "./transfer/agent.ts";
import { TRANSFER_AGENT_USAGE } from "./transfer/agent-options.ts";
import { serve, StartupError, stderrLogSink, type RunningRouter } from "./runtime/bun.ts";

export { serve, StartupError, type RunningRouter } from "./runtime/bun.ts";

const USAGE = `usage: switchyard <command> [flags]

commands:
  serve      the router: OpenAI-compatible proxy in front of engines (serve --help)
  mocker     a simulated engine (mocker --help)
  transfer   the KV block transfer agent (transfer --help)

  --version  print the version, the commit it was built from and the runtime`;

async function runServe(argv: readonly string[]): Promise<void> {
  if (argv.includes("--help") || argv.includes("-h")) {
    console.log(serveUsage());
    return;
  }
  if (argv.includes("--version")) {
    console.log(versionLine());
    return;
  }
  let config: Config;
  try {
    config = loadConfig({ argv, env: process.env, parseYaml: (text) => Bun.YAML.parse(text) });
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(`${e.message}\n\nrun \`switchyard serve --help\` for the list of flags`);
      process.exit(2);
    }
    throw e;
  }
  const sink = stderrLogSink();
  const log = createFormattedLogger({
    level: config.logLevel,
    format: config.logFormat,
    write: sink.write,
  });
  for (const w of unknownEnvWarnings(process.env)) log.warn(w);
  let router: RunningRouter;
  try {
    router = await serve(config, log);
  } catch (e) {
    // A bad start-up input (a tokenizer directory or workers file that cannot be read, a
    // port in use): one line, exit 2, like a bad flag.
    if (e instanceof StartupError) {
      // The log's buffered lines (warnings before the failure) go out before the exit.
      await sink.flush();
      console.error(e.message);
      process.exit(2);
    }
    throw e;
  }
  // One machine-readable line, so scripts and tests started with --port 0 find the router.
  console.log(JSON.stringify({ url: router.url, port: router.port }));
  // The last lines (access lines of the drained requests) are written before the exit.
  onShutdown(
    () =>
      router.drain(config.drainTimeout * 1000, config.drainDelay * 1000).then(() => sink.flush()),
    log,
  );
}

async function runTransfer(argv: readonly string[]): Promise<void> {
  if (argv.includes("--help") || argv.includes("-h")) {
    console.log(TRANSFER_AGENT_USAGE);
    return;
  }
  let agent;
  try {
    agent = await runTransferAgent([...argv]);
  } catch (e) {
    console.error((e as Error).message);
    process.exit(2);
  }
  console.log(JSON.stringify({ url: `http://127.0.0.1:${agent.port}`, port: agent.port }));
  onShutdown(() => agent.drain(TRANSFER_DRAIN_MS).then(() => {}));
}

/**
 * The first SIGINT/SIGTERM drains (in-flight requests finish, bounded by the drain
 * timeout) and exits 0; a second one exits at once (status 1: requests were cut).
 */
function onShutdown(drain: () => Promise<void>, log?: Logger): void {
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) {
      log?.warn(`${signal} again: exiting now`);
      process.exit(1);
    }
    stopping = true;
    log?.info(`${signal}: draining (send it again to exit at once)`);
    drain().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on("SIGINT", () => shutdown("SIGINT"));
  process.on("SIGTERM", () => shutdown("SIGTERM"));
}

/** "; did you mean serve?" for a mistyped command (a flag given first is not a command typo). */
function commandSuggestion(command: string): string {
  const near = command.startsWith("-")
    ? undefined
    : closestName(command, ["serve", "mocker", "transfer", "version", "help"]);
  return near === undefined ? "" : `; did you mean "${near}"?`;
}

export async function main(argv: readonly string[]): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case "serve":
      return runServe(rest);
    case "mocker":
      await runMockerCli(rest);
      return;
    case "transfer":
      return runTransfer(rest);
    case "--version":
    case "version":
      console.log(versionLine());
      return;
    case "help":
    case "--help":
    case "-h":
      console.log(USAGE);
      return;
    default:
      console.error(
        command === undefined
          ? USAGE
          : `unknown command "${command}"${commandSuggestion(command)}\n\n${USAGE}`,
      );
      process.exit(2);
  }
}

if (import.meta.main) await main(process.argv.slice(2));
