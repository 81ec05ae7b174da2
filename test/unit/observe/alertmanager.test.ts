/**
 * The Alertmanager reader against answers in Alertmanager's API v2 shape (gettableAlerts,
 * prometheus/alertmanager api/v2/openapi.yaml), fetch injected: firing alerts named, most severe
 * first, cached between reads, and an unreachable or malformed Alertmanager an error to show.
 */
import { describe, expect, test } from "bun:test";
import { AlertmanagerReader } from "../../../src/observe/alertmanager.ts";

const alert = (name: string, severity: string, startsAt: string, state = "active") => ({
  labels: { alertname: name, severity, job: "switchyard" },
  annotations: { summary: `${name} summary`, runbook_url: `https://example.test/runbooks/${name}` },
  startsAt,
  endsAt: "2026-12-07T21:00:00.000Z",
  updatedAt: startsAt,
  fingerprint: name,
  receivers: [{ name: "default" }],
  status: { state, silencedBy: [], inhibitedBy: [] },
});

function setup(answer: () => Response | Promise<Response>) {
  const asked: string[] = [];
  let t = 1_000_000;
  const r = new AlertmanagerReader({
    url: "http://user:pw@am:9093/",
    fetch: async (u) => (asked.push(u), answer()),
    now: () => t,
    cacheMs: 5_000,
  });
  return { r, asked, tick: (ms: number) => (t += ms) };
}

describe("AlertmanagerReader", () => {
  test("asks for active, unsilenced, uninhibited alerts; critical first; credentials not shown", async () => {
    const s = setup(() =>
      Response.json([
        alert("SwitchyardTtftBurn", "warning", "2026-12-07T20:01:00Z"),
        alert("SwitchyardDown", "critical", "2026-12-07T20:05:00Z"),
        alert("Old", "info", "2026-12-07T19:00:00Z", "suppressed"),
      ]),
    );
    const v = await s.r.read();
    expect(s.asked).toEqual([
      "http://user:pw@am:9093/api/v2/alerts?active=true&silenced=false&inhibited=false",
    ]);
    expect(v.source).toBe("http://am:9093");
    expect(v.error).toBeNull();
    expect(v.total).toBe(2);
    expect(v.firing.map((a) => [a.name, a.severity])).toEqual([
      ["SwitchyardDown", "critical"],
      ["SwitchyardTtftBurn", "warning"],
    ]);
    expect(v.firing[0]!.summary).toBe("SwitchyardDown summary");
    expect(v.firing[0]!.runbook_url).toBe("https://example.test/runbooks/SwitchyardDown");
  });

  test("read again only once the cache is older than cacheMs", async () => {
    const s = setup(() => Response.json([]));
    await s.r.read();
    await s.r.read();
    expect(s.asked).toHaveLength(1);
    s.tick(5_000);
    await s.r.read();
    expect(s.asked).toHaveLength(2);
  });

  test("a failing or malformed Alertmanager is an error naming it; the last alerts read are kept", async () => {
    let answer: () => Response = () =>
      Response.json([alert("A", "critical", "2026-12-07T20:00:00Z")]);
    const s = setup(() => answer());
    await s.r.read();
    answer = () => new Response("down", { status: 503 });
    s.tick(6_000);
    const down = await s.r.read();
    expect(down.error).toBe("cannot read http://am:9093: HTTP 503");
    expect(down.firing.map((a) => a.name)).toEqual(["A"]);
    answer = () => Response.json({ data: [] });
    s.tick(6_000);
    expect((await s.r.read()).error).toContain("not Alertmanager's alert list");
  });
});
