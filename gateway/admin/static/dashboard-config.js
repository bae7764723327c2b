// Chorus dashboard, configuration panels: the key editor, the audit log and the people refused by the allowlist.
// Uses api(), clock(), show() and problem() of dashboard.js; dashboard.js calls refreshConfigPanels() each poll.
"use strict";

let configLoaded = false;
let configVersion = null;  // the running config's version the fields show
let configPath = null;
const configEntries = new Map();  // key -> schema entry

async function apiSend(path, method, body) {
  // Like api(), with a JSON body; an error answer is returned (not thrown) so it can be shown by its field.
  const response = await fetch(path, {
    method, cache: "no-store", body: JSON.stringify(body),
    headers: { Authorization: "Bearer " + token(), "Content-Type": "application/json" },
  });
  const answer = await response.json();
  return { ok: response.ok, status: response.status, body: answer };
}

function node(tag, attrs, text) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value !== null && value !== undefined && value !== false) element.setAttribute(key, value === true ? "" : String(value));
  }
  if (text !== undefined) element.textContent = text;  // textContent: never HTML
  return element;
}

function shownValue(value) {
  if (value === null || value === undefined) return "null";
  return typeof value === "string" ? value : JSON.stringify(value);
}

function controlFor(entry, id, describedBy) {
  // Free text (with suggestions for choices) so any value can be typed and the server's check answers it.
  const common = { id, name: entry.key, "aria-describedby": describedBy, "data-key": entry.key };
  if (entry.secret) {
    return node("input", { ...common, type: "password", autocomplete: "new-password",
      placeholder: entry.value === null ? "not set: type a value" : "set (hidden): type a new value to replace it" });
  }
  if (entry.type === "list" || entry.type === "mapping" || entry.type === "value") {
    const area = node("textarea", { ...common, rows: 2, spellcheck: "false" });
    area.value = JSON.stringify(entry.value);
    return area;
  }
  const input = node("input", { ...common, type: "text", spellcheck: "false" });
  if (entry.type === "choice" || entry.type === "bool") {
    const list = node("datalist", { id: id + "-choices" });
    for (const choice of entry.type === "bool" ? [true, false] : entry.choices) list.append(node("option", { value: String(choice) }));
    input.setAttribute("list", list.id);
    input.choices = list;
  }
  input.value = entry.value === null ? "" : String(entry.value);
  return input;
}

function typedValue(entry, raw) {
  // The text of a field as the JSON value to send; a number or JSON that does not parse is sent as typed.
  const text = raw.trim();
  if (text === "" && (entry.nullable || entry.secret)) return null;
  if (entry.type === "bool") return text === "true" ? true : text === "false" ? false : text;
  if (entry.type === "int" || entry.type === "float") return text !== "" && !Number.isNaN(Number(text)) ? Number(text) : text;
  if (entry.type === "list" || entry.type === "mapping" || entry.type === "value") {
    try { return JSON.parse(text); } catch (error) { return { invalid: "not JSON: " + error.message }; }
  }
  return raw;
}

function configRow(entry, index) {
  const id = "cfg-" + index;
  const row = node("div", { class: "cfg-row", "data-key": entry.key, role: "group", "aria-labelledby": id + "-label" });
  const head = node("div", { class: "cfg-head" });
  head.append(node("label", { for: id, id: id + "-label", class: "cfg-key" }, entry.key));
  head.append(node("span", { class: "badge " + entry.applies }, entry.applies === "live" ? "live" : "restart needed"));
  if (entry.secret) head.append(node("span", { class: "badge secret" }, "secret: write-only"));
  row.append(head);
  row.append(node("p", { id: id + "-help", class: "cfg-help" },
    `${entry.description} · ${entry.type}${entry.nullable ? " or null" : ""} · default ${entry.secret ? "none" : shownValue(entry.default)}`));
  const control = controlFor(entry, id, `${id}-help ${id}-error`);
  const save = node("button", { type: "button", class: "cfg-save", "data-key": entry.key }, "Save");
  const line = node("div", { class: "cfg-edit" });
  line.append(control);
  if (control.choices) line.append(control.choices);
  line.append(save);
  row.append(line);
  const error = node("p", { id: id + "-error", class: "cfg-error", role: "alert", "aria-live": "polite" });
  const done = node("p", { class: "cfg-done", "aria-live": "polite" });
  row.append(error, done);
  const editable = entry.applies === "live" || configPath !== null;
  if (!editable) {
    control.disabled = true;
    save.disabled = true;
    done.textContent = "needs a restart, and chorus runs without a config file: edit the file and restart";
  }
  save.addEventListener("click", () => saveKey(entry, control, error, done));
  control.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && control.tagName === "INPUT") { event.preventDefault(); saveKey(entry, control, error, done); }
  });
  return row;
}

async function saveKey(entry, control, error, done) {
  error.textContent = "";
  done.textContent = "";
  const value = typedValue(entry, control.value);
  if (value && typeof value === "object" && "invalid" in value) { error.textContent = value.invalid; return; }
  const query = configPath !== null ? "?persist=true" : "";
  const answer = await apiSend("/api/config" + query, "PATCH", { [entry.key]: value });
  if (!answer.ok) {
    error.textContent = answer.body.error || "HTTP " + answer.status;  // the server's text, with its "did you mean"
    control.setAttribute("aria-invalid", "true");
    return;
  }
  control.removeAttribute("aria-invalid");
  if (entry.secret) control.value = "";  // written, never read back
  const later = (answer.body.restart_needed || []).includes(entry.key);
  done.textContent = later ? `saved to ${answer.body.path}: restart needed` : answer.body.persisted ? `saved to ${answer.body.path}, in force now` : "in force now (runtime only: lost on restart)";
  await loadSchema(false);
  refreshConfigPanels(configVersion);
}

function drawEditor(filter) {
  const box = document.getElementById("config-editor");
  box.replaceChildren();
  const wanted = filter.trim().toLowerCase();
  const sections = new Map();
  [...configEntries.values()].forEach((entry, index) => {
    if (wanted && !entry.key.toLowerCase().includes(wanted) && !entry.description.toLowerCase().includes(wanted)) return;
    const name = entry.key.split(".")[0];
    if (!sections.has(name)) sections.set(name, []);
    sections.get(name).push(configRow(entry, index));
  });
  for (const [name, rows] of sections) {
    const details = node("details", { class: "cfg-section", "data-section": name, open: wanted !== "" });
    details.append(node("summary", {}, `${name} (${rows.length})`));
    details.append(...rows);
    box.append(details);
  }
  if (!sections.size) box.append(node("p", { class: "figures" }, "no key matches"));
}

async function loadSchema(redraw = true) {
  const schema = await api("/api/config/schema");
  configPath = schema.path;
  configVersion = schema.version;
  configEntries.clear();
  for (const entry of schema.keys) configEntries.set(entry.key, entry);
  document.getElementById("config-file").textContent = configPath ? `saved to ${configPath}, comments kept` : "no config file: changes are runtime only";
  for (const row of document.querySelectorAll(".cfg-row")) {
    // Keep what is being typed; show the new value in fields not being edited.
    const entry = configEntries.get(row.dataset.key);
    const control = row.querySelector("[data-key]:not(button)");
    if (entry && control && control !== document.activeElement && !entry.secret) {
      control.value = entry.type === "list" || entry.type === "mapping" || entry.type === "value" ? JSON.stringify(entry.value)
        : entry.value === null ? "" : String(entry.value);
    }
  }
  if (redraw) drawEditor(document.getElementById("config-filter").value);
}

function cells(row, values) {
  for (const [cls, text] of values) row.append(node("td", { class: cls }, text));
}

function drawAudit(answer) {
  const table = document.getElementById("audit");
  table.replaceChildren();
  document.getElementById("audit-scope").textContent = answer.scope;
  const head = node("tr");
  for (const title of ["when", "key", "old", "new", "who", "applies"]) head.append(node("th", { scope: "col" }, title));
  table.append(head);
  for (const e of answer.entries) {
    const row = node("tr", { "data-key": e.key, "data-who": e.who });
    cells(row, [["time", clock(e.when)], ["key", e.key], ["old", shownValue(e.old)], ["new", shownValue(e.new)],
      ["who", e.who + (e.detail ? ` (${e.detail})` : "") + " · " + e.replica], ["applies", e.applies]]);
    table.append(row);
  }
  if (!answer.entries.length) table.append(node("tr", {}, "no changes yet"));
}

async function admit(person, button) {
  button.disabled = true;
  const answer = await apiSend("/api/refused/admit", "POST", { platform: person.platform, user_id: person.user_id });
  if (!answer.ok) { problem(answer.body.error); button.disabled = false; return; }
  button.closest("tr").remove();
  await loadSchema(false);
  refreshConfigPanels(configVersion);
}

function drawRefused(people) {
  const table = document.getElementById("refused");
  table.replaceChildren();
  show("refused-empty", people.length === 0);
  if (!people.length) return;
  const head = node("tr");
  for (const title of ["platform", "user id", "name", "chat", "last seen", "messages", ""]) head.append(node("th", { scope: "col" }, title));
  table.append(head);
  for (const person of people) {
    const row = node("tr", { "data-refused": person.platform + ":" + person.user_id });
    cells(row, [["platform", person.platform], ["user", person.user_id], ["name", person.name], ["chat", person.chat],
      ["time", clock(person.last_seen)], ["count", String(person.count)]]);
    const button = node("button", { type: "button", class: "admit", "aria-label": `admit ${person.name || person.user_id} on ${person.platform}` }, "Admit");
    button.addEventListener("click", () => admit(person, button));
    const cell = node("td");
    cell.append(button);
    row.append(cell);
    table.append(row);
  }
}

async function refreshConfigPanels(version) {
  // A gateway without runtime configuration has no such routes: the three sections stay hidden.
  // `version` is the running config's (GET /api/config): a change made elsewhere refreshes the fields.
  let audit, refused;
  try {
    if (!configLoaded) {
      await loadSchema();
      configLoaded = true;
      document.getElementById("config-filter").addEventListener("input", (event) => drawEditor(event.target.value));
    } else if (version !== undefined && version !== configVersion) {
      await loadSchema(false);
    }
    [audit, refused] = await Promise.all([api("/api/config/audit?limit=100"), api("/api/refused")]);
  } catch (error) {
    for (const id of ["config-section", "audit-section", "refused-section"]) show(id, false);
    return;
  }
  for (const id of ["config-section", "audit-section", "refused-section"]) show(id, true);
  drawAudit(audit);
  drawRefused(refused.refused);
  document.body.dataset.configReady = "true";
}
