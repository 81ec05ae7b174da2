/**
 * Keeps the registered workers in step with `--workers-file`. The file is read at start,
 * then again whenever its directory changes (a mounted ConfigMap is updated by swapping a
 * symlink in that directory, so watching the file itself would miss it). In case a change
 * notification is lost, its version (inode, size, mtime: `fileVersion`) is looked at every
 * `pollMs`, and the file is read again only when that changed or the last read failed: a
 * large file was read again every second whether or not it changed. Each read is reconciled: entries gone
 * from the file are removed, new or edited ones registered (edited = removed, then added),
 * and a file worker removed by other means (DELETE /v1/workers) is added back — the file is
 * the source of truth for the workers it lists; workers added otherwise are never touched.
 * A file that cannot be read or parsed keeps the last good set, and is logged once when the
 * same failure lasts (`settleMs`): a file read mid-write is whole a moment later. An
 * entry that fails to register is retried after `retryMs`. File reading and parsing are
 * injected (src/runtime/bun/workers-file.ts: a bounded read, the parse on a Worker).
 */
import type { Logger } from "../core/logger.ts";
import type { WorkerId } from "../core/ids.ts";
import type { WorkerSpec } from "./worker-spec.ts";
import {
  diffWorkers,
  parseWorkersFile,
  type WantedWorker,
  type YamlParse,
} from "./workers-file.ts";

export interface WorkersFileWatchOptions {
  readonly path: string;
  /** Re-read at least this often (ms; default 1000). */
  readonly pollMs?: number;
  /**
   * A file that cannot be read or parsed is logged only when it still fails this long after
   * the first failing read (ms; default pollMs): a file caught mid-write (truncated, then
   * written) fails once and is whole a moment later, and is no error.
   */
  readonly settleMs?: number;
  /** A failed registration is tried again after this long (ms; default 30000). */
  readonly retryMs?: number;
  readonly readFile: (path: string) => Promise<string>;
  /**
   * What names the file's current version without reading it (Bun: device, inode, size,
   * mtime). Without it every poll reads the file.
   */
  readonly fileVersion?: (path: string) => Promise<string>;
  readonly parseYaml: YamlParse;
  /**
   * Text -> the entries, parsed and checked off the event loop where the runtime can (Bun: a
   * Worker), so a large file does not stall the loop; rejects naming what is wrong. Without
   * it the file is parsed here with `parseYaml`.
   */
  readonly parseFile?: (text: string, path: string) => Promise<WantedWorker[]>;
  /** Change notifications for the file's directory; returns a stop function. Optional. */
  readonly watchDir?: (dir: string, onChange: () => void) => () => void;
  readonly register: (spec: WorkerSpec) => Promise<unknown>;
  readonly remove: (id: WorkerId) => void;
  readonly isRegistered: (id: WorkerId) => boolean;
  readonly now: () => number;
  readonly log: Pick<Logger, "info" | "warn" | "error">;
}

export class WorkersFileWatch {
  /** Workers this file registered: id → fingerprint of the entry. */
  readonly #applied = new Map<WorkerId, string>();
  readonly #failedAt = new Map<WorkerId, { fingerprint: string; at: number }>();
  #wanted: WantedWorker[] = [];
  #lastText: string | undefined;
  #lastProblem: string | undefined;
  /** The failure seen last (what failed, on which text) and when first: not logged until it lasts. */
  #unsettled: { key: string; at: number } | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #againRead = false;
  #timer: ReturnType<typeof setInterval> | undefined;
  #unwatch: (() => void) | undefined;
  #reads = 0;
  /** The version the last successful read saw; undefined after a failed one. */
  #readVersion: string | undefined;

  constructor(private readonly o: WorkersFileWatchOptions) {}

  /** Workers the file registered (for tests and logs). */
  get applied(): ReadonlyMap<WorkerId, string> {
    return this.#applied;
  }

  /** How many times the file was read. */
  get reads(): number {
    return this.#reads;
  }

  /** Read and apply once, then keep watching. */
  async start(): Promise<void> {
    await this.check();
    this.#timer = setInterval(() => void this.#poll(), this.o.pollMs ?? 1_000);
    const slash = this.o.path.lastIndexOf("/");
    const dir = slash > 0 ? this.o.path.slice(0, slash) : slash === 0 ? "/" : ".";
    try {
      this.#unwatch = this.o.watchDir?.(dir, () => void this.check());
    } catch (e) {
      this.o.log.warn(
        `--workers-file: cannot watch ${dir} (${(e as Error).message}); polling every ${this.o.pollMs ?? 1_000} ms`,
      );
    }
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#unwatch?.();
    this.#unwatch = undefined;
  }

  /**
   * The timer's look: read again only when the file's version changed (or the last read
   * failed, or nothing tells versions apart); a file listed worker removed by other means is
   * still put back, from the list already read.
   */
  async #poll(): Promise<void> {
    const version = this.o.fileVersion;
    if (version !== undefined && this.#readVersion !== undefined) {
      let now: string | undefined;
      try {
        now = await version(this.o.path);
      } catch {
        now = undefined;
      }
      if (now === this.#readVersion) return this.#run(false);
    }
    return this.#run(true);
  }

  /** Read the file and reconcile; concurrent calls coalesce into one more pass. */
  check(): Promise<void> {
    return this.#run(true);
  }

  /** One pass at a time; calls meanwhile coalesce into one more (a read if any asked for one). */
  #run(read: boolean): Promise<void> {
    if (this.#running) {
      this.#again = true;
      this.#againRead ||= read;
      return this.#running;
    }
    this.#running = (async () => {
      try {
        let next = read;
        do {
          this.#again = false;
          this.#againRead = false;
          if (next) await this.#pass();
          else await this.#reconcile();
          next = this.#againRead;
        } while (this.#again);
      } finally {
        this.#running = undefined;
      }
    })();
    return this.#running;
  }

  async #pass(): Promise<void> {
    let text: string;
    let version: string | undefined;
    try {
      // The version first: a change right after it is seen by the next poll, never missed.
      version = await this.o.fileVersion?.(this.o.path);
      text = await this.o.readFile(this.o.path);
      this.#reads++;
    } catch (e) {
      this.#readVersion = undefined;
      const message = `--workers-file: cannot read ${this.o.path} (${(e as Error).message}); keeping the ${this.#applied.size} workers it listed`;
      this.#problem(message, message);
      return;
    }
    if (text !== this.#lastText) {
      try {
        this.#wanted =
          this.o.parseFile !== undefined
            ? await this.o.parseFile(text, this.o.path)
            : parseWorkersFile(text, this.o.path, this.o.parseYaml);
        this.#lastText = text;
        this.#lastProblem = undefined;
        this.#failedAt.clear();
      } catch (e) {
        this.#readVersion = version;
        this.#problem(
          `--workers-file: ${(e as Error).message}; keeping the last good list`,
          `parse\0${text}`,
        );
        return;
      }
    }
    this.#unsettled = undefined;
    this.#readVersion = version;
    await this.#reconcile();
  }

  /** Apply the list read last: remove what left it, register what is new or edited (or was removed by other means). */
  async #reconcile(): Promise<void> {
    // A file worker removed by other means is no longer applied: it is added back below.
    for (const id of [...this.#applied.keys()])
      if (!this.o.isRegistered(id)) this.#applied.delete(id);
    const { remove, add } = diffWorkers(this.#applied, this.#wanted);
    for (const id of remove) {
      this.#applied.delete(id);
      if (!this.o.isRegistered(id)) continue;
      try {
        this.o.remove(id);
        this.o.log.info(
          `--workers-file: worker ${id} removed (no longer listed, or its entry changed)`,
        );
      } catch (e) {
        this.o.log.warn(`--workers-file: cannot remove worker ${id}: ${(e as Error).message}`);
      }
    }
    const now = this.o.now();
    const retryMs = this.o.retryMs ?? 30_000;
    await Promise.all(
      add.map(async (w) => {
        const failed = this.#failedAt.get(w.id);
        if (failed && failed.fingerprint === w.fingerprint && now - failed.at < retryMs) return;
        try {
          await this.o.register(w.spec);
          this.#applied.set(w.id, w.fingerprint);
          this.#failedAt.delete(w.id);
        } catch (e) {
          this.#failedAt.set(w.id, { fingerprint: w.fingerprint, at: now });
          this.o.log.error(
            `--workers-file: cannot register ${w.spec.url}: ${(e as Error).message} (retried in ${retryMs / 1000} s)`,
          );
        }
      }),
    );
  }

  /**
   * Log a problem once until it changes (the file is polled every second), and only once the
   * same failure (`key`: the error, or the same unparsable text) has lasted `settleMs`; until
   * then the file is read again at the next poll, whatever its version says.
   */
  #problem(message: string, key: string): void {
    const now = this.o.now();
    if (this.#unsettled?.key !== key) {
      this.#unsettled = { key, at: now };
      this.#readVersion = undefined;
      return;
    }
    if (now - this.#unsettled.at < (this.o.settleMs ?? this.o.pollMs ?? 1_000)) {
      this.#readVersion = undefined;
      return;
    }
    if (message === this.#lastProblem) return;
    this.#lastProblem = message;
    this.o.log.error(message);
  }
}
