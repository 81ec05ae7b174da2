import { describe, expect, test } from "bun:test";
import { upstreamRequestHeaders } from "../../../../src/edge/proxy/headers.ts";
import type { ForwardingPolicy } from "../../../../src/edge/proxy/forwarding.ts";

const policy = (peer: string | undefined, trust = false, cookies = false): ForwardingPolicy => ({
  peer: () => peer,
  trustForwarded: trust,
  forwardCookies: cookies,
});

function req(headers: Record<string, string>): Request {
  return new Request("http://router.example:8080/v1/completions", { method: "POST", headers });
}

describe("forwarding headers", () => {
  test("names listed in Connection are removed, in any case and spacing", () => {
    const out = upstreamRequestHeaders(
      req({
        connection: "Keep-Alive ,X-Secret,,x-other",
        "x-secret": "s",
        "x-other": "o",
        "x-kept": "k",
      }),
      0,
      undefined,
      policy("10.0.0.9"),
    );
    expect(out["x-secret"]).toBeUndefined();
    expect(out["x-other"]).toBeUndefined();
    expect(out["x-kept"]).toBe("k");
  });

  test("IPv6 and IPv4-mapped peers; an unknown peer is 'unknown'", () => {
    expect(upstreamRequestHeaders(req({}), 0, undefined, policy("2001:db8::7")).forwarded).toBe(
      'for="[2001:db8::7]";proto=http;host="router.example:8080"',
    );
    expect(
      upstreamRequestHeaders(req({}), 0, undefined, policy("::ffff:10.1.2.3"))["x-forwarded-for"],
    ).toBe("10.1.2.3");
    expect(
      upstreamRequestHeaders(req({}), 0, undefined, policy(undefined))["x-forwarded-for"],
    ).toBe("unknown");
  });

  test("a Host holding quotes cannot break out of the Forwarded quoted-string", () => {
    const h = new Headers({ host: 'evil";for=1.2.3.4' });
    const r = new Request("http://x/v1/completions", { method: "POST", headers: h });
    expect(upstreamRequestHeaders(r, 0, undefined, policy("10.0.0.9")).forwarded).toBe(
      'for=10.0.0.9;proto=http;host="evil\\";for=1.2.3.4"',
    );
  });
});
