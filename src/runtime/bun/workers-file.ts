/** --workers-file on Bun: the file read with Bun.file, parsed with Bun.YAML, its folder watched with node:fs. */
import { watch } from "node:fs";
import type { Logger } from "../../edge/log.ts";
import type { WorkerProvisioner } from "../../fleet/provisioner.ts";
import type { WorkerRegistry } from "../../fleet/registry.ts";
import { WorkersFileWatch } from "../../fleet/workers-file-watch.ts";

export function workersFileWatch(
  path: string | undefined,
  deps: { provisioner: WorkerProvisioner; registry: WorkerRegistry; now: () => number; log: Logger },
): WorkersFileWatch | undefined {
  if (path === undefined) return undefined;
  return new WorkersFileWatch({
    path,
    readFile: (p) => Bun.file(p).text(),
    parseYaml: (t) => Bun.YAML.parse(t),
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
