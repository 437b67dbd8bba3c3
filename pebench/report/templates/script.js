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
      th.title = "sort by this column";
      th.addEventListener("click", function () { sortBy(table, index, th); });
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(table, index, th); }
      });
    });
  });
  var box = document.getElementById("filter");
  if (box) {
    box.addEventListener("input", function () {
      var q = box.value.trim().toLowerCase();
      Array.prototype.forEach.call(document.querySelectorAll("[data-filter]"), function (el) {
        el.hidden = q !== "" && el.getAttribute("data-filter").toLowerCase().indexOf(q) < 0;
      });
    });
  }
})();
