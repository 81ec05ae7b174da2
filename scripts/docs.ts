/**
 * `bun run docs`: writes docs/reference/flags.md from the options tables of `serve`, `mocker`
 * and `transfer` (src/config/flag-reference.ts renders it). test/docs/flag-reference.test.ts
 * fails when the committed page differs from what this would write, so run it after changing
 * an option and commit the page with the change.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { flagReference } from "../src/config/flag-reference.ts";
import { envNames, SERVE_OPTION_LIST } from "../src/config/schema.ts";
import { listOptions } from "../src/config/option-table.ts";
import { MOCKER_OPTIONS } from "../src/mocker/options.ts";
import { TRANSFER_OPTIONS } from "../src/transfer/agent-options.ts";

export const FLAG_REFERENCE_PATH = join(import.meta.dir, "..", "docs", "reference", "flags.md");

/** The page as the tables say it today. */
export function renderFlagReference(): string {
  return flagReference([
    {
      command: "serve",
      intro:
        "The router. Each flag can also be set in the environment (the first variable listed that is set wins) or as a field of the `--config` file (JSON, or YAML for `.yaml`/`.yml`; `SWITCHYARD_CONFIG`). Runtimes: where the option may take a value other than its default (elsewhere it is refused by name at start).",
      options: SERVE_OPTION_LIST,
      env: envNames,
    },
    {
      command: "mocker",
      intro: "The simulated engine ([engines.md](../engines.md#simulated-engine)). Flags only.",
      options: listOptions(MOCKER_OPTIONS),
    },
    {
      command: "transfer",
      intro:
        "The KV block transfer agent ([engines.md](../engines.md#kv-block-transfers)). Flags only, but for the admin token.",
      options: listOptions(TRANSFER_OPTIONS),
    },
  ]);
}

if (import.meta.main) {
  writeFileSync(FLAG_REFERENCE_PATH, renderFlagReference());
  console.log(`wrote ${FLAG_REFERENCE_PATH}`);
}
