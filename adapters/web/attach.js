// Pictures and files for the next message: picked with the button, dropped on the page or pasted. Each is
// uploaded at once (POST upload?chat=…&name=…, the raw bytes, the session cookie) and shown as a chip in the
// composer; the message frame then names the returned ids. A file over the server's limit is refused here
// with one short line (the server refuses it too).
import { attachmentNode, humanSize } from "./bubbles.js";

export const TEXTS = {
  tooLarge: (limit) => "That file is too large (the limit is " + humanSize(limit) + ").",
  failed: "That file could not be uploaded; please try again.",
  tooMany: (n) => "At most " + n + " files per message.",
};
const MAX_FILES = 10;

export class Attachments {
  // `chatId()` names the chat; `say(text)` shows a short line to the user.
  constructor({ chatId, say, button, input, tray, dropZone }) {
    this.chatId = chatId; this.say = say; this.tray = tray;
    this.limit = 10_000_000;
    this.ready = [];  // uploaded: { id, name, mime_type, size, kind, image }
    this.uploading = new Set();
    button.addEventListener("click", () => input.click());
    input.addEventListener("change", () => { this.addFiles(input.files); input.value = ""; });
    dropZone.addEventListener("dragover", (event) => { event.preventDefault(); dropZone.classList.add("dropping"); });
    dropZone.addEventListener("dragleave", () => dropZone.classList.remove("dropping"));
    dropZone.addEventListener("drop", (event) => {
      event.preventDefault(); dropZone.classList.remove("dropping");
      this.addFiles(event.dataTransfer.files);
    });
    document.addEventListener("paste", (event) => {
      const files = [...(event.clipboardData ? event.clipboardData.files : [])];
      if (files.length) { event.preventDefault(); this.addFiles(files); }  // a pasted picture; text pastes as text
    });
  }

  addFiles(files) {
    for (const file of files) {
      if (this.ready.length + this.uploading.size >= MAX_FILES) { this.say(TEXTS.tooMany(MAX_FILES)); return; }
      if (file.size > this.limit) { this.say(TEXTS.tooLarge(this.limit)); continue; }
      const upload = this.upload(file);
      this.uploading.add(upload);
      upload.finally(() => this.uploading.delete(upload));
    }
  }

  async upload(file) {
    const query = "upload?chat=" + encodeURIComponent(this.chatId()) + "&name=" + encodeURIComponent(file.name || "pasted");
    let answer;
    try {
      answer = await fetch(query, { method: "POST", credentials: "same-origin", body: file,
                                    headers: { "Content-Type": file.type || "application/octet-stream" } });
    } catch (e) { this.say(TEXTS.failed); return; }
    let body = null;
    try { body = await answer.json(); } catch (e) { body = null; }
    if (!answer.ok || !body || !body.id) {
      this.say(body && body.error ? body.error : answer.status === 413 ? TEXTS.tooLarge(this.limit) : TEXTS.failed);
      return;
    }
    const item = { ...body, image: body.kind === "image" ? URL.createObjectURL(file) : null };
    this.ready.push(item); this.show();
  }

  show() {
    this.tray.replaceChildren();
    this.tray.hidden = this.ready.length === 0;
    for (const item of this.ready) {
      const chip = document.createElement("span"); chip.className = "pending-file";
      chip.appendChild(attachmentNode(item));
      const drop = document.createElement("button");
      drop.type = "button"; drop.textContent = "\u00d7"; drop.setAttribute("aria-label", "Remove " + item.name);
      drop.addEventListener("click", () => { this.ready = this.ready.filter((other) => other !== item); this.show(); });
      chip.appendChild(drop); this.tray.appendChild(chip);
    }
  }

  // The files ready for the message being sent (uploads still running are waited for).
  async take() {
    await Promise.all([...this.uploading]);
    const taken = this.ready; this.ready = []; this.show();
    return taken;
  }
}
