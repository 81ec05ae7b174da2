/**
 * The one command-line scanner of every command (`serve`, `mocker`, `transfer`, through their
 * options tables: src/config/option-table.ts): argv -> flags with their values, in order, and
 * every problem found on the way, so a user sees all of them at once. It knows no flag names;
 * the caller says which flags are switches and rejects unknown ones.
 *
 * Rules: `--flag value` and `--flag=value`; a value may not start with `--` (then the flag
 * "needs a value"); a switch stands alone (value "true") or takes an explicit `true`/`false`
 * after it or after `=`; anything not starting with `--` is an unexpected argument.
 *
 * Why not node:util's parseArgs: in strict mode it throws at the first
 * problem; in loose mode it takes a following `--flag` as the value of a string option, and an
 * unknown flag leaves its value behind as a positional. test/unit/config/flag-scan.test.ts pins
 * those behaviours, so a change in them shows up there. Pure.
 */

export type FlagItem =
  | { readonly flag: string; readonly value: string }
  | { readonly problem: string };

export function scanFlags(
  argv: readonly string[],
  isSwitch: (flag: string) => boolean,
): FlagItem[] {
  const out: FlagItem[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith("--")) {
      out.push({ problem: `unexpected argument "${arg}"` });
      continue;
    }
    const eq = arg.indexOf("=");
    const flag = eq >= 0 ? arg.slice(0, eq) : arg;
    let value: string | undefined = eq >= 0 ? arg.slice(eq + 1) : undefined;
    if (value === undefined && isSwitch(flag)) {
      // `--lora-evict` alone is true; an explicit true/false after it is its value.
      const next = argv[i + 1]?.toLowerCase();
      if (next === "true" || next === "false") i++;
      value = next === "false" ? "false" : "true";
    }
    if (value === undefined) {
      const next = argv[i + 1];
      if (next === undefined || next.startsWith("--")) {
        out.push({ problem: `${flag}: needs a value` });
        continue;
      }
      value = next;
      i++;
    }
    out.push({ flag, value });
  }
  return out;
}
