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

  // ------------------------------------------------------------------ the view
  window.qkvView = function (root, payload) {
    var W = payload.words;
    V.setStyle({ gamma: payload.gamma, stops: payload.stops, ticks: payload.legendTicks });
    var app = root.querySelector(".qkv-app");
    var state = { part: 0, head: 0, hover: null, selected: [], locked: false, cell: null, zoom: 1 };
    var cache = {};                    // "part/step" → unpacked array
    var api = { state: state, payload: payload, ready: false };
    root.qkv = api;
    (window.qkvPages = window.qkvPages || {})[root.id] = api;

    if (payload.lead) app.appendChild(el("p", "qkv-lead", payload.lead));
    if (!payload.parts.length) { app.appendChild(el("p", "qkv-note", W.no_data)); root.setAttribute("data-ready", "1"); return; }
    if (typeof DecompressionStream === "undefined" && payload.compressed) {
      app.appendChild(el("p", "qkv-error", W.decode_fail)); return;
    }

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
    app.appendChild(el("p", "qkv-note", W.hint));
    app.appendChild(el("p", "qkv-note", W.storage.replace(/\{d\}/g, payload.digits)));

    // overview: every layer × head as a thumbnail
    var several = payload.parts.length > 1 || payload.parts[0].heads > 1;
    var overview = el("section", "qkv-panel qkv-overview");
    if (several) {
      overview.appendChild(el("h3", null, W.overview));
      var thumbs = el("div", "qkv-thumbs"); overview.appendChild(thumbs);
      app.appendChild(overview);
    }

    // head view and matrix view
    var views = el("div", "qkv-views");
    var hv = el("div", "qkv-panel qkv-headview"); hv.appendChild(el("h3", null, W.head_view));
    var scroll = el("div", "qkv-hv-scroll"), grid = el("div", "qkv-hv-grid");
    var left = el("div", "qkv-tokens qkv-left"), right = el("div", "qkv-tokens qkv-right");
    var lines = document.createElement("canvas"); lines.className = "qkv-lines";
    grid.appendChild(el("div", "qkv-colhead qkv-colhead-q", W.queries_col)); grid.appendChild(el("div"));
    grid.appendChild(el("div", "qkv-colhead qkv-colhead-k", W.keys_col));
    grid.appendChild(left); grid.appendChild(lines); grid.appendChild(right);
    scroll.appendChild(grid); hv.appendChild(scroll);
    var sumLine = el("div", "qkv-info qkv-selection"); hv.appendChild(sumLine);
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
    var grid2 = {                       // the matrix view reads the shown head's recorded weights
      get tq() { return part().tq; }, get tk() { return part().tk; },
      get qTokens() { return part().qTokens; }, get kTokens() { return part().kTokens; },
      value: function (i, j) { return weight(i, j); },
      text: function (i, j) { var w = step("weights"); return fmt(w, at(w, state.head, i, j)); },
      masked: function (i, j) { return isMasked(i, j); }
    };
    var mx = V.matrix(pan, grid2), matrix = mx.canvas;
    var info = el("div", "qkv-info"); mv.appendChild(info);
    mv.appendChild(legendBox());
    views.appendChild(mv);
    app.appendChild(views);
    var cellBox = el("div", "qkv-panel qkv-cell"); cellBox.hidden = true; app.appendChild(cellBox);

    function legendBox() { return V.legend({ masked: true, label: W.legend }); }

    var rowH = 18;

    function buildTokens() {
      var p = part();
      rowH = Math.max(p.tq, p.tk) <= 64 ? 20 : 14;
      left.textContent = ""; right.textContent = "";
      p.qTokens.forEach(function (t, i) {
        var d = el("div", "qkv-tok", t); d.style.height = rowH + "px"; d.setAttribute("data-index", i); d.title = i + ": " + t;
        left.appendChild(d);
      });
      p.kTokens.forEach(function (t, j) {
        var d = el("div", "qkv-tok", t); d.style.height = rowH + "px"; d.setAttribute("data-index", j); d.title = j + ": " + t;
        right.appendChild(d);
      });
      headSelect.textContent = "";
      for (var h = 0; h < p.heads; h++) { var o = el("option", null, String(h)); o.value = h; headSelect.appendChild(o); }
      headSelect.value = state.head;
      headSelect.parentNode.style.display = p.heads > 1 ? "" : "none";
    }

    // a one-head trace of a model carries the model's numbering (payload.headName); else the index
    function headName(h) {
      var n = payload.headName;
      if (part().heads !== 1 || !n) return W.head + " " + h;
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
      var buckets = [];               // one path per shade: fast even for 512 × 512 lines
      for (var b = 0; b < 10; b++) buckets.push([]);
      for (var i = 0; i < p.tq; i++) {
        if (only && !only[i]) continue;
        for (var j = 0; j < p.tk; j++) {
          if (isMasked(i, j)) continue;
          var w = Math.pow(weight(i, j), V.style().gamma);       // the shared scale, as the matrix
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
    function linesWidth() { return Math.max(60, Math.min(180, (root.clientWidth || 400) - 250)); }

    function paintTokens() {
      var p = part(), rs = rows(), chosen = {};
      rs.forEach(function (i) { chosen[i] = true; });
      Array.prototype.forEach.call(left.children, function (d, i) {
        d.classList.toggle("qkv-active", !!chosen[i]);
        d.classList.toggle("qkv-pinned", state.selected.indexOf(i) >= 0);
      });
      Array.prototype.forEach.call(right.children, function (d, j) {
        if (!rs.length) { d.style.background = ""; d.style.color = ""; d.removeAttribute("data-weight"); d.classList.remove("qkv-masked"); d.title = j + ": " + p.kTokens[j]; return; }
        var s = summed(rs, j), masked = s.text === W.masked, c = masked ? null : V.colour(s.value);
        d.classList.toggle("qkv-masked", masked);
        d.style.background = masked ? "" : "rgb(" + c.join(",") + ")";
        d.style.color = !masked && V.dark(s.value, 1) ? "#fff" : "";
        d.setAttribute("data-weight", s.text);
        d.title = j + ": " + p.kTokens[j] + " — " + W.weight + " " + s.text;
      });
      root.setAttribute("data-query", rs.join(","));
      root.setAttribute("data-selected", state.selected.slice().sort(function (a, b) { return a - b; }).join(","));
      sumLine.textContent = state.selected.length > 1 ? W.selected + ": " + rs.map(function (i) { return i + " “" + p.qTokens[i] + "”"; }).join(", ") + " — " + W.sum : "";
      lockButton.textContent = state.locked ? W.unlock : W.lock;
      lockButton.setAttribute("aria-pressed", state.locked ? "true" : "false");
    }

    function baseCell(n) { return V.fitCell(n, Math.min(560, Math.max(240, (root.clientWidth || 600) - 80))); }

    function drawMatrix() {
      var p = part(), cell = Math.max(1, Math.round(baseCell(Math.max(p.tq, p.tk)) * state.zoom));
      mx.draw({ cell: cell, rows: rows(), frame: state.cell, maskedText: W.masked });
    }

    // ---------------------------------------------------------------- overview thumbnails
    function drawThumbs() {
      if (!several) return;
      thumbs.textContent = "";
      payload.parts.forEach(function (p, index) {
        var w = step("weights", index);
        for (var h = 0; h < p.heads; h++) {
          var box = el("button", "qkv-thumb"); box.type = "button";
          box.setAttribute("data-part", index); box.setAttribute("data-head", h);
          var c = document.createElement("canvas"), px = Math.min(56, Math.max(p.tq, p.tk) * 8);
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
          box.appendChild(el("span", null, (payload.isModel ? p.label + " · " : "") + W.head + " " + h));
          box.title = (payload.isModel ? p.label + ", " : "") + W.head + " " + h;
          thumbs.appendChild(box);
        }
      });
      markThumb();
    }
    function markThumb() {
      if (!several) return;
      Array.prototype.forEach.call(thumbs.children, function (b) {
        b.classList.toggle("qkv-current", +b.getAttribute("data-part") === state.part && +b.getAttribute("data-head") === state.head);
      });
    }

    // ---------------------------------------------------------------- the derivation of one cell
    function source() {                // the recorded numbers of the shown part, for the shared views
      return {
        has: function (name) { return !!step(name); },
        shape: function (name) { return step(name).shape; },
        value: function (name, a, b, c) { var s = step(name); return num(s, at(s, a, b, c)); },
        text: function (name, a, b, c) { var s = step(name); return fmt(s, at(s, a, b, c)); },
        formula: function (name) { return part().formulas[name] || ""; },
        masked: function (h, i, j) { var m = step("mask"); return m ? m.data[at(m, h, i, j)] === 0 : false; }
      };
    }

    function showCell(i, j) {
      var p = part(), h = state.head, kv = Math.floor(h / Math.max(1, p.heads / p.kvHeads));
      state.cell = [i, j];
      cellBox.hidden = false;
      var title = W.derivation + " — " + (payload.parts.length > 1 ? p.label + ", " : "") +
        headName(h) + ": " + W.query + " " + i + " “" + p.qTokens[i] + "” → " + W.key + " " + j + " “" + p.kTokens[j] + "”";
      V.derivation(cellBox, title, V.cellRows(source(), { h: h, kv: kv, i: i, j: j, rotated: p.rotated }, W), W);
      root.setAttribute("data-cell", i + "," + j);
      drawMatrix();
    }

    function refresh() { paintTokens(); drawLines(); drawMatrix(); markThumb(); }
    function setHover(value) { state.hover = value; refresh(); }
    function toggle(i) {
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
      var t = e.target.closest(".qkv-tok"), rs = rows(); if (t && rs.length) showCell(rs[0], +t.getAttribute("data-index"));
    });
    lockButton.addEventListener("click", function () { state.locked = !state.locked; state.hover = null; refresh(); });
    clearButton.addEventListener("click", function () { state.selected = []; state.hover = null; refresh(); });
    zoomIn.addEventListener("click", function () { state.zoom = Math.min(16, state.zoom * 2); drawMatrix(); });
    zoomOut.addEventListener("click", function () { state.zoom = Math.max(1 / 8, state.zoom / 2); drawMatrix(); });
    var cellAt = mx.cellAt;
    matrix.addEventListener("mousemove", function (e) {
      var c = cellAt(e), p = part();
      if (!c) { info.textContent = ""; return; }
      var w = step("weights");
      info.textContent = W.query + " " + c[0] + " “" + p.qTokens[c[0]] + "” → " + W.key + " " + c[1] + " “" + p.kTokens[c[1]] + "”: " +
        (isMasked(c[0], c[1]) ? W.masked : fmt(w, at(w, state.head, c[0], c[1])));
      if (!state.locked && state.hover !== c[0]) setHover(c[0]);
    });
    matrix.addEventListener("mouseleave", function () { info.textContent = ""; if (state.hover !== null) setHover(null); });
    matrix.addEventListener("click", function (e) { var c = cellAt(e); if (c) showCell(c[0], c[1]); });

    function open(index, head) {      // show part `index`, head `head` (loading its numbers first)
      root.setAttribute("data-ready", "0");
      return load(index).then(function () {
        var changed = index !== state.part;
        state.part = index; state.hover = state.cell = null; cellBox.hidden = true;
        state.head = Math.max(0, Math.min(head, part().heads - 1));
        if (changed) state.selected = [part().query || 0];
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

    // read-only accessors for notebooks and tests: the recorded numbers the view shows
    api.value = function (stepName, h, i, j) { var a = step(stepName); return a ? num(a, at(a, h, i, j)) : undefined; };
    api.text = function (stepName, h, i, j) { var a = step(stepName); return a ? fmt(a, at(a, h, i, j)) : undefined; };
    api.cellPoint = mx.cellPoint;        // where cell (i, j) of the matrix view is, in window coordinates
    api.showCell = showCell;
    api.row = function (h, i) { var p = part(), r = []; for (var j = 0; j < p.tk; j++) r.push(api.value("weights", h, i, j)); return r; };

    var all = [];
    for (var index = 0; index < payload.parts.length; index++) all.push(several ? load(index) : index === 0 ? load(0) : null);
    Promise.all(all).then(function () {
      var p = part();
      state.head = Math.min(payload.head || 0, p.heads - 1);
      state.selected = [p.query || 0];               // the followed query, selected on open
      root.setAttribute("data-part", "0"); root.setAttribute("data-head", String(state.head));
      buildTokens(); drawThumbs(); refresh();
      api.ready = true; root.setAttribute("data-ready", "1");
    }, function (err) {
      app.appendChild(el("p", "qkv-error", W.decode_fail + " " + err));
    });
  };
})();
