// The web chat page: its chat id, the sign-in, the websocket and the composer. The transcript is the stored
// session the server sends on every (re)connect (`history`), never a copy kept by the page.
import { Transcript, copy } from "./bubbles.js";
import { Attachments } from "./attach.js";

const key = "chorus.chat_id";
// ?chat=<id> picks a chat (e.g. to continue one on another device); otherwise this browser's own.
const asked = new URLSearchParams(location.search).get("chat");
if (asked && /^[A-Za-z0-9_-]{1,64}$/.test(asked)) localStorage.setItem(key, asked);
let chatId = localStorage.getItem(key);
const newId = () => (crypto.randomUUID ? crypto.randomUUID() : String(Date.now()) + Math.random()).replace(/[^A-Za-z0-9_-]/g, "");
if (!chatId) { chatId = newId(); localStorage.setItem(key, chatId); }
// Stale transcripts an older page kept: the server's stored session is the transcript now.
for (const name of Object.keys(localStorage)) if (name.startsWith("chorus.transcript.")) localStorage.removeItem(name);

const $ = (id) => document.getElementById(id);
const typing = $("typing"), status = $("status"), banner = $("banner"), signin = $("signin"), form = $("form");
const transcript = new Transcript($("log"));
// Messages typed while disconnected: { frame, text, files }, sent once the server has drawn the transcript
// (a redraw before they reach it would drop their bubbles), then drawn again after it.
const pending = [];
let ws = null, typingTimer = null, retry = 500;
const say = (text) => transcript.add(text, "notice");
const attachments = new Attachments({ chatId: () => chatId, say, button: $("attach"), input: $("files"),
                                      tray: $("tray"), dropZone: document.body });

// The chat id the CLI and per-chat settings (chats."web:ID") name, with a copy button.
const shownId = $("chatid");
function showId(id) { shownId.textContent = "web:" + id; }
showId(chatId);
$("copyid").addEventListener("click", async () => { await copy(shownId.textContent); status.textContent = "chat id copied"; });

// A token-protected chat: the page asks /login whether this browser holds the session cookie (HttpOnly,
// set by POST /login); the token itself is never kept by the page nor put in a URL.
async function ready() {
  try { const state = await (await fetch("login", { credentials: "same-origin" })).json(); return !state.required || state.signed_in; }
  catch (e) { return true; }
}
function askToken() { signin.hidden = false; form.hidden = true; status.textContent = "sign in to chat"; $("token").focus(); }
signin.addEventListener("submit", async (event) => {
  event.preventDefault();
  const field = $("token");
  const answer = await fetch("login", { method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ token: field.value }) });
  field.value = "";
  if (!answer.ok) { status.textContent = "wrong token"; return; }
  signin.hidden = true; form.hidden = false; connect();
});
async function start() { if (await ready()) connect(); else askToken(); }

const FRAMES = {
  // The server sends a banner right after hello when it has one: a (re)connection starts without.
  hello(frame) {
    banner.textContent = ""; banner.style.display = "none";
    if (frame.chat_id) showId(frame.chat_id);
    if (frame.upload_limit) attachments.limit = frame.upload_limit;
    if (!frame.transcript) flush();  // else after the `history` that follows
  },
  banner(frame) { banner.textContent = frame.text; banner.style.display = "block"; },
  // messages null: the server could not read the stored session this time; the page keeps what it shows.
  history(frame) {
    if (frame.messages) {
      transcript.redraw(frame.messages);
      for (const item of pending) transcript.add(item.text, "me", { attachments: item.files });
    }
    flush();
  },
  message(frame) { typing.textContent = ""; transcript.add(frame.text, "bot", { id: frame.id }); answered(frame.text); },
  edit(frame) { transcript.edit(frame.id, frame.text); answered(frame.text); },
  delete(frame) { transcript.remove(frame.id); },
  typing() { typing.textContent = "Chorus is typing…"; clearTimeout(typingTimer); typingTimer = setTimeout(() => typing.textContent = "", 6000); },
  error(frame) { say(frame.text); },
};

// A finished reply (not a draft ending in the stream cursor): the oldest question still waiting has its answer.
function answered(text) {
  if (text.endsWith(" \u258c")) return;
  const waiting = document.querySelector("#log .msg.me.pending");
  if (waiting) waiting.classList.remove("pending");
}

function flush() { while (pending.length && ws && ws.readyState === WebSocket.OPEN) ws.send(pending.shift().frame); }

function connect() {
  const proto = location.protocol === "https:" ? "wss" : "ws";
  ws = new WebSocket(`${proto}://${location.host}/ws?chat=${encodeURIComponent(chatId)}`);
  ws.onopen = () => { status.textContent = "connected"; retry = 500; };
  ws.onclose = () => { status.textContent = "disconnected; reconnecting…"; setTimeout(start, retry); retry = Math.min(retry * 2, 8000); };
  ws.onmessage = (event) => {
    const frame = JSON.parse(event.data);
    const handle = FRAMES[frame.type];
    if (handle) handle(frame);
  };
}

// A multi-line input: Enter sends, Shift+Enter (or a paste) keeps a newline; it grows with its text.
const input = $("text");
function fit() { input.style.height = "auto"; input.style.height = input.scrollHeight + 2 + "px"; }
input.addEventListener("input", fit);
input.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) { event.preventDefault(); form.requestSubmit(); }
});
form.addEventListener("submit", async (event) => {
  event.preventDefault();
  // Trailing blanks and leading empty lines go; indentation and the newlines inside stay.
  const text = input.value.replace(/\s+$/, "").replace(/^(\s*\n)+/, "");
  if (!text && !attachments.ready.length && !attachments.uploading.size) return;
  input.value = ""; fit(); input.focus();
  const files = await attachments.take();
  if (!text && !files.length) return;
  transcript.add(text, "me", { attachments: files });
  const frame = JSON.stringify({ type: "message", text, client_id: newId(), language: navigator.language || "",
                                 attachments: files.map(({ id, name, mime_type }) => ({ id, name, mime_type })) });
  if (ws && ws.readyState === WebSocket.OPEN) ws.send(frame); else pending.push({ frame, text, files });
});
start();
