/* qkv views: the matrix, cell and derivation views shared by qkv's two pages, the offline page
   (qkv.explain.page inlines this file before page.js) and `qkv serve` (serve it as a file, load it
   before app.js). Plain browser JavaScript: no build step, no modules, no network. It formats and
   draws numbers it is given; it never computes attention.

   window.qkvViews (V below):

   Colour and numbers
     V.setStyle({gamma, stops, masked, ticks})   the one colour scale (qkv.explain.style: the page's
                                    payload, serve's /api/style); masked: [r, g, b] or "#rrggbb"
     V.colour(w) → [r, g, b]        a weight w in [0, 1] (clamped): the stops at w^γ
     V.colourOf(v, top) → [r, g, b] v on a scale from 0 to top (a sum of N rows of weights: top = N)
     V.fmt(v, digits) → string      fixed decimals, a true minus "−", ∞ / −∞ / NaN, never "−0.00"
     V.fmtInt(n, exp) → string      the exact decimal of the integer n · 10^−exp (n a Number or BigInt)
     V.decimal(text) → {n: BigInt, exp} | null   a shown number read back exactly ("−0.125" → −125, 3)
     V.el(tag, cls, text) → Element; V.esc(text) → HTML-escaped text

   Legend
     V.legend({top = 1, label, masked, width = 220}) → Element: the colour bar, ticks (style ticks × top,
                                    placed at (t/top)^γ), the masked swatch (when masked is a text) and
                                    the label. Its canvas is the first <canvas>; ticks are .qkv-ticks span.

   The matrix view (rows = queries, columns = keys)
     var m = V.matrix(box, grid)    builds its nodes into box; grid = {tq, tk, qTokens, kTokens,
                                    value(i, j) → number, text(i, j) → string, masked(i, j) → bool}
     m.draw(opts)                   opts {cell: px, top: 1 (the scale's maximum), rows: [i…] (outlined),
                                    frame: [i, j] (the clicked cell), read: [[i, j]…], write: [[i, j]…]
                                    (the cells a step reads and writes), maskedText}
                                    Labels are DOM nodes (.qkv-mx-row / .qkv-mx-col, data-index): a label
                                    that fits its column is written upright ("I" stays "I"), a longer
                                    one turned to read bottom-up.
     m.cellAt(event) → [i, j] | null            the cell under a mouse event
     m.cellPoint(i, j) → {x, y}                 a cell's centre in the window's coordinates
     m.canvas, m.geometry {cell, left, top}     left/top: the label margins
     V.fitCell(n, width) → px                   a cell size (1 … 44) that fits n columns in width px

   The derivation of one cell
     V.cellRows(src, at, words) → rows          one row per recorded step, in order: q, k, q·k, scaled,
                                    [biased], [modified], [mask], weight, value row, output row
                                    at {h, kv, i, j, rotated}: head, key/value head (GQA), query, key
     V.derivation(box, title, rows)             draws them: <h3>title</h3><table> with tr[data-step]
                                    and the numbers in span[data-step] (vectors "[a, b, c]")
     words: the page.* words of qkv.explain.texts without "page." (qrow, krow, rotated, score, scaled,
            biased, modified, mask, allowed, blocked, share, masked, sum1, value, out, not_recorded)

   A Source is what the views read numbers from:
     {has(step) → bool, shape(step) → [A, B, C], value(step, a, b, c) → number,
      text(step, a, b, c) → the shown decimal, formula(step) → string, masked(h, i, j) → bool}
     a is clamped to A − 1 (a one-head mask broadcasts over heads); 2-D steps are read as (1, B, C).
     V.jsonSource(trace, prefix, digits) builds one from a Trace's JSON ({steps: [{name, shape,
     values, formula}]}, values may be "inf" / "-inf" / "nan"), e.g. serve's /api/trace.
*/
(function () {
  "use strict";
  if (window.qkvViews) return;
  var V = {};

  // ------------------------------------------------------------------ colour and numbers
  var STYLE = { gamma: 0.5, stops: [[247, 251, 255], [8, 48, 107]], masked: [217, 217, 217], ticks: [0, 0.1, 0.5, 1] };
  function rgbOf(c) {
    if (typeof c !== "string") return c;
    var h = c.replace("#", "");
    return [parseInt(h.slice(0, 2), 16), parseInt(h.slice(2, 4), 16), parseInt(h.slice(4, 6), 16)];
  }
  V.setStyle = function (style) {
    style = style || {};
    if (style.gamma) STYLE.gamma = style.gamma;
    if (style.stops) STYLE.stops = style.stops;
    if (style.masked) STYLE.masked = rgbOf(style.masked);
    if (style.ticks) STYLE.ticks = style.ticks;
  };
  V.style = function () { return STYLE; };
  V.colour = function (w) {
    var stops = STYLE.stops, t = Math.pow(Math.max(0, Math.min(1, w)), STYLE.gamma) * (stops.length - 1);
    var k = Math.min(Math.floor(t), stops.length - 2), f = t - k, a = stops[k], b = stops[k + 1];
    if (!(t === t)) return stops[0].slice();         // NaN: the scale's start
    return [Math.round(a[0] + f * (b[0] - a[0])), Math.round(a[1] + f * (b[1] - a[1])), Math.round(a[2] + f * (b[2] - a[2]))];
  };
  V.colourOf = function (v, top) { return V.colour(v / (top || 1)); };
  // whether text on the colour of v (scale 0 … top) should be white
  V.dark = function (v, top) { return Math.pow(Math.max(0, Math.min(1, v / (top || 1))), STYLE.gamma) > 0.6; };

  V.fmt = function (v, digits) {
    if (typeof v === "string") v = v === "inf" ? Infinity : v === "-inf" ? -Infinity : NaN;
    if (v === Infinity) return "∞";
    if (v === -Infinity) return "−∞";
    if (v !== v) return "NaN";
    var s = v.toFixed(digits === undefined ? 4 : digits);
    if (/^-0(\.0*)?$/.test(s)) s = s.slice(1);
    return s.replace("-", "−");
  };
  V.fmtInt = function (n, exp) {
    var negative = n < 0, s = String(negative ? -n : n);
    if (exp > 0) { while (s.length <= exp) s = "0" + s; s = s.slice(0, s.length - exp) + "." + s.slice(s.length - exp); }
    return (negative ? "−" : "") + s;
  };
  V.decimal = function (text) {
    var m = /^([−-]?)(\d+)(?:\.(\d+))?$/.exec(String(text).trim());
    if (!m) return null;
    var frac = m[3] || "", n = BigInt(m[2] + frac);
    return { n: m[1] ? -n : n, exp: frac.length };
  };

  V.el = function (tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  };
  var el = V.el;
  V.esc = function (t) {
    return String(t).replace(/[&<>"]/g, function (c) { return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]; });
  };
  var esc = V.esc;

  // ------------------------------------------------------------------ legend
  V.legend = function (opts) {
    opts = opts || {};
    var top = opts.top || 1, w = opts.width || 220, h = 12;
    var box = el("div", "qkv-legend"), c = document.createElement("canvas");
    c.width = w; c.height = h; c.style.width = w + "px"; c.style.height = h + "px";
    var g = c.getContext("2d");
    for (var x = 0; x < w; x++) {
      var rgb = V.colour(Math.pow(x / (w - 1), 1 / STYLE.gamma)); g.fillStyle = "rgb(" + rgb.join(",") + ")"; g.fillRect(x, 0, 1, h);
    }
    var scale = el("div", "qkv-scale"); scale.style.width = w + "px";   // the bar and its ticks, one width
    scale.appendChild(c);
    var ticks = el("div", "qkv-ticks");
    STYLE.ticks.forEach(function (t) {
      var value = t * top, s = el("span", null, String(Math.round(value * 1000) / 1000));
      s.style.left = (Math.pow(t, STYLE.gamma) * 100) + "%"; ticks.appendChild(s);
    });
    scale.appendChild(ticks);
    box.appendChild(scale);
    if (opts.masked) { box.appendChild(el("span", "qkv-masked-swatch")); }
    if (opts.label) box.appendChild(el("span", "qkv-note qkv-legend-label", opts.label));
    return box;
  };

  // ------------------------------------------------------------------ the matrix view
  V.fitCell = function (n, width) { return Math.max(1, Math.min(44, Math.floor(width / Math.max(1, n)))); };

  var LABEL_FONT = "11px system-ui, -apple-system, 'Segoe UI', 'Noto Sans', 'Noto Sans CJK KR', NanumGothic, sans-serif";
  V.matrix = function (box, grid) {
    var wrap = el("div", "qkv-mx"), canvas = document.createElement("canvas"), labels = el("div", "qkv-mx-labels");
    canvas.className = "qkv-mx-cells";
    wrap.appendChild(labels); wrap.appendChild(canvas); box.appendChild(wrap);
    var measure = document.createElement("canvas").getContext("2d"); measure.font = LABEL_FONT;
    var view = { canvas: canvas, box: wrap, geometry: { cell: 1, left: 0, top: 0 } }, labelKey = "";

    function widthOf(t) { return measure.measureText(t).width; }

    function layLabels(cell) {        // DOM labels, rebuilt only when the cell size changes
      var key = cell + "/" + grid.tq + "/" + grid.tk;
      if (key === labelKey) return;
      labelKey = key; labels.textContent = "";
      if (cell < 12) { view.geometry.left = view.geometry.top = 0; return; }
      var mL = 0, mT = 14, upright = [];
      grid.qTokens.forEach(function (t) { mL = Math.max(mL, widthOf(t)); });
      grid.kTokens.forEach(function (t, j) {
        var w = widthOf(t); upright[j] = w <= cell - 3;
        if (!upright[j]) mT = Math.max(mT, Math.min(90, w) + 6);
      });
      mL = Math.min(90, Math.ceil(mL)) + 8; mT = Math.ceil(mT) + 2;
      view.geometry.left = mL; view.geometry.top = mT;
      grid.qTokens.forEach(function (t, i) {
        var d = el("div", "qkv-mx-row", t); d.setAttribute("data-index", i); d.title = i + ": " + t;
        d.style.cssText = "top:" + (mT + i * cell) + "px;width:" + (mL - 4) + "px;height:" + cell + "px;line-height:" + cell + "px";
        labels.appendChild(d);
      });
      grid.kTokens.forEach(function (t, j) {
        var d = el("div", "qkv-mx-col" + (upright[j] ? "" : " qkv-mx-turned"), t); d.setAttribute("data-index", j); d.title = j + ": " + t;
        d.style.cssText = "left:" + (mL + j * cell) + "px;width:" + cell + "px;" + (upright[j]
          ? "top:" + (mT - 16) + "px;height:14px;line-height:14px"      // upright, just above its column
          : "top:0;height:" + (mT - 3) + "px;line-height:" + cell + "px");   // turned, reading bottom-up
        labels.appendChild(d);
      });
    }

    view.draw = function (opts) {
      opts = opts || {};
      var dpr = window.devicePixelRatio || 1, cell = Math.max(1, Math.round(opts.cell || 20)), top = opts.top || 1;
      layLabels(cell);
      var mL = view.geometry.left, mT = view.geometry.top, tq = grid.tq, tk = grid.tk;
      view.geometry.cell = cell;
      var width = tk * cell, height = tq * cell;
      wrap.style.width = (mL + width) + "px"; wrap.style.height = (mT + height) + "px";
      canvas.style.left = mL + "px"; canvas.style.top = mT + "px";
      canvas.width = Math.ceil(width * dpr); canvas.height = Math.ceil(height * dpr);
      canvas.style.width = width + "px"; canvas.style.height = height + "px";
      var g = canvas.getContext("2d");
      var pw = canvas.width, ph = canvas.height, image = g.createImageData(pw, ph);
      var colours = new Array(tq * tk), side = cell * dpr, hatch = side >= 6, masked = STYLE.masked;
      for (var i = 0; i < tq; i++) for (var j = 0; j < tk; j++) colours[i * tk + j] = grid.masked(i, j) ? null : V.colourOf(grid.value(i, j), top);
      for (var y = 0; y < ph; y++) {
        var row = Math.min(tq - 1, Math.floor(y / side));
        for (var x = 0; x < pw; x++) {
          var col = Math.min(tk - 1, Math.floor(x / side)), c = colours[row * tk + col], o = (y * pw + x) * 4;
          if (c === null) {             // masked: grey, hatched when the cell is big enough to show it
            var line = hatch && ((Math.floor(x - col * side) + Math.floor(y - row * side)) % 6 < 1.2);
            c = line ? [140, 140, 140] : masked;
          }
          image.data[o] = c[0]; image.data[o + 1] = c[1]; image.data[o + 2] = c[2]; image.data[o + 3] = 255;
        }
      }
      g.putImageData(image, 0, 0);
      g.setTransform(dpr, 0, 0, dpr, 0, 0);
      if (cell >= 40) {                 // the numbers themselves, when they fit
        g.textAlign = "center"; g.textBaseline = "middle"; g.font = Math.min(11, Math.floor(cell / 4.2)) + "px ui-monospace, monospace";
        for (var a = 0; a < tq; a++) for (var b = 0; b < tk; b++) {
          var off = grid.masked(a, b);
          g.fillStyle = !off && V.dark(grid.value(a, b), top) ? "#fff" : "#222";
          g.fillText(off ? (opts.maskedText || "−∞") : grid.text(a, b), (b + 0.5) * cell, (a + 0.5) * cell, cell - 2);
        }
      }
      g.lineWidth = 2;
      g.strokeStyle = "#d1495b";
      (opts.rows || []).forEach(function (q) { if (q < tq) g.strokeRect(1, q * cell + 1, width - 2, Math.max(1, cell - 2)); });
      g.setLineDash([4, 3]); g.strokeStyle = "#e08a00";
      (opts.read || []).forEach(function (c) { g.strokeRect(c[1] * cell + 1.5, c[0] * cell + 1.5, Math.max(1, cell - 3), Math.max(1, cell - 3)); });
      g.setLineDash([]); g.strokeStyle = "#111"; g.lineWidth = 3;
      (opts.write || []).forEach(function (c) { g.strokeRect(c[1] * cell + 1.5, c[0] * cell + 1.5, Math.max(1, cell - 3), Math.max(1, cell - 3)); });
      if (opts.frame) {
        g.strokeStyle = "#111"; g.lineWidth = 2;
        g.strokeRect(opts.frame[1] * cell + 1, opts.frame[0] * cell + 1, Math.max(2, cell - 2), Math.max(2, cell - 2));
      }
      Array.prototype.forEach.call(labels.children, function (d) {     // the chosen rows' labels stand out
        var on = d.classList.contains("qkv-mx-row") && (opts.rows || []).indexOf(+d.getAttribute("data-index")) >= 0;
        d.classList.toggle("qkv-on", on);
      });
    };
    view.cellAt = function (e) {
      var r = canvas.getBoundingClientRect(), cell = view.geometry.cell;
      var j = Math.floor((e.clientX - r.left) / cell), i = Math.floor((e.clientY - r.top) / cell);
      return (i >= 0 && j >= 0 && i < grid.tq && j < grid.tk) ? [i, j] : null;
    };
    view.cellPoint = function (i, j) {
      var r = canvas.getBoundingClientRect(), cell = view.geometry.cell;
      return { x: r.left + (j + 0.5) * cell, y: r.top + (i + 0.5) * cell };
    };
    return view;
  };

  // ------------------------------------------------------------------ the derivation of one cell
  function vectorHtml(src, step, a, b) {
    var s = src.shape(step), parts = [];
    for (var d = 0; d < s[2]; d++) parts.push('<span class="qkv-n">' + esc(src.text(step, a, b, d)) + "</span>");
    return '<span class="qkv-vec" data-step="' + step + '">[' + parts.join(", ") + "]</span>";
  }
  V.vectorHtml = vectorHtml;
  function numberHtml(src, step, h, i, j) {
    return '<span class="qkv-num qkv-n" data-step="' + step + '">' + esc(src.text(step, h, i, j)) + "</span>";
  }
  V.numberHtml = numberHtml;

  V.cellRows = function (src, at, W) {
    var h = at.h, kv = at.kv, i = at.i, j = at.j, turned = at.rotated ? " " + W.rotated : "", rows = [];
    function add(step, label, html) { rows.push({ step: step, label: label, html: html }); }
    function with_(step, fn) { return src.has(step) ? fn() : null; }
    var masked = src.has("mask") && src.masked(h, i, j);
    add("q_heads", W.qrow + turned, with_("q_heads", function () { return vectorHtml(src, "q_heads", h, i); }));
    add("k_heads", W.krow + turned, with_("k_heads", function () { return vectorHtml(src, "k_heads", kv, j); }));
    add("scores", W.score, with_("scores", function () { return numberHtml(src, "scores", h, i, j); }));
    var f = src.has("scaled_scores") ? src.formula("scaled_scores") : "";
    add("scaled_scores", W.scaled + (f ? "  (" + f + ")" : ""), with_("scaled_scores", function () { return numberHtml(src, "scaled_scores", h, i, j); }));
    if (src.has("biased_scores")) add("biased_scores", W.biased, numberHtml(src, "biased_scores", h, i, j));
    if (src.has("modified_scores")) {
      f = src.formula("modified_scores");
      add("modified_scores", W.modified + (f ? "  (" + f + ")" : ""), numberHtml(src, "modified_scores", h, i, j));
    }
    if (src.has("mask")) add("mask", W.mask, '<span data-step="mask">' + esc(masked ? W.blocked : W.allowed) + "</span>");
    add("weights", W.share, masked ? '<span class="qkv-num" data-step="weights">' + esc(W.masked) + "</span>" :
      with_("weights", function () { return numberHtml(src, "weights", h, i, j) + ' <span class="qkv-note">(' + esc(W.sum1) + ")</span>"; }));
    add("v_heads", W.value + " v[" + j + "]", with_("v_heads", function () { return vectorHtml(src, "v_heads", kv, j); }));
    add("out", W.out, with_("out", function () { return vectorHtml(src, "out", h, i); }));
    return rows;
  };

  V.derivation = function (box, title, rows, W) {
    box.textContent = "";
    if (title) box.appendChild(el("h3", null, title));
    var table = el("table");
    rows.forEach(function (r) {
      var tr = el("tr"), a = el("th", null, r.label), b = el("td");
      a.scope = "row";
      if (r.html === null || r.html === undefined) { b.className = "qkv-missing"; b.textContent = (W && W.not_recorded) || "—"; }
      else b.innerHTML = r.html;
      if (r.step) tr.setAttribute("data-step", r.step);
      tr.appendChild(a); tr.appendChild(b); table.appendChild(tr);
    });
    var wrap = el("div", "qkv-table-scroll"); wrap.appendChild(table); box.appendChild(wrap);
    return table;
  };

  // ------------------------------------------------------------------ a Source over a Trace's JSON (serve)
  function num(v) { return typeof v === "string" ? (v === "inf" ? Infinity : v === "-inf" ? -Infinity : NaN) : v; }
  V.jsonSource = function (trace, prefix, digits) {
    prefix = prefix || "";
    function step(name) {
      for (var i = trace.steps.length - 1; i >= 0; i--) if (trace.steps[i].name === prefix + name) return trace.steps[i];
      return null;
    }
    function as3(s) {
      if (!s) return null;
      var sh = s.shape;
      if (sh.length === 3) return { shape: sh, v: s.values };
      if (sh.length === 2) return { shape: [1, sh[0], sh[1]], v: [s.values] };
      return null;
    }
    var cache = {};
    function get(name) { if (!(name in cache)) cache[name] = as3(step(name)); return cache[name]; }
    function raw(name, a, b, c) { var s = get(name); return s.v[Math.min(a, s.shape[0] - 1)][b][c]; }
    return {
      has: function (name) { return !!get(name); },
      shape: function (name) { return get(name).shape; },
      value: function (name, a, b, c) { var v = raw(name, a, b, c); return typeof v === "boolean" ? +v : num(v); },
      text: function (name, a, b, c) { var v = raw(name, a, b, c); return typeof v === "boolean" ? String(+v) : V.fmt(num(v), digits); },
      formula: function (name) { var s = step(name); return (s && s.formula) || ""; },
      masked: function (h, i, j) {
        if (!get("mask")) return false;
        var v = raw("mask", h, i, j);
        return typeof v === "boolean" ? !v : num(v) === -Infinity;
      }
    };
  };

  window.qkvViews = V;
})();
