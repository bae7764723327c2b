"use strict";
// The dashboard's schedule list: every job with its next and last run (GET /api/schedules). Kept apart from
// dashboard.js (it uses that file's api(), token() and show()) and polls on its own; a backend without a
// scheduler answers 404 and the section stays hidden.

const SCHEDULES_POLL_MS = 3000;

function scheduleTime(epoch) {
  return epoch === null || epoch === undefined ? "none"
    : new Date(epoch * 1000).toISOString().slice(0, 16).replace("T", " ") + " UTC";
}

function drawSchedules(jobs) {
  show("schedules-section", jobs !== null);
  if (jobs === null) return;
  const table = document.getElementById("schedules");
  table.replaceChildren();
  document.getElementById("schedules-count").textContent = `${jobs.length} job${jobs.length === 1 ? "" : "s"}`;
  for (const job of jobs) {
    const when = job.cron !== null ? `${job.cron} (${job.timezone})` : `once at ${scheduleTime(job.at)}`;
    const last = job.last_run === null ? "never" : `${scheduleTime(job.last_run.occurrence)} ${job.last_run.status}`;
    const row = document.createElement("tr");
    for (const text of [job.id, job.chat || "home channel", when, `next ${scheduleTime(job.next_run)}`, `last ${last}`,
      job.origin]) {
      const cell = document.createElement("td");
      cell.textContent = text;
      row.append(cell);
    }
    table.append(row);
  }
}

async function refreshSchedules() {
  if (token()) {
    try {
      drawSchedules((await api("/api/schedules")).jobs);
    } catch (error) {
      drawSchedules(null);
    }
  }
  setTimeout(refreshSchedules, SCHEDULES_POLL_MS);
}

refreshSchedules();
