// Step-through of a Petri net run (cepflow petri --html): the marking at step k is the
// initial marking with steps 1..k applied; the drawing highlights the fired transition and
// the places it took from and added to, and shows every place's token count.
(function () {
  "use strict";
  var run = JSON.parse(document.getElementById("petri-run").textContent);
  var steps = run.steps;
  var slider = document.getElementById("pn-slider");
  var label = document.getElementById("pn-step");
  var svg = document.querySelector(".pn-net svg");
  var at = 0;
  var marking = {};
  var more = {};  // tokens a place holds beyond those the page lists (a long input)

  function reset() {
    marking = {};
    more = {};
    Object.keys(run.more || {}).forEach(function (p) { more[p] = run.more[p]; });
    run.places.forEach(function (p) { marking[p] = {}; });
    Object.keys(run.initial).forEach(function (p) {
      run.initial[p].forEach(function (tok) { marking[p][tok[1]] = tok[2]; });
    });
  }
  function apply(step, sign) {
    step.take.forEach(function (tok) { change(tok[0], tok[1], -sign * tok[2]); });
    step.add.forEach(function (tok) { change(tok[0], tok[1], sign * tok[2]); });
  }
  function change(place, text, n) {
    var m = marking[place];
    if (n < 0 && !m[text] && more[place]) {  // a token the page did not list
      more[place] += n;
      return;
    }
    m[text] = (m[text] || 0) + n;
    if (m[text] === 0) { delete m[text]; }
  }
  function count(place) {
    var m = marking[place], total = more[place] || 0;
    Object.keys(m).forEach(function (k) { total += m[k]; });
    return total;
  }
  function text(place) {
    var m = marking[place];
    var parts = Object.keys(m).sort().map(function (k) { return m[k] + "`" + k; });
    if (more[place]) { parts.push("… " + more[place] + " more"); }
    return parts.length ? parts.join("++") : "empty";
  }
  function node(id) { return svg ? document.getElementById(id) : null; }
  function mark(id, cls, on) {
    var g = node(id);
    if (g) { g.classList.toggle(cls, on); }
  }
  function drawCounts() {
    if (!svg) { return; }
    run.places.forEach(function (p) {
      var g = node("p:" + p);
      if (!g) { return; }
      var t = g.querySelector("text.pn-count");
      if (!t) {
        var ell = g.querySelector("ellipse");
        if (!ell) { return; }
        t = document.createElementNS("http://www.w3.org/2000/svg", "text");
        t.setAttribute("class", "pn-count");
        t.setAttribute("x", ell.getAttribute("cx"));
        t.setAttribute("y", String(parseFloat(ell.getAttribute("cy")) +
                                   parseFloat(ell.getAttribute("ry")) + 11));
        t.setAttribute("text-anchor", "middle");
        g.appendChild(t);
      }
      var n = count(p);
      t.textContent = n ? String(n) : "";
    });
  }
  function show() {
    var prev = document.querySelectorAll(".pn-fired, .pn-take, .pn-add");
    Array.prototype.forEach.call(prev, function (g) {
      g.classList.remove("pn-fired", "pn-take", "pn-add");
    });
    var step = at > 0 ? steps[at - 1] : null;
    label.textContent = "step " + at + " of " + steps.length;
    slider.value = String(at);
    document.getElementById("pn-fired").textContent = step ? step.t : "(initial marking)";
    document.getElementById("pn-binding").textContent = step ? step.b : "";
    document.getElementById("pn-taken").textContent = step ? step.take.map(function (x) {
      return x[0] + ": " + x[2] + "`" + x[1]; }).join("; ") : "";
    document.getElementById("pn-added").textContent = step ? step.add.map(function (x) {
      return x[0] + ": " + x[2] + "`" + x[1]; }).join("; ") : "";
    if (step) {
      mark("t:" + step.t, "pn-fired", true);
      step.take.forEach(function (x) { mark("p:" + x[0], "pn-take", true); });
      step.add.forEach(function (x) { mark("p:" + x[0], "pn-add", true); });
    }
    var body = document.querySelector("#pn-tokens tbody");
    body.textContent = "";
    run.places.forEach(function (p) {
      if (!count(p)) { return; }
      var tr = document.createElement("tr");
      var a = document.createElement("td");
      var b = document.createElement("td");
      a.textContent = p;
      b.textContent = text(p);
      tr.appendChild(a);
      tr.appendChild(b);
      body.appendChild(tr);
    });
    drawCounts();
  }
  function go(k) {
    k = Math.max(0, Math.min(steps.length, k));
    if (k < at) {
      while (at > k) { at -= 1; apply(steps[at], -1); }
    } else {
      while (at < k) { apply(steps[at], 1); at += 1; }
    }
    show();
  }
  document.getElementById("pn-next").addEventListener("click", function () { go(at + 1); });
  document.getElementById("pn-back").addEventListener("click", function () { go(at - 1); });
  slider.addEventListener("input", function () { go(parseInt(slider.value, 10)); });
  document.addEventListener("keydown", function (e) {
    if (e.key === "ArrowRight") { go(at + 1); }
    if (e.key === "ArrowLeft") { go(at - 1); }
  });
  reset();
  show();
})();
