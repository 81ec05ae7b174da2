/**
 * Starts one simulated engine as a real process for integration tests:
 * `bun test/support/run-mocker.ts --port 0 [mocker flags]`. Prints `{"url","port","worker_id"}`
 * as one JSON line on stdout once it listens; SIGTERM stops it.
 */
import { runMockerCli } from "../../src/mocker/cli.ts";

await runMockerCli(process.argv.slice(2));
