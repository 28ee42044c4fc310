/* qkv serve: the page. Everything it shows comes from the JSON API (a model's Trace, the worked
   examples' Traces, their what-if variants recomputed by the server, and the step-by-step
   explanations); it formats and draws, it never computes attention. The matrix, cell, legend and
   step-through views are qkv's shared views (qkv/explain/views.js, window.qkvViews), the same as the
   offline page's. The page's words come from qkv.explain.texts (GET /api/words). The view's state
   lives in the URL (a permalink per view). */
(function () {
  "use strict";

  var V = window.qkvViews;
  var DIGITS = 4;
  var root = document.getElementById("app");
  // the language a link without ?lang= opens in: <html lang> as the server wrote it (`qkv serve --lang ko`)
  var DEFAULT_LANG = document.documentElement.lang === "ko" ? "ko" : "en";
  var state = { tab: "example", model: "", text: "", view: "", layer: null, head: null, cell: null,
    example: "self-attention", part: 0, lang: DEFAULT_LANG, source: "", to: "ko", whatif: null };
  var data = { models: [], examples: [], words: null, overview: null, trace: null, traceKey: "", uploaded: null,
    translator: null, translation: null, base: {}, result: null };
  var busy = 0;

  // the page's words (texts.py serve.ui.*) and the shared views' words (texts.py page.*)
  function W(key, values) {
    var table = data.words ? data.words.page[state.lang] || data.words.page.en : {};
    var text = table[key] !== undefined ? table[key] : key;
    return values ? V.fill(text, values) : text;
  }
  function VW() { return data.words.views[state.lang] || data.words.views.en; }
  var el = V.el;

  // ------------------------------------------------------------------ URL ⇄ state
  function readURL() {
    var p = new URLSearchParams(location.search);
    var tab = p.get("tab");
    state.tab = tab === "model" || tab === "translate" || tab === "example" ? tab
      : (p.has("text") || p.has("model")) ? "model" : "example";
    state.source = p.get("source") || "";
    state.to = p.get("to") === "ja" ? "ja" : "ko";
    state.model = p.get("model") || "";
    state.text = p.get("text") || "";
    state.view = p.get("view") || "";
    state.layer = p.has("layer") ? +p.get("layer") : null;
    state.head = p.has("head") ? +p.get("head") : null;
    var c = (p.get("cell") || "").split(",");
    state.cell = c.length === 2 && c[0] !== "" ? [+c[0], +c[1]] : null;
    state.example = p.get("example") || "self-attention";      // an uploaded file is not in the link
    state.part = +(p.get("part") || 0);
    state.lang = p.get("lang") === "ko" || p.get("lang") === "en" ? p.get("lang") : DEFAULT_LANG;
    state.practice = /^\d{1,15}f?$/.test(p.get("practice") || "") ? p.get("practice") : "";   // seed, f: new numbers
    state.whatif = null;
    if (p.get("whatif")) { try { state.whatif = normalWhatIf(JSON.parse(p.get("whatif"))); } catch (e) { state.whatif = null; } }
  }
  function writeURL(push) {
    var p = new URLSearchParams();
    if (state.tab === "example") {
      if (state.example && state.example !== "self-attention") p.set("example", state.example);
      if (state.part) p.set("part", state.part);
      if (state.whatif && changed(state.whatif)) p.set("whatif", JSON.stringify(body(state.whatif)));
      if (state.practice && state.practice !== "0") p.set("practice", state.practice);
    } else if (state.tab === "translate") {
      p.set("tab", "translate");
      if (state.source) { p.set("source", state.source); p.set("to", state.to); }
      if (state.view === "head") { p.set("view", "head"); p.set("layer", state.layer); p.set("head", state.head); }
    } else {
      p.set("tab", "model");
      if (state.model) p.set("model", state.model);
      if (state.text) p.set("text", state.text);
      if (state.view) p.set("view", state.view);
      if (state.view === "head") { p.set("layer", state.layer); p.set("head", state.head); }
    }
    if (state.cell) p.set("cell", state.cell.join(","));
    if (state.lang !== DEFAULT_LANG) p.set("lang", state.lang);
    var url = location.pathname + (p.toString() ? "?" + p.toString() : "");
    if (url !== location.pathname + location.search) history[push ? "pushState" : "replaceState"](null, "", url);
  }

  // ------------------------------------------------------------------ small helpers
  function api(path, params, options) {
    var q = new URLSearchParams(params || {}).toString();
    return fetch("/api/" + path + (q ? "?" + q : ""), options || {}).then(function (r) {
      return r.json().then(function (answer) {
        if (!r.ok) {
          var error = new Error(answer.error || ("HTTP " + r.status));
          error.field = answer.field; error.problem = answer.problem;     // one parameter's problem, apart
          throw error;
        }
        return answer;
      });
    });
  }
  function fmt(v) { return V.fmt(v, DIGITS); }
  function setReady(flag) { root.setAttribute("data-ready", flag ? "1" : "0"); }
  function begin() { busy++; setReady(false); }
  function end() { busy = Math.max(0, busy - 1); if (!busy) setReady(true); }
  // An error line under the form: a problem with the text box right above it says just the problem; the
  // layer, head, target language, model and a drill's seed are named in the page's words, not as the API's
  // parameters ("seed: 'abc': …" under the Korean page's 시드 box).
  function say(box, err) {
    if (!err) { box.textContent = ""; return; }
    var named = { layer: W("layer"), head: W("head"), to: W("into"), model: W("model"), seed: VW().practice_seed };
    var message = err.message;
    if (err.problem && err.field === "text") message = err.problem;
    else if (err.problem && named[err.field]) message = named[err.field] + ": " + err.problem;
    box.textContent = W("error") + ": " + message;
  }

  // ------------------------------------------------------------------ Trace helpers
  function stepOf(trace, name) {
    for (var i = trace.steps.length - 1; i >= 0; i--) if (trace.steps[i].name === name) return trace.steps[i];
    return null;
  }
  function as3(step) {               // (Tq, Tk) → (1, Tq, Tk); (H, Tq, Tk) as is
    if (!step) return null;
    var v = step.values;
    return step.shape.length === 2 ? [v] : step.shape.length === 3 ? v : null;
  }
  // the attention parts of a trace: every step named "weights" or "PREFIX/weights" (by-hand copies left out)
  function partsOf(trace) {
    var parts = [];
    trace.steps.forEach(function (s) {
      var m = /^(.*\/)?weights$/.exec(s.name);
      if (!m || s.name.indexOf("by hand/") === 0 || s.name.indexOf("drift/") === 0 || !as3(s)) return;
      var prefix = m[1] || "";
      if (parts.some(function (p) { return p.prefix === prefix; })) return;
      parts.push({ prefix: prefix, label: partLabel(trace, prefix) });
    });
    return parts;
  }
  function tokensFor(trace, prefix, tq, tk) {
    var meta = trace.meta || {}, q = meta.tokens, k = meta.key_tokens || meta.tokens;
    // an example that names its tokens per language (meta.tokens_ko: "토큰 3" for "token 3", qkv.trace.in_language)
    var named = meta["tokens_" + state.lang];
    if (named && q && named.length === q.length) {
      if (!meta.key_tokens || meta.key_tokens.join("\u0000") === q.join("\u0000")) k = named;
      q = named;
    }
    var qFrom = 0;      // the place of query row 0 among the tokens: a meeting's question is its sentence's last token
    (meta.scenes || []).forEach(function (s) {
      if (prefix === s.name + "/") { q = s.tokens.slice(-tq); k = s.tokens; qFrom = Math.max(0, s.tokens.length - tq); }
    });
    (meta.scenes || []).forEach(function (s) {          // a meeting follows one question: its query token
      if (prefix === s.name + "/" && tq === 1) q = [typeof s.query === "string" ? s.query : s.tokens[s.query]];
    });
    function fit(list, n) {
      if (list && list.length === n) return list.map(String);
      var out = []; for (var i = 0; i < n; i++) out.push(String(i)); return out;
    }
    return { q: fit(q, tq), k: fit(k, tk), qFrom: qFrom };
  }
  function headBase(trace) { return (trace.meta && trace.meta.head_base) || 0; }
  // the number shown for query/key row 0: 1 where the example's post counts tokens from 1 (qkv.trace.token_number)
  function tokenBase(trace) { return (trace.meta && trace.meta.token_base) || 0; }
  // a meeting of the group-meeting example by its place ("the first meeting"), not its name in the data
  function meetingName(trace, name) {
    var scenes = (trace.meta && trace.meta.scenes) || [], n = 0;
    scenes.forEach(function (s, k) { if (s.name === name) n = k + 1; });
    var key = "meeting." + n;
    return data.words.page[state.lang][key] !== undefined ? W(key) : W("meetingN", { n: n });
  }
  function partLabel(trace, prefix) {
    var name = prefix.slice(0, -1), scenes = (trace.meta && trace.meta.scenes) || [];
    if (!prefix) return trace.meta && trace.meta.n_heads > 1 ? W("partAll") : (trace.title || "weights");
    if (scenes.some(function (s) { return s.name === name; })) return meetingName(trace, name);
    if (name === "rows") return W("partRows");
    if (name === "columns") return W("partColumns");
    var head = /^head (\d+)$/.exec(name);
    if (head) return W("head") + " " + head[1];
    return name;
  }

  // ------------------------------------------------------------------ layout
  var ui = {};
  function button(cls, text) { var b = el("button", cls, text); b.type = "button"; return b; }
  function build() {
    root.textContent = "";
    var top = el("header", "qkv-top");
    ui.title = el("h1", null, "");
    top.appendChild(ui.title);
    var langs = el("div", "qkv-langs");
    ui.langButtons = {};
    [["en", "English"], ["ko", "한국어"]].forEach(function (pair) {
      var b = button("qkv-lang", pair[1]); b.setAttribute("data-lang", pair[0]);
      b.addEventListener("click", function () { state.lang = pair[0]; writeURL(true); render(); });
      ui.langButtons[pair[0]] = b; langs.appendChild(b);
    });
    top.appendChild(langs);
    root.appendChild(top);

    var tabs = el("nav", "qkv-tabs");
    ui.tabs = {};
    ["example", "model", "translate"].forEach(function (name) {
      var b = button("qkv-tab", ""); b.setAttribute("data-tab", name);
      b.addEventListener("click", function () {
        state.tab = name; state.cell = null; if (name === "translate") state.view = "";
        writeURL(true); render();
      });
      ui.tabs[name] = b; tabs.appendChild(b);
    });
    root.appendChild(tabs);

    buildExamplePane();
    buildModelPane();
    buildTranslatePane();
    ui.footer = el("p", "qkv-note qkv-footer"); root.appendChild(ui.footer);
  }

  function buildModelPane() {
    ui.modelPane = el("section", "qkv-pane qkv-model-pane");
    var form = el("form", "qkv-form"); form.setAttribute("novalidate", "");
    ui.textLabel = el("label", "qkv-field");
    ui.textWord = el("span");
    ui.textInput = el("textarea"); ui.textInput.name = "text"; ui.textInput.rows = 2; ui.textInput.id = "qkv-text";
    ui.textLabel.appendChild(ui.textWord); ui.textLabel.appendChild(ui.textInput);
    ui.modelLabel = el("label", "qkv-field qkv-field-small");
    ui.modelWord = el("span");
    ui.modelSelect = el("select"); ui.modelSelect.name = "model"; ui.modelSelect.id = "qkv-model";
    ui.modelLabel.appendChild(ui.modelWord); ui.modelLabel.appendChild(ui.modelSelect);
    ui.runButton = el("button", "qkv-run"); ui.runButton.type = "submit";
    form.appendChild(ui.textLabel); form.appendChild(ui.modelLabel); form.appendChild(ui.runButton);
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      if (!ui.textInput.value.trim()) {                 // nothing to run: say what to type, stay here
        ui.modelError.textContent = W("emptyText"); ui.modelError.setAttribute("data-empty", "1");
        ui.textInput.focus();
        return;
      }
      state.text = ui.textInput.value; state.model = ui.modelSelect.value;
      state.view = "overview"; state.cell = null; writeURL(true); render();
    });
    ui.modelSelect.addEventListener("change", function () {
      state.model = ui.modelSelect.value; state.text = ui.textInput.value;
      if (state.view === "head") {       // the same head may not exist in the other model
        var m = modelInfo();
        if (!m || state.layer >= m.layers || state.head >= m.heads) state.view = "overview";
      }
      if (!state.view && state.text.trim()) state.view = "overview";
      state.cell = null; writeURL(true); render();
    });
    ui.modelPane.appendChild(form);
    ui.modelError = el("p", "qkv-error qkv-model-error"); ui.modelPane.appendChild(ui.modelError);
    ui.modelBody = el("div", "qkv-body"); ui.modelPane.appendChild(ui.modelBody);
    root.appendChild(ui.modelPane);
  }

  function buildExamplePane() {
    ui.examplePane = el("section", "qkv-pane qkv-example-pane");
    var layout = el("div", "qkv-ex-layout");
    var side = el("nav", "qkv-ex-side");
    ui.examplesIntro = el("p", "qkv-note qkv-ex-intro");
    side.appendChild(ui.examplesIntro);
    ui.exampleList = el("div", "qkv-ex-list"); ui.exampleList.id = "qkv-examples";
    side.appendChild(ui.exampleList);
    ui.uploadLabel = el("label", "qkv-upload");
    ui.uploadWord = el("span", "qkv-upload-button");
    ui.uploadInput = el("input"); ui.uploadInput.type = "file"; ui.uploadInput.accept = ".toml,.json"; ui.uploadInput.id = "qkv-upload";
    ui.uploadLabel.appendChild(ui.uploadWord); ui.uploadLabel.appendChild(ui.uploadInput);
    side.appendChild(ui.uploadLabel);
    layout.appendChild(side);
    var main = el("div", "qkv-ex-main");
    ui.exampleError = el("p", "qkv-error qkv-example-error"); main.appendChild(ui.exampleError);
    ui.exampleBody = el("div", "qkv-body"); main.appendChild(ui.exampleBody);
    layout.appendChild(main);
    ui.examplePane.appendChild(layout);
    root.appendChild(ui.examplePane);
    ui.uploadInput.addEventListener("change", function () {
      var file = ui.uploadInput.files && ui.uploadInput.files[0];
      if (!file) return;
      begin();
      var held = null;
      file.arrayBuffer().then(function (bytes) {
        held = bytes;
        return api("upload", { filename: file.name, lang: state.lang }, { method: "POST", body: bytes,
          headers: { "Content-Type": "application/octet-stream" } });
      }).then(function (result) {
        data.uploaded = { bytes: held, name: file.name, result: result, lang: state.lang };
        state.example = ""; state.part = 0; state.cell = null; state.whatif = null; ui.exampleError.textContent = "";
        writeURL(true); markExample(); drawExample(result);
      }, function (err) { say(ui.exampleError, err); }).then(end, end);
      ui.uploadInput.value = "";          // choosing the same file again fires change again
    });
  }

  function buildTranslatePane() {
    ui.translatePane = el("section", "qkv-pane qkv-translate-pane");
    var tform = el("form", "qkv-form"); tform.setAttribute("novalidate", "");
    ui.sourceLabel = el("label", "qkv-field"); ui.sourceWord = el("span");
    ui.sourceInput = el("input"); ui.sourceInput.type = "text"; ui.sourceInput.id = "qkv-source";
    ui.sourceLabel.appendChild(ui.sourceWord); ui.sourceLabel.appendChild(ui.sourceInput);
    ui.toLabel = el("label", "qkv-field qkv-field-small"); ui.toWord = el("span");
    ui.toSelect = el("select"); ui.toSelect.id = "qkv-to";
    [["ko", "한국어"], ["ja", "日本語"]].forEach(function (pair) { var o = el("option", null, pair[1]); o.value = pair[0]; ui.toSelect.appendChild(o); });
    ui.toLabel.appendChild(ui.toWord); ui.toLabel.appendChild(ui.toSelect);
    ui.translateButton = el("button", "qkv-run"); ui.translateButton.type = "submit";
    tform.appendChild(ui.sourceLabel); tform.appendChild(ui.toLabel); tform.appendChild(ui.translateButton);
    tform.addEventListener("submit", function (e) {
      e.preventDefault();
      if (!ui.sourceInput.value.trim()) {
        ui.translateError.textContent = W("emptySource"); ui.translateError.setAttribute("data-empty", "1");
        ui.sourceInput.focus();
        return;
      }
      state.source = ui.sourceInput.value; state.to = ui.toSelect.value; state.view = ""; state.cell = null;
      writeURL(true); render();
    });
    ui.translatePane.appendChild(tform);
    ui.translateError = el("p", "qkv-error qkv-translate-error"); ui.translatePane.appendChild(ui.translateError);
    ui.translateBody = el("div", "qkv-body"); ui.translatePane.appendChild(ui.translateBody);
    root.appendChild(ui.translatePane);
  }

  function modelInfo() {
    for (var i = 0; i < data.models.length; i++) if (data.models[i].name === state.model) return data.models[i];
    return null;
  }

  // ------------------------------------------------------------------ render: the words, then the view
  function render() {
    document.documentElement.lang = state.lang;
    root.setAttribute("lang", state.lang);
    root.setAttribute("data-lang", state.lang);
    root.setAttribute("data-tab", state.tab);
    root.removeAttribute("data-view");
    document.title = W("title");
    ui.title.textContent = W("title");
    Object.keys(ui.langButtons).forEach(function (l) { ui.langButtons[l].classList.toggle("qkv-on", l === state.lang); });
    ui.tabs.example.textContent = W("tabExample"); ui.tabs.model.textContent = W("tabModel");
    ui.tabs.translate.textContent = W("tabTranslate"); ui.tabs.translate.hidden = !data.translator;
    Object.keys(ui.tabs).forEach(function (t) { ui.tabs[t].classList.toggle("qkv-on", t === state.tab); });
    ui.examplePane.hidden = state.tab !== "example";
    ui.modelPane.hidden = state.tab !== "model";
    ui.translatePane.hidden = state.tab !== "translate";
    ui.sourceWord.textContent = W("sourceText"); ui.toWord.textContent = W("into"); ui.translateButton.textContent = W("translate");
    if (document.activeElement !== ui.sourceInput) ui.sourceInput.value = state.source;
    ui.toSelect.value = state.to;
    ui.textWord.textContent = W("text"); ui.modelWord.textContent = W("model"); ui.runButton.textContent = W("run");
    Array.prototype.forEach.call(ui.modelSelect.options, function (o) {      // the options in the page's language
      var m = data.models.filter(function (x) { return x.name === o.value; })[0];
      if (m) o.textContent = modelOption(m.name, m.layers, m.heads);
    });
    ui.textInput.placeholder = W("textPlaceholder"); ui.sourceInput.placeholder = W("sourcePlaceholder");
    ui.examplesIntro.textContent = W("examplesIntro"); ui.uploadWord.textContent = W("upload");
    ui.footer.textContent = W("permalink");
    if (!state.model && data.models.length) state.model = data.models[0].name;
    ui.modelSelect.value = state.model;
    if (document.activeElement !== ui.textInput) ui.textInput.value = state.text;
    listExamples();
    if (state.tab === "model") renderModel(); else if (state.tab === "translate") renderTranslate(); else renderExample();
  }

  // the five worked examples, grouped under the title of the post each comes from
  function listExamples() {
    ui.exampleList.textContent = "";
    var groups = [];
    data.examples.forEach(function (x) {
      var post = x.post ? x.post.id : "";
      var g = groups.filter(function (g) { return g.post === post; })[0];
      if (!g) { g = { post: post, title: x.post ? x.post.title[state.lang] : "", items: [] }; groups.push(g); }
      g.items.push(x);
    });
    groups.forEach(function (g) {
      var box = el("div", "qkv-ex-group"); box.setAttribute("data-post", g.post);
      box.appendChild(el("p", "qkv-ex-post", W("fromPost", { title: g.title })));
      var list = el("ul");
      g.items.forEach(function (x) {
        var li = el("li"), b = button("qkv-ex-item", x.title[state.lang]);
        b.setAttribute("data-example", x.name);
        b.addEventListener("click", function () {
          state.example = x.name; state.part = 0; state.cell = null; state.whatif = null; data.uploaded = null;
          state.practice = "";
          writeURL(true); render();
          if (window.innerWidth < 900 && ui.exampleBody.scrollIntoView) ui.exampleBody.scrollIntoView({ block: "start" });
        });
        li.appendChild(b); list.appendChild(li);
      });
      box.appendChild(list); ui.exampleList.appendChild(box);
    });
    markExample();
  }
  function markExample() {
    Array.prototype.forEach.call(ui.exampleList.querySelectorAll(".qkv-ex-item"), function (b) {
      var on = b.getAttribute("data-example") === state.example;
      b.classList.toggle("qkv-on", on); b.setAttribute("aria-current", on ? "true" : "false");
    });
  }

  // ------------------------------------------------------------------ your text: overview and one head
  function renderModel() {
    ui.modelError.textContent = ""; ui.modelError.removeAttribute("data-empty");
    ui.modelBody.textContent = "";
    root.setAttribute("data-view", state.view || "");
    if (!state.text || !state.view) return;
    if (state.view === "head" && state.layer !== null && state.head !== null) return renderHead();
    begin();
    var key = state.model + "\u0000" + state.text;
    var ready = data.overview && data.overview.key === key ? Promise.resolve(data.overview)
      : api("overview", { model: state.model, text: state.text, lang: state.lang }).then(function (o) { o.key = key; data.overview = o; return o; });
    ready.then(drawOverview, showModelError).then(end, end);
  }
  function showModelError(err) { say(ui.modelError, err); }
  // a model with its size said in words: "minilm (6 layers × 12 heads)", not a bare "6 × 12"
  function modelOption(name, layers, heads) { return W("modelOption", { name: name, layers: layers, heads: heads }); }

  function drawOverview(o) {
    ui.modelBody.textContent = "";
    var box = el("div", "qkv-panel qkv-overview");
    box.appendChild(el("h2", null, W("overview") + " — " + modelOption(o.model, o.shape[0], o.shape[1]) + ", " +
      W("tokenCount", { n: o.shape[2] })));
    box.appendChild(el("p", "qkv-note", W("overviewHint")));
    var note = readingNote(o);
    if (note) box.insertBefore(note, box.children[1]);
    box.appendChild(thumbnails(o, openHead));
    box.appendChild(V.legend({ masked: false, label: W("legendPlain") }));     // a thumbnail draws no hatching
    ui.modelBody.appendChild(box);
    var m = modelInfo();
    if (m && m.kind === "CausalLM") drawNext(o);
  }

  // a decoder's next token and the heads that moved the last token (GET /api/next: qkv.models.next_token)
  function drawNext(o) {
    var box = el("div", "qkv-next-box"); ui.modelBody.appendChild(box);
    var key = o.key;
    begin();
    var ready = data.next && data.next.key === key ? Promise.resolve(data.next)
      : api("next", { model: state.model, text: state.text, lang: state.lang }).then(function (n) { n.key = key; data.next = n; return n; });
    ready.then(function (n) { window.qkvLenses.nextToken(box, n, VW(), { digits: DIGITS }); },
      function (err) { box.appendChild(el("p", "qkv-error", W("error") + ": " + err.message)); }).then(end, end);
  }

  // the model does not read (part of) the text: its tokenizer's [UNK] and taken-apart pieces, counted by the
  // server from the tokenizer's output (qkv.models.reading); Korean text gets a model that reads it named
  function readingNote(o) {
    var r = o.reading;
    if (!r || !(r.unknown + r.split > 0)) return null;
    // each kind counted apart ("3 are [UNK] … and 4 are letters taken apart (e.g. ᄆ ##ᅢ)"), only the kinds there
    // are; the examples are of the pieces taken apart ([UNK] is its own example), as on the command line
    var examples = r.examples.filter(function (piece) { return piece !== r.unknown_token; }).join(" ");
    // "letters taken apart into jamo" only where the pieces are jamo (MiniLM's WordPiece); a byte-level tokenizer
    // (GPT-2's) takes Hangul apart into bytes: "pieces taken apart"
    var jamo = r.hangul > 0 && /[\u1100-\u11ff\u3130-\u318f]/.test(examples);
    var kinds = [];
    if (r.unknown) kinds.push(W("readingUnknown", { n: r.unknown }));
    if (r.split) kinds.push(W(jamo ? "readingSplitKorean" : "readingSplitOther", { n: r.split, examples: examples }));
    var unread = kinds.length === 1 ? kinds[0] : W("readingBoth", { unknown: kinds[0], split: kinds[1] });
    var values = { model: o.model, unread: unread, total: r.pieces, korean: r.korean };
    var p = el("p", "qkv-reading", W(r.hangul > 0 ? "readingKorean" : "readingOther", values));
    p.setAttribute("role", "note"); p.setAttribute("data-unread", String(r.unknown + r.split));
    return p;
  }

  // every layer × head of weights [L, H, T, S] sent as base64 uint8: one small picture each
  function thumbnails(o, onClick) {
    var L = o.shape[0], H = o.shape[1], T = o.shape[2], S = o.shape[3];
    var bytes = atob(o.weights);
    var grid = el("div", "qkv-ov-grid");
    grid.style.gridTemplateColumns = "max-content repeat(" + H + ", minmax(0, 1fr))";
    grid.appendChild(el("span", "qkv-ov-col qkv-ov-corner", W("head") + " →"));
    for (var h = 0; h < H; h++) grid.appendChild(el("span", "qkv-ov-col", String(h)));
    for (var l = 0; l < L; l++) {
      grid.appendChild(el("span", "qkv-ov-row", W("layerN", { layer: l })));
      for (h = 0; h < H; h++) {
        var b = button("qkv-thumb");
        b.setAttribute("data-layer", l); b.setAttribute("data-head", h);
        b.title = W("layerHead", { layer: l, head: h });
        b.setAttribute("aria-label", b.title);
        var canvas = document.createElement("canvas"); canvas.width = S; canvas.height = T;
        canvas.setAttribute("aria-hidden", "true");      // the button's label names the head
        if (S !== T) canvas.className = "qkv-thumb-wide";
        var g = canvas.getContext("2d"), image = g.createImageData(S, T), base = ((l * H) + h) * T * S;
        for (var k = 0; k < T * S; k++) {
          var c = V.colour(bytes.charCodeAt(base + k) / o.scale);
          image.data[4 * k] = c[0]; image.data[4 * k + 1] = c[1]; image.data[4 * k + 2] = c[2]; image.data[4 * k + 3] = 255;
        }
        g.putImageData(image, 0, 0);
        b.appendChild(canvas);
        b.addEventListener("click", onClick.bind(null, l, h));
        grid.appendChild(b);
      }
    }
    return grid;
  }

  function openHead(l, h) {
    state.view = "head"; state.layer = l; state.head = h; state.cell = null; writeURL(true); render();
  }

  var HEAD_STEPS = "q_heads,k_heads,v_heads,q_rotated?,k_rotated?,scores,scaled_scores,biased_scores?,mask?," +
    "softmax_max?,exp_scores?,exp_sum?,weights,out";

  function renderHead() {
    begin();
    var m = modelInfo();
    var key = [state.model, state.text, state.layer, state.head].join("\u0000");
    var ready = data.trace && data.traceKey === key ? Promise.resolve(data.trace)
      : api("trace", { model: state.model, text: state.text, layer: state.layer, head: state.head, steps: HEAD_STEPS,
        lang: state.lang }).then(function (t) { data.trace = t; data.traceKey = key; return t; });
    ready.then(function (trace) {
      ui.modelBody.textContent = "";
      var panel = el("div", "qkv-panel qkv-head");
      var nav = el("div", "qkv-bar");
      var back = button("qkv-back", W("back"));
      back.addEventListener("click", function () { state.view = "overview"; state.cell = null; writeURL(true); render(); });
      nav.appendChild(back);
      nav.appendChild(picker(W("layer"), "qkv-pick-layer", m ? m.layers : state.layer + 1, state.layer, function (v) { openHead(v, state.head); }));
      nav.appendChild(picker(W("head"), "qkv-pick-head", m ? m.heads : state.head + 1, state.head, function (v) { openHead(state.layer, v); }));
      panel.appendChild(nav);
      var meta = trace.meta || {}, grouped = meta.kv_head !== undefined && meta.n_kv_heads < meta.n_heads;
      panel.appendChild(el("h2", null, state.model + ": " + W("layerHead", { layer: state.layer, head: state.head }) +
        (grouped ? " (" + W("kvHead", { n: meta.kv_head }) + ")" : "")));
      var tokens = meta.tokens.map(String);
      ui.stepsBox = el("div", "qkv-steps");
      var lenses = el("div", "qkv-lens-box");
      panel.appendChild(traceView(trace, "", tokens, tokens, 0, {
        onCell: function (cell) { state.cell = cell; writeURL(false); loadSteps(cell[0]); if (lenses.follow) lenses.follow(cell); },
        headLabel: function () { return W("head") + " " + state.head; }
      }));
      ui.modelBody.appendChild(panel);
      ui.modelBody.appendChild(lenses);
      drawLenses(lenses, trace, tokens);
      ui.modelBody.appendChild(ui.stepsBox);
      if (state.cell) loadSteps(state.cell[0]);
    }, showModelError).then(end, end);
  }

  // Several heads at once, text coloured by attention and the neuron view of the chosen cell (lenses.js): the
  // layer's weights from /api/trace (the library's Trace), the products from /api/neuron (qkv.analysis.score_terms)
  function drawLenses(box, trace, tokens) {
    var layer = state.layer, head = state.head, T = tokens.length;
    var weightsOf = as3(stepOf(trace, "weights"))[0], first = state.cell ? state.cell[0] : T - 1;
    var recorded = V.jsonSource(trace, "", DIGITS);
    function strongest(i) { var best = 0; for (var j = 0; j < T; j++) if (weightsOf[i][j] > weightsOf[i][best]) best = j; return best; }
    var neuronBox = el("div", "qkv-neuron-box"), overlayBox = el("div"), textBox = el("div");
    box.appendChild(overlayBox); box.appendChild(textBox); box.appendChild(neuronBox);
    var panels = [];
    begin();
    api("trace", { model: state.model, text: state.text, steps: "layer " + layer + "/weights", lang: state.lang }).then(function (whole) {
      var w = as3(whole.steps[0]), fmtw = function (v) { return V.fmt(v, DIGITS); };
      var ctx = { tokens: tokens, heads: w.length, query: first, head: head, inks: data.inks,
        weight: function (h, i, j) { return w[h][i][j]; }, text: function (h, i, j) { return fmtw(w[h][i][j]); },
        // the open head's recorded mask (causal, a sliding window): a model's mask is the same for every head
        masked: function (h, i, j) { return recorded.masked(0, i, j); },
        headLabel: function (h) { return W("head") + " " + h; }, title: VW()["lens.overlay.title"] + " — " + W("layerN", { layer: layer }) };
      panels.push(window.qkvLenses.headsOverlay(overlayBox, ctx, VW()));
      panels.push(window.qkvLenses.textColour(textBox, ctx, VW()));
    }, function (err) { overlayBox.appendChild(el("p", "qkv-error", W("error") + ": " + err.message)); }).then(end, end);
    function neuron(i, j) {
      begin();
      api("neuron", { model: state.model, text: state.text, layer: layer, head: head, query: i, key: j, lang: state.lang }).then(function (n) {
        neuronBox.textContent = "";
        window.qkvLenses.neuron(neuronBox, n, VW(), { digits: DIGITS });
        neuronBox.appendChild(el("p", "qkv-note", VW()["lens.neuron.pick"]));
      }, function (err) { neuronBox.textContent = ""; neuronBox.appendChild(el("p", "qkv-error", W("error") + ": " + err.message)); }).then(end, end);
    }
    neuron(first, state.cell ? state.cell[1] : strongest(first));
    box.follow = function (cell) { panels.forEach(function (p) { p.setQuery(cell[0]); }); neuron(cell[0], cell[1]); };
  }

  // One explanation of a cell's steps into box: "loading", then the library's HTML in an open
  // <details>, or the error.
  function showSteps(box, endpoint, params) {
    if (!box) return;
    begin();
    box.textContent = ""; box.appendChild(el("p", "qkv-note", W("loading")));
    api(endpoint, params).then(function (r) {
      box.textContent = "";
      box.appendChild(explanation(r.html));
    }, function (err) { box.textContent = ""; box.appendChild(el("p", "qkv-error", W("error") + ": " + err.message)); })
      .then(end, end);
  }
  function explanation(html) {
    var details = el("details", "qkv-steps-box"); details.open = true;
    details.appendChild(el("summary", null, W("steps")));
    var holder = el("div"); holder.innerHTML = html;     // the library's HTML, tokens escaped by it
    details.appendChild(holder);
    return details;
  }

  function loadSteps(query) {
    showSteps(ui.stepsBox, "explain", { model: state.model, text: state.text, layer: state.layer, head: state.head,
      query: query, lang: state.lang });
  }

  function picker(label, cls, count, value, onChange) {
    var wrap = el("label", null, label + " "), select = el("select", cls);
    for (var i = 0; i < count; i++) { var o = el("option", null, String(i)); o.value = i; select.appendChild(o); }
    select.value = value;
    select.addEventListener("change", function () { onChange(+select.value); });
    wrap.appendChild(select); return wrap;
  }

  // ------------------------------------------------------------------ one attention part: matrix, cell, step-through
  // opts: onCell([i, j]); headLabel(h); cellTitle(i, j); hover(i, j, text); query (the followed row)
  var stepKeys = null;       // the step-through the ← → keys drive (the last one drawn)
  function sourceOf(trace, prefix) {
    var src = V.jsonSource(trace, prefix, DIGITS);
    if (src.has("v_heads") || !stepOf(trace, prefix + "v")) return src;
    // the group meeting gives each token's answer as "v" (Tk, Dv), not split into heads: the same rows
    var v = V.jsonSource({ steps: [Object.assign({}, stepOf(trace, prefix + "v"), { name: "v_heads" })] }, "", DIGITS);
    var out = Object.assign({}, src);
    ["has", "shape", "value", "text", "formula"].forEach(function (f) {
      out[f] = function (name) { return name === "v_heads" ? v[f].apply(null, arguments) : src[f].apply(null, arguments); };
    });
    return out;
  }
  function traceView(trace, prefix, qTokens, kTokens, headIndex, opts) {
    // the cell's derivation may read a meeting's given value rows; the step-through reads what is recorded
    var src = V.jsonSource(trace, prefix, DIGITS), cellSrc = sourceOf(trace, prefix);
    var weights = as3(stepOf(trace, prefix + "weights"));
    var H = weights.length, tq = weights[0].length, tk = weights[0][0].length, h = headIndex;
    var qBase = tokenBase(trace) + (opts.qFrom || 0);   // query row 0 shown as its token's number (tokensFor's qFrom)
    var kvHeads = src.has("k_heads") ? src.shape("k_heads")[0] : H, kv = Math.floor(h / Math.max(1, H / kvHeads));
    var box = el("div", "qkv-trace"), left = el("div", "qkv-trace-matrix"), right = el("div", "qkv-trace-cell");
    left.appendChild(el("p", "qkv-note", W("cellHint") + " " + W("cellKeys")));
    var scroll = el("div", "qkv-matrix-box");
    left.appendChild(scroll);
    var view = V.matrix(scroll, {
      tq: tq, tk: tk, qTokens: qTokens, kTokens: kTokens, label: W("matrixLabel"),
      // a label's tooltip numbers its token as the page does (the translator's rows: word t, from 1)
      qBase: opts.rowBase !== undefined ? opts.rowBase : qBase, kBase: tokenBase(trace),
      value: function (i, j) { return src.value("weights", h, i, j); },
      text: function (i, j) { return src.text("weights", h, i, j); },
      masked: function (i, j) { return src.masked(h, i, j); }
    });
    view.canvas.classList.add("qkv-matrix-canvas");
    var info = el("div", "qkv-info"); left.appendChild(info);
    info.setAttribute("aria-live", "polite");          // the cell the keys moved to, read out
    var anyMasked = false;            // the hatched swatch and its words only where a cell is masked
    for (var mi = 0; mi < tq && !anyMasked; mi++) for (var mj = 0; mj < tk; mj++) if (src.masked(h, mi, mj)) { anyMasked = true; break; }
    left.appendChild(V.legend({ masked: anyMasked, label: W(anyMasked ? "legend" : "legendPlain") }));
    var cellBox = el("div", "qkv-cell qkv-panel"); cellBox.hidden = true; right.appendChild(cellBox);
    box.appendChild(left); box.appendChild(right);
    var stepBox = el("section", "qkv-panel qkv-stepper");
    box.appendChild(stepBox);
    var marks = { read: [], write: [] }, cellSize = 20;
    var followed = state.cell && state.cell[0] < tq ? state.cell[0] : Math.min(tq - 1, (trace.meta && typeof trace.meta.query === "number" && prefix === "") ? trace.meta.query : 0);

    function size() {
      var avail = Math.max(160, (left.clientWidth || root.clientWidth || 600) - 100);
      // labels need 12 px cells: a long text keeps them and scrolls inside its box instead of losing them
      cellSize = Math.max(12, V.fitCell(Math.max(tq, tk), Math.min(620, avail)));
    }
    function draw() {
      view.draw({ cell: cellSize, frame: state.cell && state.cell[0] < tq && state.cell[1] < tk ? state.cell : null,
        rows: [followed], read: marks.read, write: marks.write, maskedText: VW().masked });
      view.canvas.setAttribute("data-geometry", [0, 0, view.geometry.cell, tq, tk].join(","));   // tests and tools
    }
    var stepper = V.stepper(stepBox, VW(), function (s) {
      marks = s ? { read: s.read || [], write: s.write || [] } : { read: [], write: [] };
      stepBox.setAttribute("data-step", s ? s.id : "");
      draw();
    });
    function focusKey(i) {
      if (state.cell && state.cell[0] === i) return state.cell[1];
      var best = 0, most = -1;
      for (var j = 0; j < tk; j++) { var w = src.masked(h, i, j) ? -1 : src.value("weights", h, i, j); if (w > most) { most = w; best = j; } }
      return best;
    }
    function steps(keep) {
      stepper.set(V.steps(src, { h: h, kv: kv, i: followed, j: focusKey(followed), qTokens: qTokens, kTokens: kTokens,
        heads: H, base: tokenBase(trace), qBase: qBase, headLabel: opts.headLabel || function (x) { return W("head") + " " + (x + headBase(trace)); } }, VW()), keep);
    }
    stepKeys = stepper;

    function describe(i, j) {          // the line under the matrix: the cell under the pointer (or the keys' cell)
      var shown = src.masked(h, i, j) ? W("blocked") : src.text("weights", h, i, j);
      info.textContent = opts.hover ? opts.hover(i, j, shown) : W("hover", { i: i + qBase, q: qTokens[i], j: j + tokenBase(trace), k: kTokens[j], w: shown });
    }
    view.canvas.addEventListener("mousemove", function (e) {
      var c = view.cellAt(e);
      if (!c) { info.textContent = ""; return; }
      describe(c[0], c[1]);
    });
    view.canvas.addEventListener("click", function (e) {
      var c = view.cellAt(e); if (!c) return;
      showCell(c[0], c[1], true);
      if (opts.onCell) opts.onCell(c);
    });
    // a query token's label follows that query, as the step-through's hint says: its strongest key's cell
    scroll.addEventListener("click", function (e) {
      var row = e.target.closest && e.target.closest(".qkv-mx-row");
      if (!row) return;
      var i = +row.getAttribute("data-index"), c = [i, focusKey(i)];
      showCell(c[0], c[1], true);
      if (opts.onCell) opts.onCell(c);
    });
    view.keys({                         // the keyboard: the shared matrix's keys (views.js)
      current: function () { return state.cell && state.cell[0] < tq && state.cell[1] < tk ? state.cell : [followed, focusKey(followed)]; },
      choose: function (i, j) { showCell(i, j, false); describe(i, j); if (opts.onCell) opts.onCell([i, j]); }
    });

    function showCell(i, j, fromUser) {
      state.cell = [i, j]; followed = i;
      cellBox.hidden = false;
      cellBox.setAttribute("data-cell", i + "," + j);
      var title = opts.cellTitle ? opts.cellTitle(i, j)
        : W("derivation", { i: i + qBase, q: qTokens[i], j: j + tokenBase(trace), k: kTokens[j] });
      var rows = V.cellRows(cellSrc, { h: h, kv: kv, i: i, j: j, rotated: false, base: tokenBase(trace),
        given: (trace.meta || {}).kind === "group-meeting" }, VW());
      V.derivation(cellBox, title, rotatedRows(rows, i, j), VW()).classList.add("qkv-derivation-cell");
      draw(); steps(true);
      if (fromUser) bringIntoView(cellBox);
    }
    // a RoPE head: the rotated q and k (what the score used) as rows of their own, after q and k
    function rotatedRows(rows, i, j) {
      if (!src.has("q_rotated")) return rows;
      var out = [];
      rows.forEach(function (r) {
        out.push(r);
        if (r.step === "k_heads") {
          out.push({ step: "q_rotated", label: W("qrot", { i: i + qBase }), html: V.vectorHtml(src, "q_rotated", h, i) });
          if (src.has("k_rotated")) out.push({ step: "k_rotated", label: W("krot", { j: j + tokenBase(trace) }), html: V.vectorHtml(src, "k_rotated", kv, j) });
        }
      });
      return out;
    }
    box.redraw = function () { size(); draw(); };
    requestAnimationFrame(function () {
      size(); draw(); steps(false);
      if (state.cell && state.cell[0] < tq && state.cell[1] < tk) showCell(state.cell[0], state.cell[1], false);
      else if (opts.autoCell) showCell(followed, focusKey(followed), false);   // a worked example opens on its followed query
    });
    views.push(box);
    return box;
  }
  function bringIntoView(node) {        // a phone shows the derivation below the matrix: bring it up
    var r = node.getBoundingClientRect(), height = window.innerHeight || document.documentElement.clientHeight;
    if (r.top > height * 0.8 || r.bottom < 0) node.scrollIntoView({ block: "start" });
  }
  var views = [];
  window.addEventListener("resize", function () {
    views = views.filter(function (v) { return v.isConnected; });
    views.forEach(function (v) { v.redraw(); });
  });
  document.addEventListener("keydown", function (e) {      // ← → step through (not while typing)
    if (!stepKeys || e.altKey || e.ctrlKey || e.metaKey || (e.key !== "ArrowRight" && e.key !== "ArrowLeft")) return;
    var t = e.target;
    if (t && t.closest && t.closest("select, input, textarea")) return;
    if (e.key === "ArrowRight") stepKeys.next(); else stepKeys.prev();
    e.preventDefault();
  });

  // ------------------------------------------------------------------ the translator: cross-attention
  function renderTranslate() {
    ui.translateError.textContent = ""; ui.translateError.removeAttribute("data-empty");
    ui.translateBody.textContent = "";
    root.setAttribute("data-view", state.view || "overview");
    if (!state.source || !data.translator) return;
    begin();
    var key = state.source + "\u0000" + state.to + "\u0000" + state.lang;
    var ready = data.translation && data.translation.key === key ? Promise.resolve(data.translation)
      : api("translate", { text: state.source, to: state.to, lang: state.lang }).then(function (t) { t.key = key; data.translation = t; return t; });
    ready.then(function (t) {
      var panel = el("div", "qkv-panel qkv-translation");
      panel.appendChild(el("h2", "qkv-translated", t.source.join(" ") + " → " + t.target.join(" ")));
      panel.appendChild(sureness(t));
      if (state.view === "head" && state.layer !== null && state.head !== null) {
        ui.translateBody.appendChild(panel);
        return drawCrossHead(t);
      }
      panel.appendChild(el("p", "qkv-note", W("crossHint")));
      panel.appendChild(thumbnails(t, function (l, h) {
        state.view = "head"; state.layer = l; state.head = h; state.cell = null; writeURL(true); render();
      }));
      panel.appendChild(V.legend({ masked: false, label: W("legendPlain") }));
      ui.translateBody.appendChild(panel);
    }, function (err) { say(ui.translateError, err); }).then(end, end);
  }

  // How sure the model was, worded as `qkv translate` prints it (texts.py cli.translate.*): each chosen
  // token's probability, the end's (or that no end came), the sentence's; below t.unsure_below the least
  // likely choice is named (index = number of words: the end).
  function TW(key, values) {
    var table = data.words.translate[state.lang] || data.words.translate.en;
    return V.fill(table[key] !== undefined ? table[key] : key, values || {});
  }
  function sureness(t) {
    var box = el("div", "qkv-sureness");
    var shown = t.target.map(function (w, i) { return w + "\u00a0" + t.probabilities[i].toFixed(3); });  // a word and its number stay on one line
    shown.push(t.end_probability === null ? TW("no_end", { limit: t.target.length })
      : TW("end", { p: t.end_probability.toFixed(3) }));
    box.appendChild(el("p", "qkv-probs", TW("probabilities",
      { tokens: shown.join(" · "), total: t.sequence_probability.toFixed(3) })));
    if (t.sequence_probability < t.unsure_below) {
      var low = t.least_likely;
      box.appendChild(el("p", "qkv-unsure", TW("unsure",
        { word: low.token === null ? TW("end_word") : low.token, p: low.probability.toFixed(3) })));
    }
    return box;
  }

  function drawCrossHead(t) {
    begin();
    return api("translate/trace", { text: state.source, to: state.to, layer: state.layer, lang: state.lang,
      steps: "q_heads,k_heads,v_heads,scores,scaled_scores,softmax_max?,exp_scores?,exp_sum?,weights,out" }).then(function (trace) {
      var panel = el("div", "qkv-panel qkv-head");
      var nav = el("div", "qkv-bar");
      var back = button("qkv-back", W("back"));
      back.addEventListener("click", function () { state.view = ""; state.cell = null; writeURL(true); render(); });
      nav.appendChild(back);
      function go(l, h) { state.layer = l; state.head = h; state.cell = null; writeURL(true); render(); }
      nav.appendChild(picker(W("layer"), "qkv-pick-layer", data.translator.layers, state.layer, function (v) { go(v, state.head); }));
      nav.appendChild(picker(W("head"), "qkv-pick-head", data.translator.heads, state.head, function (v) { go(state.layer, v); }));
      panel.appendChild(nav);
      panel.appendChild(el("h2", null, W("crossOf", { layer: state.layer, head: state.head })));
      // row t is word t of the translation (the CLI figure's rows); its query is the state at the token before it
      var before = trace.meta.tokens.map(String), words = t.target.map(String), english = trace.meta.key_tokens.map(String);
      panel.appendChild(el("p", "qkv-note qkv-cross-rows", W("crossRows", { lang: before[0] })));
      panel.appendChild(traceView(trace, "", words, english, state.head, {
        onCell: function (cell) { state.cell = cell; writeURL(false); crossSteps(cell[0]); },
        headLabel: function () { return W("head") + " " + state.head; }, rowBase: 1,
        cellTitle: function (i, j) { return W("crossCell", { t: i + 1, word: words[i], prev: before[i], k: english[j] }); },
        hover: function (i, j, shown) { return W("crossHover", { t: i + 1, word: words[i], k: english[j], w: shown }); }
      }));
      ui.translateBody.appendChild(panel);
      ui.crossSteps = el("div", "qkv-steps"); ui.translateBody.appendChild(ui.crossSteps);
      if (state.cell) crossSteps(state.cell[0]);
    }, function (err) { say(ui.translateError, err); }).then(end, end);
  }

  function crossSteps(row) {
    showSteps(ui.crossSteps, "translate/explain", { text: state.source, to: state.to, layer: state.layer,
      word: row + 1, lang: state.lang });
  }

  // ------------------------------------------------------------------ worked examples, what-if, uploads
  function exampleInfo(name) { return data.examples.filter(function (x) { return x.name === name; })[0]; }

  function renderExample() {
    ui.exampleError.textContent = "";
    if (data.uploaded && !state.example) {
      // the file is held in this page only: ask again in the chosen language
      if (data.uploaded.lang !== state.lang && data.uploaded.bytes) {
        begin();
        api("upload", { filename: data.uploaded.name, lang: state.lang }, { method: "POST", body: data.uploaded.bytes,
          headers: { "Content-Type": "application/octet-stream" } }).then(function (r) {
          data.uploaded.result = r; data.uploaded.lang = state.lang; drawExample(r);
        }, function (err) { say(ui.exampleError, err); }).then(end, end);
        return;
      }
      drawExample(data.uploaded.result);
      return;
    }
    ui.exampleBody.textContent = "";
    if (!state.example || !exampleInfo(state.example)) return;
    begin();
    var name = state.example, lang = state.lang;
    baseOf(name, lang).then(function (base) {
      ui.exampleBody.textContent = "";
      ui.exampleBody.appendChild(el("h2", "qkv-example-title", base.title));
      ui.exampleBody.appendChild(whatIfPanel(name, base));
      ui.resultBox = el("div", "qkv-result"); ui.exampleBody.appendChild(ui.resultBox);
      ui.exampleBody.appendChild(practicePanel(name));
      if (state.whatif && changed(state.whatif)) return recompute(true);
      showResult(base);
    }, function (err) { say(ui.exampleError, err); }).then(end, end);
  }
  // the example as its post has it (cached per language): the what-if compares with it
  function baseOf(name, lang) {
    var key = name + "\u0000" + lang;
    if (data.base[key]) return Promise.resolve(data.base[key]);
    return api("example", { name: name, lang: lang }).then(function (r) { data.base[key] = r; return r; });
  }

  function showResult(result) {
    data.result = result;
    ui.resultBox.textContent = "";
    drawExample(result, ui.resultBox);
    updateReadouts(result);
  }

  function drawExample(result, into) {
    var box = into || ui.exampleBody;
    box.textContent = "";
    var trace = result.trace, parts = partsOf(trace);
    var panel = el("div", "qkv-panel qkv-example");
    if (!into) panel.appendChild(el("h2", "qkv-example-title", result.title + (result.name ? "" : " — " + W("uploaded"))));
    if (!parts.length) {
      panel.appendChild(flowView(trace));
    } else {
      var index = Math.min(state.part, parts.length - 1), part = parts[index];
      var w = as3(stepOf(trace, part.prefix + "weights")), H = w.length;
      var bar = el("div", "qkv-bar");
      if (parts.length > 1) {
        var wrap = el("label", null, W("part") + " "), select = el("select", "qkv-pick-part");
        parts.forEach(function (p, i) { var o = el("option", null, p.label); o.value = i; select.appendChild(o); });
        select.value = index;
        select.addEventListener("change", function () { state.part = +select.value; state.cell = null; writeURL(true); drawExample(result, into); });
        wrap.appendChild(select); bar.appendChild(wrap);
      }
      var holder = el("div");
      var tok = tokensFor(trace, part.prefix, w[0].length, w[0][0].length);
      var viewFor = function (h) {
        return traceView(trace, part.prefix, tok.q, tok.k, h, { onCell: function () { writeURL(false); }, autoCell: true, qFrom: tok.qFrom });
      };
      if (H > 1) {
        var base = headBase(trace), wrapH = el("label", null, W("head") + " "), pick = el("select", "qkv-pick-head");
        for (var h = 0; h < H; h++) { var o = el("option", null, String(h + base)); o.value = h; pick.appendChild(o); }
        pick.addEventListener("change", function () { holder.textContent = ""; holder.appendChild(viewFor(+pick.value)); });
        wrapH.appendChild(pick); bar.appendChild(wrapH);
      }
      panel.appendChild(bar);
      holder.appendChild(viewFor(0));
      panel.appendChild(holder);
    }
    box.appendChild(panel);
    var steps = el("div", "qkv-steps"); steps.appendChild(explanation(result.html));
    box.appendChild(steps);
  }

  // a trace with no weights (the multi-head example: heads → concat → W_O): the step-through alone
  function flowView(trace) {
    var box = el("section", "qkv-panel qkv-stepper");
    var src = V.jsonSource(trace, "", DIGITS), meta = trace.meta || {};
    var ctl = V.stepper(box, VW(), function (s) { box.setAttribute("data-step", s ? s.id : ""); });
    stepKeys = ctl;
    if (!src.has("out")) { box.appendChild(el("p", "qkv-note", W("noWeights"))); return box; }
    var tokens = (meta.tokens || []).map(String), i = typeof meta.query === "number" ? meta.query : 0;
    var one = src.shape("out")[1] === 1;
    ctl.set(V.flowSteps(src, { i: one ? 0 : i, h: 0, qTokens: one && tokens[i] !== undefined ? [tokens[i]] : tokens,
      heads: meta.n_heads, headLabel: function (h) { return W("head") + " " + (h + headBase(trace)); } }, VW(), false));
    return box;
  }

  // ---------------------------------------------------------------- practice
  // qkv.practice on the server: GET /api/practice gives a drill's questions (any seed; fresh: new numbers of the same
  // shapes), POST /api/practice/check checks each typed answer (qkv.practice.check). views.js runs the questions.
  function practicePanel(name) {
    var WV = VW(), box = el("section", "qkv-panel qkv-practice"); box.setAttribute("data-example", name);
    box.appendChild(el("h3", null, WV.practice));
    box.appendChild(el("p", null, WV.practice_intro));
    var form = el("form", "qkv-bar qkv-pr-choose");
    var seedLabel = el("label", null, WV.practice_seed + " "), seed = el("input", "qkv-pr-seed");
    seed.type = "text"; seed.inputMode = "numeric"; seed.size = 9; seed.value = "0"; seed.autocomplete = "off";
    seedLabel.appendChild(seed); form.appendChild(seedLabel);
    var freshLabel = el("label", "qkv-toggle"), fresh = el("input", "qkv-pr-fresh"); fresh.type = "checkbox";
    freshLabel.appendChild(fresh); freshLabel.appendChild(el("span", null, " " + WV.practice_fresh_box)); form.appendChild(freshLabel);
    var start = el("button", "qkv-pr-start", WV.practice_start); start.type = "submit"; form.appendChild(start);
    var newer = button("qkv-pr-new", WV.practice_new); form.appendChild(newer);
    box.appendChild(form);
    box.appendChild(el("p", "qkv-note", WV.practice_serve));
    var error = el("p", "qkv-error qkv-pr-error"); box.appendChild(error);
    var run = el("div", "qkv-pr-run"); box.appendChild(run);
    function load(params) {
      error.textContent = "";
      begin();
      return api("practice", params).then(function (d) {
        seed.value = String(d.seed); fresh.checked = d.fresh;
        state.practice = d.seed + (d.fresh ? "f" : ""); writeURL(false);       // the drill is part of the permalink
        V.practiceRun(run, d, WV, function (k, typed) {
          begin();
          return api("practice/check", { lang: state.lang }, { method: "POST", headers: { "Content-Type": "application/json" },
            body: JSON.stringify({ name: name, seed: d.seed, fresh: d.fresh, question: k, answer: typed }) })
            .then(function (v) { end(); return v; }, function (e) { end(); throw e; });
        });
      }, function (e) { say(error, e); }).then(end, end);
    }
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      load({ name: name, lang: state.lang, seed: seed.value.trim() || "0", fresh: fresh.checked ? 1 : 0 });
    });
    newer.addEventListener("click", function () { load({ name: name, lang: state.lang, fresh: 1 }); });
    var linked = /^(\d+)(f?)$/.exec(state.practice || "");
    load({ name: name, lang: state.lang, seed: linked ? linked[1] : 0, fresh: linked && linked[2] ? 1 : 0 });
    return box;
  }

  // ---------------------------------------------------------------- what-if
  // state.whatif: {factor, sqrt_dk, cells: {matrix: {"i,j": value}}, scores: {meeting: {j: value}}}
  function normalWhatIf(b) {
    var w = { factor: 1, sqrt_dk: true, cells: {}, scores: {} };
    if (!b || typeof b !== "object") return w;
    if (typeof b.factor === "number") w.factor = b.factor;
    if (b.sqrt_dk === false) w.sqrt_dk = false;
    Object.keys(b.cells || {}).forEach(function (m) {
      w.cells[m] = {}; (b.cells[m] || []).forEach(function (e) { w.cells[m][e[0] + "," + e[1]] = e[2]; });
    });
    Object.keys(b.scores || {}).forEach(function (s) {
      w.scores[s] = {}; (b.scores[s] || []).forEach(function (e) { w.scores[s][e[0]] = e[1]; });
    });
    return w;
  }
  function body(w) {
    var b = { factor: w.factor, sqrt_dk: w.sqrt_dk, cells: {}, scores: {} };
    Object.keys(w.cells).forEach(function (m) {
      var list = Object.keys(w.cells[m]).map(function (k) { var ij = k.split(","); return [+ij[0], +ij[1], w.cells[m][k]]; });
      if (list.length) b.cells[m] = list;
    });
    Object.keys(w.scores).forEach(function (s) {
      var list = Object.keys(w.scores[s]).map(function (j) { return [+j, w.scores[s][j]]; });
      if (list.length) b.scores[s] = list;
    });
    return b;
  }
  function changed(w) {
    var b = body(w);
    return b.factor !== 1 || !b.sqrt_dk || Object.keys(b.cells).length > 0 || Object.keys(b.scores).length > 0;
  }
  function whatIf() { if (!state.whatif) state.whatif = normalWhatIf(null); return state.whatif; }

  var pending = 0, timer = null;
  function recompute(now) {
    clearTimeout(timer);
    var run = function () {
      var ticket = ++pending, w = whatIf();
      writeURL(false);
      ui.whatIfError.textContent = "";
      if (!changed(w)) { baseOf(state.example, state.lang).then(function (r) { if (ticket === pending) showResult(r); }); return; }
      begin();
      var b = body(w); b.name = state.example;
      ui.sentBody = b;               // an error's field (cells.x[1]) is read back to the cell it names
      api("whatif", { lang: state.lang }, { method: "POST", body: JSON.stringify(b), headers: { "Content-Type": "application/json" } })
        .then(function (r) { if (ticket === pending) showResult(r); },
          function (err) { if (ticket === pending) say(ui.whatIfError, placed(err)); })
        .then(end, end);
    };
    if (now) run(); else timer = setTimeout(run, 120);
  }

  // the what-if's names of a place, in the page's words
  function matrixName(m) { return m === "x" ? "X" : m === "memory" ? VW()["st.memory"] || "memory" : "W_" + m.slice(2).toUpperCase(); }
  function cellPlace(m, row, column) { return W("cellPlace", { matrix: matrixName(m), row: row, column: column }); }
  function scorePlace(trace, scene, j) {
    var s = ((trace.meta || {}).scenes || []).filter(function (x) { return x.name === scene; })[0];
    return W("scorePlace", { meeting: meetingName(trace, scene), token: s ? s.tokens[j] : String(j) });
  }
  // the server names an edit by its place in the request ("cells.x[1]", "scores.question[0]"): said as the cell
  function placed(err) {
    var m = /^(cells|scores)\.([^\[]+)\[(\d+)\]$/.exec(err.field || ""), b = ui.sentBody;
    if (!m || !b || !err.problem) return err;
    var edit = ((b[m[1]] || {})[m[2]] || [])[+m[3]];
    if (!edit) return err;
    var trace = (data.base[state.example + "\u0000" + state.lang] || {}).trace;
    var where = m[1] === "cells" ? cellPlace(m[2], rowName(trace, m[2], edit[0]), edit[1]) : scorePlace(trace || {}, m[2], edit[0]);
    return { message: where + ": " + err.problem };
  }
  function rowName(trace, m, i) {
    if (!trace || (m !== "x" && m !== "memory")) return String(i);
    var meta = trace.meta || {}, n = ((m === "x" ? meta.tokens : meta.key_tokens || meta.tokens) || []).length;
    var names = m === "x" ? tokensFor(trace, "", n, 0).q : tokensFor(trace, "", 0, n).k;     // as the editor's rows
    return names && names[i] !== undefined ? String(names[i]) : String(i);
  }

  function whatIfPanel(name, base) {
    var w = whatIf(), trace = base.trace, meeting = name === "group-meeting";
    var box = el("section", "qkv-panel qkv-whatif"); box.setAttribute("data-example", name);
    box.appendChild(el("h3", null, W("whatIf")));
    ui.readouts = [];
    if (meeting) {
      // the question words' score in the second meeting, 1 … 1000 on a log scale: lot's weight from ~1 to ~0
      var scenes = trace.meta.scenes || [], scene = scenes[scenes.length - 1];
      if (scene && scenes.length > 1) {
        // the question words: the tokens the second meeting adds to the first
        var questionWords = [];
        scene.tokens.forEach(function (t, j) { if (scenes[0].tokens.indexOf(t) < 0) questionWords.push(j); });
        var given = as3(stepOf(trace, scene.name + "/scores"))[0][0][questionWords[0]];
        var now = w.scores[scene.name] && w.scores[scene.name][questionWords[0]] !== undefined ? w.scores[scene.name][questionWords[0]] : given;
        var label = el("label", "qkv-slider"), text = el("span");
        var slider = el("input"); slider.type = "range"; slider.min = 0; slider.max = 3; slider.step = 0.01;
        slider.id = "qkv-question-score"; slider.value = String(Math.log10(Math.max(1, now)));
        var show = function (s) {
          text.textContent = W("questionScore", { tokens: questionWords.map(function (j) { return scene.tokens[j]; }).join(", "),
            meeting: meetingName(trace, scene.name), s: String(s) });
        };
        show(now);
        var questionPart = partsOf(trace).map(function (p) { return p.prefix; }).indexOf(scene.name + "/");
        slider.addEventListener("input", function () {
          var s = Math.round(Math.pow(10, +slider.value));
          if (questionPart >= 0 && state.part !== questionPart) { state.part = questionPart; state.cell = null; }
          w.scores[scene.name] = w.scores[scene.name] || {};
          questionWords.forEach(function (j) {
            if (s === given) delete w.scores[scene.name][j]; else w.scores[scene.name][j] = s;
            var input = (ui.scoreInputs[scene.name] || {})[j];       // the editor shows the same scores
            if (input) { input.value = String(s); input.classList.toggle("qkv-edited", s !== given); }
          });
          show(s); recompute(false);
        });
        label.appendChild(text); label.appendChild(slider); box.appendChild(label);
      }
      scenes.forEach(function (s) {
        var r = el("p", "qkv-readout"); r.setAttribute("data-scene", s.name);
        ui.readouts.push({ node: r, scene: s }); box.appendChild(r);
      });
    }
    // the factor on the scores (a temperature of 1/factor): 0 … 4
    var flabel = el("label", "qkv-slider"), ftext = el("span");
    var fslider = el("input"); fslider.type = "range"; fslider.min = 0; fslider.max = 4; fslider.step = 0.05;
    fslider.id = "qkv-factor"; fslider.value = String(w.factor);
    var fshow = function () {
      ftext.textContent = W("factor", { f: String(w.factor), t: w.factor === 0 ? "∞" : String(Math.round(1000 / w.factor) / 1000) });
    };
    fshow();
    fslider.addEventListener("input", function () { w.factor = Math.round(+fslider.value * 100) / 100; fshow(); recompute(false); });
    flabel.appendChild(ftext); flabel.appendChild(fslider); box.appendChild(flabel);
    if (!meeting) {
      var dk = base.d_k;
      var check = el("label", "qkv-toggle"), box2 = el("input"); box2.type = "checkbox"; box2.id = "qkv-sqrt-dk";
      box2.checked = w.sqrt_dk;
      box2.addEventListener("change", function () { w.sqrt_dk = box2.checked; recompute(true); });
      check.appendChild(box2); check.appendChild(el("span", null, " " + W("sqrtDk", { root: "√" + dk })));
      box.appendChild(check);
    }
    if (name === "multi-head") box.appendChild(el("p", "qkv-note", W("multiHeadNote")));
    // the followed query's weights (or the output): the post's numbers next to now
    ui.compare = el("div", "qkv-compare"); box.appendChild(ui.compare);
    box.appendChild(editor(name, base));
    var actions = el("div", "qkv-bar");
    var reset = button("qkv-reset", W("reset"));
    reset.addEventListener("click", function () { state.whatif = null; writeURL(true); render(); });
    actions.appendChild(reset);
    ui.changedLine = el("span", "qkv-note qkv-changed"); actions.appendChild(ui.changedLine);
    box.appendChild(actions);
    ui.whatIfError = el("p", "qkv-error qkv-whatif-error"); box.appendChild(ui.whatIfError);
    return box;
  }

  // editable inputs: the example's given matrices (or the meetings' scores), one text box per number
  function editor(name, base) {
    var w = whatIf(), trace = base.trace, details = el("details", "qkv-editor");
    ui.scoreInputs = {};
    var meeting = name === "group-meeting";
    details.appendChild(el("summary", null, meeting ? W("editScores") : name === "multi-head" ? W("editHeadOne") : W("editInputs")));
    var matrices = { "self-attention": ["x", "w_q", "w_k", "w_v"], "cross-attention": ["x", "memory", "w_q", "w_k", "w_v"],
      "projection": ["x", "w_q", "w_k", "w_v", "w_o"], "multi-head": ["x", "w_q", "w_k", "w_v", "w_o"] }[name] || [];
    // one box per number; place: where it is, in the reader's words ("W_Q, row 1, column 0"). What is not a
    // number is said at once, in those words, and not sent (the server would name an API path)
    function cellInput(value, edited, onValue, place) {
      var input = el("input", "qkv-edit" + (edited ? " qkv-edited" : "")); input.type = "text"; input.inputMode = "decimal";
      input.value = String(value).replace("-", "−"); input.size = 5;
      input.setAttribute("aria-label", place);
      input.addEventListener("change", function () {
        var t = input.value.trim().replace(/−/g, "-"), v = Number(t);
        if (t === "" || !/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(t) || !isFinite(v)) {
          input.setAttribute("aria-invalid", "true"); input.classList.add("qkv-invalid");
          ui.whatIfError.textContent = W("error") + ": " + W("notNumber", { where: place, value: input.value.trim() });
          return;
        }
        input.removeAttribute("aria-invalid"); input.classList.remove("qkv-invalid");
        onValue(v);
        input.classList.add("qkv-edited"); recompute(true);
      });
      return input;
    }
    var scroll = el("div", "qkv-table-scroll qkv-editor-tables");
    if (meeting) {
      (trace.meta.scenes || []).forEach(function (s) {
        var scores = as3(stepOf(trace, s.name + "/scores"))[0][0];
        var t = el("table", "qkv-mt qkv-edit-table"); t.setAttribute("data-scene", s.name);
        t.appendChild(el("caption", null, W("meeting", { meeting: meetingName(trace, s.name), tokens: s.tokens.join(" ") })));
        var head = el("tr"), row = el("tr");
        s.tokens.forEach(function (tok, j) {
          head.appendChild(el("th", null, tok));
          var mine = w.scores[s.name] && w.scores[s.name][j] !== undefined;
          var input = cellInput(mine ? w.scores[s.name][j] : scores[j], mine, function (v) {
            w.scores[s.name] = w.scores[s.name] || {}; w.scores[s.name][j] = v;
          }, scorePlace(trace, s.name, j));
          (ui.scoreInputs[s.name] = ui.scoreInputs[s.name] || {})[j] = input;
          var td = el("td"); td.appendChild(input);
          row.appendChild(td);
        });
        t.appendChild(head); t.appendChild(row); scroll.appendChild(t);
      });
    } else {
      matrices.forEach(function (m) {
        var values = (base.inputs || {})[m];
        if (!values) return;
        var t = el("table", "qkv-mt qkv-edit-table"); t.setAttribute("data-matrix", m);
        var chars = 3;                    // the longest number as shown: a phone sizes the boxes to it (serve.css)
        values.forEach(function (r) { r.forEach(function (v) { chars = Math.max(chars, String(v).length); }); });
        t.style.setProperty("--qkv-chars", String(chars));
        t.appendChild(el("caption", null, matrixName(m)));
        // X's rows are the tokens (the decoder's for cross-attention), memory's the encoder's words
        // (named in the page's language where the example names them per language, as everywhere)
        var labels = m === "x" ? tokensFor(trace, "", values.length, 0).q : m === "memory" ? tokensFor(trace, "", 0, values.length).k : null;
        values.forEach(function (r, i) {
          var tr = el("tr"); tr.appendChild(el("th", null, labels && labels[i] !== undefined ? String(labels[i]) : String(i)));
          r.forEach(function (v, j) {
            var key = i + "," + j, mine = w.cells[m] && w.cells[m][key] !== undefined;
            var td = el("td"); td.appendChild(cellInput(mine ? w.cells[m][key] : v, mine, function (value) {
              w.cells[m] = w.cells[m] || {}; w.cells[m][key] = value;
            }, cellPlace(m, labels && labels[i] !== undefined ? String(labels[i]) : String(i), j)));
            tr.appendChild(td);
          });
          t.appendChild(tr);
        });
        scroll.appendChild(t);
      });
    }
    details.appendChild(scroll);
    return details;
  }

  // what the what-if panel says after each answer: lot's weight per meeting, the followed query's row, what changed
  function updateReadouts(result) {
    if (!ui.compare) return;
    var trace = result.trace, base = data.base[state.example + "\u0000" + state.lang];
    (ui.readouts || []).forEach(function (r) {
      var lot = r.scene.tokens.lastIndexOf("lot");
      var now = as3(stepOf(trace, r.scene.name + "/weights")), was = base && as3(stepOf(base.trace, r.scene.name + "/weights"));
      if (!now || lot < 0) return;
      r.node.textContent = W("lotWeight", { meeting: meetingName(trace, r.scene.name), w: fmt(now[0][0][lot]),
        was: was ? fmt(was[0][0][lot]) : "?" });
      r.node.setAttribute("data-value", String(now[0][0][lot]));
    });
    ui.compare.textContent = "";
    var parts = partsOf(trace);
    if (parts.length && !(trace.meta && trace.meta.scenes) && base) {
      var prefix = parts[0].prefix, now = as3(stepOf(trace, prefix + "weights")), was = as3(stepOf(base.trace, prefix + "weights"));
      var i = typeof trace.meta.query === "number" ? trace.meta.query : 0;
      var tok = tokensFor(trace, prefix, now[0].length, now[0][0].length);
      var table = el("table", "qkv-mt qkv-compare-table");
      table.appendChild(el("caption", null, W("followed", { q: tok.q[i] }) +
        (now.length > 1 ? " — " + W("head") + " " + headBase(trace) : "")));
      var head = el("tr"); head.appendChild(el("th"));
      tok.k.forEach(function (k) { head.appendChild(el("th", null, k)); });
      table.appendChild(head);
      [[W("asPost"), was], [W("now"), now]].forEach(function (pair, n) {
        var tr = el("tr"); tr.appendChild(el("th", null, pair[0]));
        pair[1][0][i].forEach(function (v) {
          var td = el("td", "qkv-n", fmt(v)); td.setAttribute("data-value", String(v));
          var fill = V.colour(v);
          td.style.background = "rgb(" + fill.join(",") + ")"; td.style.color = V.ink(fill);
          tr.appendChild(td);
        });
        if (n === 1) tr.setAttribute("data-row", "now");
        table.appendChild(tr);
      });
      var wrap = el("div", "qkv-table-scroll"); wrap.appendChild(table); ui.compare.appendChild(wrap);
    } else if (!parts.length && base && stepOf(trace, "y") && stepOf(base.trace, "y")) {
      var yNow = as3(stepOf(trace, "y"))[0][0], yWas = as3(stepOf(base.trace, "y"))[0][0];
      var who = (trace.meta.tokens || [])[trace.meta.query];
      var t2 = el("table", "qkv-mt qkv-compare-table");
      t2.appendChild(el("caption", null, W("compareOut", { q: who })));
      [[W("asPost"), yWas], [W("now"), yNow]].forEach(function (pair, n) {
        var tr = el("tr"); tr.appendChild(el("th", null, pair[0]));
        pair[1].forEach(function (v) { var td = el("td", "qkv-n", fmt(v)); td.setAttribute("data-value", String(v)); tr.appendChild(td); });
        if (n === 1) tr.setAttribute("data-row", "now");
        t2.appendChild(tr);
      });
      var wrap2 = el("div", "qkv-table-scroll"); wrap2.appendChild(t2); ui.compare.appendChild(wrap2);
    }
    var w = state.whatif, what = [];
    if (w && changed(w)) {
      if (w.factor !== 1) what.push("× " + w.factor);
      if (!w.sqrt_dk) what.push("÷√d_k ✗");
      Object.keys(w.cells).forEach(function (m) {
        // typed as `qkv example --what-if` reads it: a row of x or memory is a token, numbered as the example
        // numbers its tokens (token_base); columns and a W's rows are subscripts from 0 (the API's keys count from 0)
        var rowBase = (m === "x" || m === "memory") && base ? tokenBase(base.trace) : 0;
        Object.keys(w.cells[m]).forEach(function (k) {
          var ij = k.split(",");
          what.push(m + "[" + (+ij[0] + rowBase) + "," + ij[1] + "] = " + String(w.cells[m][k]).replace("-", "−"));
        });
      });
      var scenes = (base && base.trace.meta.scenes) || [];
      Object.keys(w.scores).forEach(function (s) {
        var js = Object.keys(w.scores[s]), tokens = (scenes.filter(function (x) { return x.name === s; })[0] || {}).tokens || [];
        if (js.length) what.push(meetingName(trace, s) + ": " + js.map(function (j) { return (tokens[j] || j) + " → " + w.scores[s][j]; }).join(", "));
      });
    }
    ui.changedLine.textContent = what.length ? W("changed", { what: what.join("; ") }) : W("unchanged");
    root.setAttribute("data-whatif", what.length ? "1" : "0");
  }

  // ------------------------------------------------------------------ start
  window.addEventListener("popstate", function () { readURL(); render(); });
  readURL();
  build();
  begin();
  Promise.all([api("models"), api("examples"), api("style"), api("words")]).then(function (r) {
    V.setStyle(r[2]); data.inks = r[2].inks;
    data.models = r[0].models; data.examples = r[1].examples; data.translator = r[0].translator; data.words = r[3];
    if (state.tab === "translate" && !data.translator) state.tab = "example";
    data.models.forEach(function (m) {
      var o = el("option", null, modelOption(m.name, m.layers, m.heads)); o.value = m.name; ui.modelSelect.appendChild(o);
    });
    if (state.model && !modelInfo()) state.model = "";
    render();
  }, function (err) { root.appendChild(el("p", "qkv-error", String(err.message))); }).then(end, end);
  window.qkvServe = { state: state, data: data };
})();
