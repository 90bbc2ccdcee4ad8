// The console's one script: it draws the page the address names from the
// bridge's JSON routes, with the token kept in this tab's sessionStorage,
// and redraws the live pages every two seconds while the tab is visible.
// No library: the DOM, fetch and a little SVG. docs/console.md has the pages.
"use strict";
(function () {
  const TOKEN_KEY = "queen-console-token";
  const REFRESH_MS = 2000;
  const QUEUE_MODE = "__QUEUE_MODE__";
  const SVG = "http://www.w3.org/2000/svg";
  const WINDOW_MS = 10 * 60 * 1000; // the overview's history: ten minutes

  let token = sessionStorage.getItem(TOKEN_KEY) || "";
  let generation = 0; // a new page (or token) stops the old page's refreshes
  let timer = null;

  // ---- small helpers ----

  // el builds an element: attrs are attributes ("text" sets its text,
  // "on<event>" a listener), children are nodes or strings.
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") e.textContent = String(v);
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat()) {
      if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
    }
    return e;
  }

  // fill replaces node's children, leaving out null ones.
  function fill(node, ...children) {
    node.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined));
  }

  function num(v) {
    if (v === null || v === undefined || v === "") return "—";
    const n = Number(v);
    if (!Number.isFinite(n)) return String(v);
    if (Number.isInteger(n)) return n.toLocaleString("en");
    return n.toLocaleString("en", { maximumFractionDigits: n < 10 ? 2 : 1 });
  }

  function bytes(v) {
    const n = Number(v) || 0;
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0, x = n;
    while (x >= 1024 && i < units.length - 1) { x /= 1024; i++; }
    return (i === 0 ? x : x.toFixed(1)) + " " + units[i];
  }

  function when(s) {
    if (!s) return "—";
    const d = new Date(s);
    if (isNaN(d)) return String(s);
    const pad = (x) => String(x).padStart(2, "0");
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " +
      pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
  }

  function pretty(v) {
    try { return JSON.stringify(v, null, 2); } catch (e) { return String(v); }
  }

  function groupName(g) { return g === QUEUE_MODE ? "queue mode (" + QUEUE_MODE + ")" : g; }

  function params() { return new URLSearchParams(location.search); }

  function qs(obj) {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(obj)) if (v !== "" && v !== null && v !== undefined) p.set(k, v);
    return p.toString();
  }

  function queueLink(q) { return "/console/queues/" + encodeURIComponent(q); }

  function setStatus(text, isError) {
    const s = document.getElementById("status");
    s.textContent = text;
    s.classList.toggle("error", !!isError);
  }

  // ---- the JSON routes ----

  class APIError extends Error {
    constructor(status, message) { super(message); this.status = status; }
  }

  // api calls a route of this bridge, with the token when one is held. A
  // 401 shows the token form; other failures throw with the route's error.
  async function api(path, opts) {
    opts = opts || {};
    const headers = {};
    if (token) headers["Authorization"] = "Bearer " + token;
    let body;
    if (opts.body !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(opts.body);
    }
    const resp = await fetch(path, { method: opts.method || "GET", headers, body, cache: "no-store", credentials: "omit" });
    if (resp.status === 401) {
      askToken(token ? "The bridge refused this token." : "");
      throw new APIError(401, "a token is needed");
    }
    if (resp.status === 204) return null;
    const text = await resp.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
    if (!resp.ok) throw new APIError(resp.status, (data && data.error) || text || resp.statusText);
    return data;
  }

  // adminProbe reads maintenance, an admin route: its answer when this
  // token is an admin's (or there are no tokens), null when it is refused.
  async function adminProbe() {
    try {
      const m = await api("/api/v1/system/maintenance");
      showWho(true);
      return m;
    } catch (e) {
      if (e.status === 403) { showWho(false); return null; }
      throw e;
    }
  }

  function showWho(admin) {
    const who = document.getElementById("who");
    fill(who,
      el("span", { id: "role", "data-admin": admin ? "true" : "false", text: admin ? "admin" : "read only" }),
      token ? el("button", { id: "token-forget", type: "button", onclick: forgetToken, text: "forget token" }) : null);
  }

  // ---- the token ----

  function askToken(message) {
    stop();
    document.getElementById("page").hidden = true;
    document.getElementById("auth").hidden = false;
    document.getElementById("auth-error").textContent = message || "";
    document.getElementById("token-input").focus();
  }

  function forgetToken() {
    token = "";
    sessionStorage.removeItem(TOKEN_KEY);
    fill(document.getElementById("who"));
    askToken("");
  }

  document.getElementById("token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    token = document.getElementById("token-input").value.trim();
    document.getElementById("token-input").value = "";
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    document.getElementById("auth").hidden = true;
    document.getElementById("page").hidden = false;
    start();
  });

  // ---- refreshing ----

  function stop() {
    generation++;
    if (timer) clearTimeout(timer);
    timer = null;
  }

  // live runs refresh now and every REFRESH_MS after the last one ended,
  // while the page is the current one and the tab is visible.
  function live(refresh) {
    const gen = generation;
    let running = false; // one refresh at a time, whatever visibilitychange does meanwhile
    const tick = async () => {
      timer = null;
      if (gen !== generation || document.hidden || running) return; // visibilitychange starts it again
      running = true;
      try {
        await refresh();
        if (gen === generation) setStatus("updated " + when(new Date()));
      } catch (e) {
        if (e.status === 401) return;
        if (gen === generation) setStatus(e.message, true);
      } finally {
        running = false;
      }
      if (gen === generation && !document.hidden) timer = setTimeout(tick, REFRESH_MS);
    };
    document.onvisibilitychange = () => { if (!document.hidden && !timer && gen === generation) tick(); };
    return tick();
  }

  async function once(fn) {
    try { await fn(); } catch (e) { if (e.status !== 401) setStatus(e.message, true); }
  }

  // ---- charts: a line over the last minutes, inline SVG ----

  function chart(name, title, unit) {
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("viewBox", "0 0 300 80");
    svg.setAttribute("preserveAspectRatio", "none");
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", title);
    const area = document.createElementNS(SVG, "polygon");
    area.setAttribute("class", "area");
    const line = document.createElementNS(SVG, "polyline");
    line.setAttribute("class", "line");
    svg.append(area, line);
    const now = el("span", { class: "now", "data-field": "now", text: "—" });
    const max = el("span", { class: "max", "data-field": "max" });
    const span = el("span", { class: "span", text: "last " + WINDOW_MS / 60000 + " min" });
    const fig = el("figure", { class: "chart", "data-chart": name },
      el("figcaption", {}, el("span", { class: "title", text: title }), now, el("span", { class: "unit", text: unit })),
      svg, el("div", { class: "axis" }, span, max));
    // draw places each point by its time on a fixed window ending at the
    // last point: a young bridge's line starts part way along.
    fig.draw = (points, value) => {
      fig.setAttribute("data-points", points.length);
      const w = 300, h = 80;
      if (!points.length) { line.setAttribute("points", ""); area.setAttribute("points", ""); return; }
      const end = Date.parse(points[points.length - 1].time), start = end - WINDOW_MS;
      const vals = points.map(value);
      const top = Math.max(...vals) || 1;
      const xy = points.map((p, i) => [Math.max(0, (Date.parse(p.time) - start) / WINDOW_MS) * w,
        h - (Math.max(0, vals[i]) / top) * (h - 4)]);
      const text = xy.map(([x, y]) => x.toFixed(1) + "," + y.toFixed(1)).join(" ");
      line.setAttribute("points", text);
      area.setAttribute("points", xy[0][0].toFixed(1) + "," + h + " " + text + " " + w + "," + h);
      now.textContent = num(vals[vals.length - 1]);
      max.textContent = "max " + num(top);
    };
    return fig;
  }

  function card(id, title, note) {
    return el("div", { class: "card" }, el("div", { class: "title", text: title }),
      el("div", { class: "value", id, text: "—" }), note ? el("div", { class: "note", id: id + "-note" }) : null);
  }

  // ---- Overview ----

  async function overviewPage(main) {
    const charts = [chart("pushed", "Pushed", "items/s"), chart("consumed", "Consumed", "items/s"),
      chart("segments", "Segments per commit", "")];
    const maint = el("div", { class: "card maintenance", id: "maintenance" },
      el("div", { class: "title", text: "Maintenance" }),
      el("div", { class: "value", id: "maintenance-state", text: "—" }),
      el("div", { class: "note", id: "pop-maintenance-state" }),
      el("div", { id: "maintenance-control" }));
    const bridges = el("tbody");
    const slots = el("tbody");
    const publish = el("section", { id: "publish", hidden: "hidden" },
      el("h2", { text: "Publish relay" }),
      el("table", { id: "publish-slots" }, el("thead", {}, el("tr", {},
        el("th", { text: "database" }), el("th", { text: "slot" }), el("th", { text: "state" }),
        el("th", { class: "n", text: "relayed" }), el("th", { class: "n", text: "lag" }))), slots));
    fill(main,
      el("h1", { text: "Overview" }),
      el("p", { class: "lead", id: "bridge-id" }),
      el("section", { class: "charts" }, charts),
      el("section", { class: "cards" },
        card("bundles-in-flight", "Bundles in flight", true),
        card("flush-ms", "Commit flush", true),
        card("spool", "Spool", true),
        maint),
      el("h2", { text: "Since this bridge started" }),
      el("section", { class: "cards" },
        card("total-pushed", "Pushed"), card("total-consumed", "Consumed"),
        card("total-commits", "Commits"), card("total-segments", "Segments")),
      el("h2", { text: "Bridges of the cluster" }),
      el("table", { id: "bridges" }, el("thead", {}, el("tr", {},
        el("th", { text: "bridge" }), el("th", { class: "n", text: "buckets owned" }), el("th", { class: "n", text: "share" }))), bridges),
      publish);

    const admin = await adminProbe().catch((e) => { if (e.status === 401) throw e; return null; });
    let enabled = null;
    const control = document.getElementById("maintenance-control");
    const drawSwitch = (on) => {
      enabled = on;
      if (!admin) return;
      fill(control,
        el("button", { id: "maintenance-switch", type: "button", "data-enabled": on ? "true" : "false",
          text: on ? "Turn maintenance off" : "Turn maintenance on", onclick: flip }),
        el("p", { class: "note", text: on
          ? "Switching it off replays every bridge's spool into PostgreSQL, in order."
          : "In maintenance nothing reaches PostgreSQL: every bridge writes pushes to its spool and answers them buffered, and pops deliver nothing." }));
    };
    const flip = async (ev) => {
      ev.target.disabled = true;
      try {
        const m = await api("/api/v1/system/maintenance", { method: "POST", body: { enabled: !enabled } });
        drawSwitch(!!m.maintenanceMode);
        document.getElementById("maintenance-state").textContent = m.maintenanceMode ? "on" : "off";
        document.getElementById("maintenance").dataset.enabled = m.maintenanceMode ? "true" : "false";
      } catch (e) {
        ev.target.disabled = false;
        if (e.status !== 401) setStatus("maintenance: " + e.message, true);
      }
    };
    if (admin) drawSwitch(!!admin.maintenanceMode);

    await live(async () => {
      const o = await api("/api/v1/bridge/overview");
      const h = o.history || [];
      charts[0].draw(h, (p) => p.pushedPerSecond || 0);
      charts[1].draw(h, (p) => p.consumedPerSecond || 0);
      charts[2].draw(h, (p) => p.segmentsPerCommit || 0);
      document.getElementById("bridge-id").textContent = "This bridge: " + o.bridge + " · " + when(o.time);
      document.getElementById("bundles-in-flight").textContent = num(o.bundlesInFlight);
      document.getElementById("bundles-in-flight-note").textContent = "limit " + num(o.inFlightLimit);
      document.getElementById("flush-ms").textContent = num(o.flushMs) + " ms";
      document.getElementById("flush-ms-note").textContent = "bundle call " + num(o.bundleLatencyMs) + " ms";
      const sp = o.spool || {};
      document.getElementById("spool").textContent = num(sp.records) + " records";
      document.getElementById("spool-note").textContent = bytes(sp.bytes) + (sp.healthy === false ? " · NOT HEALTHY" : " · healthy");
      document.getElementById("maintenance-state").textContent = o.maintenance ? "on" : "off";
      document.getElementById("maintenance").dataset.enabled = o.maintenance ? "true" : "false";
      document.getElementById("pop-maintenance-state").textContent = "pop maintenance " + (o.popMaintenance ? "on" : "off");
      if (admin && enabled !== !!o.maintenance) drawSwitch(!!o.maintenance);
      const t = o.totals || {};
      document.getElementById("total-pushed").textContent = num(t.pushed);
      document.getElementById("total-consumed").textContent = num(t.consumed);
      document.getElementById("total-commits").textContent = num(t.commits);
      document.getElementById("total-segments").textContent = num(t.segments);
      const all = o.buckets || 0;
      fill(bridges, ...(o.bridges || []).map((b) => {
        const n = Array.isArray(b.buckets) ? b.buckets.length : Number(b.buckets) || 0;
        return el("tr", { "data-bridge": b.id, class: b.self ? "self" : null },
          el("td", {}, b.id, b.self ? el("span", { class: "tag", text: "this bridge" }) : null),
          el("td", { class: "n", "data-field": "buckets", text: num(n) }),
          el("td", { class: "n", text: all ? num((100 * n) / all) + " %" : "—" }));
      }));
      // A slot behind its bound holds WAL on its database: said in words.
      const ps = o.publish || [];
      if (ps.length) publish.removeAttribute("hidden"); else publish.setAttribute("hidden", "hidden");
      fill(slots, ...ps.map((s) => el("tr", { "data-slot": s.slot, class: s.behind ? "behind" : null },
        el("td", { text: s.database }), el("td", { text: s.slot }),
        el("td", { text: s.state + (s.behind ? " · BEHIND" : "") }),
        el("td", { class: "n", text: num(s.relayed) }),
        el("td", { class: "n", text: bytes(s.lagBytes) + " · " + num(s.lagSeconds) + " s" }))));
    });
  }

  // ---- Queues ----

  async function queuesPage(main) {
    const body = el("tbody");
    fill(main,
      el("h1", { text: "Queues" }),
      el("p", { class: "lead", text: "Every queue of this token's tenant. The push rate is the change of the stored count between two refreshes." }),
      el("table", { id: "queues-table" }, el("thead", {}, el("tr", {},
        ["queue", "partitions", "messages", "pending", "processing", "push rate /s", "options"].map((t, i) =>
          el("th", { class: i > 0 && i < 6 ? "n" : null, text: t })))), body));
    const last = new Map(); // queue -> [total, time]
    const options = new Map(); // queue -> text, read once
    await live(async () => {
      const r = await api("/api/v1/resources/queues");
      const now = Date.now();
      const rows = [];
      for (const q of r.queues || []) {
        const m = q.messages || {};
        const prev = last.get(q.name);
        let rate = "—";
        if (prev && now > prev[1]) rate = num(Math.max(0, (m.total - prev[0]) / ((now - prev[1]) / 1000)));
        last.set(q.name, [m.total || 0, now]);
        const opt = el("td", { class: "options", "data-field": "options", text: options.get(q.name) || "…" });
        if (!options.has(q.name)) {
          options.set(q.name, "…");
          api("/api/v1/status/queues/" + encodeURIComponent(q.name)).then((s) => {
            const text = optionsText((s.queue || {}).config);
            options.set(q.name, text);
            const cell = body.querySelector('tr[data-queue="' + CSS.escape(q.name) + '"] [data-field="options"]');
            if (cell) cell.textContent = text;
          }).catch(() => options.delete(q.name));
        }
        rows.push(el("tr", { "data-queue": q.name },
          el("td", {}, el("a", { href: queueLink(q.name), text: q.name })),
          el("td", { class: "n", "data-field": "partitions", text: num(q.partitions) }),
          el("td", { class: "n", "data-field": "messages", text: num(m.total) }),
          el("td", { class: "n", "data-field": "pending", text: num(m.pending) }),
          el("td", { class: "n", "data-field": "processing", text: num(m.processing) }),
          el("td", { class: "n", "data-field": "rate", text: rate }),
          opt));
      }
      fill(body, ...rows);
      if (!rows.length) body.append(el("tr", {}, el("td", { colspan: 7, class: "empty", text: "No queue yet: a push creates one." })));
    });
  }

  function optionsText(config) {
    const parts = [];
    for (const [k, v] of Object.entries(config || {})) if (v !== null && v !== undefined) parts.push(k + " " + v);
    return parts.join(" · ") || "defaults";
  }

  // ---- Queue ----

  async function queuePage(main, queue) {
    const parts = el("tbody");
    const groups = el("div", { id: "groups" });
    const streams = el("tbody");
    fill(main,
      el("h1", {}, el("a", { href: "/console/queues", text: "Queues" }), " / ", el("span", { id: "queue-name", text: queue })),
      el("p", { class: "lead", id: "queue-options" }),
      el("h2", { text: "Partitions" }),
      el("table", { id: "partitions" }, el("thead", {}, el("tr", {},
        el("th", { text: "partition" }), el("th", { class: "n", text: "id" }), el("th", { class: "n", text: "last offset" }),
        el("th", { class: "n", text: "messages" }), el("th", { text: "last write" }), el("th", { text: "" }))), parts),
      el("h2", { text: "Consumer groups" }),
      groups,
      el("h2", { text: "Streaming queries" }),
      el("table", { id: "streams" }, el("thead", {}, el("tr", {},
        el("th", { text: "query" }), el("th", { text: "sink" }), el("th", { class: "n", text: "partitions with state" }),
        el("th", { class: "n", text: "state rows" }), el("th", { class: "n", text: "state bytes" }), el("th", { text: "last state write" }))), streams));
    once(async () => {
      let s;
      try {
        s = await api("/api/v1/status/queues/" + encodeURIComponent(queue));
      } catch (e) {
        if (e.status === 404) return; // the consumers route below says so
        throw e;
      }
      document.getElementById("queue-options").textContent = "Options: " + optionsText((s.queue || {}).config);
    });
    await live(async () => {
      let c;
      try {
        c = await api("/api/v1/resources/queues/" + encodeURIComponent(queue) + "/consumers");
      } catch (e) {
        if (e.status !== 404) throw e;
        // No such queue for this token: say so in the page and stop
        // refreshing it.
        stop();
        fill(main,
          el("h1", {}, el("a", { href: "/console/queues", text: "Queues" }), " / ", el("span", { id: "queue-name", text: queue })),
          el("p", { class: "error", id: "queue-missing",
            text: "No queue " + queue + ": nothing was pushed to it, or it was deleted (or it belongs to another tenant than this token's)." }));
        setStatus("no queue " + queue);
        return;
      }
      fill(parts, ...(c.partitions || []).map((p) => el("tr", { "data-partition": p.name, "data-partition-id": p.id },
        el("td", { text: p.name }),
        el("td", { class: "n", text: p.id }),
        el("td", { class: "n", "data-field": "lastOffset", text: num(p.lastOffset) }),
        el("td", { class: "n", "data-field": "messages", text: num(p.messages) }),
        el("td", { "data-field": "lastWrite", text: when(p.lastWrite) }),
        el("td", {}, el("a", { href: "/console/messages?" + qs({ queue, partition: p.name, from: Math.max(1, (p.lastOffset || 0) - 19) }), text: "browse" })))));
      const gs = c.groups || [];
      fill(groups, ...gs.map((g) => {
        const lag = (g.partitions || []).reduce((s, p) => s + (Number(p.lag) || 0), 0);
        return el("section", { class: "group", "data-group": g.name },
          el("h3", {}, groupName(g.name), el("span", { class: "tag", "data-field": "lag", text: "lag " + num(lag) }),
            el("a", { class: "side", href: "/console/dead-letters?" + qs({ queue, group: g.name }), text: "dead letters" })),
          el("table", {}, el("thead", {}, el("tr", {},
            el("th", { text: "partition" }), el("th", { class: "n", text: "cursor" }), el("th", { class: "n", text: "lag" }),
            el("th", { text: "lease" }), el("th", { text: "until" }), el("th", { class: "n", text: "batch" }))),
          el("tbody", {}, (g.partitions || []).map((p) => el("tr", { "data-partition": p.partition, "data-partition-id": p.partitionId,
            "data-popped": p.popped ? "true" : "false" },
            // A partition the group never popped: its lag counts from
            // where the group's subscription starts it (the cursor shown).
            el("td", {}, p.partition, p.popped ? null : el("span", { class: "note", text: " · not popped yet" })),
            el("td", { class: "n", "data-field": "cursor", text: num(p.cursor) }),
            el("td", { class: "n", "data-field": "lag", text: num(p.lag) }),
            el("td", { class: "mono", "data-field": "lease", text: p.leaseId || "—" }),
            el("td", { "data-field": "leaseExpiresAt", text: p.leaseId ? when(p.leaseExpiresAt) : "—" }),
            el("td", { class: "n", "data-field": "batchSize", text: p.leaseId ? num(p.batchSize) : "—" }))))));
      }));
      if (!gs.length) groups.append(el("p", { class: "empty", text: "No consumer group has read this queue yet." }));
      // Streaming queries registered on this queue as their source, with
      // the size of the state the bridge keeps for them (docs/streams.md).
      fill(streams, ...(c.streams || []).map((q) => el("tr", { "data-query": q.name, "data-query-id": q.queryId },
        el("td", { text: q.name }),
        el("td", { text: q.sinkQueue || "—" }),
        el("td", { class: "n", "data-field": "statePartitions", text: num(q.statePartitions) }),
        el("td", { class: "n", "data-field": "stateRows", text: num(q.stateRows) }),
        el("td", { class: "n", "data-field": "stateBytes", text: num(q.stateBytes) }),
        el("td", { "data-field": "lastStateWrite", text: when(q.lastStateWrite) }))));
      if (!(c.streams || []).length) streams.append(el("tr", {}, el("td", { colspan: "6", class: "empty", text: "No streaming query reads this queue." })));
    });
  }

  // ---- Messages ----

  const PAGE = 20;

  async function queueList() {
    const dl = el("datalist", { id: "queue-names" });
    api("/api/v1/resources/queues").then((r) => {
      fill(dl, ...(r.queues || []).map((q) => el("option", { value: q.name })));
    }).catch(() => {});
    return dl;
  }

  function field(label, name, value, attrs) {
    return el("label", {}, label, el("input", Object.assign({ name, value: value || "" }, attrs || {})));
  }

  async function messagesPage(main) {
    const p = params();
    const queue = p.get("queue") || "", partition = p.get("partition") || "Default", tid = p.get("transactionId") || "";
    const from = Math.max(1, parseInt(p.get("from") || "1", 10) || 1);
    const list = el("div", { id: "messages" });
    const found = el("div", { id: "found" });
    fill(main,
      el("h1", { text: "Messages" }),
      await queueList(),
      el("form", { id: "browse", method: "get", action: "/console/messages", class: "bar" },
        el("span", { class: "legend", text: "Browse a partition" }),
        field("queue", "queue", queue, { list: "queue-names", required: true, id: "browse-queue" }),
        field("partition", "partition", partition, { id: "browse-partition" }),
        field("from offset", "from", String(from), { type: "number", min: 1, id: "browse-from" }),
        el("button", { type: "submit", id: "browse-submit", text: "Browse" })),
      el("form", { id: "find", method: "get", action: "/console/messages", class: "bar" },
        el("span", { class: "legend", text: "Find by transactionId" }),
        field("queue", "queue", queue, { list: "queue-names", required: true, id: "find-queue" }),
        field("partition", "partition", partition, { id: "find-partition" }),
        field("transactionId", "transactionId", tid, { required: true, id: "find-transaction" }),
        el("button", { type: "submit", id: "find-submit", text: "Find" })),
      found, list);
    if (!queue) { list.append(el("p", { class: "empty", text: "Name a queue and a partition to read it from an offset." })); return; }
    if (tid) await once(() => findMessage(found, queue, partition, tid));
    await once(async () => {
      const r = await api("/api/v1/messages?" + qs({ queue, partition, from, limit: PAGE }));
      const ms = r.messages || [];
      fill(list,
        el("h2", { text: queue + " / " + partition + " from offset " + from }),
        ...ms.map((m) => el("article", { class: "message", "data-offset": m.offset, "data-transaction-id": m.transactionId },
          el("header", {}, el("b", { text: "offset " + m.offset }), " · ",
            el("span", { class: "mono", "data-field": "transactionId", text: m.transactionId }), " · ", when(m.createdAt),
            m.traceId ? " · trace " + m.traceId : "", m.encoding ? " · " + m.encoding : ""),
          el("pre", { class: "payload", "data-field": "payload", text: pretty(m.payload) }))),
        ms.length ? null : el("p", { class: "empty", text: "Nothing stored at or after offset " + from + "." }),
        el("nav", { class: "pager" },
          from > 1 ? el("a", { id: "page-prev", href: "/console/messages?" + qs({ queue, partition, from: Math.max(1, from - PAGE) }), text: "← earlier" }) : null,
          ms.length ? el("a", { id: "page-next", href: "/console/messages?" + qs({ queue, partition, from: r.next }), text: "later →" }) : null));
    });
  }

  // findMessage shows a message found by its transactionId: the detail
  // route names the partition by id, read from the queue's resource.
  async function findMessage(out, queue, partition, tid) {
    let r;
    try {
      r = await api("/api/v1/resources/queues/" + encodeURIComponent(queue));
    } catch (e) {
      if (e.status === 404) { fill(out, el("p", { class: "error", id: "found-none", text: "No queue " + queue + "." })); return; }
      throw e;
    }
    const part = (r.partitions || []).find((x) => x.name === partition);
    if (!part) { fill(out, el("p", { class: "error", id: "found-none", text: "No partition " + partition + " in " + queue + "." })); return; }
    let m;
    try {
      m = await api("/api/v1/messages/" + encodeURIComponent(part.id) + "/" + encodeURIComponent(tid));
    } catch (e) {
      if (e.status === 404) { fill(out, el("p", { class: "error", id: "found-none", text: "No message " + tid + " in " + queue + " / " + partition + "." })); return; }
      throw e;
    }
    fill(out, el("article", { class: "message found", id: "found-message", "data-transaction-id": m.transactionId },
      el("header", {}, el("b", { text: "transactionId " + m.transactionId }), " · ", m.status, " · ", when(m.createdAt),
        m.isEncrypted ? " · stored encrypted" : ""),
      el("p", { class: "note" }, "message id ", el("span", { class: "mono", text: m.id }), " · consumed by ",
        (m.consumerGroups || []).filter((g) => g.consumed).map((g) => groupName(g.name)).join(", ") || "no group"),
      m.errorMessage ? el("p", { class: "error", text: "dead letter: " + m.errorMessage + " (retries " + m.retryCount + ")" }) : null,
      el("pre", { class: "payload", "data-field": "payload", text: pretty(m.payload) })));
  }

  // ---- Dead letters ----

  async function deadLettersPage(main) {
    const p = params();
    const queue = p.get("queue") || "", group = p.get("group") || "";
    const offset = Math.max(0, parseInt(p.get("offset") || "0", 10) || 0);
    const list = el("div", { id: "dead-letters" });
    const result = el("p", { id: "requeue-result", class: "note" });
    fill(main,
      el("h1", { text: "Dead letters" }),
      await queueList(),
      el("form", { id: "dlq-form", method: "get", action: "/console/dead-letters", class: "bar" },
        field("queue", "queue", queue, { list: "queue-names", required: true, id: "dlq-queue" }),
        field("consumer group (empty: every group)", "group", group, { id: "dlq-group" }),
        el("button", { type: "submit", id: "dlq-submit", text: "Show" })),
      el("p", { class: "lead", id: "requeue-note", text: "Sending a message back pushes its payload again to the same partition: " +
        "it is a new message at a new offset, which every consumer group of the queue receives, not only the group " +
        "that gave up on it. The dead letter is removed in the same transaction. Only admin tokens may send back." }),
      result, list);
    if (!queue) { list.append(el("p", { class: "empty", text: "Name a queue to see its dead letters." })); return; }
    const admin = await adminProbe().catch((e) => { if (e.status === 401) throw e; return null; });
    const requeue = async (body, button) => {
      if (button) button.disabled = true;
      try {
        let sent = [], more = true, rounds = 0;
        while (more && rounds++ < 100) { // "all" goes in rounds; each answers whether more is left
          const r = await api("/api/v1/dlq/requeue", { method: "POST", body });
          sent = sent.concat(r.messages || []);
          more = !!r.more && !body.transactionId;
        }
        fill(result, "Sent back " + num(sent.length) + (sent.length === 1 ? " message" : " messages"),
          sent.length ? ": " + sent.slice(0, 5).map((m) => m.partition + " @ " + m.offset).join(", ") + (sent.length > 5 ? ", …" : "") : "");
        result.dataset.requeued = String(sent.length);
        await load();
      } catch (e) {
        if (button) button.disabled = false;
        if (e.status !== 401) setStatus("send back: " + e.message, true);
      }
    };
    const load = async () => {
      const r = await api("/api/v1/dlq?" + qs({ queue, consumerGroup: group, limit: 100, offset }));
      const ms = r.messages || [];
      const total = (r.pagination || {}).total || ms.length;
      fill(list,
        el("h2", { class: "with-side" }, queue + (group ? " / " + groupName(group) : " / every group") + ": ",
          el("span", { id: "dead-letter-total", text: num(total) }), total === 1 ? " dead letter" : " dead letters",
          admin && ms.length ? el("button", { id: "requeue-all", type: "button", class: "side", text: "Send all back",
            onclick: (ev) => requeue(group ? { queue, consumerGroup: group } : { queue }, ev.target) }) : null),
        el("table", { id: "dead-letter-table" }, el("thead", {}, el("tr", {},
          ["partition", "offset", "group", "error", "retries", "failed at", "message", ""].map((t) => el("th", { text: t })))),
        el("tbody", {}, ms.map((m) => el("tr", { "data-transaction-id": m.transactionId, "data-partition-id": m.partitionId, "data-group": m.consumerGroup },
          el("td", { text: m.partition }),
          el("td", { class: "n", text: num(m.offset) }),
          el("td", { text: groupName(m.consumerGroup) }),
          el("td", { class: "error-text", "data-field": "error", text: m.errorMessage || "—" }),
          el("td", { class: "n", "data-field": "retries", text: num(m.retryCount) }),
          el("td", { text: when(m.failedAt) }),
          el("td", {}, el("div", { class: "mono", text: m.transactionId }),
            el("pre", { class: "payload", "data-field": "payload", text: m.data === null ? "(removed by retention)" : pretty(m.data) })),
          el("td", {}, admin ? el("button", { type: "button", class: "requeue", "data-action": "requeue", text: "Send back",
            onclick: (ev) => requeue({ queue, consumerGroup: m.consumerGroup, partitionId: m.partitionId, transactionId: m.transactionId }, ev.target) }) : null))))),
        ms.length ? null : el("p", { class: "empty", text: "No dead letters." }),
        el("nav", { class: "pager" },
          offset > 0 ? el("a", { href: "/console/dead-letters?" + qs({ queue, group, offset: Math.max(0, offset - 100) }), text: "← previous" }) : null,
          offset + ms.length < total ? el("a", { href: "/console/dead-letters?" + qs({ queue, group, offset: offset + 100 }), text: "next →" }) : null));
    };
    await once(load);
  }

  // ---- the page the address names ----

  function pageFor(path) {
    if (path === "/" || path === "/console" || path === "/console/") return ["overview", overviewPage];
    if (path === "/console/queues") return ["queues", queuesPage];
    if (path.startsWith("/console/queues/")) {
      let q = path.slice("/console/queues/".length);
      try { q = decodeURIComponent(q); } catch (e) { /* shown as written */ }
      return ["queues", (main) => queuePage(main, q)];
    }
    if (path === "/console/messages") return ["messages", messagesPage];
    if (path === "/console/dead-letters") return ["dead-letters", deadLettersPage];
    return [null, (main) => fill(main, el("p", { class: "error", text: "No console page here." }))];
  }

  async function start() {
    stop();
    const [nav, page] = pageFor(location.pathname);
    for (const a of document.querySelectorAll("[data-nav]")) a.classList.toggle("current", a.dataset.nav === nav);
    const main = document.getElementById("page");
    main.hidden = false;
    document.body.dataset.page = nav || "none";
    try {
      await page(main);
    } catch (e) {
      if (e.status !== 401) setStatus(e.message, true);
    }
    document.body.dataset.ready = "true";
    if (!document.getElementById("role")) adminProbe().catch(() => {}); // who this token is, on every page
  }

  start();
})();
