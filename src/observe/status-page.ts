/**
 * The status page served at GET /ui: one self-contained HTML document (inline CSS and
 * script, no build step, no external asset), kept in the binary as this string so it is
 * served the same way on Bun, Deno and workerd. Its script reads the router's own JSON
 * (GET /v1/workers, /debug/status, /debug/decisions) every 2 s (`?refresh=MS` to change)
 * and draws: which router this is among N and the routers sharing its Redis, the alerts firing
 * (with --alertmanager-url), the fleet (health, role, models, share of requests, booked load,
 * engine KV in use and queue, KV cached against capacity, event streams per rank), the error
 * rate, the cache hit rate beside the best possible and TTFT over the last minutes as small SVG
 * charts with a time axis, sessions, LoRA placement, and the last routing decisions with each
 * candidate's cost term by term.
 *
 * Two KV columns, because they answer different questions: "KV in use" is the engine's own
 * figure (vLLM's kv_cache_usage_perc = 1 - free blocks / all blocks, and a cached block no
 * running request holds is free: vllm/v1/core/block_pool.py @002f3491, free_blocks and
 * get_usage), so it reads 0% on an idle engine whose cache is full; "KV cached" is the blocks
 * the router's index says the engine holds over the capacity it reported. Elements carry data-* attributes so a
 * browser test can read what a person sees. The script avoids backticks: this file is a
 * template literal.
 */
export const STATUS_PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Switchyard status</title>
<link rel="icon" href="data:,">
<style>
  :root { --fg:#1d2330; --muted:#667085; --line:#e4e7ec; --bg:#f7f8fa; --card:#fff; --ok:#12805c; --warn:#b54708; --bad:#b42318; --accent:#3559e0; --accent2:#9aa9f5; }
  * { box-sizing: border-box; }
  body { margin:0; font:13px/1.45 system-ui, -apple-system, "Segoe UI", "Liberation Sans", sans-serif; color:var(--fg); background:var(--bg); }
  header { display:flex; gap:16px; align-items:baseline; padding:12px 20px; background:var(--card); border-bottom:1px solid var(--line); }
  header h1 { font-size:17px; margin:0; }
  header .meta { color:var(--muted); }
  header .right { margin-left:auto; color:var(--muted); }
  main { padding:16px 20px; display:grid; gap:16px; }
  .tiles { display:grid; grid-template-columns:repeat(7, minmax(110px, 1fr)); gap:12px; }
  .axis { display:flex; justify-content:space-between; color:var(--muted); font-size:11px; margin-top:2px; font-variant-numeric:tabular-nums; }
  .alert-critical { color:var(--bad); font-weight:600; } .alert-warning { color:var(--warn); font-weight:600; }
  .replica { display:flex; flex-wrap:wrap; gap:4px 24px; align-items:baseline; }
  .tile, section { background:var(--card); border:1px solid var(--line); border-radius:8px; }
  .tile { padding:10px 12px; }
  .tile .label { color:var(--muted); font-size:12px; }
  .tile .value { font-size:20px; font-weight:600; margin-top:2px; }
  section { padding:12px 14px; overflow-x:auto; }
  section h2 { font-size:14px; margin:0 0 8px; }
  .charts { display:grid; grid-template-columns:repeat(3, 1fr); gap:16px; }
  .chart svg { width:100%; height:120px; display:block; }
  .legend { color:var(--muted); font-size:12px; }
  .legend i { display:inline-block; width:10px; height:3px; margin:0 4px 3px 8px; vertical-align:middle; }
  table { border-collapse:collapse; width:100%; }
  th, td { text-align:left; padding:5px 8px; border-bottom:1px solid var(--line); vertical-align:top; white-space:nowrap; }
  th { color:var(--muted); font-weight:500; font-size:12px; }
  td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; }
  .state { display:inline-block; padding:1px 8px; border-radius:10px; font-size:12px; font-weight:600; }
  .state.healthy { background:#e7f6ef; color:var(--ok); }
  .state.unhealthy { background:#fdecea; color:var(--bad); }
  .state.ejected { background:#fff4e5; color:var(--warn); }
  .view { display:inline-block; margin-left:4px; padding:1px 6px; border-radius:10px; font-size:11px; border:1px solid var(--line); }
  .view.exact { color:var(--ok); } .view.degraded { color:var(--warn); border-color:var(--warn); } .view.blind { color:var(--bad); border-color:var(--bad); }
  .reason { color:var(--muted); font-size:12px; white-space:normal; max-width:280px; display:block; }
  .rank { display:inline-block; margin-right:6px; }
  .up { color:var(--ok); } .down { color:var(--bad); }
  .muted { color:var(--muted); }
  .chosen { background:#eef2ff; }
  .why { cursor:pointer; color:var(--accent); user-select:none; }
  tr.detail > td { background:#fbfbfd; padding:4px 8px 10px 24px; }
  tr.detail table th, tr.detail table td { border-bottom-color:#eef0f3; }
  .terms { color:var(--muted); font-size:12px; white-space:normal; }
  #error { background:#fdecea; color:var(--bad); border:1px solid #f5c2bd; padding:8px 12px; border-radius:6px; }
  .empty { color:var(--muted); padding:8px 0; }
</style>
</head>
<body data-loaded="false">
<header>
  <h1>Switchyard</h1>
  <span class="meta" id="build">…</span>
  <span class="right">healthy workers <b id="healthy-count" data-testid="healthy-count">–</b> · updated <span id="updated">never</span></span>
</header>
<main>
  <div id="error" hidden></div>
  <section data-testid="replica">
    <h2>This router</h2>
    <div class="replica"><span>id <b id="r-id" data-testid="router-id">–</b></span><span>host <b id="r-host">–</b></span><span>up since <b id="r-since">–</b></span>
      <span id="r-peers-count" data-testid="peer-count">–</span></div>
    <table data-testid="peers" id="peers-table" hidden><thead><tr><th>other router (same Redis)</th><th class="num">last heard</th><th class="num">requests it booked here</th><th>picture</th></tr></thead><tbody id="peers"></tbody></table>
  </section>
  <section data-testid="alerts" id="alerts-section" hidden>
    <h2>Firing alerts <span class="muted" id="alerts-source"></span></h2>
    <div id="alerts-error" class="reason" hidden></div>
    <table><thead><tr><th>alert</th><th>severity</th><th>since</th><th>summary</th></tr></thead><tbody id="alerts"></tbody></table>
    <div class="empty" id="alerts-empty" hidden>No alert firing.</div>
  </section>
  <div class="tiles">
    <div class="tile"><div class="label">requests, last minute</div><div class="value" id="t-requests">–</div></div>
    <div class="tile"><div class="label">cache hit, last 5 min</div><div class="value" id="t-hit">–</div></div>
    <div class="tile"><div class="label">best possible hit</div><div class="value" id="t-best">–</div></div>
    <div class="tile"><div class="label">5xx errors, last 5 min</div><div class="value" id="t-errors" data-testid="error-rate">–</div></div>
    <div class="tile"><div class="label">TTFT p50 / p90</div><div class="value" id="t-ttft">–</div></div>
    <div class="tile"><div class="label">admission queue</div><div class="value" id="t-queue" data-testid="admission-queue">–</div></div>
    <div class="tile"><div class="label">sessions</div><div class="value" id="t-sessions" data-testid="sessions">–</div></div>
  </div>
  <div class="charts">
    <section class="chart"><h2>Cache hit ratio</h2><svg id="c-hit" data-testid="chart-hit" viewBox="0 0 300 120" preserveAspectRatio="none"></svg><div class="axis" id="a-hit" data-testid="axis-hit"></div>
      <div class="legend"><i style="background:var(--accent)"></i>hit<i style="background:var(--accent2)"></i>best possible</div></section>
    <section class="chart"><h2>Time to first token (ms)</h2><svg id="c-ttft" data-testid="chart-ttft" viewBox="0 0 300 120" preserveAspectRatio="none"></svg><div class="axis" id="a-ttft" data-testid="axis-ttft"></div>
      <div class="legend"><i style="background:var(--accent)"></i>p50<i style="background:var(--accent2)"></i>p90</div></section>
    <section class="chart"><h2>Requests per 10 s</h2><svg id="c-req" data-testid="chart-requests" viewBox="0 0 300 120" preserveAspectRatio="none"></svg><div class="axis" id="a-req" data-testid="axis-requests"></div>
      <div class="legend"><i style="background:var(--accent)"></i>requests<i style="background:var(--bad)"></i>5xx</div></section>
  </div>
  <section>
    <h2>Fleet</h2>
    <table data-testid="fleet">
      <thead><tr><th>worker</th><th>url</th><th>state</th><th>role</th><th>models</th><th class="num" title="this worker's part of the requests routed in the last 5 minutes">share (5 min)</th><th class="num" title="prefill tokens of in-flight requests booked here">booked prefill</th><th class="num" title="KV blocks of in-flight requests booked here">booked blocks</th><th class="num" title="blocks the router's index says this engine holds">cached blocks</th><th title="the engine's own /metrics: blocks held by running requests (cached blocks no request holds count as free, as in vLLM)">KV in use</th><th title="the engine's own /metrics">running / waiting</th><th class="num" title="blocks the router's index says the engine holds, over the KV capacity it reported">KV cached</th><th>event streams</th></tr></thead>
      <tbody id="fleet"></tbody>
    </table>
    <div class="empty" id="fleet-empty" hidden>No workers registered. Add one with POST /v1/workers or start the router with --worker.</div>
  </section>
  <section>
    <h2>LoRA placement</h2>
    <table data-testid="lora"><thead><tr><th>adapter</th><th>loaded on</th></tr></thead><tbody id="lora"></tbody></table>
    <div class="empty" id="lora-empty" hidden>No adapter loaded.</div>
  </section>
  <section>
    <h2>Last routing decisions <span class="muted" id="formula"></span></h2>
    <table data-testid="decisions">
      <thead><tr><th>time</th><th>request</th><th>model</th><th>chosen worker</th><th class="num">cached / best / prompt blocks</th><th>why</th></tr></thead>
      <tbody id="decisions"></tbody>
    </table>
    <div class="empty" id="decisions-empty" hidden>No request routed yet.</div>
  </section>
</main>
<script>
(function () {
  "use strict";
  var params = new URLSearchParams(location.search);
  var every = Math.max(250, Number(params.get("refresh")) || 2000);
  var urls = {};
  /** Decisions whose candidates the reader opened: kept open across refreshes. */
  var open = {};

  function $(id) { return document.getElementById(id); }
  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (k === "text") e.textContent = attrs[k];
      else if (k === "cls") e.className = attrs[k];
      else e.setAttribute(k, attrs[k]);
    }
    (children || []).forEach(function (c) { if (c != null) e.appendChild(typeof c === "string" ? document.createTextNode(c) : c); });
    return e;
  }
  function get(path) {
    return fetch(path, { headers: { accept: "application/json" }, cache: "no-store", credentials: "same-origin" }).then(function (r) {
      if (!r.ok) throw new Error(path + " answered HTTP " + r.status);
      return r.json();
    });
  }
  function pct(x) { return x == null ? "–" : (100 * x).toFixed(1) + "%"; }
  function ms(x) { return x == null ? "–" : (x < 10 ? x.toFixed(1) : Math.round(x)) + " ms"; }
  function shortId(id) { return id.length > 8 ? id.slice(0, 4) + "…" + id.slice(-4) : id; }

  function chart(svg, series, colors, opts) {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var W = 300, H = 120, n = series[0].length;
    var max = opts.max;
    if (max == null) { max = 0; series.forEach(function (s) { s.forEach(function (v) { if (v != null && v > max) max = v; }); }); }
    if (!(max > 0)) max = 1;
    var ns = "http://www.w3.org/2000/svg";
    for (var g = 1; g < 4; g++) {
      var l = document.createElementNS(ns, "line");
      l.setAttribute("x1", "0"); l.setAttribute("x2", String(W)); l.setAttribute("y1", String(H * g / 4)); l.setAttribute("y2", String(H * g / 4));
      l.setAttribute("stroke", "#eef0f3"); svg.appendChild(l);
    }
    // Lines are drawn last to first, so the first (hit, p50) lies on top and later ones are
    // dashed; bars first to last, so the smaller 5xx bar shows over its requests bar.
    var order = series.map(function (_, i) { return i; });
    if (!opts.bars) order.reverse();
    order.forEach(function (i) {
      var s = series[i];
      if (opts.bars) {
        s.forEach(function (v, j) {
          if (!v) return;
          var r = document.createElementNS(ns, "rect");
          var bw = W / n;
          r.setAttribute("x", String(j * bw + 0.5)); r.setAttribute("width", String(Math.max(1, bw - 1)));
          r.setAttribute("y", String(H - H * v / max)); r.setAttribute("height", String(H * v / max));
          r.setAttribute("fill", colors[i]); r.setAttribute("data-series", String(i)); svg.appendChild(r);
        });
        return;
      }
      var d = "", pen = false;
      var xy = function (j, v) { return [n > 1 ? W * j / (n - 1) : 0, H - 2 - (H - 4) * v / max]; };
      s.forEach(function (v, j) {
        if (v == null) { pen = false; return; }
        var p = xy(j, v);
        // A point with no neighbour (the first bucket of data) is drawn as a dot: a path of one point shows nothing.
        if ((j === 0 || s[j - 1] == null) && (j === n - 1 || s[j + 1] == null)) {
          var c = document.createElementNS(ns, "rect");
          c.setAttribute("x", String(p[0] - 2)); c.setAttribute("y", String(p[1] - 2)); c.setAttribute("width", "4"); c.setAttribute("height", "4");
          c.setAttribute("fill", colors[i]); c.setAttribute("data-series", String(i)); svg.appendChild(c);
        }
        d += (pen ? "L" : "M") + p[0].toFixed(1) + " " + p[1].toFixed(1) + " ";
        pen = true;
      });
      if (!d) return;
      var path = document.createElementNS(ns, "path");
      path.setAttribute("d", d); path.setAttribute("fill", "none"); path.setAttribute("stroke", colors[i]); path.setAttribute("stroke-width", "2");
      path.setAttribute("vector-effect", "non-scaling-stroke"); path.setAttribute("data-series", String(i));
      if (i > 0) path.setAttribute("stroke-dasharray", "5 3");
      svg.appendChild(path);
    });
    var t = document.createElementNS(ns, "text");
    t.setAttribute("x", "4"); t.setAttribute("y", "12"); t.setAttribute("font-size", "10"); t.setAttribute("fill", "#667085");
    t.textContent = opts.label(max); svg.appendChild(t);
  }

  function clock(iso) { return new Date(iso).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", hour12: false }); }
  /** Time labels under a chart: the first bucket's, every quarter, and now. */
  function axis(div, pts) {
    div.textContent = "";
    if (pts.length === 0) return;
    var n = pts.length;
    [0, Math.round((n - 1) / 4), Math.round((n - 1) / 2), Math.round(3 * (n - 1) / 4), n - 1].forEach(function (j, k) {
      div.appendChild(el("span", { "data-time": pts[j].time, text: k === 4 ? "now" : clock(pts[j].time) }));
    });
  }

  function renderReplica(r) {
    $("r-id").textContent = r.router_id;
    $("r-host").textContent = r.host;
    $("r-since").textContent = new Date(r.started_at).toLocaleString();
    var body = $("peers");
    body.textContent = "";
    if (r.peers == null) {
      $("r-peers-count").textContent = "alone: no --redis, so it shares nothing with other routers";
      $("peers-table").hidden = true;
      return;
    }
    $("r-peers-count").textContent = r.peers.length + " other router" + (r.peers.length === 1 ? "" : "s") + " sharing its Redis";
    r.peers.forEach(function (p) {
      body.appendChild(el("tr", { "data-router-id": p.router_id }, [
        el("td", { text: p.router_id }), el("td", { cls: "num", text: p.heard_s_ago + " s ago" }),
        el("td", { cls: "num", text: String(p.requests) }), el("td", { text: p.complete ? "complete" : "resyncing" }),
      ]));
    });
    $("peers-table").hidden = r.peers.length === 0;
  }

  function renderAlerts(a) {
    $("alerts-section").hidden = a == null;
    if (a == null) return;
    $("alerts-source").textContent = "from " + a.source + (a.total > a.firing.length ? " (" + a.firing.length + " of " + a.total + " shown)" : "");
    $("alerts-error").hidden = a.error == null;
    $("alerts-error").textContent = a.error || "";
    var body = $("alerts");
    body.textContent = "";
    a.firing.forEach(function (x) {
      var summary = x.runbook_url ? el("a", { href: x.runbook_url, text: x.summary || "runbook" }) : el("span", { text: x.summary || "" });
      body.appendChild(el("tr", { "data-alert": x.name, "data-severity": x.severity || "" }, [
        el("td", { text: x.name }), el("td", { cls: "alert-" + (x.severity || "none"), text: x.severity || "–" }),
        el("td", { text: new Date(x.starts_at).toLocaleString() }), el("td", { cls: "terms" }, [summary]),
      ]));
    });
    $("alerts-empty").hidden = a.firing.length > 0 || a.error != null;
  }

  function renderStatus(s, workers) {
    var r = s.router;
    $("build").textContent = "v" + r.version + " · " + r.commit + " · " + r.runtime + " · policy " + r.policy + " · block size " + r.block_size;
    var healthy = s.workers.filter(function (w) { return w.state === "healthy"; }).length;
    $("healthy-count").textContent = healthy + " / " + s.workers.length;
    $("t-queue").textContent = String(s.admission_queue);
    $("t-sessions").textContent = s.sessions == null ? "shared (Redis)" : String(s.sessions);
    var pts = s.recent, last6 = pts.slice(-6), last30 = pts.slice(-30);
    $("t-requests").textContent = String(last6.reduce(function (a, p) { return a + p.requests; }, 0));
    var weighted = function (key) {
      var num = 0, den = 0;
      last30.forEach(function (p) { if (p[key] != null) { num += p[key] * p.requests; den += p.requests; } });
      return den > 0 ? num / den : null;
    };
    var req30 = last30.reduce(function (a, p) { return a + p.requests; }, 0), err30 = last30.reduce(function (a, p) { return a + p.errors; }, 0);
    $("t-errors").textContent = req30 > 0 ? pct(err30 / req30) : "–";
    $("t-errors").title = err30 + " of " + req30 + " requests answered 5xx";
    $("t-hit").textContent = pct(weighted("hit_ratio"));
    $("t-best").textContent = pct(weighted("ideal_hit_ratio"));
    var lastTtft = null;
    for (var i = pts.length - 1; i >= 0; i--) if (pts[i].ttft_p50_ms != null) { lastTtft = pts[i]; break; }
    $("t-ttft").textContent = lastTtft ? ms(lastTtft.ttft_p50_ms).replace(" ms", "") + " / " + ms(lastTtft.ttft_p90_ms) : "–";
    chart($("c-hit"), [pts.map(function (p) { return p.hit_ratio; }), pts.map(function (p) { return p.ideal_hit_ratio; })], ["#3559e0", "#9aa9f5"], { max: 1, label: function () { return "100%"; } });
    chart($("c-ttft"), [pts.map(function (p) { return p.ttft_p50_ms; }), pts.map(function (p) { return p.ttft_p90_ms; })], ["#3559e0", "#9aa9f5"], { label: function (m) { return Math.round(m) + " ms"; } });
    chart($("c-req"), [pts.map(function (p) { return p.requests; }), pts.map(function (p) { return p.errors; })], ["#3559e0", "#b42318"], { bars: true, label: function (m) { return String(m); } });
    axis($("a-hit"), pts); axis($("a-ttft"), pts); axis($("a-req"), pts);
    renderReplica(s.replica);
    renderAlerts(s.alerts);
  }

  function streamsCell(w) {
    var ranks = w.kv_events && w.kv_events.ranks;
    if (!ranks) return el("span", { cls: "muted", text: "pushed over HTTP" });
    return el("span", null, ranks.map(function (r) {
      return el("span", { cls: "rank " + (r.connected ? "up" : "down"), "data-rank": String(r.dp_rank), "data-connected": String(r.connected),
        text: "rank " + r.dp_rank + (r.connected ? " up" : " lost") + (r.gaps ? " (" + r.gaps + " gaps)" : "") });
    }));
  }

  function engineCells(w) {
    var m = w.engine_metrics && w.engine_metrics.ranks;
    if (!m || m.length === 0) return [el("td", { cls: "muted", text: "–" }), el("td", { cls: "muted", text: "–" })];
    return [
      el("td", { "data-field": "kv_usage", text: m.map(function (r) { return r.kv_usage == null ? "–" : pct(r.kv_usage); }).join(" · ") }),
      el("td", { "data-field": "engine_queue", text: m.map(function (r) { return (r.running == null ? "–" : r.running) + " / " + (r.waiting == null ? "–" : r.waiting); }).join(" · ") }),
    ];
  }

  // Is the router's view of this engine's cache true (cache_truth in /v1/workers): the worst rank's state.
  function viewBadge(w) {
    var ranks = w.cache_truth || [];
    if (ranks.length === 0) return null;
    var order = { exact: 0, degraded: 1, blind: 2 };
    var worst = ranks.reduce(function (a, r) { return order[r.state] > order[a.state] ? r : a; }, ranks[0]);
    var title = ranks.map(function (r) { return "rank " + r.dp_rank + ": " + r.state + (r.cause ? " (" + r.cause + ")" : "") + ", agreement " + pct(r.agreement) + " of " + r.answers_checked + " answers"; }).join("; ");
    return el("span", { cls: "view " + worst.state, "data-field": "cache_view", title: title, text: "view " + worst.state + (worst.cause ? ": " + worst.cause : "") });
  }

  function renderFleet(workers, states, served) {
    var byId = {};
    states.forEach(function (s) { byId[s.id] = s; });
    var total = 0;
    for (var k in served) total += served[k];
    var body = $("fleet");
    body.textContent = "";
    urls = {};
    workers.forEach(function (w) {
      urls[w.id] = w.url;
      var st = byId[w.id] || { state: w.healthy ? "healthy" : "unhealthy", reason: w.reason || null };
      var stateCell = el("td", null, [
        el("span", { cls: "state " + st.state, "data-field": "state", text: st.state + (st.state === "ejected" && st.ejected_for_s != null ? " (" + st.ejected_for_s + " s)" : "") }),
        viewBadge(w),
        st.reason && st.state !== "healthy" ? el("span", { cls: "reason", text: st.reason }) : null,
      ]);
      var models = (w.models || []).map(function (m) { return m.id; }).join(", ") || "any";
      var row = el("tr", { "data-worker-id": w.id, "data-state": st.state }, [
        el("td", { title: w.id, text: shortId(w.id) }),
        el("td", { "data-field": "url", text: w.url }),
        stateCell,
        el("td", { "data-field": "role", text: w.role || "both" }),
        el("td", { "data-field": "models", text: models }),
        el("td", { cls: "num", "data-field": "share", "data-requests": String(served[w.id] || 0), title: (served[w.id] || 0) + " of " + total + " requests", text: total > 0 ? pct((served[w.id] || 0) / total) : "–" }),
        el("td", { cls: "num", "data-field": "active_prefill_tokens", text: String(w.active_prefill_tokens) }),
        el("td", { cls: "num", "data-field": "active_decode_blocks", text: String(w.active_decode_blocks) }),
        el("td", { cls: "num", "data-field": "cached_blocks", text: String(w.cached_blocks) }),
      ].concat(engineCells(w), [
        el("td", { cls: "num", "data-field": "kv_cached", title: w.cached_blocks + " of " + (w.kv_capacity_blocks == null ? "unknown" : w.kv_capacity_blocks) + " blocks",
          text: w.kv_capacity_blocks ? pct(Math.min(1, w.cached_blocks / w.kv_capacity_blocks)) : "–" }),
        el("td", { "data-field": "streams" }, [streamsCell(w)]),
      ]));
      body.appendChild(row);
    });
    $("fleet-empty").hidden = workers.length > 0;
  }

  function renderLora(workers) {
    var placed = {};
    workers.forEach(function (w) { (w.loras || []).forEach(function (a) { (placed[a] = placed[a] || []).push(w.url); }); });
    var body = $("lora");
    body.textContent = "";
    Object.keys(placed).sort().forEach(function (a) {
      body.appendChild(el("tr", { "data-adapter": a }, [el("td", { text: a }), el("td", { text: placed[a].join(", ") })]));
    });
    $("lora-empty").hidden = Object.keys(placed).length > 0;
  }

  function termsText(c) {
    return c.terms.map(function (t) { return t.weight + "×" + t.term + " = " + t.weight + "×(" + t.detail + ")" + (t.value == null ? "" : " = " + (Math.round(t.weight * t.value * 1000) / 1000)); }).join(" + ") + " → cost " + c.cost;
  }

  function renderDecisions(d) {
    $("formula").textContent = d.formula ? "cost = " + d.formula + " (lowest wins)" : "";
    var body = $("decisions");
    body.textContent = "";
    d.decisions.slice(0, 15).forEach(function (x) {
      var cands = el("table", { "data-testid": "candidates" }, [
        el("thead", null, [el("tr", null, ["worker", "url", "cached blocks", "prefill tokens", "decode blocks", "active requests", "cost", "arithmetic"].map(function (h) { return el("th", { text: h }); }))]),
        el("tbody", null, x.candidates.map(function (c) {
          return el("tr", { cls: c.chosen ? "chosen" : "", "data-chosen": String(c.chosen), "data-worker-id": c.worker }, [
            el("td", { title: c.worker, text: shortId(c.worker) + ":" + c.dp_rank + (c.chosen ? " ✓" : "") }),
            el("td", { text: urls[c.worker] || "" }),
            el("td", { cls: "num", text: String(c.overlap_blocks) }),
            el("td", { cls: "num", text: String(c.prefill_tokens) }),
            el("td", { cls: "num", text: String(c.decode_blocks) }),
            el("td", { cls: "num", text: String(c.active_requests) }),
            el("td", { cls: "num", "data-field": "cost", text: String(c.cost) }),
            el("td", { cls: "terms", text: termsText(c) }),
          ]);
        })),
      ]);
      var shown = !!open[x.request_id];
      var why = el("span", { cls: "why", role: "button", "data-testid": "why",
        text: (shown ? "▼ " : "▶ ") + (x.sticky ? "sticky session, " : "") + x.candidates_total + " candidate" + (x.candidates_total === 1 ? "" : "s") + (x.kv_plan ? "; " + x.kv_plan : "") });
      var detail = el("tr", { cls: "detail", "data-detail-for": x.request_id }, [el("td", { colspan: "6" }, [cands])]);
      detail.hidden = !shown;
      why.addEventListener("click", function () {
        open[x.request_id] = !open[x.request_id];
        detail.hidden = !open[x.request_id];
        why.textContent = (open[x.request_id] ? "▼" : "▶") + why.textContent.slice(1);
      });
      body.appendChild(el("tr", { "data-request-id": x.request_id, "data-worker-id": x.worker }, [
        el("td", { text: x.time.slice(11, 23) }),
        el("td", { title: x.request_id, text: x.request_id.length > 14 ? x.request_id.slice(0, 13) + "…" : x.request_id }),
        el("td", { text: x.model == null ? "–" : x.model }),
        el("td", { title: x.worker, text: (urls[x.worker] || shortId(x.worker)) + " rank " + x.dp_rank }),
        el("td", { cls: "num", text: x.overlap_blocks + " / " + x.best_overlap_blocks + " / " + x.prompt_blocks }),
        el("td", null, [why]),
      ]));
      body.appendChild(detail);
    });
    $("decisions-empty").hidden = d.decisions.length > 0;
  }

  function refresh() {
    Promise.all([get("/v1/workers"), get("/debug/status"), get("/debug/decisions")]).then(function (r) {
      var workers = r[0].workers, status = r[1], decisions = r[2];
      renderFleet(workers, status.workers, status.worker_requests || {});
      renderStatus(status, workers);
      renderLora(workers);
      renderDecisions(decisions);
      $("error").hidden = true;
      $("updated").textContent = new Date().toLocaleTimeString();
      document.body.setAttribute("data-loaded", "true");
      document.body.setAttribute("data-refreshed", String(Date.now()));
    }).catch(function (e) {
      $("error").hidden = false;
      $("error").textContent = "Cannot read the router's status: " + (e && e.message ? e.message : String(e));
    }).finally(function () { setTimeout(refresh, every); });
  }
  refresh();
})();
</script>
</body>
</html>
`;
