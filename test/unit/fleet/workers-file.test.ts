import { describe, expect, test } from "bun:test";
import { RouterError } from "../../../src/core/errors.ts";
import { workerIdFromUrl } from "../../../src/core/worker-id.ts";
import type { WorkerSpec } from "../../../src/fleet/worker-spec.ts";
import { diffWorkers, parseWorkersFile } from "../../../src/fleet/workers-file.ts";
import { WorkersFileWatch } from "../../../src/fleet/workers-file-watch.ts";
import { until } from "../../support/processes.ts";

const yaml = (t: string) => Bun.YAML.parse(t);
const A = "http://10.0.0.1:8000";
const B = "http://10.0.0.2:8000";

function problem(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    if (e instanceof RouterError) return e.message;
    throw e;
  }
  throw new Error("no error");
}

describe("parseWorkersFile", () => {
  test("JSON list or {workers}, YAML by extension; strings are URLs; kv_events carries its rank count", () => {
    const json = parseWorkersFile(
      JSON.stringify([A, { url: B, kv_events: { endpoint: "tcp://10.0.0.2:5557", dp_ranks: 2 } }]),
      "/etc/w.json",
      yaml,
    );
    expect(json.map((w) => w.id)).toEqual([workerIdFromUrl(A), workerIdFromUrl(B)]);
    expect(json[1]!.spec.dpRanks).toBe(2);
    expect(json[1]!.spec.kvEvents).toEqual({
      endpoint: "tcp://10.0.0.2:5557",
      replayEndpoint: undefined,
      dpRanks: 2,
      topic: "",
    });
    const y = parseWorkersFile(
      `workers:\n  - url: ${A}\n    id: "42"\n  - ${B}\n`,
      "/etc/w.yaml",
      yaml,
    );
    expect(y.map((w) => w.id)).toEqual([42n, workerIdFromUrl(B)]);
  });

  test("bad files name what is wrong: syntax, shape, the entry and field, duplicates", () => {
    expect(problem(() => parseWorkersFile("[", "w.json", yaml))).toContain(
      "w.json: not valid JSON",
    );
    expect(problem(() => parseWorkersFile("a: [", "w.yml", yaml))).toContain("not valid YAML");
    expect(
      problem(() =>
        parseWorkersFile("workers:\n  - url: http://e:1\n   url: http://e:2\n", "w.yml", yaml),
      ),
    ).toContain("w.yml: not valid YAML at line 3, column");
    expect(problem(() => parseWorkersFile('{"x": 1}', "w.json", yaml))).toContain(
      'expected a list of workers, or {"workers": [...]}',
    );
    expect(
      problem(() => parseWorkersFile(JSON.stringify([A, { url: B, dp_ranks: 0 }]), "w.json", yaml)),
    ).toContain("workers[1]: dp_ranks: must be >= 1");
    expect(
      problem(() =>
        parseWorkersFile(
          JSON.stringify([{ url: A, kv_events: { endpoint: "tcp://h" } }]),
          "w.json",
          yaml,
        ),
      ),
    ).toContain("kv_events.endpoint");
    expect(problem(() => parseWorkersFile(JSON.stringify([A, `${A}/`]), "w.json", yaml))).toContain(
      "workers[1] is the same worker as workers[0]",
    );
    expect(problem(() => parseWorkersFile(JSON.stringify(["ftp://x"]), "w.json", yaml))).toContain(
      "workers[0].url",
    );
    expect(
      problem(() =>
        parseWorkersFile(JSON.stringify([{ url: A, tokenizer: "/m" }]), "w.json", yaml),
      ),
    ).toContain("tokenizer: unknown field");
  });
});

describe("diffWorkers", () => {
  test("new entries are added, gone ones removed, edited ones removed then added", () => {
    const [a, b] = parseWorkersFile(JSON.stringify([A, B]), "w.json", yaml);
    const [b2] = parseWorkersFile(JSON.stringify([{ url: B, dp_ranks: 2 }]), "w.json", yaml);
    expect(diffWorkers(new Map(), [a!, b!])).toEqual({ remove: [], add: [a!, b!] });
    expect(
      diffWorkers(
        new Map([
          [a!.id, a!.fingerprint],
          [b!.id, b!.fingerprint],
        ]),
        [b!],
      ),
    ).toEqual({ remove: [a!.id], add: [] });
    expect(diffWorkers(new Map([[b!.id, b!.fingerprint]]), [b2!])).toEqual({
      remove: [b!.id],
      add: [b2!],
    });
  });
});

describe("WorkersFileWatch", () => {
  function setup(initial: string) {
    const files = { text: initial, fail: false };
    const registered = new Map<bigint, WorkerSpec>();
    const errors: string[] = [];
    const clock = { ms: 0 };
    let refuse = false;
    const w = new WorkersFileWatch({
      settleMs: 500,
      path: "/mnt/cfg/workers.json",
      readFile: async () => {
        if (files.fail) throw new Error("ENOENT");
        return files.text;
      },
      parseYaml: yaml,
      register: async (spec) => {
        if (refuse) throw new Error("block_size: mismatch");
        registered.set(spec.id ?? workerIdFromUrl(spec.url), spec);
      },
      remove: (id) => void registered.delete(id),
      isRegistered: (id) => registered.has(id),
      now: () => clock.ms,
      retryMs: 1_000,
      log: { info() {}, warn() {}, error: (m) => void errors.push(m) },
    });
    return { w, files, registered, errors, clock, refuse: (v: boolean) => (refuse = v) };
  }

  test("reconciles on each check; a bad or unreadable file keeps the set and is logged once", async () => {
    const s = setup(JSON.stringify([A]));
    await s.w.check();
    expect([...s.registered.keys()]).toEqual([workerIdFromUrl(A)]);
    s.files.text = JSON.stringify([B]);
    await s.w.check();
    expect([...s.registered.keys()]).toEqual([workerIdFromUrl(B)]);
    s.files.text = "{broken";
    await s.w.check();
    s.clock.ms += 500;
    await s.w.check();
    await s.w.check();
    expect([...s.registered.keys()]).toEqual([workerIdFromUrl(B)]);
    expect(s.errors).toHaveLength(1);
    s.files.fail = true;
    await s.w.check();
    s.clock.ms += 500;
    await s.w.check();
    expect([...s.registered.keys()]).toEqual([workerIdFromUrl(B)]);
    expect(s.errors[1]).toContain("cannot read");
  });

  test("a file read mid-write (cut short, then whole) logs nothing; one still unreadable after settleMs is an error", async () => {
    const whole = JSON.stringify([A, B]);
    const s = setup(JSON.stringify([A]));
    await s.w.check();
    for (const partial of ["", whole.slice(0, 20)]) {
      s.files.text = partial; // truncated, then half written
      await s.w.check();
      s.clock.ms += 100;
      await s.w.check(); // the same cut text again, before settleMs: still not an error
    }
    s.files.text = whole;
    await s.w.check();
    expect(s.errors).toEqual([]);
    expect(s.registered.size).toBe(2);
    s.files.text = whole.slice(0, 20);
    await s.w.check();
    s.clock.ms += 499;
    await s.w.check();
    expect(s.errors).toEqual([]);
    s.clock.ms += 1;
    await s.w.check();
    expect(s.errors).toHaveLength(1);
    expect(s.errors[0]).toContain("not valid JSON");
    expect(s.registered.size).toBe(2); // the last good list is kept
  });

  test("a failed registration is not retried before retryMs; a removed listed worker comes back", async () => {
    const s = setup(JSON.stringify([A]));
    s.refuse(true);
    await s.w.check();
    await s.w.check();
    expect(s.errors).toHaveLength(1); // the clock did not move: no second try
    s.refuse(false);
    s.files.text = JSON.stringify([A, B]); // a new file retries at once
    await s.w.check();
    expect(s.registered.size).toBe(2);
    s.registered.delete(workerIdFromUrl(A)); // DELETE /v1/workers
    await s.w.check();
    expect(s.registered.has(workerIdFromUrl(A))).toBe(true);
  });

  test("workers not from the file are never removed", async () => {
    const s = setup(JSON.stringify([A]));
    s.registered.set(7n, { url: "http://other:1" });
    await s.w.check();
    s.files.text = "[]";
    await s.w.check();
    expect([...s.registered.keys()]).toEqual([7n]);
  });
});

describe("WorkersFileWatch polling", () => {
  test("the timer reads the file only when its version changed; a worker removed meanwhile is put back without a read", async () => {
    const file = { text: JSON.stringify([A]), version: "v1", looks: 0 };
    const registered = new Set<bigint>();
    const w = new WorkersFileWatch({
      path: "/mnt/cfg/workers.json",
      pollMs: 5,
      readFile: async () => file.text,
      fileVersion: async () => {
        file.looks++;
        return file.version;
      },
      parseYaml: yaml,
      register: async (spec) => void registered.add(spec.id ?? workerIdFromUrl(spec.url)),
      remove: (id) => void registered.delete(id),
      isRegistered: (id) => registered.has(id),
      now: () => 0,
      log: { info() {}, warn() {}, error() {} },
    });
    await w.start();
    try {
      expect(w.reads).toBe(1);
      await until(() => file.looks >= 12, "a dozen polls", 2_000, 5);
      expect(w.reads).toBe(1); // before: one read per poll, whatever the file's size
      registered.clear();
      await until(() => registered.has(workerIdFromUrl(A)), "the removed worker back", 2_000, 5);
      expect(w.reads).toBe(1);
      file.text = JSON.stringify([A, B]);
      file.version = "v2";
      await until(() => registered.has(workerIdFromUrl(B)), "the new version applied", 2_000, 5);
      expect(w.reads).toBe(2);
    } finally {
      w.stop();
    }
  });
});
