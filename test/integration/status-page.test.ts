/**
 * The status page (GET /ui) in a real browser: Debian's headless Chromium driven by
 * playwright-core, on three fleets — no worker; eight simulated engines under load behind a
 * router with an admin token (the browser is asked for it once, HTTP Basic, and the page's
 * reads carry it); and one worker killed (unhealthy) and one answering 500 until ejected.
 * It checks what a person would: the numbers on the page are /v1/workers' numbers, an
 * unhealthy or ejected worker is shown as such, the charts have data, a decision opens onto
 * its candidates and their cost; the error rate is the 5xx share of /debug/status's last five
 * minutes; with two routers sharing a real redis-server and an Alertmanager (a stand-in speaking
 * its API v2), the page names this router and its peer, lists the firing alerts, shows each
 * worker's share of requests and KV cached against capacity, and puts times under its charts.
 * Screenshots are kept in .artifacts/status-page/. Skipped,
 * with the reason printed, where the chromium package is not installed.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { artifactPath, launchChromium } from "../support/browser.ts";
import { CHROMIUM, missingTool } from "../support/debian-tools.ts";
import { startFleet, type Fleet } from "../support/observed-fleet.ts";
import { ROOT, startCommand, startMain, stopAll, until, type Proc } from "../support/processes.ts";
import { startRedisServer, type RedisServer } from "../support/redis-server.ts";

setDefaultTimeout(90_000);

const missing = missingTool(CHROMIUM, "chromium");
const TOKEN = "status-page-token-1";
/** The page polls fast in tests, so a change shows within a few hundred ms. */
const REFRESH = "?refresh=300";

interface ApiWorker {
  id: string;
  url: string;
  healthy: boolean;
  role?: string;
  models?: { id: string }[];
  active_prefill_tokens: number;
  active_decode_blocks: number;
  cached_blocks: number;
}

interface PageRow {
  id: string;
  state: string;
  url: string;
  role: string;
  models: string;
  active_prefill_tokens: string;
  active_decode_blocks: string;
  cached_blocks: string;
}

/** The fleet table as the page shows it. */
function pageRows(page: Page): Promise<PageRow[]> {
  return page.$$eval("#fleet tr[data-worker-id]", (trs) =>
    trs.map((tr) => {
      const f = (name: string) => tr.querySelector(`[data-field="${name}"]`)?.textContent ?? "";
      return {
        id: tr.getAttribute("data-worker-id") ?? "",
        state: tr.getAttribute("data-state") ?? "",
        url: f("url"),
        role: f("role"),
        models: f("models"),
        active_prefill_tokens: f("active_prefill_tokens"),
        active_decode_blocks: f("active_decode_blocks"),
        cached_blocks: f("cached_blocks"),
      };
    }),
  );
}

/** What the page should show for the API's workers (numbers as the page writes them). */
function expectedRows(ws: ApiWorker[], states: Record<string, string>): PageRow[] {
  return ws.map((w) => ({
    id: w.id,
    state: states[w.id] ?? (w.healthy ? "healthy" : "unhealthy"),
    url: w.url,
    role: w.role ?? "both",
    models: (w.models ?? []).map((m) => m.id).join(", ") || "any",
    active_prefill_tokens: String(w.active_prefill_tokens),
    active_decode_blocks: String(w.active_decode_blocks),
    cached_blocks: String(w.cached_blocks),
  }));
}

async function apiWorkers(url: string, headers: Record<string, string> = {}): Promise<ApiWorker[]> {
  return (
    (await (await fetch(`${url}/v1/workers`, { headers })).json()) as { workers: ApiWorker[] }
  ).workers;
}

async function apiStates(
  url: string,
  headers: Record<string, string> = {},
): Promise<Record<string, string>> {
  const s = (await (await fetch(`${url}/debug/status`, { headers })).json()) as {
    workers: { id: string; state: string }[];
  };
  return Object.fromEntries(s.workers.map((w) => [w.id, w.state]));
}

/** Poll until the page's table equals /v1/workers (both read again each time): the numbers match. */
async function pageMatchesApi(
  page: Page,
  url: string,
  headers: Record<string, string> = {},
): Promise<PageRow[]> {
  let last = "";
  return until(
    async () => {
      const want = expectedRows(await apiWorkers(url, headers), await apiStates(url, headers)).sort(
        (a, b) => a.id.localeCompare(b.id),
      );
      const got = (await pageRows(page)).sort((a, b) => a.id.localeCompare(b.id));
      last = `page ${JSON.stringify(got)}\napi  ${JSON.stringify(want)}`;
      return JSON.stringify(got) === JSON.stringify(want) ? got : undefined;
    },
    () => `the page's fleet table to match /v1/workers\n${last}`,
    15_000,
    200,
  );
}

describe.skipIf(missing !== undefined)(
  `status page in headless Chromium${missing ? ` (skipped: ${missing})` : ""}`,
  () => {
    let browser: Browser | undefined;
    beforeAll(async () => {
      browser = await launchChromium();
    });
    afterAll(async () => {
      await browser?.close();
    });

    describe("no worker", () => {
      let router: Proc | undefined;
      beforeAll(async () => {
        router = await startMain(["serve", "--port", "0", "--log-level", "warn"]);
      });
      afterAll(() => stopAll([router]));

      test("the page says there is nothing yet, without errors, under its Content-Security-Policy", async () => {
        const page = await browser!.newPage({ viewport: { width: 1400, height: 900 } });
        const errors: string[] = [];
        page.on("pageerror", (e) => errors.push(e.message));
        // A CSP violation (a blocked script, style or fetch) is a console error, not a page error.
        page.on("console", (m) => void (m.type() === "error" && errors.push(m.text())));
        const res = await page.goto(`${router!.info.url}/ui${REFRESH}`);
        expect(res!.headers()["content-security-policy"]).toMatch(
          /default-src 'none'; script-src 'sha256-[A-Za-z0-9+/=]+'/,
        );
        await page.waitForSelector('body[data-loaded="true"]');
        expect(await page.textContent("#healthy-count")).toBe("0 / 0");
        expect(await page.isVisible("#fleet-empty")).toBe(true);
        expect(await page.isVisible("#decisions-empty")).toBe(true);
        expect({
          error: await page.isVisible("#error"),
          text: await page.textContent("#error"),
        }).toEqual({ error: false, text: "" });
        expect(await page.textContent("#t-queue")).toBe("0");
        expect(await page.textContent("#build")).toContain("policy kv");
        await page.screenshot({ path: artifactPath("status-page", "no-worker"), fullPage: true });
        expect(errors).toEqual([]);
        await page.close();
      });
    });

    describe("eight workers under load, behind an admin token", () => {
      let fleet: Fleet | undefined;
      beforeAll(async () => {
        fleet = await startFleet({ engines: 8, adminToken: TOKEN });
      });
      afterAll(() => fleet?.stop());

      test("without the token the page is refused, with a challenge a browser answers", async () => {
        const r = await fetch(`${fleet!.url}/ui`);
        expect(r.status).toBe(401);
        expect(r.headers.get("www-authenticate")).toContain("Basic");
        const basic = await fetch(`${fleet!.url}/ui`, {
          headers: { authorization: `Basic ${btoa(`admin:${TOKEN}`)}` },
        });
        expect(basic.status).toBe(200);
        expect(await basic.text()).toContain("<title>Switchyard status</title>");
        expect(
          (
            await fetch(`${fleet!.url}/ui`, {
              headers: { authorization: `Basic ${btoa("admin:wrong-token")}` },
            })
          ).status,
        ).toBe(401);
      });

      test("every worker with the numbers of /v1/workers; charts, tiles and decisions filled", async () => {
        const context = await browser!.newContext({
          viewport: { width: 1400, height: 1000 },
          httpCredentials: { username: "admin", password: TOKEN },
        });
        const page = await context.newPage();
        const errors: string[] = [];
        page.on("pageerror", (e) => errors.push(e.message));
        // A CSP violation (a blocked script, style or fetch) is a console error.
        page.on("console", (m) => void (m.type() === "error" && errors.push(m.text())));
        await page.goto(`${fleet!.url}/ui${REFRESH}`);
        await page.waitForSelector('body[data-loaded="true"]');
        // Load while the page is open: it keeps up without errors.
        const statuses = await fleet!.load(4, 6);
        expect(statuses.get(200) ?? 0).toBeGreaterThan(20);
        const rows = await pageMatchesApi(page, fleet!.url, fleet!.headers);
        expect(rows).toHaveLength(8);
        expect(rows.every((r) => r.state === "healthy")).toBe(true);
        expect(rows.some((r) => Number(r.cached_blocks) > 0)).toBe(true);
        // Each engine's cache view (the router checks every answer's cached tokens): true on a healthy fleet.
        await page.waitForSelector('#fleet tr:nth-child(8) [data-field="cache_view"]');
        expect(
          await page.$$eval('#fleet [data-field="cache_view"]', (b) => b.map((x) => x.textContent)),
        ).toEqual(Array(8).fill("view exact"));
        expect(await page.textContent("#healthy-count")).toBe("8 / 8");
        expect(Number(await page.textContent("#t-requests"))).toBeGreaterThan(20);
        expect(await page.textContent("#t-hit")).toMatch(/^\d+\.\d%$/);
        for (const chart of ["chart-hit", "chart-ttft", "chart-requests"]) {
          expect(
            await page.locator(`[data-testid="${chart}"] [data-series]`).count(),
          ).toBeGreaterThan(0);
        }
        // The newest decision opens onto its candidates: the chosen one is marked, and it is the decision's worker.
        const first = page.locator("#decisions tr[data-request-id]").first();
        const chosenWorker = await first.getAttribute("data-worker-id");
        await first.locator('[data-testid="why"]').click();
        const detail = page.locator("#decisions tr.detail").first();
        await detail.waitFor({ state: "visible" });
        const chosen = detail.locator('tr[data-chosen="true"]');
        expect(await chosen.count()).toBe(1);
        expect(await chosen.getAttribute("data-worker-id")).toBe(chosenWorker);
        expect(await detail.textContent()).toContain("predicted-ttft");
        // Still open after the next refresh (the page redraws every 300 ms).
        const before = await page.getAttribute("body", "data-refreshed");
        await until(
          async () => (await page.getAttribute("body", "data-refreshed")) !== before,
          "a refresh",
        );
        expect(await page.locator("#decisions tr.detail:visible").count()).toBeGreaterThan(0);
        await page.screenshot({
          path: artifactPath("status-page", "eight-workers"),
          fullPage: true,
        });
        expect(errors).toEqual([]);
        await context.close();
      });
    });

    describe("an unhealthy and an ejected worker", () => {
      let fleet: Fleet | undefined;
      let faulty: Proc | undefined;
      beforeAll(async () => {
        faulty = await startCommand(
          [
            process.execPath,
            join(ROOT, "test/support/fault-engine.ts"),
            "--port",
            "0",
            "--mode",
            "error500",
          ],
          "fault engine",
        );
        fleet = await startFleet({
          engines: 3,
          extraWorkers: [String(faulty.info.url)],
          routerArgs: [
            "--outlier-consecutive-failures",
            "2",
            "--outlier-base-ejection-time",
            "300",
            "--max-retries",
            "0",
          ],
        });
      });
      afterAll(async () => {
        await fleet?.stop();
        await stopAll([faulty]);
      });

      test("the killed engine shows unhealthy, the failing one ejected, the rest healthy; numbers match", async () => {
        const ws = await apiWorkers(fleet!.url);
        const deadUrl = String(fleet!.engines[2]!.info.url);
        const dead = ws.find((w) => w.url === deadUrl)!;
        const bad = ws.find((w) => w.url === String(faulty!.info.url))!;
        await fleet!.load(1, 4, 24);
        // Requests for the model only the failing engine serves, until it is ejected (two failures in a row).
        await until(
          async () => {
            const r = await fetch(`${fleet!.url}/v1/completions`, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ model: "fault-sim", prompt: "fail" }),
            });
            await r.arrayBuffer();
            return (await apiStates(fleet!.url))[bad.id] === "ejected";
          },
          "the failing worker to be ejected",
          15_000,
          20,
        );
        // Killed only now, with no request in flight: its failed health checks make it unhealthy
        // (a request sent to it would count against it, and a second one in a row would eject it).
        fleet!.engines[2]!.proc.kill("SIGKILL");
        await until(
          async () => (await apiStates(fleet!.url))[dead.id] === "unhealthy",
          "the killed worker to be unhealthy",
        );

        const page = await browser!.newPage({ viewport: { width: 1400, height: 1000 } });
        await page.goto(`${fleet!.url}/ui${REFRESH}`);
        await page.waitForSelector('body[data-loaded="true"]');
        const rows = await pageMatchesApi(page, fleet!.url);
        const byId = Object.fromEntries(rows.map((r) => [r.id, r]));
        expect(byId[dead.id]!.state).toBe("unhealthy");
        expect(byId[bad.id]!.state).toBe("ejected");
        expect(rows.filter((r) => r.state === "healthy")).toHaveLength(2);
        // What a person reads: the badge's words and why.
        const deadRow = page.locator(`#fleet tr[data-worker-id="${dead.id}"]`);
        expect(await deadRow.locator('[data-field="state"]').textContent()).toBe("unhealthy");
        expect(await deadRow.locator(".reason").textContent()).toMatch(/health check|fenced/);
        const badRow = page.locator(`#fleet tr[data-worker-id="${bad.id}"]`);
        expect(await badRow.locator('[data-field="state"]').textContent()).toMatch(
          /^ejected \(\d+ s\)$/,
        );
        expect(await badRow.locator(".reason").textContent()).toContain("ejected");
        expect(await page.textContent("#healthy-count")).toBe("2 / 4");
        // The error rate: the 5xx share of the last five minutes, as /debug/status counts them; the failures made it more than 0.
        const recent = (
          (await (await fetch(`${fleet!.url}/debug/status`)).json()) as {
            recent: { requests: number; errors: number }[];
          }
        ).recent.slice(-30);
        const [req, err] = recent.reduce(([r, e], p) => [r + p.requests, e + p.errors], [0, 0]);
        expect(err).toBeGreaterThan(0);
        const want = `${((100 * err) / req).toFixed(1)}%`;
        let shown: string | null = null;
        await until(
          async () =>
            (shown = `${await page.textContent("#t-errors")} (${await page.getAttribute("#t-errors", "title")})`).startsWith(
              `${want} `,
            ),
          () => `the error tile to read ${want} (${err} of ${req}; it reads ${shown})`,
          10_000,
          100,
        );
        await page.screenshot({
          path: artifactPath("status-page", "unhealthy-and-ejected"),
          fullPage: true,
        });
        await page.close();
      });
    });

    describe("two routers sharing Redis, with an Alertmanager", () => {
      let redis: RedisServer | undefined;
      let fleet: Fleet | undefined;
      let other: Proc | undefined;
      const asked: string[] = [];
      // A stand-in Alertmanager answering GET /api/v2/alerts in its API v2 shape (gettableAlerts).
      const alertmanager = Bun.serve({
        port: 0,
        hostname: "127.0.0.1",
        fetch: (req) => {
          const u = new URL(req.url);
          if (u.pathname !== "/api/v2/alerts") return new Response("not found", { status: 404 });
          asked.push(u.search);
          return Response.json([
            {
              labels: {
                alertname: "SwitchyardRouterDown",
                severity: "critical",
                job: "switchyard",
              },
              annotations: {
                summary: "A router is down",
                runbook_url: "https://example.test/runbooks/router-down",
              },
              startsAt: "2026-12-07T20:00:00.000Z",
              endsAt: "2026-12-07T23:00:00.000Z",
              updatedAt: "2026-12-07T20:00:00.000Z",
              fingerprint: "1",
              receivers: [{ name: "oncall" }],
              status: { state: "active", silencedBy: [], inhibitedBy: [] },
            },
            {
              labels: { alertname: "SwitchyardCacheHitLow", severity: "warning" },
              annotations: { summary: "Cache hit far below the best possible" },
              startsAt: "2026-12-07T20:10:00.000Z",
              endsAt: "2026-12-07T23:00:00.000Z",
              updatedAt: "2026-12-07T20:10:00.000Z",
              fingerprint: "2",
              receivers: [{ name: "oncall" }],
              status: { state: "active", silencedBy: [], inhibitedBy: [] },
            },
          ]);
        },
      });
      beforeAll(async () => {
        redis = await startRedisServer();
        fleet = await startFleet({
          engines: 3,
          routerArgs: [
            "--redis",
            redis.url,
            "--alertmanager-url",
            `http://127.0.0.1:${alertmanager.port}`,
          ],
        });
        other = await startMain([
          "serve",
          "--port",
          "0",
          "--host",
          "127.0.0.1",
          "--log-level",
          "warn",
          "--redis",
          redis.url,
          ...fleet.engines.flatMap((e) => ["--worker", String(e.info.url)]),
        ]);
      });
      afterAll(async () => {
        await fleet?.stop();
        await stopAll([other]);
        await redis?.stop();
        alertmanager.stop(true);
      });

      test("identity and peer, firing alerts, each worker's share, KV cached, time axes", async () => {
        const routerId = (await fetch(`${fleet!.url}/health`)).headers.get(
          "x-switchyard-router-id",
        );
        const otherId = (await fetch(`${String(other!.info.url)}/health`)).headers.get(
          "x-switchyard-router-id",
        );
        expect(routerId).toMatch(/^[0-9a-f]{16}$/);
        await fleet!.load(2, 4, 40);
        const page = await browser!.newPage({ viewport: { width: 1400, height: 1200 } });
        const errors: string[] = [];
        page.on("pageerror", (e) => errors.push(e.message));
        // A CSP violation (a blocked script, style or fetch) is a console error.
        page.on("console", (m) => void (m.type() === "error" && errors.push(m.text())));
        await page.goto(`${fleet!.url}/ui${REFRESH}`);
        await page.waitForSelector('body[data-loaded="true"]');

        // Which router this is, and the other one heard through Redis.
        expect(await page.textContent('[data-testid="router-id"]')).toBe(routerId);
        await until(
          async () =>
            (await page.textContent('[data-testid="peer-count"]')) ===
            "1 other router sharing its Redis",
          "the peer on the page",
          15_000,
          100,
        );
        expect(await page.locator(`#peers tr[data-router-id="${otherId}"]`).count()).toBe(1);

        // Firing alerts as Alertmanager lists them, most severe first, the runbook linked.
        expect(asked[0]).toBe("?active=true&silenced=false&inhibited=false");
        expect(await page.isVisible('[data-testid="alerts"]')).toBe(true);
        expect(
          await page.$$eval("#alerts tr[data-alert]", (trs) =>
            trs.map((t) => [t.getAttribute("data-alert"), t.getAttribute("data-severity")]),
          ),
        ).toEqual([
          ["SwitchyardRouterDown", "critical"],
          ["SwitchyardCacheHitLow", "warning"],
        ]);
        expect(
          await page.getAttribute('#alerts tr[data-alert="SwitchyardRouterDown"] a', "href"),
        ).toBe("https://example.test/runbooks/router-down");

        // Each worker's share: the requests /debug/status counts for it over five minutes, as a share of all.
        const status = (await (await fetch(`${fleet!.url}/debug/status`)).json()) as {
          worker_requests: Record<string, number>;
          recent: { time: string }[];
        };
        const total = Object.values(status.worker_requests).reduce((a, b) => a + b, 0);
        expect(total).toBeGreaterThan(20);
        await until(
          async () => {
            const shown = await page.$$eval("#fleet tr[data-worker-id]", (trs) =>
              trs.map((t) => [
                t.getAttribute("data-worker-id"),
                t.querySelector('[data-field="share"]')?.getAttribute("data-requests"),
              ]),
            );
            const now = (
              (await (await fetch(`${fleet!.url}/debug/status`)).json()) as {
                worker_requests: Record<string, number>;
              }
            ).worker_requests;
            return shown.length === 3 && shown.every(([id, n]) => Number(n) === (now[id!] ?? 0));
          },
          "each worker's share to match /debug/status",
          10_000,
          100,
        );
        const shares = await page.$$eval('#fleet [data-field="share"]', (tds) =>
          tds.map((t) => Number((t.textContent ?? "").replace("%", ""))),
        );
        expect(Math.abs(shares.reduce((a, b) => a + b, 0) - 100)).toBeLessThan(0.5);

        // KV cached: the index's blocks over the capacity the engine reported; not 0% where blocks are cached.
        const ws = (await (await fetch(`${fleet!.url}/v1/workers`)).json()) as {
          workers: { id: string; cached_blocks: number; kv_capacity_blocks: number | null }[];
        };
        const warm = ws.workers.find((w) => w.cached_blocks > 0)!;
        expect(warm.kv_capacity_blocks).toBeGreaterThan(0);
        await until(
          async () => {
            const now = (
              (await (await fetch(`${fleet!.url}/v1/workers`)).json()) as typeof ws
            ).workers.find((w) => w.id === warm.id)!;
            const text = await page.textContent(
              `#fleet tr[data-worker-id="${warm.id}"] [data-field="kv_cached"]`,
            );
            return (
              text === `${((100 * now.cached_blocks) / now.kv_capacity_blocks!).toFixed(1)}%` &&
              text !== "0.0%"
            );
          },
          "the warm worker's KV cached",
          10_000,
          100,
        );

        // Each new column's header stands over its cells.
        const heads = await page.$$eval('[data-testid="fleet"] thead th', (ths) =>
          ths.map((t) => t.textContent),
        );
        const fields = await page.$$eval("#fleet tr[data-worker-id]", (trs) =>
          [...trs[0]!.children].map(
            (td) =>
              td.getAttribute("data-field") ??
              td.querySelector("[data-field]")?.getAttribute("data-field"),
          ),
        );
        expect(heads.length).toBe(fields.length);
        for (const [head, field] of [
          ["share (5 min)", "share"],
          ["KV in use", "kv_usage"],
          ["KV cached", "kv_cached"],
        ])
          expect(fields[heads.indexOf(head)]).toBe(field);

        // Time under every chart: five labels, the first bucket's time first, "now" last.
        for (const name of ["hit", "ttft", "requests"]) {
          const labels = await page.$$eval(`[data-testid="axis-${name}"] span`, (ss) =>
            ss.map((s) => [s.getAttribute("data-time"), s.textContent]),
          );
          expect(labels).toHaveLength(5);
          expect(labels[4]![1]).toBe("now");
          expect(labels[0]![1]).toMatch(/^\d{2}:\d{2}$/);
          expect(Date.parse(labels[4]![0]!) - Date.parse(labels[0]![0]!)).toBe(
            Date.parse(status.recent.at(-1)!.time) - Date.parse(status.recent[0]!.time),
          );
        }
        await page.screenshot({
          path: artifactPath("status-page", "two-routers-alerts"),
          fullPage: true,
        });
        expect(errors).toEqual([]);
        await page.close();
      });
    });
  },
);
