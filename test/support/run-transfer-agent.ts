/**
 * Starts the transfer agent in this process for tests and manual tries:
 *   bun test/support/run-transfer-agent.ts --port 0 [agent flags]
 * Prints one JSON line {"ready":true,"port":N} once listening; stops on SIGTERM / SIGINT.
 */
import { runTransferAgent } from "../../src/transfer/agent.ts";

const agent = await runTransferAgent(process.argv.slice(2));
console.log(JSON.stringify({ ready: true, port: agent.port }));
for (const sig of ["SIGTERM", "SIGINT"] as const) {
  process.on(sig, () => {
    void agent.stop().then(() => process.exit(0));
  });
}
