/* qkv lenses: the next-token view and the several-heads views, shared by qkv's two pages — the offline page
   and notebooks (qkv.explain.page inlines this file after views.js) and `qkv serve` (served as a file, loaded
   after views.js). Like views.js it draws numbers it is given and computes none: the probabilities at every
   temperature, the heads' moves, the weights and the per-dimension products all come from the library
   (qkv.models.next_token, a Trace, qkv.analysis.score_terms).

   window.qkvLenses (L below), each view built into box; W: the page.* words without "page."; opts.digits:
   decimals shown (default 4):
     L.nextToken(box, next, W, opts)   next: qkv.models.NextToken.to_dict(): the k likeliest tokens with
                                       their logits and probabilities at each temperature (a slider picks
                                       one; opts.temperature: the one shown first, default 1), then each
                                       layer × head's ‖z^h·W_O^h‖ at the last token and its share
     L.headsOverlay(box, ctx, W)       a layer's heads overlaid (BertViz's head view), a toggle per head
     L.textColour(box, ctx, W)         text coloured by one query's weights in one head (circuitsvis)
     L.neuron(box, n, W, opts)         one pair's score as Σ q_i·k_i, the products drawn (n: /api/neuron)
     L.page(root, payload)             the offline page's lenses: payload.nextToken (qkv.show of a decoder)
*/
(function () {
  "use strict";

  var V = window.qkvViews, el = V.el, L = {};

  function fill(text, values) { return V.fill ? V.fill(text, values) : text; }
  function word(W, key, values) { var t = W[key] !== undefined ? W[key] : key; return values ? fill(t, values) : t; }
  function nearest(list, value) {
    var best = 0;
    list.forEach(function (t, i) { if (Math.abs(t - value) < Math.abs(list[best] - value)) best = i; });
    return best;
  }
  function plain(t) { return String(Math.round(t * 1000) / 1000); }

  // ------------------------------------------------------------------ the next token
  L.nextToken = function (box, next, W, opts) {
    opts = opts || {};
    var digits = opts.digits === undefined ? 4 : opts.digits;
    var f = function (v) { return V.fmt(v, digits); };
    var panel = el("section", "qkv-panel qkv-nexttoken");
    panel.appendChild(el("h3", null, W["next.title"]));
    panel.appendChild(el("p", "qkv-note", word(W, "next.lead", { last: next.last, position: next.position,
      vocab: next.vocab, k: next.top.length })));
    var temps = next.temperatures, at = nearest(temps, opts.temperature === undefined ? 1 : opts.temperature);
    var slider = el("label", "qkv-slider qkv-next-slider");
    var readout = el("span", "qkv-readout");
    var range = el("input"); range.type = "range"; range.min = 0; range.max = temps.length - 1; range.step = 1;
    range.value = at; range.className = "qkv-next-temperature";
    slider.appendChild(readout); slider.appendChild(range);
    panel.appendChild(slider);
    panel.appendChild(el("p", "qkv-note", word(W, "next.slider", { vocab: next.vocab, n: temps.length })));
    var table = el("table", "qkv-next-table"), caption = el("caption"), head = el("tr");
    table.appendChild(caption);
    ["next.rank", "next.token", "next.logit", "next.p"].forEach(function (k) { head.appendChild(el("th", null, W[k])); });
    table.appendChild(head);
    var cells = next.top.map(function (item, r) {
      var tr = el("tr"), bar = el("span", "qkv-next-bar"), p = el("span", "qkv-n qkv-next-p");
      tr.setAttribute("data-id", item.id);
      tr.appendChild(el("td", null, String(r + 1)));
      tr.appendChild(el("td", "qkv-next-token", item.token));
      tr.appendChild(el("td", "qkv-n", f(item.logit)));
      var td = el("td", "qkv-next-cell"); td.appendChild(bar); td.appendChild(p); tr.appendChild(td);
      table.appendChild(tr);
      return { bar: bar, p: p };
    });
    var wrap = el("div", "qkv-table-scroll"); wrap.appendChild(table); panel.appendChild(wrap);
    var rest = el("p", "qkv-note qkv-next-rest"), top = el("p", "qkv-next-top");
    panel.appendChild(rest); panel.appendChild(top);
    function show(index) {
      var t = temps[index], row = next.probabilities[index];
      readout.textContent = word(W, "next.temperature", { t: plain(t) });
      range.setAttribute("aria-valuetext", readout.textContent);
      caption.textContent = word(W, "next.table", { k: next.top.length, t: plain(t) });
      row.forEach(function (p, r) {
        cells[r].p.textContent = f(p);
        cells[r].bar.style.width = Math.max(0, Math.min(100, p * 100)) + "%";
      });
      rest.textContent = word(W, "next.rest", { n: next.vocab - next.top.length, p: f(next.rest[index]) });
      top.textContent = word(W, "next.top_is", { t: plain(t), token: next.top[0].token, p: f(row[0]) });
      panel.setAttribute("data-temperature", String(t));
    }
    range.addEventListener("input", function () { show(+range.value); });
    show(at);
    box.appendChild(panel);
    box.appendChild(L.headMoves(next, W, opts));
    return panel;
  };

  // each layer × head's ‖c_h‖ = ‖z^h·W_O^h‖ at the last token, the cell shaded by its share of the layer
  L.headMoves = function (next, W, opts) {
    var digits = opts.digits === undefined ? 4 : opts.digits;
    var f = function (v) { return V.fmt(v, digits); };
    var panel = el("section", "qkv-panel qkv-moves");
    panel.appendChild(el("h3", null, W["heads.title"]));
    panel.appendChild(el("p", "qkv-note", word(W, "heads.lead", { last: next.last })));
    var kinds = {};
    next.residual.forEach(function (r) { kinds[r] = true; });
    if (kinds.normed) panel.appendChild(el("p", "qkv-note", W["heads.normed"]));
    if (kinds["post-norm"]) panel.appendChild(el("p", "qkv-note", W["heads.post_norm"]));
    var most = next.ranking.slice(0, 3).map(function (lh) {
      return word(W, "heads.item", { l: lh[0], h: lh[1], n: f(next.head_norms[lh[0]][lh[1]]) });
    });
    panel.appendChild(el("p", "qkv-moves-most", word(W, "heads.most", { list: most.join(", ") })));
    var table = el("table", "qkv-moves-grid");
    table.appendChild(el("caption", null, W["heads.grid"]));
    var H = next.head_norms[0].length, head = el("tr");
    head.appendChild(el("th", null, ""));
    for (var h = 0; h < H; h++) head.appendChild(el("th", null, W.head + " " + h));
    head.appendChild(el("th", null, W["heads.y"]));
    table.appendChild(head);
    next.head_norms.forEach(function (row, l) {
      var tr = el("tr");
      tr.appendChild(el("th", null, word(W, "heads.layer", { l: l })));
      row.forEach(function (n, h) {
        var share = next.head_shares[l][h], c = V.colour(share), td = el("td", "qkv-n qkv-move");
        td.style.background = "rgb(" + c.join(",") + ")";
        td.style.color = V.ink(c);
        td.setAttribute("data-layer", l); td.setAttribute("data-head", h);
        td.title = word(W, "heads.cell", { l: l, h: h, n: f(n), s: f(share) });
        td.appendChild(el("span", "qkv-move-n", f(n)));
        td.appendChild(el("span", "qkv-move-s", f(share)));
        tr.appendChild(td);
      });
      tr.appendChild(el("td", "qkv-n", f(next.attention_norms[l])));
      table.appendChild(tr);
    });
    var wrap = el("div", "qkv-table-scroll"); wrap.appendChild(table); panel.appendChild(wrap);
    return panel;
  };

  // ------------------------------------------------------------------ several heads at once
  // ctx {tokens, heads, weight(h, i, j), text(h, i, j), masked(h, i, j), inks: [colour per head, AA on white],
  //      query (the row shown first), headLabel(h), title}: BertViz's head view — the heads of one layer
  //      overlaid, one colour (and, past the palette, one dash) per head, each with a toggle and its name;
  //      lines from the chosen query to every key, as thick and as opaque as the weight; the weights as text.
  var DASHES = ["", "7 4", "2 3", "9 3 2 3"];
  L.headsOverlay = function (box, ctx, W) {
    var panel = el("section", "qkv-panel qkv-lens qkv-overlay"), H = ctx.heads;
    var qTokens = ctx.qTokens || ctx.tokens, kTokens = ctx.kTokens || ctx.tokens, T = qTokens.length, Tk = kTokens.length;
    panel.appendChild(el("h3", null, ctx.title || W["lens.overlay.title"]));
    panel.appendChild(el("p", "qkv-note", W["lens.overlay.lead"]));
    var on = [], query = Math.min(T - 1, ctx.query || 0);
    var controls = el("div", "qkv-overlay-controls");
    var pick = querySelect(qTokens, query, W, function (i) { query = i; draw(); }, ctx.base);
    controls.appendChild(pick);
    var toggles = el("fieldset", "qkv-overlay-toggles");
    toggles.appendChild(el("legend", null, W["lens.overlay.toggles"]));
    for (var h = 0; h < H; h++) {
      on.push(true);
      var label = el("label", "qkv-toggle-head"), box2 = el("input");
      box2.type = "checkbox"; box2.checked = true; box2.setAttribute("data-head", h);
      box2.addEventListener("change", (function (k, input) { return function () { on[k] = input.checked; draw(); }; })(h, box2));
      var swatch = el("span", "qkv-swatch");
      swatch.style.borderBottom = "3px " + (DASHES[Math.floor(h / ctx.inks.length) % DASHES.length] ? "dashed" : "solid") + " " + ink(h);
      label.appendChild(box2); label.appendChild(swatch);
      var name = el("span", "qkv-toggle-name", ctx.headLabel(h)); name.style.color = ink(h);
      label.appendChild(name);
      toggles.appendChild(label);
    }
    controls.appendChild(toggles);
    panel.appendChild(controls);
    // SVG's namespace name (an identifier, never fetched), joined here so the page holds no web address as text (the notebook test looks for none)
    var NS = ["http:", "", "www.w3.org", "2000", "svg"].join("/"), svg = document.createElementNS(NS, "svg");
    svg.setAttribute("class", "qkv-overlay-lines"); svg.setAttribute("role", "img");
    var scroll = el("div", "qkv-overlay-scroll"); scroll.appendChild(svg); panel.appendChild(scroll);
    var table = el("div", "qkv-table-scroll qkv-overlay-weights"); panel.appendChild(table);
    function ink(k) { return ctx.inks[k % ctx.inks.length]; }
    function dash(k) { return DASHES[Math.floor(k / ctx.inks.length) % DASHES.length]; }
    function draw() {
      var row = 20, width = Math.max(240, Math.min(560, (panel.clientWidth || 560) - 4)), labelW = Math.min(110, width * 0.3);
      var x0 = labelW, x1 = width - labelW, height = Math.max(T, Tk) * row + 6;
      svg.setAttribute("width", width); svg.setAttribute("height", height);
      svg.setAttribute("viewBox", "0 0 " + width + " " + height);
      svg.setAttribute("aria-label", fill(W["lens.overlay.label"], { q: qTokens[query] }));
      while (svg.firstChild) svg.removeChild(svg.firstChild);
      function text(x, y, t, anchor, bold) {
        var n = document.createElementNS(NS, "text");
        n.setAttribute("x", x); n.setAttribute("y", y); n.setAttribute("text-anchor", anchor);
        n.setAttribute("dominant-baseline", "middle"); n.setAttribute("class", bold ? "qkv-ov-chosen" : "");
        n.textContent = t.length > 14 ? t.slice(0, 13) + "…" : t;
        svg.appendChild(n);
      }
      qTokens.forEach(function (t, i) { text(x0 - 6, 3 + (i + 0.5) * row, t, "end", i === query); });
      kTokens.forEach(function (t, j) { text(x1 + 6, 3 + (j + 0.5) * row, t, "start", false); });
      for (var k = 0; k < H; k++) {
        if (!on[k]) continue;
        for (var j = 0; j < Tk; j++) {
          if (ctx.masked(k, query, j)) continue;
          var w = ctx.weight(k, query, j);
          if (!(w > 0.002)) continue;
          var line = document.createElementNS(NS, "line");
          var offset = (k - (H - 1) / 2) * Math.min(2, 10 / H);     // heads side by side, not drawn over each other
          line.setAttribute("x1", x0); line.setAttribute("y1", 3 + (query + 0.5) * row + offset);
          line.setAttribute("x2", x1); line.setAttribute("y2", 3 + (j + 0.5) * row + offset);
          line.setAttribute("stroke", ink(k)); line.setAttribute("stroke-width", (0.5 + 5 * w).toFixed(2));
          line.setAttribute("stroke-opacity", (0.25 + 0.75 * w).toFixed(3));
          if (dash(k)) line.setAttribute("stroke-dasharray", dash(k));
          line.setAttribute("data-head", k); line.setAttribute("data-key", j);
          svg.appendChild(line);
        }
      }
      // the same weights as text: one row per head shown, one column per key
      var html = '<table class="qkv-mt"><caption>' + V.esc(fill(W["lens.overlay.table"], { q: qTokens[query] })) +
        "</caption><tr><th></th>" + kTokens.map(function (t) { return "<th>" + V.esc(t) + "</th>"; }).join("") + "</tr>";
      for (k = 0; k < H; k++) {
        if (!on[k]) continue;
        html += '<tr data-head="' + k + '"><th style="color:' + ink(k) + '">' + V.esc(ctx.headLabel(k)) + "</th>";
        for (j = 0; j < Tk; j++) html += '<td class="qkv-n">' + (ctx.masked(k, query, j) ? V.esc(W.masked) : V.esc(ctx.text(k, query, j))) + "</td>";
        html += "</tr>";
      }
      table.innerHTML = html + "</table>";
      panel.setAttribute("data-query", String(query));
      panel.setAttribute("data-heads", on.map(function (x, k) { return x ? k : -1; }).filter(function (k) { return k >= 0; }).join(","));
    }
    box.appendChild(panel);
    draw();
    panel.redraw = draw;
    panel.setQuery = function (i) { query = i; pick.querySelector("select").value = i; draw(); };
    return panel;
  };

  // base: the number shown for row 0 (1 where the post counts tokens from 1)
  function querySelect(tokens, query, W, onChange, base) {
    var label = el("label", "qkv-lens-query", W["lens.query"] + " "), select = el("select");
    tokens.forEach(function (t, i) { var o = el("option", null, (i + (base || 0)) + ": " + t); o.value = i; select.appendChild(o); });
    select.value = query;
    select.addEventListener("change", function () { onChange(+select.value); });
    label.appendChild(select);
    return label;
  }

  // text coloured by attention (circuitsvis): each token's background is its weight from the chosen query in
  // one head; the weight is written under it. ctx as headsOverlay's, plus head (the one shown).
  L.textColour = function (box, ctx, W) {
    var qTokens = ctx.qTokens || ctx.tokens, kTokens = ctx.kTokens || ctx.tokens;
    var panel = el("section", "qkv-panel qkv-lens qkv-colourtext"), T = qTokens.length, query = Math.min(T - 1, ctx.query || 0);
    panel.appendChild(el("h3", null, W["lens.text.title"]));
    panel.appendChild(el("p", "qkv-note", fill(W["lens.text.lead"], { head: ctx.headLabel(ctx.head) })));
    var pick = querySelect(qTokens, query, W, function (i) { query = i; draw(); }, ctx.base);
    panel.appendChild(pick);
    var line = el("p", "qkv-colour-line"); panel.appendChild(line);
    panel.appendChild(V.legend({ masked: false, label: W["lens.text.legend"] }));
    function draw() {
      line.textContent = "";
      kTokens.forEach(function (t, j) {
        var span = el("span", "qkv-ct-token"), masked = ctx.masked(ctx.head, query, j);
        var w = masked ? 0 : ctx.weight(ctx.head, query, j), c = V.colour(w);
        span.setAttribute("data-key", j);
        if (masked) span.classList.add("qkv-ct-masked");
        else { span.style.background = "rgb(" + c.join(",") + ")"; span.style.color = V.ink(c); }
        if (j === query && ctx.kTokens === undefined) span.classList.add("qkv-ct-query");
        span.appendChild(el("span", "qkv-ct-text", t));
        span.appendChild(el("span", "qkv-n qkv-ct-w", masked ? W.masked : ctx.text(ctx.head, query, j)));
        line.appendChild(span);
      });
      panel.setAttribute("data-query", String(query));
    }
    draw();
    box.appendChild(panel);
    panel.setQuery = function (i) { query = i; pick.querySelector("select").value = i; draw(); };
    return panel;
  };

  // the neuron view: one query/key pair's score as the sum of its per-dimension products q_i·k_i, each drawn
  // as a bar (the library computed them: qkv.analysis.score_terms, sent as n)
  L.neuron = function (box, n, W, opts) {
    opts = opts || {};
    var digits = opts.digits === undefined ? 4 : opts.digits, f = function (v) { return V.fmt(v, digits); };
    var panel = el("section", "qkv-panel qkv-lens qkv-neuron");
    panel.appendChild(el("h3", null, W["lens.neuron.title"]));
    panel.appendChild(el("p", "qkv-note", fill(W["lens.neuron.lead"], { q: n.query_token, k: n.key_token, dk: n.terms.length,
      qn: n.query_number !== undefined ? n.query_number : n.query, kn: n.key_number !== undefined ? n.key_number : n.key }) +
      (n.rotated ? " " + W.rotated : "")));
    var top = 0;
    n.terms.forEach(function (t) { top = Math.max(top, Math.abs(t)); });
    var html = '<table class="qkv-neuron-table"><tr><th>i</th><th>q_i</th><th>k_i</th><th>q_i·k_i</th><th></th></tr>';
    n.terms.forEach(function (t, i) {
      var share = top > 0 ? Math.abs(t) / top : 0;
      html += '<tr data-dim="' + i + '"><td>' + i + '</td><td class="qkv-n">' + f(n.q[i]) + '</td><td class="qkv-n">' + f(n.k[i]) +
        '</td><td class="qkv-n qkv-term">' + f(t) + '</td><td class="qkv-bar-cell"><span class="qkv-term-bar ' +
        (t < 0 ? "qkv-neg" : "qkv-pos") + '" style="width:' + (share * 50).toFixed(2) + '%"></span></td></tr>';
    });
    var wrap = el("div", "qkv-table-scroll qkv-neuron-scroll"); wrap.innerHTML = html + "</table>"; panel.appendChild(wrap);
    var same = f(n.sum) === f(n.score);
    // a few products are written out: Σ = t_0 + t_1 + … ; "=" only when the printed products add up to the printed
    // sum (in whole units of the last decimal), else "≈" and the sum is said to be of the unrounded products
    var sumText = f(n.sum);
    if (n.terms.length <= 8) {
      var units = 0, scale = Math.pow(10, digits);
      n.terms.forEach(function (t) { units += Math.round(Number(f(t).replace("−", "-")) * scale); });
      var adds = units === Math.round(Number(sumText.replace("−", "-")) * scale);
      sumText = n.terms.map(function (t, i) { var s = f(t); return i && s.charAt(0) === "−" ? "(" + s + ")" : s; }).join(" + ") +
        (adds ? " = " : " ≈ ") + sumText + (adds ? "" : " " + (W.from_unrounded_short || ""));
    }
    panel.appendChild(el("p", "qkv-neuron-sum", fill(W["lens.neuron.sum"], { sum: sumText, score: f(n.score) }) + " " +
      (same ? fill(W["lens.neuron.same"], { d: digits }) : fill(W["lens.neuron.differs"], { d: digits }))));
    if (opts.dk) {            // the scores were divided by √d_k (the formula says so): the division, as printed
      var holds = Math.abs(Number(f(n.score).replace("−", "-")) / Math.sqrt(opts.dk) - Number(f(n.scaled).replace("−", "-"))) <=
        0.5 * Math.pow(10, -digits) + 1e-12;
      panel.appendChild(el("p", "qkv-neuron-scaled", fill(W["lens.neuron.divided"], { score: f(n.score), dk: opts.dk,
        eq: holds ? "=" : "≈", scaled: f(n.scaled) }) + (holds ? "" : " " + (W.from_unrounded_short || ""))));
    } else panel.appendChild(el("p", "qkv-note", fill(W["lens.neuron.scaled"], { scaled: f(n.scaled) })));
    panel.setAttribute("data-pair", n.query + "," + n.key);
    box.appendChild(panel);
    return panel;
  };

  // the offline page (and notebooks): the lenses its payload holds, after the page's own views. nextToken: a
  // decoder's next token; lenses (qkv.show): several heads at once and text coloured by attention for the part
  // and head the page shows, following its query, and the neuron view of its cell where the library's products
  // were embedded (lenses.neuron[part]: terms (H, Tq, Tk·Dk), sums (H, Tq, Tk), packed as the page's numbers)
  L.page = function (root, payload) {
    var box = el("div", "qkv-lens-box"), app = root.querySelector(".qkv-app");
    app.parentNode.insertBefore(box, app.nextSibling);
    if (payload.nextToken) L.nextToken(box, payload.nextToken, payload.words, { digits: payload.digits });
    var lens = payload.lenses, api = root.qkv;
    if (!lens || !payload.parts.length || !api) return;
    var W = payload.words, P = window.qkvPacked, holder = el("div", "qkv-lens-parts"), neuronBox = el("div", "qkv-neuron-box");
    box.appendChild(holder); box.appendChild(neuronBox);
    var shown = null, panels = [], packed = {};
    function part() { return payload.parts[api.state.part]; }
    function followed() {
      var rs = api.state.selected.slice().sort(function (a, b) { return a - b; });
      return rs.length ? rs[0] : (part().query || 0);
    }
    function masked(h, i, j) { var m = api.value("mask", h, i, j); return m !== undefined && m === 0; }
    function focusKey(i) {
      var cell = api.state.cell;
      if (cell && cell[0] === i) return cell[1];
      var best = 0, top = -1;
      for (var j = 0; j < part().tk; j++) { var w = masked(api.state.head, i, j) ? -1 : api.value("weights", api.state.head, i, j); if (w > top) { top = w; best = j; } }
      return best;
    }
    function headLabel(h) { return W.head + " " + (h + (payload.headBase || 0)); }
    // query row i is shown as number i + qFrom (a meeting's question is the last token of its sentence), key j as j + tokenBase
    function qBase() { var p = part(); return p.qFrom !== undefined ? p.qFrom : (payload.tokenBase || 0); }
    function build() {
      var p = part(), H = p.heads;
      holder.textContent = ""; panels = [];
      var same = p.tq === p.tk && p.qTokens.every(function (t, i) { return t === p.kTokens[i]; });
      var ctx = { tokens: p.qTokens, qTokens: p.qTokens, kTokens: same ? undefined : p.kTokens, heads: H, query: followed(),
        head: api.state.head, inks: lens.inks, base: qBase(),
        weight: function (h, i, j) { return api.value("weights", h, i, j); },
        text: function (h, i, j) { return api.text("weights", h, i, j); },
        masked: masked, headLabel: headLabel,
        title: W["lens.overlay.title"] + (payload.parts.length > 1 ? " — " + p.label : "") };
      if (H > 1) panels.push(L.headsOverlay(holder, ctx, W));
      panels.push(L.textColour(holder, ctx, W));
    }
    function neuron(i, j) {
      var index = api.state.part, entry = (lens.neuron || {})[index], h = api.state.head, p = part();
      neuronBox.textContent = "";
      if (!entry) {
        if (lens.neuronNote) neuronBox.appendChild(el("p", "qkv-note", lens.neuronNote));
        return;
      }
      var ready = packed[index] ? Promise.resolve(packed[index])
        : Promise.all([P.unpack(entry.terms), P.unpack(entry.sums)]).then(function (r) { packed[index] = r; return r; });
      ready.then(function (r) {
        var terms = r[0], sums = r[1], dk = entry.dk, kv = Math.floor(h / Math.max(1, p.heads / p.kvHeads)), n = {
          query: i, key: j, query_token: p.qTokens[i], key_token: p.kTokens[j], rotated: entry.rotated,
          query_number: i + qBase(), key_number: j + (payload.tokenBase || 0),
          q: [], k: [], terms: [], sum: P.num(sums, P.at(sums, h, i, j)),
          score: api.value("scores", h, i, j), scaled: api.value("scaled_scores", h, i, j) };
        for (var d = 0; d < dk; d++) {
          n.q.push(api.value("q_heads", h, i, d)); n.k.push(api.value("k_heads", kv, j, d));
          n.terms.push(P.num(terms, P.at(terms, h, i, j * dk + d)));
        }
        if (api.state.part !== index || api.state.head !== h) return;     // the page moved on meanwhile
        neuronBox.textContent = "";
        var root2 = /1\/√d_k/.test((p.formulas || {}).scaled_scores || "");
        L.neuron(neuronBox, n, W, { digits: payload.digits, dk: root2 ? dk : 0 });
        neuronBox.appendChild(el("p", "qkv-note", W["lens.neuron.pick"]));
      });
    }
    api.onRefresh = function () {
      var key = api.state.part + "/" + api.state.head, i = followed();
      if (key !== shown) { shown = key; build(); } else panels.forEach(function (p) { p.setQuery(i); });
      neuron(i, focusKey(i));
    };
    if (api.ready) api.onRefresh();
  };

  window.qkvLenses = L;
})();
