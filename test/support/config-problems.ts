/** What the serve config loader says is wrong with these flags and variables: none when it loads. */
import { ConfigError, loadConfig, type LoadSources } from "../../src/config/load.ts";

export function configProblems(
  argv: string[],
  env: Record<string, string> = {},
  runtime: LoadSources["runtime"] = "bun",
): string[] {
  try {
    loadConfig({ argv, env, runtime });
    return [];
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    return [...e.problems];
  }
}
