// Chorus operations dashboard: polls the admin JSON API and draws inline SVG (no external code).
"use strict";

const TOKEN_KEY = "chorus.admin.token";
const POLL_MS = 3000;
const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 1200;
const LABEL_W = 270;
const PLOT_X0 = 280;
const FILL_X1 = 980;
const TIME_X1 = 1180;
const TRIGGER_COLORS = {
  preflight: "#5aa9e6", post_response: "#3fb37f", error_recovery: "#e5534b", manual: "#f0f0f0",
  hygiene: "#e2a93b", idle: "#c78bef", offline: "#8aa0b3",
};

let selected = null;  // the session key shown in the detail panel

function readFragment() {
  // #token=… (kept in sessionStorage, then removed from the address bar) and #session=<key> (a deep link).
  const params = new URLSearchParams(location.hash.slice(1));
  if (params.get("token")) sessionStorage.setItem(TOKEN_KEY, params.get("token"));
  selected = params.get("session");
  const keep = selected ? "#session=" + encodeURIComponent(selected) : "";
  history.replaceState(null, "", location.pathname + location.search + keep);
}

function token() { return sessionStorage.getItem(TOKEN_KEY); }

function el(name, attrs, text) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

function fmt(n) { return n === null || n === undefined ? "?" : Number(n).toLocaleString("en-US"); }
function clock(epoch) { return new Date(epoch * 1000).toLocaleTimeString("en-GB", { hour12: false }); }
function shortKey(key) {
  const parts = key.split(":");  // agent:<profile>:<platform>:<kind>:<chat>[:thread][:user]
  return parts.length > 4 ? parts.slice(2).join(":") : key;
}

// Labels sit left of the plots (LABEL_W px at ~7 px a character): longer ones are cut in the
// middle, keeping the platform and the id's end, and the whole key is in the tooltip.
const LABEL_CHARS = 36;
function fitLabel(text) {
  if (text.length <= LABEL_CHARS) return text;
  const head = Math.ceil((LABEL_CHARS - 1) / 2), tail = LABEL_CHARS - 1 - head;
  return text.slice(0, head) + "…" + text.slice(text.length - tail);
}
function keyLabel(x, y, key) {
  const node = el("text", { x, y, class: "session-label" }, fitLabel(shortKey(key)));
  node.append(el("title", {}, key));
  return node;
}

function show(id, visible) { document.getElementById(id).hidden = !visible; }

function problem(text) {
  const box = document.getElementById("problem");
  box.textContent = text || "";
  box.hidden = !text;
}

async function api(path, method) {
  const response = await fetch(path, {
    method: method || "GET", headers: { Authorization: "Bearer " + token() }, cache: "no-store",
  });
  if (response.status === 401) {
    sessionStorage.removeItem(TOKEN_KEY);
    throw new Error("unauthorized");
  }
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || ("HTTP " + response.status));
  return body;
}

function fillClass(view) {
  if (view.fill_percent === null) return "ok";
  if (view.fill_percent >= 85) return "hot";
  if (view.threshold_percent !== null && view.fill_percent >= view.threshold_percent) return "warn";
  return "ok";
}

function drawFill(sessions) {
  const svg = document.getElementById("fill");
  svg.replaceChildren();
  const rowH = 30, top = 22;
  const height = top + Math.max(1, sessions.length) * rowH + 8;
  svg.setAttribute("viewBox", `0 0 ${WIDTH} ${height}`);
  const span = FILL_X1 - PLOT_X0;
  const x = (percent) => PLOT_X0 + span * Math.min(percent, 100) / 100;
  for (const p of [0, 25, 50, 75, 100]) {
    svg.append(el("text", { x: x(p), y: 14, "text-anchor": "middle", class: "dim" }, p + "%"));
  }
  if (!sessions.length) {
    svg.append(el("text", { x: PLOT_X0, y: top + 20, class: "empty" }, "no active sessions"));
  }
  sessions.forEach((view, i) => {
    const y = top + i * rowH;
    const row = el("g", { class: "session-row" + (view.key === selected ? " selected" : ""), "data-session": view.key });
    row.addEventListener("click", () => {
      selected = view.key;
      history.replaceState(null, "", location.pathname + location.search + "#session=" + encodeURIComponent(selected));
      refresh(false);
    });
    row.append(keyLabel(0, y + 12, view.key));
    row.append(el("text", { x: 0, y: y + 25, class: "dim" },
      `${fmt(view.messages)} msgs · ${view.compressions} compressions${view.live ? "" : " · not loaded"}`
      + `${view.model ? " · " + view.model : ""}`));
    row.append(el("rect", { x: PLOT_X0, y: y + 4, width: span, height: 20, rx: 3, class: "track" }));
    const percent = view.fill_percent === null ? 0 : view.fill_percent;
    const width = (span * Math.min(percent, 100) / 100).toFixed(1);
    const bar = el("rect", {
      x: PLOT_X0, y: y + 4, width, height: 20, rx: 3, class: "bar " + fillClass(view),
      "data-session": view.key, "data-fill-percent": percent, "data-width": width, "data-tokens": view.tokens ?? "",
    });
    bar.append(el("title", {}, `${view.key}\n${fmt(view.tokens)} of ${fmt(view.context_length)} tokens (${view.tokens_source})`));
    row.append(bar);
    if (view.threshold_percent !== null) {
      row.append(el("line", {
        x1: x(view.threshold_percent), x2: x(view.threshold_percent), y1: y + 1, y2: y + 27,
        class: "limit-line threshold", "data-session": view.key, "data-percent": view.threshold_percent,
      }));
    }
    const label = view.tokens === null ? "tokens unknown"
      : `${fmt(view.tokens)} / ${fmt(view.context_length)} (${percent}%)`;
    row.append(el("text", { x: FILL_X1 + 12, y: y + 18 }, label + (view.busy ? " · busy" : "") + (view.blocked ? " · blocked" : "")));
    svg.append(row);
  });
  const bottom = top + Math.max(1, sessions.length) * rowH;
  svg.append(el("line", { x1: x(85), x2: x(85), y1: top - 2, y2: bottom, class: "limit-line hygiene", "data-percent": 85 }));
  svg.append(el("text", { x: x(85) + 4, y: bottom + 2, class: "dim" }, "hygiene 85%"));
}

function drawTimeline(sessions, compressions, now) {
  const svg = document.getElementById("timeline");
  svg.replaceChildren();
  // One row per session that has compressions, in the order of the fill chart.
  const seen = new Set(compressions.map((c) => c.session).filter(Boolean));
  const keys = sessions.map((s) => s.key).filter((k) => seen.has(k));
  for (const k of seen) if (!keys.includes(k)) keys.push(k);
  const windowOf = Object.fromEntries(sessions.map((s) => [s.key, s.context_length]));
  const rowH = 64, top = 24;
  const height = top + Math.max(1, keys.length) * rowH + 10;
  svg.setAttribute("viewBox", `0 0 ${WIDTH} ${height}`);
  const first = compressions.length ? Math.min(...compressions.map((c) => c.at)) : now - 600;
  const t0 = Math.min(first, now - 60) - 5, t1 = now + 5;
  const tx = (t) => PLOT_X0 + (TIME_X1 - PLOT_X0) * (t - t0) / (t1 - t0);
  for (let i = 0; i <= 4; i++) {
    const t = t0 + (t1 - t0) * i / 4;
    svg.append(el("text", { x: tx(t), y: 14, "text-anchor": i === 4 ? "end" : "middle", class: "dim" }, clock(t)));
  }
  if (!keys.length) svg.append(el("text", { x: PLOT_X0, y: top + 20, class: "empty" }, "no compressions yet"));
  keys.forEach((key, i) => {
    const y = top + i * rowH;
    const base = y + rowH - 8;
    svg.append(keyLabel(0, y + 26, key));
    svg.append(el("line", { x1: PLOT_X0, x2: TIME_X1, y1: base, y2: base, class: "axis" }));
    const scale = windowOf[key] || Math.max(1, ...compressions.filter((c) => c.session === key).map((c) => c.tokens_before));
    const barH = (tokens) => Math.max(2, 40 * Math.min(tokens, scale) / scale);
    const kilo = (n) => (n >= 1000 ? Math.round(n / 1000) + "k" : String(n));
    for (const c of compressions.filter((e) => e.session === key)) {
      const x = tx(c.at);
      const g = el("g", {
        class: "compression outcome-" + c.outcome, "data-session": key, "data-trigger": c.trigger,
        "data-outcome": c.outcome, "data-before": c.tokens_before, "data-after": c.tokens_after,
        "data-summary-kind": c.summary_kind,
      });
      g.append(el("title", {}, `${clock(c.at)} ${c.trigger}: ${c.outcome}, ${fmt(c.tokens_before)} → ${fmt(c.tokens_after)} tokens, `
        + `${fmt(c.messages_before)} → ${fmt(c.messages_after)} messages, summary ${c.summary_kind}${c.text ? "\n" + c.text : ""}`));
      if (c.outcome === "compressed") {
        g.append(el("rect", { x: x - 11, y: base - barH(c.tokens_before), width: 10, height: barH(c.tokens_before), class: "before" }));
        g.append(el("rect", { x: x + 1, y: base - barH(c.tokens_after), width: 10, height: barH(c.tokens_after), class: "after " + c.summary_kind }));
        g.append(el("text", { x: x + 14, y: base - 4, class: "delta" }, `${kilo(c.tokens_before)}→${kilo(c.tokens_after)}`));
      }
      g.append(el("circle", { cx: x, cy: base + 4, r: c.outcome === "compressed" ? 4 : 3, class: "marker",
        fill: c.outcome === "compressed" ? TRIGGER_COLORS[c.trigger] || "#fff" : "none",
        stroke: TRIGGER_COLORS[c.trigger] || "#fff" }));
      svg.append(g);
    }
  });
}

function drawLegend() {
  const legend = document.getElementById("trigger-legend");
  legend.replaceChildren();
  for (const [name, color] of Object.entries(TRIGGER_COLORS)) {
    const key = document.createElement("span");
    key.className = "key";
    key.style.background = color;
    legend.append(key, name);
  }
  legend.append(" · grey bar: tokens before, coloured bar: after (blue llm, violet fallback summary)");
}

function drawEvents(events) {
  const list = document.getElementById("events");
  list.replaceChildren();
  const shown = events.filter((e) => e.kind !== "compression").reverse();
  if (!shown.length) {
    const li = document.createElement("li");
    li.className = "empty";
    li.textContent = "nothing to report";
    list.append(li);
  }
  for (const e of shown) {
    const li = document.createElement("li");
    li.className = e.kind;
    li.dataset.kind = e.kind;
    for (const [cls, text] of [["time", clock(e.at)], ["kind", e.kind], ["session", e.session ? shortKey(e.session) : "—"], ["text", e.text]]) {
      const span = document.createElement("span");
      span.className = cls;
      span.textContent = text;
      li.append(span);
    }
    list.append(li);
  }
}

function drawDeadLetters(box) {
  // Messages intake could not handle: each kept whole under home/deadletter/, intake went on.
  const list = document.getElementById("deadletters");
  list.replaceChildren();
  document.getElementById("deadletter-count").textContent =
    box.count ? `${box.count} kept in ${box.directory || "memory"}` : "";
  if (!box.deadletters.length) {
    const li = document.createElement("li");
    li.className = "empty";
    li.textContent = "none: every message was handled";
    list.append(li);
  }
  for (const d of box.deadletters) {
    const li = document.createElement("li");
    li.className = "error deadletter";
    li.dataset.deadletter = d.id;
    for (const [cls, text] of [["time", clock(d.at)], ["kind", d.stage], ["session", d.platform + ":" + d.chat_id],
      ["text", `${d.error}${d.stored ? "" : " (not stored: see the log)"} · ${d.text_preview}`]]) {
      const span = document.createElement("span");
      span.className = cls;
      span.textContent = text;
      li.append(span);
    }
    list.append(li);
  }
}

function drawSpend(report) {
  // Today's spend (UTC) across every replica: per model, the top chats and users, the limits hit.
  show("spend-section", report !== null);
  if (report === null) return;
  const g = report.global;
  const limit = (v) => (v ? fmt(v) : "unlimited");
  document.getElementById("spend-total").textContent = `${report.day}: ${fmt(g.tokens)} tokens (limit ${limit(g.tokens_per_day)}), ` +
    `cost ${g.cost} (limit ${limit(g.cost_per_day)})` + (g.unpriced_tokens ? `, ${fmt(g.unpriced_tokens)} tokens unpriced` : "");
  const table = document.getElementById("spend");
  table.replaceChildren();
  const row = (cells) => {
    const tr = document.createElement("tr");
    for (const text of cells) { const td = document.createElement("td"); td.textContent = text; tr.append(td); }
    table.append(tr);
  };
  for (const m of report.models) row(["model", m.model, fmt(m.tokens) + " tokens", m.cost === null ? "cost unknown" : "cost " + m.cost]);
  for (const c of report.top_chats) row(["chat", c.chat, fmt(c.tokens) + " tokens", "cost " + c.cost]);
  for (const u of report.top_users) row(["user", u.user, fmt(u.tokens) + " tokens", "cost " + u.cost]);
  for (const h of report.hits) row(["limit hit", h.subject, h.metric, fmt(h.count) + "×"]);
  if (!table.children.length) row(["nothing spent yet today"]);
}

function drawTools(servers) {
  const list = document.getElementById("tools");
  list.replaceChildren();
  show("tools-section", servers.length > 0);
  for (const s of servers) {
    const li = document.createElement("li");
    li.className = s.state === "up" ? "notice" : "error";
    li.dataset.server = s.name;
    const health = s.state + (s.restarts ? `, ${s.restarts} restart(s)` : "") + (s.error ? ` — ${s.error}` : "");
    const tools = s.tools.length ? s.tools.join(", ") : "no tools offered";
    for (const [cls, text] of [["kind", s.name], ["session", s.transport], ["text", `${health}; ${tools}`]]) {
      const span = document.createElement("span");
      span.className = cls;
      span.textContent = text;
      li.append(span);
    }
    list.append(li);
  }
}

function drawSummary(sessions, config) {
  const values = config.values;
  const hot = sessions.filter((s) => fillClass(s) !== "ok").length;
  document.getElementById("summary").innerHTML = "";
  const parts = [
    ["sessions", sessions.length], ["over threshold", hot],
    ["compression", values["compression.enabled"] ? "on" : "OFF"], ["threshold", values["compression.threshold"]],
    ["hygiene limit", fmt(values["compression.hygiene_hard_message_limit"]) + " msgs"], ["updated", clock(Date.now() / 1000)],
  ];
  const summary = document.getElementById("summary");
  parts.forEach(([label, value], i) => {
    const b = document.createElement("b");
    b.textContent = String(value);
    summary.append((i ? " · " : "") + label + " ", b);
  });
}

function sessionPath(key) { return "/api/sessions/" + encodeURIComponent(key); }

function drawDetail(detail) {
  show("detail", Boolean(detail));
  if (!detail) return;
  document.getElementById("detail-key").textContent = detail.key;
  document.getElementById("detail-figures").textContent =
    `${fmt(detail.tokens)} of ${fmt(detail.context_length)} tokens (${detail.tokens_source}) · threshold ${fmt(detail.threshold)} `
    + `· hygiene ${fmt(detail.hygiene_threshold)} · ${fmt(detail.messages)} messages (${fmt(detail.archived_messages)} archived) `
    + `· ${detail.compressions} compressions${detail.busy ? " · busy" : ""}${detail.blocked ? " · auto-compression blocked" : ""}`
    + ` · model ${detail.model || "?"} · prompt ${detail.prompt_source || "?"}`
    + ` · usage ${fmt(detail.session_tokens)} tokens this session, ${fmt(detail.chat_tokens)} in this chat`;
  document.getElementById("detail-summary").textContent = detail.last_summary || "no summary yet";
  const list = document.getElementById("detail-compressions");
  list.replaceChildren();
  for (const c of detail.recent_compressions.slice().reverse()) {
    const li = document.createElement("li");
    li.dataset.trigger = c.trigger;
    for (const text of [clock(c.at), c.trigger + " · " + c.outcome,
      `${fmt(c.tokens_before)} → ${fmt(c.tokens_after)} tokens, ${fmt(c.messages_before)} → ${fmt(c.messages_after)} msgs, ${c.summary_kind}`]) {
      const span = document.createElement("span");
      span.textContent = text;
      li.append(span);
    }
    list.append(li);
  }
  if (!detail.recent_compressions.length) {
    const li = document.createElement("li");
    li.textContent = "none recorded since this process started";
    list.append(li);
  }
}

async function compressSelected() {
  const result = document.getElementById("compress-result");
  result.textContent = "compressing…";
  try {
    const r = await api(sessionPath(selected) + "/compress", "POST");
    result.textContent = `${r.outcome}: ${fmt(r.tokens_before)} → ${fmt(r.tokens_after)} tokens`
      + (r.reason ? ` (${r.reason})` : "");
  } catch (error) {
    result.textContent = "failed: " + error.message;
  }
  refresh(false);
}

function pendingPath(item, verdict) {
  return "/api/memory/pending/" + encodeURIComponent(item.id) + "/" + verdict + "?chat=" + encodeURIComponent(item.chat);
}

async function decidePending(item, verdict) {
  try {
    const result = await api(pendingPath(item, verdict), "POST");
    if (!result.ok) problem(result.message);
  } catch (error) {
    problem(error.message);
  }
  refresh(false);
}

function drawPending(items) {
  const list = document.getElementById("pending");
  list.replaceChildren();
  show("pending-empty", items.length === 0);
  for (const item of items) {
    const row = document.createElement("li");
    row.dataset.pending = item.id;
    const what = item.action === "replace" ? `replace "${item.old_text}" with` : "add";
    const why = item.origin ? ` [untrusted: ${item.origin}]` : "";
    const text = document.createElement("span");
    text.textContent = `${item.chat} · ${item.target}: ${what} "${item.content}"${why} `;  // textContent: never HTML
    row.append(text);
    for (const verdict of ["approve", "reject"]) {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = verdict;
      button.dataset.verdict = verdict;
      button.addEventListener("click", () => decidePending(item, verdict));
      row.append(button);
    }
    list.append(row);
  }
}

let timer = null;

async function refresh(schedule = true) {
  try {
    const [sessions, events, config, tools, deadletters, pending, spend] = await Promise.all([
      api("/api/sessions"), api("/api/events?limit=500"), api("/api/config"), api("/api/tools"),
      api("/api/deadletters?limit=50"),
      api("/api/memory/pending").catch(() => ({ pending: [] })),  // a backend without notes shows none
      api("/api/limits").catch(() => null),  // a backend without limits shows no spend section
    ]);
    problem("");
    show("login", false);
    show("board", true);
    const compressions = events.events.filter((e) => e.kind === "compression");
    drawFill(sessions.sessions);
    drawTimeline(sessions.sessions, compressions, sessions.generated_at);
    drawEvents(events.events);
    drawTools(tools.servers);
    drawDeadLetters(deadletters);
    drawPending(pending.pending);
    drawSpend(spend);
    drawSummary(sessions.sessions, config);
    let detail = null;
    if (selected) {
      try { detail = await api(sessionPath(selected)); } catch (error) { problem(error.message); }
    }
    drawDetail(detail);
    await refreshConfigPanels(config.version);  // dashboard-config.js: the editor, the audit log, the people refused
    document.body.dataset.ready = "true";
  } catch (error) {
    if (error.message === "unauthorized") {
      problem("The admin token was refused; enter it again.");
      show("login", true);
      return;
    }
    problem(error.message);
  }
  if (schedule) {
    clearTimeout(timer);
    timer = setTimeout(refresh, POLL_MS);
  }
}

function start() {
  readFragment();
  drawLegend();
  document.getElementById("compress").addEventListener("click", compressSelected);
  document.getElementById("close-detail").addEventListener("click", () => {
    selected = null;
    history.replaceState(null, "", location.pathname + location.search);
    refresh(false);
  });
  document.getElementById("login").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, document.getElementById("token").value.trim());
    refresh();
  });
  if (token()) refresh(); else explainOrAskToken();
}

async function explainOrAskToken() {
  // With admin.token unset the API is disabled: say so at once instead of asking for a token that cannot work.
  try {
    const response = await fetch("/api/config", { cache: "no-store" });
    if (response.status === 403) {
      const body = await response.json();
      document.getElementById("summary").textContent = "operator API disabled";
      problem(body.error);
      return;
    }
  } catch (error) {
    problem("the admin server did not answer: " + error.message);
    return;
  }
  document.getElementById("summary").textContent = "sign in";
  show("login", true);
}

start();
