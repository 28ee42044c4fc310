/* qkv interactive attention view. Reads the numbers recorded in a qkv Trace (embedded in the page)
   and draws them; it never computes attention. Every number shown is a recorded value looked up
   and formatted (a sum of selected rows is a sum of the shown integers, so it is exact too).
   Numbers are stored as integers round(x·10^exp), byte-shuffled and deflated, base64 in a JSON
   block: no network is ever used. Words come from the payload (qkv.explain.texts, keys page.*).
   Counting starts at 0 everywhere: layers, heads, tokens. */
(function () {
  "use strict";
  if (window.qkvView) return;

  // ------------------------------------------------------------------ unpacking the numbers
  function fromBase64(text) {
    var bin = atob(text), out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }
  function inflate(bytes) {
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
    return new Response(stream).arrayBuffer().then(function (b) { return new Uint8Array(b); });
  }
  var SIZE = { u8: 1, i16: 2, i32: 4, f64: 8 };
  function unpack(packed) {
    var bytes = fromBase64(packed.data);
    var ready = packed.z ? inflate(bytes) : Promise.resolve(bytes);
    return ready.then(function (u) {
      var size = SIZE[packed.type];
      if (packed.shuffle && size > 1) {          // byte planes back to little-endian numbers
        var n = u.length / size, out = new Uint8Array(u.length);
        for (var b = 0; b < size; b++) { var off = b * n; for (var i = 0; i < n; i++) out[i * size + b] = u[off + i]; }
        u = out;
      }
      var buf = u.buffer.slice(u.byteOffset, u.byteOffset + u.byteLength);
      var data = packed.type === "u8" ? new Uint8Array(buf) : packed.type === "i16" ? new Int16Array(buf)
        : packed.type === "i32" ? new Int32Array(buf) : new Float64Array(buf);
      return { shape: packed.shape, type: packed.type, exp: packed.exp, data: data,
        lo: packed.type === "i16" ? -32768 : -2147483648, hi: packed.type === "i16" ? 32767 : 2147483647 };
    });
  }
  // index of [a, b, c] in a (A, B, C) array; a is clamped so a single-head mask broadcasts over heads
  function at(arr, a, b, c) {
    var s = arr.shape; a = Math.min(a, s[0] - 1);
    return (a * s[1] + b) * s[2] + c;
  }
  function num(arr, idx) {
    var v = arr.data[idx];
    if (arr.type === "f64" || arr.type === "u8") return v;
    if (v === arr.lo) return -Infinity;
    if (v === arr.hi) return Infinity;
    if (v === arr.lo + 1) return NaN;
    return v / Math.pow(10, arr.exp);
  }
  var V = window.qkvViews;            // views.js: colour scale, formatting, matrix and derivation views
  function fmt(arr, idx) {
    var v = arr.data[idx];
    if (arr.type === "f64") return V.fmt(v, arr.exp);
    if (arr.type === "u8") return String(v);
    if (v === arr.lo) return "−∞";
    if (v === arr.hi) return "∞";
    if (v === arr.lo + 1) return "NaN";
    return V.fmtInt(v, arr.exp);
  }
  var el = V.el, esc = V.esc;
  window.qkvPacked = { unpack: unpack, at: at, num: num, fmt: fmt };   // for lenses.js: the same unpacking

  // ← → step through the view the reader last touched (the first one on a page of several, e.g. a
  // notebook), unless a form control has the keys
  function arrowKeys(root, stepper) {
    root.addEventListener("pointerdown", function () { window.qkvActiveView = root.id; });
    root.addEventListener("focusin", function () { window.qkvActiveView = root.id; });
    document.addEventListener("keydown", function (e) {
      if (e.altKey || e.ctrlKey || e.metaKey || (e.key !== "ArrowRight" && e.key !== "ArrowLeft")) return;
      var t = e.target;
      if (t && t.closest && t.closest("select, input, textarea")) return;
      var active = window.qkvActiveView && document.getElementById(window.qkvActiveView) ? window.qkvActiveView
        : (document.querySelector(".qkv-view") || {}).id;
      if (active !== root.id) return;
      if (e.key === "ArrowRight") stepper.next(); else stepper.prev();
      e.preventDefault();
    });
  }

  // ------------------------------------------------------------------ the view
  window.qkvView = function (root, payload) {
    var W = payload.words;
    V.setStyle({ gamma: payload.gamma, stops: payload.stops, ticks: payload.legendTicks });
    var app = root.querySelector(".qkv-app");
    // fresh: the selection is the one the page chose on open; the first click replaces it
    var state = { part: 0, head: 0, hover: null, selected: [], fresh: true, locked: false, cell: null, zoom: 1, width: 0 };
    var cache = {};                    // "part/step" → unpacked array
    var whatIfFollows = null;          // the what-if's redraw, when it follows the chosen query
    var api = { state: state, payload: payload, ready: false };
    root.qkv = api;
    (window.qkvPages = window.qkvPages || {})[root.id] = api;
    var base = payload.headBase || 0;  // a post that numbers its heads from 1 (qkv.trace.head_number)
    function headNumber(h) { return h + base; }
    // a post that numbers its tokens from 1 (qkv.trace.token_number): rows are shown from it, indexed from 0
    var tokenBase = payload.tokenBase || 0;
    function rowNumber(r) { return r + tokenBase; }
    // a query row by the same number as its token: a meeting's question (lot) is the last token of its
    // sentence, row 0 of Q but the 4th of “I have a lot” (the part's qFrom, qkv.explain.parts.Part.q_from)
    function queryNumber(i) { var p = part(); return i + (p.qFrom !== undefined ? p.qFrom : tokenBase); }

    if (payload.lead) app.appendChild(el("p", "qkv-lead", payload.lead));
    if (typeof DecompressionStream === "undefined" && payload.compressed) {
      app.appendChild(el("p", "qkv-error", W.decode_fail)); return;
    }
    if (!payload.parts.length) return flowOnly();

    function part() { return payload.parts[state.part]; }
    function step(name, index) { return cache[(index === undefined ? state.part : index) + "/" + name]; }
    function load(index) {
      var p = payload.parts[index], pending = [];
      Object.keys(p.arrays).forEach(function (name) {
        var key = index + "/" + name;
        if (!cache[key]) pending.push(unpack(p.arrays[name]).then(function (a) { cache[key] = a; }));
      });
      return Promise.all(pending);
    }

    // controls
    var bar = el("div", "qkv-bar");
    var partSelect = el("select"), headSelect = el("select");
    partSelect.className = "qkv-part"; headSelect.className = "qkv-head";
    payload.parts.forEach(function (p, i) { var o = el("option", null, p.label); o.value = i; partSelect.appendChild(o); });
    if (payload.parts.length > 1) {
      var lp = el("label", null, (payload.isModel ? W.layer : W.part) + " "); lp.appendChild(partSelect); bar.appendChild(lp);
    }
    var lh = el("label", null, W.head + " "); lh.appendChild(headSelect); bar.appendChild(lh);
    var lockButton = el("button", "qkv-lock", W.lock); lockButton.type = "button"; bar.appendChild(lockButton);
    var clearButton = el("button", "qkv-clear", W.clear); clearButton.type = "button"; bar.appendChild(clearButton);
    app.appendChild(bar);
    // a page of weights alone (attention_page; a model page of a long text) has nothing to derive a cell from
    var weightsAlone = payload.parts.every(function (p) { return !p.arrays.scores && !p.arrays.q_heads; });
    app.appendChild(el("p", "qkv-note", (weightsAlone ? W.hint_weights : W.hint) + " " + W.matrix_keys));
    app.appendChild(el("p", "qkv-note", (payload.stepDigits ? W.storage_steps : W.storage).replace(/\{d\}/g, payload.digits)));

    // the views in one column, the step-through beside them where the window is wide enough (below on a
    // phone): at 1366 × 900 the first step's text is on the first screen
    var main = el("div", "qkv-main"), col = el("div", "qkv-col");
    main.appendChild(col); app.appendChild(main);
    // overview: a fixed grid, one row per layer (or part), one column per head
    var several = payload.parts.length > 1 || payload.parts[0].heads > 1;
    var overview = el("section", "qkv-panel qkv-overview"), thumbs = el("div", "qkv-thumbs");
    if (several) {
      overview.appendChild(el("h3", null, payload.isModel ? W.overview : payload.parts.length > 1 ? W.overview_parts : W.overview_heads));
      overview.appendChild(thumbs);
      col.appendChild(overview);
    }

    // head view and matrix view
    var views = el("div", "qkv-views");
    var hv = el("div", "qkv-panel qkv-headview"); hv.appendChild(el("h3", null, W.head_view));
    var scroll = el("div", "qkv-hv-scroll"), grid = el("div", "qkv-hv-grid");
    var left = el("div", "qkv-tokens qkv-left"), right = el("div", "qkv-tokens qkv-right");
    var lines = document.createElement("canvas"); lines.className = "qkv-lines";
    lines.setAttribute("role", "img"); lines.setAttribute("aria-label", W.lines_label);
    grid.appendChild(el("div", "qkv-colhead qkv-colhead-q", W.queries_col)); grid.appendChild(el("div"));
    grid.appendChild(el("div", "qkv-colhead qkv-colhead-k", W.keys_col));
    grid.appendChild(left); grid.appendChild(lines); grid.appendChild(right);
    scroll.appendChild(grid); hv.appendChild(scroll);
    var sumLine = el("div", "qkv-info qkv-selection"); hv.appendChild(sumLine);
    var sumLegend = el("div", "qkv-sum-legend"); hv.appendChild(sumLegend);
    views.appendChild(hv);
    var mv = el("div", "qkv-panel qkv-matrix"); mv.appendChild(el("h3", null, W.matrix));
    var zoomBar = el("div", "qkv-zoom");
    var zoomOut = el("button", null, "−"), zoomIn = el("button", null, "+");
    zoomOut.type = zoomIn.type = "button"; zoomOut.title = W.zoom_out; zoomIn.title = W.zoom_in;
    zoomOut.setAttribute("aria-label", W.zoom_out); zoomIn.setAttribute("aria-label", W.zoom_in);
    zoomBar.appendChild(zoomOut); zoomBar.appendChild(zoomIn);
    zoomBar.appendChild(el("span", "qkv-note", "↓ " + W.queries_col + "  → " + W.keys_col));
    mv.appendChild(zoomBar);
    var pan = el("div", "qkv-pan"); mv.appendChild(pan);
    var matrixGrid = {                 // the matrix view reads the shown head's recorded weights
      get tq() { return part().tq; }, get tk() { return part().tk; },
      get qTokens() { return part().qTokens; }, get kTokens() { return part().kTokens; },
      get qBase() { return queryNumber(0); }, kBase: tokenBase,     // a label's tooltip numbers as the page does
      value: function (i, j) { return weight(i, j); },
      text: function (i, j) { var w = step("weights"); return fmt(w, at(w, state.head, i, j)); },
      masked: function (i, j) { return isMasked(i, j); },
      label: W.matrix_label
    };
    var mx = V.matrix(pan, matrixGrid);
    var info = el("div", "qkv-info"); mv.appendChild(info);
    info.setAttribute("aria-live", "polite");        // the cell the arrow keys moved to, read out
    // the hatched swatch and its words only where the mask blocks a cell (payload.masked)
    mv.appendChild(V.legend({ masked: !!payload.masked, label: payload.masked ? W.legend_masked : W.legend }));
    views.appendChild(mv);
    col.appendChild(views);
    var cellBox = el("div", "qkv-panel qkv-cell"); cellBox.hidden = true; col.appendChild(cellBox);
    var stepBox = el("section", "qkv-panel qkv-stepper"); main.appendChild(stepBox);
    var marks = { read: [], write: [] };
    var stepper = V.stepper(stepBox, W, function (s) {
      marks = s ? { read: s.read || [], write: s.write || [] } : { read: [], write: [] };
      root.setAttribute("data-step", s ? s.id : "");
      if (api.ready) drawMatrix();
    });
    app.appendChild(whatIfBox());
    if (payload.practice) app.appendChild(practiceBox());

    var rowH = 18;

    // sizes follow the page's width when a part opens and when the window is resized, never on a
    // click (a click that changed them made the matrix jump and the head view's lines come loose)
    function measure() { state.width = root.clientWidth || 600; }

    function buildTokens() {
      var p = part();
      rowH = Math.max(p.tq, p.tk) <= 64 ? 20 : 14;
      left.textContent = ""; right.textContent = "";
      // every token is a control the keyboard reaches (Tab; Enter or Space acts as a click): a query token
      // chooses that query (aria-pressed: chosen), a key token shows the chosen query's cell with that key
      p.qTokens.forEach(function (t, i) {
        var d = el("div", "qkv-tok", t); d.style.height = rowH + "px"; d.setAttribute("data-index", i); d.title = queryNumber(i) + ": " + t;
        d.tabIndex = 0; d.setAttribute("role", "button"); d.setAttribute("aria-pressed", "false");
        d.setAttribute("aria-label", V.unglossed(W.query + " " + queryNumber(i) + " “" + t + "”"));
        left.appendChild(d);
      });
      p.kTokens.forEach(function (t, j) {
        var d = el("div", "qkv-tok", t); d.style.height = rowH + "px"; d.setAttribute("data-index", j); d.title = rowNumber(j) + ": " + t;
        d.tabIndex = 0; d.setAttribute("role", "button");
        d.setAttribute("aria-label", V.unglossed(W.key + " " + rowNumber(j) + " “" + t + "”"));
        right.appendChild(d);
      });
      headSelect.textContent = "";
      for (var h = 0; h < p.heads; h++) { var o = el("option", null, String(headNumber(h))); o.value = h; headSelect.appendChild(o); }
      headSelect.value = state.head;
      headSelect.parentNode.style.display = p.heads > 1 ? "" : "none";
    }

    // a one-head trace of a model carries the model's numbering (payload.headName); else the head's number
    function headName(h) {
      var n = payload.headName;
      if (part().heads !== 1 || !n) return W.head + " " + headNumber(h);
      return (n.layer !== null && n.layer !== undefined ? W.layer + " " + n.layer + ", " : "") + W.head + " " + n.head;
    }

    function rows() {                  // the query rows shown: the hovered one (unless locked), else the selection
      if (state.hover !== null && !state.locked) return [state.hover];
      return state.selected.slice().sort(function (a, b) { return a - b; });
    }
    function isMasked(i, j) { var m = step("mask"); return m ? m.data[at(m, state.head, i, j)] === 0 : false; }
    function weight(i, j) { var w = step("weights"); return num(w, at(w, state.head, i, j)); }
    // Σ over the shown rows of one key: a sum of the stored integers, so its decimal is exact
    function summed(rs, j) {
      var w = step("weights"), total = 0, masked = 0;
      rs.forEach(function (i) { if (isMasked(i, j)) masked++; else total += w.type === "f64" ? w.data[at(w, state.head, i, j)] * Math.pow(10, w.exp) : w.data[at(w, state.head, i, j)]; });
      return { value: total / Math.pow(10, w.exp), text: masked === rs.length ? W.masked : V.fmtInt(Math.round(total), w.exp) };
    }

    function drawLines() {
      var p = part(), dpr = window.devicePixelRatio || 1, width = linesWidth();
      var height = Math.max(p.tq, p.tk) * rowH;
      lines.width = width * dpr; lines.height = height * dpr;
      lines.style.width = width + "px"; lines.style.height = height + "px";
      var g = lines.getContext("2d"); g.setTransform(dpr, 0, 0, dpr, 0, 0); g.clearRect(0, 0, width, height);
      var rs = rows(), only = rs.length ? {} : null;
      rs.forEach(function (i) { only[i] = true; });
      var buckets = [], gamma = V.style().gamma;          // one path per shade: fast even for 512 × 512 lines
      for (var b = 0; b < 10; b++) buckets.push([]);
      for (var i = 0; i < p.tq; i++) {
        if (only && !only[i]) continue;
        for (var j = 0; j < p.tk; j++) {
          if (isMasked(i, j)) continue;
          var w = Math.pow(weight(i, j), gamma);       // the shared scale, as the matrix
          if (!(w >= (only ? 0.05 : 0.3))) continue;
          buckets[Math.min(9, Math.floor(w * 10))].push(i, j);
        }
      }
      g.lineWidth = only ? 2.5 : 1;
      buckets.forEach(function (pairs, b) {
        if (!pairs.length) return;
        g.strokeStyle = "rgba(" + (only ? "209,73,91," : "43,108,176,") + (0.08 + 0.092 * b).toFixed(3) + ")";
        g.beginPath();
        for (var k = 0; k < pairs.length; k += 2) {
          g.moveTo(0, (pairs[k] + 0.5) * rowH); g.lineTo(width, (pairs[k + 1] + 0.5) * rowH);
        }
        g.stroke();
      });
    }
    function linesWidth() { return Math.max(60, Math.min(180, state.width - 250)); }

    function paintTokens() {
      var p = part(), rs = rows(), chosen = {}, n = rs.length, sum = n > 1;
      rs.forEach(function (i) { chosen[i] = true; });
      Array.prototype.forEach.call(left.children, function (d, i) {
        d.classList.toggle("qkv-active", !!chosen[i]);
        d.classList.toggle("qkv-pinned", state.selected.indexOf(i) >= 0);
        d.setAttribute("aria-pressed", state.selected.indexOf(i) >= 0 ? "true" : "false");
      });
      // one query: its weights on the 0–1 scale; several: their sum on its own scale, 0 to N
      var label = sum ? V.fill(W.sum_of, { n: n }) : W.weight;
      Array.prototype.forEach.call(right.children, function (d, j) {
        var name = V.unglossed(W.key + " " + rowNumber(j) + " “" + p.kTokens[j] + "”");
        if (!n) { d.style.background = ""; d.style.color = ""; d.removeAttribute("data-weight"); d.classList.remove("qkv-masked"); d.title = rowNumber(j) + ": " + p.kTokens[j]; d.setAttribute("aria-label", name); return; }
        var s = summed(rs, j), masked = s.text === W.masked, c = masked ? null : V.colourOf(s.value, n);
        d.classList.toggle("qkv-masked", masked);
        d.style.background = masked ? "" : "rgb(" + c.join(",") + ")";
        d.style.color = masked ? "" : V.ink(c);           // black or white, by contrast with the key's colour
        d.setAttribute("data-weight", s.text);
        d.title = rowNumber(j) + ": " + p.kTokens[j] + " — " + label + " " + s.text;
        d.setAttribute("aria-label", name + ": " + label + " " + s.text);
      });
      root.setAttribute("data-query", rs.join(","));
      root.setAttribute("data-selected", state.selected.slice().sort(function (a, b) { return a - b; }).join(","));
      root.setAttribute("data-scale", String(sum ? n : 1));
      sumLine.textContent = sum ? W.selected + ": " + rs.map(function (i) { return V.unglossed(queryNumber(i) + " “" + p.qTokens[i] + "”"); }).join(", ") + " — " + label : "";
      sumLegend.textContent = "";
      if (sum) sumLegend.appendChild(V.legend({ top: n, width: 160, label: V.fill(W.sum_legend, { n: n }) }));
      lockButton.textContent = state.locked ? W.unlock : W.lock;
      lockButton.setAttribute("aria-pressed", state.locked ? "true" : "false");
    }

    function drawMatrix() {
      var p = part(), n = Math.max(p.tq, p.tk);
      var cell = Math.max(1, Math.round(V.fitCell(n, Math.min(560, Math.max(240, state.width - 120))) * state.zoom));
      mx.draw({ cell: cell, rows: rows(), frame: state.cell, read: marks.read, write: marks.write, maskedText: W.masked });
    }

    // ---------------------------------------------------------------- overview: layer × head grid
    function drawThumbs() {
      if (!several) return;
      thumbs.textContent = "";
      var most = 0, biggest = 0;
      payload.parts.forEach(function (p) { most = Math.max(most, p.heads); biggest = Math.max(biggest, p.tq, p.tk); });
      var labelled = payload.isModel || payload.parts.length > 1;
      // every thumbnail one size, small enough that a row of `most` heads fits the page's width
      var px = Math.max(16, Math.min(56, biggest * 8, Math.floor((state.width - 40 - (labelled ? 90 : 0)) / most) - 10));
      thumbs.style.gridTemplateColumns = (labelled ? "max-content " : "") + "repeat(" + most + ", max-content)";
      if (most > 1) {                 // a header row: "head" in the corner, then the heads' numbers
        thumbs.appendChild(el("span", "qkv-ov-corner", labelled ? W.head + " →" : ""));
        if (!labelled) thumbs.lastChild.remove();
        for (var h0 = 0; h0 < most; h0++) thumbs.appendChild(el("span", "qkv-ov-col", (labelled ? "" : W.head + " ") + headNumber(h0)));
      }
      payload.parts.forEach(function (p, index) {
        var w = step("weights", index);
        if (labelled) thumbs.appendChild(el("span", "qkv-ov-row", p.label));
        for (var h = 0; h < most; h++) {
          if (h >= p.heads) { thumbs.appendChild(el("span")); continue; }
          var box = el("button", "qkv-thumb"); box.type = "button";
          box.setAttribute("data-part", index); box.setAttribute("data-head", h);
          var c = document.createElement("canvas");
          c.setAttribute("aria-hidden", "true");        // the button's label names it
          var sx = p.tk / px, sy = p.tq / px, img;
          c.width = px; c.height = px; c.style.width = px + "px"; c.style.height = px + "px";
          var g = c.getContext("2d"); img = g.createImageData(px, px);
          for (var y = 0; y < px; y++) for (var x = 0; x < px; x++) {
            var top = 0;                // a pixel shows the largest weight of the cells it covers
            for (var i = Math.floor(y * sy); i < Math.max(Math.floor(y * sy) + 1, Math.floor((y + 1) * sy)); i++)
              for (var j = Math.floor(x * sx); j < Math.max(Math.floor(x * sx) + 1, Math.floor((x + 1) * sx)); j++) {
                var v = w.data[at(w, h, i, j)]; if (v > top) top = v;
              }
            var col = V.colour(top / Math.pow(10, w.exp)), o = (y * px + x) * 4;
            img.data[o] = col[0]; img.data[o + 1] = col[1]; img.data[o + 2] = col[2]; img.data[o + 3] = 255;
          }
          g.putImageData(img, 0, 0);
          box.appendChild(c);
          var name = (labelled ? p.label + ", " : "") + (p.heads > 1 || most > 1 ? W.head + " " + headNumber(h) : "");
          box.title = name.replace(/, $/, ""); box.setAttribute("aria-label", box.title);
          thumbs.appendChild(box);
        }
      });
      markThumb();
    }
    function markThumb() {
      if (!several) return;
      Array.prototype.forEach.call(thumbs.querySelectorAll(".qkv-thumb"), function (b) {
        b.classList.toggle("qkv-current", +b.getAttribute("data-part") === state.part && +b.getAttribute("data-head") === state.head);
      });
    }

    // ---------------------------------------------------------------- the derivation of one cell
    function source() {                // the recorded numbers of the shown part, for the shared views
      return {
        has: function (name) { return name === "rotated" ? !!part().rotated : !!step(name); },
        shape: function (name) { return step(name).shape; },
        value: function (name, a, b, c) { var s = step(name); return num(s, at(s, a, b, c)); },
        text: function (name, a, b, c) { var s = step(name); return fmt(s, at(s, a, b, c)); },
        formula: function (name) { return part().formulas[name] || ""; },
        masked: function (h, i, j) { var m = step("mask"); return m ? m.data[at(m, h, i, j)] === 0 : false; }
      };
    }
    function kvHead(h) { var p = part(); return Math.floor(h / Math.max(1, p.heads / p.kvHeads)); }

    function showCell(i, j, fromUser) {
      var p = part(), h = state.head;
      state.cell = [i, j];
      cellBox.hidden = false;
      var title = V.unglossed((weightsAlone ? W.cell_weight : W.derivation) + " — " + (payload.parts.length > 1 ? p.label + ", " : "") +
        headName(h) + ": " + W.query + " " + queryNumber(i) + " “" + p.qTokens[i] + "” → " + W.key + " " + rowNumber(j) + " “" + p.kTokens[j] + "”");
      V.derivation(cellBox, title, V.cellRows(source(), { h: h, kv: kvHead(h), i: i, j: j, rotated: p.rotated, base: tokenBase,
        given: payload.kind === "group-meeting" }, W), W);
      root.setAttribute("data-cell", i + "," + j);
      if (state.selected.indexOf(i) < 0 || state.selected.length !== 1) { state.selected = [i]; state.fresh = false; }
      refresh(true);
      if (fromUser) bringIntoView(cellBox);
    }
    // a phone shows the derivation below the views: bring it up when it starts below the fold
    function bringIntoView(node) {
      var r = node.getBoundingClientRect(), h = window.innerHeight || document.documentElement.clientHeight;
      if (r.top > h * 0.8 || r.bottom < 0) node.scrollIntoView({ block: "start" });
    }

    // ---------------------------------------------------------------- the step-through
    function followed() { var rs = state.selected.length ? state.selected.slice().sort(function (a, b) { return a - b; }) : [part().query || 0]; return rs[0]; }
    function focusKey(i) {              // the clicked key in this row, else the key with the largest weight
      if (state.cell && state.cell[0] === i) return state.cell[1];
      var best = 0, top = -1, p = part();
      for (var j = 0; j < p.tk; j++) { var w = isMasked(i, j) ? -1 : weight(i, j); if (w > top) { top = w; best = j; } }
      return best;
    }
    function rebuildSteps(keep) {
      var p = part(), i = followed(), h = state.head;
      stepper.set(V.steps(source(), { h: h, kv: kvHead(h), i: i, j: focusKey(i), qTokens: p.qTokens, kTokens: p.kTokens,
        heads: p.heads, base: tokenBase, qBase: queryNumber(0), headLabel: function (x) { return headName(x); } }, W), keep);
    }

    function refresh(keepSteps) {
      paintTokens(); drawLines(); drawMatrix(); markThumb();
      if (whatIfFollows && api.ready) whatIfFollows();
      if (api.ready) rebuildSteps(keepSteps !== false);
      if (api.ready && api.onRefresh) api.onRefresh();          // lenses.js follows the part, head and query
    }
    function setHover(value) { state.hover = value; paintTokens(); drawLines(); drawMatrix(); }
    function toggle(i) {
      if (state.fresh) { state.selected = [i]; state.fresh = false; refresh(); return; }   // replaces the page's pick
      var at0 = state.selected.indexOf(i);
      if (at0 >= 0) state.selected.splice(at0, 1); else state.selected.push(i);
      refresh();
    }

    left.addEventListener("mouseover", function (e) {
      var t = e.target.closest(".qkv-tok"); if (t && !state.locked) setHover(+t.getAttribute("data-index"));
    });
    // the hovered query stays while the pointer crosses the lines to the key tokens
    grid.addEventListener("mouseleave", function () { if (state.hover !== null) setHover(null); });
    left.addEventListener("click", function (e) {
      var t = e.target.closest(".qkv-tok"); if (!t) return;
      state.hover = null; toggle(+t.getAttribute("data-index"));
    });
    right.addEventListener("click", function (e) {
      var t = e.target.closest(".qkv-tok"), rs = rows(); if (t && rs.length) showCell(rs[0], +t.getAttribute("data-index"), true);
    });
    lockButton.addEventListener("click", function () { state.locked = !state.locked; state.hover = null; refresh(); });
    clearButton.addEventListener("click", function () { state.selected = []; state.fresh = false; state.hover = null; refresh(); });
    zoomIn.addEventListener("click", function () { state.zoom = Math.min(16, state.zoom * 2); drawMatrix(); });
    zoomOut.addEventListener("click", function () { state.zoom = Math.max(1 / 8, state.zoom / 2); drawMatrix(); });
    // Enter or Space on a focused token is its click
    [left, right].forEach(function (side) {
      side.addEventListener("keydown", function (e) {
        if ((e.key !== "Enter" && e.key !== " ") || !e.target.closest(".qkv-tok")) return;
        e.preventDefault(); e.target.click();
      });
    });
    var matrix = mx.canvas;
    function describe(i, j) {          // the line under the matrix: the cell under the pointer or the keys' cell
      var p = part(), w = step("weights");
      info.textContent = V.unglossed(W.query + " " + queryNumber(i) + " “" + p.qTokens[i] + "” → " + W.key + " " + rowNumber(j) + " “" + p.kTokens[j] + "”: ") +
        (isMasked(i, j) ? W.masked : fmt(w, at(w, state.head, i, j)));
    }
    matrix.addEventListener("mousemove", function (e) {
      var c = mx.cellAt(e);
      if (!c) { info.textContent = ""; return; }
      describe(c[0], c[1]);
      if (!state.locked && state.hover !== c[0]) setHover(c[0]);
    });
    mx.keys({                          // Tab to the matrix, the arrow keys move the chosen cell (views.js)
      current: function () { var i = followed(); return state.cell || [i, focusKey(i)]; },
      choose: function (i, j) { state.hover = null; showCell(i, j, false); describe(i, j); }
    });
    matrix.addEventListener("mouseleave", function () { info.textContent = ""; if (state.hover !== null) setHover(null); });
    matrix.addEventListener("click", function (e) { var c = mx.cellAt(e); if (c) showCell(c[0], c[1], true); });

    function open(index, head) {      // show part `index`, head `head` (loading its numbers first)
      root.setAttribute("data-ready", "0");
      return load(index).then(function () {
        var changed = index !== state.part;
        state.part = index; state.hover = state.cell = null; cellBox.hidden = true;
        state.head = Math.max(0, Math.min(head, part().heads - 1));
        if (changed) { state.selected = [part().query || 0]; state.fresh = true; }
        root.setAttribute("data-part", String(index)); root.setAttribute("data-head", String(state.head));
        buildTokens(); refresh(); root.setAttribute("data-ready", "1");
      });
    }
    headSelect.addEventListener("change", function () {
      state.head = +headSelect.value; root.setAttribute("data-head", headSelect.value);
      if (state.cell) showCell(state.cell[0], state.cell[1]); else refresh();
    });
    partSelect.addEventListener("change", function () { open(+partSelect.value, state.head); });
    if (several) thumbs.addEventListener("click", function (e) {
      var b = e.target.closest(".qkv-thumb"); if (!b) return;
      var index = +b.getAttribute("data-part"), h = +b.getAttribute("data-head");
      partSelect.value = index;
      open(index, h).then(function () { if (views.scrollIntoView) views.scrollIntoView({ block: "start" }); });
    });
    // ← → step through (unless a form control has the keys, or another view on the page does)
    arrowKeys(root, stepper);
    var resizing = null;
    window.addEventListener("resize", function () {
      clearTimeout(resizing);
      resizing = setTimeout(function () { if (!api.ready) return; measure(); drawThumbs(); refresh(); }, 150);
    });

    // read-only accessors for notebooks and tests: the recorded numbers the view shows
    api.value = function (stepName, h, i, j) { var a = step(stepName); return a ? num(a, at(a, h, i, j)) : undefined; };
    api.text = function (stepName, h, i, j) { var a = step(stepName); return a ? fmt(a, at(a, h, i, j)) : undefined; };
    api.cellPoint = mx.cellPoint;        // where cell (i, j) of the matrix view is, in window coordinates
    api.showCell = function (i, j) { showCell(i, j, false); };
    api.row = function (h, i) { var p = part(), r = []; for (var j = 0; j < p.tk; j++) r.push(api.value("weights", h, i, j)); return r; };
    api.stepper = stepper;

    var all = [];
    for (var index = 0; index < payload.parts.length; index++) all.push(several ? load(index) : index === 0 ? load(0) : null);
    Promise.all(all).then(function () {
      var p = part();
      measure();
      state.head = Math.min(payload.head || 0, p.heads - 1);
      state.selected = [p.query || 0];               // the followed query, selected on open
      root.setAttribute("data-part", "0"); root.setAttribute("data-head", String(state.head));
      buildTokens(); drawThumbs();
      api.ready = true; refresh(false);
      root.setAttribute("data-ready", "1");
    }, function (err) {
      app.appendChild(el("p", "qkv-error", W.decode_fail + " " + err));
    });

    // ---------------------------------------------------------------- what-if
    function whatIfBox() {
      var box = el("section", "qkv-panel qkv-whatif"), w = payload.whatIf;
      box.appendChild(el("h3", null, W.whatif));
      if (!w) { box.appendChild(el("p", "qkv-note", W.whatif_serve)); return box; }
      if (w.kind === "scale") return scaleWhatIf(box, w);
      box.appendChild(el("p", null, V.fill(W.whatif_meeting, { recorded: w.recorded, lot: w.lotScore })));
      var label = el("label", "qkv-whatif-label"), slider = el("input");
      slider.type = "range"; slider.min = 0; slider.max = w.variants.length - 1; slider.step = 1; slider.className = "qkv-whatif-slider";
      var recordedAt = 0;
      w.variants.forEach(function (v, k) { if (v.score === w.recorded) recordedAt = k; });
      slider.value = recordedAt;
      label.appendChild(el("span", null, W.whatif_score + " "));
      label.appendChild(slider);
      var shown = el("span", "qkv-num qkv-whatif-score"); label.appendChild(shown);
      box.appendChild(label);
      var table = el("div", "qkv-whatif-out"); box.appendChild(table);
      box.appendChild(el("p", "qkv-note", W.whatif_note));
      function show() {
        var v = w.variants[+slider.value];
        shown.textContent = String(v.score);
        box.setAttribute("data-score", String(v.score));
        var html = '<table class="qkv-mt"><tr><th></th>' + w.tokens.map(function (t) { return "<th>" + esc(t) + "</th>"; }).join("") + "</tr>";
        html += "<tr><th>" + esc(W.score_given || W.score) + "</th>" + w.tokens.map(function (t, k) {
          // every token's given score: the question's words take the slider's, the others keep theirs (1 is a score too)
          var s = w.asked.indexOf(k) >= 0 ? v.score : w.scores ? w.scores[k] : k === w.lot ? w.lotScore : null;
          return '<td class="qkv-n" data-key="' + k + '">' + (s === null || s === undefined ? "" : esc(String(s))) + "</td>"; }).join("") + "</tr>";
        html += "<tr><th>" + esc(W.weight) + "</th>" + v.weights.map(function (x, k) {
          return '<td class="qkv-n' + (k === w.lot ? " qkv-write" : "") + '" data-key="' + k + '">' + V.fmt(x, w.digits) + "</td>"; }).join("") + "</tr></table>";
        var best = v.out[0] >= v.out[1] ? 0 : 1;
        html += '<p class="qkv-whatif-result">' + esc(V.fill(W.whatif_result, { w: V.fmt(v.weights[w.lot], w.digits),
          out: "[" + v.out.map(function (x) { return V.fmt(x, w.digits); }).join(", ") + "]", answer: w.answers[best] || String(best) })) + "</p>";
        table.innerHTML = '<div class="qkv-table-scroll">' + html + "</div>";
      }
      slider.addEventListener("input", show);
      show();
      return box;
    }

    // a worked example's softmax at other score scales (each variant computed by qkv when the page was built)
    function scaleWhatIf(box, w) {
      var intro = el("p"); box.appendChild(intro);
      var label = el("label", "qkv-whatif-label"), slider = el("input");
      slider.type = "range"; slider.min = 0; slider.max = w.variants.length - 1; slider.step = 1; slider.className = "qkv-whatif-slider";
      w.variants.forEach(function (v, k) { if (v.role === "recorded") slider.value = k; });
      label.appendChild(el("span", null, W.whatif_scale_label + " "));
      label.appendChild(slider);
      var shown = el("span", "qkv-num qkv-whatif-score"); label.appendChild(shown);
      box.appendChild(label);
      var out = el("div", "qkv-whatif-out"); box.appendChild(out);
      box.appendChild(el("p", "qkv-note", W.whatif_scale_note));
      // the query the page follows (the one chosen above, else the example's own): its row of every variant
      function query() {
        var i = payload.parts.length ? followed() : w.query, rowsHeld = w.variants[0].weights[0].length;
        return i < rowsHeld ? i : w.query;
      }
      function show() {
        var v = w.variants[+slider.value], d = w.digits, i = query();
        var tok = payload.parts.length && part().qTokens[i] !== undefined ? part().qTokens[i] : w.qToken;
        intro.textContent = V.fill(W.whatif_scale, { tok: "“" + tok + "”", dk: w.dk });
        box.setAttribute("data-query", String(i));
        shown.textContent = V.fmt(v.scale, d) + (v.role === "recorded" ? " = 1/√" + w.dk + " (" + W.whatif_recorded + ")" :
          v.role === "plain" ? " (" + W.whatif_no_root + ")" : "");
        box.setAttribute("data-scale", String(v.scale));
        var html = '<table class="qkv-mt"><tr><th></th>' + w.tokens.map(function (t) { return "<th>" + esc(t) + "</th>"; }).join("") + "<th>z</th></tr>";
        v.weights.forEach(function (rows, h) {
          html += "<tr><th>" + esc(v.weights.length > 1 ? headName(h) : W.weight) + "</th>" + rows[i].map(function (x, j) {
            return '<td class="qkv-n" data-head="' + h + '" data-key="' + j + '">' + V.fmt(x, d) + "</td>"; }).join("") +
            '<td class="qkv-n">[' + v.out[h][i].map(function (x) { return V.fmt(x, d); }).join(", ") + "]</td></tr>";
        });
        out.innerHTML = '<div class="qkv-table-scroll">' + html + "</table></div>";
      }
      slider.addEventListener("input", show);
      show();
      whatIfFollows = show;          // a newly chosen query redraws it (refresh)
      return box;
    }

    // ---------------------------------------------------------------- practice
    // the drills qkv.practice.offline computed when the page was made (the post's numbers, then a few sets of new
    // numbers of the same shapes); an answer is compared with its precomputed values (views.js), nothing is computed
    function practiceBox() {
      var pr = payload.practice, box = el("section", "qkv-panel qkv-practice");
      box.appendChild(el("h3", null, W.practice));
      box.appendChild(el("p", null, W.practice_intro));
      var bar = el("div", "qkv-bar"), label = el("label", null, W.practice_numbers + " "), pick = el("select", "qkv-pr-pick");
      pr.drills.forEach(function (d, n) {
        var o = el("option", null, V.fill(d.fresh ? W.practice_fresh : W.practice_post, { seed: d.seed })); o.value = n;
        pick.appendChild(o);
      });
      label.appendChild(pick); bar.appendChild(label); box.appendChild(bar);
      var fresh = pr.drills.filter(function (d) { return d.fresh; }).length;
      box.appendChild(V.withCommands(el("p", "qkv-note"), V.fill(W.practice_more, { n: fresh, example: pr.example })));
      var run = el("div", "qkv-pr-run"); box.appendChild(run);
      function start() {
        var d = pr.drills[+pick.value];
        V.practiceRun(run, d, W, function (k, typed) { return V.practiceCheck(d.questions[k], typed, d.lines); });
      }
      pick.addEventListener("change", start);
      start();
      api.practice = { start: function (n) { pick.value = n; start(); } };
      return box;
    }

    // ---------------------------------------------------------------- a trace without weights
    function flowOnly() {
      var flow = payload.flow || { arrays: {} }, names = Object.keys(flow.arrays), fcache = {};
      if (!names.length || !flow.arrays.out) { app.appendChild(el("p", "qkv-note", W.no_data)); root.setAttribute("data-ready", "1"); return; }
      // the picture (heads → concat → W_O → y) beside the step-through, as the views of the other pages
      var main = el("div", "qkv-main"), pictureBox = el("section", "qkv-panel qkv-col qkv-flow"), picture = null;
      var box = el("section", "qkv-panel qkv-stepper");
      main.appendChild(pictureBox); main.appendChild(box); app.appendChild(main);
      app.appendChild(whatIfBox());
      if (payload.practice) app.appendChild(practiceBox());
      var ctl = V.stepper(box, W, function (s) {
        root.setAttribute("data-step", s ? s.id : "");
        if (picture) picture.show(s ? s.id : "");
      }, W.stepper_hint_flow);
      api.stepper = ctl;
      arrowKeys(root, ctl);
      Promise.all(names.map(function (n) { return unpack(flow.arrays[n]).then(function (a) { fcache[n] = a; }); })).then(function () {
        var src = {
          has: function (n) { return !!fcache[n]; },
          shape: function (n) { return fcache[n].shape; },
          value: function (n, a, b, c) { var s = fcache[n]; return num(s, at(s, a, b, c)); },
          text: function (n, a, b, c) { var s = fcache[n]; return fmt(s, at(s, a, b, c)); },
          formula: function (n) { return (flow.formulas || {})[n] || ""; },
          masked: function () { return false; }
        };
        var tokens = flow.tokens || [], i = payload.query || 0;
        var rowsOut = fcache.out.shape[1];
        var shownTokens = rowsOut === 1 && tokens[i] !== undefined ? [tokens[i]] : tokens;   // one followed token
        picture = V.flowPicture(pictureBox, src, { i: rowsOut === 1 ? 0 : i, heads: flow.heads, headNumber: headNumber,
          colours: payload.headColours, token: tokens[i] }, W);
        ctl.set(V.flowSteps(src, { i: rowsOut === 1 ? 0 : i, h: 0, qTokens: shownTokens, heads: flow.heads,
          headLabel: function (h) { return W.head + " " + headNumber(h); }, headNumber: headNumber }, W, false));
        api.ready = true; root.setAttribute("data-ready", "1");
      }, function (err) { app.appendChild(el("p", "qkv-error", W.decode_fail + " " + err)); });
    }
  };
})();
