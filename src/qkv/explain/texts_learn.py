"""The sentences of `qkv practice` and `qkv why` (qkv.practice, qkv.why), in English and Korean: same keys,
same placeholders. `qkv.explain.texts` merges them into its EN and KO tables, so `text(lang, key)` finds
them as any other sentence; they live in their own file because they belong to these two commands only.
"""

from __future__ import annotations

__all__ = ["EN", "KO"]

EN: dict[str, str] = {
    # ------------------------------------------------------------------ qkv practice
    "help.practice": "practise a worked example: compute a hidden number, get it checked",
    "help.practice.about": "Hide one number of a worked example at a time (a q·k, a scaled score, e^(s − m), Σ, a "
                           "weight, an output component, a z_concat entry, a Y component), in the order of the "
                           "post, and check each answer within the printed rounding. A wrong answer is compared "
                           "with the usual slips (the wrong row or column, ÷√d_k forgotten, a term missing from a "
                           "sum, one head instead of both) and the first step where it parts from the true number "
                           "is named. Answers are read from standard input, one a line.",
    "help.practice.example": "the worked example (default self-attention; qkv example --list names them)",
    "help.practice.seed": "a whole number that picks the hidden numbers (and --fresh inputs): the same seed "
                          "gives the same drill (default: a new one, printed at the start)",
    "help.practice.fresh": "new random inputs of the same shapes (one decimal, as the self-attention example's X and W; whole-number scores for the group meeting)",
    "help.practice.lang": "language of the questions (default: the locale’s — LC_ALL, LC_MESSAGES, LANG — else en)",
    "practice.error.seed": "the seed must be a whole number from 0 to {high}, got {value}",
    "practice.head": " (head {head})",
    "practice.header": "Practice: {title}. {n:question|questions}; seed {seed} (qkv practice {example} --seed {seed}{fresh} "
                       "repeats this drill). Type each answer and press Enter.",
    "practice.question": "Question {number} of {n} — {what}",
    "practice.kind.score": "a score q·k",
    "practice.kind.scaled": "a scaled score",
    "practice.kind.exp": "e^(s − m)",
    "practice.kind.sum": "the sum Σ e^(s − m)",
    "practice.kind.weight": "a weight",
    "practice.kind.out": "a component of the output",
    "practice.kind.concat": "an entry of z_concat",
    "practice.kind.y": "a component of Y = z_concat·W_O",
    "practice.given.q": "q_{token}{head} = {vector}",
    "practice.given.k": "k_{token}{head} = {vector}",
    "practice.given.score": "s = q_{q}·k_{k} = {score}, and q and k have d_k = {dk:number|numbers} each.",
    "practice.given.scaled_row": "The scaled scores of {q}'s row: {row}. Their largest is m = {m}.",
    "practice.given.meeting_max": "The compatibility scores of the question {q} (the meeting does not divide "
                                  "them): {row}. Their largest is m = {m}.",
    "practice.given.exp_row": "e^(s − m) for each key of {q}'s row: {row}.",
    "practice.given.scores_row": "The raw scores q·k of {q}'s row: {row}; d_k = {dk}.",
    "practice.given.meeting_row": "The compatibility scores of the question {q} (the meeting does not divide "
                                  "them): {row}.",
    "practice.given.weights_row": "The weights of {q}'s row: {row}.",
    "practice.given.v_column": "Component {c} of each value vector v: {row}.",
    "practice.given.head_out": "Head {head}'s output for {q}: {vector}",
    "practice.given.concat_row": "z_concat for {q} (every head's output, side by side): {vector}",
    "practice.given.wo_column": "Column {c} of W_O: {vector}",
    "practice.ask.score": "q_{q}·k_{k} = ?  ({digits:decimal|decimals})",
    "practice.ask.scaled": "s / √d_k = ?  ({digits:decimal|decimals})",
    "practice.ask.exp": "e^(s − m) for the key {k} = ?  ({digits:decimal|decimals})",
    "practice.ask.sum": "Σ e^(s − m) over {q}'s row = ?  ({digits:decimal|decimals})",
    "practice.ask.weight": "The weight {q} gives {k}, softmax(s / √d_k) = ?  ({digits:decimal|decimals})",
    "practice.ask.weight.meeting": "The weight the question {q} gives {k}, softmax(sⱼ) = ?  ({digits:decimal|decimals})",
    "practice.ask.out": "Component {c} of {q}'s output, Σⱼ wⱼ·vⱼ[{c}] = ?  ({digits:decimal|decimals})",
    "practice.ask.concat": "z_concat[{col}] for {q} = ?  ({digits:decimal|decimals})",
    "practice.ask.y": "Y[{c}] for {q} = Σₖ z_concat[k]·W_O[k, {c}], a sum of {n:product|products} = ?  ({digits:decimal|decimals})",
    "practice.how.score": "q_{q}·k_{k} = {sum} = {answer}",
    "practice.how.scaled": "{score} / √{dk} = {score} / {root} = {answer}",
    "practice.how.exp": "e^({s} − {m}) = e^({diff}) = {answer}",
    "practice.how.sum": "{terms} = {answer}",
    "practice.how.weight": "e^(s − m) / Σ = {e} / {sum} = {answer}",
    "practice.how.out": "Σⱼ wⱼ·vⱼ[{c}] = {sum} = {answer}",
    "practice.how.concat": "z_concat[{col}] is component {within} of head {head}'s output: {answer}",
    "practice.how.y": "Y[{c}] = the sum of the {heads:head's|heads'} shares {shares} = {answer}",
    "practice.hint.terms": "Compare your products with these: {terms}.",
    "practice.hint.root": "√{dk} = {root}.",
    "practice.hint.diff": "For {k}: s − m = {diff}.",
    "practice.hint.count": "Σ adds all {n:number|numbers} of the row.",
    "practice.hint.weight": "Compare step by step: scaled scores {row}; m = {m}; e^(s − m) = {exps}; Σ = {sum}.",
    "practice.hint.weight.meeting": "Compare step by step: the scores {row} (not divided by √d_k); m = {m}; e^(s − m) = {exps}; Σ = {sum}.",
    "practice.hint.products": "Compare your products wⱼ·vⱼ with these: {terms}.",
    "practice.hint.blocks": "z_concat puts the outputs of {heads:head|heads} side by side, {dv:number|numbers} each, in head order "
                            "(entries count from 0).",
    "practice.hint.shares": "z_concat holds {heads:head|heads} × {dv:number|numbers}: Y sums all {n:product|products}, every head's.",
    "practice.slip.column": "you used {used} where the step needs {wanted} (the wrong key)",
    "practice.slip.row": "you used {used}'s row where the step needs {wanted}'s (the wrong query)",
    "practice.slip.swapped": "you computed q_{k}·k_{q}: query and key swapped (the score of {k} looking at {q})",
    "practice.slip.term": "the sum is missing the term {term} = {value}",
    "practice.slip.no_scale": "the scores were not divided by √d_k",
    "practice.slip.by_dk": "you divided by d_k = {dk}, not by its square root",
    "practice.slip.times_root": "you multiplied by √d_k instead of dividing",
    "practice.slip.no_m": "you did not subtract m (e^s instead of e^(s − m)) — fine for the weights, since e^m "
                          "cancels between each term and Σ, but this step asks for e^(s − m)",
    "practice.slip.sign": "you took e^(m − s): the difference the other way round",
    "practice.slip.missing": "Σ is missing {k}'s term",
    "practice.slip.missing_weight": "Σ is missing {k}'s term (subtracting m or not makes no difference to a "
                                    "weight: e^m cancels)",
    "practice.slip.undivided": "that is e^(s − m) alone: it still has to be divided by Σ",
    "practice.slip.missing_out": "the sum is missing {k}'s term w·v",
    "practice.slip.component": "you used component {used} of the values where the step needs component {wanted}",
    "practice.slip.row_weights": "you used {used}'s weights where the step needs {wanted}'s",
    "practice.slip.mean": "that is the plain mean of the values: each value must be weighted by its weight",
    "practice.slip.unweighted": "that is the plain sum of the values: each value must be weighted by its weight",
    "practice.slip.other_head": "you took the same place in head {used}'s block instead of head {wanted}'s",
    "practice.slip.offset": "that is z_concat[{used}], the entry next to z_concat[{wanted}] (entries count from 0)",
    "practice.slip.one_head": "that is head {head}'s share only ({n:product|products}): Y sums over every head's z_concat "
                              "entries ({total:product|products})",
    "practice.slip.column_wo": "you used column {used} of W_O where the step needs column {wanted}",
    "practice.bad.empty": "No answer: type a number, such as 0.25.",
    "practice.bad.text": "{value} is not a number: type one, such as 0.25.",
    "practice.bad.nan": "{value} is not a number: type a finite number, such as 0.25.",
    "practice.bad.inf": "{value} is beyond the range of numbers here: type a finite number, such as 0.25.",
    "practice.bad.places": "That is right to {places:decimal|decimals}; the step prints {digits}: type it with {digits} "
                           "decimals.",
    "practice.bad.whole": "That is right rounded to a whole number; the step prints {digits:decimal|decimals}: type it with "
                          "{digits}.",
    "practice.right": "Right: {how}",
    "practice.wrong.slip": "Not quite. Your {yours} comes from this slip: {first}{rest}.",
    "practice.then": "; and then {part}",
    "practice.wrong.unknown": "Not quite. Your {yours} comes from none of the usual slips.",
    "practice.again": "Try again.",
    "practice.reveal": "The answer: {how}",
    "practice.stopped": "The answers ended at question {number} of {n}.",
    "practice.summary": "{right} of {asked} right ({first} at the first try).",
}

KO: dict[str, str] = {
    # ------------------------------------------------------------------ qkv practice
    "help.practice": "예제를 직접 풀어 본다: 가려진 숫자를 계산하면 맞았는지 확인해 준다",
    "help.practice.about": "예제의 숫자를 글의 순서대로 하나씩 가리고(q·k, 스케일링한 점수, e^(s − m), Σ, 가중치, 출력의 "
                           "성분, z_concat의 성분, Y의 성분) 답을 화면에 보이는 자릿수 안에서 확인한다. 틀린 답은 흔한 "
                           "실수(다른 행이나 열, √d_k로 나누기를 빠뜨림, 합에서 빠진 항, 두 헤드 대신 한 헤드)와 "
                           "비교하여, 참값과 처음 갈라지는 단계를 짚어 준다. 답은 표준 입력에서 한 줄에 하나씩 읽는다.",
    "help.practice.example": "풀어 볼 예제 (기본값 self-attention. 예제 이름은 qkv example --list로 본다)",
    "help.practice.seed": "가릴 숫자(와 --fresh의 입력)를 고르는 정수. 같은 시드는 같은 문제를 낸다 (기본값: 새로 "
                          "뽑고, 시작할 때 알려 준다)",
    "help.practice.fresh": "같은 형태의 새 무작위 입력 (Self-attention 예제의 X와 W처럼 소수점 아래 1자리, 조모임은 정수 점수)",
    "help.practice.lang": "문제의 언어 (기본값: 로캘(LC_ALL, LC_MESSAGES, LANG)이 한국어이면 ko, 아니면 en)",
    "practice.error.seed": "시드는 0부터 {high}까지의 정수여야 한다. 받은 값: {value}",
    "practice.head": " (헤드 {head})",
    "practice.header": "연습: {title}. 문제 {n}개, 시드 {seed} (같은 문제를 다시 풀려면: qkv practice {example} "
                       "--seed {seed}{fresh}). 답을 입력하고 Enter를 누르면 된다.",
    "practice.question": "문제 {number}/{n} — {what}",
    "practice.kind.score": "점수 q·k",
    "practice.kind.scaled": "스케일링한 점수",
    "practice.kind.exp": "e^(s − m)",
    "practice.kind.sum": "합 Σ e^(s − m)",
    "practice.kind.weight": "가중치",
    "practice.kind.out": "출력의 성분",
    "practice.kind.concat": "z_concat의 성분",
    "practice.kind.y": "Y = z_concat·W_O의 성분",
    "practice.given.q": "q_{token}{head} = {vector}",
    "practice.given.k": "k_{token}{head} = {vector}",
    "practice.given.score": "s = q_{q}·k_{k} = {score}. q와 k는 d_k = {dk}차원이다.",
    "practice.given.scaled_row": "{q} 행의 스케일링한 점수: {row}. 가장 큰 값: m = {m}.",
    "practice.given.meeting_max": "질문 {q}에 대한 찰떡궁합점수 (조모임에서는 √d_k로 나누지 않는다): {row}. 가장 큰 값: m = {m}.",
    "practice.given.exp_row": "{q} 행의 Key마다 e^(s − m): {row}.",
    "practice.given.scores_row": "{q} 행의 스케일링하기 전 점수 q·k: {row}. d_k = {dk}.",
    "practice.given.meeting_row": "질문 {q}에 대한 찰떡궁합점수 (조모임에서는 √d_k로 나누지 않는다): {row}.",
    "practice.given.weights_row": "{q} 행의 가중치: {row}.",
    "practice.given.v_column": "각 Value 벡터 v의 성분 {c}: {row}.",
    "practice.given.head_out": "{q}에 대한 헤드 {head}의 출력: {vector}",
    "practice.given.concat_row": "{q}의 z_concat (모든 헤드의 출력을 나란히 이어 붙인 것): {vector}",
    "practice.given.wo_column": "W_O의 열 {c}: {vector}",
    "practice.ask.score": "q_{q}·k_{k} = ?  (소수점 아래 {digits}자리)",
    "practice.ask.scaled": "s / √d_k = ?  (소수점 아래 {digits}자리)",
    "practice.ask.exp": "Key {k}의 e^(s − m) = ?  (소수점 아래 {digits}자리)",
    "practice.ask.sum": "{q} 행 전체의 Σ e^(s − m) = ?  (소수점 아래 {digits}자리)",
    "practice.ask.weight": "{q}의 Query가 Key {k}에 주는 가중치 softmax(s / √d_k) = ?  (소수점 아래 {digits}자리)",
    "practice.ask.weight.meeting": "{q}의 질문이 {k}에 주는 가중치 softmax(sⱼ) = ?  (소수점 아래 {digits}자리)",
    "practice.ask.out": "{q} 출력의 성분 {c}, Σⱼ wⱼ·vⱼ[{c}] = ?  (소수점 아래 {digits}자리)",
    "practice.ask.concat": "{q}의 z_concat[{col}] = ?  (소수점 아래 {digits}자리)",
    "practice.ask.y": "{q}의 Y[{c}] = Σₖ z_concat[k]·W_O[k, {c}], 곱 {n}개의 합 = ?  (소수점 아래 {digits}자리)",
    "practice.how.score": "q_{q}·k_{k} = {sum} = {answer}",
    "practice.how.scaled": "{score} / √{dk} = {score} / {root} = {answer}",
    "practice.how.exp": "e^({s} − {m}) = e^({diff}) = {answer}",
    "practice.how.sum": "{terms} = {answer}",
    "practice.how.weight": "e^(s − m) / Σ = {e} / {sum} = {answer}",
    "practice.how.out": "Σⱼ wⱼ·vⱼ[{c}] = {sum} = {answer}",
    "practice.how.concat": "z_concat[{col}] = 헤드 {head} 출력의 성분 {within} = {answer}",
    "practice.how.y": "Y[{c}] = 헤드 {heads}개가 각각 보탠 값의 합 {shares} = {answer}",
    "practice.hint.terms": "직접 구한 곱을 다음 값과 비교해 보자: {terms}.",
    "practice.hint.root": "√{dk} = {root}.",
    "practice.hint.diff": "{k}의 s − m = {diff}.",
    "practice.hint.count": "Σ는 그 행의 숫자 {n}개를 모두 더한다.",
    "practice.hint.weight": "한 단계씩 비교해 보자: 스케일링한 점수 {row}, m = {m}, e^(s − m) = {exps}, Σ = {sum}.",
    "practice.hint.weight.meeting": "한 단계씩 비교해 보자: 점수 {row} (√d_k로 나누지 않는다), m = {m}, e^(s − m) = {exps}, Σ = {sum}.",
    "practice.hint.products": "직접 구한 곱 wⱼ·vⱼ를 다음 값과 비교해 보자: {terms}.",
    "practice.hint.blocks": "z_concat은 헤드 {heads}개의 출력을 헤드 순서대로 {dv}개씩 나란히 이어 붙인 것이다 (성분 "
                            "번호는 0부터 센다).",
    "practice.hint.shares": "z_concat은 헤드 {heads}개 × 성분 {dv}개이다. Y는 모든 헤드의 곱 {n}개를 전부 더한다.",
    "practice.slip.column": "{wanted} 자리에 {used}의 값을 썼다 (다른 Key)",
    "practice.slip.row": "{wanted}의 행 대신 {used}의 행을 썼다 (다른 Query)",
    "practice.slip.swapped": "q_{k}·k_{q}의 값을 계산했다: Query와 Key가 뒤바뀌었다 ({k}의 Query로 {q}의 Key를 본 점수)",
    "practice.slip.term": "합에서 {term} = {value} 항이 빠졌다",
    "practice.slip.no_scale": "점수를 √d_k로 나누지 않았다",
    "practice.slip.by_dk": "d_k의 제곱근이 아니라 d_k 자체({dk})로 나누었다",
    "practice.slip.times_root": "√d_k로 나누지 않고 곱했다",
    "practice.slip.no_m": "m을 빼지 않았다 (e^(s − m) 대신 e^s). 가중치에는 상관없다. e^m이 각 항과 Σ에서 약분되기 "
                          "때문이다. 하지만 이 단계는 e^(s − m)을 묻는다",
    "practice.slip.sign": "e^(m − s)를 계산했다: 빼는 순서가 반대이다",
    "practice.slip.missing": "Σ에서 {k}의 항이 빠졌다",
    "practice.slip.missing_weight": "Σ에서 {k}의 항이 빠졌다 (m을 뺐는지는 가중치에 상관없다. e^m이 약분된다)",
    "practice.slip.undivided": "e^(s − m)에서 멈추었다. Σ로 한 번 더 나누어야 한다",
    "practice.slip.missing_out": "합에서 {k}의 항 w·v가 빠졌다",
    "practice.slip.component": "Value의 성분 {wanted} 대신 성분 {used}의 값을 썼다",
    "practice.slip.row_weights": "{wanted}의 가중치 대신 {used}의 가중치를 썼다",
    "practice.slip.mean": "Value를 단순 평균했다. 각 Value에 자기 가중치를 곱해서 더해야 한다",
    "practice.slip.unweighted": "Value를 가중치 없이 그냥 더했다. 각 Value에 자기 가중치를 곱해서 더해야 한다",
    "practice.slip.other_head": "헤드 {wanted}의 구간 대신 헤드 {used}의 구간에서 같은 자리의 값을 썼다",
    "practice.slip.offset": "z_concat[{wanted}] 옆의 성분 z_concat[{used}]의 값을 썼다 (성분 번호는 0부터 센다)",
    "practice.slip.one_head": "헤드 {head}의 곱 {n}개만 더했다. Y는 모든 헤드의 z_concat 성분에 걸쳐 더한다 "
                              "(곱 {total}개)",
    "practice.slip.column_wo": "W_O의 열 {wanted} 대신 열 {used}의 값을 썼다",
    "practice.bad.empty": "답이 없다: 0.25처럼 숫자를 입력하라.",
    "practice.bad.text": "입력({value})이 숫자가 아니다: 0.25처럼 숫자를 입력하라.",
    "practice.bad.nan": "입력({value})이 숫자가 아니다: 0.25처럼 유한한 숫자를 입력하라.",
    "practice.bad.inf": "입력({value})이 다룰 수 있는 수의 범위를 벗어난다: 0.25처럼 유한한 숫자를 입력하라.",
    "practice.bad.places": "소수점 아래 {places}자리까지는 맞다. 이 단계는 소수점 아래 {digits}자리까지 보이므로 {digits}자리까지 입력하라.",
    "practice.bad.whole": "정수로 반올림하면 맞다. 이 단계는 소수점 아래 {digits}자리까지 보이므로 {digits}자리까지 입력하라.",
    "practice.right": "맞았다: {how}",
    "practice.wrong.slip": "정답이 아니다. 입력한 값({yours})은 이런 실수에서 나온다: {first}{rest}.",
    "practice.then": ". 또 {part}",
    "practice.wrong.unknown": "정답이 아니다. 입력한 값({yours})은 흔한 실수 어느 것으로도 설명되지 않는다.",
    "practice.again": "다시 해 보자.",
    "practice.reveal": "정답: {how}",
    "practice.stopped": "문제 {number}/{n}에서 입력이 끝났다.",
    "practice.summary": "{asked}문제 중 {right}문제를 맞혔다 (첫 시도에 맞힌 것은 {first}문제).",
}

# ------------------------------------------------------------------ qkv why
# symbols and formulas, written the same in every language
SYMBOLS: dict[str, str] = {
    "why.col.dk": "d_k", "why.col.root": "√d_k", "why.col.std": "std(q·k)",
    "why.col.k": "k", "why.col.length": "|k|", "why.col.cos": "cos θ", "why.col.angle": "θ (°)",
    "why.col.product": "|q|·|k|·cos θ", "why.col.dot": "q·k",
    "why.row.s": "s", "why.row.minus": "s − {c}", "why.row.plus": "s + {c}", "why.row.times": "{a}·s",
}

EN.update(SYMBOLS)
KO.update(SYMBOLS)
EN.update({
    "help.why": "why attention is built as it is: an experiment per choice, a table and a figure",
    "help.why.about": "Test one choice of attention's formula on numbers and print a short table; every sentence "
                      "after it is written from its numbers. sqrt-dk: why ÷√d_k; softmax: why not the raw scores; "
                      "order: Q and K are not interchangeable; temperature: the group meeting's scores scaled; "
                      "mask: the causal mask on “I love machine learning”; dot-product: q·k as alignment, drawn.",
    "help.why.topic": "the experiment: {topics}",
    "help.why.figure": "also draw the experiment (.png .svg .pdf)",
    "help.why.seed": "a whole number that draws sqrt-dk's random q and k (default 0)",
    "help.why.lang": "language of the output and the figure (default: the locale’s — LC_ALL, LC_MESSAGES, LANG — else en)",
    "why.title.sqrt-dk": "Why divide by √d_k",
    "why.title.softmax": "Why softmax, not the raw scores",
    "why.title.order": "Why the order of Q and K matters",
    "why.title.temperature": "Temperature: the group meeting's scores times a factor",
    "why.title.mask": "The causal mask on “I love machine learning”",
    "why.title.dot-product": "q·k as alignment: the query and the keys as arrows",
    "why.about.sqrt-dk": "Random q and k (every number drawn from a standard normal), 256 queries against 16 keys for "
                         "each width d_k; the weights with ÷√d_k and without it (scale 1).",
    "why.about.softmax": "The scaled scores of love in the self-attention example, used as weights directly and "
                         "through softmax; then shifted by a constant and multiplied by a factor.",
    "why.about.order": "The self-attention example's Q, K, V: the weights and output of love in four forms.",
    "why.about.temperature": "The scores of “어텐션이 조모임이라면” multiplied by a factor (1/temperature) before "
                             "softmax; the answers are votes for the next word.",
    "why.about.mask": "The self-attention example with a causal mask: each query may attend to its own key and the keys before it.",
    "why.about.dot-product": "The self-attention example has d_k = 2, so q and every k are arrows in the plane "
                             "(add --figure to draw them).",
    "why.col.top_scaled": "top weight ÷√d_k", "why.col.top_plain": "top weight, no ÷",
    "why.col.grad_scaled": "w(1 − w) ÷√d_k", "why.col.grad_plain": "w(1 − w), no ÷",
    "why.col.scores": "scores", "why.col.values": "values", "why.col.raw_sum": "their sum",
    "why.col.weights": "softmax weights", "why.col.change": "largest change",
    "why.col.form": "form", "why.col.weights_of": "love's weights", "why.col.out_of": "love's output",
    "why.col.difference": "largest difference",
    "why.col.factor": "factor", "why.col.lot1": "meeting 1: lot's weight", "why.col.out1": "meeting 1: votes",
    "why.col.lot2": "meeting 2: lot's weight", "why.col.question": "meeting 2: the question's words",
    "why.col.out2": "meeting 2: votes",
    "why.col.token": "query", "why.col.sees": "may see", "why.col.masked": "weights with the mask",
    "why.col.plain": "weights without it",
    "why.col.key": "key",
    "why.row.rows": "softmax(QKᵀ/√d_k)·V", "why.row.swapped": "softmax(KQᵀ/√d_k)·V (Q and K swapped)",
    "why.row.columns": "(V·softmax(KᵀQ/√d_k))ᵀ", "why.row.axis": "softmax per column of QKᵀ/√d_k, ·V",
    "why.sqrt.std": "std(q·k) grows as √d_k: from {first} at d_k = {d0} to {last} at d_k = {d1} (√{d1} = {root}); "
                    "std(q·k)/√d_k stays between {low} and {high}.",
    "why.sqrt.plain.onehot": "Without ÷√d_k the largest weight grows from {first} to {last} at d_k = {d1}: softmax "
                             "is nearly one-hot, one key takes almost everything.",
    "why.sqrt.plain.grows": "Without ÷√d_k the largest weight grows from {first} to {last} at d_k = {d1}.",
    "why.sqrt.grad.falls": "Its gradient w(1 − w) falls from {first} to {last} ({times} times smaller): a saturated "
                           "softmax passes little gradient back, so the scores barely learn.",
    "why.sqrt.scaled": "With ÷√d_k the largest weight stays between {low} and {high}, and w(1 − w) between {glow} and "
                       "{ghigh}, at every width.",
    "why.sqrt.translator.head": "A trained head can be near one-hot even with ÷√d_k. In the shipped translator, "
                                "translating “{text}” into Japanese ({target}), the most saturated cross-attention row "
                                "is decoder layer {layer} of 0–{last}, head {head} of 0–{hlast}, the decoder's state for "
                                "{query} (the step that wrote {generated}): its largest weight is {top}, on {word}.",
    "why.sqrt.translator.head.spread": "In the shipped translator, translating “{text}” into Japanese ({target}), the "
                                       "most concentrated cross-attention row is decoder layer {layer} of 0–{last}, "
                                       "head {head} of 0–{hlast}, the decoder's state for {query} (the step that wrote "
                                       "{generated}): its largest weight is {top}, on {word}; no row is near one-hot.",
    "why.sqrt.translator.spread": "Its scores q·k are {scores}, the largest {gap} above the next; divided by "
                                  "√d_k = √{dk} = {root} they are {scaled} (a gap of {gap_scaled}), and softmax gives "
                                  "{weights}.",
    "why.sqrt.translator.without": "Without ÷√d_k the same learned q and k would give {plain}: the largest weight "
                                   "{top_plain}, and its gradient w(1 − w) falls from {grad} to {grad_plain} ({times} "
                                   "times smaller). The model learned its q and k with ÷√d_k; trained without it, it "
                                   "would have learned other weights — this shows what the division does to these "
                                   "scores, not another model.",
    "why.softmax.sum": "Used as weights, {token}'s scaled scores add up to {sum}, not 1: the output would be a sum, "
                       "not a blend.",
    "why.softmax.negative": "Minus 2, {count} of the {n:score|scores} are negative and they add up to {sum}: negative "
                            "weights would subtract answers.",
    "why.softmax.constant.same": "softmax gives the same weights for s, s − 2 and s + 5 (the largest change is {change}, "
                                 "rounding): an added constant cancels between each e^s and Σ.",
    "why.softmax.constant.differs": "An added constant changed the weights by {change}.",
    "why.softmax.factor.differs": "Multiplied by 2, 0.5 or 10 the weights change by {low} to {high}: softmax ignores an "
                                  "added constant, not a factor.",
    "why.softmax.factor.same": "Multiplying changed the weights by at most {high}.",
    "why.softmax.length": "With the sentence repeated {n:time|times} (T = {t}), the raw scores add up to {sum1} instead of "
                          "{sum0}, and an output built with them grows {times} times ({raw0} → {raw1}); softmax's "
                          "output stays {out} (largest change {change}).",
    "why.order.swapped": "Swapping Q and K gives other numbers (up to {diff} in the outputs): KQᵀ is (QKᵀ)ᵀ, so "
                         "{token}'s row becomes how well each token's question matches {token}'s key, not how well "
                         "{token}'s question matches each key.",
    "why.order.swapped.same": "Swapping Q and K changed the outputs by only {diff} here.",
    "why.order.columns": "The column form of “어텐션이 조모임이라면”, V·softmax(KᵀQ/√d_k), transposed, is the same computation: the "
                         "largest difference is {diff}.",
    "why.order.columns.differs": "The column form differs by {diff}.",
    "why.order.axis": "Softmax along the wrong axis (each column of QKᵀ) changes the outputs by up to {diff}; "
                      "love's weights then add up to {sum}, not 1.",
    "why.order.axis.same": "Softmax along the other axis changed the outputs by only {diff} here.",
    "why.temperature.none": "Factor {factor}: lot's weight in meeting 2 is {lot}; the votes are “{a}” {dot}, “{b}” {of}: "
                            "lot's answer is not heard.",
    "why.temperature.blend": "Factor {factor}: lot's weight in meeting 2 is {lot}; the votes are “{a}” {dot}, “{b}” {of}: "
                             "a blend in which “{b}” still wins — the post's “적당히 걸러들어”.",
    "why.temperature.lot_wins": "Factor {factor}: lot's weight in meeting 2 is {lot}; the votes are “{a}” {dot}, “{b}” "
                                "{of}: “{a}” wins.",
    "why.temperature.first": "In meeting 1 lot's weight falls from {high} to {low} at factor {factor}: a smaller "
                             "factor (a higher temperature) flattens the weights, a larger one sharpens them.",
    "why.mask.sees": "{token} may see {seen}; hidden, as they come later: {hidden}. Without the mask those "
                     "keys had {share} of its weight; with it the visible keys share everything (the row adds up to {sum}).",
    "why.mask.all": "{token}, the last token, sees every token: its weights are unchanged (largest difference {diff}).",
    "why.mask.why": "Why: a decoder writes left to right, so when it predicts the word after a token the later words do "
                    "not exist yet. Training runs the whole sentence at once; the mask hides each token's future so "
                    "that training sees what generation will see. The first token, {first}, sees only itself: weight {weight}.",
    "why.dot.rule": "q_{token} = {q}, |q| = {length}. q·k = |q|·|k|·cos θ: how well k points along q (cos θ), times "
                    "both lengths.",
    "why.dot.aligned_wins": "{best} gets the largest q·k ({score}): its key is the best aligned with q (θ = {angle}°).",
    "why.dot.length_wins": "{best} gets the largest q·k ({score}) although its key is {angle_best}° off q: it is the "
                           "longest (|k| = {length}). The best aligned key is {aligned} (θ = {angle}°).",
    "why.dot.worst": "{worst} gets the smallest q·k ({score}), at θ = {angle}°.",
    "why.dot.worst.short": "{worst} gets the smallest q·k ({score}) although it points almost along q (θ = {angle}°): "
                           "its key is the shortest (|k| = {length}).",
    "why.fig.std": "std(q·k), measured", "why.fig.std.title": "the spread of q·k grows as √d_k",
    "why.fig.top_plain": "largest weight, no ÷√d_k", "why.fig.top_scaled": "largest weight, ÷√d_k",
    "why.fig.grad_plain": "w(1 − w), no ÷√d_k", "why.fig.grad_scaled": "w(1 − w), ÷√d_k",
    "why.fig.top.title": "without ÷√d_k softmax saturates",
    "why.fig.translator.scaled": "÷√d_k (d_k = {dk}), as the model runs",
    "why.fig.translator.plain": "no ÷: the same q, k",
    "why.fig.translator.axis": "weight (log scale)",
    "why.fig.translator.title": "the translator's decoder layer {layer} head {head}, query {query} (→ {generated}):\n"
                                "its most saturated cross-attention row",
    "why.fig.raw": "{what} used as weights", "why.fig.softmax_any": "softmax: the same for s, s − 2, s + 5",
    "why.fig.raw.title": "{token}'s scores as weights, and softmax",
    "why.fig.weights.title": "softmax weights: + c changes nothing, × a changes everything",
    "why.fig.keys": "key", "why.fig.queries": "query",
    "why.fig.temperature": "factor {factor}: “{a}” {dot}, “{b}” {of}",
    "why.fig.plain": "no mask", "why.fig.masked": "causal mask (— hidden)",
    "why.fig.dot": "q_{token} and the keys (d_k = 2): q·k = |q|·|k|·cos θ; dotted: each k's shadow on q",
})

KO.update({
    "help.why": "어텐션이 왜 이렇게 생겼는지: 선택마다 실험 하나, 표 하나, 그림 하나",
    "help.why.about": "어텐션 식의 선택 하나를 숫자로 실험하고 짧은 표를 출력한다. 표 뒤의 문장은 모두 그 숫자에서 만들어진다. "
                      "sqrt-dk: 왜 √d_k로 나누는가, softmax: 왜 점수를 그대로 쓰지 않는가, order: Q와 K는 서로 바꿀 수 없다, "
                      "temperature: 조모임의 점수에 배율을 곱하면, mask: “I love machine learning”의 인과 마스크, "
                      "dot-product: q·k를 방향의 일치로 그린다.",
    "help.why.topic": "실험: {topics}",
    "help.why.figure": "실험을 그림으로도 그린다 (.png .svg .pdf)",
    "help.why.seed": "sqrt-dk의 무작위 q와 k를 뽑는 정수 (기본값 0)",
    "help.why.lang": "출력과 그림의 언어 (기본값: 로캘(LC_ALL, LC_MESSAGES, LANG)이 한국어이면 ko, 아니면 en)",
    "why.title.sqrt-dk": "왜 √d_k로 나누는가",
    "why.title.softmax": "왜 점수를 그대로 쓰지 않고 softmax를 쓰는가",
    "why.title.order": "왜 Q와 K의 순서가 중요한가",
    "why.title.temperature": "온도: 조모임의 점수에 배율을 곱하면",
    "why.title.mask": "“I love machine learning”의 인과 마스크",
    "why.title.dot-product": "방향의 일치로 본 q·k: Query와 Key를 화살표로",
    "why.about.sqrt-dk": "무작위 q와 k(모든 성분을 표준정규분포에서 뽑는다)로, 차원 d_k마다 Query 256개를 Key 16개와 "
                         "맞춰 보고 √d_k로 나눈 가중치와 나누지 않은(배율 1) 가중치를 비교한다.",
    "why.about.softmax": "Self-attention 예제에서 love의 스케일링한 점수를 그대로 가중치로 쓸 때와 softmax를 거칠 때를 "
                         "비교한다. 이어서 상수를 더하고 배율을 곱해 본다.",
    "why.about.order": "Self-attention 예제의 Q, K, V로 love의 가중치와 출력을 네 가지 형태로 계산한다.",
    "why.about.temperature": "「어텐션이 조모임이라면」의 점수에 softmax 전에 배율(1/온도)을 곱한다. 대답은 다음 단어에 대한 "
                             "표이다.",
    "why.about.mask": "Self-attention 예제에 인과 마스크를 씌운다: 각 Query는 자기 자신과 그 앞의 Key만 볼 수 있다.",
    "why.about.dot-product": "Self-attention 예제는 d_k = 2이므로 q와 모든 k를 평면 위의 화살표로 그릴 수 있다 "
                             "(--figure로 그린다).",
    "why.col.top_scaled": "최대 가중치 (÷√d_k)", "why.col.top_plain": "최대 가중치 (나누지 않음)",
    "why.col.grad_scaled": "w(1 − w) (÷√d_k)", "why.col.grad_plain": "w(1 − w) (나누지 않음)",
    "why.col.scores": "점수", "why.col.values": "값", "why.col.raw_sum": "합",
    "why.col.weights": "softmax 가중치", "why.col.change": "가장 큰 변화",
    "why.col.form": "형태", "why.col.weights_of": "love의 가중치", "why.col.out_of": "love의 출력",
    "why.col.difference": "가장 큰 차이",
    "why.col.factor": "배율", "why.col.lot1": "조모임 1: lot의 가중치", "why.col.out1": "조모임 1: 표",
    "why.col.lot2": "조모임 2: lot의 가중치", "why.col.question": "조모임 2: 질문의 단어들",
    "why.col.out2": "조모임 2: 표",
    "why.col.token": "Query", "why.col.sees": "볼 수 있는 Key", "why.col.masked": "마스크를 씌운 가중치",
    "why.col.plain": "마스크 없는 가중치",
    "why.col.key": "Key",
    "why.row.rows": "softmax(QKᵀ/√d_k)·V", "why.row.swapped": "softmax(KQᵀ/√d_k)·V (Q와 K를 바꿈)",
    "why.row.columns": "(V·softmax(KᵀQ/√d_k))ᵀ", "why.row.axis": "QKᵀ/√d_k의 열마다 softmax, ·V",
    "why.sqrt.std": "std(q·k)는 √d_k에 비례해 커진다: d_k = {d0}에서 {first}, d_k = {d1}에서 {last} (√{d1} = {root}). "
                    "std(q·k)/√d_k는 {low}에서 {high} 사이에 머문다.",
    "why.sqrt.plain.onehot": "√d_k로 나누지 않으면 가장 큰 가중치가 {first}에서 d_k = {d1}일 때 {last}까지 커진다: softmax가 "
                             "거의 원-핫이 되어 Key 하나가 거의 모든 가중치를 가져간다.",
    "why.sqrt.plain.grows": "√d_k로 나누지 않으면 가장 큰 가중치가 {first}에서 d_k = {d1}일 때 {last}까지 커진다.",
    "why.sqrt.grad.falls": "softmax의 기울기 w(1 − w)는 {first}에서 {last}까지 떨어진다 ({times}배 작아진다): 포화된 softmax는 "
                           "기울기를 거의 전달하지 못하므로 점수가 거의 학습되지 않는다.",
    "why.sqrt.scaled": "√d_k로 나누면 모든 차원에서 가장 큰 가중치는 {low}에서 {high} 사이, w(1 − w)는 {glow}에서 "
                       "{ghigh} 사이에 머문다.",
    "why.sqrt.translator.head": "학습된 헤드는 √d_k로 나누어도 원-핫에 가까워질 수 있다. 배포된 번역기가 일본어로 옮긴 "
                                "문장 “{text}” → {target}에서 가장 포화된 cross-attention 행은 디코더 층 {layer} (0–{last} "
                                "중), 헤드 {head} (0–{hlast} 중)의 행으로, Query는 “{query}”에서의 디코더 상태(그 단계에서 쓴 "
                                "단어: {generated})이다. 가장 큰 가중치는 {word}에 간 {top}이다.",
    "why.sqrt.translator.head.spread": "배포된 번역기가 일본어로 옮긴 문장 “{text}” → {target}에서 가장 몰린 "
                                       "cross-attention 행은 디코더 층 {layer} (0–{last} 중), 헤드 {head} (0–{hlast} "
                                       "중)의 행으로, Query는 “{query}”에서의 디코더 상태(그 단계에서 쓴 단어: {generated})이다. 가장 큰 "
                                       "가중치는 {word}에 간 {top}이다: 원-핫에 가까운 행은 없다.",
    "why.sqrt.translator.spread": "그 점수 q·k는 {scores}이고, 가장 큰 값이 다음 값보다 {gap} 크다. √d_k(= √{dk} = {root})로 "
                                  "나누면 {scaled} (차이 {gap_scaled})가 되고, softmax의 결과는 {weights}이다.",
    "why.sqrt.translator.without": "√d_k로 나누지 않으면 같은 학습된 q와 k의 가중치는 {plain}이다: 가장 큰 가중치는 "
                                   "{top_plain}, 그 기울기 w(1 − w)는 {grad}에서 {grad_plain}까지 떨어진다 ({times}배 "
                                   "작아진다). 모델은 √d_k로 나누면서 q와 k를 학습했다. 나누지 않고 학습했다면 다른 "
                                   "가중치를 배웠을 것이다: 이것은 같은 점수에 나눗셈이 하는 일을 보여 줄 뿐, 다른 모델이 "
                                   "아니다.",
    "why.softmax.sum": "{token}의 스케일링한 점수를 그대로 가중치로 쓰면 합이 1이 아니라 {sum}이다: 출력은 Value들을 섞은 것(가중 "
                       "평균)이 아니라 부풀려 더한 것이 된다.",
    "why.softmax.negative": "2를 빼면 점수 {n}개 중 {count}개가 음수가 되고 합은 {sum}이다: 음수 가중치는 대답을 빼 버린다.",
    "why.softmax.constant.same": "softmax는 s, s − 2, s + 5에 같은 가중치를 준다 (가장 큰 변화 {change}, 반올림 오차): 더한 "
                                 "상수는 각 e^s와 Σ 사이에서 약분된다.",
    "why.softmax.constant.differs": "상수를 더했더니 가중치가 {change}만큼 바뀌었다.",
    "why.softmax.factor.differs": "2, 0.5, 10을 곱하면 가중치가 바뀐다 (가장 큰 변화는 배율에 따라 {low}에서 {high}): softmax는 더한 상수는 무시하지만 "
                                  "곱한 배율은 무시하지 않는다.",
    "why.softmax.factor.same": "배율을 곱했더니 가중치가 최대 {high}만큼 바뀌었다.",
    "why.softmax.length": "문장을 {n}번 반복하면(T = {t}) 점수의 합은 {sum1}이다 (반복하지 않으면 {sum0}). 점수를 그대로 "
                          "가중치로 쓴 출력은 {times}배로 커진다 ({raw0} → {raw1}). softmax의 출력은 {out} 그대로이다 (가장 큰 변화 "
                          "{change}).",
    "why.order.swapped": "Q와 K를 바꾸면 다른 숫자가 나온다 (출력의 차이는 최대 {diff}): KQᵀ는 (QKᵀ)ᵀ이므로, {token}의 "
                         "행은 {token}의 질문이 각 Key와 얼마나 맞는지가 아니라 각 토큰의 질문이 {token}의 Key와 얼마나 "
                         "맞는지가 된다.",
    "why.order.swapped.same": "여기서는 Q와 K를 바꿔도 출력이 {diff}만큼만 바뀌었다.",
    "why.order.columns": "「어텐션이 조모임이라면」의 열벡터 표기 V·softmax(KᵀQ/√d_k)를 전치하면 같은 계산이다: 가장 큰 차이는 {diff}이다.",
    "why.order.columns.differs": "열벡터 표기와의 차이는 {diff}이다.",
    "why.order.axis": "softmax를 엉뚱한 축(QKᵀ의 열 방향)으로 적용하면 출력이 최대 {diff}만큼 바뀐다. 이때 love의 가중치 "
                      "합은 1이 아니라 {sum}이다.",
    "why.order.axis.same": "여기서는 softmax의 축을 바꿔도 출력이 {diff}만큼만 바뀌었다.",
    "why.temperature.none": "배율 {factor}: 조모임 2에서 lot의 가중치는 {lot}, 표는 “{a}” {dot}, “{b}” {of}이다. lot의 대답은 "
                            "들리지 않는다.",
    "why.temperature.blend": "배율 {factor}: 조모임 2에서 lot의 가중치는 {lot}, 표는 “{a}” {dot}, “{b}” {of}이다. 두 대답을 "
                             "섞되 “{b}” 쪽이 여전히 이긴다. 글에서 말한 “적당히 걸러들어”가 바로 이것이다.",
    "why.temperature.lot_wins": "배율 {factor}: 조모임 2에서 lot의 가중치는 {lot}, 표는 “{a}” {dot}, “{b}” {of}이다. “{a}” 쪽이 "
                                "이긴다.",
    "why.temperature.first": "조모임 1에서 lot의 가중치는 배율 {factor}일 때 {high}에서 {low}까지 떨어진다: 배율이 작을수록(온도가 "
                             "높을수록) 가중치가 고르게 퍼지고, 클수록 한쪽으로 쏠린다.",
    "why.mask.sees": "Query {token} — 볼 수 있는 Key: {seen}. 뒤에 와서 가려지는 Key: {hidden}. 마스크가 없을 때 가려진 "
                     "Key들이 가져가던 가중치({share})를 마스크가 있으면 보이는 Key들이 나누어 가진다 (행의 합 {sum}).",
    "why.mask.all": "마지막 토큰 {token}의 Query는 모든 토큰을 본다: 가중치가 그대로이다 (가장 큰 차이 {diff}).",
    "why.mask.why": "이유: 디코더는 왼쪽에서 오른쪽으로 쓰므로, 어떤 토큰의 다음 단어를 예측할 때 그 뒤의 단어는 아직 없다. "
                    "학습은 문장 전체를 한꺼번에 계산하므로, 마스크가 각 토큰의 미래를 가려서 학습 때도 생성할 때와 같은 "
                    "것만 보게 한다. 첫 토큰 {first}의 Query는 자기 자신만 본다: 가중치 {weight}.",
    "why.dot.rule": "q_{token} = {q}, |q| = {length}. q·k = |q|·|k|·cos θ: k가 q 방향을 얼마나 향하는지(cos θ)에 두 길이를 "
                    "곱한 값이다.",
    "why.dot.aligned_wins": "q·k가 가장 큰 것은 {best}({score})이다: 그 Key가 q와 방향이 가장 잘 맞는다 (θ = {angle}°).",
    "why.dot.length_wins": "q·k가 가장 큰 것은 {best}({score})이다. 그 Key는 q와 {angle_best}° 어긋나 있지만 가장 길다 "
                           "(|k| = {length}). 방향이 가장 잘 맞는 Key는 {aligned}이다 (θ = {angle}°).",
    "why.dot.worst": "q·k가 가장 작은 것은 {worst}({score})이다 (θ = {angle}°).",
    "why.dot.worst.short": "q·k가 가장 작은 것은 {worst}({score})이다. 거의 q 방향을 향하지만(θ = {angle}°) 그 Key가 가장 "
                           "짧다 (|k| = {length}).",
    "why.fig.std": "측정한 std(q·k)", "why.fig.std.title": "q·k의 표준편차는 √d_k에 비례해 커진다",
    "why.fig.top_plain": "최대 가중치 (나누지 않음)", "why.fig.top_scaled": "최대 가중치 (÷√d_k)",
    "why.fig.grad_plain": "w(1 − w) (나누지 않음)", "why.fig.grad_scaled": "w(1 − w) (÷√d_k)",
    "why.fig.top.title": "√d_k로 나누지 않으면 softmax가 포화된다",
    "why.fig.translator.scaled": "÷√d_k (d_k = {dk}): 모델이 계산하는 대로",
    "why.fig.translator.plain": "나누지 않음: 같은 q, k",
    "why.fig.translator.axis": "가중치 (로그 눈금)",
    "why.fig.translator.title": "번역기의 디코더 층 {layer} 헤드 {head}, Query {query} (→ {generated}):\n가장 포화된 "
                                "cross-attention 행",
    "why.fig.raw": "{what}: 그대로 가중치로", "why.fig.softmax_any": "softmax: s, s − 2, s + 5 모두 같다",
    "why.fig.raw.title": "{token}의 점수를 가중치로 쓸 때와 softmax",
    "why.fig.weights.title": "softmax 가중치: 상수를 더하면 그대로, 배율을 곱하면 달라진다",
    "why.fig.keys": "Key", "why.fig.queries": "Query",
    "why.fig.temperature": "배율 {factor}: “{a}” {dot}, “{b}” {of}",
    "why.fig.plain": "마스크 없음", "why.fig.masked": "인과 마스크 (— 가려짐)",
    "why.fig.dot": "q_{token} 및 Key들 (d_k = 2): q·k = |q|·|k|·cos θ. 점선: 각 k를 q 방향에 내린 그림자",
})

# ------------------------------------------------------------------ practice on the pages (page.js, serve's app.js)
EN.update({
    "page.practice": "Practice: compute the hidden numbers",
    "page.practice_intro": "One number of this example is hidden at a time, in the order of the post: compute it and "
                           "type it. An answer within the printed rounding counts; a wrong one is compared with the "
                           "usual slips, and the first step where your number and the true one part is named.",
    "page.practice_numbers": "Numbers",
    "page.practice_post": "the post's numbers (seed {seed})",
    "page.practice_fresh": "new numbers of the same shapes (seed {seed})",
    "page.practice_more": "This page holds {n:set|sets} of new numbers, made when it was written. For more, run qkv serve "
                          "(any seed), or qkv practice {example} --fresh --seed N in a terminal.",
    "page.practice_check": "Check",
    "page.practice_next": "Next question →",
    "page.practice_finish": "See the result",
    "page.practice_again": "Start again",
    "page.practice_seed": "Seed",
    "page.practice_fresh_box": "new numbers of the same shapes",
    "page.practice_start": "Start",
    "page.practice_new": "New numbers",
    "serve.practice.fresh": "expected true or false, got {value}",
    "serve.practice.answer": "expected the typed answer as text, got {value}",
    "serve.practice.question": "question {value} is outside 0 … {last}",
    "page.practice_serve": "Any seed gives a drill: the same seed, the same drill. “New numbers” draws a seed and new "
                           "inputs of the same shapes; the server computes them.",
})
KO.update({
    "page.practice": "연습: 가려진 숫자 계산하기",
    "page.practice_intro": "이 예제의 숫자를 글의 순서대로 하나씩 가린다. 직접 계산해서 입력하면 화면에 보이는 자릿수 "
                           "안에서 맞았는지 확인하고, 틀린 답은 흔한 실수와 비교하여 참값과 처음 갈라지는 단계를 짚어 준다.",
    "page.practice_numbers": "숫자",
    "page.practice_post": "글의 숫자 (시드 {seed})",
    "page.practice_fresh": "같은 형태의 새 숫자 (시드 {seed})",
    "page.practice_more": "이 페이지에는 페이지를 만들 때 계산한 새 숫자 묶음이 {n}개 들어 있다. 더 풀려면 qkv serve에서 "
                          "아무 시드나 고르거나, 터미널에서 qkv practice {example} --fresh --seed N을 실행하면 된다.",
    "page.practice_check": "확인",
    "page.practice_next": "다음 문제 →",
    "page.practice_finish": "결과 보기",
    "page.practice_again": "처음부터 다시",
    "page.practice_seed": "시드",
    "page.practice_fresh_box": "같은 형태의 새 숫자",
    "page.practice_start": "시작",
    "page.practice_new": "새 숫자로",
    "serve.practice.fresh": "true나 false여야 한다 (받은 값: {value})",
    "serve.practice.answer": "입력한 답은 문자열이어야 한다 (받은 값: {value})",
    "serve.practice.question": "문제 번호는 0 … {last} 범위여야 한다 (받은 값: {value})",
    "page.practice_serve": "시드마다 문제가 정해진다. 같은 시드는 같은 문제를 낸다. ‘새 숫자로’는 시드를 새로 뽑아 같은 "
                           "형태의 새 입력으로 문제를 내며, 그 숫자는 서버가 계산한다.",
})
