/**
 * The router's HTTPS listener, whose certificate follows its files. Bun's server cannot swap
 * its certificate (`reload({ tls })` is ignored on Bun 1.4: oven-sh/bun#43815), so a changed
 * pair starts a second server on the same port (SO_REUSEPORT, set on both) and the first stops
 * listening while its connections finish: new connections get the new certificate, none is cut.
 * The files are looked at every `pollMs` (device, inode, size, mtime) and on changes to their
 * folders (a Kubernetes Secret is remounted by swapping a symlink there). A pair that cannot be
 * read or does not match (the certificate written, its key not yet) keeps the previous one, and
 * is logged once it is still wrong `settleMs` later. It handles no request itself.
 */
import { watch } from "node:fs";
import { dirname } from "node:path";
import type { Logger } from "../../core/logger.ts";
import { fileVersion } from "./bounded-file.ts";
import { readTlsPair, TlsPairError, type TlsPair } from "./tls-pair.ts";

type Server = ReturnType<typeof Bun.serve>;

/** What the composition uses of the listening server, whichever servers stand behind it. */
export interface RouterListener {
  readonly port: number;
  readonly scheme: "http" | "https";
  requestIP(req: Request): { address: string } | null;
  timeout(req: Request, seconds: number): void;
  /** Requests in flight on every server still open (a retiring one's included). */
  readonly pendingRequests: number;
  stop(closeActiveConnections: boolean): void;
}

/** A plain HTTP server as a listener. */
export function plainListener(server: Server): RouterListener {
  return {
    port: server.port!,
    scheme: "http",
    requestIP: (req) => server.requestIP(req),
    timeout: (req, s) => server.timeout(req, s),
    get pendingRequests() {
      return server.pendingRequests;
    },
    stop: (close) => void server.stop(close),
  };
}

export interface TlsListenerOptions {
  readonly certPath: string;
  readonly keyPath: string;
  /** Starts one server with this pair on this port (0: any), SO_REUSEPORT set. */
  readonly start: (tls: { cert: string; key: string }, port: number) => Server;
  readonly port: number;
  readonly log: Logger;
  /** How often the files' versions are looked at (ms; default 1000). */
  readonly pollMs?: number;
  /** A bad pair is logged only when still bad this long after it was first seen (ms; default 2000). */
  readonly settleMs?: number;
}

export class TlsListener implements RouterListener {
  readonly scheme = "https" as const;
  readonly port: number;
  #current: Server;
  #pair: TlsPair;
  readonly #retiring = new Set<Server>();
  #version = "";
  #timer: ReturnType<typeof setInterval> | undefined;
  readonly #watchers: { close(): void }[] = [];
  #busy = false;
  #again = false;
  #problem: { message: string; since: number; logged: boolean } | undefined;
  #reloads = 0;

  private constructor(
    private readonly o: TlsListenerOptions,
    pair: TlsPair,
    version: string,
  ) {
    this.#pair = pair;
    this.#version = version;
    this.#current = o.start(pair, o.port);
    this.port = this.#current.port!;
  }

  /** Reads and checks the pair (an error names the file), listens, and starts following the files. */
  static async open(o: TlsListenerOptions): Promise<TlsListener> {
    const version = await versionOf(o);
    const pair = await readTlsPair(o.certPath, o.keyPath);
    const l = new TlsListener(o, pair, version);
    o.log.info("TLS: serving HTTPS", { subject: pair.subject, not_after: pair.notAfter });
    l.#follow();
    return l;
  }

  /** Certificates served since start, the first one excluded. */
  get reloads(): number {
    return this.#reloads;
  }

  requestIP(req: Request): { address: string } | null {
    return this.#current.requestIP(req);
  }

  timeout(req: Request, seconds: number): void {
    this.#current.timeout(req, seconds);
  }

  get pendingRequests(): number {
    let n = this.#current.pendingRequests;
    for (const s of this.#retiring) n += s.pendingRequests;
    return n;
  }

  stop(closeActiveConnections: boolean): void {
    clearInterval(this.#timer);
    for (const w of this.#watchers.splice(0)) w.close();
    void this.#current.stop(closeActiveConnections);
    for (const s of this.#retiring) void s.stop(closeActiveConnections);
  }

  /** Look at the files now (the timer and the folder watch call this too). */
  async check(): Promise<void> {
    if (this.#busy) {
      this.#again = true;
      return;
    }
    this.#busy = true;
    try {
      do {
        this.#again = false;
        await this.#reloadIfChanged();
      } while (this.#again);
    } finally {
      this.#busy = false;
    }
  }

  #follow(): void {
    this.#timer = setInterval(() => void this.check(), this.o.pollMs ?? 1_000);
    for (const dir of new Set([dirname(this.o.certPath), dirname(this.o.keyPath)])) {
      try {
        this.#watchers.push(watch(dir, () => void this.check()));
      } catch (e) {
        this.o.log.warn(
          `TLS: cannot watch ${dir} (${(e as Error).message}); looking at the files every ${this.o.pollMs ?? 1_000} ms`,
        );
      }
    }
  }

  async #reloadIfChanged(): Promise<void> {
    let version: string;
    try {
      version = await versionOf(this.o);
    } catch (e) {
      return this.#bad(`${(e as Error).message}`);
    }
    if (version === this.#version) return;
    let pair: TlsPair;
    try {
      pair = await readTlsPair(this.o.certPath, this.o.keyPath);
    } catch (e) {
      return this.#bad((e as Error).message);
    }
    this.#problem = undefined;
    this.#version = version;
    if (pair.cert === this.#pair.cert && pair.key === this.#pair.key) return; // touched, not changed
    let next: Server;
    try {
      next = this.o.start(pair, this.port);
    } catch (e) {
      this.o.log.error(
        `TLS: cannot listen with the new certificate (${(e as Error).message}); still serving ${this.#pair.subject}`,
      );
      return;
    }
    const old = this.#current;
    this.#current = next;
    this.#pair = pair;
    this.#reloads++;
    // Stops accepting; its open connections (streams included) finish on the old certificate.
    this.#retiring.add(old);
    void Promise.resolve(old.stop(false)).finally(() => this.#retiring.delete(old));
    this.o.log.info("TLS: certificate reloaded; new connections get it", {
      subject: pair.subject,
      not_after: pair.notAfter,
    });
  }

  #bad(message: string): void {
    const now = performance.now();
    if (this.#problem?.message !== message) this.#problem = { message, since: now, logged: false };
    const p = this.#problem;
    if (p.logged || now - p.since < (this.o.settleMs ?? 2_000)) return;
    p.logged = true;
    this.o.log.error(
      `TLS: ${message}; still serving the previous certificate (${this.#pair.subject}, until ${this.#pair.notAfter})`,
    );
  }
}

async function versionOf(o: TlsListenerOptions): Promise<string> {
  const [c, k] = await Promise.all([
    fileVersion(o.certPath).catch((e: Error) =>
      Promise.reject(new TlsPairError(`--tls-cert ${o.certPath}: cannot read (${e.message})`)),
    ),
    fileVersion(o.keyPath).catch((e: Error) =>
      Promise.reject(new TlsPairError(`--tls-key ${o.keyPath}: cannot read (${e.message})`)),
    ),
  ]);
  return `${c}|${k}`;
}
