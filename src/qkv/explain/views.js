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
     V.contrast(a, b) → 1 … 21      the WCAG contrast ratio of two colours; V.ink(rgb) → "#000" | "#fff", the
                                    one that contrasts more with rgb (always ≥ 4.58:1)
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
                                    value(i, j) → number, text(i, j) → string, masked(i, j) → bool,
                                    qBase, kBase: the numbers a label's tooltip gives query row 0 and key
                                    column 0, as the page numbers them (default 0)}
     m.draw(opts)                   opts {cell: px, top: 1 (the scale's maximum), rows: [i…] (outlined),
                                    frame: [i, j] (the clicked cell), read: [[i, j]…], write: [[i, j]…]
                                    (the cells a step reads and writes), maskedText}
                                    Labels are DOM nodes (.qkv-mx-row / .qkv-mx-col, data-index): a label
                                    that fits its column is written upright ("I" stays "I"), a longer
                                    one turned to read bottom-up.
     m.keys({current, choose})                  the keyboard: the canvas is reached with Tab (tabindex 0,
                                    role img, aria-label grid.label); ↑ ↓ ← → Home End move from current() and
                                    call choose(i, j), as Enter / Space do for the current cell
     m.inks                                     after a draw: [{i, j, fill, ink}] each written number's cell
                                    colour and text colour (V.ink: the one of black / white that contrasts more)
     m.cellAt(event) → [i, j] | null            the cell under a mouse event
     m.cellPoint(i, j) → {x, y}                 a cell's centre in the window's coordinates
     m.canvas, m.geometry {cell, left, top}     left/top: the label margins
     V.fitCell(n, width) → px                   a cell size (1 … 44) that fits n columns in width px

   The derivation of one cell
     V.cellRows(src, at, words) → rows          one row per recorded step, in order: q, k, q·k, scaled,
                                    [biased], [modified], [mask], weight, value row, output row
                                    at {h, kv, i, j, rotated, base, given}: head, key/value head (GQA), query, key
                                    (indices from 0); base: the number shown for row 0 (1 where the post
                                    counts tokens from 1, payload.tokenBase; default 0); given: the
                                    scores were typed in, not computed as q·k (the group meeting)
     V.derivation(box, title, rows)             draws them: <h3>title</h3><table> with tr[data-step]
                                    and the numbers in span[data-step] (vectors "[a, b, c]")
     words: the page.* words of qkv.explain.texts without "page." (qrow, krow, rotated, score, scaled,
            biased, modified, mask, allowed, blocked, share, masked, sum1, value, out, not_recorded)

   The guided step-through (X → W → q, k, v → q·k → ÷√d_k → softmax → weights × v → z → concat → W_O → R + Y)
     V.steps(src, ctx, words) → [{id, title, text, html, read, write}]   the steps src records, in order;
                                    ctx {h, kv, i, j, qTokens, kTokens, headLabel(h), heads, base (as in cellRows), qBase (the number
                                    shown for query row 0 where it is not base: a meeting's question)}; read/write:
                                    [[i, j]…] cells of the weights matrix the step reads / writes (softmax
                                    writes row i, weights × v and z read it; for m.draw); in html, numbers a step reads carry .qkv-read, those it writes
                                    .qkv-write. Every number is a recorded one; the only arithmetic is on
                                    shown decimals (exact products and sums, BigInt), and an equation is
                                    written "=" only when it holds at the shown precision, else "≈" or the
                                    recorded value is named as computed from unrounded numbers.
     V.flowSteps(src, ctx, words)  the same for a trace with no weights (heads → concat → W_O → Y); ctx may
                                    add headNumber(h) → the number a reader sees, written z⁽ⁿ⁾
     V.stepper(box, words, onStep, hint) → {set(steps, keep), go(k), next(), prev(), index(), steps()}: the panel
                                    (previous / next buttons, step list, the step's text and numbers);
                                    the caller wires the ← → keys to next/prev.

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
  // WCAG 2 contrast: relative luminance of an sRGB colour, and the ratio of two colours (1 … 21)
  V.luminance = function (rgb) {
    var c = rgbOf(rgb).map(function (x) { x /= 255; return x <= 0.04045 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4); });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  };
  V.contrast = function (a, b) {
    var la = V.luminance(a), lb = V.luminance(b);
    return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
  };
  // the text colour for a background: black or white, whichever contrasts more (one of them always
  // reaches 4.58:1, above WCAG AA's 4.5:1, whatever the background)
  V.ink = function (rgb) { return V.contrast(rgb, [0, 0, 0]) >= V.contrast(rgb, [255, 255, 255]) ? "#000" : "#fff"; };

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
    c.setAttribute("role", "img");          // the bar itself: its ticks and label below say the same in words
    c.setAttribute("aria-label", opts.label || "0 … " + top);
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
    // the keyboard reaches every cell as the mouse does: Tab to the matrix, the arrow keys move the chosen
    // cell (view.keys); a screen reader hears the label, and the caller's line under the matrix (aria-live)
    canvas.tabIndex = 0;
    canvas.setAttribute("role", "img");
    if (grid.label) canvas.setAttribute("aria-label", grid.label);
    wrap.appendChild(labels); wrap.appendChild(canvas); box.appendChild(wrap);
    var measure = document.createElement("canvas").getContext("2d"); measure.font = LABEL_FONT;
    var view = { canvas: canvas, box: wrap, geometry: { cell: 1, left: 0, top: 0 }, inks: [] }, labelKey = "";
    canvas.qkvMatrix = view;          // tests and tools reach the view from its canvas

    function widthOf(t) { return measure.measureText(t).width; }

    function layLabels(cell) {        // DOM labels, rebuilt only when the cell size changes
      var key = cell + "\u0000" + grid.qTokens.join("\u0001") + "\u0000" + grid.kTokens.join("\u0001");
      if (key === labelKey) return;
      labelKey = key; labels.textContent = "";
      if (cell < 12) { view.geometry.left = view.geometry.top = 0; return; }
      var mL = 0, mT = 14, upright = [];
      grid.qTokens.forEach(function (t) { mL = Math.max(mL, widthOf(t)); });
      grid.kTokens.forEach(function (t, j) {
        var w = widthOf(t); upright[j] = w <= cell - 3;
        if (!upright[j]) mT = Math.max(mT, Math.min(90, w) + 6);
      });
      mL = Math.min(96, Math.ceil(mL * 1.08)) + 10; mT = Math.ceil(mT) + 2;    // room for the bold chosen row
      view.geometry.left = mL; view.geometry.top = mT;
      grid.qTokens.forEach(function (t, i) {
        var d = el("div", "qkv-mx-row", t); d.setAttribute("data-index", i); d.title = (i + (grid.qBase || 0)) + ": " + t;
        d.style.cssText = "top:" + (mT + i * cell) + "px;width:" + (mL - 4) + "px;height:" + cell + "px;line-height:" + cell + "px";
        labels.appendChild(d);
      });
      grid.kTokens.forEach(function (t, j) {
        var d = el("div", "qkv-mx-col" + (upright[j] ? "" : " qkv-mx-turned"), t); d.setAttribute("data-index", j); d.title = (j + (grid.kBase || 0)) + ": " + t;
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
      view.inks = [];                   // each written number's cell colour and text colour (for tests and tools)
      if (cell >= 40) {                 // the numbers themselves, when they fit
        g.textAlign = "center"; g.textBaseline = "middle"; g.font = Math.min(11, Math.floor(cell / 4.2)) + "px ui-monospace, monospace";
        for (var a = 0; a < tq; a++) for (var b = 0; b < tk; b++) {
          var off = grid.masked(a, b);
          g.fillStyle = V.ink(off ? masked : colours[a * tk + b]);     // chosen by contrast with the cell's colour
          view.inks.push({ i: a, j: b, fill: off ? masked : colours[a * tk + b], ink: g.fillStyle });
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
    // keys({current() → [i, j], choose(i, j)}): ↑ ↓ ← → move the chosen cell, Home / End to the row's first /
    // last key, Enter and Space choose the current one; the arrows go no further than the matrix's edge
    var MOVES = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    view.keys = function (opts) {
      canvas.addEventListener("keydown", function (e) {
        if (e.altKey || e.ctrlKey || e.metaKey) return;
        var move = MOVES[e.key], at = opts.current(), c;
        if (move) c = [Math.min(grid.tq - 1, Math.max(0, at[0] + move[0])), Math.min(grid.tk - 1, Math.max(0, at[1] + move[1]))];
        else if (e.key === "Home") c = [at[0], 0];
        else if (e.key === "End") c = [at[0], grid.tk - 1];
        else if (e.key === "Enter" || e.key === " ") c = at;
        else return;
        e.preventDefault(); e.stopPropagation();        // the arrows move the cell here, not the step-through
        opts.choose(c[0], c[1]);
      });
    };
    view.cellPoint = function (i, j) {
      var r = canvas.getBoundingClientRect(), cell = view.geometry.cell;
      return { x: r.left + (j + 0.5) * cell, y: r.top + (i + 0.5) * cell };
    };
    return view;
  };

  // ------------------------------------------------------------------ the derivation of one cell
  // a recorded scale of exactly 1 ("Q·Kᵀ · 1"): the scaled scores are the scores
  var IDENTITY_SCALE = /·\s*1\s*$/;
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
    if (src.has("q_heads") || src.has("k_heads")) {   // scores given as they are (the group meeting): no q, k
      add("q_heads", W.qrow + turned, with_("q_heads", function () { return vectorHtml(src, "q_heads", h, i); }));
      add("k_heads", W.krow + turned, with_("k_heads", function () { return vectorHtml(src, "k_heads", kv, j); }));
    }
    // scores typed in (the group meeting: at.given) are labelled as given, not as q·k
    var givenScores = at.given && W.score_given;
    add("scores", givenScores ? W.score_given : W.score, with_("scores", function () { return numberHtml(src, "scores", h, i, j); }));
    var f = src.has("scaled_scores") ? src.formula("scaled_scores") : "";
    // the recorded formula when there is one ("scaled score = Q·Kᵀ · 0.707107 (= 1/√d_k)": one notation,
    // no brackets inside brackets); else "÷ √d_k" only where the scale is 1/√d_k, "× the scale" otherwise
    // (given scores have no Q·Kᵀ to name: their scale alone)
    var scaledLabel = f && W.scaled_is && !givenScores ? fill(W.scaled_is, { formula: f })
      : /1\/√d_k/.test(f) || !W.scaled_by ? W.scaled : W.scaled_by;
    if (!IDENTITY_SCALE.test(f))        // a scale of 1 leaves the scores as they are: no row that repeats them
      add("scaled_scores", scaledLabel, with_("scaled_scores", function () { return numberHtml(src, "scaled_scores", h, i, j); }));
    if (src.has("biased_scores")) add("biased_scores", W.biased, numberHtml(src, "biased_scores", h, i, j));
    if (src.has("modified_scores")) {
      f = src.formula("modified_scores");
      add("modified_scores", f && W.modified_is ? fill(W.modified_is, { formula: f }) : W.modified, numberHtml(src, "modified_scores", h, i, j));
    }
    if (src.has("mask")) add("mask", W.mask, '<span data-step="mask">' + esc(masked ? W.blocked : W.allowed) + "</span>");
    add("weights", W.share, masked ? '<span class="qkv-num" data-step="weights">' + esc(W.masked) + "</span>" :
      with_("weights", function () { return numberHtml(src, "weights", h, i, j) + ' <span class="qkv-note">(' + esc(W.sum1) + ")</span>"; }));
    add("v_heads", fill(W.value, { j: j + (at.base || 0) }), with_("v_heads", function () { return vectorHtml(src, "v_heads", kv, j); }));
    // a weight is not a contribution: what key j adds to the output is ‖wⱼ·vⱼ‖, and its share of the sum (recorded)
    if (src.has("contributions") && W.contribution)
      add("contributions", W.contribution, masked ? null : numberHtml(src, "contributions", h, i, j) +
        (src.has("shares") ? ' <span class="qkv-note">(' + esc(fill(W.contribution_share, { share: src.text("shares", h, i, j) })) + ")</span>" : ""));
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

  // ------------------------------------------------------------------ exact arithmetic on shown decimals
  // A shown number is read back as {n, exp} (value n·10^−exp, n a BigInt); products and sums of
  // those are exact, so an equation built from them is true as printed.
  function dec(text) { return V.decimal(text); }
  function mulD(a, b) { return { n: a.n * b.n, exp: a.exp + b.exp }; }
  function align(a, exp) { var k = exp - a.exp, n = a.n; while (k-- > 0) n *= 10n; return n; }
  function addD(a, b) { var e = Math.max(a.exp, b.exp); return { n: align(a, e) + align(b, e), exp: e }; }
  function showD(a) {                 // exact, trailing zeros after the point dropped
    var t = V.fmtInt(a.n, a.exp);
    if (t.indexOf(".") >= 0) t = t.replace(/0+$/, "").replace(/\.$/, "");
    return t === "−0" ? "0" : t;
  }
  function sameD(a, b) { var e = Math.max(a.exp, b.exp); return align(a, e) === align(b, e); }
  // does the exact a round to the shown r (r has r.exp decimals)? |a − r| ≤ ½·10^−r.exp
  function roundsTo(a, r) {
    var e = Math.max(a.exp, r.exp) + 1, diff = align(a, e) - align(r, e), half = 5n;
    for (var k = 0; k < e - r.exp - 1; k++) half *= 10n;
    if (diff < 0n) diff = -diff;
    return diff <= half;
  }
  V.exact = { dec: dec, mul: mulD, add: addD, show: showD, same: sameD, roundsTo: roundsTo };

  function span(cls, text) { return '<span class="qkv-n' + (cls ? " " + cls : "") + '">' + esc(text) + "</span>"; }
  // "a×b + c×d = p + q = S ≈ R": terms [[aText, bText]…], recorded text R
  function productSum(terms, recorded, W, opts) {
    opts = opts || {};
    var total = { n: 0n, exp: 0 }, left = [], mid = [], ok = true;
    terms.forEach(function (t) {
      var a = dec(t[0]), b = dec(t[1]);
      if (!a || !b) { ok = false; return; }
      var p = mulD(a, b); total = addD(total, p);
      left.push(span(opts.aCls, t[0]) + " × " + span(opts.bCls, t[1]));
      mid.push(span("", showD(p)));
    });
    if (!ok || !terms.length) return null;
    var r = dec(recorded), html = left.join(" + ");
    if (terms.length > 1) html += " = " + mid.map(function (m, k) {     // "p − q", not "p + −q"
      var negative = m.indexOf("−") >= 0;
      return (k === 0 ? "" : negative ? " − " : " + ") + (k > 0 && negative ? m.replace("−", "") : m);
    }).join("");
    html += " = " + span("", showD(total));
    if (r && sameD(total, r)) return html.replace(/ = <span class="qkv-n">[^<]*<\/span>$/, "") + " = " + span("qkv-write", recorded);
    if (r && roundsTo(total, r)) return html + " ≈ " + span("qkv-write", recorded);
    return html + '; <span class="qkv-note">' + esc(W.from_unrounded) + "</span> " + span("qkv-write", recorded);
  }
  V.productSum = productSum;

  function rowTexts(src, step, a, b) { var s = src.shape(step), out = []; for (var c = 0; c < s[2]; c++) out.push(src.text(step, a, b, c)); return out; }

  // a slice [a] of a recorded step as a table; mark(r, c) → "qkv-read" | "qkv-write" | ""
  function tableHtml(src, step, a, opts) {
    var s = src.shape(step), R = s[1], C = s[2], rows = [], cols = [];
    function pick(n, limit, keep) {   // all, or the first ones, those kept (the followed row), the last two; −1: a gap
      var out = [], k;
      if (n <= limit) { for (k = 0; k < n; k++) out.push(k); return out; }
      var wanted = {};
      for (k = 0; k < limit - 4; k++) wanted[k] = true;
      (keep || []).forEach(function (x) { if (x >= 0 && x < n) wanted[x] = true; });
      wanted[n - 2] = wanted[n - 1] = true;
      Object.keys(wanted).map(Number).sort(function (a, b) { return a - b; }).forEach(function (x) {
        if (out.length && out[out.length - 1] !== x - 1) out.push(-1);
        out.push(x);
      });
      return out;
    }
    var rowIdx = opts.rows || pick(R, 12, opts.keepRows), colIdx = opts.cols || pick(C, 12, opts.keepCols);
    var mark = opts.mark || function () { return ""; };
    var html = '<table class="qkv-mt" data-step="' + esc(step) + '"><caption>' + esc(opts.caption || step) +
      ' <span class="qkv-note">(' + R + " × " + C + ")</span></caption><tr><th></th>";
    colIdx.forEach(function (c) { html += "<th>" + (c < 0 ? "…" : esc(opts.colLabel ? opts.colLabel(c) : String(c))) + "</th>"; });
    html += "</tr>";
    rowIdx.forEach(function (r) {
      if (r < 0) { html += '<tr><th>⋮</th>' + colIdx.map(function () { return "<td></td>"; }).join("") + "</tr>"; return; }
      html += "<tr><th>" + esc(opts.rowLabel ? opts.rowLabel(r) : String(r)) + "</th>";
      colIdx.forEach(function (c) {
        if (c < 0) { html += "<td>…</td>"; return; }
        var m = mark(r, c);
        html += '<td class="qkv-n' + (m ? " " + m : "") + '">' + esc(src.text(step, a, r, c)) + "</td>";
      });
      html += "</tr>";
    });
    return '<div class="qkv-table-scroll">' + html + "</table></div>";
  }
  V.tableHtml = tableHtml;
  // {name} → the value; {n:token|tokens} → "1 token", "2 tokens" (texts.py's counts, same form)
  // a token whose name is its own number (the projection example's tokens, a row "2") is not glossed by it: texts.unglossed
  function unglossed(text) {
    return text.replace(/“((?:(?:token|토큰) )?(\d+))”((?:[가-힣]+(?: [가-힣]+)?)?) ?\((?:token|토큰|query|Query) \2\)/g, "$1$3")
      .replace(/(^|[^\d.])(\d+) “(?:(?:token|토큰) )?\2”/g, "$1$2");
  }
  function fill(text, values) {
    return unglossed(String(text || "").replace(/\{(\w+)(?::([^|{}]*)\|([^{}]*))?\}/g, function (m, k, one, many) {
      if (!(k in values)) return m;
      return one === undefined ? values[k] : values[k] + " " + (String(values[k]) === "1" ? one : many);
    }));
  }
  V.fill = fill;
  V.unglossed = unglossed;            // for labels the pages put together themselves (query 3 “토큰 3” → query 3)
  function line(html) { return '<div class="qkv-eq">' + html + "</div>"; }
  function q(t) { return "“" + t + "”"; }

  V.steps = function (src, ctx, W) {
    var h = ctx.h, kv = ctx.kv, i = ctx.i, j = ctx.j, steps = [], tok = ctx.qTokens[i];
    var tq = ctx.qTokens.length, tk = ctx.kTokens.length, hn = ctx.headLabel(h);
    var zText = ctx.heads > 1 ? "st.z.text.head" : "st.z.text";
    var qLabel = function (r) { return ctx.qTokens[r] !== undefined ? ctx.qTokens[r] : String(r); };
    var kLabel = function (r) { return ctx.kTokens[r] !== undefined ? ctx.kTokens[r] : String(r); };
    var rowI = function (r) { return r === i ? "qkv-read" : ""; };
    var allRow = []; for (var c0 = 0; c0 < tk; c0++) allRow.push([i, c0]);
    // a line per key: every key up to 12, else the first 11 and the focused key j, with a note saying so
    var someKeys = [];
    for (var c1 = 0; c1 < tk && (tk <= 12 || c1 < 11); c1++) someKeys.push(c1);
    if (someKeys.indexOf(j) < 0 && j < tk) someKeys.push(j);
    var someNote = someKeys.length < tk ? '<p class="qkv-note">' + esc(fill(W["st.some_keys"], { n: someKeys.length, m: tk })) + "</p>" : "";
    // q, k, v of this head: the recorded heads, or a plain q, k, v (T, D) where one head is all there is
    function pick(heads, plain, n) { return src.has(heads) ? heads : (ctx.heads || 1) <= 1 && src.has(plain) && src.shape(plain)[1] === n ? plain : null; }
    var qName = pick("q_heads", "q", tq), kName = pick("k_heads", "k", tk), vName = pick("v_heads", "v", tk);
    var qa = qName === "q_heads" ? h : 0, ka = kName === "k_heads" ? kv : 0, va = vName === "v_heads" ? kv : 0;
    var dk = qName ? src.shape(qName)[2] : kName ? src.shape(kName)[2] : 0;
    var headCols = function (step) {        // the columns of W (or Q, K, V) that head h reads
      if (!src.has(step) || ctx.heads <= 1) return null;
      var width = src.shape(step)[2], per = width / ctx.heads, g = step === "w_q" || step === "q" ? h : kv;
      return Number.isInteger(per) ? [g * per, (g + 1) * per - 1] : null;
    };
    function inCols(cols, c) { return !cols || (c >= cols[0] && c <= cols[1]); }

    if (src.has("x")) {
      var sx = src.shape("x"), html = tableHtml(src, "x", 0, { caption: "X", rowLabel: qLabel, mark: rowI, keepRows: [i] });
      var text = fill(W["st.x.text"], { t: sx[1], d: sx[2], tok: q(tok), i: i + (ctx.qBase !== undefined ? ctx.qBase : ctx.base || 0) });
      if (src.has("memory")) {
        var sm = src.shape("memory");
        text = fill(W["st.x.cross"], { tq: sx[1], tk: sm[1], tok: q(tok) });
        html += tableHtml(src, "memory", 0, { caption: W["st.memory"], rowLabel: kLabel });
      }
      steps.push({ id: "x", title: W["st.x"], text: text, html: html, read: [], write: [] });
    }
    if (src.has("w_q") || src.has("w_k") || src.has("w_v")) {
      html = ""; var cols = null;
      ["w_q", "w_k", "w_v"].forEach(function (name) {
        if (!src.has(name)) return;
        var hc = headCols(name); cols = cols || hc;
        html += tableHtml(src, name, 0, { caption: name.replace("w_", "W_").toUpperCase().replace("W_", "W_"),
          mark: function (r, c) { return hc && inCols(hc, c) ? "qkv-read" : ""; } });
      });
      var ws = src.shape(src.has("w_q") ? "w_q" : src.has("w_k") ? "w_k" : "w_v");
      text = fill(W["st.w.text"], { d: ws[1], w: ws[2] });
      if (cols) text += " " + fill(W["st.w.head"], { hn: hn, a: cols[0], b: cols[1] });
      steps.push({ id: "w", title: W["st.w"], text: text, html: html, read: [], write: [] });
    }
    if (qName || kName) {               // (a V given on its own, the group meeting's answers, is read in "weights × v")
      html = "";
      if (qName) html += tableHtml(src, qName, qa, { keepRows: [i], caption: ctx.heads > 1 ? "q (" + hn + ")" : "q", rowLabel: qLabel,
        mark: function (r) { return r === i ? "qkv-write" : ""; } });
      if (kName) html += tableHtml(src, kName, ka, { caption: "k", rowLabel: kLabel });
      if (vName) html += tableHtml(src, vName, va, { caption: "v", rowLabel: kLabel });
      // one entry as a sum of products: q[i][first column of this head] = x[i] · W_Q[:, column]
      var qc = headCols("w_q"), col = qc ? qc[0] : 0;
      if (src.has("x") && src.has("w_q") && qName && !src.has("rotated") && src.shape("x")[2] <= 16 && src.shape("w_q")[1] === src.shape("x")[2]) {
        var terms = [];
        for (var d = 0; d < src.shape("x")[2]; d++) terms.push([src.text("x", 0, i, d), src.text("w_q", 0, d, col)]);
        var eq = productSum(terms, src.text(qName, qa, i, qName === "q_heads" ? col - (qc ? qc[0] : 0) : col), W, { aCls: "qkv-read", bCls: "qkv-read" });
        if (eq) html += line("q[" + q(tok) + "][0] = x[" + q(tok) + "] · W_Q[:, " + col + "] = " + eq);
      }
      var rope = src.has("rotated") ? " " + W.rotated : "";
      steps.push({ id: "qkv", title: W["st.qkv"], text: W["st.qkv.text"] + rope, html: html, read: [], write: [] });
    }
    if (src.has("scores")) {
      html = "";
      var detail = qName && kName ? (tk * dk <= 48 ? ctx.kTokens.map(function (t, c) { return c; }) : [j]) : [];
      detail.forEach(function (jj) {
        var terms = [];
        for (var d = 0; d < dk; d++) terms.push([src.text(qName, qa, i, d), src.text(kName, ka, jj, d)]);
        var eq = productSum(terms, src.text("scores", h, i, jj), W, { aCls: "qkv-read", bCls: "qkv-read" });
        if (eq) html += line("q·k[" + q(kLabel(jj)) + "] = " + eq);
      });
      if (detail.length && detail.length < tk) html += '<p class="qkv-note">' + esc(fill(W["st.dot.one"], { key: q(kLabel(j)), n: tk })) + "</p>";
      html += tableHtml(src, "scores", h, { caption: (!qName || !kName) && W.score_given ? W.score_given : W.score, rows: [i], rowLabel: qLabel, colLabel: kLabel, keepCols: [j],
        mark: function () { return "qkv-write"; } });
      var given = !qName || !kName;     // scores typed in (the group meeting), not q·k
      steps.push({ id: "dot", title: W[given ? "st.scores" : "st.dot"], text: fill(W[given ? "st.scores.text" : "st.dot.text"], { tok: q(tok), dk: dk }),
        html: html, read: [], write: [] });
    }
    // a scale of exactly 1 (the group meeting's given scores; ÷√d_k switched off at factor 1) scales nothing:
    // no step of its own, softmax reads the scores as they are
    var unscaled = src.has("scaled_scores") && IDENTITY_SCALE.test(src.formula("scaled_scores"));
    if (src.has("scaled_scores") && !unscaled) {
      var formula = src.formula("scaled_scores"), byRoot = /1\/√d_k/.test(formula) && dk > 0;
      var factor = (/·\s*([0-9.eE+-]+)/.exec(formula) || [])[1];
      html = "";
      if (src.has("scores")) {
        for (var n1 = 0; n1 < someKeys.length; n1++) {
          var jj = someKeys[n1];
          var sc = src.text("scores", h, i, jj), ss = src.text("scaled_scores", h, i, jj);
          var sv = Number(sc.replace("−", "-")), target = Number(ss.replace("−", "-")), div = byRoot ? Math.sqrt(dk) : 1 / Number(factor || 1);
          var holds = isFinite(sv) && Math.abs(sv / div - target) <= 0.5 * Math.pow(10, -(ss.split(".")[1] || "").length) + 1e-12;
          var sign = holds ? " = " : " ≈ ";
          if (!byRoot) {                // a printed factor: "=" only when the product of the shown numbers is the result
            var fd = dec(factor || ""), sd = dec(sc), td = dec(ss);
            holds = !!(fd && sd && td && roundsTo(mulD(sd, fd), td));
            sign = holds && sameD(mulD(sd, fd), td) ? " = " : " ≈ ";
          }
          html += line(q(kLabel(jj)) + ": " + span("qkv-read", sc) + (byRoot ? " ÷ √" + dk : " × " + esc(factor || "?")) +
            sign + span("qkv-write", ss) + (holds ? "" : ' <span class="qkv-note">' + esc(W.from_unrounded_short) + "</span>"));
        }
        html += someNote;
      }
      text = byRoot ? fill(W["st.scale.text"], { dk: dk }) : fill(W["st.scale.given"], { formula: formula });
      steps.push({ id: "scale", title: byRoot ? W["st.scale"] : W["st.scale.other"], text: text, html: html, read: [], write: [] });
    }
    var anyMasked = false;
    if (src.has("mask")) for (var m = 0; m < tk; m++) if (src.masked(h, i, m)) anyMasked = true;
    if (anyMasked || src.has("biased_scores") || src.has("modified_scores")) {
      html = "";
      ["biased_scores", "modified_scores"].forEach(function (name) {
        if (src.has(name)) html += tableHtml(src, name, h, { caption: name, rows: [i], rowLabel: qLabel, colLabel: kLabel, mark: function () { return "qkv-write"; } });
      });
      if (src.has("mask")) {
        var cells = ctx.kTokens.map(function (t, c) { return q(t) + ": " + (src.masked(h, i, c) ? W.blocked : W.allowed); });
        html += line(cells.join("; "));
      }
      steps.push({ id: "mask", title: W["st.mask"], text: W["st.mask.text"], html: html, read: [], write: [] });
    }
    if (src.has("weights")) {
      html = "";
      var exps = src.has("exp_scores") && src.has("exp_sum");
      if (exps) {
        var total = src.text("exp_sum", h, i, 0), parts = [], sumD = { n: 0n, exp: 0 }, okSum = true;
        if (src.has("softmax_max")) html += line("m = " + span("qkv-read", src.text("softmax_max", h, i, 0)) + ' <span class="qkv-note">' + esc(W["st.softmax.m"]) + "</span>");
        for (var k2 = 0; k2 < tk; k2++) {
          if (src.has("mask") && src.masked(h, i, k2)) continue;
          var e = src.text("exp_scores", h, i, k2), de = dec(e);
          if (de) sumD = addD(sumD, de); else okSum = false;
          parts.push(span("qkv-write", e));
        }
        var dt = dec(total), sumHolds = okSum && dt && roundsTo(sumD, dt);
        html += line("Σ e^(s − m) = " + parts.join(" + ") + (sumHolds ? (sameD(sumD, dt) ? " = " : " ≈ ") : " → ") + span("qkv-write", total) +
          (sumHolds ? "" : ' <span class="qkv-note">' + esc(W.from_unrounded_short) + "</span>"));
        for (var n2 = 0; n2 < someKeys.length; n2++) {
          k2 = someKeys[n2];
          var wtxt = src.text("weights", h, i, k2);
          if (src.has("mask") && src.masked(h, i, k2)) { html += line(q(kLabel(k2)) + ": " + esc(W.masked) + " → " + span("qkv-write", wtxt)); continue; }
          var et = src.text("exp_scores", h, i, k2), ed = dec(et), wd = dec(wtxt), ok = false;
          if (ed && dt && wd && dt.n !== 0n) {   // e/Σ rounds to w  ⇔  |e − w·Σ| ≤ ½·10^−wexp·Σ (all exact)
            var E = Math.max(ed.exp, wd.exp + dt.exp) + 1, lhs = align(ed, E) - align({ n: wd.n * dt.n, exp: wd.exp + dt.exp }, E);
            var bound = align({ n: 5n * (dt.n < 0n ? -dt.n : dt.n), exp: dt.exp + wd.exp + 1 }, E);
            ok = (lhs < 0n ? -lhs : lhs) <= bound;
          }
          html += line(q(kLabel(k2)) + ": " + span("qkv-read", et) + " / " + span("qkv-read", total) + (ok ? " = " : " ≈ ") + span("qkv-write", wtxt) +
            (ok ? "" : ' <span class="qkv-note">' + esc(W.from_unrounded_short) + "</span>"));
        }
        html += someNote;
      } else {
        html += '<p class="qkv-note">' + esc(W["st.softmax.norec"]) + "</p>";
        html += tableHtml(src, "weights", h, { caption: W.weight, rows: [i], rowLabel: qLabel, colLabel: kLabel, mark: function () { return "qkv-write"; } });
      }
      steps.push({ id: "softmax", title: W["st.softmax"], text: W["st.softmax.text"], html: html, read: [], write: allRow });
    }
    // the value rows: v_heads of this key/value head, or a plain v (T, Dv) where that is what was recorded
    var vh = va;
    if (src.has("weights") && vName && src.has("out")) {
      var dv = src.shape(vName)[2], shownCols = Math.min(dv, 4);
      html = "";
      for (var n3 = 0; n3 < someKeys.length; n3++) {
        var k3 = someKeys[n3];
        var wt = src.text("weights", h, i, k3), vrow = rowTexts(src, vName, vh, k3), prods = [];
        for (var c = 0; c < dv; c++) { var a1 = dec(wt), b1 = dec(vrow[c]); prods.push(a1 && b1 ? showD(mulD(a1, b1)) : "?"); }
        html += line(q(kLabel(k3)) + ": " + span("qkv-read", wt) + " × [" + vrow.map(function (t) { return span("qkv-read", t); }).join(", ") + "] = [" +
          prods.map(function (t) { return span("qkv-write", t); }).join(", ") + "]");
      }
      html += someNote;
      steps.push({ id: "weighted", title: W["st.weighted"], text: W["st.weighted.text"], html: html, read: allRow, write: [] });
      html = "";
      for (c = 0; c < shownCols; c++) {
        var terms2 = [];
        for (var k4 = 0; k4 < tk; k4++) if (!(src.has("mask") && src.masked(h, i, k4))) terms2.push([src.text("weights", h, i, k4), src.text(vName, vh, k4, c)]);
        var eq2 = tk <= 32 ? productSum(terms2, src.text("out", h, i, c), W, { aCls: "qkv-read", bCls: "qkv-read" }) : null;
        if (eq2) html += line("z[" + c + "] = " + eq2);
      }
      if (dv > shownCols) html += '<p class="qkv-note">' + esc(fill(W["st.first_cols"], { n: shownCols, m: dv })) + "</p>";
      html += line("z[" + q(tok) + "] = " + vectorHtml(src, "out", h, i).replace('class="qkv-vec"', 'class="qkv-vec qkv-write"'));
      steps.push({ id: "z", title: W["st.z"], text: fill(W[zText], { tok: q(tok), hn: hn }), html: html, read: allRow, write: [] });
    } else if (src.has("out")) {
      steps.push({ id: "z", title: W["st.z"], text: fill(W[zText], { tok: q(tok), hn: hn }),
        html: line("z = " + vectorHtml(src, "out", h, i)), read: [], write: [] });
    }
    return steps.concat(V.flowSteps(src, ctx, W, true));
  };

  // concat → W_O → Y → R + Y (after the heads), or the whole story of a trace without weights
  V.flowSteps = function (src, ctx, W, after) {
    var i = ctx.i, steps = [], tok = ctx.qTokens[i] !== undefined ? ctx.qTokens[i] : String(i), html;
    var qLabel = function (r) { return ctx.qTokens[r] !== undefined ? ctx.qTokens[r] : String(r); };
    var heads = src.has("out") ? src.shape("out")[0] : 0, rowOf = Math.min(i, src.has("out") ? src.shape("out")[1] - 1 : 0);
    if (!after && heads) {
      html = "";
      for (var h = 0; h < heads; h++) {       // the post's own notation: z⁽¹⁾ is head 1
        var sup = ctx.headNumber ? "⁽" + String(ctx.headNumber(h)).replace(/\d/g, function (c) { return "⁰¹²³⁴⁵⁶⁷⁸⁹"[+c]; }) + "⁾" : "";
        html += line(esc(ctx.headLabel(h)) + ": z" + sup + " = " + vectorHtml(src, "out", h, rowOf).replace('class="qkv-vec"', 'class="qkv-vec qkv-read"'));
      }
      steps.push({ id: "heads", title: W["st.heads"], text: fill(W["st.heads.text"], { n: heads, tok: q(tok) }), html: html, read: [], write: [] });
    }
    if (src.has("concat")) {
      var cr = Math.min(i, src.shape("concat")[1] - 1), width = src.shape("concat")[2], per = heads ? width / heads : 0;
      var hOn = after ? ctx.h : -1;
      html = tableHtml(src, "concat", 0, { caption: "Concat", rows: [cr], rowLabel: qLabel,
        colLabel: function (c) { return Number.isInteger(per) && per ? ctx.headLabel(Math.floor(c / per)).replace(/^\D+/, "h") + "·" + (c % per) : String(c); },
        mark: function (r, c) { return Number.isInteger(per) && per && Math.floor(c / per) === hOn ? "qkv-read qkv-write" : "qkv-write"; } });
      steps.push({ id: "concat", title: W["st.concat"], text: fill(W["st.concat.text"], { n: heads || "?" }), html: html, read: [], write: [] });
    }
    if (src.has("w_o") && src.has("y") && src.has("concat")) {
      var yr = Math.min(i, src.shape("y")[1] - 1), cr2 = Math.min(i, src.shape("concat")[1] - 1), cols = src.shape("y")[2], wide = src.shape("w_o")[1];
      html = tableHtml(src, "w_o", 0, { caption: "W_O" });
      var shown = Math.min(cols, 4), skipped = false, f = src.formula("y");
      var yName = outputName(src);
      if (wide <= 16) for (var c = 0; c < shown; c++) {
        var terms = [];
        for (var d = 0; d < wide; d++) {
          var wv = src.text("w_o", 0, d, c), dv = dec(wv);
          if (dv && dv.n === 0n) { skipped = true; continue; }
          terms.push([src.text("concat", 0, cr2, d), wv]);
        }
        var eq = productSum(terms, src.text("y", 0, yr, c), W, { aCls: "qkv-read", bCls: "qkv-read" });
        if (eq) html += line(esc(yName) + "[" + c + "] = " + eq);
      }
      if (skipped) html += '<p class="qkv-note">' + esc(W["st.zero_terms"]) + "</p>";
      if (cols > shown) html += '<p class="qkv-note">' + esc(fill(W["st.first_cols"], { n: shown, m: cols })) + "</p>";
      html += line(esc(yName) + "[" + q(tok) + "] = " + vectorHtml(src, "y", 0, yr).replace('class="qkv-vec"', 'class="qkv-vec qkv-write"'));
      steps.push({ id: "wo", title: W["st.wo"], text: W["st.wo.text"] + (f ? " (" + f + ")" : ""), html: html, read: [], write: [] });
    }
    if (src.has("residual") && src.has("y") && src.has("x")) {
      var rr = Math.min(i, src.shape("residual")[1] - 1), n = src.shape("residual")[2], parts = [];
      for (var c2 = 0; c2 < n && c2 < 8; c2++) {
        var a = src.text("x", 0, rr, c2), b = src.text("y", 0, rr, c2), r = src.text("residual", 0, rr, c2), da = dec(a), db = dec(b), dr = dec(r);
        var sum = da && db ? addD(da, db) : null, ok = sum && dr && roundsTo(sum, dr);
        parts.push(line("[" + c2 + "]: " + span("qkv-read", a) + " + " + span("qkv-read", b) + (ok ? (sameD(sum, dr) ? " = " : " = " + span("", showD(sum)) + " ≈ ") : " → ") + span("qkv-write", r)));
      }
      html = parts.join("") + (n > 8 ? '<p class="qkv-note">' + esc(fill(W["st.first_cols"], { n: 8, m: n })) + "</p>" : "");
      steps.push({ id: "residual", title: W["st.residual"], text: W["st.residual.text"], html: html, read: [], write: [] });
    }
    return steps;
  };

  // The picture of multi-head's last steps, from the recorded numbers only: each head's output z⁽ⁿ⁾ (one
  // row per head, tinted in the head's colour), their concat (each number keeps its head's tint), W_O (its
  // rows in bands of the head they multiply) and y. Every number is written as text (a screen reader reads
  // the tables); show(id) marks the part the step-through's step id ("heads", "concat", "wo") is about.
  // ctx {i, heads, headNumber(h), colours: ["#rrggbb"…] (qkv.explain.style.HEAD_COLOURS), token}
  V.flowPicture = function (box, src, ctx, W) {
    var fig = el("figure", "qkv-flowpic"), row = el("div", "qkv-flowpic-row");
    fig.appendChild(el("figcaption", null, fill(W.flow_picture, { tok: "“" + (ctx.token || "") + "”" })));
    var H = ctx.heads || 1, colours = ctx.colours || [], num = ctx.headNumber || function (h) { return h; };
    function tint(h) {                  // the head's colour mixed with 80 % white: dark text stays readable on it
      var c = rgbOf(colours[h % Math.max(1, colours.length)] || "#cccccc");
      return "rgb(" + c.map(function (x) { return Math.round(x + 0.8 * (255 - x)); }).join(",") + ")";
    }
    function edge(h) { return colours[h % Math.max(1, colours.length)] || "#999"; }
    function cell(text, h, cls) {
      var td = el("td", "qkv-n" + (cls ? " " + cls : ""), text);
      if (h !== null) { td.style.background = tint(h); td.style.boxShadow = "inset 0 -3px 0 " + edge(h); }
      return td;
    }
    function block(id, title) {
      var b = el("div", "qkv-flowpic-block"); b.setAttribute("data-part", id);
      b.appendChild(el("div", "qkv-flowpic-title", title)); row.appendChild(b); return b;
    }
    function arrow(text) { row.appendChild(el("div", "qkv-flowpic-arrow", text)); }
    var out = src.shape("out"), dv = out[2], zr = Math.min(ctx.i || 0, out[1] - 1);
    var zs = block("heads", W["st.heads"]), t = el("table", "qkv-flowpic-t");
    for (var h = 0; h < out[0]; h++) {
      var tr = el("tr"); tr.appendChild(el("th", null, "z" + sup(num(h))));
      for (var d = 0; d < dv; d++) tr.appendChild(cell(src.text("out", h, zr, d), h));
      t.appendChild(tr);
    }
    zs.appendChild(t);
    if (src.has("concat")) {
      arrow("→");
      var cs = src.shape("concat"), cr = Math.min(ctx.i || 0, cs[1] - 1), width = cs[2], per = Math.max(1, Math.round(width / H));
      // one small table per head's columns, side by side: a phone wraps them instead of cutting the row
      var cb = block("concat", W["st.concat"]), groups = el("div", "qkv-flowpic-groups"), ct = null, ctr = null;
      for (var c = 0; c < width; c++) {
        if (c % per === 0) { ct = el("table", "qkv-flowpic-t"); ctr = el("tr"); ct.appendChild(ctr); groups.appendChild(ct); }
        ctr.appendChild(cell(src.text("concat", 0, cr, c), Math.floor(c / per)));
      }
      cb.appendChild(groups);
      cb.appendChild(el("div", "qkv-note", "1 × " + width));
      if (src.has("w_o")) {
        arrow("×");
        var ws = src.shape("w_o"), wb = block("wo", "W_O"), wt = el("table", "qkv-flowpic-t");
        for (var r = 0; r < ws[1]; r++) {
          var wr = el("tr");
          for (var c2 = 0; c2 < ws[2]; c2++) wr.appendChild(cell(src.text("w_o", 0, r, c2), Math.floor(r / per)));
          wt.appendChild(wr);
        }
        wb.appendChild(wt); wb.appendChild(el("div", "qkv-note", ws[1] + " × " + ws[2]));
        if (src.has("y")) {
          arrow("=");
          var ys = src.shape("y"), yr = Math.min(ctx.i || 0, ys[1] - 1), yb = block("y", outputName(src)), yt = el("table", "qkv-flowpic-t"), ytr = el("tr");
          for (var c3 = 0; c3 < ys[2]; c3++) ytr.appendChild(cell(src.text("y", 0, yr, c3), null, "qkv-flowpic-y"));
          yt.appendChild(ytr); yb.appendChild(yt); yb.appendChild(el("div", "qkv-note", "1 × " + ys[2]));
        }
      }
    }
    fig.appendChild(row); box.appendChild(fig);
    return {
      node: fig,
      show: function (id) {            // the step's parts: z for "heads", z → concat for "concat", concat × W_O = y for "wo"
        var on = { heads: ["heads"], concat: ["heads", "concat"], wo: ["concat", "wo", "y"] }[id] || [];
        Array.prototype.forEach.call(row.querySelectorAll(".qkv-flowpic-block"), function (b) {
          b.classList.toggle("qkv-on", on.indexOf(b.getAttribute("data-part")) >= 0);
        });
        fig.setAttribute("data-step", id || "");
      }
    };
  };
  // The output projection's result as the post names it (z_final, from its formula "z_final = Concat(…)·W_O"),
  // else Y: the step-through's line and the multi-head picture's block both say it.
  function outputName(src) {
    return (/^\s*([^=\s(]+)\s*=/.exec(src.formula("y") || "") || [])[1] || "Y";
  }
  function sup(n) {
    var map = { "0": "⁰", "1": "¹", "2": "²", "3": "³", "4": "⁴", "5": "⁵", "6": "⁶", "7": "⁷", "8": "⁸", "9": "⁹" };
    return "⁽" + String(n).split("").map(function (c) { return map[c] || c; }).join("") + "⁾";
  }

  // the step-through panel
  V.stepper = function (box, W, onStep, hint) {
    box.textContent = "";
    box.appendChild(el("h3", null, W.stepper));
    var bar = el("div", "qkv-stepbar");
    var prev = el("button", "qkv-prev", W.prev), next = el("button", "qkv-next", W.next);
    prev.type = next.type = "button";
    var where = el("span", "qkv-stepnum");
    bar.appendChild(prev); bar.appendChild(next); bar.appendChild(where);
    box.appendChild(bar);
    box.appendChild(el("p", "qkv-note", hint || W.stepper_hint));
    var list = el("ol", "qkv-steplist"); box.appendChild(list);
    var title = el("h4", "qkv-steptitle"), text = el("p", "qkv-steptext"), body = el("div", "qkv-stepbody");
    title.setAttribute("aria-live", "polite");      // a screen reader hears the new step's title
    box.appendChild(title); box.appendChild(text); box.appendChild(body);
    var steps = [], index = 0;
    function show() {
      var s = steps[index];
      prev.disabled = index <= 0; next.disabled = index >= steps.length - 1;
      where.textContent = steps.length ? fill(W.step_of, { k: index + 1, n: steps.length }) : "";
      Array.prototype.forEach.call(list.children, function (li, k) { li.classList.toggle("qkv-on", k === index); li.setAttribute("aria-current", k === index ? "step" : "false"); });
      title.textContent = s ? s.title : ""; text.textContent = s ? s.text : ""; body.innerHTML = s ? s.html : "";
      box.setAttribute("data-step", s ? s.id : "");
      box.setAttribute("data-index", String(index));
      if (onStep) onStep(s, index);
    }
    var ctl = {
      set: function (list2, keep) {
        var id = steps[index] && steps[index].id;
        steps = list2; list.textContent = "";
        steps.forEach(function (s, k) {
          var li = el("li"), b = el("button", null, s.title); b.type = "button";
          b.addEventListener("click", function () { ctl.go(k); });
          li.appendChild(b); list.appendChild(li);
        });
        var at = 0;
        if (keep && id) steps.forEach(function (s, k) { if (s.id === id) at = k; });
        index = at; show();
      },
      go: function (k) { if (!steps.length) return; index = Math.max(0, Math.min(steps.length - 1, k)); show(); },
      next: function () { ctl.go(index + 1); },
      prev: function () { ctl.go(index - 1); },
      index: function () { return index; },
      steps: function () { return steps; }
    };
    prev.addEventListener("click", ctl.prev);
    next.addEventListener("click", ctl.next);
    return ctl;
  };

  // ------------------------------------------------------------------ practice (qkv.practice's drills)
  // The questions, the true values, the tolerance, the slips and every line said are qkv.practice's, computed in
  // Python (qkv.practice.offline for a page without a server; qkv serve asks its server, which calls
  // qkv.practice.check). Here a typed answer is only read as a number and compared with those values, in the
  // order qkv.practice.check compares them: not a number → right (the recorded or the by-hand value, within one
  // unit of the last printed decimal) → the nearest slip within two units → right to fewer decimals → none.
  var NUMBER = /^[+-]?(?:\d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:[eE][+-]?\d(?:_?\d)*)?$/;  // Python's float()
  function pyRepr(s) {                 // repr() of a Python str, as qkv.practice writes a text that is no number
    var quote = s.indexOf("'") >= 0 && s.indexOf('"') < 0 ? '"' : "'";
    return quote + s.replace(/[\\\n\r\t\x00-\x1f\x7f]/g, function (c) {
      return { "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t" }[c] || "\\x" + ("0" + c.charCodeAt(0).toString(16)).slice(-2);
    }).split(quote).join(quote === "'" ? "\\'" : quote) + quote;
  }
  function closeTo(a, b, tolerance) { return isFinite(b) && Math.abs(a - b) <= tolerance * (1 + 1e-9) + 1e-12; }
  function put(line, name, value) { return String(line).split("{" + name + "}").join(value); }
  function decimalsTyped(typed) {
    var t = typed.replace(/−/g, "-");
    if (/e/i.test(t)) return 99;
    return t.indexOf(".") < 0 ? 0 : t.slice(t.indexOf(".") + 1).length;
  }
  // q: one question of qkv.practice.offline; lines: its drill's lines. → {status, lines, reveal}
  V.practiceCheck = function (q, typed, lines) {
    var raw = String(typed).trim(), t = raw.replace(/−/g, "-"), cut = Array.from(raw).slice(0, 40).join("");
    function said(status, list) { return { status: status, lines: list, reveal: q.reveal }; }
    if (!raw) return said("bad", [lines.empty]);
    var value;
    if (NUMBER.test(t)) value = Number(t.replace(/_/g, ""));
    else if (/^[+-]?(?:inf|infinity)$/i.test(t)) value = Infinity;
    else if (/^[+-]?nan$/i.test(t)) value = NaN;
    else return said("bad", [put(lines.text, "value", pyRepr(cut))]);
    if (isNaN(value)) return said("bad", [put(lines.nan, "value", cut)]);
    if (!isFinite(value)) return said("bad", [put(lines.inf, "value", cut)]);
    if (closeTo(value, q.answer, q.tolerance) || closeTo(value, q.byHand, q.tolerance)) return said("right", [q.right]);
    var best = null;
    q.slips.forEach(function (s) {
      if (closeTo(value, s.value, 2 * q.tolerance) && (!best || Math.abs(s.value - value) < Math.abs(best.value - value))) best = s;
    });
    if (best) return said("wrong", [put(best.line, "yours", raw)]);
    var places = decimalsTyped(raw);
    if (places < q.digits && closeTo(value, q.places[places].rounded, Math.pow(10, -places) / 2 + 1e-12))
      return said("bad", [q.places[places].line]);
    return said("wrong", q.unknown.map(function (line) { return put(line, "yours", raw); }));
  };

  // a line with commands in it ("qkv practice group-meeting --seed 0"): each command one unbreakable <code>
  // (a narrow screen broke them at their hyphens); the text copied is the command as typed
  var COMMAND = /qkv (?:practice|serve)(?: (?:self-attention|cross-attention|multi-head|projection|group-meeting|--[a-z]+|\d+|N))*/g;
  V.withCommands = function (node, text) {
    var at = 0, m;
    node.textContent = "";
    COMMAND.lastIndex = 0;
    while ((m = COMMAND.exec(text))) {
      if (m.index > at) node.appendChild(document.createTextNode(text.slice(at, m.index)));
      node.appendChild(el("code", "qkv-cmd", m[0]));
      at = m.index + m[0].length;
    }
    if (at < text.length) node.appendChild(document.createTextNode(text.slice(at)));
    return node;
  };

  // One drill, question after question (qkv.practice.shown: header, questions, lines). check(k, typed) gives a
  // promise of qkv.practice's verdict on question k. A bad answer is said and asked again (no try used); after
  // `attempts` wrong answers the answer is shown. box gets data-question (0-based), data-status, data-done.
  V.practiceRun = function (box, drill, W, check) {
    box.textContent = "";
    box.setAttribute("data-seed", String(drill.seed)); box.setAttribute("data-fresh", drill.fresh ? "1" : "0");
    box.appendChild(V.withCommands(el("p", "qkv-note qkv-pr-header"), drill.header));
    // the drill's steps in the post's order: the current one marked, each done one ✓ (right) or – (answer shown)
    var steps = el("ol", "qkv-pr-steps");
    drill.questions.forEach(function (q) { steps.appendChild(el("li", null, q.what)); });
    box.appendChild(steps);
    var stage = el("div", "qkv-pr-stage"); box.appendChild(stage);
    function mark(k, how) {
      Array.prototype.forEach.call(steps.children, function (li, n) {
        if (n === k && how) { li.classList.add(how === "right" ? "qkv-pr-ok" : "qkv-pr-shown"); li.setAttribute("data-mark", how); }
        if (how === null) { li.className = ""; li.removeAttribute("data-mark"); }
        li.setAttribute("aria-current", n === k && !how ? "step" : "false");
        li.classList.toggle("qkv-on", n === k && !how);
      });
    }
    var tally = { asked: 0, right: 0, first: 0 }, k = 0, wrong = 0, done = false, busy = false, uid = "qkv-pr-" + Math.random().toString(36).slice(2, 9);
    var input, verdict, next, submit;
    function ask() {
      var q = drill.questions[k];
      stage.textContent = ""; wrong = 0; done = false; tally.asked++;
      if (k === 0) mark(-1, null);
      mark(k);
      box.setAttribute("data-question", String(k)); box.setAttribute("data-status", ""); box.setAttribute("data-done", "0");
      stage.appendChild(el("h4", "qkv-pr-title", q.title));
      q.given.forEach(function (g) { stage.appendChild(el("p", "qkv-pr-given", g)); });
      var form = el("form", "qkv-pr-form");
      var label = el("label", "qkv-pr-ask", q.ask); label.htmlFor = uid;
      input = el("input", "qkv-pr-input"); input.id = uid; input.type = "text"; input.inputMode = "decimal";
      input.autocomplete = "off"; input.spellcheck = false; input.setAttribute("autocapitalize", "off");
      submit = el("button", "qkv-pr-check", W.practice_check); submit.type = "submit";
      form.appendChild(label); var row = el("div", "qkv-pr-row"); row.appendChild(input); row.appendChild(submit); form.appendChild(row);
      stage.appendChild(form);
      verdict = el("div", "qkv-pr-verdict"); verdict.setAttribute("role", "status"); verdict.setAttribute("aria-live", "polite");
      stage.appendChild(verdict);
      next = el("button", "qkv-pr-next", k + 1 < drill.questions.length ? W.practice_next : W.practice_finish);
      next.type = "button"; next.hidden = true; stage.appendChild(next);
      form.addEventListener("submit", function (e) { e.preventDefault(); answer(); });
      next.addEventListener("click", function () { k++; if (k < drill.questions.length) { ask(); input.focus(); } else finish(); });
    }
    function answer() {
      if (done || busy) return;
      busy = true;
      var typed = input.value;
      Promise.resolve(check(k, typed)).then(function (v) {
        busy = false;
        var said = v.lines.slice();
        if (v.status === "right") { tally.right++; if (!wrong) tally.first++; done = true; mark(k, "right"); }
        else if (v.status === "wrong") {
          wrong++;
          if (wrong >= drill.attempts) { said.push(v.reveal); done = true; mark(k, "shown"); } else said.push(drill.lines.again);
        }
        verdict.textContent = "";
        said.forEach(function (line, n) { verdict.appendChild(el("p", n ? "qkv-pr-more" : "qkv-pr-" + v.status, line)); });
        box.setAttribute("data-status", v.status);
        if (done) { input.readOnly = true; submit.disabled = true; next.hidden = false; box.setAttribute("data-done", "1"); next.focus(); }
        else input.select();
      }, function (err) {
        busy = false;
        verdict.textContent = ""; verdict.appendChild(el("p", "qkv-error", String(err && err.message || err)));
        box.setAttribute("data-status", "error");
      });
    }
    function finish() {
      stage.textContent = "";
      box.setAttribute("data-question", String(drill.questions.length)); box.setAttribute("data-done", "1");
      var line = el("p", "qkv-pr-summary", put(put(put(drill.lines.summary, "right", tally.right), "first", tally.first), "asked", tally.asked));
      line.setAttribute("role", "status"); stage.appendChild(line);
      var again = el("button", "qkv-pr-again", W.practice_again); again.type = "button";
      again.addEventListener("click", function () { tally = { asked: 0, right: 0, first: 0 }; k = 0; ask(); input.focus(); });
      stage.appendChild(again); again.focus();
    }
    ask();
    return { tally: function () { return tally; } };
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
