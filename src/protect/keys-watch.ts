/**
 * Keeps the client keys in step with `--api-keys FILE`, as the workers file is kept: read at
 * start (a file that cannot be used then stops the start: a router must never come up open
 * because its keys file had a typo), then again when its directory changes (a mounted Secret
 * or ConfigMap is updated by swapping a symlink there) and every `pollMs` in case a change
 * notification is lost. A file that cannot be read or used later is logged once, with the
 * entry and field at fault, and the last good keys stay in force. Reading (regular files
 * only, size-capped), parsing (JSON, or YAML where the runtime has a parser) and the
 * directory watch are injected; nothing here touches a file system.
 */
import type { Logger } from "../core/logger.ts";
import { KeySet, type PackedKeys } from "./key-set.ts";
import { KeysFileError, parseKeysDocument, type KeyEntry } from "./keys-document.ts";

/** Tenant names a reload logs at most. */
const LOGGED_TENANTS = 20;

export interface KeysFileSource {
  /** The file's text; rejects for a file that is missing, not a regular file or too large. */
  read(path: string): Promise<string>;
  /** Text -> document (JSON, or YAML by extension where the runtime parses YAML); throws on bad syntax. */
  parse(text: string, path: string): unknown;
  /**
   * Text -> the keys, parsed, checked and packed off the event loop where the runtime can
   * (Bun: a Worker), so a large file does not stall the loop; rejects with KeysFileError naming
   * the entry and field. Without it, `parse`, the check and the packing run here.
   */
  keys?(text: string, path: string, where: string): Promise<PackedKeys>;
  /** Change notifications for the file's directory; returns a stop function. */
  watchDir?(dir: string, onChange: () => void): () => void;
}

export interface KeysWatchOptions {
  readonly path: string;
  readonly source: KeysFileSource;
  /** Re-read at least this often (ms); 0: only on change notifications. */
  readonly pollMs: number;
  /** The runtime's repeating timer; returns a stop function. */
  readonly every: (ms: number, fn: () => void) => () => void;
  readonly log: Pick<Logger, "info" | "error">;
  /** Told each time a new set is in force (the limiter drops tenants that are gone). */
  readonly onChange?: (keys: KeySet) => void;
}

export class KeysWatch {
  #keys: KeySet | undefined;
  #lastText: string | undefined;
  #lastProblem: string | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #stops: (() => void)[] = [];

  constructor(private readonly o: KeysWatchOptions) {}

  /** The keys in force (undefined only before start()). */
  get keys(): KeySet | undefined {
    return this.#keys;
  }

  /** Read the file once (throws KeysFileError when it cannot be used), then keep watching. */
  async start(): Promise<KeySet> {
    let text: string;
    try {
      text = await this.o.source.read(this.o.path);
    } catch (e) {
      throw new KeysFileError(`--api-keys: cannot read ${this.o.path} (${(e as Error).message})`);
    }
    await this.#apply(text);
    if (this.o.pollMs > 0) this.#stops.push(this.o.every(this.o.pollMs, () => void this.check()));
    const slash = this.o.path.lastIndexOf("/");
    const dir = slash > 0 ? this.o.path.slice(0, slash) : slash === 0 ? "/" : ".";
    try {
      const stop = this.o.source.watchDir?.(dir, () => void this.check());
      if (stop) this.#stops.push(stop);
    } catch (e) {
      this.o.log.error(
        `--api-keys: cannot watch ${dir} (${(e as Error).message}); re-read every ${this.o.pollMs} ms only`,
      );
    }
    return this.#keys!;
  }

  stop(): void {
    for (const s of this.#stops) s();
    this.#stops = [];
  }

  /** Read again and apply when the text changed; concurrent calls coalesce into one more pass. */
  check(): Promise<void> {
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    this.#running = (async () => {
      try {
        do {
          this.#again = false;
          await this.#pass();
        } while (this.#again);
      } finally {
        this.#running = undefined;
      }
    })();
    return this.#running;
  }

  async #pass(): Promise<void> {
    let text: string;
    try {
      text = await this.o.source.read(this.o.path);
    } catch (e) {
      this.#problem(
        `--api-keys: cannot read ${this.o.path} (${(e as Error).message}); keeping the ${this.#keys?.size ?? 0} keys in force`,
      );
      return;
    }
    if (text === this.#lastText) return;
    try {
      await this.#apply(text);
    } catch (e) {
      this.#problem(`${(e as Error).message}; keeping the ${this.#keys?.size ?? 0} keys in force`);
    }
  }

  /** Parse and put in force; throws KeysFileError naming the entry and field. */
  async #apply(text: string): Promise<void> {
    const where = `--api-keys ${this.o.path}`;
    const keys = new KeySet(
      this.o.source.keys !== undefined
        ? await this.o.source.keys(text, this.o.path, where)
        : this.#entries(text, where),
    );
    this.#keys = keys;
    this.#lastText = text;
    this.#lastProblem = undefined;
    // Tenant names only (never keys or their digests), and a few: a file may hold thousands.
    const names = keys.tenants
      .slice(0, LOGGED_TENANTS)
      .map((t) => t.name)
      .join(",");
    this.o.log.info(`--api-keys: ${keys.size} keys for ${keys.tenants.length} tenants in force`, {
      tenants: keys.tenants.length > LOGGED_TENANTS ? `${names},…` : names,
    });
    this.o.onChange?.(keys);
  }

  /** Parse and check on this thread (runtimes without `entries`). */
  #entries(text: string, where: string): KeyEntry[] {
    let doc: unknown;
    try {
      doc = this.o.source.parse(text, this.o.path);
    } catch (e) {
      throw new KeysFileError(`${where}: cannot parse (${(e as Error).message})`);
    }
    return parseKeysDocument(doc, where);
  }

  /** Log a problem once until it changes (the file is polled). */
  #problem(message: string): void {
    if (message === this.#lastProblem) return;
    this.#lastProblem = message;
    this.o.log.error(message);
  }
}
