"""The words of the next-token view and the several-heads views (qkv.models.nexttoken, explain/lenses.js), in
English and Korean: same keys, same placeholders. `qkv.explain.texts` merges them into its EN and KO tables;
the page words are ``page.*`` keys, so both pages (the offline page and `qkv serve`) receive them with the rest.
"""

from __future__ import annotations

__all__ = ["EN", "KO"]

EN: dict[str, str] = {
    # ------------------------------------------------------------------ errors
    "error.next.not_decoder": "the next token needs a decoder (a causal language model: GPT-2, Llama, …); this model "
                              "is a {kind}, which predicts no next token",
    "error.next.temperature": "the temperature must be a number greater than 0, got {value}",
    "error.next.k": "k must be a whole number from 1 to {top}, got {value}",
    # ------------------------------------------------------------------ the next token
    "page.next.title": "The next token",
    "page.next.lead": "After “{last}” (token {position}) the model gives each of its {vocab:token|tokens} a logit ℓ; the "
                      "probabilities are p = softmax(ℓ / T) over all of them. The {k:likeliest token|likeliest tokens}:",
    "page.next.temperature": "temperature T = {t}",
    "page.next.slider": "Each temperature's probabilities were computed by qkv in Python, softmax(ℓ / T) over all "
                        "{vocab:token|tokens}; the slider picks one of them ({n:temperature|temperatures}), the page computes nothing.",
    "page.next.rank": "#",
    "page.next.token": "token",
    "page.next.logit": "logit ℓ",
    "page.next.p": "probability",
    "page.next.rest": "the other {n:token|tokens} together: {p}",
    "page.next.top_is": "At T = {t} the likeliest token, “{token}”, has probability {p}.",
    "page.next.table": "the {k} likeliest next tokens at temperature {t}",
    "page.heads.title": "Which heads moved the last token",
    "page.heads.lead": "In each layer, head h's part of the attention output at “{last}” is c_h = z^h·W_O^h (its output "
                       "times its own rows of W_O; Σ_h c_h + b_O = Y). ‖c_h‖ is how far that head moved the last "
                       "token's residual stream; its share is ‖c_h‖ / Σ_g ‖c_g‖ over the layer's heads. The parts can "
                       "point different ways, so ‖Y − b_O‖ ≤ Σ_g ‖c_g‖.",
    "page.heads.most": "Moved it most: {list}.",
    "page.heads.item": "layer {l} head {h} (‖c‖ = {n})",
    "page.heads.layer": "layer {l}",
    "page.heads.y": "‖Y‖",
    "page.heads.cell": "layer {l}, head {h}: ‖c_h‖ = {n}, share {s}",
    "page.heads.grid": "each head's ‖c_h‖ at the last token and its share of its layer; darker: a larger share",
    "page.heads.normed": "In this model each layer adds N_out(Y), a norm of the attention output, to the residual "
                         "stream: c_h are the heads' parts of Y before that norm.",
    "page.heads.post_norm": "In this model the residual stream is normalised after the addition, N(x + Y): c_h are the "
                            "heads' parts of Y before that norm.",
    # ------------------------------------------------------------------ several heads at once
    "page.lens.query": "query",
    "page.lens.overlay.title": "Several heads at once",
    "page.lens.overlay.lead": "The heads of this layer overlaid: from the chosen query (left) a line to every key "
                              "(right) in each shown head's colour, as thick and as opaque as its weight. Switch "
                              "heads on and off below; the weights are written in the table under the lines.",
    "page.lens.overlay.toggles": "heads shown",
    "page.lens.overlay.label": "lines from “{q}” to every key, one colour per head, thickness by weight",
    "page.lens.overlay.table": "weights of “{q}”, one row per shown head",
    "page.lens.text.title": "Text coloured by attention",
    "page.lens.text.lead": "Each token's background is its weight from the chosen query in {head}; the weight is "
                           "written under it.",
    "page.lens.text.legend": "background: the weight, 0 (white) to 1 (dark blue)",
    "page.lens.neuron.title": "Neuron view: q·k dimension by dimension",
    "page.lens.neuron.lead": "The score q·k of the query “{q}” (token {qn}) and the key “{k}” (token {kn}) is the sum of "
                             "{dk} products q_i·k_i, one per dimension i; each bar is one product (blue: positive, red: "
                             "negative).",
    "page.lens.neuron.sum": "Σ q_i·k_i = {sum}; the recorded score q·k: {score}.",
    "page.lens.neuron.same": "They are equal to {d} decimals.",
    "page.lens.neuron.differs": "They differ in the last of {d} decimals: the model computed the score as one "
                                "matrix product in its own precision, the products here are summed in float64.",
    "page.lens.neuron.scaled": "Then the scaled score: {scaled}.",
    "page.lens.neuron.divided": "The scaled score divides it by √d_k: {score} ÷ √{dk} {eq} {scaled}.",
    "page.lens.neuron.pick": "Click a cell of the matrix for its pair.",
    "page.lens.neuron.left_out": "The neuron view is left out: every pair of this view is {n} products q_i·k_i, more "
                                 "than the {limit} a view holds. Show one layer (layer=) or a shorter text, or open "
                                 "the head in qkv serve, which computes any pair.",
    # ------------------------------------------------------------------ the neuron view as text (--terms)
    "help.output.key": "with --terms: only this key (a token, or its number as the explanation shows it; default: "
                       "every key)",
    "help.output.terms": "write the followed query's score with each key term by term: each product q_i·k_i, their "
                         "sum q·k and q·k ÷ √d_k (the neuron view, as text)",
    "error.terms.no_qk": "--terms writes q·k term by term, but this trace records no q and k beside its scores (its "
                         "scores were given, or it holds only the heads' outputs)",
    "error.terms.format": "--terms writes text; leave out --format (or give --format text)",
    "error.terms.key_alone": "--key picks the key that --terms writes out; give --terms too",
    "error.terms.key": "--key {value} is no key: the keys are numbered {first} to {last}",
    "terms.title": "The score q·k term by term: query “{q}” (token {qn}), head {head}",
    "terms.lead": "d_k = {dk}: each score q·k is the sum of {dk} products q_i·k_i, one per dimension i; divided by √d_k "
                  "it is the scaled score.",
    "terms.rotated": "(after RoPE: the q and k the scores use)",
    "terms.pair": "key “{k}” (token {kn}):",
    "terms.products_unrounded": "(each product is of the unrounded q_i and k_i)",
    "terms.sum_unrounded": "(the sum of the unrounded products)",
    "terms.recorded": "the recorded score q·k: {score}",
    "terms.scaled": "(the scaled score)",
    "terms.scaled_unrounded": "(from the unrounded score)",
    "terms.scaled_other": "the scaled score, {formula}: {scaled}",
}

KO: dict[str, str] = {
    "error.next.not_decoder": "다음 토큰은 디코더(GPT-2, Llama 같은 인과 언어 모델)만 예측한다. 이 모델({kind})은 디코더가 "
                              "아니어서 다음 토큰을 예측하지 않는다",
    "error.next.temperature": "온도는 0보다 큰 수여야 한다. 받은 값: {value}",
    "error.next.k": "k는 1부터 {top}까지의 정수여야 한다. 받은 값: {value}",
    "page.next.title": "다음 토큰",
    "page.next.lead": "“{last}”(토큰 {position}) 다음에 올 토큰으로, 모델은 어휘의 토큰 {vocab}개 각각에 로짓 ℓ을 준다. "
                      "확률은 이 모두에 대한 p = softmax(ℓ / T)이다. 가장 가능성이 높은 토큰 {k}개:",
    "page.next.temperature": "온도 T = {t}",
    "page.next.slider": "각 온도의 확률은 qkv가 Python에서 토큰 {vocab}개 모두에 대해 softmax(ℓ / T)로 계산했다. "
                        "슬라이더는 미리 계산한 온도 {n}개 가운데 하나를 고를 뿐이고, 페이지는 아무것도 계산하지 않는다.",
    "page.next.rank": "순위",
    "page.next.token": "토큰",
    "page.next.logit": "로짓 ℓ",
    "page.next.p": "확률",
    "page.next.rest": "나머지 토큰 {n}개의 합: {p}",
    "page.next.top_is": "T = {t}에서 가장 가능성이 높은 토큰 “{token}”의 확률은 {p}이다.",
    "page.next.table": "온도 {t}에서 가장 가능성이 높은 다음 토큰 {k}개",
    "page.heads.title": "마지막 토큰을 가장 많이 움직인 헤드",
    "page.heads.lead": "층마다 “{last}” 위치의 어텐션 출력 가운데 헤드 h가 맡은 부분은 c_h = z^h·W_O^h이다. 헤드의 출력에 "
                       "W_O 가운데 그 헤드의 행들을 곱한 것이고, 모든 헤드의 c_h에 b_O를 더하면 Y가 된다(Σ_h c_h + b_O = "
                       "Y). ‖c_h‖는 그 헤드가 마지막 토큰의 잔차 스트림을 움직인 거리이고, 비중은 그 층의 헤드들에 대한 "
                       "‖c_h‖ / Σ_g ‖c_g‖이다. 이 부분들은 서로 다른 방향을 가리킬 수 있으므로 ‖Y − b_O‖ ≤ Σ_g ‖c_g‖이다.",
    "page.heads.most": "가장 많이 움직인 헤드: {list}.",
    "page.heads.item": "층 {l} 헤드 {h} (‖c‖ = {n})",
    "page.heads.layer": "층 {l}",
    "page.heads.y": "‖Y‖",
    "page.heads.cell": "층 {l}, 헤드 {h}: ‖c_h‖ = {n}, 비중 {s}",
    "page.heads.grid": "마지막 토큰에서 각 헤드의 ‖c_h‖와 그 층 안에서의 비중. 색이 진할수록 비중이 크다",
    "page.heads.normed": "이 모델은 층마다 어텐션 출력을 정규화한 N_out(Y)를 잔차 스트림에 더한다. c_h는 그 정규화 "
                         "전의 Y를 헤드별로 나눈 부분이다.",
    "page.heads.post_norm": "이 모델은 더한 뒤에 잔차 스트림을 정규화한다(N(x + Y)). c_h는 그 정규화 전의 Y를 헤드별로 "
                            "나눈 부분이다.",
    "page.lens.query": "Query",
    "page.lens.overlay.title": "여러 헤드를 한꺼번에",
    "page.lens.overlay.lead": "이 층의 헤드들을 겹쳐 그렸다. 고른 Query(왼쪽)에서 모든 Key(오른쪽)로, 보이는 헤드마다 "
                              "그 헤드의 색으로 선을 긋고, 가중치가 클수록 선이 굵고 진하다. 아래에서 헤드를 켜고 끌 "
                              "수 있고, 가중치는 선 아래 표에 숫자로 적었다.",
    "page.lens.overlay.toggles": "보이는 헤드",
    "page.lens.overlay.label": "“{q}”에서 모든 Key로 가는 선. 헤드마다 한 색, 굵기는 가중치",
    "page.lens.overlay.table": "“{q}”의 가중치. 보이는 헤드마다 한 행",
    "page.lens.text.title": "어텐션으로 칠한 문장",
    "page.lens.text.lead": "토큰마다 {head}에서 고른 Query가 그 토큰에 주는 가중치로 배경을 칠했다. 가중치는 토큰 아래에 "
                           "숫자로 적었다.",
    "page.lens.text.legend": "배경: 가중치 0(흰색)에서 1(진한 파랑)까지",
    "page.lens.neuron.title": "뉴런 보기: 차원별 q·k",
    "page.lens.neuron.lead": "Query “{q}”(토큰 {qn})의 q와 Key “{k}”(토큰 {kn})의 k로 계산한 점수 q·k는 차원 i마다 하나씩 나오는 "
                             "곱 q_i·k_i {dk}개의 합이다. 막대 하나가 곱 하나다(파랑: 양수, 빨강: 음수).",
    "page.lens.neuron.sum": "Σ q_i·k_i = {sum}, 기록된 점수 q·k: {score}.",
    "page.lens.neuron.same": "소수점 아래 {d}자리까지 같다.",
    "page.lens.neuron.differs": "소수점 아래 {d}자리의 마지막 자리에서 다르다. 모델은 점수를 자기 정밀도의 행렬곱 하나로 "
                                "계산했고, 여기의 곱은 float64로 더했다.",
    "page.lens.neuron.scaled": "그다음, 스케일링한 점수: {scaled}.",
    "page.lens.neuron.divided": "스케일링한 점수는 이것을 √d_k로 나눈 값이다: {score} ÷ √{dk} {eq} {scaled}.",
    "page.lens.neuron.pick": "행렬의 칸을 누르면 그 쌍이 나온다.",
    "page.lens.neuron.left_out": "뉴런 보기는 뺐다. 이 보기의 모든 쌍은 곱 q_i·k_i {n}개로, 한 보기에 담는 {limit}개보다 "
                                 "많다. 층 하나만 보이거나(layer=) 더 짧은 문장을 쓰거나, qkv serve에서 그 헤드를 열면 "
                                 "어떤 쌍이든 계산해 준다.",
    # ------------------------------------------------------------------ 뉴런 보기를 텍스트로 (--terms)
    "help.output.key": "--terms와 함께: 이 Key만 적는다 (토큰이나, 설명에 보이는 대로의 번호. 기본값: 모든 Key)",
    "help.output.terms": "따라가는 Query와 각 Key의 점수를 차원별로 적는다: 곱 q_i·k_i, 그 합 q·k, q·k ÷ √d_k "
                         "(뉴런 보기를 텍스트로)",
    "error.terms.no_qk": "--terms는 q·k를 차원별로 적는데, 이 트레이스에는 점수 옆에 q와 k가 기록되어 있지 않다(점수가 "
                         "주어졌거나 헤드의 출력만 있다)",
    "error.terms.format": "--terms는 텍스트로 적는다. --format을 빼거나 --format text로 쓰라",
    "error.terms.key_alone": "--key는 --terms가 적을 Key를 고른다. --terms도 함께 쓰라",
    "error.terms.key": "--key {value}에 해당하는 Key가 없다. Key 번호는 {first}부터 {last}까지다",
    "terms.title": "차원별 q·k: Query “{q}”(토큰 {qn}), 헤드 {head}",
    "terms.lead": "d_k = {dk}. 점수 q·k는 차원 i마다 하나씩 나오는 곱 q_i·k_i {dk}개의 합이고, 이를 √d_k로 나누면 스케일링한 "
                  "점수가 된다.",
    "terms.rotated": "(RoPE로 회전한 뒤의 q와 k: 점수는 이것으로 계산한다)",
    "terms.pair": "Key “{k}”(토큰 {kn}):",
    "terms.products_unrounded": "(곱은 반올림하지 않은 q_i와 k_i로 계산했다)",
    "terms.sum_unrounded": "(반올림하지 않은 곱의 합)",
    "terms.recorded": "기록된 점수 q·k: {score}",
    "terms.scaled": "(스케일링한 점수)",
    "terms.scaled_unrounded": "(반올림하지 않은 점수로 계산했다)",
    "terms.scaled_other": "스케일링한 점수({formula}): {scaled}",
}
