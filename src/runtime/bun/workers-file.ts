/**
 * --workers-file on Bun: the file read through a bounded reader (a regular file of at most
 * MAX_WORKERS_FILE_BYTES), parsed and checked on a Worker (operator-file-parse.ts), its folder watched with node:fs, its version
 * (inode, size, mtime) polled so a lost notification is caught without reading it again.
 */
import { watch } from "node:fs";
import { fileVersion, readBoundedText } from "./bounded-file.ts";
import type { Logger } from "../../core/logger.ts";
import type { WorkerProvisioner } from "../../fleet/provisioner.ts";
import type { WorkerRegistry } from "../../fleet/registry.ts";
import { WorkersFileWatch } from "../../fleet/workers-file-watch.ts";
import type { WantedWorker } from "../../fleet/workers-file.ts";
import { parseOffLoop } from "./operator-file-parse.ts";

/**
 * Largest workers file read: 4 MiB holds ~20,000 entries of 200 bytes, far past --max-workers;
 * anything larger is refused (logged, the last good list kept) instead of read.
 */
export const MAX_WORKERS_FILE_BYTES = 4 * 1024 * 1024;

export function workersFileWatch(
  path: string | undefined,
  deps: {
    provisioner: WorkerProvisioner;
    registry: WorkerRegistry;
    now: () => number;
    log: Logger;
  },
): WorkersFileWatch | undefined {
  if (path === undefined) return undefined;
  return new WorkersFileWatch({
    path,
    readFile: (p) => readBoundedText(p, MAX_WORKERS_FILE_BYTES),
    fileVersion,
    parseYaml: (t) => Bun.YAML.parse(t),
    parseFile: async (text, p) => {
      const r = await parseOffLoop({ kind: "workers", text, path: p }, () =>
        deps.log.warn(
          "--workers-file: this binary has no embedded parse worker; the file is parsed on the event loop",
        ),
      );
      if (r.ok) return r.value as WantedWorker[];
      throw new Error(r.stage === "parse" ? `${p}: ${r.message}` : r.message);
    },
    watchDir: (dir, onChange) => {
      const w = watch(dir, () => onChange());
      return () => w.close();
    },
    register: (spec) => deps.provisioner.register(spec),
    remove: (id) => deps.provisioner.remove(id),
    isRegistered: (id) => deps.registry.has(id),
    now: deps.now,
    log: deps.log,
  });
}
