import { describe, expect, test } from "bun:test";
import { WorkerProvisioner } from "../../../src/fleet/provisioner.ts";
import { parseWorkerSpec } from "../../../src/fleet/worker-spec.ts";
import type { RegisterInput } from "../../../src/fleet/membership.ts";

describe("a worker's role in a workers-file entry", () => {
  test("parsed and recorded before the worker is registered; a bad role names the field", async () => {
    const spec = parseWorkerSpec({ url: "http://p0:8100", role: "prefill" });
    expect(spec.role).toBe("prefill");
    expect(parseWorkerSpec({ url: "http://d0:8200" }).role).toBeUndefined();
    expect(() => parseWorkerSpec({ url: "http://x:1", role: "sideways" })).toThrow(/role/);
    const order: string[] = [];
    const p = new WorkerProvisioner({
      membership: {
        register: async (input: RegisterInput) => {
          order.push(`register ${input.url} ${"role" in input}`);
          return {
            worker: { id: 1n, url: input.url, dpRanks: 1, healthy: true, reason: undefined },
            created: true,
            warnings: [],
          };
        },
        remove: () => ({ id: 1n, url: "", dpRanks: 1, healthy: true, reason: undefined }),
      },
      setRole: (url, role) => order.push(`role ${url} ${role}`),
    });
    await p.register(spec);
    expect(order).toEqual(["role http://p0:8100 prefill", "register http://p0:8100 false"]);
  });
});
