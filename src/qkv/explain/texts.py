"""Every sentence of the explanations, in English (EN) and Korean (KO): same keys, same placeholders.

Placeholders are ``{name}`` (str.format). The Korean is written for qkv in the register of the
seed posts (plain written style, technical terms kept in English where Korean writers keep them).
"""

from __future__ import annotations

import string

__all__ = ["EN", "KO", "LANGS", "CAUSAL_MODEL_TEXTS", "text", "has", "check_lang", "placeholders"]

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
    "post.000": "Attention의 projection: Q·K·V와 멀티 헤드",
    "post.001": "도해와 최소 사례로 직관적으로 이해하는 Self-attention, Cross-attention, Multi-head Attention",
    "post.002": "어텐션이 조모임이라면",
    "post.000.gloss": "attention's projections: Q·K·V and multiple heads",
    "post.001.gloss": "self-, cross- and multi-head attention through diagrams and minimal examples",
    "post.002.gloss": "if attention were a group meeting",
    "byhand.intro": "By hand: every intermediate is rounded to the digits shown and the next step is "
                    "computed from the rounded numbers, as with a calculator.",
    "byhand.digits": "Each number is rounded to {digits} decimals.",
    "byhand.seed_digits": "Each number is rounded to the precision the post prints for that step.",
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
                        "{n_heads}. {x} W_Q, W_K, W_V are this head's learned columns of the layer's "
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
             "(stored as {shape}, heads first). Columns 0 to {last} are head {h0}, the next {dh} are head {h1}, "
             "and so on.",
    # core attention
    "h.head": "Head {h}",
    "h.scores": "Step 2 — scores: the query against every key",
    "head.explain": "Head {h} uses its own {dk:column|columns} of Q and K (array columns {first}–{last}) and its own "
                    "columns of V.",
    "note.head_numbers": "The post numbers its heads from 1, and so does this explanation; in qkv's API (arrays, "
                         "--head) head 1 is index 0.",
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
    "bias.explain": "An additive bias is added to the scaled scores:",
    "modified.explain": "A score function (score_mod) changes each score before the softmax: {formula}. "
                        "ALiBi adds a penalty growing with the distance kv − q; soft-capping squashes scores into (−cap, cap):",
    "mask.explain": "The mask blocks keys the query may not see (−∞ before softmax, so their weight is 0). "
                    "Blocked for {token}: {blocked}.",
    "none": "none",
    "masked": "masked",
    "softmax.explain": "Softmax turns the scaled scores into weights between 0 and 1 that add up to 1 "
                       "(exp of each score divided by the sum of the exps; a query the mask lets see no key "
                       "gets weight 0 everywhere):",
    "softmax.steps": "Softmax step by step. Subtracting one number from every score does not change the weights, so "
                     "qkv first subtracts the row's largest score, m = {m} (then no e^ can overflow). Each weight is "
                     "e^(s − m) divided by the sum of them all:",
    "col.key": "key",
    "col.score": "scaled score",
    "col.score.final": "score into softmax",
    "col.weight": "weight",
    "weights.top": "{token} attends most strongly to {top}, which therefore contributes most to its new "
                   "representation.",
    "out.explain": "The output for {token} is the weighted sum of the value vectors:",
    "out.explain.cross": "The output for {token} is the weighted sum of the encoder's value vectors: information "
                         "from the source sentence, mixed by the weights. It is not the next word itself but an "
                         "intermediate vector the decoder uses to predict it.",
    "weights.matrix": "The weights of every query (each row adds up to 1, or is all 0 where the mask lets a "
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
    "h.shapes": "Shapes at every step",
    "shapes.explain": "Every recorded step with its formula and shape (heads first where there are heads):",
    "col.step": "step",
    "col.formula": "formula",
    # multi-head
    "h.mh.heads": "The heads' outputs for one token",
    "mh.z1": "{z} is the output for {token} computed in the {example} example (not typed in).",
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
    "gm.col.score": "score Q_{query}·K",
    "gm.col.answer": "answer V (votes for {answers})",
    "gm.blend": "The meeting's conclusion is the weighted sum of the answers:",
    "gm.scaled": "In this what-if every score is multiplied by {factor} before the softmax:",
    "gm.lot.conclusion": "The group follows lot's answer: the next word is “{answer}”.",
    "gm.question.conclusion": "lot's voice is now relatively weak: the conclusion is “{answer}”.",
    "gm.weaker": "lot's weight was {before} in the first meeting and is {after} in the second: softmax only "
                 "cares about scores relative to each other.",
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
                               "weights). From the weights shown here the sum is {value}.",
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
    "fig.scaled": "÷ √dₖ (scaled score)",
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
    "fig.multi_head": "heads side by side, concatenated, × W_O",
    "fig.eq_scores": "q·k: multiply position by position, then add",
    "fig.eq_scaled": "divided by √d_k, d_k = {dk} (the width of q and k)",
    "fig.eq_softmax": "softmax: w_j = exp(s_j) / Σₖ exp(s_k)",
    "fig.eq_shift": "qkv takes exp(s − m), m = max s = {m}:\nthe same ratio, and nothing overflows",
    "fig.eq_underflow": "exp(s − m) below about 10⁻³⁰⁸ is 0 in 64-bit floating point",
    "fig.inputs": "from X to q, k, v: each row of X times W_Q, W_K and W_V",
    "fig.inputs_dec": "decoder → Q: the decoder's row X_dec times W_Q",
    "fig.inputs_enc": "encoder → K, V: the encoder's rows M_enc times W_K and W_V",
    "fig.legend_dec": "decoder token: gives the query q",
    "fig.legend_enc": "encoder tokens: give the keys k and the values v",
    "fig.followed": "outlined: the rows worked out above",
    "fig.trace_q": "the followed query's q and the first key's k, from X and W:",
    "fig.mh_heads": "each head's output for “{token}”",
    "fig.mh_concat": "concatenated: H = Concat({heads})",
    "fig.mh_column": "H's numbers, each beside the row of W_O it multiplies",
    "fig.mh_sum": "z_final = H·W_O: each number is a sum of products (rows where W_O is 0 are left out)",
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
    "fig.scaled_other": "× scale (scaled score)",
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
    "page.lock": "lock selection",
    "page.unlock": "unlock selection",
    "page.clear": "clear",
    "page.selected": "selected queries",
    "page.sum": "sum of the selected rows",
    "page.query": "query",
    "page.key": "key",
    "page.weight": "weight",
    "page.score": "q·k (raw score)",
    "page.scaled": "÷ √dₖ (scaled score)",
    "page.scaled_by": "× scale (scaled score)",
    "page.biased": "+ bias",
    "page.modified": "score_mod (score before the softmax)",
    "page.rotated": "(after RoPE: the q and k the scores use)",
    "page.weights_only": " Only the weights are recorded for texts over {limit:token|tokens} (this one has {tokens}); "
                         "run a shorter text for every derivation row.",
    "page.mask": "mask",
    "page.allowed": "0 (may attend)",
    "page.blocked": "−∞ (masked)",
    "page.masked": "masked",
    "page.share": "softmax weight  e^s[i,j] / Σₖ e^s[i,k]",
    "page.value": "value row it weights",
    "page.out": "output row of this query  z = Σⱼ w[i,j]·v[j]",
    "page.not_recorded": "not recorded in this trace",
    "page.derivation": "Derivation of one cell",
    "page.qrow": "query vector q",
    "page.krow": "key vector k",
    "page.storage": "numbers shown to {d} decimals (stored as integers × 10^−{d}, exact to what is shown)",
    "page.no_data": "This trace records no attention weights to draw.",
    "page.sum1": "the weights of a row sum to 1 (all 0 when every key is masked)",
    "page.legend": "weight (one scale everywhere: 0 to 1, shaded by √weight); hatched grey: masked",
    "page.zoom_in": "zoom in",
    "page.zoom_out": "zoom out",
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
    "page.st.weighted.text": "Each key's value row v is multiplied by that key's weight: a key with a large weight "
                             "contributes most.",
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
                         "recomputed) needs qkv serve: run `qkv serve` and open its worked examples. This offline page "
                         "shows the recorded numbers only.",
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
                              "other changes (a cell of X or W) run qkv serve.",
    "page.whatif_result": "lot's weight: {w}; the blended answer: {out} → “{answer}”.",
    "page.whatif_note": "Softmax cares about differences: as long as the question's words score far below lot, lot "
                        "takes almost all the weight; once they score far above it, lot's weight falls to almost 0. "
                        "For other changes run qkv serve.",
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
    "cli.wrote": "wrote {path}",
    "cli.ring.torch": "qkv ring needs torch (its ranks run torch.distributed): pip install 'qkv[torch]'",
    "cli.tokens": "tokens",
    "cli.truncated": "the text is longer than this model reads; only its first {n:token|tokens} are used",
    "cli.inspect.title": "{model}: layer {layer}, head {head} of {layers:layer|layers} × {heads:head|heads}",
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
    "error.decimals": "{value}: expected a whole number of decimals",
    "error.decimals.range": "{value}: expected a whole number of decimals from {low} to {high}",
    "error.decimals.low": "{value}: expected a whole number of decimals ≥ {low}",
    "error.decimals.high": "{value}: expected a whole number of decimals ≤ {high}",
    # argparse's own messages: the English is argparse's message id, word for word (cli.argparse_words)
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
    "doctor.backward": "C extension qkv.kernels._backward: built — torch tensors (CPU, float32) train through the C "
                       "forward and backward (route torch_flash)",
    "doctor.no_backward": "C backward: not live (qkv.kernels._backward not built, or no BLAS sgemm) — torch tensors "
                          "take SDPA or the plain path (same numbers)",
    "doctor.torch": "torch: {version} — qkv.torch, qkv ring and the reference checks are available",
    "doctor.no_torch": "torch: not installed — qkv.torch and qkv ring need it (pip install torch, or make test)",
    "doctor.summary.built": "C kernel built ({width}, {sgemm}, {backward})",
    "doctor.summary.sgemm": "BLAS sgemm",
    "doctor.summary.no_sgemm": "no BLAS sgemm",
    "doctor.summary.backward": "C backward",
    "doctor.summary.no_backward": "no C backward",
    "doctor.summary.not_built": "C kernel NOT built: NumPy path (see 'qkv doctor')",
    "doctor.summary.torch": "torch {version}",
    "doctor.summary.no_torch": "no torch",
    "doctor.lanes": "{n} lanes",
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
    "cli.generate.positive": "{value}: expected a positive number",
    "cli.generate.probability": "{value}: expected a probability in (0, 1]",
    "cli.generate.needs_sample": "--temperature, --top-k, --top-p and --seed choose how to sample; add --sample "
                                 "(greedy is the default)",
    "cli.generate.not_causal": "{model} is a {kind}, not a causal language model; generate needs one (e.g. gpt2, "
                               "llama, qwen2)",
    "cli.embed.not_encoder": "{model} is a {kind}, a causal language model; embed needs a sentence encoder (model_type "
                             "bert, e.g. minilm)",
    "cli.translate.figure_one": "a figure shows one language: add --to ko or --to ja",
    "cli.translate.derive_one": "a derivation follows one language: add --to ko or --to ja",
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
    "serve.error.no_text": "missing (the text to run through the model)",
    "serve.error.chars": "{count} characters; the server takes at most {limit}",
    "serve.error.tokens": "{count:token|tokens}; model '{model}' takes at most {limit} (special tokens included): "
                          "shorten the text",
    "serve.error.busy": "too many requests at once (more than {count}); try again in a moment",
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
                                      "subject ({expected})",
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
    "serve.error.layer": "{layer}: the translator has decoder layers 0 … {last}",
    "serve.error.word": "{word}: the translation has words 1 … {last} (counted from 1)",
    "serve.error.missing_number": "missing (a whole number from 0)",
    "serve.error.whole": "{value} is not a whole number (at most 18 digits)",
    "serve.error.model": "{name} is not loaded; loaded: {loaded}",
    "serve.error.no_translator": "the translator is not loaded in this server",
    "serve.error.upload_size": "{size} bytes; an uploaded file may be at most {limit} bytes",
    "serve.error.cross_origin": "refused: this request comes from another site ({origin}); the server takes "
                                "uploads and what-ifs only from its own page ({own})",
    "serve.error.fetch_site": "refused: the browser says this request comes from {site} (Sec-Fetch-Site); the "
                              "server takes uploads and what-ifs only from its own page",
    "serve.error.content_type": "refused: Content-Type {got}; this route takes {wanted}",
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
    "serve.ui.run": "Show attention",
    "serve.ui.emptyText": "Type a sentence first (e.g. The cat sat on the mat.), then press Show attention.",
    "serve.ui.textPlaceholder": "e.g. The cat sat on the mat.",
    "serve.ui.overview": "Every layer × head",
    "serve.ui.tokenCount": "{n:token|tokens}",
    "serve.ui.overviewHint": "Each square is one head: rows are queries, columns are keys. Click one to open it.",
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
    "serve.ui.crossOf": "cross-attention, layer {layer}, head {head}",
    "serve.ui.crossRows": "Row t is word t of the translation, as in the figure of qkv translate. Its query is the "
                          "decoder's state at the token before word t (for word 1, the language token {lang}): "
                          "that state reads the English words and predicts word t.",
    "serve.ui.crossCell": "Derivation of one cell: word {t} “{word}” (query: the state at “{prev}”) → English "
                          "word {j} “{k}”",
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
    "serve.ui.meeting.1": "the first meeting",
    "serve.ui.meeting.2": "the second meeting",
    "serve.ui.meetingN": "meeting {n}",
    "serve.ui.partAll": "all heads",
    "serve.ui.partRows": "row form (the paper): softmax(QKᵀ/√d_k)·V",
    "serve.ui.partColumns": "column form (3Blue1Brown): softmax per column",
    "serve.ui.compareOut": "the output of “{q}”, Concat(heads)·W_O",
    "serve.ui.multiHeadNote": "Only head 1 is computed from inputs (the self-attention example); heads 2 and 3 are "
                              "outputs the post gives, so a change reaches the result through head 1 and W_O.",
}

KO: dict[str, str] = {
    # titles
    "title.self-attention": "Self-attention: love는 어떻게 문맥 표현을 만드는가",
    "title.cross-attention": "Cross-attention: 디코더 토큰 私は가 인코더에 묻는다",
    "title.multi-head": "Multi-head attention: love에 대한 세 헤드의 출력을 이어 붙이고 W_O로 투영한다",
    "title.projection": "Q·K·V 투영과 멀티 헤드: T = 3, d = 8, h = 2일 때 각 단계의 형태",
    "title.group-meeting": "어텐션이 조모임이라면: 찰떡궁합점수, softmax, 그리고 두 가지 표기법",
    "title.user": "단계별로 따라가는 어텐션",
    "title.model.all": "{model}: 모든 층과 헤드의 attention",
    "title.model.layer": "{model}: 층 {layer}, 헤드 {n}개 전체",
    "title.model.head": "{model}: 층 {layer}, 헤드 {head}",
    "title.model.kv_head": "{model}: 층 {layer}, 헤드 {head} (Key/Value 헤드 {kv})",
    "post": "글 「{title}」({gloss})의 예제이다. 아래의 모든 숫자는 입력으로부터 qkv가 직접 계산한 값이다.",
    "post.000": "Attention의 projection: Q·K·V와 멀티 헤드",
    "post.001": "도해와 최소 사례로 직관적으로 이해하는 Self-attention, Cross-attention, Multi-head Attention",
    "post.002": "어텐션이 조모임이라면",
    "post.000.gloss": "Q·K·V를 만드는 투영, 헤드 나누기, 출력 투영",
    "post.001.gloss": "세 가지 어텐션을 작은 예제로 직접 계산하기",
    "post.002.gloss": "Query·Key·Value를 조모임에 빗대어 이해하기",
    "byhand.intro": "손 계산: 계산기로 계산하듯 모든 중간 결과를 화면에 보이는 자릿수로 반올림하고, 다음 단계는 반올림한 숫자로 계산한다.",
    "byhand.digits": "모든 숫자를 소수점 아래 {digits}자리로 반올림한다.",
    "byhand.seed_digits": "각 단계의 숫자는 글에 적힌 자릿수로 반올림한다.",
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
    "intro.user.cross-attention": "Cross-attention: Query는 x에서, Key와 Value는 memory에서 온다.",
    "intro.user.projection": "Multi-head attention: Q·K·V 투영, 헤드별 Core Attention, 출력 투영.",
    "intro.model.head": "실제 모델({model})의 헤드 하나를 입력 텍스트에 적용한다: 층 {layer}, 헤드 {head} (전체 {n_heads}개 중). {x} W_Q, W_K, "
                        "W_V는 층의 투영 행렬 가운데 이 헤드가 학습한 열들이다 ({bias}). Y는 층의 어텐션 출력 가운데 이 헤드의 몫이다.",
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
                       "찾고 있는 것, K는 그 토큰이 가진 내용을 나타내는 기술자, V는 주의를 받았을 때 제공하는 "
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
             "{shape}). 0번부터 {last}번까지의 열이 헤드 {h0}, 그다음 열 {dh}개가 헤드 {h1}이며, 나머지 헤드도 같은 방식으로 이어진다.",
    # core attention
    "h.head": "헤드 {h}",
    "h.scores": "2단계 — 점수: Query와 모든 Key의 비교",
    "head.explain": "헤드 {h}에서는 Q와 K 가운데 자기 몫인 열 {dk}개(배열의 {first}–{last}번 열)와 V의 자기 몫 열만 쓴다.",
    "note.head_numbers": "글은 헤드를 1부터 세고, 이 설명도 그렇게 센다. qkv의 API(배열, --head)에서는 헤드 1이 인덱스 0이다.",
    "scores.explain": "{token}의 Query와 각 Key의 내적이 가공되지 않은 어텐션 점수이다:",
    "scores.explain.cross": "디코더 토큰 {token}의 Query와 인코더의 각 Key의 내적이 가공되지 않은 어텐션 점수이다:",
    "scores.explain.rope": "회전한 {token}의 Query와 회전한 각 Key의 내적이 가공되지 않은 어텐션 점수이다:",
    "h.rope": "1b단계 — RoPE: q와 k를 위치만큼 회전",
    "rope.explain": "이 모델은 위치를 회전으로 나타낸다 (RoPE, θ = {theta}). 투영한 뒤 q와 k의 열을 i번과 (i + {half})번끼리 짝지어, 각 쌍을 각도 "
                    "위치·θ^(−2i/{dk})만큼 돌린다. 길이는 그대로이고, 아래 점수는 회전한 q와 k로 계산하므로 q_m·k_n은 거리 m − n에만 달려 있다.",
    "rope.query": "Query {token}의 위치는 {pos}이다. 회전 전과 후의 Q 행:",
    "rope.keys": "회전한 뒤의 K 행 (각 Key는 자기 위치만큼 돈다). 점수는 이 Key들로 계산한다:",
    "scores.matrix": "모든 Query와 모든 Key를 한꺼번에 비교한 Q·Kᵀ ({t} × {tk}). 따라가는 Query의 행을 표시했다:",
    "scale.explain": "Q와 K는 성분이 d_k = {dk}개인 벡터이므로, 점수를 √d_k(= √{dk})로 나누어 스케일링한다:",
    "scale.given": "점수를 스케일링한다: {formula}.",
    "bias.explain": "스케일링한 점수에 더하는 편향:",
    "modified.explain": "점수 함수(score_mod)가 softmax 전에 각 점수를 바꾼다: {formula}. ALiBi는 거리 kv − q에 비례하는 벌점을 더하고, 소프트캡은 점수를 "
                        "(−cap, cap) 안으로 눌러 담는다:",
    "mask.explain": "마스크는 Query가 보면 안 되는 Key를 막는다 (softmax 전에 −∞를 더하므로 가중치가 0이 된다). {token}에서 막힌 Key: {blocked}.",
    "none": "없음",
    "masked": "마스크",
    "softmax.explain": "softmax는 스케일링한 점수를 0과 1 사이의 가중치로 바꾸고, 가중치의 합이 1이 되게 한다. 각 점수의 exp를 모든 exp의 합으로 나누는 것이다 (마스크 "
                       "때문에 볼 수 있는 Key가 하나도 없는 Query는 모든 가중치가 0이다):",
    "softmax.steps": "softmax를 한 단계씩 계산한다. 모든 점수에서 같은 수를 빼도 가중치는 변하지 않으므로, qkv는 먼저 그 행의 가장 큰 점수 m을 모든 점수에서 뺀다 (여기서 m "
                     "= {m}). 그러면 e^의 값이 넘치지 않는다. 각 가중치는 e^(s − m)을 그 합으로 나눈 값이다:",
    "col.key": "Key",
    "col.score": "스케일링한 점수",
    "col.score.final": "softmax에 들어가는 점수",
    "col.weight": "가중치",
    "weights.top": "{token}의 Query는 {top}에 가장 큰 가중치를 준다. 따라서 {top}의 Value가 {token}의 업데이트된 표현에 가장 크게 기여한다.",
    "out.explain": "{token}의 출력은 Value 벡터들의 가중합이다:",
    "out.explain.cross": "{token}의 출력은 인코더 Value 벡터들의 가중합으로, 소스 문장의 정보를 가중치에 따라 섞은 "
                         "것이다. 이것은 다음 단어 그 자체가 아니라, 디코더가 다음 토큰을 예측하는 데 쓰는 "
                         "중간 벡터이다.",
    "weights.matrix": "모든 Query의 가중치(각 행의 합은 1, 모든 Key가 마스크로 가려진 행은 모두 0)와 모든 토큰의 출력:",
    # heads together
    "h.concat": "헤드 출력 결합 (Concat)",
    "concat.explain": "헤드 {h}개의 출력을 나란히 이어 붙인다: H는 {t} × {width} 형태이다.",
    "h.output": "출력 투영 W_O",
    "wo.explain": "W_O ({rows} × {cols})는 같은 토큰 위치의 여러 헤드 결과를 하나의 벡터로 조합한다. W_O는 모든 토큰에 똑같이 적용된다.",
    "wo.explain.model": "층의 W_O 가운데 이 헤드의 몫인 행 {rows}개({rows} × {cols})가 출력 Z를 다시 모델 차원으로 되돌린다. 층은 모든 헤드의 몫을 더한다 (편향도 "
                        "더한다).",
    "wo.explain.model.nobias": "층의 W_O 가운데 이 헤드의 몫인 행 {rows}개({rows} × {cols})가 출력 Z를 다시 모델 차원으로 되돌린다. 층은 모든 헤드의 몫을 "
                               "더한다 (편향은 없다).",
    "y.explain.model": "Y = Z·W_O ({t} × {d}):",
    "y.explain": "Y = H·W_O ({t} × {d}):",
    "residual.explain": "잔차 연결은 Y를 이 층의 입력 R(여기서는 R = X)에 더한다. R + Y가 다음 단계로 이어진다.",
    "h.heads_check": "헤드를 하나씩 따로 계산해도 숫자는 같다",
    "heads_check.explain": "헤드 {h}개를 하나씩, 자기 몫의 W_Q, W_K, W_V 열(Q와 K는 {dk}개씩)과 W_O의 자기 몫 행만으로 따로 계산해도, 한꺼번에 한 계산과 같은 "
                           "계산이다:",
    "head": "헤드 {h}",
    "col.head": "헤드",
    "col.columns": "사용하는 열",
    "col.shape": "형태",
    "heads_check.concat": "따로 계산한 헤드 출력을 이어 붙인 것과 한꺼번에 계산한 H 사이의 가장 큰 차이: {diff}.",
    "heads_check.y": "각 헤드의 몫 head_h·W_O[h의 행]을 더한 것과 Y 사이의 가장 큰 차이: {diff}.",
    "h.shapes": "각 단계의 형태",
    "shapes.explain": "기록된 모든 단계의 식과 형태 (헤드가 있으면 헤드 축이 앞에 온다):",
    "col.step": "단계",
    "col.formula": "식",
    # multi-head
    "h.mh.heads": "토큰 하나에 대한 헤드별 출력",
    "mh.z1": "{z}: {example} 예제에서 계산한 {token}의 출력이다 (직접 입력한 값이 아니다).",
    "mh.given": "나머지 헤드 {n}개도 각자의 투영 행렬로 같은 절차를 수행한다. 여기서는 그 출력이 주어져 있다고 하자.",
    "mh.concat": "출력 {h}개를 이어 붙여 성분 {width}개의 벡터 하나를 만든다. 헤드 출력을 나란히 붙였으므로 차원이 늘어난다:",
    "mh.final.explain": "z_final = z_concat·W_O를 성분별로 계산하면 (W_O에서 0이 아닌 항만 적었다):",
    "mh.final": "이것이 {token}에 대한 multi-head attention의 출력이다. 서로 다른 관계에 초점을 맞추기 쉬운 여러 "
                "헤드가 얻은 정보를 결합한 것이다.",
    # group meeting
    "gm.lot.title": "조모임 1: “{sentence}”",
    "gm.lot.explain": "토론의 질문은 Q_{query}, 즉 “일반적으로 {query} 뒤에 어떤 단어가 따라오는가?”이다. "
                      "{query} 자신의 찰떡궁합점수가 압도적으로 크고, 나머지 단어들의 점수는 작다고 하자:",
    "gm.question.title": "조모임 2: “{sentence}”",
    "gm.question.explain": "이번에는 앞에 질문이 있다. 질문의 단어들도 할 말이 있다. “현금이냐 신용카드냐고 "
                           "물었으니 of cash나 of credit card로 끝나야지”라며, 훨씬 큰 점수로 of를 강하게 "
                           "주장한다:",
    "gm.col.score": "찰떡궁합점수 Q_{query}·K",
    "gm.col.answer": "대답 V ({answers}에 대한 투표)",
    "gm.scaled": "값을 바꿔 본 이 계산에서는 softmax에 넣기 전에 모든 점수를 {factor}배 한다:",
    "gm.blend": "조모임의 결론은 대답들을 가중치만큼 걸러 들은 가중합이다:",
    "gm.lot.conclusion": "모두 lot의 대답을 따른다: 다음 단어는 “{answer}”이다.",
    "gm.question.conclusion": "lot의 목소리는 상대적으로 약해졌다: 결론은 “{answer}”이다.",
    "gm.weaker": "lot의 가중치는 첫 번째 조모임에서 {before}, 두 번째 조모임에서 {after}이다. softmax에서 중요한 것은 점수의 절댓값이 아니라 점수끼리의 상대적인 크기이다.",
    "gm.notation.title": "두 가지 표기법, 하나의 계산",
    "gm.notation.intro": "Attention Is All You Need 논문은 토큰을 행벡터로, 3Blue1Brown 영상은 열벡터로 쓴다. "
                         "{example} 예제의 Q, K, V로 두 표기법을 나란히 계산해 보자.",
    "gm.notation.rows": "행벡터 (논문): Attention(Q, K, V) = softmax(QKᵀ/√d_k)·V. softmax는 행마다(row-wise), 즉 Query마다 한 행씩 "
                        "적용한다.",
    "gm.notation.columns": "열벡터 (3Blue1Brown): Attention = V·softmax(KᵀQ/√d_k). softmax는 열마다(column-wise), 즉 Query마다 "
                           "한 열씩 적용한다. 가중치는 위의 것을 전치한 것이고, 출력도 마찬가지이다.",
    "gm.notation.same": "두 출력은 같다: 열벡터 형태의 결과를 전치하면 행벡터 형태의 결과가 된다 (가장 큰 차이: {diff}). softmax가 적용되는 방향과 V가 곱해지는 위치 "
                        "때문에 Q와 K는 서로 역할을 바꿀 수 없다.",
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
    "note.post001.rounded_heads": "참고: 글은 헤드 출력을 적힌 그대로, 즉 z⁽¹⁾을 소수점 아래 세 자리로 반올림한 값으로 곱했기 때문에 최종 벡터가 정확한 값과 소수점 아래 "
                                  "넷째 자리에서 다르다. 위에서는 z⁽¹⁾을 더 많은 자릿수로 적어 정확한 결과 {value}에 맞췄다. 손 계산 모드(--by-hand)는 글과 "
                                  "같은 방식으로 반올림하여 글의 숫자를 그대로 재현한다.",
    "note.post001.rounded_heads_by_hand": "참고: 글과 같이 z⁽¹⁾을 적힌 그대로, 즉 소수점 아래 세 자리로 반올림한 값으로 "
                                          "곱했으므로 결과가 글의 숫자와 같다. 정확한 결과는 {value}이다.",
    "note.post001.byhand_out": "참고: 글에서는 이 숫자가 마지막 자리에서 1만큼 크다. 글은 learning의 가중치로 자기가 적은 값(마지막 자리가 1만큼 큰 값, 위의 가중치에 "
                               "대한 참고를 보라)을 곱했기 때문이다. 여기에 적힌 가중치로 계산하면 합은 {value}이다.",
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
    "fig.scaled": "÷ √dₖ (√dₖ로 나눈 점수)",
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
    "fig.multi_head": "헤드를 나란히 놓고 이어 붙인 뒤 W_O를 곱한다",
    "fig.eq_scores": "q·k: 같은 자리끼리 곱해서 더한다",
    "fig.eq_scaled": "√d_k로 나눈다. d_k = {dk} (q와 k의 차원)",
    "fig.eq_softmax": "softmax: w_j = exp(s_j) / Σₖ exp(s_k)",
    "fig.eq_shift": "qkv는 exp(s − m)을 쓴다 (m = max s = {m}).\n비율은 같고, 너무 커서 넘치는 값이 생기지 않는다",
    "fig.eq_underflow": "exp(s − m)이 약 10⁻³⁰⁸보다 작으면 64비트 부동소수점에서 0이 된다",
    "fig.inputs": "X에서 q, k, v로: X의 각 행에 W_Q, W_K, W_V를 곱한다",
    "fig.inputs_dec": "디코더 → Q: 디코더의 행 X_dec에 W_Q를 곱한다",
    "fig.inputs_enc": "인코더 → K, V: 인코더의 행 M_enc에 W_K와 W_V를 곱한다",
    "fig.legend_dec": "디코더 토큰: Query q를 만든다",
    "fig.legend_enc": "인코더 토큰: Key k와 Value v를 만든다",
    "fig.followed": "테두리: 위에서 풀어 쓴 행",
    "fig.trace_q": "따라가는 Query의 q와 첫 Key의 k를 X와 W에서 구한다:",
    "fig.mh_heads": "“{token}”에 대한 헤드별 출력",
    "fig.mh_concat": "이어 붙이기: H = Concat({heads})",
    "fig.mh_column": "H의 각 수를 그 수가 곱해지는 W_O의 행 옆에 세웠다",
    "fig.mh_sum": "z_final = H·W_O: 각 수는 곱의 합이다 (W_O가 0인 행은 뺐다)",
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
    "fig.scaled_other": "× 배율 (배율을 곱한 점수)",
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
    "page.lead.trace": "{title}: 헤드 {heads}개의 어텐션 가중치, Query {tq}개 × Key {tk}개. 칸을 클릭하면 기록된 모든 "
                       "단계가 나온다. 행은 Query, 열은 Key이다.",
    "page.layer": "층",
    "page.head": "헤드",
    "page.part": "부분",
    "page.overview": "한눈에 보기: 모든 층 × 헤드 (클릭하면 열린다)",
    "page.overview_parts": "한눈에 보기: 모든 부분 (클릭하면 열린다)",
    "page.overview_heads": "한눈에 보기: 모든 헤드 (클릭하면 열린다)",
    "page.head_view": "헤드 보기",
    "page.matrix": "행렬 보기",
    "page.queries_col": "Query",
    "page.keys_col": "Key",
    "page.hint": "왼쪽의 Query 토큰을 클릭하면 그 Query를 고른다. 다른 Query 토큰을 더 클릭하면 여러 Query를 함께 골라 가중치의 합을 본다. 잠그면 마우스를 올려도 고른 것이 "
                 "유지된다. 칸이나 Key 토큰을 클릭하면 계산 과정이 나온다.",
    "page.lock": "선택 잠그기",
    "page.unlock": "선택 풀기",
    "page.clear": "지우기",
    "page.selected": "고른 Query",
    "page.sum": "고른 행의 합",
    "page.query": "Query",
    "page.key": "Key",
    "page.weight": "가중치",
    "page.score": "q·k (점수)",
    "page.scaled": "÷ √dₖ (스케일링한 점수)",
    "page.scaled_by": "× 배율 (스케일링한 점수)",
    "page.biased": "+ 편향",
    "page.modified": "score_mod (softmax에 들어가는 점수)",
    "page.rotated": "(RoPE로 회전한 뒤의 q와 k: 점수는 이것으로 계산한다)",
    "page.weights_only": " 토큰이 {limit}개를 넘는 텍스트는 가중치만 기록한다 (이 텍스트는 {tokens}개). 계산 과정의 모든 행을 보려면 더 짧은 텍스트를 쓰라.",
    "page.mask": "마스크",
    "page.allowed": "0 (볼 수 있음)",
    "page.blocked": "−∞ (마스크)",
    "page.masked": "마스크",
    "page.share": "softmax 가중치  e^s[i,j] / Σₖ e^s[i,k]",
    "page.value": "가중치가 곱해지는 Value 행",
    "page.out": "이 Query의 출력 행  z = Σⱼ w[i,j]·v[j]",
    "page.not_recorded": "기록되지 않음",
    "page.derivation": "한 칸의 계산 과정",
    "page.qrow": "Query 벡터 q",
    "page.krow": "Key 벡터 k",
    "page.storage": "숫자는 소수점 아래 {d}자리까지 보인다 (정수 × 10^−{d} 꼴로 저장하므로 보이는 값과 똑같다)",
    "page.no_data": "이 기록에는 그릴 어텐션 가중치가 없다.",
    "page.sum1": "한 행의 가중치 합은 1 (모든 Key가 마스크된 행은 모두 0)",
    "page.legend": "가중치 (어디서나 같은 눈금 0~1, 작은 가중치도 보이도록 색의 진하기는 가중치의 제곱근을 따른다). "
                   "빗금 친 회색: 마스크",
    "page.zoom_in": "확대",
    "page.zoom_out": "축소",
    "page.decode_fail": "이 브라우저는 내장된 숫자를 풀 수 없다 (DecompressionStream 필요: Chrome 80+, Firefox 113+, "
                        "Safari 16.4+).",
    "page.steps": "단계별 계산",
    "page.too_large": "이 기록에는 숫자가 {n}개 있어 단계별 설명은 이 페이지에서 뺐다. 더 짧은 입력으로 qkv explain을 실행하면 읽을 수 있다.",
    "page.sum_of": "Query {n}개의 가중치 합",
    "page.sum_legend": "Key의 색: Query {n}개의 가중치 합, 0부터 {n}까지 (한 행의 합은 1)",
    "page.part.rows": "행벡터 표기 (논문): self-attention 예제의 Q, K, V",
    "page.lead.flow": "{title}: 헤드들의 출력이 하나의 출력이 되는 과정, concat → W_O를 한 단계씩 본다 (이 예제는 각 헤드의 "
                      "출력 z에서 시작한다. 헤드 하나의 계산은 self-attention 예제에 있다).",
    "page.stepper": "한 단계씩 따라가기",
    "page.stepper_hint": "“다음” / “이전” 버튼(또는 → ← 키)을 누르면 따라가는 Query의 계산이 한 단계씩 나온다 (다른 Query를 따라가려면 왼쪽 토큰을 클릭하라). 주황 "
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
                       "Value는 인코더 문장(memory, {tk}행)에서 온다.",
    "page.st.memory": "memory (인코더 문장)",
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
    "page.st.dot.one": "Key {key}에 대해서만 펼쳐 보였다. 표에는 점수 {n}개가 모두 있다 (다른 Key를 보려면 칸을 클릭하라).",
    "page.st.scale": "÷ √d_k: 스케일링한 점수",
    "page.st.scale.other": "스케일링: 스케일링한 점수",
    "page.st.scale.text": "각 점수를 √d_k(= √{dk})로 나눈다. 그래야 q와 k의 차원이 커져도 점수가 함께 커지지 않는다.",
    "page.st.scale.given": "각 점수에 기록된 스케일을 곱한다 ({formula}).",
    "page.st.mask": "마스크: 이 Query가 볼 수 없는 Key",
    "page.st.mask.text": "마스크된 Key는 softmax 전에 −∞가 되므로 가중치가 정확히 0이다.",
    "page.st.softmax": "softmax: e^s ÷ Σ e^s",
    "page.st.softmax.text": "각 Key의 가중치는 e^(s − m)을 행 전체의 e^(s − m) 합으로 나눈 값이다 (m은 행에서 가장 큰 "
                            "점수다. e^가 넘치지 않도록 먼저 빼며, 나눗셈에서 약분되어 결과는 같다). 한 행의 가중치를 "
                            "모두 더하면 1이다.",
    "page.st.softmax.m": "행에서 가장 큰 점수",
    "page.st.softmax.norec": "이 기록에는 가중치만 있고, e^(s − m) 값과 그 합은 없다.",
    "page.st.weighted": "가중치 × Value 행",
    "page.st.weighted.text": "Key마다 Value 행 v에 그 Key의 가중치를 곱한다. 가중치가 큰 Key일수록 많이 기여한다.",
    "page.st.z": "z: 가중치를 곱한 Value 행의 합",
    "page.st.z.text": "가중치를 곱한 Value 행을 모두 더하면 {tok}의 출력 z가 된다.",
    "page.st.z.text.head": "가중치를 곱한 Value 행을 모두 더하면 {hn}에서 {tok}의 출력 z가 된다.",
    "page.st.first_cols": "(열 {m}개 중 처음 {n}개)",
    "page.st.some_keys": "(Key {m}개 중 {n}개만 보였다: 앞쪽 Key들과 지금 보는 Key)",
    "page.st.heads": "각 헤드의 출력 z",
    "page.st.heads.text": "헤드 {n}개가 {tok}에 대해 각자의 출력 z를 계산했다. 헤드마다 W_Q, W_K, W_V가 따로 있다.",
    "page.st.concat": "concat: 헤드 출력을 나란히 잇기",
    "page.st.concat.text": "헤드 {n}개의 출력을 한 행에 나란히 적는다 (계산은 없다).",
    "page.st.wo": "× W_O: 모든 헤드에서 하나의 출력으로",
    "page.st.wo.text": "이어 붙인 행에 W_O를 곱한다. W_O가 헤드들이 찾은 것을 섞는다.",
    "page.st.zero_terms": "(W_O가 0인 항은 뺐다)",
    "page.st.residual": "R + Y: 잔차 연결",
    "page.st.residual.text": "어텐션의 출력에 입력을 같은 자리끼리 다시 더한다.",
    "page.whatif": "값을 바꿔 보면",
    "page.whatif_serve": "값을 바꿔 보는 기능(점수, 스케일, √d_k, X나 W의 칸을 바꾸면 모든 숫자를 다시 계산한다)은 qkv serve에 있다. `qkv serve`를 실행하고 "
                         "예제를 열라. 이 오프라인 페이지는 기록된 숫자만 보여 준다.",
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
                              "않게 한다. X나 W의 칸을 바꾸려면 qkv serve를 쓰라.",
    "page.whatif_result": "lot의 가중치: {w}, 가중합한 대답: {out} → “{answer}”.",
    "page.whatif_note": "softmax는 차이만 본다. 질문 단어들의 점수가 lot보다 훨씬 낮으면 lot이 가중치를 거의 다 가져가고, 훨씬 높으면 lot의 가중치는 거의 0이 된다. 다른 "
                        "것을 바꾸려면 qkv serve를 쓰라.",
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
    "list.header": "예제 목록 (qkv example NAME):",
    # 나머지 명령 (qkv inspect, heads, masks, ring, embed, generate, translate): cli.*
    "cli.choices": "{value}: {choices} 중 하나가 아니다",
    "cli.choices.guess": "{value}: {choices} 중 하나가 아니다. 혹시 {guess}인가?",
    "cli.note": "qkv: 참고: {text}",
    "cli.wrote": "저장했다: {path}",
    "cli.ring.torch": "qkv ring에는 torch가 필요하다 (각 랭크가 torch.distributed로 실행된다): pip install 'qkv[torch]'",
    "cli.tokens": "토큰",
    "cli.truncated": "텍스트가 이 모델이 읽을 수 있는 길이보다 길다. 앞의 토큰 {n}개만 쓴다",
    "cli.inspect.title": "{model}: 층 {layer}, 헤드 {head} (층 {layers}개 × 헤드 {heads}개 중)",
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
    "cli.inspect.hint": "--layer L --head H로 헤드 하나를 고르면 그 가중치와 계산 과정이 나온다. --figure FILE.png는 모든 헤드를 그림으로 그리고, "
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
    "cli.no_command": "명령이 없다. 명령: {commands} ('qkv --help' 참고)",
    "cli.not_utf8.byte": "UTF-8 텍스트가 아니다 ({at}번째 글자가 바이트 {byte}이다)",
    "cli.not_utf8.char": "UTF-8 텍스트가 아니다 ({at}번째 글자가 {char}이다)",
    "cli.same_file": "{other}와 같은 파일이다",
    "cli.no_suffix": "(없음)",
    "cli.output.closed.stdout": "표준 출력이 닫혀 있어 아무것도 출력할 수 없다 (예: > FILE로 돌려 보내라)",
    "cli.output.closed.stderr": "표준 오류가 닫혀 있어 아무것도 출력할 수 없다 (예: > FILE로 돌려 보내라)",
    "cli.output.encoding.stdout": "표준 출력의 인코딩 {encoding}으로는 {text}를 쓸 수 없다. PYTHONIOENCODING=utf-8로 "
                                  "설정하라",
    "cli.output.encoding.stderr": "표준 오류의 인코딩 {encoding}으로는 {text}를 쓸 수 없다. PYTHONIOENCODING=utf-8로 "
                                  "설정하라",
    "cli.output.failed.stdout": "표준 출력에 쓸 수 없다 ({reason})",
    "cli.output.failed.stderr": "표준 오류에 쓸 수 없다 ({reason})",
    "error.int": "{value}: 정수여야 한다",
    "error.int.range": "{value}: {low}부터 {high}까지의 정수여야 한다",
    "error.int.low": "{value}: {low} 이상의 정수여야 한다",
    "error.int.high": "{value}: {high} 이하의 정수여야 한다",
    "error.decimals": "{value}: 소수 자릿수는 정수여야 한다",
    "error.decimals.range": "{value}: 소수 자릿수는 {low}부터 {high}까지의 정수여야 한다",
    "error.decimals.low": "{value}: 소수 자릿수는 {low} 이상의 정수여야 한다",
    "error.decimals.high": "{value}: 소수 자릿수는 {high} 이하의 정수여야 한다",
    # argparse's own messages (cli.argparse_words); the %-placeholders are argparse's
    "argparse.usage": "사용법: ",
    "argparse.positionals": "위치 인수",
    "argparse.options": "옵션",
    "argparse.help": "이 도움말을 보이고 끝낸다",
    "argparse.argument": "%(argument_name)s: %(message)s",
    "argparse.required": "다음 인수가 빠졌다: %s",
    "argparse.one_required": "다음 인수 중 하나가 필요하다: %s",
    "argparse.not_allowed": "%s와 함께 쓸 수 없다",
    "argparse.ignored": "이 옵션은 값을 받지 않는다: %r",
    "argparse.one": "값이 하나 필요하다",
    "argparse.at_most_one": "값은 많아야 하나이다",
    "argparse.at_least_one": "값이 하나 이상 필요하다",
    "argparse.n.one": "값이 %s개 필요하다",
    "argparse.n.many": "값이 %s개 필요하다",
    "argparse.ambiguous": "옵션 %(option)s가 모호하다. 후보: %(matches)s",
    "argparse.invalid": "%(value)r: 올바른 값이 아니다",
    "argparse.unrecognized": "알 수 없는 인수: %s",
    "argparse.unexpected": "예상하지 못한 옵션: %s",
    "argparse.open": "'%(filename)s'을(를) 열 수 없다: %(error)s",
    # qkv doctor and qkv --version
    "doctor.head": "qkv {version} (Python {python}, NumPy {numpy})",
    "doctor.fused": "C 확장 qkv.kernels._fused: 빌드되어 있다 — float32 softmax 단계를 C에서 한 번에 계산한다",
    "doctor.width": "벡터 폭: {name} (명령 하나에 float {width}개, 이 CPU에 맞춰 골랐다)",
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
    "doctor.backward": "C 확장 qkv.kernels._backward: 빌드되어 있다 — torch 텐서(CPU, float32)를 C 순전파와 역전파로 "
                       "학습한다 (경로 torch_flash)",
    "doctor.no_backward": "C 역전파: 쓸 수 없다 (qkv.kernels._backward가 빌드되지 않았거나 BLAS sgemm이 없다) — torch "
                          "텐서는 SDPA나 기본 경로로 계산한다 (숫자는 같다)",
    "doctor.torch": "torch: {version} — qkv.torch, qkv ring, 참조 검증을 쓸 수 있다",
    "doctor.no_torch": "torch: 설치되어 있지 않다 — qkv.torch와 qkv ring에 필요하다 (pip install torch 또는 make test)",
    "doctor.summary.built": "C 커널 빌드됨: {width}, {sgemm}, {backward}",
    "doctor.summary.sgemm": "BLAS sgemm 있음",
    "doctor.summary.no_sgemm": "BLAS sgemm 없음",
    "doctor.summary.backward": "C 역전파 있음",
    "doctor.summary.no_backward": "C 역전파 없음",
    "doctor.summary.not_built": "C 커널 빌드 안 됨: NumPy 경로 ('qkv doctor' 참고)",
    "doctor.summary.torch": "torch {version}",
    "doctor.summary.no_torch": "torch 없음",
    "doctor.lanes": "레인 {n}개",
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
    "cli.heads.rollout": "어텐션 롤아웃 (잔차 연결 포함), 층 {layers}개를 모두 지난 뒤 “{token}” 자리가 각 토큰에서 "
                         "가져오는 몫: {shares}",
    "cli.heads.figure": "{model}: 토큰 {tokens}개",
    "cli.heads.probe_long": "{length}: 검사용 시퀀스(토큰 2 × {length}개)가 모델의 위치 {positions}개보다 길다",
    "cli.heads.probe_vocab": "{length}: 이 모델의 일반 토큰은 {ordinary}개뿐이다",
    "cli.masks.header": "{name}: {formula}   (T = {t}, 쌍 {total}개 중 {allowed}개 허용)",
    "cli.masks.blocks": "  {b}×{b} 블록: 건너뜀(S) {skipped}개, 전체(F) {full}개, 부분(P) {partial}개. 커널은 점수 "
                        "행렬의 {share}를 계산한다",
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
    "cli.generate.positive": "{value}: 양수여야 한다",
    "cli.generate.probability": "{value}: (0, 1] 범위의 확률이어야 한다",
    "cli.generate.needs_sample": "--temperature, --top-k, --top-p, --seed는 샘플링 방법을 정한다. --sample을 함께 지정하라 (기본은 탐욕 "
                                 "디코딩이다)",
    "cli.generate.not_causal": "{model}: {kind}이다. 인과 언어 모델이 아니다. generate에는 인과 언어 모델이 필요하다 "
                               "(예: gpt2, llama, qwen2)",
    "cli.embed.not_encoder": "{model}: 인과 언어 모델({kind})이므로 문장 임베딩을 만들 수 없다. embed에는 문장 "
                             "인코더(model_type bert, 예: minilm)가 필요하다",
    "cli.translate.figure_one": "그림은 한 언어만 보인다: --to ko 또는 --to ja를 지정하라",
    "cli.translate.derive_one": "계산 과정은 한 언어만 따라간다: --to ko 또는 --to ja를 지정하라",
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
    "serve.error.no_text": "없다 (모델에 넣을 문장이 필요하다)",
    "serve.error.chars": "{count}자이다. 이 서버는 최대 {limit}자까지 받는다",
    "serve.error.tokens": "토큰 {count}개이다. '{model}' 모델은 특수 토큰을 포함해 최대 {limit}개까지 받는다. 문장을 줄이라",
    "serve.error.busy": "동시에 들어온 요청이 너무 많다 ({count}개 초과). 잠시 뒤에 다시 시도하라",
    "error.translator.empty": "번역할 문장이 비어 있다. 번역기가 아는 영어 단어로 입력하라 (예: I love you)",
    "error.translator.unknown_word": "번역기가 모르는 단어가 있다: '{word}'. 번역기가 아는 영어 단어: {known}",
    "error.translator.too_long": "단어 {count}개는 번역기가 받는 최대 {limit}개를 넘는다",
    "error.translator.non_finite": "번역기의 출력 점수가 유한하지 않다 (NaN 또는 ±inf). 이 문장에서 계산 값이 "
                                   "매개변수 때문에 float32 범위를 넘으므로 이 체크포인트는 쓸 수 없다",
    "error.train.diverged": "학습이 {steps}단계 중 {step}단계에서 발산했다 (손실 {loss}). 손실이나 매개변수가 더 이상 "
                            "유한하지 않아 파일에는 아무것도 쓰지 않았다. 학습률을 낮추라 (이번 학습률: {rate})",
    "error.translator.grammar.start": "“{part}”: 번역기의 문법 밖이다. 문장은 주어로 시작한다 ({expected})",
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
    "serve.error.layer": "{layer}: 번역기의 디코더 층 번호는 0 … {last}이다",
    "serve.error.word": "{word}: 번역문의 단어 번호는 1 … {last}이다 (1부터 센다)",
    "serve.error.missing_number": "없다 (0부터 세는 정수가 필요하다)",
    "serve.error.whole": "{value}: 정수가 아니다 (최대 18자리)",
    "serve.error.model": "불러오지 않은 모델이다: {name}. 불러온 모델: {loaded}",
    "serve.error.no_translator": "이 서버에는 번역기를 불러오지 않았다",
    "serve.error.upload_size": "{size}바이트이다. 올리는 파일은 최대 {limit}바이트까지 받는다",
    "serve.error.cross_origin": "거부했다. 이 요청은 다른 사이트({origin})에서 왔다. 이 서버는 자기 페이지({own})에서 "
                                "보낸 업로드와 값 바꿔 보기 요청만 받는다",
    "serve.error.fetch_site": "거부했다. 브라우저가 알린 이 요청의 출처는 {site}이다 (Sec-Fetch-Site). 이 서버는 자기 "
                              "페이지에서 보낸 업로드와 값 바꿔 보기 요청만 받는다",
    "serve.error.content_type": "거부했다. Content-Type이 {got}이다. 이 경로는 {wanted}만 받는다",
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
    "whatif.matrix": "이 예제에서 고칠 수 없는 행렬이다. 고칠 수 있는 행렬: {fields}",
    "whatif.no_matrices": "이 예제에는 고칠 행렬이 없다. 점수를 고치라",
    "serve.whatif.too_many": "고친 칸이 너무 많다 (최대 {limit}개)",
    "serve.whatif.cell": "[행, 열, 값]이어야 한다 (받은 값: {value})",
    "whatif.index": "{row}행 {column}열은 {matrix}({rows} × {columns}, 행과 열은 0부터 센다)의 밖이다",
    "whatif.scores_only": "주어진 점수를 고칠 수 있는 예제는 조모임뿐이다",
    "whatif.scene": "없는 모임이다: '{scene}'. 모임: {scenes}",
    "serve.whatif.score_cell": "[위치, 점수]여야 한다 (받은 값: {value})",
    "whatif.score_index": "위치 {index}: 이 모임의 점수 {count}개 밖이다 (0부터 센다)",
    "serve.whatif.multi_head_query": "멀티 헤드 예제는 '{token}'만 따라간다 (헤드 2와 3의 출력은 그 토큰에 대해서만 "
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
    "serve.ui.run": "어텐션 보기",
    "serve.ui.emptyText": "먼저 문장을 입력하고 (예: The cat sat on the mat.) ‘어텐션 보기’를 누르라.",
    "serve.ui.textPlaceholder": "예: The cat sat on the mat.",
    "serve.ui.overview": "모든 층 × 헤드",
    "serve.ui.tokenCount": "토큰 {n}개",
    "serve.ui.overviewHint": "네모 하나가 헤드 하나이다. 행은 Query, 열은 Key이다. 누르면 그 헤드가 열린다.",
    "serve.ui.layer": "층",
    "serve.ui.head": "헤드",
    "serve.ui.layerHead": "{layer}번 층, {head}번 헤드",
    "serve.ui.layerN": "{layer}번 층",
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
    "serve.ui.crossOf": "cross-attention, {layer}번 층, {head}번 헤드",
    "serve.ui.crossRows": "행 t는 번역문의 t번째 단어이다 (qkv translate의 그림과 같다). 이 행의 Query는 t번째 단어 "
                          "바로 앞 토큰(첫 단어라면 언어 토큰 {lang})에서의 디코더 상태이다. 이 상태가 영어 단어들을 "
                          "읽고 t번째 단어를 예측한다.",
    "serve.ui.crossCell": "한 칸의 계산 과정: {t}번째 단어 “{word}” (Query: “{prev}”에서의 상태) → 영어 단어 {j} “{k}”",
    "serve.ui.crossHover": "{t}번째 단어 “{word}” → “{k}”: {w}",
    "serve.ui.whatIf": "만약 …라면? 입력을 바꾸면 아래의 모든 숫자를 qkv가 다시 계산한다",
    "serve.ui.factor": "점수 배율 {f}: softmax 전에 모든 점수에 이 값을 곱한다 (온도 {t})",
    "serve.ui.sqrtDk": "점수를 √d_k(= {root})로 나누기",
    "serve.ui.reset": "글의 숫자로 되돌리기",
    "serve.ui.editInputs": "입력 고치기 (숫자를 누르고 새 값을 입력한 뒤 Enter)",
    "serve.ui.editHeadOne": "헤드 1의 입력(Self-attention 예제)과 W_O 고치기",
    "serve.ui.questionScore": "{meeting}에서 질문 단어({tokens})의 점수: {s}",
    "serve.ui.editScores": "모임마다 점수 고치기",
    "serve.ui.lotWeight": "{meeting}에서 lot의 가중치: {w} (글의 숫자로는 {was})",
    "serve.ui.followed": "따라가는 Query “{q}”의 가중치",
    "serve.ui.asPost": "글의 숫자",
    "serve.ui.now": "지금",
    "serve.ui.changed": "글에서 바꾼 것: {what}",
    "serve.ui.unchanged": "글의 숫자 그대로",
    "serve.ui.meeting": "{meeting}: “{tokens}”",
    "serve.ui.meeting.1": "첫 번째 조모임",
    "serve.ui.meeting.2": "두 번째 조모임",
    "serve.ui.meetingN": "{n}번째 조모임",
    "serve.ui.partAll": "모든 헤드",
    "serve.ui.partRows": "행벡터 표기 (논문): softmax(QKᵀ/√d_k)·V",
    "serve.ui.partColumns": "열벡터 표기 (3Blue1Brown): 열마다 softmax",
    "serve.ui.compareOut": "“{q}”의 출력 Concat(헤드)·W_O",
    "serve.ui.multiHeadNote": "입력에서 계산되는 헤드는 헤드 1(Self-attention 예제)뿐이다. 헤드 2와 3은 글에 주어진 "
                              "출력이므로, 바꾼 값은 헤드 1과 W_O를 거쳐서만 결과에 닿는다.",
}

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
                     "angle position·θ^(−2i/d) (steps rope_angles, q_rotated, k_rotated)",
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
        "softcap": "scores soft-capped before the mask: {c}·tanh(s / {c}) (step modified_scores)",
        "scale": "scores scaled by {s} instead of 1/√d_k",
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
                     "위치·θ^(−2i/d)만큼 돌린다 (단계 rope_angles, q_rotated, k_rotated)",
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
        "softcap": "마스크 전에 점수를 부드럽게 자른다: {c}·tanh(s / {c}) (단계 modified_scores)",
        "scale": "점수에 곱하는 배율이 1/√d_k가 아니라 {s}이다",
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


def text(lang: str, key: str, **values) -> str:
    """The sentence ``key`` in ``lang`` with its placeholders filled (``{n:token|tokens}``: a count and
    its noun, singular for 1)."""
    check_lang(lang)
    return _COUNTS.format(LANGS[lang][key], **values)


def placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}
