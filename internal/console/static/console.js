// Live updates for the Annex console. The server streams the number of
// changes its informers have seen (server-sent events on /live), or of
// the one object the page follows (data-live-key); when it differs from
// the one this page was rendered at, the page's <main> is fetched again
// and swapped in. Everything works without this script:
// the footer then says to reload.
"use strict";
(function () {
  const main = document.querySelector("main[data-live]");
  const rendered = document.getElementById("rendered");
  const state = document.getElementById("live-state");
  if (!main || !rendered || !state || !window.EventSource || !window.fetch) {
    return;
  }
  let seq = main.dataset.seq;
  let renderedAt = Date.now();
  let connected = false;
  let busy = false;
  let again = null;

  function editing() {
    const el = document.activeElement;
    return el && main.contains(el) && el.matches("input, select, textarea, button");
  }

  async function refresh(next) {
    if (busy || editing()) {
      again = next; // try once the current refresh (or the edit) is done
      return;
    }
    busy = true;
    try {
      const r = await fetch(location.href, { headers: { "X-Console-Fragment": "main" }, cache: "no-store" });
      if (r.ok) {
        const html = await r.text();
        main.innerHTML = html;
        seq = r.headers.get("X-Console-Seq") || next;
        main.dataset.seq = seq;
        renderedAt = Date.now();
        rendered.dateTime = new Date(renderedAt).toISOString();
        rendered.textContent = new Date(renderedAt).toLocaleTimeString([], { hour12: false });
      }
    } finally {
      busy = false;
    }
    if (again !== null && again !== seq) {
      const n = again;
      again = null;
      refresh(n);
    }
  }

  function showAge() {
    const s = Math.round((Date.now() - renderedAt) / 1000);
    const age = s < 60 ? s + " s" : Math.round(s / 60) + " min";
    state.textContent = connected
      ? "(" + age + " ago; live: updates as Annex reports changes)"
      : "(" + age + " ago; live updates disconnected, retrying; reload for newer data)";
  }

  const key = main.dataset.liveKey;
  const events = new EventSource(key ? "/live?key=" + encodeURIComponent(key) : "/live");
  events.addEventListener("open", () => { connected = true; showAge(); });
  events.addEventListener("error", () => { connected = false; showAge(); });
  events.addEventListener("change", (e) => {
    if (e.data !== seq) {
      refresh(e.data);
    }
  });
  document.addEventListener("focusout", () => {
    if (again !== null) {
      setTimeout(() => { if (again !== null && !editing()) { const n = again; again = null; refresh(n); } }, 0);
    }
  });
  setInterval(showAge, 1000);
  showAge();
})();
