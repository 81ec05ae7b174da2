/**
 * `switchyard mocker [flags]`: parse flags, start the simulated engine, print one JSON line
 * `{"url","port","worker_id"}` on stdout (tests and scripts read it), stop on SIGINT/SIGTERM.
 */
import { MOCKER_USAGE, MockerOptionsError, parseMockerArgs, resolveMockerOptions } from "./options.ts";
import { type MockerHandle, startMocker } from "./server.ts";

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
  const handle = await startMocker(opts);
  console.log(JSON.stringify({ url: handle.url, port: handle.port, worker_id: handle.workerId.toString() }));
  let stopping = false;
  const shutdown = () => {
    if (stopping) return;
    stopping = true;
    handle.stop().finally(() => process.exit(0));
  };
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
  return handle;
}
