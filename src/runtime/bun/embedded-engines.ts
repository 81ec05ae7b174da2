/** --engines N: simulated engines started in this process, registering with the router at `routerUrl`. */
import type { Logger } from "../../core/logger.ts";
import type { Config } from "../../config/schema.ts";
import { startMocker, type MockerHandle } from "../../mocker/index.ts";

/**
 * `eventsToken`: what the engines push their events with (the router's own events token): the
 * router listens on every interface in the image, where no address is trusted.
 */
export async function startEmbeddedEngines(
  config: Config,
  routerUrl: string,
  eventsToken: string | undefined,
  log: Logger,
): Promise<MockerHandle[]> {
  const mockers: MockerHandle[] = [];
  for (let i = 0; i < config.engines; i++) {
    mockers.push(
      await startMocker({
        port: 0,
        host: "127.0.0.1",
        blockSize: config.blockSize,
        routerUrl,
        eventsToken,
        speedup: config.engineSpeedup,
        // The embedded engines tokenize with the default tokenizer, as the router does.
        tokenizer: config.tokenizers.find((t) => t.model === undefined)?.path,
        seed: i + 1,
        // Over --tls-cert the engines push to this very process on loopback, whatever name the
        // certificate carries.
        ...(routerUrl.startsWith("https:")
          ? {
              fetch: ((u, init) =>
                fetch(u, { ...init, tls: { rejectUnauthorized: false } })) as typeof fetch,
            }
          : {}),
        log: (line) => log.warn(`[engine ${i}] ${line}`),
      }),
    );
  }
  return mockers;
}
