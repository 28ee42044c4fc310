"""The names of a trace's steps as a reader sees them (the step column of the by-hand comparison, the
shape table, a model's derivation), in English and Korean: same keys.

English shows the step names as the API spells them (``trace["scaled_scores"]``); Korean names each
step in words (스케일링한 점수), with the symbols kept (W_Q, Q, Y). `qkv.explain.texts.step_name` reads a
whole name: each part of ``head 1/scores`` or ``lot/weights`` by its own key, a part with no key (a
user's own step) as it is.
"""

from __future__ import annotations

_STEPS = {
    # name: (English = the API's name, Korean)
    "x": ("x", "입력 X"),
    "memory": ("memory", "메모리 (인코더 출력)"),
    "w_q": ("w_q", "W_Q"), "w_k": ("w_k", "W_K"), "w_v": ("w_v", "W_V"), "w_o": ("w_o", "W_O"),
    "q": ("q", "Q"), "k": ("k", "K"), "v": ("v", "V"),
    "q_heads": ("q_heads", "헤드별 Q"), "k_heads": ("k_heads", "헤드별 K"), "v_heads": ("v_heads", "헤드별 V"),
    "rope_angles": ("rope_angles", "RoPE 회전각"),
    "q_rotated": ("q_rotated", "회전한 Q"), "k_rotated": ("k_rotated", "회전한 K"),
    "scores": ("scores", "점수"),
    "scaled_scores": ("scaled_scores", "스케일링한 점수"),
    "biased_scores": ("biased_scores", "편향을 더한 점수"),
    "modified_scores": ("modified_scores", "점수 함수를 거친 점수"),
    "mask": ("mask", "마스크"),
    "softmax_max": ("softmax_max", "행의 최댓값 m"),
    "exp_scores": ("exp_scores", "e^(s − m)"),
    "exp_sum": ("exp_sum", "Σ e^(s − m)"),
    "weights": ("weights", "가중치"),
    "out": ("out", "어텐션 출력"),
    "contributions": ("contributions", "기여도 ‖wⱼ·vⱼ‖"),
    "shares": ("shares", "출력 기여 비율"),
    "concat": ("concat", "이어 붙인 헤드 출력"),
    "y": ("y", "출력 투영 Y"),
    "residual": ("residual", "잔차 연결 R + Y"),
    "difference": ("difference", "두 표기의 차이"),
    # the parts that group steps: the group-meeting scenes and notations, the heads computed one by one
    "lot": ("lot", "조모임 1"),
    "question": ("question", "조모임 2"),
    "rows": ("rows", "행벡터 표기"),
    "columns": ("columns", "열벡터 표기"),
    "heads_check": ("heads_check", "헤드별 계산"),
    "by hand": ("by hand", "손 계산"),
    "drift": ("drift", "손 계산과의 차이"),
}

EN: dict[str, str] = {f"step.{name}": en for name, (en, _) in _STEPS.items()}
KO: dict[str, str] = {f"step.{name}": ko for name, (_, ko) in _STEPS.items()}
# numbered parts: "head 1/…", "layer 2/…" (the number as the trace spells it); "scalar": a step of no shape
# a recorded formula with words in it, said in the reader's language (the shape table reads ``formula.STEP``)
EN.update({"formula.concat": "Concat(head₁, …, head_h)"})
KO.update({"formula.concat": "Concat(헤드₁, …, 헤드_h)"})
# the scores multiplied by a scale other than 1/√d_k, and the bias added to them, named in words
EN.update({"sym.scores_scale": "scores·scale", "sym.bias": "+ bias", "sym.concat_heads": "Concat(heads)"})
KO.update({"sym.scores_scale": "점수·스케일", "sym.bias": "+ 편향", "sym.concat_heads": "Concat(헤드)"})
EN.update({"step.part.head": "head {n}", "step.part.layer": "layer {n}", "step.sep": "/", "step.scalar": "scalar"})
KO.update({"step.part.head": "헤드 {n}", "step.part.layer": "층 {n}", "step.sep": " / ", "step.scalar": "스칼라"})
