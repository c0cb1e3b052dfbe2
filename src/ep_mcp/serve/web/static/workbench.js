// ep-mcp workbench. No framework, no build step: the server renders (and escapes) every
// fragment; this script only fetches them with the API key the person entered. The key lives
// in sessionStorage (this tab only) and travels only in the Authorization header — never in a
// URL, so never in a log or the history.
(() => {
  "use strict";
  const KEY = "ep-mcp-key";
  const $ = (sel) => document.querySelector(sel);
  const key = () => sessionStorage.getItem(KEY) || "";
  const headers = () => (key() ? { Authorization: "Bearer " + key() } : {});

  async function load(url, target) {
    target.setAttribute("aria-busy", "true");
    try {
      const res = await fetch(url, { headers: headers(), cache: "no-store", redirect: "error" });
      target.innerHTML = await res.text(); // server-rendered, every pack text escaped
      target.dataset.status = String(res.status);
    } catch (err) {
      target.textContent = "The server did not answer: " + err.message;
    } finally {
      target.removeAttribute("aria-busy");
    }
  }

  async function refreshPacks() {
    const select = $("#pack");
    if (!select) return;
    try {
      const res = await fetch("/packs", { headers: headers(), cache: "no-store" });
      if (!res.ok) return;
      const packs = (await res.json()).packs || [];
      const chosen = select.value || select.dataset.chosen || "";
      select.replaceChildren();
      for (const p of packs) {
        const opt = document.createElement("option");
        opt.value = p.slug;
        opt.textContent = p.slug + (p.auth === "api_key" ? " (key)" : "");
        opt.selected = p.slug === chosen;
        select.append(opt);
      }
    } catch (err) {
      /* keep the server-rendered list */
    }
  }

  function showKeyState() {
    const state = $("#keystate");
    if (state) state.textContent = key() ? "key set for this tab" : "";
  }

  function loadPending(force) {
    const content = $("#content[data-src]");
    if (content && (force || content.querySelector("[data-pending]"))) {
      load(content.dataset.src, content).then(() => {
        if (location.hash === "#hit") toHit(content);
      });
    }
  }

  function searchSubmit(event) {
    const form = event.target;
    event.preventDefault();
    const params = new URLSearchParams();
    for (const [name, value] of new FormData(form)) {
      if (String(value).trim() !== "") params.set(name, String(value));
    }
    const path = new URL(form.action, location.href).pathname;
    history.replaceState(null, "", path + "?" + params.toString());
    const reader = $("#reader");
    if (reader) reader.hidden = true;
    load("/ui/search?" + params.toString(), $("#results"));
  }

  function openPanel(event) {
    const link = event.target.closest("a[data-panel]");
    if (!link) return;
    event.preventDefault();
    const reader = $("#reader");
    reader.hidden = false;
    load(link.dataset.panel, reader).then(() => {
      reader.scrollIntoView({ block: "nearest" });
      toHit(reader);
    });
  }

  // Scroll the hit's own section (#hit) to the top of the reader panel (or of the page): the
  // section before it is shown too, and may be far longer than the screen.
  function toHit(scroller) {
    const hit = scroller.querySelector("#hit");
    if (!hit) return;
    if (scroller.id === "reader") {
      scroller.scrollTop += hit.getBoundingClientRect().top - scroller.getBoundingClientRect().top;
    } else {
      hit.scrollIntoView({ block: "start" });
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    const keyform = $("#keyform");
    keyform.addEventListener("submit", (event) => {
      event.preventDefault();
      const input = $("#key");
      if (input.value) sessionStorage.setItem(KEY, input.value);
      input.value = "";
      showKeyState();
      refreshPacks();
      loadPending(true);
    });
    $("#forget").addEventListener("click", () => {
      sessionStorage.removeItem(KEY);
      showKeyState();
      location.reload();
    });
    const search = $("#search");
    if (search) search.addEventListener("submit", searchSubmit);
    document.addEventListener("click", openPanel);
    showKeyState();
    if (key()) {
      refreshPacks();
      loadPending(false);
    }
  });
})();
