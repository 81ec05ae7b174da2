/**
 * The committed flag reference is what `bun run docs` writes from the options tables today, so
 * an option added, renamed or given a new default cannot leave the page behind.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { FLAG_REFERENCE_PATH, renderFlagReference } from "../../scripts/docs.ts";
import { SERVE_OPTION_LIST } from "../../src/config/schema.ts";

describe("docs/reference/flags.md", () => {
  test("is what `bun run docs` would write (run it and commit the page)", () => {
    expect(readFileSync(FLAG_REFERENCE_PATH, "utf8")).toBe(renderFlagReference());
  });

  test("names every serve flag, once", () => {
    const page = renderFlagReference();
    const serve = page.slice(
      page.indexOf("## switchyard serve"),
      page.indexOf("## switchyard mocker"),
    );
    for (const o of SERVE_OPTION_LIST) expect(serve.split(`| \`${o.flag}\` |`).length - 1).toBe(1);
  });
});
