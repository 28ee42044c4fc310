"""The names of a trace's steps as a reader sees them (the step column of the by-hand comparison, the
shape table, a model's derivation), in English and Korean: same keys.

Each language names a step in words (scaled scores, 스케일링한 점수), with the symbols kept (W_Q, Q, Y):
what a learner reads never spells the API's name (``trace["scaled_scores"]``), which only JSON keys and
Python code use. `qkv.explain.texts.step_name` reads a
whole name: each part of ``head 1/scores`` or ``lot/weights`` by its own key, a part with no key (a
user's own step) as it is.
"""

from __future__ import annotations

_STEPS = {
    # the API's name: (English, Korean)
    "x": ("input X", "입력 X"),
    "memory": ("memory (encoder output)", "메모리 (인코더 출력)"),
    "w_q": ("W_Q", "W_Q"), "w_k": ("W_K", "W_K"), "w_v": ("W_V", "W_V"), "w_o": ("W_O", "W_O"),
    "q": ("Q", "Q"), "k": ("K", "K"), "v": ("V", "V"),
    "q_heads": ("Q per head", "헤드별 Q"), "k_heads": ("K per head", "헤드별 K"), "v_heads": ("V per head", "헤드별 V"),
    "rope_angles": ("RoPE angles", "RoPE 회전각"),
    "q_rotated": ("rotated Q", "회전한 Q"), "k_rotated": ("rotated K", "회전한 K"),
    "scores": ("scores", "점수"),
    "scaled_scores": ("scaled scores", "스케일링한 점수"),
    "biased_scores": ("scores plus bias", "편향을 더한 점수"),
    "modified_scores": ("scores after the score function", "점수 함수를 거친 점수"),
    "mask": ("mask", "마스크"),
    "softmax_max": ("row maximum m", "행의 최댓값 m"),
    "exp_scores": ("e^(s − m)", "e^(s − m)"),
    "exp_sum": ("Σ e^(s − m)", "Σ e^(s − m)"),
    "weights": ("weights", "가중치"),
    "out": ("attention output", "어텐션 출력"),
    "contributions": ("contributions ‖wⱼ·vⱼ‖", "기여도 ‖wⱼ·vⱼ‖"),
    "shares": ("shares of the output", "출력 기여 비율"),
    "concat": ("concatenated head outputs", "이어 붙인 헤드 출력"),
    "y": ("output projection Y", "출력 투영 Y"),
    "residual": ("residual R + Y", "잔차 연결 R + Y"),
    "difference": ("difference of the two notations", "두 표기의 차이"),
    # the parts that group steps: the group-meeting scenes and notations, the heads computed one by one
    "lot": ("meeting 1", "조모임 1"),
    "question": ("meeting 2", "조모임 2"),
    "rows": ("row-vector notation", "행벡터 표기"),
    "columns": ("column-vector notation", "열벡터 표기"),
    "heads_check": ("each head alone", "헤드별 계산"),
    "by hand": ("by hand", "손 계산"),
    "drift": ("drift from the by-hand values", "손 계산과의 차이"),
}

EN: dict[str, str] = {f"step.{name}": en for name, (en, _) in _STEPS.items()}
KO: dict[str, str] = {f"step.{name}": ko for name, (_, ko) in _STEPS.items()}
# numbered parts: "head 1/…", "layer 2/…" (the number as the trace spells it); "scalar": a step of no shape
# a recorded formula with words in it, said in the reader's language (the shape table reads ``formula.STEP``)
EN.update({"formula.concat": "Concat(head₁, …, head_h)"})
KO.update({"formula.concat": "Concat(헤드₁, …, 헤드_h)"})
# the scores multiplied by a scale other than 1/√d_k, and the bias added to them, named in words
EN.update({"sym.scores_scale": "scores·scale", "sym.bias": "+ bias", "sym.concat_heads": "Concat(heads)"})
KO.update({"sym.scores_scale": "점수·배율", "sym.bias": "+ 편향", "sym.concat_heads": "Concat(헤드)"})
EN.update({"step.part.head": "head {n}", "step.part.layer": "layer {n}", "step.sep": " / ", "step.scalar": "scalar"})
KO.update({"step.part.head": "헤드 {n}", "step.part.layer": "층 {n}", "step.sep": " / ", "step.scalar": "스칼라"})
