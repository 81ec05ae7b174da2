/**
 * deploy/compose/compose.yaml: a router, simulated engines and Redis in separate containers,
 * wired so precise KV events work between containers. Checked here without a container
 * runtime (the image test builds and runs the image itself):
 * - every engine has its own worker id, and the router's workers file names each engine by
 *   the URL the router reaches it at (service name, port) and that id: the events an engine
 *   pushes under its id land on the worker the router routes to;
 * - every engine pushes to the router's service and port, with the engine-to-router
 *   credential (SWITCHYARD_EVENTS_TOKEN, from .env), and never gets the admin token;
 * - no secret is on any command line; Redis turns user `default` off and defines the
 *   router's user from REDIS_PASSWORD, which the router's Redis URL carries;
 * - the router runs with the Kubernetes pod's settings (read-only root, /tmp tmpfs, no
 *   capabilities, no privilege escalation);
 * - `serve` accepts the workers file (the router itself checks its entries).
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..", "..");
const DIR = join(ROOT, "deploy", "compose");

interface Service {
  image: string;
  build?: { context: string; dockerfile: string };
  command: string[] | string;
  entrypoint?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  read_only?: boolean;
  tmpfs?: string[];
  cap_drop?: string[];
  security_opt?: string[];
}

const compose = Bun.YAML.parse(readFileSync(join(DIR, "compose.yaml"), "utf8")) as {
  services: Record<string, Service>;
};
const services = compose.services;
const workersFile = Bun.YAML.parse(readFileSync(join(DIR, "workers.yaml"), "utf8")) as {
  workers: { url: string; id: number }[];
};

function flag(argv: readonly string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
}

const engines = Object.entries(services).filter(
  ([, s]) => Array.isArray(s.command) && s.command[0] === "mocker",
);
const router = services.router!;
const routerArgv = router.command as string[];

describe("deploy/compose", () => {
  test("a router, at least two engines and Redis", () => {
    expect(routerArgv[0]).toBe("serve");
    expect(engines.length).toBeGreaterThanOrEqual(2);
    expect(services.redis).toBeDefined();
    // The router and the engines are one image, built from the repository's Containerfile.
    expect(router.build).toEqual({ context: "../..", dockerfile: "Containerfile" });
    for (const [, e] of engines) expect(e.image).toBe(router.image);
  });

  test("each engine's worker id is its own and is the id the router's workers file gives its URL", () => {
    const mount = router.volumes!.find(
      (v) => v.split(":")[1] === flag(routerArgv, "--workers-file"),
    );
    expect(mount?.split(":")[0]).toBe("./workers.yaml");
    const ids = new Set<string>();
    for (const [name, e] of engines) {
      const argv = e.command as string[];
      const id = flag(argv, "--worker-id")!;
      expect(id).toMatch(/^\d+$/);
      ids.add(id);
      // It listens on every interface of its container, on the port the router is told.
      expect(flag(argv, "--host")).toBe("0.0.0.0");
      const entry = workersFile.workers.find((w) => new URL(w.url).hostname === name);
      expect({ name, entry: entry !== undefined }).toEqual({ name, entry: true });
      expect(new URL(entry!.url).port).toBe(flag(argv, "--port")!);
      expect(String(entry!.id)).toBe(id);
    }
    expect(ids.size).toBe(engines.length);
    expect(workersFile.workers.length).toBe(engines.length);
  });

  test("engines push to the router's service with the events credential, never the admin token", () => {
    const routerPort = flag(routerArgv, "--port")!;
    const eventsToken = router.environment!.SWITCHYARD_EVENTS_TOKEN!;
    expect(eventsToken).toMatch(/^\$\{SWITCHYARD_EVENTS_TOKEN:\?/);
    for (const [name, e] of engines) {
      const argv = e.command as string[];
      expect({ name, to: flag(argv, "--router-url") }).toEqual({
        name,
        to: `http://router:${routerPort}`,
      });
      expect({ name, token: e.environment?.SWITCHYARD_EVENTS_TOKEN }).toEqual({
        name,
        token: eventsToken,
      });
      expect({
        name,
        admin: e.environment?.SWITCHYARD_ADMIN_TOKEN,
        flag: argv.includes("--admin-token"),
      }).toEqual({ name, admin: undefined, flag: false });
    }
    expect(router.environment!.SWITCHYARD_ADMIN_TOKEN).toMatch(/^\$\{SWITCHYARD_ADMIN_TOKEN:\?/);
    // The two credentials are different variables.
    expect(router.environment!.SWITCHYARD_ADMIN_TOKEN).not.toBe(eventsToken);
  });

  test("no secret on a command line; Redis requires the router's user and password", () => {
    for (const [name, s] of Object.entries(services)) {
      const argv = [
        ...(s.entrypoint ?? []),
        ...(Array.isArray(s.command) ? s.command : [s.command]),
      ].join(" ");
      for (const f of [
        "--admin-token",
        "--events-token",
        "--redis-token",
        "--redis ",
        "--requirepass",
        "${",
      ]) {
        expect({ name, has: f, found: argv.includes(f) }).toEqual({ name, has: f, found: false });
      }
    }
    const redis = services.redis!;
    const script = (Array.isArray(redis.command) ? redis.command : [redis.command]).join("\n");
    expect(script).toContain("user default off");
    expect(script).toContain("user switchyard on >%s");
    // $$ is compose's escape: the container's shell expands the variable, not compose.
    expect(script).toContain('"$$REDIS_PASSWORD"');
    expect(script).toContain("--aclfile");
    expect(redis.environment!.REDIS_PASSWORD).toMatch(/^\$\{REDIS_PASSWORD:\?/);
    const url = router.environment!.SWITCHYARD_REDIS_URL!;
    expect(url).toMatch(/^redis:\/\/switchyard:\$\{REDIS_PASSWORD:\?[^}]*\}@redis:6379$/);
  });

  test("the router and engines run with the Kubernetes pod's settings", () => {
    for (const [name, s] of [["router", router] as const, ...engines]) {
      expect({
        name,
        read_only: s.read_only,
        tmpfs: s.tmpfs,
        cap_drop: s.cap_drop,
        security_opt: s.security_opt,
      }).toEqual({
        name,
        read_only: true,
        tmpfs: ["/tmp"],
        cap_drop: ["ALL"],
        security_opt: ["no-new-privileges"],
      });
    }
    // Published on the host's loopback only: the admin token is the only thing between the
    // admin routes and whoever reaches the port.
    // (host port SWITCHYARD_PORT, 8080 by default: the compose test picks a free one).
    expect(router.ports).toEqual([
      `127.0.0.1:\${SWITCHYARD_PORT:-8080}:${flag(routerArgv, "--port")}`,
    ]);
  });

  test(".env.example names every variable compose.yaml requires", () => {
    const text = readFileSync(join(DIR, "compose.yaml"), "utf8");
    const required = new Set([...text.matchAll(/\$\{([A-Z_]+):\?/g)].map((m) => m[1]!));
    const example = readFileSync(join(DIR, ".env.example"), "utf8");
    const named = new Set([...example.matchAll(/^([A-Z_]+)=/gm)].map((m) => m[1]!));
    expect([...named].sort()).toEqual([...required].sort());
  });

  test("serve accepts the workers file (entries checked by the router itself)", async () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
      bin: Record<string, string>;
    };
    const proc = Bun.spawn({
      cmd: [
        process.execPath,
        join(ROOT, pkg.bin.switchyard!),
        "serve",
        "--workers-file",
        join(DIR, "workers.yaml"),
        "--port",
        "0",
        "--host",
        "127.0.0.1",
        "--health-interval",
        "60",
      ],
      cwd: ROOT,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    try {
      const reader = proc.stdout.getReader();
      let out = "";
      const deadline = Bun.sleep(15_000).then(() => "deadline" as const);
      while (!out.includes("\n")) {
        const next = await Promise.race([reader.read(), deadline]);
        if (next === "deadline" || next.done) break;
        out += new TextDecoder().decode(next.value);
      }
      if (!out.includes('"port"')) {
        proc.kill("SIGKILL");
        await proc.exited;
        throw new Error(
          `serve did not start (exit ${proc.exitCode}):\n${await new Response(proc.stderr).text()}`,
        );
      }
      const port = JSON.parse(out.split("\n")[0]!).port as number;
      // The three engines are registered (unreachable from here, so not healthy) under their ids.
      const workers = (await (await fetch(`http://127.0.0.1:${port}/v1/workers`)).json()) as
        | { workers?: { id: string; url: string }[] }
        | { id: string; url: string }[];
      const list = Array.isArray(workers) ? workers : (workers.workers ?? []);
      expect(list.map((w) => [new URL(w.url).hostname, String(w.id)]).sort()).toEqual(
        workersFile.workers.map((w) => [new URL(w.url).hostname, String(w.id)]).sort(),
      );
    } finally {
      proc.kill("SIGTERM");
      await proc.exited;
    }
  });
});
