// paros play: the world, an SVG of the machines and the messages in
// flight. Machines stand in rows by kind (nodes, then proxies, then
// matchmakers, then anything else), or on their grid when the level has
// one; a message is an arrow from its sender's box to its receiver's.
// Loaded before app.js, whose helpers ($, s, machineName) it uses.
"use strict";

const VOTERS = new Set(["acceptor", "replica", "spare"]);
const BANDS = [
  (m) => VOTERS.has(m.kind),
  (m) => m.kind === "proxy",
  (m) => m.kind === "matchmaker",
  () => true, // a kind this page does not know yet
];
const GAP_X = 14; // between boxes in a row
const GAP_Y = 72; // between rows: room for the arcs of messages along a row
const EDGE = 56; // above the first row and below the last, for the same
const MARGIN = 12;
const LINE = 15; // a line of text in a box
const SLOT = 11; // a slot of the log strip
const PILL = { w: 80, h: 32 }; // a message end that is no machine (a client)
// Below this width the drawing has two boxes a row, not four.
const NARROW = window.matchMedia("(max-width: 600px)");

// --- measuring and wrapping text -----------------------------------------

const widths = new Map();
let ruler = null;

// textWidth is the width text takes drawn with the CSS class cls, measured
// on a hidden text of the drawing (estimated while the drawing is hidden).
function textWidth(text, cls) {
  const key = cls + "\u0000" + text;
  if (widths.has(key)) return widths.get(key);
  const svg = $("world");
  if (!ruler) ruler = s("text", { "aria-hidden": "true" });
  ruler.setAttribute("class", cls + " ruler");
  ruler.textContent = text;
  if (ruler.parentNode !== svg) svg.append(ruler);
  const w = ruler.getComputedTextLength();
  if (w <= 0) return text.length * 6.8;
  if (widths.size > 4000) widths.clear();
  widths.set(key, w);
  return w;
}

// wrap breaks text into lines no wider than max, at spaces, and inside a
// word only when the word alone is too wide; past maxLines it ends in "…".
function wrap(text, cls, max, maxLines) {
  const fits = (t) => textWidth(t, cls) <= max;
  const lines = [];
  let line = "";
  for (let word of text.split(/\s+/).filter(Boolean)) {
    if (fits(line ? line + " " + word : word)) {
      line = line ? line + " " + word : word;
      continue;
    }
    if (line) lines.push(line);
    while (!fits(word)) {
      let n = word.length - 1;
      while (n > 1 && !fits(word.slice(0, n))) n--;
      lines.push(word.slice(0, n));
      word = word.slice(n);
    }
    line = word;
  }
  if (line) lines.push(line);
  if (lines.length > maxLines) {
    let last = lines[maxLines - 1];
    while (last && !fits(last + "…")) last = last.slice(0, -1);
    lines.length = maxLines;
    lines[maxLines - 1] = last.trimEnd() + "…";
  }
  return lines;
}

// pair is "a · b" on one line when it fits, a and b on two otherwise.
const pair = (a, b, max) => (textWidth(`${a} · ${b}`, "fact") <= max ? [`${a} · ${b}`] : [a, b]);

// --- the boxes -----------------------------------------------------------

// boxFace is what a machine's box says, as lines of {text, cls}, and how
// tall the box must be to say it in width w.
function boxFace(m, w) {
  const max = w - 16;
  const name = machineName(m);
  const lines = [];
  // The role goes under the name when both do not fit on the first line.
  const roleInline = textWidth(name, "name") + 6 + textWidth(m.role, "role") <= max;
  if (!roleInline) lines.push({ text: m.role, cls: "fact role" });
  // A voter shows its promise and log position; a matchmaker or a proxy
  // votes on nothing, so it shows its notes only.
  if (VOTERS.has(m.kind)) {
    for (const t of [...pair(`promised ${m.promised || "–"}`, `floor ${m.floor}`, max), ...pair(`chosen ${m.chosen}`, `applied ${m.applied}`, max)]) {
      lines.push({ text: t, cls: "fact" });
    }
  }
  if (diskBad(m)) wrap("disk: " + m.disk, "fact bad", max, 2).forEach((t) => lines.push({ text: t, cls: "fact bad" }));
  for (const note of m.notes || []) wrap(note, "fact", max, 3).forEach((t) => lines.push({ text: t, cls: "fact" }));
  const slots = (m.log || []).slice(-Math.floor(max / SLOT));
  const h = 26 + lines.length * LINE + (slots.length ? 26 : 6);
  return { name, roleInline, lines, slots, h: Math.max(h, 48) };
}

const diskBad = (m) => Boolean(m.disk) && m.disk !== "ok" && m.disk !== "none";

function machineBox(m, b, face) {
  const wiped = m.disk === "wiped" || m.role === "wiped";
  const cls = ["machine", "kind-" + m.kind, "role-" + m.role, m.up ? "up" : "down", wiped ? "wiped" : "", diskBad(m) ? "disk-bad" : ""];
  const x = b.x - b.w / 2;
  const y = b.y - b.h / 2;
  const facts = VOTERS.has(m.kind) ? [`promised ${m.promised || "–"} · floor ${m.floor} · chosen ${m.chosen} · applied ${m.applied}`] : [];
  const title = [`${face.name} (${m.kind}, ${m.role}${m.up ? "" : ", down"})`, ...facts, "disk: " + m.disk, ...(m.notes || [])];
  return s("g", { class: cls.filter(Boolean).join(" "), "data-machine": m.id },
    s("title", {}, title.join("\n")),
    s("rect", { x, y, width: b.w, height: b.h, rx: 8 }),
    s("text", { x: x + 8, y: y + 18, class: "name" }, face.name,
      face.roleInline ? s("tspan", { class: "role", dx: 6 }, m.role) : null),
    face.lines.map((l, i) => s("text", { x: x + 8, y: y + 36 + LINE * i, class: l.cls }, l.text)),
    face.slots.map((sl, i) => s("rect", {
      x: x + 8 + i * SLOT, y: y + b.h - 22, width: SLOT - 2, height: 14, rx: 2,
      class: "slot " + (sl.faulty ? "faulty" : sl.chosen ? "chosen" : "accepted"),
    }, s("title", {}, `slot ${sl.slot} ${sl.ballot}: ${sl.text}${sl.faulty ? " (faulty)" : ""}`))));
}

// --- the layout ----------------------------------------------------------

// layout gives each machine, and each message end that is no machine, a
// box {x, y, w, h} (x and y its centre), and sizes the drawing.
function layout(v) {
  const ms = v.machines || [];
  const others = [];
  for (const msg of v.inflight || []) {
    for (const end of [msg.from, msg.to]) {
      if (!ms.some((m) => m.id === end) && !others.includes(end)) others.push(end);
    }
  }
  const narrow = NARROW.matches;
  const onGrid = ms.filter((m) => m.column >= 0);
  const cols = Math.max(0, ...onGrid.map((m) => m.column + 1));
  // On a phone a grid's boxes narrow, so three columns still fit.
  const w = narrow && cols > 2 ? 120 : 160;
  const perRow = narrow ? 2 : 4;
  const W = Math.max(2 * MARGIN + perRow * w + (perRow - 1) * GAP_X, 2 * MARGIN + cols * (w + GAP_X) - GAP_X);
  const faces = new Map(ms.map((m) => [m.id, boxFace(m, w)]));
  const boxes = new Map();
  let y = EDGE;

  // A grid spreads its columns over the width, up to a gap of 50.
  const gridGap = cols > 1 ? Math.min((W - 2 * MARGIN - cols * w) / (cols - 1), 50) : 0;
  const gridX = (c) => (W - cols * w - (cols - 1) * gridGap) / 2 + c * (w + gridGap) + w / 2;

  // row places items ([id, w, h]) centred on one row, or at their grid
  // columns when column names them, and moves y below the row.
  const row = (items, column) => {
    const hh = Math.max(...items.map((it) => it[2]));
    const span = items.reduce((sum, it) => sum + it[1], 0) + (items.length - 1) * GAP_X;
    let x = (W - span) / 2;
    for (const [id, iw, ih] of items) {
      boxes.set(id, { x: column ? gridX(column(id)) : x + iw / 2, y: y + hh / 2, w: iw, h: ih });
      x += iw + GAP_X;
    }
    y += hh + GAP_Y;
  };
  // band places items in as few rows as perRow allows, evenly filled,
  // all as tall as the tallest.
  const band = (items) => {
    if (!items.length) return;
    const rows = Math.ceil(items.length / perRow);
    const per = Math.ceil(items.length / rows);
    const hh = Math.max(...items.map((it) => it[2]));
    for (let i = 0; i < items.length; i += per) row(items.slice(i, i + per).map(([id, iw]) => [id, iw, hh]));
  };

  const item = (m) => [m.id, w, faces.get(m.id).h];
  if (onGrid.length) {
    const hh = Math.max(...onGrid.map((m) => faces.get(m.id).h));
    const rows = Math.max(...onGrid.map((m) => m.row + 1));
    for (let r = 0; r < rows; r++) {
      const here = onGrid.filter((m) => m.row === r);
      if (here.length) row(here.map((m) => [m.id, w, hh]), (id) => here.find((m) => m.id === id).column);
    }
  }
  const loose = ms.filter((m) => m.column < 0);
  const placed = new Set();
  for (const inBand of BANDS) {
    const mine = loose.filter((m) => !placed.has(m.id) && inBand(m));
    mine.forEach((m) => placed.add(m.id));
    band(mine.map(item));
  }
  band(others.map((id) => [id, PILL.w, PILL.h]));
  const H = Math.max(y - GAP_Y + EDGE, 200);
  return { boxes, faces, others, W, H };
}

// --- the messages --------------------------------------------------------

// toBorder moves a line end from a box's centre towards another point
// until it meets the box's border.
function toBorder(b, to) {
  const dx = to.x - b.x;
  const dy = to.y - b.y;
  const t = Math.min(dx ? (b.w / 2 + 4) / Math.abs(dx) : Infinity, dy ? (b.h / 2 + 4) / Math.abs(dy) : Infinity, 0.45);
  return { x: b.x + dx * t, y: b.y + dy * t };
}

// route is the curve of a message from box a to box b: along a row it
// arcs below (rightwards) or above (leftwards) the boxes between, a longer
// arc deeper and its ends further in, so arcs nest; across rows it bends
// a little to the right of its travel, so A→B and B→A part.
function route(a, b) {
  if (Math.abs(a.y - b.y) < 1) {
    const dir = Math.sign(b.x - a.x);
    const side = dir > 0 ? 1 : -1;
    const k = Math.min(Math.max(1, Math.round(Math.abs(b.x - a.x) / (a.w + GAP_X))), 3); // boxes apart
    const inset = 0.45 - 0.1 * k;
    const p = { x: a.x + dir * a.w * inset, y: a.y + side * (a.h / 2 + 3) };
    const q = { x: b.x - dir * b.w * inset, y: b.y + side * (b.h / 2 + 3) };
    return { p, q, c: { x: (p.x + q.x) / 2, y: p.y + side * 2 * (8 + 12 * k) } };
  }
  const p = toBorder(a, b);
  const q = toBorder(b, a);
  const dx = q.x - p.x;
  const dy = q.y - p.y;
  const len = Math.hypot(dx, dy) || 1;
  const bend = Math.min(len / 6, 40);
  return { p, q, c: { x: (p.x + q.x) / 2 - (dy / len) * bend, y: (p.y + q.y) / 2 + (dx / len) * bend } };
}

// at is the point at t along the quadratic curve r.
const at = (r, t) => ({
  x: (1 - t) * (1 - t) * r.p.x + 2 * (1 - t) * t * r.c.x + t * t * r.q.x,
  y: (1 - t) * (1 - t) * r.p.y + 2 * (1 - t) * t * r.c.y + t * t * r.q.y,
});

function renderWorld(v) {
  const svg = $("world");
  const { boxes, faces, others, W, H } = layout(v);
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const defs = s("defs", {}, s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
    s("path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" })));
  const edges = s("g", { class: "edges" });
  const dots = s("g", { class: "dots" });
  const key = (msg) => msg.from + "\u0000" + msg.to;
  const pairs = new Map();
  for (const msg of v.inflight || []) pairs.set(key(msg), (pairs.get(key(msg)) || 0) + 1);
  const seen = new Map();
  // What is drawn so far, boxes, dots and labels, as centred boxes, so
  // that no dot or label lands on another or off the drawing.
  const taken = [...boxes.values()];
  const inside = (r) => r.x - r.w / 2 >= 0 && r.x + r.w / 2 <= W && r.y - r.h / 2 >= 0 && r.y + r.h / 2 <= H;
  const free = (r) => inside(r) && !taken.some((o) => Math.abs(o.x - r.x) * 2 < o.w + r.w && Math.abs(o.y - r.y) * 2 < o.h + r.h);
  const claim = (r) => (taken.push(r), r);
  (v.inflight || []).forEach((msg, i) => {
    const a = boxes.get(msg.from);
    const b = boxes.get(msg.to);
    if (!a || !b) return;
    const nth = seen.get(key(msg)) || 0;
    seen.set(key(msg), nth + 1);
    const label = i < 9 ? String(i + 1) : "·";
    const title = s("title", {}, `${label}: ${msg.from} → ${msg.to}: ${msg.kind} ${msg.text}`);
    // The dot slides along its curve (or, for a message to itself, down
    // the box's side) off any dot or label already there.
    let spots;
    if (msg.from === msg.to) {
      const x = a.x + a.w / 2 + 14 <= W ? a.x + a.w / 2 + 2 : a.x - a.w / 2 - 2;
      spots = [0, 1, 2, 3, 4].map((k) => ({ x, y: a.y - a.h / 2 + 10 + 22 * k }));
    } else {
      const r = route(a, b);
      edges.append(s("path", { d: `M${r.p.x},${r.p.y} Q${r.c.x},${r.c.y} ${r.q.x},${r.q.y}`, class: "edge kind-" + msg.kind, "marker-end": "url(#arrow)" }, title.cloneNode(true)));
      const t0 = (nth + 1) / (pairs.get(key(msg)) + 1);
      spots = [0, 0.12, -0.12, 0.24, -0.24, 0.36, -0.36].map((d) => t0 + d).filter((t) => t >= 0.1 && t <= 0.9).map((t) => at(r, t));
    }
    const dot = claim({ ...(spots.find((p) => free({ ...p, w: 22, h: 22 })) || spots[0]), w: 22, h: 22 });
    // The first message of a pair names its kind, right of its dot or left
    // of it, or not at all where both would cover something.
    let kind = null;
    if (nth === 0) {
      const lw = textWidth(msg.kind, "msg-kind");
      const right = { x: dot.x + 13 + lw / 2, y: dot.y - 12, w: lw, h: 14 };
      const left = { ...right, x: dot.x - 13 - lw / 2 };
      if (free(right)) kind = s("text", { x: claim(right).x - lw / 2, y: dot.y - 8, class: "msg-kind" }, msg.kind);
      else if (free(left)) kind = s("text", { x: claim(left).x + lw / 2, y: dot.y - 8, "text-anchor": "end", class: "msg-kind" }, msg.kind);
    }
    dots.append(s("g", { class: "msg", "data-message": msg.id },
      title, s("circle", { cx: dot.x, cy: dot.y, r: 10 }),
      s("text", { x: dot.x, y: dot.y + 4, "text-anchor": "middle", class: "msg-n" }, label), kind));
  });
  const machines = s("g", { class: "machines" }, (v.machines || []).map((m) => machineBox(m, boxes.get(m.id), faces.get(m.id))),
    others.map((id) => {
      const b = boxes.get(id);
      return s("g", { class: "other" }, s("rect", { x: b.x - b.w / 2, y: b.y - b.h / 2, width: b.w, height: b.h, rx: b.h / 2 }),
        s("text", { x: b.x, y: b.y + 5, "text-anchor": "middle" }, id));
    }));
  svg.replaceChildren(defs, edges, machines, dots);
}

// A phone turned sideways (or a window resized) past the breakpoint
// redraws the world with the other number of boxes a row.
NARROW.addEventListener("change", () => {
  if (state.view) renderWorld(state.view);
});
