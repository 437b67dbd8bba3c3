(function () {
  "use strict";
  function key(cell) {
    var raw = cell.getAttribute("data-v");
    if (raw === null) { raw = cell.textContent.trim(); }
    var num = raw === "" ? NaN : Number(raw);
    return { empty: raw === "", isNum: !isNaN(num), num: num, text: raw.toLowerCase() };
  }
  function sortBy(table, index, th) {
    var current = th.getAttribute("aria-sort");
    var first = th.getAttribute("data-first") || "ascending";
    var dir = current ? (current === "ascending" ? "descending" : "ascending") : first;
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var sign = dir === "ascending" ? 1 : -1;
    rows.sort(function (a, b) {
      var x = key(a.cells[index]), y = key(b.cells[index]);
      if (x.empty !== y.empty) { return x.empty ? 1 : -1; }   // missing values always last
      if (x.isNum && y.isNum) { return sign * (x.num - y.num); }
      return sign * x.text.localeCompare(y.text);
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir);
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
      th.tabIndex = 0;
      if (!th.title) { th.title = "sort by this column"; }  // a header that explains itself keeps its words
      th.addEventListener("click", function () { sortBy(table, index, th); });
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(table, index, th); }
      });
    });
  });
  function each(selector, fn) { Array.prototype.forEach.call(document.querySelectorAll(selector), fn); }
  // the filter: table rows and blocks (data-filter), chart lines and legend rows (data-enc in an svg); a chart
  // whose lines are all filtered out is hidden
  var box = document.getElementById("filter");
  if (box) {
    box.addEventListener("input", function () {
      var q = box.value.trim().toLowerCase();
      function out(name) { return q !== "" && name.toLowerCase().indexOf(q) < 0; }
      each("[data-filter]", function (el) { el.hidden = out(el.getAttribute("data-filter")); });
      each("svg [data-enc]", function (el) { el.classList.toggle("off", out(el.getAttribute("data-enc"))); });
      each(".multiples .panel", function (p) { p.hidden = p.querySelector(".s:not(.off)") === null; });
    });
  }
  // a click on a legend row highlights that encoding in every chart and dims the others; again: all back. The rows
  // become buttons here, not in the markup: a page at a field's size has thousands of them
  each("svg .lg", function (el) {
    el.setAttribute("tabindex", "0");
    el.setAttribute("role", "button");
    el.setAttribute("aria-pressed", "false");
  });
  var focus = null;
  function setFocus(name) {
    focus = name === focus ? null : name;
    each("svg [data-enc]", function (el) {
      var mine = el.getAttribute("data-enc") === focus;
      el.classList.toggle("hl", mine);
      el.classList.toggle("dim", focus !== null && !mine);
      if (mine && el.classList.contains("s")) { el.parentNode.appendChild(el); }  // drawn on top
    });
    each("svg .lg", function (el) { el.setAttribute("aria-pressed", String(el.getAttribute("data-enc") === focus)); });
  }
  document.addEventListener("click", function (e) {
    var lg = e.target.closest ? e.target.closest("svg .lg") : null;
    if (lg) { setFocus(lg.getAttribute("data-enc")); }
  });
  document.addEventListener("keydown", function (e) {
    var lg = e.target.closest ? e.target.closest("svg .lg") : null;
    if (lg && (e.key === "Enter" || e.key === " ")) { e.preventDefault(); setFocus(lg.getAttribute("data-enc")); }
    if (e.key === "Escape" && focus !== null) { setFocus(focus); }
  });
  // attention maps: query, key and probability under the pointer (see pebench/report/attn.py for the data)
  var tip = document.getElementById("tip");
  function probs(img) {
    if (img.__p) { return img.__p; }
    var data = img.getAttribute("data-p");
    if (data) {
      var raw = atob(data), p = new Float64Array(raw.length);
      for (var i = 0; i < raw.length; i++) { var b = raw.charCodeAt(i) / 255; p[i] = b * b; }
      img.__p = p;
    } else {  // the mean of the heads
      var heads = img.closest(".att").querySelectorAll("img[data-p]");
      var sum = null;
      Array.prototype.forEach.call(heads, function (h) {
        var hp = probs(h);
        if (sum === null) { sum = new Float64Array(hp.length); }
        for (var k = 0; k < hp.length; k++) { sum[k] += hp[k] / heads.length; }
      });
      img.__p = sum || new Float64Array(0);
    }
    return img.__p;
  }
  function showTip(e) {
    var img = e.target, att = img.closest(".att");
    var t = Number(att.getAttribute("data-t"));
    var i = Math.min(t - 1, Math.floor(e.offsetY / img.clientHeight * t));
    var j = Math.min(t - 1, Math.floor(e.offsetX / img.clientWidth * t));
    if (i < 0 || j < 0) { tip.hidden = true; return; }
    var tokens = (att.getAttribute("data-tokens") || "").split(" ");
    function pos(k) { return k + (tokens[k] !== undefined && tokens[k] !== "" ? " (token " + tokens[k] + ")" : ""); }
    var text = att.getAttribute("data-enc") + " · " + img.getAttribute("data-label") + " · query " + pos(i) +
      " → key " + pos(j) + ": ";
    if (j > i) { text += "future position (masked)"; }
    else {
      var p = probs(img)[i * (i + 1) / 2 + j];
      text += p === 0 ? "p < 0.00001" : "p ≈ " + (p >= 0.01 ? p.toFixed(3) : p.toPrecision(2));
    }
    tip.textContent = text;
    tip.hidden = false;
    tip.style.left = (e.clientX + 14) + "px";
    tip.style.top = (e.clientY + 14) + "px";
  }
  each("img.attmap", function (img) {
    img.addEventListener("mousemove", showTip);
    img.addEventListener("mouseleave", function () { tip.hidden = true; });
  });
})();
