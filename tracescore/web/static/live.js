// Keeps a tracescore page current without reloading it. No library: the server renders the
// HTML; this polls /ui/live for a version that changes when scores arrive, then re-fetches the
// page and swaps in the regions marked data-live (keeping which <details> are open, and
// marking rows that were not there before, and leaving a region alone while one of its forms
// is being filled in). Under steady traffic the version changes on every
// poll, so the page itself is re-fetched at most once per REFETCH_MS.
(() => {
  "use strict";
  const body = document.body;
  const url = body.dataset.liveUrl;
  if (!url) return;
  const every = Number(body.dataset.pollMs) || 2000;
  const status = document.getElementById("live-status");
  const REFETCH_MS = 2500;
  let version = body.dataset.version;
  let fetchedAt = 0;
  let busy = false;

  function show(state, text) {
    if (!status) return;
    status.className = "live " + state;
    status.textContent = text;
  }

  // A form someone has typed into or is in: swapping its region would lose what they typed.
  document.addEventListener("input", (event) => {
    const form = event.target.closest && event.target.closest("form");
    if (form) form.dataset.editing = "1";
  });

  function editing(region) {
    const active = document.activeElement;
    return Boolean(region.querySelector("form[data-editing]")) ||
      Boolean(active && active.closest("form") && region.contains(active));
  }

  function swap(next) {
    const seen = new Set(Array.from(document.querySelectorAll("[data-row]"), (el) => el.dataset.row));
    for (const region of next.querySelectorAll("[data-live][id]")) {
      const current = document.getElementById(region.id);
      if (!current || editing(current)) continue;
      for (const details of region.querySelectorAll("details[id]")) {
        const before = document.getElementById(details.id);
        if (before) details.open = before.open;
      }
      for (const row of region.querySelectorAll("[data-row]")) {
        if (!seen.has(row.dataset.row)) row.classList.add("fresh");
      }
      current.replaceWith(document.importNode(region, true));
    }
  }

  async function poll() {
    if (busy || document.hidden) return;
    busy = true;
    try {
      const answer = await fetch(url, { credentials: "same-origin", cache: "no-store" });
      if (!answer.ok) throw new Error("status " + answer.status);
      const latest = (await answer.json()).version;
      if (latest !== version && Date.now() - fetchedAt >= REFETCH_MS) {
        const page = await fetch(window.location.href, { credentials: "same-origin", cache: "no-store" });
        if (!page.ok) throw new Error("status " + page.status);
        swap(new DOMParser().parseFromString(await page.text(), "text/html"));
        fetchedAt = Date.now();
        version = latest;
        body.dataset.version = latest;
      }
      // 24-hour UTC, as every other time on the pages (the locale's clock could be 12-hour)
      show("ok", "live · " + new Date().toISOString().slice(11, 19) + " UTC");
    } catch (error) {
      show("down", "offline (" + error.message + ")");
    } finally {
      busy = false;
    }
  }

  window.setInterval(poll, every);
})();
