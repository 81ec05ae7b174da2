/**
 * The image test runs docs/deploying.md's own commands (doc-commands.ts); this checks, without
 * podman, that the page's block reads as the image test expects: the host setting writes a
 * containers.conf turning podman's default ulimits off and exports CONTAINERS_CONF, and the
 * build and run lines expand to the arguments the page shows.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { imageDocCommands, runHostSetting, shellWords } from "./doc-commands.ts";

const ROOT = join(import.meta.dir, "..", "..");
const dir = mkdtempSync(join(tmpdir(), "sy-doc-commands-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("docs/deploying.md's image commands", () => {
  const doc = imageDocCommands();

  test("the host setting writes default_ulimits = [] and exports CONTAINERS_CONF pointing at it", () => {
    const { path, content } = runHostSetting(doc.hostSetting, dir);
    expect(path).toBe(join(dir, "containers.conf"));
    expect(content).toBe("[containers]\ndefault_ulimits = []\n");
  });

  test("build: a tag, the commit as a build argument (expanded by the shell), the repository as context", () => {
    const argv = shellWords(doc.build, ROOT);
    expect(argv[0]).toBe("-t");
    expect(argv[1]).toBe("switchyard:0.1.0");
    expect(argv[2]).toBe("--build-arg");
    expect(argv[3]).toMatch(/^SWITCHYARD_COMMIT=[0-9a-f]{7,}$/);
    expect(argv.at(-1)).toBe(".");
  });

  test("run: the published port, the tag, serve with two embedded engines", () => {
    expect(shellWords(doc.run, ROOT)).toEqual([
      "--rm",
      "-p",
      "8080:8080",
      "switchyard:0.1.0",
      "serve",
      "--engines",
      "2",
    ]);
  });

  test("extraction: comments dropped, a missing block or heading named", () => {
    expect(doc.lines.some((l) => l.includes("#") && !l.includes("'"))).toBe(false);
    expect(() =>
      imageDocCommands(
        "# x\n\n## Build the image\n\nno block\n\n## Next\n```sh\ndocker build .\n```\n",
      ),
    ).toThrow("no ```sh block");
    expect(() => imageDocCommands("# x\n")).toThrow('no "## Build the image" heading');
  });
});
