// paros play: the page. The server is stateless; a position is its level
// and move log, kept in the URL fragment as #LEVEL;MOVE;MOVE (each move
// encodeURIComponent'ed). Every change POSTs the log to /api/play and draws
// the View it answers.
"use strict";

const PROGRESS_KEY = "paros-play-progress"; // {levelId: true} for won levels
const MISTAKES_KEY = "paros-play-mistakes"; // {levelId: count}
const GROUPS = ["message", "node", "client", "cell"];
const GROUP_TITLES = { message: "Messages in flight", node: "Nodes", client: "Clients", cell: "Cell" };
const STATUS_TEXT = { open: "In play", reached: "Goal reached", failed: "Failed" };
const SVG_NS = "http://www.w3.org/2000/svg";

const state = {
  levels: [],
  view: null,
  hintShown: false,
  queue: Promise.resolve(),
};

const $ = (id) => document.getElementById(id);

// --- DOM helpers ---------------------------------------------------------

function build(e, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}
const h = (tag, attrs, ...children) => build(document.createElement(tag), attrs, children);
const s = (tag, attrs, ...children) => build(document.createElementNS(SVG_NS, tag), attrs, children);

function loadStore(key) {
  try {
    const v = JSON.parse(localStorage.getItem(key) || "{}");
    return v && typeof v === "object" ? v : {};
  } catch {
    return {};
  }
}

function saveStore(key, v) {
  try {
    localStorage.setItem(key, JSON.stringify(v));
  } catch {
    // Storage full or disabled: progress is only a convenience.
  }
}

// --- the fragment --------------------------------------------------------

function fragment(level, log) {
  return "#" + [encodeURIComponent(level).replace(/%2F/gi, "/"), ...log.map(encodeURIComponent)].join(";");
}

function parseFragment() {
  const dec = (x) => {
    try {
      return decodeURIComponent(x);
    } catch {
      return x;
    }
  };
  const parts = location.hash.replace(/^#/, "").split(";");
  const level = dec(parts[0]) || (state.levels[0] ? state.levels[0].id : "");
  return { level, log: parts.slice(1).filter((p) => p !== "").map(dec) };
}

// --- talking to the server -----------------------------------------------

async function api(path, body) {
  const opts = body === undefined ? {} : {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  };
  const res = await fetch(path, opts);
  let data;
  try {
    data = await res.json();
  } catch {
    data = { error: `${res.status} ${res.statusText}` };
  }
  if (!res.ok) {
    const err = new Error(data.error || res.statusText);
    err.status = res.status;
    throw err;
  }
  return data;
}

// enqueue runs requests one after another, so a fast player's moves each
// start from the log the previous one left.
function enqueue(fn) {
  state.queue = state.queue.then(fn).catch((err) => showError(err.message));
  return state.queue;
}

function load(level, log) {
  return enqueue(() => replay(level, log, ""));
}

// replay shows level after log; a log that does not replay (a stale link)
// falls back to the level's start, an unknown level to the first level.
async function replay(level, log, note) {
  let view;
  try {
    view = await api("/api/play", { level, log, try: "" });
  } catch (err) {
    if (err.status === 400 && log.length > 0) {
      return replay(level, [], "This link's moves do not replay, so the level starts afresh. " + err.message);
    }
    if (err.status === 404 && state.levels.length > 0 && level !== state.levels[0].id) {
      return replay(state.levels[0].id, [], `There is no level "${level}".`);
    }
    throw err;
  }
  show(view);
  if (note) showError(note);
}

function move(mv) {
  return enqueue(async () => {
    const v = state.view;
    if (!v) return;
    const next = await api("/api/play", { level: v.level.id, log: v.log, try: mv });
    if (next.mistake) {
      const m = loadStore(MISTAKES_KEY);
      m[next.level.id] = (m[next.level.id] || 0) + 1;
      saveStore(MISTAKES_KEY, m);
    }
    show(next);
  });
}

function loadFromFragment() {
  const { level, log } = parseFragment();
  if (level) load(level, log);
}

function undo() {
  const v = state.view;
  if (v && v.log.length > 0) load(v.level.id, v.log.slice(0, -1));
}

function reset() {
  const v = state.view;
  if (v) load(v.level.id, []);
}

function nextLevel() {
  const v = state.view;
  const i = v ? state.levels.findIndex((l) => l.id === v.level.id) : -1;
  if (i >= 0 && i + 1 < state.levels.length) location.hash = fragment(state.levels[i + 1].id, []);
}

function toggleHint() {
  state.hintShown = !state.hintShown;
  if (state.view) renderHint(state.view);
}

// --- drawing -------------------------------------------------------------

function show(view) {
  view.log = view.log || [];
  const prev = state.view;
  if (!prev || prev.level.id !== view.level.id) state.hintShown = false;
  state.view = view;
  const frag = fragment(view.level.id, view.log);
  if (location.hash !== frag) history.replaceState(null, "", frag);
  if (view.status === "reached") {
    const p = loadStore(PROGRESS_KEY);
    if (!p[view.level.id]) {
      p[view.level.id] = true;
      saveStore(PROGRESS_KEY, p);
    }
  }
  const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.move : undefined;
  $("undo").disabled = view.log.length === 0;
  $("next").disabled = state.levels.findIndex((l) => l.id === view.level.id) >= state.levels.length - 1;
  renderLevels();
  renderText(view);
  renderStatus(view);
  renderRejected(view);
  renderPrompt(view);
  renderHint(view);
  renderMistakes(view);
  renderTimeline(view);
  renderMoves(view);
  renderWorld(view);
  renderLogs(view);
  if (focused !== undefined) {
    const again = document.querySelector(`button[data-move="${CSS.escape(focused)}"]`);
    if (again) again.focus();
  }
}

function showError(msg) {
  const box = $("rejected");
  box.textContent = msg;
  box.className = "error";
  box.hidden = false;
}

function renderLevels() {
  const nav = $("levels");
  const won = loadStore(PROGRESS_KEY);
  const current = state.view ? state.view.level.id : "";
  const acts = new Map();
  for (const l of state.levels) {
    if (!acts.has(l.act)) acts.set(l.act, []);
    acts.get(l.act).push(l);
  }
  nav.replaceChildren(h("h2", {}, "Levels"), ...[...acts].map(([act, levels]) =>
    h("section", { class: "act" }, h("h3", {}, act), h("ol", {}, levels.map((l) => h("li", {},
      h("a", { href: fragment(l.id, []), title: l.goal, "aria-current": l.id === current ? "page" : null },
        h("span", { class: "check", "aria-hidden": "true" }, won[l.id] ? "✓" : ""),
        l.title, won[l.id] ? h("span", { class: "sr" }, " (won)") : null)))))));
}

function renderText(v) {
  $("level-act").textContent = v.level.act;
  $("level-title").textContent = v.level.title;
  $("level-intro").replaceChildren(...(v.level.intro || []).map((p) => h("p", {}, p)));
  $("level-goal").textContent = v.level.goal;
  document.title = `${v.level.title} · paros play`;
}

function renderStatus(v) {
  const box = $("status");
  box.dataset.status = v.status;
  box.className = "status-" + v.status;
  const reached = v.status === "reached";
  box.replaceChildren(h("p", {}, h("b", {}, STATUS_TEXT[v.status] || v.status), v.verdict ? ": " + v.verdict : ""));
  if (reached) box.prepend(h("p", { class: "banner" }, "Level complete"));
  if (reached && !$("next").disabled) {
    const next = h("button", { type: "button", class: "next" }, "Next level");
    next.addEventListener("click", nextLevel);
    box.append(next);
  }
}

function renderRejected(v) {
  const box = $("rejected");
  box.textContent = v.rejected || "";
  box.className = v.mistake ? "mistake" : "";
  box.hidden = !v.rejected;
}

function renderPrompt(v) {
  const box = $("prompt");
  box.hidden = !v.prompt;
  if (!v.prompt) {
    box.replaceChildren();
    return;
  }
  box.replaceChildren(h("p", { class: "question" }, v.prompt.question),
    h("div", { class: "buttons" }, v.prompt.choices.map((c) => moveButton(c, c.label || c.move))));
}

function renderHint(v) {
  const p = $("hint");
  p.textContent = v.hint || "No hint for this position.";
  p.hidden = !state.hintShown;
  $("hint-button").setAttribute("aria-expanded", String(state.hintShown));
}

function renderMistakes(v) {
  const n = loadStore(MISTAKES_KEY)[v.level.id] || 0;
  $("mistakes").textContent = n === 1 ? "1 mistake" : `${n} mistakes`;
}

function renderTimeline(v) {
  const ol = $("timeline");
  ol.replaceChildren(...(v.timeline || []).map((e) =>
    h("li", { value: e.n }, h("code", {}, e.move), " ", e.text)));
  ol.scrollTop = ol.scrollHeight;
}

function moveButton(m, label) {
  return h("button", { type: "button", class: "move", "data-move": m.move, title: m.label || m.move },
    label, m.key ? h("kbd", {}, m.key) : null);
}

const words = (mv) => mv.trim().split(/\s+/);
// A move on a message names it second: deliver 3, drop 3, stray 3 5. Its
// button beside the message says the rest: deliver, or stray a copy to node 5.
const shortLabel = (m) => (words(m.move).length > 2 ? (m.label || m.move).replace(/ of \d+/, "") : words(m.move)[0]);

function renderMoves(v) {
  const box = $("moves");
  const groups = new Map();
  // A question's choices are its own buttons, in #prompt, not moves here.
  const choices = new Set(v.prompt ? v.prompt.choices.map((c) => c.move) : []);
  for (const m of (v.moves || []).filter((m) => !choices.has(m.move))) {
    const g = m.group || "other";
    if (!groups.has(g)) groups.set(g, []);
    groups.get(g).push(m);
  }
  const order = [...GROUPS, ...[...groups.keys()].filter((g) => !GROUPS.includes(g))];
  const sections = [];
  for (const g of order) {
    const ms = groups.get(g) || [];
    if (g === "message") {
      if (ms.length || (v.inflight || []).length) sections.push(renderMessages(v, ms));
      continue;
    }
    if (!ms.length) continue;
    sections.push(h("section", { class: "group", "data-group": g }, h("h3", {}, GROUP_TITLES[g] || g),
      h("div", { class: "buttons" }, ms.map((m) => moveButton(m, m.label || m.move)))));
  }
  if (v.prompt) sections.unshift(h("p", { class: "empty" }, "Answer the question first."));
  else if (!sections.length) sections.push(h("p", { class: "empty" }, "No moves now."));
  box.replaceChildren(...sections);
}

// renderMessages lists the messages in flight, each with the moves that
// name it (deliver 3, drop 3, ...); number keys 1-9 deliver them in order.
function renderMessages(v, ms) {
  const used = new Set();
  const items = (v.inflight || []).map((msg, i) => {
    const mine = ms.filter((m) => words(m.move)[1] === String(msg.id));
    mine.forEach((m) => used.add(m));
    return h("li", { "data-message": msg.id },
      h("span", { class: "msg-n", title: i < 9 ? `key ${i + 1} delivers it` : null }, i < 9 ? String(i + 1) : "·"),
      h("span", { class: "msg-text" }, messageText(msg)),
      h("span", { class: "buttons" }, mine.map((m) => moveButton(m, shortLabel(m)))));
  });
  const rest = ms.filter((m) => !used.has(m));
  return h("section", { class: "group", "data-group": "message" }, h("h3", {}, GROUP_TITLES.message),
    items.length ? h("ol", { class: "messages" }, items) : h("p", { class: "empty" }, "None."),
    rest.length ? h("div", { class: "buttons" }, rest.map((m) => moveButton(m, m.label || m.move))) : null);
}

// messageText is the message's own text when it says what it is, as
// "Accept 1→2 b=1.1 [1:claim]" does, and its route and kind otherwise.
function messageText(msg) {
  if (msg.text.startsWith(msg.kind)) return msg.text;
  return [h("span", { class: "route" }, `${msg.from} → ${msg.to}`), " ", h("b", {}, msg.kind), " ", msg.text];
}

// machineName names a machine as the moves do: node 1, not 1.
function machineName(m) {
  if (!/^\d+$/.test(m.id)) return m.id;
  return (m.kind === "matchmaker" ? "matchmaker " : "node ") + m.id;
}

function renderLogs(v) {
  const table = $("logs");
  // Only the voters keep a log; matchmakers and proxies would be empty rows.
  const ms = (v.machines || []).filter((m) => VOTERS.has(m.kind));
  const slots = [...new Set(ms.flatMap((m) => (m.log || []).map((sl) => sl.slot)))].sort((a, b) => a - b);
  if (!slots.length) {
    table.replaceChildren(h("caption", {}, v.log.length ? "No slot holds anything now." : "No slot holds anything yet."));
    return;
  }
  table.replaceChildren(
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "machine"), slots.map((n) => h("th", { scope: "col" }, String(n))))),
    h("tbody", {}, ms.map((m) => {
      const by = new Map((m.log || []).map((sl) => [sl.slot, sl]));
      return h("tr", { class: m.up ? "" : "down" }, h("th", { scope: "row" }, machineName(m)), slots.map((n) => {
        const sl = by.get(n);
        if (!sl) return h("td", {});
        return h("td", { class: sl.faulty ? "faulty" : sl.chosen ? "chosen" : "accepted", title: `ballot ${sl.ballot}` }, sl.text);
      }));
    })));
}

// --- input ---------------------------------------------------------------

function onKey(e) {
  if (e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
  if (e.target instanceof Element && e.target.closest("input, textarea, select")) return;
  const v = state.view;
  if (!v) return;
  const k = e.key;
  const own = [...(v.moves || []), ...(v.prompt ? v.prompt.choices : [])].find((m) => m.key && m.key === k);
  let act = null;
  if (own) {
    act = () => move(own.move);
  } else if (/^[1-9]$/.test(k)) {
    const msg = (v.inflight || [])[Number(k) - 1];
    if (msg && (v.moves || []).some((m) => m.move === "deliver " + msg.id)) act = () => move("deliver " + msg.id);
  } else if (k === "u" || k === "Backspace") {
    act = undo;
  } else if (k === "r") {
    act = reset;
  } else if (k === "h") {
    act = toggleHint;
  } else if (k === "n") {
    act = nextLevel;
  }
  if (act) {
    e.preventDefault();
    act();
  }
}

async function start() {
  document.addEventListener("click", (e) => {
    const b = e.target instanceof Element ? e.target.closest("button[data-move]") : null;
    if (b && !b.disabled) move(b.dataset.move);
  });
  document.addEventListener("keydown", onKey);
  $("undo").addEventListener("click", undo);
  $("reset").addEventListener("click", reset);
  $("next").addEventListener("click", nextLevel);
  $("hint-button").addEventListener("click", toggleHint);
  window.addEventListener("hashchange", loadFromFragment);
  try {
    state.levels = await api("/api/levels");
  } catch (err) {
    showError("Could not list the levels: " + err.message);
    return;
  }
  renderLevels();
  loadFromFragment();
}

start();
