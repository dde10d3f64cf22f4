// memrun report: one paged, filterable, sortable table over an embedded JSON array.
// Only one page of rows is in the DOM at a time, so a 100k-row run stays responsive.
(function () {
  "use strict";
  var cfgEl = document.getElementById("table-config"), rowsEl = document.getElementById("rows");
  function ready() {  // the page is drawn: a mark the benches read (time since navigation start)
    if (window.performance && performance.mark) { performance.mark("memrun-ready"); }
    document.body.setAttribute("data-ready", "1");
  }
  if (!cfgEl || !rowsEl) { ready(); return; }
  var cfg = JSON.parse(cfgEl.textContent), all = JSON.parse(rowsEl.textContent);
  var textsEl = document.getElementById("texts"), strings = textsEl ? JSON.parse(textsEl.textContent) : [];
  var root = document.getElementById("items"), thead = root.querySelector("thead"), tbody = root.querySelector("tbody");
  var controls = document.getElementById("controls"), pager = document.getElementById("pager");
  var count = document.getElementById("count");
  var state = {filters: {}, text: "", sort: null, desc: false, page: 0}, shown = all, open = {};
  var size = cfg.page || 50, kinds = {}, linkText = {}, hidden = {}, selected = [];
  cfg.columns.forEach(function (c) { kinds[c[0]] = c[2] || "text"; linkText[c[0]] = c[3] || "report"; });
  (cfg.hidden || []).forEach(function (k) { hidden[k] = true; });
  window.memrunSelected = selected;
  function visible() { return cfg.columns.filter(function (c) { return !hidden[c[0]]; }); }

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function show(v) { return v === null || v === undefined ? "-" : (typeof v === "number" && !Number.isInteger(v) ? v.toFixed(3) : String(v)); }
  function keysCell(td, keys) {
    (keys || []).forEach(function (k, i) {
      if (i) { td.appendChild(document.createTextNode(" ")); }
      td.appendChild(el(k[1] ? "b" : "span", k[1] ? {"class": "gold", title: "gold"} : {}, k[0]));
    });
    if (!keys || !keys.length) { td.textContent = "-"; }
  }
  function pct(v) { return (100 * v).toFixed(1); }
  function cell(row, key) {
    var td = el("td"), v = row[key], kind = kinds[key];
    if (kind === "keys") { keysCell(td, v); }
    else if (kind === "link") { if (v) { td.appendChild(el("a", {href: v}, linkText[key])); } else { td.textContent = "-"; } }
    else if (kind === "check") {
      var box = el("input", {type: "checkbox", "aria-label": "tick " + v, "data-path": v});
      box.checked = selected.indexOf(v) >= 0;
      box.addEventListener("click", function (e) {
        e.stopPropagation();
        var at = selected.indexOf(v);
        if (box.checked && at < 0) { selected.push(v); } else if (!box.checked && at >= 0) { selected.splice(at, 1); }
        document.dispatchEvent(new CustomEvent("memrun-select"));
      });
      td.appendChild(box);
    }
    else if (kind === "interval") {
      td.className = "num nowrap";
      if (v === null || v === undefined) { td.textContent = "-"; }
      else if (row.metric === "mrr") { td.textContent = v.toFixed(3); }
      else {
        td.textContent = pct(v) + "%";
        if (row.low !== null && row.low !== undefined) {
          td.appendChild(el("span", {"class": "ci", title: "95% interval (cluster bootstrap, with the small-cluster t when clusters are few)"}, " [" + pct(row.low) + ", " + pct(row.high) + "]"));
        }
      }
    }
    else if (kind === "date") { td.className = "nowrap"; td.textContent = v ? String(v).replace("T", " ").slice(0, 16) : "-"; }
    else {
      var text = show(v);
      if (kind !== "num" && text.length > 160) { text = text.slice(0, 157) + "..."; }
      td.textContent = text;
      if (kind === "label" && v) { td.className = "nowrap lbl-" + v; }
      if (kind === "num") { td.className = "num"; }
    }
    return td;
  }
  function detail(row) {
    var tr = el("tr", {"class": "detail"}), td = el("td", {colspan: visible().length});
    (cfg.detail || []).forEach(function (d) {
      var key = d[0], v = row[key];
      if (v === null || v === undefined || (Array.isArray(v) && !v.length)) { return; }
      td.appendChild(el("div", {}, d[1] + ":"));
      if (key.slice(-5) === "texts") {
        var keys = row[key.slice(0, -5) + "keys"] || [], ol = el("ol");
        v.forEach(function (t, i) {
          var li = el("li"), k = keys[i];
          if (k) { li.appendChild(el(k[1] ? "b" : "span", k[1] ? {"class": "gold"} : {}, k[0] + ": ")); }
          li.appendChild(folded(t === null ? "-" : strings[t]));
          ol.appendChild(li);
        });
        td.appendChild(ol);
      } else if (kinds[key] === "keys") { var div = el("div"); keysCell(div, v); td.appendChild(div); }
      else if (d[2] === "repeats") { td.appendChild(repeatsTable(v)); }
      else if (d[2] === "sides") { td.appendChild(sidesBlock(v)); }
      else { td.appendChild(el("pre", {}, show(v))); }
    });
    tr.appendChild(td);
    return tr;
  }
  function folded(text) {  // a record longer than cfg.fold characters folds (memrun.report.evidence)
    var limit = cfg.fold || 600;
    if (text.length <= limit) { return el("span", {}, text); }
    var d = el("details", {"class": "fold"});
    d.appendChild(el("summary", {}, text.slice(0, limit) + "\u2026"));
    d.appendChild(document.createTextNode(text.slice(limit)));
    return d;
  }
  function sidesBlock(sides) {  // a flip: what A and B retrieved (or answered), side by side
    var wrap = el("div", {"class": "sides"});
    ["A", "B"].forEach(function (name) {
      var s = sides[name], col = el("div", {"class": "side", "data-side": name});
      col.appendChild(el("h4", {}, name + ": " + show(s.score) + (s.label ? " (" + s.label + ")" : "")));
      (s.answers || []).forEach(function (a) { col.appendChild(el("div", {"class": "answer"}, "answered: " + a)); });
      if (s.error) { col.appendChild(el("div", {"class": "warn"}, s.error)); }
      var gold = el("ul", {"class": "gold-records"});
      s.gold.forEach(function (g) {
        var li = el("li", {"class": g.found ? "gold-retrieved" : "gold-missed"});
        li.appendChild(el("b", {"class": "gold"}, g.key + " "));
        li.appendChild(el("span", {"class": g.found ? "tag" : "tag missed"}, g.state));
        if (g.text !== null) { li.appendChild(el("div")).appendChild(folded(g.text)); }
        gold.appendChild(li);
      });
      if (s.gold.length) { col.appendChild(el("div", {}, "gold records:")); col.appendChild(gold); }
      var ol = el("ol", {"class": "hits"});
      s.hits.forEach(function (h) {
        var li = el("li", h.gold ? {"class": "gold-hit"} : {});
        li.appendChild(el("b", {"class": h.gold ? "gold" : "key"}, h.key));
        if (h.gold) { li.appendChild(el("span", {"class": "tag"}, " gold")); }
        if (h.score !== null) { li.appendChild(el("span", {"class": "score"}, " " + show(h.score))); }
        if (h.text !== null) { li.appendChild(el("div")).appendChild(folded(h.text)); }
        ol.appendChild(li);
      });
      col.appendChild(el("div", {}, "retrieved:"));
      col.appendChild(ol);
      wrap.appendChild(col);
    });
    return wrap;
  }
  function repeatsTable(reps) {
    var t = el("table", {"class": "repeats"}), head = el("tr");
    ["repeat", "answer", "label", "judge explanation", "failure stage", "error"].forEach(function (h) { head.appendChild(el("th", {}, h)); });
    t.appendChild(head);
    reps.forEach(function (r) {
      var tr = el("tr");
      [r.rep, r.ans, r.label, r.expl, r.stage, r.err].forEach(function (v, i) {
        var c = el("td", {}, show(v));
        if (i === 2 && v) { c.className = "nowrap lbl-" + v; }
        tr.appendChild(c);
      });
      t.appendChild(tr);
    });
    return t;
  }
  function haystack(row) {
    if (row.__t === undefined) {
      row.__t = (cfg.search || cfg.columns.map(function (c) { return c[0]; })).map(function (k) {
        var v = row[k];
        return Array.isArray(v) ? v.map(function (x) { return Array.isArray(x) ? x[0] : x; }).join(" ") : show(v);
      }).join("\n").toLowerCase();
    }
    return row.__t;
  }
  function apply() {
    var f = state.filters, text = state.text.toLowerCase();
    shown = all.filter(function (row) {
      for (var k in f) { if (f[k] !== null && show(row[k]) !== f[k]) { return false; } }
      return !text || haystack(row).indexOf(text) >= 0;
    });
    if (state.sort) {
      var k = state.sort, sign = state.desc ? -1 : 1;
      shown = shown.slice().sort(function (a, b) {
        var x = a[k], y = b[k];
        if (x === y) { return 0; }
        if (x === null || x === undefined) { return 1; }
        if (y === null || y === undefined) { return -1; }
        return (x < y ? -1 : 1) * sign;
      });
    }
    state.page = 0;
    draw();
  }
  function draw() {
    tbody.textContent = "";
    var start = state.page * size, page = shown.slice(start, start + size), frag = document.createDocumentFragment();
    page.forEach(function (row, i) {
      var tr = el("tr", {"class": "row", "data-index": String(start + i)});
      visible().forEach(function (c) { tr.appendChild(cell(row, c[0])); });
      tr.addEventListener("click", function () {
        var next = tr.nextSibling;
        if (next && next.className === "detail") { tbody.removeChild(next); return; }
        tbody.insertBefore(detail(row), tr.nextSibling);
      });
      frag.appendChild(tr);
    });
    tbody.appendChild(frag);
    if (count) { count.textContent = shown.length === all.length ? String(all.length) : shown.length + " of " + all.length; }
    pager.textContent = "";
    var pages = Math.max(1, Math.ceil(shown.length / size));
    var prev = el("button", {id: "prev"}, "previous"), next = el("button", {id: "next"}, "next");
    prev.disabled = state.page === 0; next.disabled = state.page >= pages - 1;
    prev.onclick = function () { state.page -= 1; draw(); };
    next.onclick = function () { state.page += 1; draw(); };
    pager.appendChild(prev);
    pager.appendChild(el("span", {id: "page"}, " page " + (state.page + 1) + " of " + pages + " "));
    pager.appendChild(next);
  }
  function header() {
  thead.textContent = "";
  var hr = el("tr");
  visible().forEach(function (c) {
    var th = el("th", {"data-key": c[0], title: "sort"}, c[1]);
    th.addEventListener("click", function () {
      state.desc = state.sort === c[0] ? !state.desc : false;
      state.sort = c[0];
      apply();
    });
    hr.appendChild(th);
  });
  thead.appendChild(hr);
  }
  header();
  (cfg.filters || []).forEach(function (f) {
    var values = {};
    all.forEach(function (row) { values[show(row[f[0]])] = true; });
    var names = Object.keys(values).sort();
    if (names.length < 2 && !(names.length === 1 && names[0] !== "-")) { return; }
    var sel = el("select", {"data-key": f[0], "aria-label": f[1]});
    sel.appendChild(el("option", {value: ""}, f[1] + ": all"));
    names.forEach(function (n) { sel.appendChild(el("option", {value: n}, n)); });
    sel.addEventListener("change", function () { state.filters[f[0]] = sel.value === "" ? null : sel.value; apply(); });
    controls.appendChild(sel);
  });
  var search = el("input", {id: "search", type: "search", placeholder: "search text", "aria-label": "search"});
  var timer = null;
  search.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(function () { state.text = search.value; apply(); }, 150);
  });
  controls.appendChild(search);
  if ((cfg.hidden || []).length) {
    var more = el("details", {"class": "columns", id: "columns"}), list = el("span");
    more.appendChild(el("summary", {}, "columns"));
    cfg.hidden.forEach(function (k) {
      var label = el("label"), box = el("input", {type: "checkbox", "data-column": k});
      box.addEventListener("change", function () { hidden[k] = !box.checked; header(); draw(); });
      label.appendChild(box);
      label.appendChild(document.createTextNode(" " + k + " "));
      list.appendChild(label);
    });
    more.appendChild(list);
    controls.appendChild(more);
  }
  draw();
  ready();
})();
