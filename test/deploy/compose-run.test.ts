/**
 * deploy/compose brought up in podman with docs/deploying.md's own Compose line: a router,
 * three simulated engines and Redis, each in its own container on the project's network.
 * A completion routes with overlap on its second turn (the engines' KV events, pushed from
 * their containers with SWITCHYARD_EVENTS_TOKEN, reached the router's index), no event push
 * was refused, and `compose down` leaves no container or network of the project behind.
 *
 * Gated exactly like the image test (SWITCHYARD_IMAGE_TEST; root, podman, runc, mmdebstrap),
 * plus podman-compose where podman has no `compose` subcommand (podman < 4.7; Debian's
 * podman-compose 1.0.3 here). No image registry is reachable where this was written, so the
 * images come from Debian's packages: the router/engine image is the Containerfile built on
 * deploy/image/debian-bases.sh's bases (as the image test does), Redis is Debian's
 * redis-server (deploy/image/redis-debian.Containerfile), both named to compose through
 * SWITCHYARD_IMAGE / REDIS_IMAGE. The page's line is run as written, with two changes:
 * `--build` is dropped (the image is built beforehand from the Debian bases; the
 * Containerfile's default bases need a registry) and `-p NAME` gives this run its own
 * project (container and network names). The secrets `.env.example` lists are made here and
 * passed in the environment (compose prefers it to `.env`); podman-compose 1.0.3 prints
 * every `podman run` line with its `-e NAME=value`, so whatever it prints is shown with the
 * secrets replaced.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePorts, until } from "../support/processes.ts";
import { composeDocCommand, imageDocCommands, runHostSetting, shellWords } from "./doc-commands.ts";
import { ensureTestBases, runWithDeadline } from "./test-bases.ts";

const ROOT = join(import.meta.dir, "..", "..");
const FORCE = process.env.SWITCHYARD_IMAGE_TEST;
const podmanHasCompose =
  Bun.which("podman") !== null &&
  Bun.spawnSync({ cmd: ["podman", "compose", "version"], stdout: "ignore", stderr: "ignore" })
    .exitCode === 0;
const COMPOSE = podmanHasCompose ? ["podman", "compose"] : ["podman-compose"];
const missing = [
  "podman",
  "runc",
  "mmdebstrap",
  ...(podmanHasCompose ? [] : ["podman-compose"]),
].filter((t) => Bun.which(t) === null);
const skipReason =
  FORCE === "0"
    ? "SWITCHYARD_IMAGE_TEST=0 (.ci/run sets it when the last commit changed no image input, or when not root; its log says which)"
    : missing.length > 0 && FORCE !== "1"
      ? `${missing.join(", ")} not installed and SWITCHYARD_IMAGE_TEST unset (apt-get install -y podman runc mmdebstrap podman-compose; SWITCHYARD_IMAGE_TEST=1 makes a missing tool a failure)`
      : undefined;
if (skipReason !== undefined) console.log(`[deploy/compose-run] skipped: ${skipReason}`);

const BUILD_DEADLINE_MS = 15 * 60_000;
const run = `${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
/** The compose project: every container and the network carry it in their names. */
const PROJECT = `sy-compose-test-${run}`;
const IMAGE = `localhost/switchyard-compose-test:${run}`;

const work = mkdtempSync(join(tmpdir(), "sy-compose-test-"));
// The page's host setting (podman's default ulimits off), as the image test runs it; compose
// passes no --runtime, so runc (Debian's crun fails on hybrid cgroups) goes in the same file.
const containersConf = runHostSetting(imageDocCommands().hostSetting, work).path;
if (Bun.which("runc") !== null) appendFileSync(containersConf, '[engine]\nruntime = "runc"\n');

// A value for every secret .env.example names (as `openssl rand -hex 24` would make it).
const doc = composeDocCommand();
const secretNames = readFileSync(join(ROOT, doc.envFile), "utf8")
  .split("\n")
  .map((l) => /^([A-Z_][A-Z0-9_]*)=/.exec(l)?.[1])
  .filter((n): n is string => n !== undefined);
const secrets = Object.fromEntries(secretNames.map((n) => [n, randomBytes(24).toString("hex")]));
const [routerPort] = skipReason === undefined ? (freePorts(1) as [number]) : [0];
const env: Record<string, string | undefined> = {
  ...process.env,
  CONTAINERS_CONF: containersConf,
  SWITCHYARD_IMAGE: IMAGE,
  SWITCHYARD_PORT: String(routerPort),
  ...secrets,
};

/** Any text this test shows, with every secret's value replaced. */
function redact(text: string): string {
  let out = text;
  for (const v of Object.values(secrets)) out = out.replaceAll(v, "***");
  return out;
}

async function podman(args: readonly string[], deadlineMs = 60_000) {
  return runWithDeadline(["podman", ...args], env, deadlineMs);
}

async function podmanOk(args: readonly string[], deadlineMs?: number): Promise<string> {
  const r = await podman(args, deadlineMs);
  if (r.code !== 0)
    throw new Error(redact(`podman ${args.join(" ")} exited ${r.code}\n${r.err}${r.out}`));
  return r.out.trim();
}

/** The page's compose line's arguments (minus --build), with this run's project name. */
function composeArgs(sub: "up" | "down"): string[] {
  const words = shellWords(doc.args, ROOT);
  const at = words.indexOf("up");
  const globals = words.slice(0, at); // -f deploy/compose/compose.yaml
  const up = words.slice(at + 1).filter((w) => w !== "--build");
  return ["-p", PROJECT, ...globals, ...(sub === "up" ? ["up", ...up] : ["down", "-t", "10"])];
}

async function compose(sub: "up" | "down"): Promise<void> {
  const r = await runWithDeadline([...COMPOSE, ...composeArgs(sub)], env, 5 * 60_000);
  if (r.code !== 0)
    throw new Error(
      redact(
        `${COMPOSE.join(" ")} ${sub} exited ${r.code}\n${r.err.slice(-4000)}${r.out.slice(-4000)}`,
      ),
    );
}

/** This project's containers (every state), by name. */
async function projectContainers(): Promise<string[]> {
  const out = await podmanOk([
    "ps",
    "-a",
    "--filter",
    `label=io.podman.compose.project=${PROJECT}`,
    "--format",
    "{{.Names}}",
  ]);
  return out.split("\n").filter((n) => n !== "");
}

async function logsOf(names: readonly string[]): Promise<string> {
  const parts = await Promise.all(
    names.map(async (n) => {
      const r = await podman(["logs", "--tail", "40", n], 10_000);
      return `--- ${n}\n${r.out}${r.err}`;
    }),
  );
  return redact(parts.join("\n"));
}

const state = { built: false, up: false };

afterAll(async () => {
  try {
    if (skipReason !== undefined) return;
    // The last test brings the project down; this removes what a failure left, by name.
    const left = await projectContainers().catch(() => [] as string[]);
    if (left.length > 0) await podman(["rm", "--force", "--time", "0", ...left], 60_000);
    await podman(["network", "rm", "--force", `${PROJECT}_default`], 60_000);
    await podman(["rmi", "--force", IMAGE], 60_000);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

describe.skipIf(skipReason !== undefined)("deploy/compose in podman", () => {
  test(
    "the router/engine image and a Debian-made Redis image are built",
    async () => {
      const bases = await ensureTestBases(env);
      if (bases.madeS !== undefined)
        console.log(`[deploy/compose-run] bases made in ${bases.madeS.toFixed(0)} s`);
      const t0 = performance.now();
      await podmanOk(
        [
          "build",
          "--isolation",
          "chroot",
          "--layers=false",
          "--build-arg",
          `BUILD_BASE=${bases.build}`,
          "--build-arg",
          `RUNTIME_BASE=${bases.runtime}`,
          "-t",
          IMAGE,
          ".",
        ],
        BUILD_DEADLINE_MS,
      );
      // Redis keyed by its Containerfile and the base, kept between runs like the bases.
      const redisFile = join(ROOT, "deploy/image/redis-debian.Containerfile");
      const redisKey = createHash("sha256")
        .update(readFileSync(redisFile))
        .update(bases.key)
        .digest("hex")
        .slice(0, 12);
      const redisImage = `localhost/switchyard-test-base/redis:${redisKey}`;
      if ((await podman(["image", "exists", redisImage])).code !== 0) {
        await podmanOk(
          [
            "build",
            "--isolation",
            "chroot",
            "--layers=false",
            "--build-arg",
            `BASE=${bases.runtime}`,
            "-f",
            redisFile,
            "-t",
            redisImage,
            join(ROOT, "deploy/image"),
          ],
          BUILD_DEADLINE_MS,
        );
      }
      env.REDIS_IMAGE = redisImage;
      console.log(
        `[deploy/compose-run] images built in ${((performance.now() - t0) / 1000).toFixed(0)} s`,
      );
      state.built = true;
    },
    BUILD_DEADLINE_MS + 11 * 60_000,
  );

  test(
    "the page's compose line brings up a router, three engines and Redis, each in its own container",
    async () => {
      expect(state.built).toBe(true);
      expect(secretNames.sort()).toEqual([
        "REDIS_PASSWORD",
        "SWITCHYARD_ADMIN_TOKEN",
        "SWITCHYARD_EVENTS_TOKEN",
      ]);
      await compose("up");
      state.up = true;
      const names = await projectContainers();
      const services = ["router", "engine-1", "engine-2", "engine-3", "redis"];
      try {
        for (const s of services) expect(names.some((n) => n.includes(s))).toBe(true);
        await until(
          async () => {
            const r = await fetch(`http://127.0.0.1:${routerPort}/health`).catch(() => undefined);
            return (
              r !== undefined &&
              r.status === 200 &&
              ((await r.json()) as { healthy_workers?: number }).healthy_workers === 3
            );
          },
          "the router's /health with its 3 engines healthy",
          90_000,
          250,
        );
        // Five containers, all still running: the engines are not in the router's container.
        const running = await podmanOk([
          "ps",
          "--filter",
          `label=io.podman.compose.project=${PROJECT}`,
          "--format",
          "{{.Names}}",
        ]);
        expect(running.split("\n").filter((n) => n !== "").length).toBe(5);
      } catch (e) {
        console.error(await logsOf(names));
        throw e;
      }
    },
    6 * 60_000,
  );

  test("a completion routes with overlap on its second turn; no event push was refused", async () => {
    expect(state.up).toBe(true);
    const base = `http://127.0.0.1:${routerPort}`;
    const complete = (prompt: string) =>
      fetch(`${base}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ prompt, max_tokens: 8 }),
      });
    const workerIds = (
      Bun.YAML.parse(readFileSync(join(ROOT, "deploy/compose/workers.yaml"), "utf8")) as {
        workers: { id: number }[];
      }
    ).workers.map((w) => String(w.id));
    try {
      const prefix = "You are a helpful assistant in a compose project. ".repeat(8);
      const first = await complete(`${prefix}Tell me about KV caches.`);
      expect(first.status).toBe(200);
      const w1 = first.headers.get("x-switchyard-worker");
      expect(workerIds).toContain(w1!);
      expect(first.headers.get("x-switchyard-overlap-blocks")).toBe("0");
      await first.arrayBuffer();
      // The engine's stored-block events travel from its container to the router's: the
      // second turn, same prefix, goes to the same engine with its cached blocks counted.
      // Polled: an engine pushes its events a moment after it answers.
      const metrics = async () => await (await fetch(`${base}/metrics`)).text();
      const stored = (m: string) =>
        Number(
          /^switchyard_kv_events_applied_total\{event_type="stored",status="ok"\} (\d+)/m.exec(
            m,
          )?.[1] ?? 0,
        );
      await until(
        async () => stored(await metrics()) > 0,
        "the engine's stored events applied by the router",
        30_000,
        100,
      );
      const second = await complete(`${prefix}And about routers?`);
      expect(second.status).toBe(200);
      expect(second.headers.get("x-switchyard-worker")).toBe(w1);
      expect(Number(second.headers.get("x-switchyard-overlap-blocks"))).toBeGreaterThan(0);
      await second.arrayBuffer();

      const m = await metrics();
      const refused = [
        ...m.matchAll(/^switchyard_kv_event_pushes_refused_total\{reason="([a-z_]+)"\} (\S+)$/gm),
      ];
      expect(refused.map((r) => r[1]).sort()).toEqual(["forbidden", "invalid", "missing"]);
      for (const r of refused) expect(`${r[1]}=${r[2]}`).toBe(`${r[1]}=0`);
      // Every pushed event named a worker the router knows (the ids workers.yaml pairs).
      expect(m).toMatch(/^switchyard_kv_events_dropped_total\{reason="unknown_worker"\} 0$/m);
    } catch (e) {
      console.error(await logsOf(await projectContainers()));
      throw e;
    }
  }, 90_000);

  test("compose down (this project, by name) leaves no container and no network behind", async () => {
    expect(state.up).toBe(true);
    await compose("down");
    // podman-compose 1.0.3's down removes the containers, not the network it made: removed
    // here by its name (docker compose and podman compose remove it themselves).
    if ((await podman(["network", "exists", `${PROJECT}_default`])).code === 0) {
      await podmanOk(["network", "rm", `${PROJECT}_default`]);
    }
    expect(await projectContainers()).toEqual([]);
    const all = await podmanOk(["ps", "-a", "--format", "{{.Names}}"]);
    expect(all.split("\n").filter((n) => n.startsWith(PROJECT))).toEqual([]);
    expect((await podman(["network", "exists", `${PROJECT}_default`])).code).not.toBe(0);
  }, 120_000);
});
