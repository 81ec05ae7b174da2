/**
 * The engines of bench:scale's routers run: N simulated engines in ONE process (64 engine
 * processes would cost this 2-core machine more than the routers being measured), each on its
 * own port, pushing its KV events to every router given.
 *
 *   bun bench/scale/fleet.ts --engines 64 --ports P1,P2,… --router-url URL [--router-url URL …]
 *
 * Prints one JSON line {"urls": [...]} once every engine listens; SIGTERM stops them all.
 */
import { parseArgs } from "node:util";
import { type MockerHandle, startMocker } from "../../src/mocker/index.ts";

const { values } = parseArgs({
  options: {
    engines: { type: "string", default: "64" },
    ports: { type: "string" },
    "router-url": { type: "string", multiple: true, default: [] },
    speedup: { type: "string", default: "50" },
  },
});
const n = Number(values.engines);
const ports = (values.ports ?? "")
  .split(",")
  .filter((p) => p !== "")
  .map(Number);
const engines: MockerHandle[] = [];
for (let i = 0; i < n; i++) {
  engines.push(
    await startMocker({
      port: ports[i] ?? 0,
      host: "127.0.0.1",
      blockSize: 16,
      kvBlocks: 16_384,
      routerUrls: values["router-url"],
      // Fast engines: the bench measures the routers, not the simulated prefill and decode.
      speedup: Number(values.speedup),
      seed: i + 1,
      log: () => {},
    }),
  );
}
console.log(JSON.stringify({ urls: engines.map((e) => e.url) }));
process.on("SIGTERM", async () => {
  await Promise.all(engines.map((e) => e.stop()));
  process.exit(0);
});
