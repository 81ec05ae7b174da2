/**
 * Debian's headless Chromium driven by playwright-core (its executablePath), for tests that
 * check what a person sees. Screenshots go to .artifacts/ (git-ignored), kept as test output.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser } from "playwright-core";
import { CHROMIUM } from "./debian-tools.ts";
import { ROOT } from "./processes.ts";

export const ARTIFACTS = join(ROOT, ".artifacts");

export async function launchChromium(): Promise<Browser> {
  // --no-sandbox: CI and these machines run as root, where Chromium's sandbox refuses to start.
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
  });
}

/** Where a test's screenshot goes: .artifacts/<folder>/<name>.png (the folder made on demand). */
export function artifactPath(folder: string, name: string): string {
  const dir = join(ARTIFACTS, folder);
  mkdirSync(dir, { recursive: true });
  return join(dir, `${name}.png`);
}
