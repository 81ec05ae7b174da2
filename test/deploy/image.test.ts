/**
 * The container image, built from the repository's Containerfile and run as containers:
 * the router and two simulated engines from the same image (host network, ports chosen at
 * run time), with the pod settings of deploy/kubernetes (non-root, read-only root file
 * system with a writable /tmp, no capabilities, no privilege escalation).
 *
 * No image registry is reachable where this was written, so both base images come from
 * Debian's packages (deploy/image/debian-bases.sh: mmdebstrap + podman import) and reach the
 * Containerfile as its BUILD_BASE / RUNTIME_BASE build arguments: the same file, the same
 * stages a `docker build .` runs with oven/bun and debian:bookworm-slim.
 *
 * The commands are docs/deploying.md's own (doc-commands.ts): its host setting writes the
 * containers.conf CONTAINERS_CONF points at, its build line builds the image, and its run line
 * (`serve --engines 2` on a published port) must answer a completion.
 *
 * Slow (a few minutes from nothing; the bases are kept between runs, keyed by the script's
 * content and Bun's version). SWITCHYARD_IMAGE_TEST=1 runs it and fails when a tool is
 * missing; =0 skips it (.ci/run sets that when no image input changed); unset: it runs when
 * podman, runc and mmdebstrap are installed. Root is needed (mmdebstrap, podman storage).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePorts, until } from "../support/processes.ts";
import { imageDocCommands, runHostSetting, shellWords } from "./doc-commands.ts";

const ROOT = join(import.meta.dir, "..", "..");
const FORCE = process.env.SWITCHYARD_IMAGE_TEST;
const missing = ["podman", "runc", "mmdebstrap"].filter((t) => Bun.which(t) === null);
const skipReason =
  FORCE === "0"
    ? "SWITCHYARD_IMAGE_TEST=0 (.ci/run sets it when the last commit changed no image input, or when not root; its log says which)"
    : missing.length > 0 && FORCE !== "1"
      ? `${missing.join(", ")} not installed and SWITCHYARD_IMAGE_TEST unset (apt-get install -y podman runc mmdebstrap; SWITCHYARD_IMAGE_TEST=1 makes a missing tool a failure)`
      : undefined;
if (skipReason !== undefined) console.log(`[deploy/image] skipped: ${skipReason}`);

/** The uid:gid the Containerfile runs as (USER). */
const IMAGE_USER = "10001:10001";
/** Drain timeout the router container gets; the SIGTERM test must exit well inside it. */
const DRAIN_TIMEOUT_S = 20;
const BUILD_DEADLINE_MS = 15 * 60_000;

const work = mkdtempSync(join(tmpdir(), "sy-image-test-"));
// docs/deploying.md's own lines: its host setting (podman's default ulimits off, refused on
// the machines this was written on), then its build and run lines (doc-commands.ts).
const doc = imageDocCommands();
const containersConf = runHostSetting(doc.hostSetting, work).path;
const env = { ...process.env, CONTAINERS_CONF: containersConf };
/** The page's tag, replaced by this run's own (the only change made to the page's lines). */
const DOC_TAG = "switchyard:0.1.0";
// Debian's default runtime (crun) fails on hybrid cgroups here; runc works everywhere podman does.
const RUNTIME = Bun.which("runc") !== null ? ["--runtime", "runc"] : [];

const run = `${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
const IMAGE = `localhost/switchyard-image-test:${run}`;
const started: string[] = [];

interface Result {
  code: number;
  out: string;
  err: string;
}

/** Run podman with a deadline; never hangs the suite (SIGKILL at the deadline). */
async function podman(args: readonly string[], deadlineMs = 60_000): Promise<Result> {
  let proc;
  try {
    proc = Bun.spawn({
      cmd: ["podman", ...args],
      env,
      cwd: ROOT,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
  } catch (e) {
    return { code: 127, out: "", err: `podman: ${(e as Error).message}` }; // not installed
  }
  const timer = setTimeout(() => proc.kill("SIGKILL"), deadlineMs);
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  clearTimeout(timer);
  return { code, out, err };
}

async function podmanOk(args: readonly string[], deadlineMs?: number): Promise<string> {
  const r = await podman(args, deadlineMs);
  if (r.code !== 0) throw new Error(`podman ${args.join(" ")} exited ${r.code}\n${r.err}${r.out}`);
  return r.out.trim();
}

/** The settings deploy/kubernetes gives the router's pod, as podman flags. */
const POD_LIKE = [
  "--network",
  "host",
  "--read-only",
  "--read-only-tmpfs=false",
  "--tmpfs",
  "/tmp", // readOnlyRootFilesystem + emptyDir /tmp
  "--cap-drop",
  "ALL", // capabilities: drop ALL
  "--security-opt",
  "no-new-privileges", // allowPrivilegeEscalation: false
];

/** Start a detached container from the test image; its name is kept for afterAll. */
async function startContainer(role: string, args: readonly string[]): Promise<string> {
  const name = `sy-image-test-${run}-${role}`;
  started.push(name);
  await podmanOk(["run", "-d", "--name", name, ...RUNTIME, ...POD_LIKE, IMAGE, ...args]);
  return name;
}

/** Wait for the `{"url","port"}` line every command prints on stdout once it listens. */
async function listening(name: string): Promise<void> {
  await until(
    async () => {
      const r = await podman(["logs", name], 10_000);
      return r.out.split("\n").some((l) => l.startsWith("{") && l.includes('"port"'));
    },
    `${name} to print its address`,
    30_000,
    100,
  );
}

async function logs(name: string): Promise<string> {
  const r = await podman(["logs", name], 10_000);
  return `--- ${name} stdout\n${r.out}\n--- ${name} stderr\n${r.err}`;
}

afterAll(async () => {
  try {
    // Every container this run started, by name, then the image; the bases stay (cache).
    // Nothing to remove when the suite was skipped (podman may not even exist then).
    if (started.length > 0) await podman(["rm", "--force", "--time", "0", ...started], 60_000);
    if (skipReason === undefined) await podman(["rmi", "--force", IMAGE], 60_000);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

describe.skipIf(skipReason !== undefined)("container image (Containerfile)", () => {
  const state = { built: false, routerPort: 0, enginePorts: [0, 0], router: "", engines: ["", ""] };

  test(
    "builds from Debian-made bases with the Containerfile's build arguments",
    async () => {
      // Bases keyed by what makes them: the script and the Bun copied into the build base.
      const bunVersion = Bun.version;
      const key = createHash("sha256")
        .update(readFileSync(join(ROOT, "deploy/image/debian-bases.sh")))
        .update(bunVersion)
        .digest("hex")
        .slice(0, 12);
      const runtimeBase = `localhost/switchyard-test-base/runtime:${key}`;
      const buildBase = `localhost/switchyard-test-base/build:${key}`;
      const have = await Promise.all(
        [runtimeBase, buildBase].map((t) => podman(["image", "exists", t])),
      );
      const t0 = performance.now();
      if (have.some((r) => r.code !== 0)) {
        const proc = Bun.spawn({
          cmd: ["bash", join(ROOT, "deploy/image/debian-bases.sh"), runtimeBase, buildBase],
          env,
          cwd: ROOT,
          stdin: "ignore",
          stdout: "pipe",
          stderr: "pipe",
        });
        const timer = setTimeout(() => proc.kill("SIGKILL"), 10 * 60_000);
        const [out, err, code] = await Promise.all([
          new Response(proc.stdout).text(),
          new Response(proc.stderr).text(),
          proc.exited,
        ]);
        clearTimeout(timer);
        if (code !== 0)
          throw new Error(`debian-bases.sh exited ${code}\n${err.slice(-4000)}${out.slice(-2000)}`);
        console.log(
          `[deploy/image] bases made in ${((performance.now() - t0) / 1000).toFixed(0)} s`,
        );
      }
      const t1 = performance.now();
      // The page's build line as the shell expands it, its tag replaced by this run's; before
      // it, what this host needs: chroot isolation, the Debian-made bases (no registry), and
      // --layers=false (no intermediate images left behind: the ~600 MB build stage).
      const docBuild = shellWords(doc.build, ROOT).map((a) => (a === DOC_TAG ? IMAGE : a));
      expect(docBuild).toContain(IMAGE);
      await podmanOk(
        [
          "build",
          "--isolation",
          "chroot",
          "--layers=false",
          "--build-arg",
          `BUILD_BASE=${buildBase}`,
          "--build-arg",
          `RUNTIME_BASE=${runtimeBase}`,
          ...docBuild,
        ],
        BUILD_DEADLINE_MS,
      );
      const buildS = (performance.now() - t1) / 1000;
      const size = Number(await podmanOk(["image", "inspect", "--format", "{{.Size}}", IMAGE]));
      const baseSize = Number(
        await podmanOk(["image", "inspect", "--format", "{{.Size}}", runtimeBase]),
      );
      console.log(
        `[deploy/image] image ${(size / 1e6).toFixed(0)} MB (runtime base ${(baseSize / 1e6).toFixed(0)} MB), ` +
          `podman build ${buildS.toFixed(0)} s (no layer cache)`,
      );
      // The binary alone is ~120 MB (Bun's runtime); a base, libzmq5 and the binary stay
      // under 300 MB. A layer that keeps apt's caches or the build tools breaks this.
      expect(size).toBeLessThan(300e6);
      expect(size - baseSize).toBeLessThan(160e6);
      state.built = true;
    },
    BUILD_DEADLINE_MS + 11 * 60_000,
  );

  test("runs as a numeric non-root user, with the binary as entrypoint and serve as command", async () => {
    expect(state.built).toBe(true);
    const cfg = JSON.parse(
      await podmanOk(["image", "inspect", "--format", "{{json .Config}}", IMAGE]),
    ) as {
      User: string;
      Entrypoint: string[];
      Cmd: string[];
    };
    expect(cfg.User).toBe(IMAGE_USER);
    expect(cfg.Entrypoint).toEqual(["/usr/local/bin/switchyard"]);
    expect(cfg.Cmd).toEqual(["serve"]);
  });

  test("routes a completion: router + 2 simulated engines, all three from the image", async () => {
    expect(state.built).toBe(true);
    const [routerPort, e1, e2] = freePorts(3) as [number, number, number];
    state.routerPort = routerPort;
    state.enginePorts = [e1, e2];
    const routerUrl = `http://127.0.0.1:${routerPort}`;
    // Engines push KV events to the router (loopback: host network, so no admin token needed).
    state.engines = await Promise.all(
      [e1, e2].map((p, i) =>
        startContainer(`engine${i}`, ["mocker", "--port", String(p), "--router-url", routerUrl]),
      ),
    );
    state.router = await startContainer("router", [
      "serve",
      "--port",
      String(routerPort),
      "--host",
      "127.0.0.1",
      "--worker",
      `http://127.0.0.1:${e1}`,
      "--worker",
      `http://127.0.0.1:${e2}`,
      "--drain-timeout",
      String(DRAIN_TIMEOUT_S),
      "--health-interval",
      "0.5",
    ]);
    try {
      await Promise.all([...state.engines, state.router].map(listening));
      await until(
        async () => {
          const r = await fetch(`${routerUrl}/health`);
          const body = (await r.json()) as { healthy_workers?: number };
          return r.status === 200 && body.healthy_workers === 2;
        },
        "both engines healthy behind the router",
        30_000,
        100,
      );

      const workers = (await (await fetch(`${routerUrl}/v1/workers`)).json()) as {
        workers: { id: string }[];
      };
      const ids = workers.workers.map((w) => w.id);
      const complete = (prompt: string) =>
        fetch(`${routerUrl}/v1/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ prompt, max_tokens: 8 }),
        });
      const prefix = "You are a helpful assistant in a container. ".repeat(8);
      const first = await complete(`${prefix}Tell me about KV caches.`);
      expect(first.status).toBe(200);
      const w1 = first.headers.get("x-switchyard-worker");
      expect(ids).toContain(w1!);
      expect(first.headers.get("x-switchyard-dp-rank")).toBe("0");
      expect(first.headers.get("x-switchyard-overlap-blocks")).toBe("0");
      const answer = (await first.json()) as { choices: { text: string }[] };
      expect(answer.choices[0]!.text.length).toBeGreaterThan(0);
      // The same long prefix again: the router's index (hashed by the embedded native
      // library) sends it to the same engine and counts the cached blocks.
      const second = await complete(`${prefix}And about routers?`);
      expect(second.status).toBe(200);
      expect(second.headers.get("x-switchyard-worker")).toBe(w1);
      expect(Number(second.headers.get("x-switchyard-overlap-blocks"))).toBeGreaterThan(0);
      await second.arrayBuffer();
    } catch (e) {
      console.error(await logs(state.router));
      throw e;
    }
  }, 90_000);

  test("the page's run line: serve --engines 2 answers a completion on the published port", async () => {
    expect(state.built).toBe(true);
    const [hostPort] = freePorts(1) as [number];
    // As written, but detached and named (removed in afterAll), on a free host port, with runc.
    const docRun = shellWords(doc.run, ROOT).map((a) =>
      a === DOC_TAG ? IMAGE : a === "8080:8080" ? `${hostPort}:8080` : a,
    );
    expect(docRun).toContain(IMAGE);
    expect(docRun).toContain(`${hostPort}:8080`);
    const name = `sy-image-test-${run}-doc-run`;
    started.push(name);
    await podmanOk(["run", "-d", "--name", name, ...RUNTIME, ...docRun]);
    try {
      const url = `http://127.0.0.1:${hostPort}`;
      await until(
        async () => {
          const r = await fetch(`${url}/health`).catch(() => undefined);
          return (
            r !== undefined &&
            r.status === 200 &&
            ((await r.json()) as { healthy_workers?: number }).healthy_workers === 2
          );
        },
        "the page's container to answer /health with its 2 engines",
        60_000,
        200,
      );
      const r = await fetch(`${url}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ prompt: "hello from the docs", max_tokens: 4 }),
      });
      expect(r.status).toBe(200);
      expect(
        ((await r.json()) as { choices: { text: string }[] }).choices[0]!.text.length,
      ).toBeGreaterThan(0);
    } catch (e) {
      console.error(await logs(name));
      throw e;
    }
  }, 90_000);

  test("the router's process runs as uid/gid 10001", async () => {
    expect(state.router).not.toBe("");
    const pid = Number(await podmanOk(["inspect", "--format", "{{.State.Pid}}", state.router]));
    expect(pid).toBeGreaterThan(0);
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    // Real, effective, saved and file-system ids, read from the host: no tool in the image needed.
    expect(status).toMatch(/^Uid:\s+10001\s+10001\s+10001\s+10001$/m);
    expect(status).toMatch(/^Gid:\s+10001\s+10001\s+10001\s+10001$/m);
    expect(status).toMatch(/^NoNewPrivs:\s+1$/m);
    expect(status).toMatch(/^CapEff:\s+0+$/m);
  });

  test("the embedded native hasher and Debian's libzmq load inside the image", async () => {
    expect(state.router).not.toBe("");
    // Unpacked from the binary into the writable /tmp under a read-only root.
    expect(await logs(state.router)).toContain("block hasher: native");
    // Registering a worker with a ZMQ KV event stream dlopens libzmq.so.5 and subscribes
    // (libzmq connects lazily, so no publisher is needed); without libzmq5 this is a 503.
    const [zmqPort, enginePort] = freePorts(2) as [number, number];
    const r = await fetch(`http://127.0.0.1:${state.routerPort}/v1/workers`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        url: `http://127.0.0.1:${enginePort}`,
        kv_events: { endpoint: `tcp://127.0.0.1:${zmqPort}` },
      }),
    });
    const body = (await r.json()) as { id: string };
    expect(r.status).toBe(201);
    await until(
      async () =>
        (await logs(state.router)).match(/subscribed to vLLM KV events .*libzmq=4\.\d+\.\d+/),
      "the ZMQ subscription log line",
      10_000,
      100,
    );
    const del = await fetch(`http://127.0.0.1:${state.routerPort}/v1/workers/${body.id}`, {
      method: "DELETE",
    });
    expect(del.status).toBeLessThan(300);
  });

  test("SIGTERM drains: the stream in flight finishes, /health says draining, exit 0 within the drain timeout", async () => {
    expect(state.router).not.toBe("");
    const base = `http://127.0.0.1:${state.routerPort}`;
    // ~300 decode steps of 10 ms on the simulated engine: ~3 s in flight.
    const res = await fetch(`${base}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: "drain me", max_tokens: 300, stream: true }),
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const dec = new TextDecoder();
    let text = dec.decode((await reader.read()).value ?? new Uint8Array(), { stream: true });
    expect(text).toContain("data: ");

    const t0 = performance.now();
    await podmanOk(["kill", "--signal", "TERM", state.router]);
    await until(
      async () => {
        const h = await fetch(`${base}/health`);
        return h.status === 503 && ((await h.json()) as { status: string }).status === "draining";
      },
      "/health to answer 503 draining",
      5_000,
      20,
    );

    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += dec.decode(value, { stream: true });
    }
    expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true);
    const streamEnd = performance.now();

    const waited = await podman(["wait", state.router], (DRAIN_TIMEOUT_S + 10) * 1000);
    const exited = performance.now();
    expect(waited.code).toBe(0);
    expect(waited.out.trim()).toBe("0"); // the container's exit status
    // It waited for the stream, and left well before the drain timeout would have cut it.
    expect(exited).toBeGreaterThanOrEqual(streamEnd - 50);
    expect(exited - t0).toBeLessThan(DRAIN_TIMEOUT_S * 1000);
    expect(await logs(state.router)).toContain("drained: every in-flight request finished");
  }, 60_000);

  test("the same image runs the transfer agent; without a writable /tmp the binary cannot start", async () => {
    expect(state.built).toBe(true);
    const oneShot = (role: string) => {
      const name = `sy-image-test-${run}-${role}`;
      started.push(name); // removed in afterAll even if the deadline kills podman first
      return ["run", "--rm", "--name", name, ...RUNTIME];
    };
    const help = await podman([...oneShot("transfer-help"), IMAGE, "transfer", "--help"], 30_000);
    expect(help.code).toBe(0);
    expect(help.out).toContain("switchyard transfer");
    // Why deploy/kubernetes mounts an emptyDir on /tmp: Bun unpacks the embedded native
    // libraries there at start, and a read-only root without one fails.
    const ro = await podman(
      [
        ...oneShot("read-only"),
        "--network",
        "host",
        "--read-only",
        "--read-only-tmpfs=false",
        IMAGE,
        "serve",
        "--port",
        "0",
        "--host",
        "127.0.0.1",
      ],
      30_000,
    );
    expect(ro.code).not.toBe(0);
  }, 70_000);
});
