/* cepflow run report: the zoomable timeline and the step-through (docs/reports.md,
   "The run report"). Plain JavaScript, no framework; it reads the page's "run-data" JSON and
   makes no request. */
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("run-data").textContent);
  var TL = D.timeline, STORIES = D.stories;
  var SVGNS = "http://www.w3.org/2000/svg";
  var PALETTE = ["#1f6feb", "#2b7a3d", "#b15c00", "#8250df", "#b42318", "#0a7d8c",
                 "#6e7781", "#bf3989", "#4d2d00", "#116329"];
  /* more events than this in view: the rows show their density, not dots */
  var DOT_LIMIT = 4000;

  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c];
    });
  }
  function pad(n, w) { n = String(n); while (n.length < w) n = "0" + n; return n; }
  function numberText(x) { return Number.isInteger(x) ? String(x) : String(x); }
  /* the rule of cepflow.timefmt.instant_text: ISO-8601 UTC for epoch milliseconds, else ms */
  function instantText(ts) {
    if (typeof ts !== "number" || !isFinite(ts)) return String(ts);
    if (ts >= D.epochFrom && ts < 253402300800000) {
      if (Number.isInteger(ts)) return new Date(ts).toISOString();
      var us = Math.round(ts * 1000), ms = Math.floor(us / 1000);
      return new Date(ms).toISOString().slice(0, -1) + pad(us - ms * 1000, 3) + "Z";
    }
    return numberText(ts) + " ms";
  }
  function valueText(v) {
    if (v === null || v === undefined) return "null";
    return typeof v === "string" ? v : JSON.stringify(v);
  }
  function pairs(obj) {
    if (obj === null || obj === undefined) return [];
    if (Array.isArray(obj)) return obj.map(function (v, i) { return ["$" + i, v]; });
    return Object.keys(obj).map(function (k) { return [k, obj[k]]; });
  }
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }

  /* ---------------------------------------------------------------- the timeline */
  var box = document.getElementById("run-timeline");
  var tip = document.getElementById("tip");
  var LEFT = 170, TOP = 26, RIGHT = 12;
  var t0 = D.t0, t1 = D.t1 > D.t0 ? D.t1 : D.t0 + 1;
  var view = [t0 - (t1 - t0) * 0.01, t1 + (t1 - t0) * 0.01];
  var full = view.slice();
  var inMatch = new Uint8Array(TL.ev_ts.length);
  TL.matches.forEach(function (m) { m.ev.forEach(function (i) { inMatch[i] = 1; }); });
  var selectedMatch = -1;

  function lowerBound(arr, x) {
    var lo = 0, hi = arr.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (arr[mid] < x) lo = mid + 1; else hi = mid; }
    return lo;
  }

  var EV_H = 18, SLOT = 7;
  var rowTop = [], rowH = [], rowsHeight = 0;
  TL.lanes.forEach(function (_, r) {
    rowTop.push(TOP + rowsHeight);
    rowH.push(EV_H + (TL.depth[r] || 0) * SLOT + 2);
    rowsHeight += rowH[r];
  });
  var patterns = [];
  TL.matches.forEach(function (m) { if (patterns.indexOf(m.p) < 0) patterns.push(m.p); });
  patterns.sort();
  var spanColor = {};
  patterns.forEach(function (p, i) { spanColor[p] = PALETTE[(i + 3) % PALETTE.length]; });

  function render() {
    if (!box) return;
    var width = Math.max(400, box.clientWidth), plot = width - LEFT - RIGHT;
    var rows = TL.lanes.length, height = TOP + rowsHeight + 6;
    var v0 = view[0], v1 = view[1], k = plot / (v1 - v0);
    function x(ts) { return LEFT + (ts - v0) * k; }
    var sel = selectedMatch >= 0 ? TL.matches[selectedMatch] : null, selEv = {};
    if (sel) sel.ev.forEach(function (i) { selEv[i] = 1; });
    var out = [];
    out.push('<svg xmlns="' + SVGNS + '" width="' + width + '" height="' + height + '">');
    for (var r = 0; r < rows; r++) {
      var y = rowTop[r];
      if (r % 2) out.push('<rect x="0" y="' + y + '" width="' + width + '" height="' + rowH[r] +
                          '" fill="#f4f6f9"/>');
      out.push('<text class="lane-label" x="4" y="' + (y + 13) + '">' +
               esc(TL.lanes[r].length > 26 ? TL.lanes[r].slice(0, 25) + "…" : TL.lanes[r]) +
               '<title>' + esc(TL.lanes[r]) + '</title></text>');
    }
    var every = niceStep((v1 - v0) / Math.max(2, Math.floor(plot / 230)));
    for (var tt = Math.ceil(v0 / every) * every; tt <= v1; tt += every) {
      var tx = x(tt);
      if (tx < LEFT || tx > width - 90) continue;
      out.push('<line x1="' + tx.toFixed(1) + '" x2="' + tx.toFixed(1) + '" y1="' + (TOP - 4) +
               '" y2="' + height + '" stroke="#d8dde6"/>');
      out.push('<text class="tick" x="' + tx.toFixed(1) + '" y="12" text-anchor="middle">' +
               esc(instantText(Math.round(tt * 1000) / 1000)) + '</text>');
    }
    out.push('<clipPath id="tl-plot"><rect x="' + LEFT + '" y="0" width="' + plot +
             '" height="' + height + '"/></clipPath><g clip-path="url(#tl-plot)">');
    var a = lowerBound(TL.ev_ts, v0), b = lowerBound(TL.ev_ts, v1 + 1e-9);
    var dots = b - a <= DOT_LIMIT;
    if (!TL.complete || !dots) out.push(binsSvg(x, v0, v1));
    TL.matches.forEach(function (m, mi) {
      if (m.last < v0 || m.first > v1) return;
      var xa = x(m.first) - 4, xb = x(m.last) + 4, ya, yb, multi = m.hi > m.lo;
      if (multi) { ya = rowTop[m.lo] + 1; yb = rowTop[m.hi] + EV_H + (m.slot + 1) * SLOT; }
      else { ya = rowTop[m.lo] + EV_H + m.slot * SLOT; yb = ya + SLOT - 1; }
      out.push('<rect class="span' + (multi ? " multi" : "") + (mi === selectedMatch ? " sel" : "") +
               '" data-m="' + mi + '" x="' + xa.toFixed(1) + '" y="' + ya.toFixed(1) +
               '" width="' + Math.max(8, xb - xa).toFixed(1) + '" height="' +
               (yb - ya).toFixed(1) + '" rx="3" fill="' + spanColor[m.p] + '" stroke="' +
               spanColor[m.p] + '"/>');
    });
    for (var j = a; j < b; j++) {
      if (!dots && !inMatch[j]) continue;
      out.push('<circle class="ev' + (selEv[j] ? " sel" : "") + '" data-i="' + j + '" cx="' +
               x(TL.ev_ts[j]).toFixed(1) + '" cy="' + (rowTop[TL.ev_lane[j]] + EV_H / 2 + 1) +
               '" r="' + (selEv[j] ? 5 : 3.5) + '" fill="' +
               PALETTE[TL.ev_type[j] % PALETTE.length] + '"/>');
    }
    out.push('</g></svg>');
    box.innerHTML = out.join("");
    var range = document.getElementById("tl-range");
    if (range) range.textContent = " " + instantText(Math.round(v0)) + " – " +
                                   instantText(Math.round(v1));
  }

  /* a round step (1, 2 or 5 times a power of ten ms) about as long as ``rough`` */
  function niceStep(rough) {
    var p = Math.pow(10, Math.floor(Math.log10(Math.max(rough, 1e-3))));
    var f = rough / p;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
  }

  /* each row's event counts per time bin as one path of bars (one element a row: the page
     stays quick with a million events) */
  var binMax = {};
  (function () {
    var B = TL.bins;
    for (var i = 0; i < B.row.length; i++) {
      binMax[B.row[i]] = Math.max(binMax[B.row[i]] || 0, B.count[i]);
    }
  })();

  function binsSvg(x, v0, v1) {
    var B = TL.bins, n = B.n, paths = {};
    if (!B.row.length) return "";
    var w = (B.t1 - B.t0) / n || 1;
    for (var i = 0; i < B.row.length; i++) {
      var s = B.t0 + B.bin[i] * w, e = s + w, r = B.row[i];
      if (e < v0 || s > v1) continue;
      var h = Math.max(1, (EV_H - 4) * Math.sqrt(B.count[i] / binMax[r]));
      var xa = x(s), xb = Math.max(xa + 1, x(e));
      (paths[r] = paths[r] || []).push("M" + xa.toFixed(1) + " " +
        (rowTop[r] + EV_H - 1).toFixed(1) + "v" + (-h).toFixed(1) + "h" +
        (xb - xa).toFixed(1) + "v" + h.toFixed(1) + "z");
    }
    return Object.keys(paths).map(function (r) {
      return '<path class="bin" d="' + paths[r].join("") + '"/>';
    }).join("");
  }

  function zoom(factor, at) {
    var v0 = view[0], v1 = view[1];
    var c = at === undefined ? (v0 + v1) / 2 : at;
    var span = Math.max((v1 - v0) * factor, 1e-3);
    span = Math.min(span, (full[1] - full[0]) * 4);
    view = [c - (c - v0) * span / (v1 - v0), c + (v1 - c) * span / (v1 - v0)];
    render();
  }

  function tsAt(clientX) {
    var rect = box.getBoundingClientRect();
    var plot = Math.max(400, box.clientWidth) - LEFT - RIGHT;
    return view[0] + (clientX - rect.left - LEFT) / plot * (view[1] - view[0]);
  }

  function showTip(ev, text) {
    tip.textContent = text;
    tip.hidden = false;
    tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - 430) + "px";
    tip.style.top = (ev.clientY + 14) + "px";
  }

  function eventText(i) {
    var type = TL.types[TL.ev_type[i]], names = TL.fields[type] || [];
    var lines = [type + "  id " + TL.ev_id[i], instantText(TL.ev_ts[i])];
    TL.ev_params[i].forEach(function (v, p) {
      lines.push((names[p] || "$" + p) + " = " + valueText(v));
    });
    return lines.join("\n");
  }

  function matchText(mi) {
    var m = TL.matches[mi];
    var lines = [m.p + " match at " + instantText(m.ts)];
    pairs(m.params).forEach(function (kv) { lines.push(kv[0] + " = " + valueText(kv[1])); });
    lines.push("events " + m.ev.map(function (i) { return TL.ev_id[i]; }).join(", "));
    if (m.story >= 0) lines.push("(click: step through it)");
    return lines.join("\n");
  }

  if (box) {
    var drag = null;
    box.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      zoom(ev.deltaY > 0 ? 1.25 : 0.8, tsAt(ev.clientX));
    }, {passive: false});
    box.addEventListener("mousedown", function (ev) {
      drag = {x: ev.clientX, view: view.slice(), moved: false};
    });
    window.addEventListener("mousemove", function (ev) {
      if (drag) {
        var plot = Math.max(400, box.clientWidth) - LEFT - RIGHT;
        var dt = (ev.clientX - drag.x) / plot * (drag.view[1] - drag.view[0]);
        if (Math.abs(ev.clientX - drag.x) > 3) drag.moved = true;
        if (drag.moved) { view = [drag.view[0] - dt, drag.view[1] - dt]; render(); }
      }
    });
    window.addEventListener("mouseup", function () {
      setTimeout(function () { drag = null; }, 0);
    });
    box.addEventListener("mouseover", function (ev) {
      var t = ev.target;
      if (t.dataset && t.dataset.i !== undefined) showTip(ev, eventText(+t.dataset.i));
      else if (t.dataset && t.dataset.m !== undefined) showTip(ev, matchText(+t.dataset.m));
    });
    box.addEventListener("mouseout", function () { tip.hidden = true; });
    box.addEventListener("click", function (ev) {
      if (drag && drag.moved) return;
      var t = ev.target;
      if (t.dataset && t.dataset.m !== undefined) {
        var m = TL.matches[+t.dataset.m];
        if (m.story >= 0) { choose(m.story); document.getElementById("stepper")
                                                    .scrollIntoView({behavior: "smooth"}); }
      }
    });
    document.getElementById("zoom-in").addEventListener("click", function () { zoom(0.5); });
    document.getElementById("zoom-out").addEventListener("click", function () { zoom(2); });
    document.getElementById("zoom-reset").addEventListener("click", function () {
      view = full.slice(); render();
    });
    window.addEventListener("resize", render);
    render();
  }

  /* ---------------------------------------------------------------- the step-through */
  var select = document.getElementById("story");
  var story = -1, step = 0;

  function figureOf(pattern) {
    var figs = document.querySelectorAll("#automata .automaton");
    for (var i = 0; i < figs.length; i++) {
      if (figs[i].getAttribute("data-pattern") === pattern) return figs[i];
    }
    return null;
  }

  function byTitle(fig, cls) {
    var map = {};
    fig.querySelectorAll("g." + cls).forEach(function (g) {
      var t = g.querySelector("title");
      if (t) (map[t.textContent] = map[t.textContent] || []).push(g);
    });
    return map;
  }

  function highlight(s, i) {
    var fig = figureOf(s.pattern);
    document.querySelectorAll("#automata .automaton").forEach(function (f) {
      f.hidden = f !== fig;
    });
    if (!fig) return;
    fig.querySelectorAll(".current, .seen, .taken").forEach(function (g) {
      g.classList.remove("current", "seen", "taken");
    });
    var nodes = byTitle(fig, "node"), edges = byTitle(fig, "edge");
    var seen = {"q0": 1};
    for (var j = 0; j < i; j++) s.steps[j].to.forEach(function (n) { seen[n] = 1; });
    Object.keys(seen).forEach(function (n) {
      (nodes[n] || []).forEach(function (g) { g.classList.add("seen"); });
    });
    var st = s.steps[i];
    st.to.forEach(function (n) {
      (nodes[n] || []).forEach(function (g) { g.classList.add("current"); });
      var from = st.frm || (st.kind === "start" ? "q0" : null);
      if (from) (edges[from + "->" + n] || []).forEach(function (g) { g.classList.add("taken"); });
    });
  }

  function table(headers, rows) {
    var t = el("table", {"class": "data"});
    var tr = el("tr");
    headers.forEach(function (h) { tr.appendChild(el("th", {}, h)); });
    t.appendChild(el("thead")).appendChild(tr);
    var body = t.appendChild(el("tbody"));
    rows.forEach(function (r) {
      var row = el("tr");
      r.forEach(function (c) { row.appendChild(el("td", {}, c)); });
      body.appendChild(row);
    });
    return t;
  }

  function renderStep() {
    var s = STORIES[story], st = s.steps[step], panel = document.getElementById("step");
    highlight(s, step);
    document.getElementById("step-no").textContent =
      "step " + (step + 1) + " of " + s.steps.length;
    document.getElementById("back").disabled = step === 0;
    document.getElementById("next").disabled = step === s.steps.length - 1;
    panel.textContent = "";
    panel.appendChild(el("h3", {}, s.pattern + " · token " + s.token + " · " + s.outcome +
                                  (s.reason ? " (" + s.reason + ")" : "")));
    var what = {start: "starts", step: "moves", match: "completes: MATCH",
                trap: "dies (trap)", dispose: "is disposed"}[st.kind] || st.kind;
    var col = panel.appendChild(el("div", {"class": "step-event"}));
    col.appendChild(el("p", {"class": "when"}, st.time + " — the token " + what));
    if (st.event) {
      col.appendChild(el("p", {"class": "event"},
                          "event " + st.event.id + (st.event.type ? " " + st.event.type : "")));
      var ps = pairs(st.event.params);
      if (ps.length) col.appendChild(table(["parameter", "value"], ps.map(function (kv) {
        return [kv[0], valueText(kv[1])]; })));
    } else if (st.kind !== "match") {
      col.appendChild(el("p", {"class": "event"}, "time passes (no event)"));
    }
    var move = (st.frm || (st.kind === "start" ? "q0" : "")) +
               (st.to.length ? " → " + st.to.join(", ") : "");
    if (move.trim()) col.appendChild(el("p", {"class": "move"}, "states: " + move));
    if (st.reason) col.appendChild(el("p", {"class": "reason"}, st.reason));
    st.threads.forEach(function (th, k) {
      var label = st.threads.length > 1 ? " (run " + (k + 1) + ")" : "";
      var bs = pairs(th.bindings), c = panel.appendChild(el("div", {"class": "step-bindings"}));
      c.appendChild(el("h4", {}, "bindings" + label));
      if (bs.length) c.appendChild(table(["variable", "value"], bs.map(function (kv) {
        return [kv[0], valueText(kv[1])]; })));
      else c.appendChild(el("p", {"class": "muted"}, "none yet"));
      c.appendChild(el("h4", {}, "window deadlines" + label));
      if (th.deadlines.length) {
        c.appendChild(table(["window", "deadline", "left"], th.deadlines.map(function (d) {
          return [d.zone, d.text, d.left]; })));
      } else {
        c.appendChild(el("p", {"class": "muted"}, "in no window"));
      }
    });
    if (!st.threads.length && st.kind !== "start") {
      col.appendChild(el("p", {"class": "muted"}, "no run of the token is left"));
    }
  }

  function choose(i) {
    story = i; step = 0;
    if (select) select.value = String(i);
    selectedMatch = STORIES[i].match;
    if (box) render();
    renderStep();
  }

  if (select && STORIES.length) {
    var groups = {match: "matches", trap: "partial matches that died",
                  disposed: "partial matches that died", partial: "partial matches left"};
    var made = {};
    STORIES.forEach(function (s, i) {
      var name = groups[s.outcome] || s.outcome;
      if (!made[name]) { made[name] = el("optgroup", {label: name}); }
      made[name].appendChild(el("option", {value: String(i)}, s.label));
    });
    ["matches", "partial matches that died", "partial matches left"].forEach(function (n) {
      if (made[n]) select.appendChild(made[n]);
    });
    select.addEventListener("change", function () { choose(+select.value); });
    document.getElementById("next").addEventListener("click", function () {
      if (step < STORIES[story].steps.length - 1) { step++; renderStep(); }
    });
    document.getElementById("back").addEventListener("click", function () {
      if (step > 0) { step--; renderStep(); }
    });
    choose(0);
  }
  /* for the tests: the formatter, to compare with cepflow.timefmt */
  window.cepflowInstantText = instantText;
})();
