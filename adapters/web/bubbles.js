// The transcript's bubbles: the user's as plain text with their pictures and file chips, the replies as
// Markdown rendered by marked and sanitised by DOMPurify to a fixed set of tags (no images, no scripts, no
// handlers, no styles; raw HTML in a reply is shown as text, never parsed), code blocks with a copy button.

const TAGS = ["p", "br", "strong", "em", "del", "code", "pre", "blockquote", "ul", "ol", "li", "a", "hr",
              "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td"];
const rich = Boolean(window.marked && window.DOMPurify);
function escapeHtml(raw) { return raw.replace(/[&<>"']/g, (c) => "&#" + c.charCodeAt(0) + ";"); }
if (rich) {
  marked.use({ gfm: true, breaks: true, renderer: { html(token) { return escapeHtml(token.text); } } });
  DOMPurify.addHook("afterSanitizeAttributes", (node) => {
    if (node.tagName === "A") { node.setAttribute("target", "_blank"); node.setAttribute("rel", "noopener noreferrer"); }
  });
}

export async function copy(text) {
  try { await navigator.clipboard.writeText(text); }
  catch (e) {
    const area = document.createElement("textarea"); area.value = text; document.body.appendChild(area);
    area.select(); document.execCommand("copy"); area.remove();
  }
}

function copyButton(what, label) {
  const button = document.createElement("button");
  button.type = "button"; button.className = "copy"; button.textContent = "Copy"; button.setAttribute("aria-label", label);
  button.addEventListener("click", async () => { await copy(what()); button.textContent = "Copied"; setTimeout(() => { button.textContent = "Copy"; }, 1500); });
  return button;
}

export function humanSize(size) {
  if (size >= 1e6) return (size / 1e6).toFixed(1) + " MB";
  if (size >= 1e3) return Math.round(size / 1e3) + " KB";
  return size + " bytes";
}

// A picture (a data: URL from the stored session, or a blob: URL of a file just sent) or a file's name.
export function attachmentNode(item) {
  if (item.image) {
    const img = document.createElement("img");
    img.className = "thumb"; img.src = item.image; img.alt = item.name ? "Picture: " + item.name : "Picture";
    return img;
  }
  const chip = document.createElement("span");
  chip.className = "chip"; chip.textContent = "\u{1F4CE} " + item.name + (item.size ? " (" + humanSize(item.size) + ")" : "");
  return chip;
}

function fillReply(div, text) {
  if (!rich) { div.textContent = text; return; }
  div.innerHTML = DOMPurify.sanitize(marked.parse(text).trim(), { ALLOWED_TAGS: TAGS, ALLOWED_ATTR: ["href", "title", "start", "align"] });
  for (const pre of div.querySelectorAll("pre")) {
    const code = pre.querySelector("code") || pre;
    pre.appendChild(copyButton(() => code.textContent, "Copy the code"));
  }
}

// The transcript element: bubbles by id (replies the gateway edits), cleared and redrawn from the stored session.
export class Transcript {
  constructor(log) { this.log = log; this.byId = new Map(); }

  add(text, cls, { id = null, attachments = [] } = {}) {
    const div = document.createElement("div");
    div.className = "msg " + cls;
    if (attachments.length) {
      const row = document.createElement("div"); row.className = "attachments";
      for (const item of attachments) row.appendChild(attachmentNode(item));
      div.appendChild(row);
    }
    const body = document.createElement("div"); body.className = "body"; div.appendChild(body);
    if (cls === "bot") fillReply(body, text); else body.textContent = text;
    if (!text) body.remove();
    this.log.appendChild(div); this.log.scrollTop = this.log.scrollHeight;
    if (id) this.byId.set(id, div);
    return div;
  }

  edit(id, text) {
    const div = this.byId.get(id);
    if (!div) { this.add(text, "bot", { id }); return; }
    fillReply(div.querySelector(".body"), text);
  }

  remove(id) {
    const div = this.byId.get(id);
    if (div) { div.remove(); this.byId.delete(id); }
  }

  // The stored conversation replaces whatever the page showed (a reload, a reconnect, /undo).
  redraw(messages) {
    this.log.replaceChildren(); this.byId.clear();
    for (const line of messages) {
      const attachments = [...line.images.map((image) => ({ image })), ...line.files.map((name) => ({ name }))];
      const div = this.add(line.text, line.role === "user" ? "me" : "bot", { attachments });
      if (line.pending) div.classList.add("pending");
    }
  }
}
