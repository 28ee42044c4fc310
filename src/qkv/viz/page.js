/* qkv interactive attention view. Reads the numbers recorded in a qkv Trace (embedded in the page)
   and draws them; it never computes attention. Every number shown is a recorded value looked up
   and formatted. Numbers are stored as integers round(x·10^exp) (exact decimal strings come from
   the integers), byte-shuffled and deflated, base64 in a JSON block: no network is ever used. */
(function () {
  "use strict";
  if (window.qkvView) return;

  var WORDS = {
    en: { layer: "layer", head: "head", part: "part", headView: "Head view", matrix: "Matrix view",
      hint: "Hover or click a query token (left) to see its weights; click a cell or a key token for its derivation.",
      query: "query", key: "key", weight: "weight", score: "score q·k", scaled: "scaled score",
      biased: "with bias", mask: "mask", allowed: "0 (may attend)", blocked: "−∞ (blocked)",
      share: "softmax share", value: "value row it weights", out: "output row of this query",
      notRecorded: "not recorded in this trace", derivation: "Derivation of one cell", dot: "q·k = Σ q[d]·k[d]",
      qrow: "query vector q", krow: "key vector k", storage: "numbers shown to {d} decimals (stored as integers × 10^−{d}, exact to what is shown)",
      noData: "This trace records no attention weights to draw.", rowSum: "row sum", sum1: "the weights of a row sum to 1",
      scaleAbs: "colour: weight from 0 (white) to 1 (dark blue); grey: masked (−∞)",
      scaleSqrt: "colour: √(weight ÷ largest weight of this head), so faint weights stay visible; grey: masked",
      decodeFail: "This browser cannot unpack the embedded numbers (it needs DecompressionStream: Chrome 80+, Firefox 113+, Safari 16.4+)." },
    ko: { layer: "층", head: "헤드", part: "부분", headView: "헤드 보기", matrix: "행렬 보기",
      hint: "왼쪽 쿼리 토큰에 마우스를 올리거나 클릭하면 가중치가 보입니다. 칸이나 키 토큰을 클릭하면 계산 과정이 나옵니다.",
      query: "쿼리", key: "키", weight: "가중치", score: "점수 q·k", scaled: "스케일된 점수",
      biased: "bias 더함", mask: "마스크", allowed: "0 (볼 수 있음)", blocked: "−∞ (가려짐)",
      share: "softmax 비중", value: "가중치가 곱해지는 value 행", out: "이 쿼리의 출력 행",
      notRecorded: "이 trace에 기록되지 않음", derivation: "한 칸의 계산 과정", dot: "q·k = Σ q[d]·k[d]",
      qrow: "쿼리 벡터 q", krow: "키 벡터 k", storage: "소수점 {d}자리까지 표시 (정수 × 10^−{d}로 저장)",
      noData: "이 trace에는 그릴 어텐션 가중치가 없습니다.", rowSum: "행의 합", sum1: "한 행의 가중치 합은 1",
      scaleAbs: "색: 가중치 0 (흰색) ~ 1 (진한 파랑); 회색: 마스크 (−∞)",
      scaleSqrt: "색: √(가중치 ÷ 이 헤드의 최대 가중치), 작은 가중치도 보이도록; 회색: 마스크",
      decodeFail: "이 브라우저는 내장된 숫자를 풀 수 없습니다 (DecompressionStream 필요)." }
  };

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
  function fmt(arr, idx) {           // the exact decimal the integer stands for
    var v = arr.data[idx];
    if (arr.type === "f64") return isFinite(v) ? v.toFixed(arr.exp) : (v > 0 ? "∞" : v < 0 ? "−∞" : "NaN");
    if (arr.type === "u8") return String(v);
    if (v === arr.lo) return "−∞";
    if (v === arr.hi) return "∞";
    if (v === arr.lo + 1) return "NaN";
    var s = String(Math.abs(v)), e = arr.exp;
    if (e > 0) { while (s.length <= e) s = "0" + s; s = s.slice(0, s.length - e) + "." + s.slice(s.length - e); }
    return (v < 0 ? "−" : "") + s;
  }

  // ------------------------------------------------------------------ small DOM helpers
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function colour(t) {                // white → dark blue, like matplotlib's Blues
    t = Math.max(0, Math.min(1, t));
    return [Math.round(247 - t * (247 - 8)), Math.round(251 - t * (251 - 48)), Math.round(255 - t * (255 - 107))];
  }

  // ------------------------------------------------------------------ the view
  window.qkvView = function (root, payload) {
    var W = WORDS[payload.lang] || WORDS.en;
    var app = root.querySelector(".qkv-app");
    var state = { part: 0, head: 0, hover: null, pinned: null, cell: null };
    var cache = {};                    // "part/step" → unpacked array
    var api = { state: state, payload: payload, ready: false };
    root.qkv = api;
    (window.qkvViews = window.qkvViews || {})[root.id] = api;

    if (!payload.parts.length) { app.appendChild(el("p", "qkv-note", W.noData)); root.setAttribute("data-ready", "1"); return; }
    if (typeof DecompressionStream === "undefined" && payload.compressed) {
      app.appendChild(el("p", "qkv-error", W.decodeFail)); return;
    }

    function part() { return payload.parts[state.part]; }
    function step(name) { return cache[state.part + "/" + name]; }
    function load(index) {
      var p = payload.parts[index], names = Object.keys(p.arrays), pending = [];
      names.forEach(function (name) {
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
    bar.appendChild(el("span", "qkv-note", W.storage.replace(/\{d\}/g, payload.digits)));
    app.appendChild(bar);
    app.appendChild(el("p", "qkv-note", W.hint));

    // head view and matrix view
    var views = el("div", "qkv-views");
    var hv = el("div", "qkv-panel qkv-headview"); hv.appendChild(el("h3", null, W.headView));
    var scroll = el("div", "qkv-hv-scroll"), grid = el("div", "qkv-hv-grid");
    var left = el("div", "qkv-tokens qkv-left"), right = el("div", "qkv-tokens qkv-right");
    var lines = document.createElement("canvas"); lines.className = "qkv-lines";
    grid.appendChild(left); grid.appendChild(lines); grid.appendChild(right);
    scroll.appendChild(grid); hv.appendChild(scroll); views.appendChild(hv);
    var mv = el("div", "qkv-panel qkv-matrix"); mv.appendChild(el("h3", null, W.matrix));
    var matrix = document.createElement("canvas"); mv.appendChild(matrix);
    var info = el("div", "qkv-info"); mv.appendChild(info);
    var legend = el("div", "qkv-note"); mv.appendChild(legend); views.appendChild(mv);
    app.appendChild(views);
    var cellBox = el("div", "qkv-panel qkv-cell"); cellBox.hidden = true; app.appendChild(cellBox);

    var rowH = 18, geometry = null;

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

    function active() { return state.hover !== null ? state.hover : state.pinned; }

    function weight(i, j) { var w = step("weights"); return num(w, at(w, state.head, i, j)); }
    function blocked(i, j) {
      var m = step("mask"); return m ? m.data[at(m, state.head, i, j)] === 0 : false;
    }
    function headMax() {
      var p = part(), w = step("weights"), top = 0, base = state.head * p.tq * p.tk, n = p.tq * p.tk;
      for (var k = 0; k < n; k++) { var v = w.data[base + k]; if (v > top) top = v; }
      return top / (w.type === "f64" ? 1 : Math.pow(10, w.exp));
    }

    function drawLines() {
      var p = part(), dpr = window.devicePixelRatio || 1, width = 180;
      var height = Math.max(p.tq, p.tk) * rowH;
      lines.width = width * dpr; lines.height = height * dpr;
      lines.style.width = width + "px"; lines.style.height = height + "px";
      var g = lines.getContext("2d"); g.setTransform(dpr, 0, 0, dpr, 0, 0); g.clearRect(0, 0, width, height);
      var q = active(), rows = q === null ? null : [q];
      var top = 0;                    // opacity relative to the strongest line shown, so 512-token rows stay visible
      for (var i0 = 0; i0 < p.tq; i0++) {
        if (rows && rows[0] !== i0) continue;
        for (var j0 = 0; j0 < p.tk; j0++) { var w0 = weight(i0, j0); if (w0 > top) top = w0; }
      }
      var buckets = [];               // one path per opacity level: fast even for 512 × 512 lines
      for (var b = 0; b < 10; b++) buckets.push([]);
      for (var i = 0; i < p.tq; i++) {
        if (rows && rows[0] !== i) continue;
        for (var j = 0; j < p.tk; j++) {
          var w = weight(i, j) / (top || 1);
          if (!(w >= (rows ? 0.01 : 0.05))) continue;
          buckets[Math.min(9, Math.floor(w * 10))].push(i, j);
        }
      }
      g.lineWidth = rows ? 2.5 : 1;
      buckets.forEach(function (pairs, b) {
        if (!pairs.length) return;
        g.strokeStyle = "rgba(" + (rows ? "209,73,91," : "43,108,176,") + (0.08 + 0.092 * b).toFixed(3) + ")";
        g.beginPath();
        for (var k = 0; k < pairs.length; k += 2) {
          g.moveTo(0, (pairs[k] + 0.5) * rowH); g.lineTo(width, (pairs[k + 1] + 0.5) * rowH);
        }
        g.stroke();
      });
    }

    function paintTokens() {
      var p = part(), q = active();
      Array.prototype.forEach.call(left.children, function (d, i) {
        d.classList.toggle("qkv-active", i === q);
        d.classList.toggle("qkv-pinned", i === state.pinned);
      });
      var w = step("weights"), rowTop = 0;
      if (q !== null) for (var k = 0; k < p.tk; k++) rowTop = Math.max(rowTop, num(w, at(w, state.head, q, k)));
      Array.prototype.forEach.call(right.children, function (d, j) {
        if (q === null) { d.style.background = ""; d.style.color = ""; d.removeAttribute("data-weight"); d.title = j + ": " + p.kTokens[j]; return; }
        var idx = at(w, state.head, q, j), share = num(w, idx) / (rowTop || 1), c = colour(share);
        d.style.background = "rgb(" + c.join(",") + ")";
        d.style.color = share > 0.55 ? "#fff" : "";
        d.setAttribute("data-weight", fmt(w, idx));
        d.title = j + ": " + p.kTokens[j] + " — " + W.weight + " " + fmt(w, idx);
      });
      root.setAttribute("data-query", q === null ? "" : String(q));
    }

    function drawMatrix() {
      var p = part(), dpr = window.devicePixelRatio || 1, n = Math.max(p.tq, p.tk);
      var cell = Math.max(1, Math.min(44, Math.floor(560 / n)));
      var g0 = matrix.getContext("2d"); g0.font = "11px sans-serif";
      var labels = cell >= 12, mL = 0, mT = 0;
      if (labels) {
        p.qTokens.forEach(function (t) { mL = Math.max(mL, g0.measureText(t).width); });
        p.kTokens.forEach(function (t) { mT = Math.max(mT, g0.measureText(t).width); });
        mL = Math.min(120, mL) + 8; mT = Math.min(120, mT) + 8;
      }
      var width = mL + p.tk * cell, height = mT + p.tq * cell;
      geometry = { cell: cell, left: mL, top: mT };
      matrix.width = Math.ceil(width * dpr); matrix.height = Math.ceil(height * dpr);
      matrix.style.width = width + "px"; matrix.style.height = height + "px";
      var g = matrix.getContext("2d"); g.setTransform(dpr, 0, 0, dpr, 0, 0);
      g.fillStyle = "#fff"; g.fillRect(0, 0, width, height);
      var top = n <= 16 ? 1 : (headMax() || 1);
      // cells: one ImageData at device resolution
      var pw = Math.round(p.tk * cell * dpr), ph = Math.round(p.tq * cell * dpr), image = g.createImageData(pw, ph);
      var w = step("weights"), m = step("mask"), scale = w.type === "f64" ? 1 : Math.pow(10, w.exp);
      var colours = new Array(p.tq * p.tk);
      for (var i = 0; i < p.tq; i++) for (var j = 0; j < p.tk; j++) {
        colours[i * p.tk + j] = (m && m.data[at(m, state.head, i, j)] === 0) ? [189, 189, 189]
          : colour(n <= 16 ? w.data[at(w, state.head, i, j)] / scale : Math.sqrt(w.data[at(w, state.head, i, j)] / scale / top));
      }
      for (var y = 0; y < ph; y++) {
        var row = Math.min(p.tq - 1, Math.floor(y / (cell * dpr)));
        for (var x = 0; x < pw; x++) {
          var c = colours[row * p.tk + Math.min(p.tk - 1, Math.floor(x / (cell * dpr)))], o = (y * pw + x) * 4;
          image.data[o] = c[0]; image.data[o + 1] = c[1]; image.data[o + 2] = c[2]; image.data[o + 3] = 255;
        }
      }
      g.putImageData(image, Math.round(mL * dpr), Math.round(mT * dpr));
      g.setTransform(dpr, 0, 0, dpr, 0, 0);
      if (labels) {
        g.fillStyle = "#222"; g.font = "11px sans-serif"; g.textBaseline = "middle"; g.textAlign = "right";
        p.qTokens.forEach(function (t, i) { g.fillText(t, mL - 4, mT + (i + 0.5) * cell, mL - 6); });
        p.kTokens.forEach(function (t, j) {
          g.save(); g.translate(mL + (j + 0.5) * cell, mT - 4); g.rotate(-Math.PI / 2); g.textAlign = "left";
          g.fillText(t, 0, 0, mT - 6); g.restore();
        });
      }
      if (cell >= 36) {
        g.textAlign = "center"; g.font = Math.min(11, Math.floor(cell / 4.2)) + "px monospace";
        for (var a = 0; a < p.tq; a++) for (var b2 = 0; b2 < p.tk; b2++) {
          var v = weight(a, b2);
          g.fillStyle = v / top > 0.55 ? "#fff" : "#222";
          g.fillText(fmt(w, at(w, state.head, a, b2)).slice(0, 6), mL + (b2 + 0.5) * cell, mT + (a + 0.5) * cell);
        }
      }
      legend.textContent = n <= 16 ? W.scaleAbs : W.scaleSqrt;
      var q = active();
      if (q !== null) { g.strokeStyle = "#d1495b"; g.lineWidth = 2; g.strokeRect(mL + 1, mT + q * cell + 1, p.tk * cell - 2, Math.max(1, cell - 2)); }
      if (state.cell) {
        g.strokeStyle = "#111"; g.lineWidth = 2;
        g.strokeRect(mL + state.cell[1] * cell, mT + state.cell[0] * cell, Math.max(2, cell), Math.max(2, cell));
      }
    }

    function vector(arr, a, b) {       // a recorded row, e.g. v_heads[g, j, :]
      var s = arr.shape, parts = [];
      a = Math.min(a, s[0] - 1);
      for (var d = 0; d < s[2]; d++) parts.push(fmt(arr, (a * s[1] + b) * s[2] + d));
      return "[" + parts.join(", ") + "]";
    }

    function row(label, html, stepName) {
      var tr = el("tr"), a = el("td", null, label), b = el("td");
      if (html === null) { b.className = "qkv-missing"; b.textContent = W.notRecorded; }
      else { b.innerHTML = html; }
      if (stepName) tr.setAttribute("data-step", stepName);
      tr.appendChild(a); tr.appendChild(b); return tr;
    }
    function esc(t) { return String(t).replace(/[&<>"]/g, function (c) { return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]; }); }
    function numSpan(arr, idx, name) { return '<span class="qkv-num" data-step="' + name + '">' + fmt(arr, idx) + "</span>"; }

    function showCell(i, j) {
      var p = part(), h = state.head, kv = Math.floor(h / Math.max(1, p.heads / p.kvHeads));
      state.cell = [i, j];
      cellBox.hidden = false; cellBox.textContent = "";
      cellBox.appendChild(el("h3", null, W.derivation + " — " + (payload.parts.length > 1 ? p.label + ", " : "") +
        headName(h) + ": " + W.query + " " + i + " “" + p.qTokens[i] + "” → " + W.key + " " + j + " “" + p.kTokens[j] + "”"));
      var table = el("table");
      var qh = step("q_heads"), kh = step("k_heads"), vh = step("v_heads"), out = step("out");
      if (qh && kh) {
        table.appendChild(row(W.qrow, '<span class="qkv-vec">' + vector(qh, h, i) + "</span>"));
        table.appendChild(row(W.krow, '<span class="qkv-vec">' + vector(kh, kv, j) + "</span>"));
      }
      var sc = step("scores"), ss = step("scaled_scores"), bs = step("biased_scores"), m = step("mask"), w = step("weights");
      table.appendChild(row(W.score + (qh && kh ? "  (" + W.dot + ")" : ""), sc ? numSpan(sc, at(sc, h, i, j), "scores") : null, "scores"));
      table.appendChild(row(W.scaled + (p.formulas.scaled_scores ? "  (" + p.formulas.scaled_scores + ")" : ""),
        ss ? (sc ? numSpan(sc, at(sc, h, i, j), "scores-again") + " → " : "") + numSpan(ss, at(ss, h, i, j), "scaled_scores") : null, "scaled_scores"));
      if (bs) table.appendChild(row(W.biased, numSpan(bs, at(bs, h, i, j), "biased_scores"), "biased_scores"));
      if (m) table.appendChild(row(W.mask, '<span data-step="mask">' + (m.data[at(m, h, i, j)] ? W.allowed : W.blocked) + "</span>", "mask"));
      table.appendChild(row(W.share + "  e^s[i,j] / Σₖ e^s[i,k]", numSpan(w, at(w, h, i, j), "weights") +
        ' <span class="qkv-note">(' + W.sum1 + ")</span>", "weights"));
      table.appendChild(row(W.value + " v[" + j + "]", vh ? '<span class="qkv-vec" data-step="v_heads">' + vector(vh, kv, j) + "</span>" : null, "v_heads"));
      table.appendChild(row(W.out + " = Σⱼ w[i,j]·v[j]", out ? '<span class="qkv-vec" data-step="out">' + vector(out, h, i) + "</span>" : null, "out"));
      cellBox.appendChild(table);
      root.setAttribute("data-cell", i + "," + j);
      drawMatrix();
    }

    function refresh() { paintTokens(); drawLines(); drawMatrix(); }
    function setQuery(kind, value) { state[kind] = value; refresh(); }

    left.addEventListener("mouseover", function (e) {
      var t = e.target.closest(".qkv-tok"); if (t) setQuery("hover", +t.getAttribute("data-index"));
    });
    // the hovered query stays while the pointer crosses the lines to the key tokens
    grid.addEventListener("mouseleave", function () { setQuery("hover", null); });
    left.addEventListener("click", function (e) {
      var t = e.target.closest(".qkv-tok"); if (!t) return;
      var i = +t.getAttribute("data-index"); setQuery("pinned", state.pinned === i ? null : i);
    });
    right.addEventListener("click", function (e) {
      var t = e.target.closest(".qkv-tok"), q = active(); if (t && q !== null) showCell(q, +t.getAttribute("data-index"));
    });
    function cellAt(e) {
      var r = matrix.getBoundingClientRect(), p = part();
      var j = Math.floor((e.clientX - r.left - geometry.left) / geometry.cell), i = Math.floor((e.clientY - r.top - geometry.top) / geometry.cell);
      return (i >= 0 && j >= 0 && i < p.tq && j < p.tk) ? [i, j] : null;
    }
    matrix.addEventListener("mousemove", function (e) {
      var c = cellAt(e), p = part();
      if (!c) { info.textContent = ""; return; }
      var w = step("weights");
      info.textContent = W.query + " " + c[0] + " “" + p.qTokens[c[0]] + "” → " + W.key + " " + c[1] + " “" + p.kTokens[c[1]] + "”: " + fmt(w, at(w, state.head, c[0], c[1]));
      if (state.hover !== c[0]) setQuery("hover", c[0]);
    });
    matrix.addEventListener("mouseleave", function () { info.textContent = ""; setQuery("hover", null); });
    matrix.addEventListener("click", function (e) { var c = cellAt(e); if (c) showCell(c[0], c[1]); });
    headSelect.addEventListener("change", function () {
      state.head = +headSelect.value; root.setAttribute("data-head", headSelect.value);
      if (state.cell) showCell(state.cell[0], state.cell[1]); else refresh();
    });
    partSelect.addEventListener("change", function () {
      var index = +partSelect.value;
      root.setAttribute("data-ready", "0");
      load(index).then(function () {
        state.part = index; state.hover = state.pinned = state.cell = null; cellBox.hidden = true;
        if (state.head >= part().heads) state.head = 0;
        root.setAttribute("data-part", String(index)); root.setAttribute("data-head", String(state.head));
        buildTokens(); refresh(); root.setAttribute("data-ready", "1");
      });
    });

    // read-only accessors for notebooks and tests: the recorded numbers the view shows
    api.value = function (stepName, h, i, j) { var a = step(stepName); return a ? num(a, at(a, h, i, j)) : undefined; };
    api.text = function (stepName, h, i, j) { var a = step(stepName); return a ? fmt(a, at(a, h, i, j)) : undefined; };
    api.cellPoint = function (i, j) {   // where cell (i, j) of the matrix view is, in page coordinates
      var r = matrix.getBoundingClientRect();
      return { x: r.left + geometry.left + (j + 0.5) * geometry.cell, y: r.top + geometry.top + (i + 0.5) * geometry.cell };
    };
    api.row = function (h, i) { var p = part(), r = []; for (var j = 0; j < p.tk; j++) r.push(api.value("weights", h, i, j)); return r; };

    load(0).then(function () {
      var p = part();
      state.head = Math.min(payload.head || 0, p.heads - 1);
      root.setAttribute("data-part", "0"); root.setAttribute("data-head", String(state.head));
      buildTokens(); refresh();
      api.ready = true; root.setAttribute("data-ready", "1");
    }, function (err) {
      app.appendChild(el("p", "qkv-error", W.decodeFail + " " + err));
    });
  };
})();
