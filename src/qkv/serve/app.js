/* qkv serve: the page. Everything it shows comes from the JSON API (a model's Trace, the worked
   examples' Traces and their step-by-step explanations); it formats and draws, it never computes
   attention. The view's state lives in the URL (a permalink per view). */
(function () {
  "use strict";

  var WORDS = {
    en: {
      title: "qkv — attention, head by head", tabModel: "Your text", tabExample: "Worked examples",
      text: "Text", model: "Model", run: "Show attention", overview: "Every layer × head",
      overviewHint: "Each square is one head: rows are queries, columns are keys. Click one to open it.",
      layer: "layer", head: "head", back: "← all heads", query: "query", key: "key",
      cellHint: "Click a cell (query row, key column) for its derivation.",
      derivation: "Derivation of one cell", qrow: "query vector q (this head)", krow: "key vector k (this head)",
      score: "score q·k", scaled: "scaled score", biased: "with bias", mask: "mask",
      allowed: "may attend", blocked: "masked (−∞)", weight: "weight = softmax of the row",
      vrow: "value row v it weights", out: "output row z of this query = Σⱼ wⱼ·vⱼ",
      notRecorded: "not recorded in this trace", steps: "Step by step (the library's explanation of this query)",
      example: "Example", upload: "…or open an example file (TOML/JSON)", part: "part",
      legend: "colour: the weight, 0 (white) to 1 (dark blue), shaded by √weight so small weights stay visible; grey hatched: masked",
      loading: "computing…", error: "error", noWeights: "This example records no attention weights to draw; its derivation follows.",
      tokens: "tokens", uploaded: "uploaded file (held in this page only; not in the link)",
      permalink: "The address bar holds this view: copy it to come back.", shape: "shape",
      qrot: "q after RoPE (what the score uses)", krot: "k after RoPE (what the score uses)",
      maskedWeight: "masked: this query may not attend to this key (weight 0)", kvHead: "key/value head",
      textPlaceholder: "e.g. The cat sat on the mat.", tabTranslate: "Translator", sourceText: "English text (the translator's words)", into: "into", translate: "Translate",
      crossHint: "The decoder's cross-attention, every layer × head: rows are the words it wrote, columns the English words. Click one to open it.",
      crossOf: "cross-attention", crossRows: "Row i is the decoder's state for the token before word i+1 (the language token first): it asks the English words which matter for the word it writes next."
    },
    ko: {
      title: "qkv — 헤드별로 보는 어텐션", tabModel: "내 문장", tabExample: "예제",
      text: "문장", model: "모델", run: "어텐션 보기", overview: "모든 층 × 헤드",
      overviewHint: "네모 하나가 헤드 하나입니다. 행은 쿼리, 열은 키입니다. 클릭하면 열립니다.",
      layer: "층", head: "헤드", back: "← 모든 헤드", query: "쿼리", key: "키",
      cellHint: "칸(쿼리 행, 키 열)을 클릭하면 계산 과정이 나옵니다.",
      derivation: "한 칸의 계산 과정", qrow: "쿼리 벡터 q (이 헤드)", krow: "키 벡터 k (이 헤드)",
      score: "점수 q·k", scaled: "스케일된 점수", biased: "bias 더함", mask: "마스크",
      allowed: "볼 수 있음", blocked: "가려짐 (−∞)", weight: "가중치 = 행의 softmax",
      vrow: "가중치가 곱해지는 value 행 v", out: "이 쿼리의 출력 행 z = Σⱼ wⱼ·vⱼ",
      notRecorded: "이 trace에 기록되지 않음", steps: "단계별 계산 (이 쿼리에 대한 라이브러리의 설명)",
      example: "예제", upload: "…또는 예제 파일 열기 (TOML/JSON)", part: "부분",
      legend: "색: 가중치 0 (흰색) ~ 1 (진한 파랑), 작은 가중치도 보이도록 √가중치로 칠함; 회색 빗금: 마스크",
      loading: "계산 중…", error: "오류", noWeights: "이 예제에는 그릴 어텐션 가중치가 없습니다. 아래에 계산 과정이 있습니다.",
      tokens: "토큰", uploaded: "올린 파일 (이 페이지에만 있음, 링크에는 없음)",
      permalink: "주소창이 이 화면을 담고 있습니다. 복사해 두면 다시 올 수 있습니다.", shape: "형태",
      qrot: "RoPE 적용 후 q (점수에 쓰임)", krot: "RoPE 적용 후 k (점수에 쓰임)",
      maskedWeight: "마스크됨: 이 쿼리는 이 키를 볼 수 없음 (가중치 0)", kvHead: "키/값 헤드",
      textPlaceholder: "예: 고양이가 매트 위에 앉았다.", tabTranslate: "번역기", sourceText: "영어 문장 (번역기가 아는 단어)", into: "번역할 언어", translate: "번역하기",
      crossHint: "디코더의 cross-attention, 모든 층 × 헤드: 행은 디코더가 쓴 단어, 열은 영어 단어입니다. 클릭하면 열립니다.",
      crossOf: "cross-attention", crossRows: "행 i는 단어 i+1 바로 앞 토큰(맨 앞은 언어 토큰)에서의 디코더 상태입니다. 다음에 쓸 단어에 어떤 영어 단어가 중요한지 묻습니다."
    }
  };
  var DIGITS = 4;
  var root = document.getElementById("app");
  var state = { tab: "model", model: "", text: "", view: "", layer: null, head: null, cell: null,
    example: "", part: 0, lang: "en", source: "", to: "ko" };
  var data = { models: [], examples: [], overview: null, trace: null, traceKey: "", uploaded: null };
  var busy = 0;

  function W(key) { return (WORDS[state.lang] || WORDS.en)[key]; }

  // ------------------------------------------------------------------ URL ⇄ state
  function readURL() {
    var p = new URLSearchParams(location.search);
    state.tab = ["example", "translate"].indexOf(p.get("tab")) >= 0 ? p.get("tab") : "model";
    state.source = p.get("source") || "";
    state.to = p.get("to") === "ja" ? "ja" : "ko";
    state.model = p.get("model") || "";
    state.text = p.get("text") || "";
    state.view = p.get("view") || "";
    state.layer = p.has("layer") ? +p.get("layer") : null;
    state.head = p.has("head") ? +p.get("head") : null;
    var c = (p.get("cell") || "").split(",");
    state.cell = c.length === 2 && c[0] !== "" ? [+c[0], +c[1]] : null;
    state.example = p.get("example") || "";
    state.part = +(p.get("part") || 0);
    state.lang = p.get("lang") === "ko" ? "ko" : "en";
  }
  function writeURL(push) {
    var p = new URLSearchParams();
    if (state.tab === "example") {
      p.set("tab", "example");
      if (state.example) p.set("example", state.example);
      if (state.part) p.set("part", state.part);
    } else if (state.tab === "translate") {
      p.set("tab", "translate");
      if (state.source) { p.set("source", state.source); p.set("to", state.to); }
      if (state.view === "head") { p.set("view", "head"); p.set("layer", state.layer); p.set("head", state.head); }
    } else {
      if (state.model) p.set("model", state.model);
      if (state.text) p.set("text", state.text);
      if (state.view) p.set("view", state.view);
      if (state.view === "head") { p.set("layer", state.layer); p.set("head", state.head); }
    }
    if (state.cell) p.set("cell", state.cell.join(","));
    if (state.lang !== "en") p.set("lang", state.lang);
    var url = location.pathname + (p.toString() ? "?" + p.toString() : "");
    if (url !== location.pathname + location.search) history[push ? "pushState" : "replaceState"](null, "", url);
  }

  // ------------------------------------------------------------------ small helpers
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }
  function api(path, params, options) {
    var q = new URLSearchParams(params || {}).toString();
    return fetch("/api/" + path + (q ? "?" + q : ""), options || {}).then(function (r) {
      return r.json().then(function (body) {
        if (!r.ok) throw new Error(body.error || ("HTTP " + r.status));
        return body;
      });
    });
  }
  function number(v) {              // a Trace JSON value: a number, or "inf" / "-inf" / "nan"
    if (typeof v === "string") return v === "inf" ? Infinity : v === "-inf" ? -Infinity : NaN;
    return v;
  }
  function fmt(v) {
    v = number(v);
    if (v === Infinity) return "∞";
    if (v === -Infinity) return "−∞";
    if (v !== v) return "NaN";
    var s = v.toFixed(DIGITS);
    if (/^-0\.0+$/.test(s)) s = s.slice(1);
    return s.replace("-", "−");
  }
  function allowed(v) {              // a recorded mask: booleans (True = may attend) or additive 0 / −∞
    if (typeof v === "boolean") return v;
    return !(number(v) === -Infinity);
  }
  // the one colour scale of every qkv view (qkv.explain.style, from /api/style): Blues at weight^γ
  var STYLE = { gamma: 0.5, stops: [[247, 251, 255], [8, 48, 107]], ticks: [0, 0.1, 0.5, 1], masked: "#d9d9d9" };
  function colour(w) {
    var stops = STYLE.stops, t = Math.pow(Math.max(0, Math.min(1, w)), STYLE.gamma) * (stops.length - 1);
    var k = Math.min(Math.floor(t), stops.length - 2), f = t - k, a = stops[k], b = stops[k + 1];
    return [Math.round(a[0] + f * (b[0] - a[0])), Math.round(a[1] + f * (b[1] - a[1])), Math.round(a[2] + f * (b[2] - a[2]))];
  }
  function setReady(flag) { root.setAttribute("data-ready", flag ? "1" : "0"); }
  function begin() { busy++; setReady(false); }
  function end() { busy = Math.max(0, busy - 1); if (!busy) setReady(true); }

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
      parts.push({ prefix: prefix, label: prefix ? prefix.slice(0, -1) : (trace.title || "weights") });
    });
    return parts;
  }
  function tokensFor(trace, prefix, tq, tk) {
    var meta = trace.meta || {}, q = meta.tokens, k = meta.key_tokens || meta.tokens;
    (meta.scenes || []).forEach(function (s) { if (prefix === s.name + "/") { q = s.tokens.slice(-tq); k = s.tokens; } });
    function fit(list, n) {
      if (list && list.length === n) return list.map(String);
      var out = []; for (var i = 0; i < n; i++) out.push(String(i)); return out;
    }
    return { q: fit(q, tq), k: fit(k, tk) };
  }

  // ------------------------------------------------------------------ layout
  var ui = {};
  function build() {
    root.textContent = "";
    var top = el("header", "qkv-top");
    ui.title = el("h1", null, "");
    top.appendChild(ui.title);
    var langs = el("div", "qkv-langs");
    ui.langButtons = {};
    [["en", "English"], ["ko", "한국어"]].forEach(function (pair) {
      var b = el("button", "qkv-lang", pair[1]); b.type = "button"; b.setAttribute("data-lang", pair[0]);
      b.addEventListener("click", function () { state.lang = pair[0]; writeURL(true); render(); });
      ui.langButtons[pair[0]] = b; langs.appendChild(b);
    });
    top.appendChild(langs);
    root.appendChild(top);

    var tabs = el("nav", "qkv-tabs");
    ui.tabModel = el("button", "qkv-tab", ""); ui.tabModel.type = "button"; ui.tabModel.setAttribute("data-tab", "model");
    ui.tabExample = el("button", "qkv-tab", ""); ui.tabExample.type = "button"; ui.tabExample.setAttribute("data-tab", "example");
    ui.tabModel.addEventListener("click", function () { state.tab = "model"; state.cell = null; writeURL(true); render(); });
    ui.tabExample.addEventListener("click", function () { state.tab = "example"; state.cell = null; writeURL(true); render(); });
    ui.tabTranslate = el("button", "qkv-tab", ""); ui.tabTranslate.type = "button"; ui.tabTranslate.setAttribute("data-tab", "translate");
    ui.tabTranslate.addEventListener("click", function () { state.tab = "translate"; state.cell = null; state.view = ""; writeURL(true); render(); });
    ui.tabTranslate.hidden = true;
    tabs.appendChild(ui.tabModel); tabs.appendChild(ui.tabExample); tabs.appendChild(ui.tabTranslate);
    root.appendChild(tabs);

    // your text
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
      state.text = ui.textInput.value; state.model = ui.modelSelect.value;
      state.view = "overview"; state.cell = null; writeURL(true); render();
    });
    ui.modelSelect.addEventListener("change", function () {
      state.model = ui.modelSelect.value; state.text = ui.textInput.value;
      if (state.view === "head") {       // the same head may not exist in the other model
        var m = modelInfo();
        if (!m || state.layer >= m.layers || state.head >= m.heads) state.view = "overview";
      }
      if (!state.view && state.text) state.view = "overview";
      state.cell = null; writeURL(true); render();
    });
    ui.modelPane.appendChild(form);
    ui.modelError = el("p", "qkv-error qkv-model-error"); ui.modelPane.appendChild(ui.modelError);
    ui.modelBody = el("div", "qkv-body"); ui.modelPane.appendChild(ui.modelBody);
    root.appendChild(ui.modelPane);

    // worked examples
    ui.examplePane = el("section", "qkv-pane qkv-example-pane");
    var choose = el("div", "qkv-form");
    ui.exampleLabel = el("label", "qkv-field qkv-field-small");
    ui.exampleWord = el("span");
    ui.exampleSelect = el("select"); ui.exampleSelect.id = "qkv-example";
    ui.exampleLabel.appendChild(ui.exampleWord); ui.exampleLabel.appendChild(ui.exampleSelect);
    ui.uploadLabel = el("label", "qkv-field qkv-field-small");
    ui.uploadWord = el("span");
    ui.uploadInput = el("input"); ui.uploadInput.type = "file"; ui.uploadInput.accept = ".toml,.json"; ui.uploadInput.id = "qkv-upload";
    ui.uploadLabel.appendChild(ui.uploadWord); ui.uploadLabel.appendChild(ui.uploadInput);
    choose.appendChild(ui.exampleLabel); choose.appendChild(ui.uploadLabel);
    ui.examplePane.appendChild(choose);
    ui.exampleError = el("p", "qkv-error qkv-example-error"); ui.examplePane.appendChild(ui.exampleError);
    ui.exampleBody = el("div", "qkv-body"); ui.examplePane.appendChild(ui.exampleBody);
    root.appendChild(ui.examplePane);
    ui.exampleSelect.addEventListener("change", function () {
      state.example = ui.exampleSelect.value; state.part = 0; state.cell = null; data.uploaded = null;
      writeURL(true); render();
    });
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
        state.example = ""; state.part = 0; state.cell = null; ui.exampleError.textContent = "";
        ui.exampleSelect.value = "";
        writeURL(true); drawExample(result);
      }, function (err) {
        ui.exampleError.textContent = W("error") + ": " + err.message;
      }).then(end, end);
      ui.uploadInput.value = "";          // choosing the same file again fires change again
    });

    // the translator's cross-attention
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
      state.source = ui.sourceInput.value; state.to = ui.toSelect.value; state.view = ""; state.cell = null;
      writeURL(true); render();
    });
    ui.translatePane.appendChild(tform);
    ui.translateError = el("p", "qkv-error qkv-translate-error"); ui.translatePane.appendChild(ui.translateError);
    ui.translateBody = el("div", "qkv-body"); ui.translatePane.appendChild(ui.translateBody);
    root.appendChild(ui.translatePane);

    ui.footer = el("p", "qkv-note qkv-footer"); root.appendChild(ui.footer);
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
    document.title = W("title");
    ui.title.textContent = W("title");
    Object.keys(ui.langButtons).forEach(function (l) { ui.langButtons[l].classList.toggle("qkv-on", l === state.lang); });
    ui.tabModel.textContent = W("tabModel"); ui.tabExample.textContent = W("tabExample");
    ui.tabTranslate.textContent = W("tabTranslate"); ui.tabTranslate.hidden = !data.translator;
    ui.tabTranslate.classList.toggle("qkv-on", state.tab === "translate");
    ui.sourceWord.textContent = W("sourceText"); ui.toWord.textContent = W("into"); ui.translateButton.textContent = W("translate");
    ui.translatePane.hidden = state.tab !== "translate";
    if (document.activeElement !== ui.sourceInput) ui.sourceInput.value = state.source;
    ui.toSelect.value = state.to;
    ui.tabModel.classList.toggle("qkv-on", state.tab === "model");
    ui.tabExample.classList.toggle("qkv-on", state.tab === "example");
    ui.textWord.textContent = W("text"); ui.modelWord.textContent = W("model"); ui.runButton.textContent = W("run");
    ui.textInput.placeholder = W("textPlaceholder"); ui.sourceInput.placeholder = "I love you";
    ui.exampleWord.textContent = W("example"); ui.uploadWord.textContent = W("upload");
    ui.footer.textContent = W("permalink");
    ui.modelPane.hidden = state.tab !== "model";
    ui.examplePane.hidden = state.tab !== "example";
    if (!state.model && data.models.length) state.model = data.models[0].name;
    ui.modelSelect.value = state.model;
    if (document.activeElement !== ui.textInput) ui.textInput.value = state.text;
    ui.exampleSelect.textContent = "";
    var blank = el("option", null, "—"); blank.value = ""; ui.exampleSelect.appendChild(blank);
    data.examples.forEach(function (x) {
      var o = el("option", null, x.name + " — " + x.title[state.lang]); o.value = x.name; ui.exampleSelect.appendChild(o);
    });
    ui.exampleSelect.value = state.example;
    if (state.tab === "model") renderModel(); else if (state.tab === "translate") renderTranslate(); else renderExample();
  }

  // ------------------------------------------------------------------ your text: overview and one head
  function renderModel() {
    ui.modelError.textContent = "";
    ui.modelBody.textContent = "";
    root.setAttribute("data-view", state.view || "");
    if (!state.text || !state.view) return;
    if (state.view === "head" && state.layer !== null && state.head !== null) return renderHead();
    begin();
    var key = state.model + "\u0000" + state.text;
    var ready = data.overview && data.overview.key === key ? Promise.resolve(data.overview)
      : api("overview", { model: state.model, text: state.text }).then(function (o) { o.key = key; data.overview = o; return o; });
    ready.then(drawOverview, showModelError).then(end, end);
  }
  function showModelError(err) { ui.modelError.textContent = W("error") + ": " + err.message; }

  function drawOverview(o) {
    ui.modelBody.textContent = "";
    var box = el("div", "qkv-panel qkv-overview");
    box.appendChild(el("h2", null, W("overview") + " — " + o.model + ": " + o.shape[0] + " × " + o.shape[1] + ", " +
      o.shape[2] + " " + W("tokens")));
    box.appendChild(el("p", "qkv-note", W("overviewHint")));
    box.appendChild(thumbnails(o, openHead));
    box.appendChild(legend());
    ui.modelBody.appendChild(box);
  }

  // every layer × head of weights [L, H, T, S] sent as base64 uint8: one small picture each
  function thumbnails(o, onClick) {
    var L = o.shape[0], H = o.shape[1], T = o.shape[2], S = o.shape[3];
    var bytes = atob(o.weights);
    var grid = el("div", "qkv-ov-grid");
    grid.style.gridTemplateColumns = "max-content repeat(" + H + ", minmax(0, 1fr))";
    grid.appendChild(el("span"));
    for (var h = 0; h < H; h++) grid.appendChild(el("span", "qkv-ov-col", String(h)));
    for (var l = 0; l < L; l++) {
      grid.appendChild(el("span", "qkv-ov-row", W("layer") + " " + l));
      for (h = 0; h < H; h++) {
        var button = el("button", "qkv-thumb"); button.type = "button";
        button.setAttribute("data-layer", l); button.setAttribute("data-head", h);
        button.title = W("layer") + " " + l + ", " + W("head") + " " + h;
        button.setAttribute("aria-label", button.title);
        var canvas = document.createElement("canvas"); canvas.width = S; canvas.height = T;
        if (S !== T) canvas.className = "qkv-thumb-wide";
        var g = canvas.getContext("2d"), image = g.createImageData(S, T), base = ((l * H) + h) * T * S;
        for (var k = 0; k < T * S; k++) {
          var c = colour(bytes.charCodeAt(base + k) / o.scale);
          image.data[4 * k] = c[0]; image.data[4 * k + 1] = c[1]; image.data[4 * k + 2] = c[2]; image.data[4 * k + 3] = 255;
        }
        g.putImageData(image, 0, 0);
        button.appendChild(canvas);
        button.addEventListener("click", onClick.bind(null, l, h));
        grid.appendChild(button);
      }
    }
    return grid;
  }

  function openHead(l, h) {
    state.view = "head"; state.layer = l; state.head = h; state.cell = null; writeURL(true); render();
  }

  function renderHead() {
    begin();
    var m = modelInfo();
    var key = [state.model, state.text, state.layer, state.head].join("\u0000");
    var ready = data.trace && data.traceKey === key ? Promise.resolve(data.trace)
      : api("trace", { model: state.model, text: state.text, layer: state.layer, head: state.head,
        steps: "q_heads,k_heads,v_heads,q_rotated?,k_rotated?,scores,scaled_scores,biased_scores?,mask?,weights,out" }).then(function (t) {
        data.trace = t; data.traceKey = key; return t;
      });
    ready.then(function (trace) {
      ui.modelBody.textContent = "";
      var panel = el("div", "qkv-panel qkv-head");
      var nav = el("div", "qkv-bar");
      var back = el("button", "qkv-back", W("back")); back.type = "button";
      back.addEventListener("click", function () { state.view = "overview"; state.cell = null; writeURL(true); render(); });
      nav.appendChild(back);
      nav.appendChild(picker(W("layer"), "qkv-pick-layer", m ? m.layers : state.layer + 1, state.layer, function (v) { openHead(v, state.head); }));
      nav.appendChild(picker(W("head"), "qkv-pick-head", m ? m.heads : state.head + 1, state.head, function (v) { openHead(state.layer, v); }));
      panel.appendChild(nav);
      var meta = trace.meta || {}, grouped = meta.kv_head !== undefined && meta.n_kv_heads < meta.n_heads;
      panel.appendChild(el("h2", null, state.model + ": " + W("layer") + " " + state.layer + ", " + W("head") + " " + state.head +
        (grouped ? " (" + W("kvHead") + " " + meta.kv_head + ")" : "")));
      var tokens = trace.meta.tokens.map(String);
      var view = traceView(trace, "", tokens, tokens, 0, function (cell) {
        state.cell = cell; writeURL(false); loadSteps(cell[0]);   // a cell replaces the entry: Back leaves the head
      });
      panel.appendChild(view);
      ui.modelBody.appendChild(panel);
      ui.stepsBox = el("div", "qkv-steps");
      ui.modelBody.appendChild(ui.stepsBox);
      if (state.cell) loadSteps(state.cell[0]);
    }, showModelError).then(end, end);
  }

  // One explanation of a cell's steps into box: "loading", then the library's HTML in an open
  // <details>, or the error.
  function showSteps(box, endpoint, params) {
    if (!box) return;
    begin();
    box.textContent = ""; box.appendChild(el("p", "qkv-note", W("loading")));
    api(endpoint, params).then(function (r) {
      box.textContent = "";
      var details = el("details", "qkv-steps-box"); details.open = true;
      details.appendChild(el("summary", null, W("steps")));
      var holder = el("div"); holder.innerHTML = r.html;     // the library's HTML, tokens escaped by it
      details.appendChild(holder); box.appendChild(details);
    }, function (err) { box.textContent = ""; box.appendChild(el("p", "qkv-error", W("error") + ": " + err.message)); })
      .then(end, end);
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

  function legend() {                // the scale with its ticks (placed at tick^γ), and the masked swatch
    var box = el("div", "qkv-legend"), scale = el("div", "qkv-legend-scale"), width = 260;
    var bar = document.createElement("canvas"); bar.width = width; bar.height = 10; bar.className = "qkv-legend-bar";
    var g = bar.getContext("2d");
    for (var x = 0; x < width; x++) {
      var c = colour(Math.pow(x / (width - 1), 1 / STYLE.gamma)); g.fillStyle = "rgb(" + c.join(",") + ")"; g.fillRect(x, 0, 1, 10);
    }
    scale.appendChild(bar);
    var ticks = el("div", "qkv-legend-ticks");
    STYLE.ticks.forEach(function (t) {
      var s = el("span", "qkv-num", String(t)); s.style.left = (Math.pow(t, STYLE.gamma) * 100) + "%"; ticks.appendChild(s);
    });
    scale.appendChild(ticks); box.appendChild(scale);
    var swatch = el("span", "qkv-legend-masked"); swatch.style.backgroundColor = STYLE.masked; box.appendChild(swatch);
    box.appendChild(el("span", "qkv-note", W("legend")));
    return box;
  }

  // ------------------------------------------------------------------ one attention part: matrix + cell derivation
  function traceView(trace, prefix, qTokens, kTokens, headIndex, onCell) {
    var weights = as3(stepOf(trace, prefix + "weights"));
    var H = weights.length, tq = weights[0].length, tk = weights[0][0].length;
    var mask = as3(stepOf(trace, prefix + "mask"));
    var box = el("div", "qkv-trace"), left = el("div", "qkv-trace-matrix"), right = el("div", "qkv-trace-cell");
    left.appendChild(el("p", "qkv-note", W("cellHint")));
    var scroll = el("div", "qkv-matrix-box");
    var canvas = document.createElement("canvas"); canvas.className = "qkv-matrix-canvas";
    scroll.appendChild(canvas); left.appendChild(scroll);
    var info = el("div", "qkv-info"); left.appendChild(info);
    left.appendChild(legend());
    var cellBox = el("div", "qkv-cell qkv-panel"); cellBox.hidden = true; right.appendChild(cellBox);
    box.appendChild(left); box.appendChild(right);
    var geometry = null;

    function draw() {
      var avail = Math.max(120, (left.clientWidth || root.clientWidth || 600) - 4);
      var g0 = canvas.getContext("2d"); g0.font = "11px sans-serif";
      var probe = Math.floor(avail / (tk + 4));
      var labels = probe >= 11, mL = 0, mT = 0;
      if (labels) {
        qTokens.forEach(function (t) { mL = Math.max(mL, g0.measureText(t).width); });
        kTokens.forEach(function (t) { mT = Math.max(mT, g0.measureText(t).width); });
        mL = Math.min(90, mL) + 8; mT = Math.min(90, mT) + 8;
      }
      var cell = Math.max(3, Math.min(44, Math.floor((avail - mL) / tk)));
      var dpr = window.devicePixelRatio || 1, width = mL + tk * cell, height = mT + tq * cell;
      geometry = { cell: cell, left: mL, top: mT };
      canvas.setAttribute("data-geometry", [mL, mT, cell, tq, tk].join(","));   // for tests and tools
      canvas.width = Math.ceil(width * dpr); canvas.height = Math.ceil(height * dpr);
      canvas.style.width = width + "px"; canvas.style.height = height + "px";
      var g = canvas.getContext("2d"); g.setTransform(dpr, 0, 0, dpr, 0, 0);
      g.fillStyle = "#fff"; g.fillRect(0, 0, width, height);
      var w = weights[headIndex];
      for (var i = 0; i < tq; i++) for (var j = 0; j < tk; j++) {
        var x = mL + j * cell, y = mT + i * cell;
        if (mask && !allowed(mask[Math.min(headIndex, mask.length - 1)][i][j])) {
          g.fillStyle = STYLE.masked; g.fillRect(x, y, cell, cell);
          g.strokeStyle = "#9e9e9e"; g.lineWidth = 1; g.beginPath();
          for (var s = -cell; s < cell; s += 4) { g.moveTo(x + Math.max(0, s), y + Math.max(0, -s)); g.lineTo(x + Math.min(cell, s + cell), y + Math.min(cell, cell - s)); }
          g.stroke();
          continue;
        }
        var c = colour(number(w[i][j])); g.fillStyle = "rgb(" + c.join(",") + ")"; g.fillRect(x, y, cell, cell);
        if (cell >= 40) {
          g.fillStyle = Math.pow(Math.max(0, number(w[i][j])), STYLE.gamma) > 0.6 ? "#fff" : "#222"; g.font = "10px monospace"; g.textAlign = "center"; g.textBaseline = "middle";
          g.fillText(fmt(w[i][j]).slice(0, 6), x + cell / 2, y + cell / 2);
        }
      }
      if (labels) {
        g.fillStyle = "#222"; g.font = "11px sans-serif"; g.textBaseline = "middle"; g.textAlign = "right";
        qTokens.forEach(function (t, i) { g.fillText(t, mL - 4, mT + (i + 0.5) * cell, mL - 6); });
        kTokens.forEach(function (t, j) {
          g.save(); g.translate(mL + (j + 0.5) * cell, mT - 4); g.rotate(-Math.PI / 2); g.textAlign = "left";
          g.fillText(t, 0, 0, mT - 6); g.restore();
        });
      }
      if (state.cell && state.cell[0] < tq && state.cell[1] < tk) {
        g.strokeStyle = "#d1495b"; g.lineWidth = 2;
        g.strokeRect(mL + state.cell[1] * cell + 1, mT + state.cell[0] * cell + 1, Math.max(2, cell - 2), Math.max(2, cell - 2));
      }
    }
    function cellAt(e) {
      var r = canvas.getBoundingClientRect();
      var j = Math.floor((e.clientX - r.left - geometry.left) / geometry.cell), i = Math.floor((e.clientY - r.top - geometry.top) / geometry.cell);
      return i >= 0 && j >= 0 && i < tq && j < tk ? [i, j] : null;
    }
    canvas.addEventListener("mousemove", function (e) {
      var c = cellAt(e);
      var masked = c && mask && !allowed(mask[Math.min(headIndex, mask.length - 1)][c[0]][c[1]]);
      info.textContent = c ? W("query") + " " + c[0] + " “" + qTokens[c[0]] + "” → " + W("key") + " " + c[1] + " “" + kTokens[c[1]] + "”: " +
        (masked ? W("blocked") : fmt(weights[headIndex][c[0]][c[1]])) : "";
    });
    canvas.addEventListener("click", function (e) {
      var c = cellAt(e); if (!c) return;
      showCell(c[0], c[1]); onCell(c);
    });

    function vec(step, a, b) {
      var s = as3(step); if (!s) return null;
      a = Math.min(a, s.length - 1);
      if (b >= s[a].length) return null;
      var span = el("span", "qkv-vec");
      s[a][b].forEach(function (v, d) {
        var n = el("span", "qkv-num", fmt(v)); n.setAttribute("data-value", String(v)); n.setAttribute("data-index", d);
        span.appendChild(n); span.appendChild(document.createTextNode(" "));
      });
      return span;
    }
    function one(step, h, i, j) {
      var s = as3(step); if (!s) return null;
      var v = s[Math.min(h, s.length - 1)][i][j];
      var n = el("span", "qkv-num", fmt(v)); n.setAttribute("data-value", String(v)); return n;
    }
    function row(table, label, stepName, node) {
      var tr = el("tr"); tr.setAttribute("data-step", stepName);
      tr.appendChild(el("td", null, label));
      var td = el("td");
      if (node) td.appendChild(node); else { td.className = "qkv-missing"; td.textContent = W("notRecorded"); }
      tr.appendChild(td); table.appendChild(tr);
    }
    function showCell(i, j) {
      state.cell = [i, j];
      var h = headIndex, qh = stepOf(trace, prefix + "q_heads"), kh = stepOf(trace, prefix + "k_heads");
      var vh = stepOf(trace, prefix + "v_heads"), out = stepOf(trace, prefix + "out");
      var kvHeads = kh && as3(kh) ? as3(kh).length : H, kv = Math.floor(h / Math.max(1, H / kvHeads));
      cellBox.hidden = false; cellBox.textContent = "";
      cellBox.setAttribute("data-cell", i + "," + j);
      cellBox.appendChild(el("h3", null, W("derivation") + ": " + W("query") + " " + i + " “" + qTokens[i] + "” → " +
        W("key") + " " + j + " “" + kTokens[j] + "”"));
      var table = el("table"); table.className = "qkv-derivation-cell";
      row(table, W("qrow") + " q[" + i + "]", "q_heads", vec(qh, h, i));
      row(table, W("krow") + " k[" + j + "]", "k_heads", vec(kh, kv, j));
      var qr = stepOf(trace, prefix + "q_rotated"), kr = stepOf(trace, prefix + "k_rotated");
      if (qr) row(table, W("qrot") + " q[" + i + "]", "q_rotated", vec(qr, h, i));
      if (kr) row(table, W("krot") + " k[" + j + "]", "k_rotated", vec(kr, kv, j));
      row(table, W("score"), "scores", one(stepOf(trace, prefix + "scores"), h, i, j));
      var ss = stepOf(trace, prefix + "scaled_scores");
      row(table, W("scaled") + (ss && ss.formula ? "  (" + ss.formula + ")" : ""), "scaled_scores", one(ss, h, i, j));
      var bs = stepOf(trace, prefix + "biased_scores");
      if (bs) row(table, W("biased"), "biased_scores", one(bs, h, i, j));
      var open = mask ? allowed(mask[Math.min(h, mask.length - 1)][i][j]) : true;
      if (mask) row(table, W("mask"), "mask", el("span", null, open ? W("allowed") : W("blocked")));
      var ws = stepOf(trace, prefix + "weights");
      row(table, W("weight") + (ws && ws.formula ? "  (" + ws.formula + ")" : ""), "weights",
        open ? one(ws, h, i, j) : el("span", "qkv-masked", W("maskedWeight")));
      row(table, W("vrow") + " v[" + j + "]", "v_heads", vec(vh, kv, j));
      row(table, W("out") + " z[" + i + "]", "out", vec(out, h, i));
      cellBox.appendChild(table);
      draw();
    }
    box.redraw = draw;
    requestAnimationFrame(function () {
      draw();
      if (state.cell && state.cell[0] < tq && state.cell[1] < tk) showCell(state.cell[0], state.cell[1]);
    });
    views.push(box);
    return box;
  }
  var views = [];
  window.addEventListener("resize", function () { views = views.filter(function (v) { return v.isConnected; }); views.forEach(function (v) { v.redraw(); }); });

  // ------------------------------------------------------------------ the translator: cross-attention
  function renderTranslate() {
    ui.translateError.textContent = "";
    ui.translateBody.textContent = "";
    root.setAttribute("data-view", state.view || "overview");
    if (!state.source || !data.translator) return;
    begin();
    var key = state.source + "\u0000" + state.to;
    var ready = data.translation && data.translation.key === key ? Promise.resolve(data.translation)
      : api("translate", { text: state.source, to: state.to }).then(function (t) { t.key = key; data.translation = t; return t; });
    ready.then(function (t) {
      var panel = el("div", "qkv-panel qkv-translation");
      var line = el("h2", "qkv-translated", t.source.join(" ") + " → " + t.target.join(" "));
      panel.appendChild(line);
      if (state.view === "head" && state.layer !== null && state.head !== null) {
        ui.translateBody.appendChild(panel);
        return drawCrossHead(t);
      }
      panel.appendChild(el("p", "qkv-note", W("crossHint")));
      panel.appendChild(thumbnails(t, function (l, h) {
        state.view = "head"; state.layer = l; state.head = h; state.cell = null; writeURL(true); render();
      }));
      panel.appendChild(legend());
      ui.translateBody.appendChild(panel);
    }, function (err) { ui.translateError.textContent = W("error") + ": " + err.message; }).then(end, end);
  }

  function drawCrossHead(t) {
    begin();
    return api("translate/trace", { text: state.source, to: state.to, layer: state.layer,
      steps: "q_heads,k_heads,v_heads,scores,scaled_scores,weights,out" }).then(function (trace) {
      var panel = el("div", "qkv-panel qkv-head");
      var nav = el("div", "qkv-bar");
      var back = el("button", "qkv-back", W("back")); back.type = "button";
      back.addEventListener("click", function () { state.view = ""; state.cell = null; writeURL(true); render(); });
      nav.appendChild(back);
      function go(l, h) { state.layer = l; state.head = h; state.cell = null; writeURL(true); render(); }
      nav.appendChild(picker(W("layer"), "qkv-pick-layer", data.translator.layers, state.layer, function (v) { go(v, state.head); }));
      nav.appendChild(picker(W("head"), "qkv-pick-head", data.translator.heads, state.head, function (v) { go(state.layer, v); }));
      panel.appendChild(nav);
      panel.appendChild(el("h2", null, W("crossOf") + " — " + W("layer") + " " + state.layer + ", " + W("head") + " " + state.head));
      panel.appendChild(el("p", "qkv-note", W("crossRows")));
      panel.appendChild(traceView(trace, "", trace.meta.tokens.map(String), trace.meta.key_tokens.map(String), state.head, function (cell) {
        state.cell = cell; writeURL(false); crossSteps(cell[0]);
      }));
      ui.translateBody.appendChild(panel);
      ui.crossSteps = el("div", "qkv-steps"); ui.translateBody.appendChild(ui.crossSteps);
      if (state.cell) crossSteps(state.cell[0]);
    }, function (err) { ui.translateError.textContent = W("error") + ": " + err.message; }).then(end, end);
  }

  function crossSteps(row) {
    showSteps(ui.crossSteps, "translate/explain", { text: state.source, to: state.to, layer: state.layer,
      word: row + 1, lang: state.lang });
  }

  // ------------------------------------------------------------------ worked examples and uploads
  function renderExample() {
    ui.exampleError.textContent = "";
    if (data.uploaded && !state.example) {
      // the file is held in this page only: ask again in the chosen language
      if (data.uploaded.lang !== state.lang && data.uploaded.bytes) {
        begin();
        api("upload", { filename: data.uploaded.name, lang: state.lang }, { method: "POST", body: data.uploaded.bytes,
          headers: { "Content-Type": "application/octet-stream" } }).then(function (r) {
          data.uploaded.result = r; data.uploaded.lang = state.lang; drawExample(r);
        }, function (err) { ui.exampleError.textContent = W("error") + ": " + err.message; }).then(end, end);
        return;
      }
      drawExample(data.uploaded.result);
      return;
    }
    ui.exampleBody.textContent = "";
    if (!state.example) return;
    begin();
    api("example", { name: state.example, lang: state.lang }).then(drawExample, function (err) {
      ui.exampleError.textContent = W("error") + ": " + err.message;
    }).then(end, end);
  }

  function drawExample(result) {
    ui.exampleBody.textContent = "";
    var trace = result.trace, parts = partsOf(trace);
    var panel = el("div", "qkv-panel qkv-example");
    panel.appendChild(el("h2", null, result.title + (result.name ? "" : " — " + W("uploaded"))));
    if (!parts.length) panel.appendChild(el("p", "qkv-note", W("noWeights")));
    else {
      var index = Math.min(state.part, parts.length - 1), part = parts[index];
      var w = as3(stepOf(trace, part.prefix + "weights")), H = w.length;
      var bar = el("div", "qkv-bar");
      if (parts.length > 1) {
        var wrap = el("label", null, W("part") + " "), select = el("select", "qkv-pick-part");
        parts.forEach(function (p, i) { var o = el("option", null, p.label); o.value = i; select.appendChild(o); });
        select.value = index;
        select.addEventListener("change", function () { state.part = +select.value; state.cell = null; writeURL(true); drawExample(result); });
        wrap.appendChild(select); bar.appendChild(wrap);
      }
      var head = { value: 0 };
      if (H > 1) {
        bar.appendChild(picker(W("head"), "qkv-pick-head", H, 0, function (v) {
          head.value = v; holder.textContent = ""; holder.appendChild(viewFor(v));
        }));
      }
      panel.appendChild(bar);
      var tok = tokensFor(trace, part.prefix, w[0].length, w[0][0].length);
      var holder = el("div");
      var viewFor = function (h) {
        return traceView(trace, part.prefix, tok.q, tok.k, h, function () { writeURL(false); });
      };
      holder.appendChild(viewFor(0));
      panel.appendChild(holder);
    }
    ui.exampleBody.appendChild(panel);
    var steps = el("div", "qkv-steps"); steps.innerHTML = result.html;    // the library's explanation
    ui.exampleBody.appendChild(steps);
  }

  // ------------------------------------------------------------------ start
  window.addEventListener("popstate", function () { readURL(); render(); });
  readURL();
  build();
  begin();
  Promise.all([api("models"), api("examples"), api("style")]).then(function (r) {
    STYLE = r[2];
    data.models = r[0].models; data.examples = r[1].examples; data.translator = r[0].translator;
    if (state.tab === "translate" && !data.translator) state.tab = "model";
    data.models.forEach(function (m) {
      var o = el("option", null, m.name + " (" + m.layers + " × " + m.heads + ")"); o.value = m.name; ui.modelSelect.appendChild(o);
    });
    if (state.model && !modelInfo()) state.model = "";
    render();
  }, function (err) { root.appendChild(el("p", "qkv-error", String(err.message))); }).then(end, end);
  window.qkvServe = { state: state, data: data };
})();
