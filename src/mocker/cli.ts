/**
 * `switchyard mocker [flags]`: parse flags, start the simulated engine, print one JSON line
 * `{"url","port","worker_id"}` on stdout (tests and scripts read it); SIGINT/SIGTERM drains, a second one exits at once.
 */
import { readFileSync } from "node:fs";
import {
  MOCKER_USAGE,
  MockerOptionsError,
  parseMockerArgs,
  resolveMockerOptions,
} from "./options.ts";
import { type MockerHandle, startMocker } from "./server.ts";

/** The events token: the flag, the file the flag names, then SWITCHYARD_EVENTS_TOKEN, then the file SWITCHYARD_EVENTS_TOKEN_FILE names. */
function eventsTokenOf(o: { eventsToken?: string; eventsTokenFile?: string }): string | undefined {
  const file = o.eventsTokenFile ?? process.env.SWITCHYARD_EVENTS_TOKEN_FILE;
  const fromFile = () =>
    file === undefined ? undefined : readFileSync(file, "utf8").slice(0, 4096).trim();
  return (
    o.eventsToken ??
    (o.eventsTokenFile !== undefined
      ? fromFile()
      : process.env.SWITCHYARD_EVENTS_TOKEN || fromFile())
  );
}

/** How long a SIGTERM-ed engine lets requests in flight finish. */
const MOCKER_DRAIN_MS = 30_000;

export async function runMockerCli(argv: readonly string[]): Promise<MockerHandle> {
  if (argv.includes("--help") || argv.includes("-h")) {
    console.log(MOCKER_USAGE);
    process.exit(0);
  }
  let opts;
  try {
    opts = parseMockerArgs(argv);
    resolveMockerOptions(opts); // report every bad flag before binding a port
  } catch (e) {
    if (e instanceof MockerOptionsError) {
      console.error(`${e.message}\n\n${MOCKER_USAGE}`);
      process.exit(2);
    }
    throw e;
  }
  const handle = await startMocker({ ...opts, eventsToken: eventsTokenOf(opts) });
  console.log(
    JSON.stringify({ url: handle.url, port: handle.port, worker_id: handle.workerId.toString() }),
  );
  // First signal: drain (requests in flight finish, bounded) and exit 0; a second: exit now.
  let stopping = false;
  const shutdown = () => {
    if (stopping) process.exit(1);
    stopping = true;
    handle.drain(MOCKER_DRAIN_MS).finally(() => process.exit(0));
  };
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
  return handle;
}
