import { describe, expect, test } from "bun:test";
import { RouterError } from "../../../src/core/errors.ts";
import { ROUTER_ID_HEADER, WorkerUrlPolicy } from "../../../src/fleet/url-policy.ts";
import { rejectionOf } from "../../support/errors.ts";

function policy(
  o: { allow?: string[]; port?: number; hosts?: string[]; routerUrls?: string[] } = {},
) {
  const probed: string[] = [];
  const p = new WorkerUrlPolicy({
    allow: o.allow ?? [],
    ownPort: () => o.port ?? 8080,
    localHosts: () => o.hosts ?? ["router-host", "10.1.2.3", "fe80::1"],
    fetch: async (url) => {
      probed.push(url);
      if ((o.routerUrls ?? []).some((r) => url.startsWith(r)))
        return new Response("{}", { headers: { [ROUTER_ID_HEADER]: "abc" } });
      if (url.includes("down")) throw new Error("connect ECONNREFUSED");
      return new Response("ok");
    },
  });
  return { p, probed };
}

const refusedFor = async (p: WorkerUrlPolicy, url: string) => {
  const e = await rejectionOf(RouterError, p.check(url));
  expect(e.field).toBe("url");
  return e.message;
};

describe("WorkerUrlPolicy", () => {
  test("this router's port on any local address is refused, without a network call", async () => {
    const { p, probed } = policy();
    for (const u of [
      "http://127.0.0.1:8080",
      "http://127.9.9.9:8080/",
      "http://localhost:8080",
      "http://[::1]:8080",
      "http://0.0.0.0:8080",
      "http://router-host:8080",
      "http://10.1.2.3:8080/v1",
      "https://[fe80::1]:8080",
      "http://[::ffff:127.0.0.1]:8080",
    ]) {
      expect(await refusedFor(p, u)).toContain("this router's own address");
    }
    expect(probed).toEqual([]);
  });
  test("another port, or this port on another machine, is fine", async () => {
    const { p } = policy();
    await p.check("http://127.0.0.1:8000");
    await p.check("http://10.9.9.9:8080");
    await p.check("http://down.example:8000"); // not answering is not a reason to refuse
  });
  test("a URL answering with a router id is refused (this router behind a name, or a peer)", async () => {
    const { p } = policy({ routerUrls: ["http://peer-router:9000"] });
    expect(await refusedFor(p, "http://peer-router:9000")).toContain(
      "answers as a Switchyard router",
    );
  });
  test("--worker-allow: only matching URLs; ports written or implied both match", async () => {
    const { p } = policy({ allow: ["http://10.0.0.*:8000", "https://gpu-*.internal:443"] });
    await p.check("http://10.0.0.7:8000");
    await p.check("https://gpu-3.internal");
    expect(await refusedFor(p, "http://10.0.1.7:8000")).toContain(
      "matches no --worker-allow pattern",
    );
    expect(await refusedFor(p, "http://169.254.169.254:8000")).toContain("--worker-allow");
  });
});
