/** --engines N: simulated engines started in this process, registering with the router at `routerUrl`. */
import type { Logger } from "../../core/logger.ts";
import type { Config } from "../../config/schema.ts";
import { startMocker, type MockerHandle } from "../../mocker/index.ts";

export async function startEmbeddedEngines(config: Config, routerUrl: string, log: Logger): Promise<MockerHandle[]> {
  const mockers: MockerHandle[] = [];
  for (let i = 0; i < config.engines; i++) {
    mockers.push(
      await startMocker({
        port: 0,
        host: "127.0.0.1",
        blockSize: config.blockSize,
        routerUrl,
        adminToken: config.adminToken,
        speedup: config.engineSpeedup,
        // The embedded engines tokenize with the default tokenizer, as the router does.
        tokenizer: config.tokenizers.find((t) => t.model === undefined)?.path,
        seed: i + 1,
        log: (line) => log.warn(`[engine ${i}] ${line}`),
      }),
    );
  }
  return mockers;
}
