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
    "seed": "Worked example of seed {seed}; every number below is computed by qkv from the inputs.",
    "byhand.intro": "By hand: every intermediate is rounded to the digits shown and the next step is "
                    "computed from the rounded numbers, as with a calculator.",
    "byhand.digits": "Each number is rounded to {digits} decimals.",
    "byhand.seed_digits": "Each number is rounded to the precision the seed prints for that step.",
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
    "shown.rows": "{shown} of {total} rows shown",
    "shown.columns": "{shown} of {total} columns shown",
    "shown.values": "{shown} of {total} values shown",
    # inputs
    "h.inputs": "Inputs",
    "inputs.x": "X has one row per token: {t} tokens × {d} numbers.",
    "cross.decoder": "The decoder's current representation: {n} token(s) × {d} numbers. The query comes from here.",
    "cross.encoder": "The encoder's outputs for the source sentence: {n} tokens × {d} numbers. The keys and "
                     "values come from here.",
    "inputs.weights": "The projection matrices (in a real model they are learned; here they are given):",
    "inputs.weights.heads": "The projection matrices. Their columns are grouped by head: {h} heads, each with "
                            "{dk} query/key columns and {dv} value columns (colours mark the heads).",
    # projection
    "h.projection": "Step 1 — Q, K, V: the same input, different weights",
    "projection.rule": "Q = X·W_Q, K = X·W_K, V = X·W_V: each token's row is multiplied by the same matrices. "
                       "Q is what the token is looking for, K describes what it contains, V is the information "
                       "it gives when attended to.",
    "projection.rule.cross": "Q = X_dec·W_Q comes from the decoder; K = M_enc·W_K and V = M_enc·W_V come from "
                             "the encoder's outputs.",
    "projection.example": "For {token}, its row times W_Q:",
    "projection.table": "Q, K and V of every token:",
    "cross.kv_from_encoder": "Keys and values are computed from the encoder's outputs, one row per source token:",
    "col.token": "token",
    "col.encoder_token": "encoder token",
    "split": "Splitting into heads is a reshape, not a multiplication: Q ({t} × {d}) is read as {t} × {h} × {dh} "
             "(stored as {shape}, heads first). The first {dh} columns (0 to {dh} − 1) are head 0, the next {dh} head 1, "
             "and so on.",
    # core attention
    "h.head": "Head {h}",
    "h.scores": "Step 2 — scores: the query against every key",
    "head.explain": "Head {h} uses columns {first}–{last} of Q and K (and its own columns of V).",
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
    "scale.explain": "Q and K have d_k = {dk} numbers each, so the scores are divided by √d_k = √{dk}:",
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
    "wo.explain.model": "This head's {rows} rows of the layer's W_O ({rows} × {cols}) turn its output Z back "
                        "into model width; the layer adds the shares of all its heads (and a bias).",
    "wo.explain.model.nobias": "This head's {rows} rows of the layer's W_O ({rows} × {cols}) turn its output Z "
                               "back into model width; the layer adds the shares of all its heads (no bias).",
    "y.explain.model": "Y = Z·W_O ({t} × {d}):",
    "y.explain": "Y = H·W_O ({t} × {d}):",
    "residual.explain": "The residual connection adds Y to the layer's input R (here R = X): R + Y goes on to "
                        "the next stage.",
    "h.heads_check": "Each head on its own gives the same numbers",
    "heads_check.explain": "Running each of the {h} heads alone, with only its own columns of W_Q, W_K, W_V "
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
    "mh.z1": "z⁽⁰⁾ is the output for {token} computed in the {example} example above (not typed in).",
    "mh.given": "The other {n} heads would run the same procedure with their own projection matrices; their "
                "outputs are given here.",
    "mh.concat": "The {h} outputs are concatenated into one vector of {width} numbers; the width grows because "
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
    "generic.intro": "The trace records {n} steps; each is shown with its formula and values.",
    "generic.large": "Showing the first {rows} × {cols} entries.",
    # by hand
    "h.drift": "By hand versus exact",
    "drift.explain": "How far the rounded, step-by-step calculation drifts from the exact one (the followed "
                     "query's row; the last column is the largest difference over the whole step):",
    "col.by_hand": "by hand",
    "col.exact": "exact",
    "col.drift": "largest |difference|",
    # notes
    "note.seed001.weight_sum": "Note: seed 001 prints the weight of {token} one unit higher in the last decimal "
                               "(its four printed weights then add up to exactly 1). The exact value is {value}, "
                               "printed here rounded.",
    "note.seed001.rounded_heads": "Note: seed 001 multiplies the head outputs as it prints them, z⁽⁰⁾ rounded to "
                                  "three decimals, so its final vector differs from the exact one in the fourth "
                                  "decimal. The exact result is {value}; the by-hand mode (--by-hand) rounds the "
                                  "same way and reproduces the seed's numbers.",
    "note.seed002.underflow": "Note: the weight of {token} here is e^(100 − 1000) divided by the sum: a number with "
                              "hundreds of zeros after the decimal point, below the smallest float64, so the "
                              "computation gives exactly {value}. The voice is not just weak, it is inaudible.",
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
    "fig.grid_note": "{tq} queries × {tk} keys; rows: layers, columns: heads (counted from 0)",
    "fig.pooled": "a pixel shows the largest weight of the cells it covers",
    "fig.decoder": "decoder (queries)",
    "fig.encoder": "encoder (keys and values)",
    "fig.cross_lines": "line width = weight",
    "fig.residual": "R + Y (residual)",
    "fig.multi_head": "heads side by side, concatenated, × W_O",
    "fig.no_cjk_font": "qkv: no CJK font found, so Korean and Japanese text is drawn as empty boxes; "
                       "install koreanize-matplotlib (pip) or fonts-noto-cjk (apt)",
    # the interactive page
    "page.lead.model": "{title}: attention of {layers} layer(s) × {heads} head(s) on {tokens} tokens. Rows are "
                       "queries (the token that looks), columns are keys (the tokens it looks at).",
    "page.lead.trace": "{title}: attention weights of {heads} head(s), {tq} queries × {tk} keys, with every "
                       "recorded step of the cell you click. Rows are queries, columns are keys.",
    "page.layer": "layer",
    "page.head": "head",
    "page.part": "part",
    "page.overview": "Overview: every layer × head (click one to open it)",
    "page.head_view": "Head view",
    "page.matrix": "Matrix view",
    "page.queries_col": "queries",
    "page.keys_col": "keys",
    "page.hint": "Click query tokens (left) to select them (their weights are summed); lock keeps the selection "
                 "while you hover. Click a cell or a key token for its derivation.",
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
    "page.biased": "+ bias",
    "page.modified": "score_mod (score before the softmax)",
    "page.rotated": "(after RoPE: the q and k the scores use)",
    "page.weights_only": " Only the weights are recorded for texts over {limit} tokens (this one has {tokens}); "
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
    "page.too_large": "The trace holds {n} numbers; the step-by-step text is left out of this page. Run qkv explain "
                      "on a shorter input to read it.",
    # command line
    "list.header": "Worked examples (qkv example NAME):",
    # the other commands (qkv inspect, heads, masks, ring, embed, generate, translate): cli.*
    "cli.choices": "{value}: expected one of {choices}",
    "cli.note": "qkv: note: {text}",
    "cli.wrote": "wrote {path}",
    "cli.tokens": "tokens",
    "cli.truncated": "the text is longer than this model reads; only its first {n} tokens are used",
    "cli.inspect.title": "{model}: layer {layer}, head {head} of {layers} layers × {heads} heads",
    "cli.inspect.kv": " (key/value head {g}, shared by query heads {heads})",
    "cli.inspect.weights": "weights of head {head} (rows: queries, columns: keys; each row sums to 1)",
    "cli.inspect.first_tokens": "(first {shown} of {total} tokens; --format html shows all)",
    "cli.inspect.top": "top {n} keys for query {q} “{token}”",
    "cli.inspect.col.key": "key",
    "cli.inspect.col.token": "token",
    "cli.inspect.col.weight": "weight",
    "cli.inspect.grid.title": "{model}: attention of {layers} layer(s) × {heads} head(s) on {tokens} tokens",
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
    "cli.inspect.digits": "{value}: expected a whole number of decimals from 0 to 12",
    "cli.inspect.top_keys": "{value}: expected a positive number of keys",
    "cli.no_directory": "directory {path} does not exist",
    "cli.figure_type": "unknown figure type {suffix}; use .png, .svg or .pdf",
    "cli.inspect.range": "{value} is out of range: the model has {count} ({what} 0 … {last}, or all)",
    "cli.inspect.index": "{value} is not an index: the model has {count} ({what} 0 … {last}, or all)",
    "cli.inspect.what.layer": "layers",
    "cli.inspect.what.head": "heads",
    "cli.heads.title": "{model}: {layers} layers × {heads} heads on {tokens} tokens (layers and heads counted from 0)",
    "cli.heads.legend": "entropy in nats (0 = one key takes all, ln T = uniform); first token, previous token, self: "
                        "mean weight on that key; duplicate token, induction: share of attention on the pattern, on a "
                        "random sequence of {probe} tokens repeated twice (seed {seed})",
    "cli.heads.col.layer": "layer",
    "cli.heads.col.head": "head",
    "cli.heads.col.entropy": "entropy",
    "cli.heads.col.first_token": "first token",
    "cli.heads.col.previous_token": "previous token",
    "cli.heads.col.self": "self",
    "cli.heads.col.duplicate_token": "duplicate token",
    "cli.heads.col.induction": "induction",
    "cli.heads.rollout": "rollout (residual included): after all {layers} layers “{token}” draws on {shares}",
    "cli.heads.figure": "{model}: {tokens} tokens",
    "cli.heads.probe_long": "{length}: the probe (2 × {length} tokens) is longer than the model's {positions} positions",
    "cli.heads.probe_vocab": "{length}: the model has only {ordinary} ordinary tokens",
    "cli.masks.header": "{name}: {formula}   (T = {t}, {allowed} of {total} pairs allowed)",
    "cli.masks.blocks": "  blocks of {b}×{b}: {skipped} skipped, {full} full, {partial} partial; the kernel computes "
                        "{share} of the score matrix",
    "cli.masks.and": "and",
    "cli.masks.or": "or",
    "cli.masks.unknown": "{value} is not in the catalogue; choose one of: {names}",
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
    "cli.ring.header": "P={world} ranks, T={seq} tokens ({per_rank} per rank), B={batch}, H={heads}, G={kv}, D={dim}, "
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
    "cli.ring.strategies": "unknown {names}; choose from {choices}",
    "cli.ring.empty": "empty list",
    "cli.ring.seq": "T={seq} is not a multiple of {need} (the zigzag layout cuts the sequence into 2·P equal chunks, "
                    "P={world}); try --seq {fix}",
    "cli.ring.fail_rank": "must be a rank in 0 … {last}, got {value}",
    "cli.embed.title": "{model}: {n} text(s) → embeddings of shape {shape} ({pooling}; max {max} tokens)",
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
    "cli.embed.col.values": "first {n} values",
    "cli.embed.cosine": "cosine similarity (1 = same direction):",
    "cli.embed.truncated": "{n} text(s) ({which}) are longer than this model reads; only their first {max} tokens are "
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
    "cli.generate.not_causal": "{model} is a {kind}, not a causal language model (generate runs gpt2, llama, mistral, "
                               "qwen2)",
    "cli.translate.to": "{value}: choose ko, ja or both",
    "cli.translate.figure_one": "a figure shows one language: add --to ko or --to ja",
    "cli.translate.derive_one": "a derivation follows one language: add --to ko or --to ja",
    "cli.translate.digits": "{value}: expected 0 … 8",
    "cli.translate.figure_format": "unknown figure format; use one of {choices}",
    "cli.translate.lang.ko": "ko",
    "cli.translate.lang.ja": "ja",
}

KO: dict[str, str] = {
    # titles
    "title.self-attention": "Self-attention: love는 어떻게 문맥 표현을 만드는가",
    "title.cross-attention": "Cross-attention: 디코더 토큰 私は가 인코더에 질의하다",
    "title.multi-head": "Multi-head attention: love에 대한 세 헤드의 출력을 결합하고 W_O로 투영하기",
    "title.projection": "Q·K·V projection과 멀티 헤드: T = 3, d = 8, h = 2, 단계마다의 형태",
    "title.group-meeting": "어텐션이 조모임이라면: 찰떡궁합점수, 소프트맥스, 그리고 두 가지 표기법",
    "title.user": "단계별로 따라가는 어텐션",
    "seed": "시드 {seed}의 예제이다. 아래의 모든 숫자는 입력으로부터 qkv가 직접 계산한 값이다.",
    "byhand.intro": "손 계산 모드: 계산기를 든 사람처럼, 모든 중간 결과를 화면에 보이는 자릿수로 반올림하고 "
                    "다음 단계는 반올림된 숫자로 계산한다.",
    "byhand.digits": "모든 숫자를 소수점 아래 {digits}자리로 반올림한다.",
    "byhand.seed_digits": "각 단계의 숫자를 시드가 적은 자릿수로 반올림한다.",
    # intros
    "intro.self-attention": "Self-attention에서는 각 토큰이 같은 문장 안의 모든 토큰(자기 자신 포함)을 참조하고, "
                            "자신의 표현을 갱신하는 데 어떤 토큰이 가장 유용한지를 판단한다. 여기서는 "
                            "“I love machine learning”의 토큰 love를 따라간다.",
    "intro.cross-attention": "인코더-디코더형 번역 모델에서 디코더가 이미 私は를 생성했고, 다음 토큰을 고르려면 "
                             "영어 문장의 정보가 필요하다. 이것을 해 주는 것이 cross-attention이다. Query는 "
                             "디코더에서, Key와 Value는 인코더에서 온다.",
    "intro.multi-head": "Multi-head attention은 여러 attention 계산을 병렬로 실행하고 그 결과를 결합한다. 각 헤드는 "
                        "서로 다른 투영 행렬을 사용하므로 love에 대해 각자 고유한 문맥 표현을 만든다. 이 출력들을 "
                        "이어 붙인 뒤 W_O로 투영한다.",
    "intro.projection": "Attention은 Q·K·V projection → Core Attention → 출력 projection의 세 단계로 나누어 볼 수 "
                        "있다. 두 projection은 각 토큰의 벡터에 독립적으로 적용되고, 토큰 사이의 정보를 결합하는 "
                        "것은 Core Attention뿐이다. 여기서는 토큰 수 T = 3, 모델 차원 d = 8, head 수 h = 2이므로 "
                        "head 하나의 차원은 d/h = 4이다.",
    "intro.group-meeting": "컨텍스트 윈도우의 토큰들이 다음 단어를 정하기 위해 조모임을 한다고 생각해 보자. "
                           "쿼리 Q는 토론의 질문, 키 K는 각 토큰이 줄 수 있는 대답의 결, 밸류 V는 실제 대답이다. "
                           "질문과 대답의 내적 Q·K가 찰떡궁합점수이고, 소프트맥스는 이 절대적인 점수를 상대적인 "
                           "가중치로 바꾼다.",
    "intro.user.self-attention": "Self-attention: 각 토큰이 같은 시퀀스의 모든 토큰을 참조한다.",
    "intro.user.cross-attention": "Cross-attention: Query는 x에서, Key와 Value는 memory에서 온다.",
    "intro.user.projection": "Multi-head attention: Q·K·V projection, head별 Core Attention, 출력 projection.",
    "intro.model.head": "실제 모델({model})의 head 하나를 입력 텍스트에 적용한다: 층 {layer}, head {head} "
                        "(전체 {n_heads}개 중). {x} W_Q, W_K, W_V는 층의 투영 행렬 가운데 이 head가 학습한 "
                        "열들이다 ({bias}). Y는 층의 attention 출력 가운데 이 head의 몫이다.",
    "intro.model.x": "X는 그 층의 입력이다.",
    "intro.model.x.normed": "X는 블록의 정규화를 거친 층의 입력 N₁(x)이다: pre-norm 블록이므로 head는 정규화한 "
                            "입력을 읽는다.",
    "intro.model.bias": "각각 bias b가 더해진다",
    "intro.model.nobias": "bias는 없다",
    "inputs.weights.model": "이 head의 투영 행렬 (모델이 학습한 값, {d} × {dk}):",
    "shown.rows": "행 {total}개 중 {shown}개 표시",
    "shown.columns": "열 {total}개 중 {shown}개 표시",
    "shown.values": "성분 {total}개 중 {shown}개 표시",
    # inputs
    "h.inputs": "입력",
    "inputs.x": "X의 한 행은 토큰 하나의 벡터이다: 토큰 {t}개 × 성분 {d}개.",
    "cross.decoder": "디코더의 현재 표현: 토큰 {n}개 × 성분 {d}개. Query는 여기서 만들어진다.",
    "cross.encoder": "소스 문장에 대한 인코더의 출력: 토큰 {n}개 × 성분 {d}개. Key와 Value는 여기서 만들어진다.",
    "inputs.weights": "투영 행렬 (실제로는 학습으로 얻어지지만, 여기서는 주어진 값을 쓴다):",
    "inputs.weights.heads": "투영 행렬. 열은 head별로 묶여 있다: head {h}개, 각각 Query/Key 열 {dk}개와 Value 열 "
                            "{dv}개 (색으로 head를 구분한다).",
    # projection
    "h.projection": "1단계 — Q, K, V: 같은 입력, 서로 다른 가중치",
    "projection.rule": "Q = X·W_Q, K = X·W_K, V = X·W_V: 모든 토큰의 행에 같은 행렬을 곱한다. Q는 현재 토큰이 "
                       "찾고 있는 것, K는 그 토큰이 가진 내용을 나타내는 기술자, V는 주의를 받았을 때 제공하는 "
                       "정보이다.",
    "projection.rule.cross": "Q = X_dec·W_Q는 디코더에서 오고, K = M_enc·W_K와 V = M_enc·W_V는 인코더의 출력에서 "
                             "온다.",
    "projection.example": "{token}의 경우, 그 행에 W_Q를 곱하면:",
    "projection.table": "모든 토큰의 Q, K, V:",
    "cross.kv_from_encoder": "Key와 Value는 인코더의 출력으로 계산한다. 소스 토큰 하나에 한 행씩:",
    "col.token": "토큰",
    "col.encoder_token": "인코더 토큰",
    "split": "head로 나누는 것은 곱셈이 아니라 reshape이다: Q ({t} × {d})를 {t} × {h} × {dh}로 본다 "
             "(head를 앞에 두어 {shape}로 저장). 처음 {dh}개 열(0 ~ {dh} − 1번)이 head 0, 다음 {dh}개 열이 head 1, 이런 식이다.",
    # core attention
    "h.head": "Head {h}",
    "h.scores": "2단계 — 점수: Query와 모든 Key의 비교",
    "head.explain": "Head {h}에서는 Q와 K의 {first}–{last}번째 열(그리고 V의 자기 열)만 사용한다.",
    "scores.explain": "{token}의 Query를 각 Key와 내적한다 (가공되지 않은 attention score):",
    "scores.explain.cross": "디코더 토큰 {token}의 Query를 인코더의 각 Key와 내적한다 (가공되지 않은 attention score):",
    "scores.explain.rope": "회전한 {token}의 Query를 회전한 각 Key와 내적한다 (가공되지 않은 attention score):",
    "h.rope": "1b단계 — RoPE: 위치만큼 q와 k를 회전",
    "rope.explain": "이 모델은 위치를 회전으로 나타낸다 (RoPE, θ = {theta}): 투영한 뒤 q와 k의 열 쌍 (i, i + {half})을 "
                    "각도 위치·θ^(−2i/{dk})만큼 돌린다. 길이는 그대로이고, 아래 점수는 회전한 q와 k로 계산하므로 "
                    "q_m·k_n은 거리 m − n에만 달려 있다.",
    "rope.query": "Query {token}의 위치는 {pos}이다. 회전 전과 후의 Q 행:",
    "rope.keys": "회전한 뒤의 K 행 (각 Key는 자기 위치만큼 돈다). 점수는 이 Key들로 계산한다:",
    "scores.matrix": "모든 Query와 모든 Key를 한꺼번에 비교한 Q·Kᵀ ({t} × {tk}). 따라가는 Query의 행을 표시했다:",
    "scale.explain": "Q와 K는 성분이 d_k = {dk}개인 벡터이므로, 점수를 √d_k = √{dk}로 나누어 스케일링한다:",
    "scale.given": "점수를 스케일링한다: {formula}.",
    "bias.explain": "스케일링한 점수에 더하는 bias:",
    "modified.explain": "점수 함수(score_mod)가 소프트맥스 전에 각 점수를 바꾼다: {formula}. "
                        "ALiBi는 거리 kv − q에 비례하는 벌점을 더하고, 소프트캡은 점수를 (−cap, cap) 안으로 눌러 담는다:",
    "mask.explain": "마스크는 Query가 보면 안 되는 Key를 막는다 (소프트맥스 전에 −∞를 더하므로 가중치가 0이 된다). "
                    "{token}에서 막힌 Key: {blocked}.",
    "none": "없음",
    "masked": "마스크",
    "softmax.explain": "소프트맥스는 스케일링한 점수를 합이 1인 0과 1 사이의 가중치로 정규화한다 (각 점수의 exp를 "
                       "exp들의 합으로 나눈다. 마스크 때문에 볼 수 있는 키가 하나도 없는 Query는 모든 가중치가 0이다):",
    "col.key": "Key",
    "col.score": "스케일링한 점수",
    "col.score.final": "소프트맥스에 들어가는 점수",
    "col.weight": "가중치",
    "weights.top": "{token}의 Query에서 가장 큰 가중치를 받는 토큰은 {top}. 따라서 {top}의 Value가 {token}의 "
                   "업데이트된 표현에 가장 크게 기여한다.",
    "out.explain": "{token}의 출력은 Value 벡터들의 가중합이다:",
    "out.explain.cross": "{token}의 출력은 인코더 Value 벡터들의 가중합으로, 소스 문장의 정보를 가중치에 따라 섞은 "
                         "것이다. 이것은 다음 단어 그 자체가 아니라, 디코더가 다음 토큰을 예측하는 데 쓰는 "
                         "중간 벡터이다.",
    "weights.matrix": "모든 Query의 가중치(각 행의 합은 1, 마스크로 모든 키가 가려진 행은 모두 0)와 모든 토큰의 출력:",
    # heads together
    "h.concat": "헤드 결합 (concatenate)",
    "concat.explain": "head {h}개의 출력을 나란히 이어 붙인다: H는 {t} × {width} 형태이다.",
    "h.output": "출력 projection W_O",
    "wo.explain": "W_O ({rows} × {cols})는 같은 토큰 위치의 여러 head 결과를 하나의 벡터로 조합한다. W_O는 모든 "
                  "토큰에 동일하게 적용된다.",
    "wo.explain.model": "층의 W_O 가운데 이 head의 {rows}개 행({rows} × {cols})이 출력 Z를 다시 모델 폭으로 "
                        "되돌린다. 층은 모든 head의 몫을 더한다 (bias도 더한다).",
    "wo.explain.model.nobias": "층의 W_O 가운데 이 head의 {rows}개 행({rows} × {cols})이 출력 Z를 다시 모델 폭으로 "
                               "되돌린다. 층은 모든 head의 몫을 더한다 (bias는 없다).",
    "y.explain.model": "Y = Z·W_O ({t} × {d}):",
    "y.explain": "Y = H·W_O ({t} × {d}):",
    "residual.explain": "Residual 연결은 Y를 이 층의 입력 R(여기서는 R = X)에 더한다. R + Y가 다음 단계로 "
                        "이어진다.",
    "h.heads_check": "head를 하나씩 따로 계산해도 숫자는 같다",
    "heads_check.explain": "head {h}개를 각각 따로, 자기 몫의 W_Q, W_K, W_V 열(Q와 K는 {dk}개씩)과 W_O의 자기 행만으로 "
                           "계산해도 한꺼번에 계산한 것과 같은 계산이다:",
    "head": "head {h}",
    "col.head": "head",
    "col.columns": "사용하는 열",
    "col.shape": "형태",
    "heads_check.concat": "따로 계산한 head 출력을 이어 붙인 것과 한꺼번에 계산한 H의 차이는 최대 {diff}이다.",
    "heads_check.y": "각 head의 몫 head_h·W_O[h의 행]을 더한 것과 Y의 차이는 최대 {diff}이다.",
    "h.shapes": "단계마다의 형태",
    "shapes.explain": "기록된 모든 단계의 식과 형태 (head가 있으면 head 축이 앞에 온다):",
    "col.step": "단계",
    "col.formula": "식",
    # multi-head
    "h.mh.heads": "한 토큰에 대한 각 헤드의 출력",
    "mh.z1": "z⁽⁰⁾은 {example} 예제에서 계산한 {token}의 출력이다 (직접 입력한 값이 아니다).",
    "mh.given": "나머지 헤드 {n}개도 각자의 투영 행렬로 같은 절차를 수행한다. 여기서는 그 출력이 주어져 있다고 하자.",
    "mh.concat": "출력 {h}개를 이어 붙여 성분 {width}개의 벡터 하나를 만든다. 헤드를 나란히 붙였기 때문에 차원이 "
                 "증가한다:",
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
    "gm.blend": "조모임의 결론은 대답들을 가중치만큼 걸러 들은 가중합이다:",
    "gm.lot.conclusion": "모두 lot의 대답을 따른다: 다음 단어는 “{answer}”이다.",
    "gm.question.conclusion": "lot의 목소리는 상대적으로 약해졌다: 결론은 “{answer}”이다.",
    "gm.weaker": "lot의 가중치는 첫 번째 조모임에서 {before}, 두 번째 조모임에서 {after}이다. 소프트맥스에게 "
                 "중요한 것은 점수의 절대값이 아니라 서로 간의 상대적인 크기이다.",
    "gm.notation.title": "두 가지 표기법, 하나의 계산",
    "gm.notation.intro": "Attention Is All You Need 논문은 토큰을 행벡터로, 3Blue1Brown 영상은 열벡터로 쓴다. "
                         "{example} 예제의 Q, K, V로 두 표기법을 나란히 계산해 보자.",
    "gm.notation.rows": "행벡터 (논문): Attention(Q, K, V) = softmax(QKᵀ/√d_k)·V. 소프트맥스는 행마다(row-wise), "
                        "즉 Query마다 한 행씩 적용한다.",
    "gm.notation.columns": "열벡터 (3Blue1Brown): Attention = V·softmax(KᵀQ/√d_k). 소프트맥스는 열마다(column-wise), "
                           "즉 Query마다 한 열씩 적용한다. 가중치는 위의 것을 전치한 것이고, 출력도 마찬가지이다.",
    "gm.notation.same": "두 출력은 같다: 열벡터 형태의 결과를 전치하면 행벡터 형태와의 차이가 최대 {diff}이다. "
                        "소프트맥스가 적용되는 방향과 V가 곱해지는 위치 때문에 Q와 K는 서로 역할을 바꿀 수 없다.",
    # generic
    "generic.intro": "트레이스에 기록된 단계는 {n}개이다. 각 단계의 식과 값을 보인다.",
    "generic.large": "앞의 {rows} × {cols}개 성분만 보인다.",
    # by hand
    "h.drift": "손 계산과 정확한 값의 비교",
    "drift.explain": "단계마다 반올림하며 계산한 결과가 정확한 계산에서 얼마나 벗어나는지 보인다 (따라가는 Query의 "
                     "행. 마지막 열은 그 단계 전체에서 가장 큰 차이):",
    "col.by_hand": "손 계산",
    "col.exact": "정확한 값",
    "col.drift": "가장 큰 |차이|",
    # notes
    "note.seed001.weight_sum": "참고: 시드 001은 {token}의 가중치를 마지막 자리에서 1만큼 크게 적었다 (그러면 적힌 "
                               "네 가중치의 합이 정확히 1이 된다). 정확한 값은 {value}이고, 여기서는 이를 "
                               "반올림해 적었다.",
    "note.seed001.rounded_heads": "참고: 시드 001은 헤드 출력을 적힌 그대로, 즉 z⁽⁰⁾을 소수점 아래 세 자리로 반올림한 "
                                  "값으로 곱했기 때문에 최종 벡터가 정확한 값과 소수점 아래 넷째 자리에서 다르다. "
                                  "정확한 결과는 {value}이다. 손 계산 모드(--by-hand)는 같은 방식으로 반올림하여 "
                                  "시드의 숫자를 그대로 재현한다.",
    "note.seed002.underflow": "참고: 여기서 {token}의 가중치는 e^(100 − 1000)을 합으로 나눈 값으로, 소수점 아래에 "
                              "0이 수백 개 이어지는 수이다. float64가 나타낼 수 있는 가장 작은 수보다 작기 때문에 "
                              "계산 결과는 정확히 {value}이다. 목소리가 약해진 정도가 아니라 아예 들리지 않는다.",
    # Markdown matrix labels
    "md.rows": "행: {labels}",
    "md.columns": "열: {labels}",
    # figures (qkv.viz): 층, 헤드, 토큰, 열 번호는 모두 0부터 센다
    "fig.queries": "쿼리 (바라보는 토큰)",
    "fig.keys": "키 (바라봐지는 토큰)",
    "fig.queries_dec": "쿼리 (디코더)",
    "fig.keys_enc": "키 (인코더)",
    "fig.weight": "가중치",
    "fig.head": "헤드 {h}",
    "fig.layer": "층 {l}",
    "fig.layer_head": "층 {l}, 헤드 {h}",
    "fig.scores": "q·k (점수)",
    "fig.scaled": "÷ √dₖ (스케일된 점수)",
    "fig.biased": "+ bias",
    "fig.modified": "score_mod",
    "fig.weights": "softmax (가중치)",
    "fig.masked": "마스크",
    "fig.masked_key": "/// 마스크: softmax 전 −∞, 가중치 0",
    "fig.query": "쿼리 {i} “{token}”",
    "fig.mask": "softmax 전에 더하는 마스크",
    "fig.mask_note": "0 = 볼 수 있음, −∞ = 가려짐",
    "fig.reshape": "헤드로 나누기: T×d를 T×h×dₕ로 본다 (계산 없음)",
    "fig.concat": "헤드 이어 붙이기",
    "fig.projection": "Q·K·V 투영, 헤드, W_O",
    "fig.per_head": "헤드별 출력",
    "fig.attention": "어텐션 가중치",
    "fig.attention_head": "헤드 {h}의 어텐션: softmax(QₕKₕᵀ/√dₕ)",
    "fig.head_out": "헤드 {h} = 가중치·Vₕ",
    "fig.value_rows": "각 밸류 행 × 그 가중치",
    "fig.sum_z": "그 합: z = Σⱼ wⱼ·vⱼ",
    "fig.chain": "쿼리 하나의 계산 흐름",
    "fig.legend": "가중치 (모든 그림에 같은 눈금: 0 ~ 1, √가중치로 음영)",
    "fig.rows_shown": "행 {total}개 중 0–{last}번 표시",
    "fig.grid_note": "쿼리 {tq}개 × 키 {tk}개; 행: 층, 열: 헤드 (0부터 센다)",
    "fig.pooled": "픽셀 하나는 그 픽셀이 덮는 칸들 중 가장 큰 가중치를 보인다",
    "fig.decoder": "디코더 (쿼리)",
    "fig.encoder": "인코더 (키와 밸류)",
    "fig.cross_lines": "선 굵기 = 가중치",
    "fig.residual": "R + Y (잔차 연결)",
    "fig.multi_head": "헤드를 나란히, 이어 붙이고, × W_O",
    "fig.no_cjk_font": "qkv: CJK 글꼴이 없어 한국어와 일본어가 빈 네모로 그려진다; koreanize-matplotlib(pip) 또는 "
                       "fonts-noto-cjk(apt)를 설치하라",
    # the interactive page
    "page.lead.model": "{title}: 층 {layers}개 × 헤드 {heads}개의 어텐션, 토큰 {tokens}개. 행은 쿼리(바라보는 토큰), "
                       "열은 키(바라봐지는 토큰)이다.",
    "page.lead.trace": "{title}: 헤드 {heads}개의 어텐션 가중치, 쿼리 {tq}개 × 키 {tk}개. 칸을 클릭하면 기록된 모든 "
                       "단계가 나온다. 행은 쿼리, 열은 키이다.",
    "page.layer": "층",
    "page.head": "헤드",
    "page.part": "부분",
    "page.overview": "한눈에 보기: 모든 층 × 헤드 (클릭하면 열린다)",
    "page.head_view": "헤드 보기",
    "page.matrix": "행렬 보기",
    "page.queries_col": "쿼리",
    "page.keys_col": "키",
    "page.hint": "왼쪽 쿼리 토큰을 클릭해 선택한다 (가중치를 더해서 보인다). 잠그면 마우스를 올려도 선택이 유지된다. "
                 "칸이나 키 토큰을 클릭하면 계산 과정이 나온다.",
    "page.lock": "선택 잠그기",
    "page.unlock": "선택 풀기",
    "page.clear": "지우기",
    "page.selected": "선택한 쿼리",
    "page.sum": "선택한 행의 합",
    "page.query": "쿼리",
    "page.key": "키",
    "page.weight": "가중치",
    "page.score": "q·k (점수)",
    "page.scaled": "÷ √dₖ (스케일된 점수)",
    "page.biased": "+ bias",
    "page.modified": "score_mod (소프트맥스에 들어가는 점수)",
    "page.rotated": "(RoPE 회전 후: 점수가 쓰는 q와 k)",
    "page.weights_only": " 토큰이 {limit}개를 넘는 텍스트는 가중치만 기록한다 (이 텍스트는 {tokens}개). 유도 과정의 "
                         "모든 행을 보려면 더 짧은 텍스트를 쓴다.",
    "page.mask": "마스크",
    "page.allowed": "0 (볼 수 있음)",
    "page.blocked": "−∞ (마스크)",
    "page.masked": "마스크",
    "page.share": "softmax 가중치  e^s[i,j] / Σₖ e^s[i,k]",
    "page.value": "가중치가 곱해지는 밸류 행",
    "page.out": "이 쿼리의 출력 행  z = Σⱼ w[i,j]·v[j]",
    "page.not_recorded": "이 trace에 기록되지 않음",
    "page.derivation": "한 칸의 계산 과정",
    "page.qrow": "쿼리 벡터 q",
    "page.krow": "키 벡터 k",
    "page.storage": "소수점 {d}자리까지 표시 (정수 × 10^−{d}로 저장, 보이는 값 그대로)",
    "page.no_data": "이 trace에는 그릴 어텐션 가중치가 없다.",
    "page.sum1": "한 행의 가중치 합은 1 (모든 키가 가려진 행은 모두 0)",
    "page.legend": "가중치 (모든 곳에 같은 눈금: 0 ~ 1, √가중치로 음영); 빗금 친 회색: 마스크",
    "page.zoom_in": "확대",
    "page.zoom_out": "축소",
    "page.decode_fail": "이 브라우저는 내장된 숫자를 풀 수 없다 (DecompressionStream 필요: Chrome 80+, Firefox 113+, "
                        "Safari 16.4+).",
    "page.steps": "단계별 계산",
    "page.too_large": "이 trace에는 숫자가 {n}개 있어 단계별 설명은 이 페이지에서 뺐다. 더 짧은 입력으로 qkv explain을 "
                      "실행하면 읽을 수 있다.",
    # command line
    "list.header": "예제 목록 (qkv example NAME):",
    # 나머지 명령 (qkv inspect, heads, masks, ring, embed, generate, translate): cli.*
    "cli.choices": "{value}: 다음 중 하나여야 한다: {choices}",
    "cli.note": "qkv: 참고: {text}",
    "cli.wrote": "저장했다: {path}",
    "cli.tokens": "토큰",
    "cli.truncated": "텍스트가 이 모델이 읽을 수 있는 길이보다 길다. 앞의 토큰 {n}개만 쓴다",
    "cli.inspect.title": "{model}: 층 {layer}, 헤드 {head} (층 {layers}개 × 헤드 {heads}개 중)",
    "cli.inspect.kv": " (Key/Value 헤드 {g}, 이를 공유하는 Query 헤드: {heads})",
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
    "cli.inspect.hint": "--layer L --head H로 하나를 고르면 그 가중치와 계산 과정이 나온다. --figure FILE.png는 모두를 "
                        "그림으로 그리고, --format html은 대화형 페이지를 만든다",
    "cli.inspect.figure": "{model}: {layers} × {heads}",
    "cli.inspect.figure.layers": "층 {span}",
    "cli.inspect.figure.layer": "층 {span}",
    "cli.inspect.figure.heads": "헤드 {span}",
    "cli.inspect.figure.head": "헤드 {span}",
    "cli.inspect.no_tokens": "이 모델로는 텍스트에서 토큰이 하나도 나오지 않는다",
    "cli.inspect.not_token": "{value}: 토큰도 아니고 행 번호도 아니다",
    "cli.inspect.digits": "{value}: 소수점 아래 자릿수는 0에서 12 사이의 정수여야 한다",
    "cli.inspect.top_keys": "{value}: Key 개수는 양의 정수여야 한다",
    "cli.no_directory": "디렉터리가 없다: {path}",
    "cli.figure_type": "알 수 없는 그림 형식 {suffix}: .png, .svg, .pdf 중 하나를 쓴다",
    "cli.inspect.range": "{value}: 범위를 벗어났다. 이 모델의 {what} 수는 {count}이다 (0 … {last}, 또는 all)",
    "cli.inspect.index": "{value}: 번호가 아니다. 이 모델의 {what} 수는 {count}이다 (0 … {last}, 또는 all)",
    "cli.inspect.what.layer": "층",
    "cli.inspect.what.head": "헤드",
    "cli.heads.title": "{model}: 토큰 {tokens}개, 층 {layers}개 × 헤드 {heads}개 (층과 헤드는 0부터 센다)",
    "cli.heads.legend": "엔트로피는 자연로그로 잰다 (0 = Key 하나가 가중치를 모두 가져감, ln T = 모든 Key에 고르게 "
                        "나눔). 첫 토큰, 이전 토큰, 자기 자신: 그 Key가 받는 가중치의 평균. 중복 토큰, 인덕션: 무작위 "
                        "토큰 {probe}개를 두 번 이어 붙인 시퀀스(시드 {seed})에서 그 패턴에 가는 어텐션의 비율",
    "cli.heads.col.layer": "층",
    "cli.heads.col.head": "헤드",
    "cli.heads.col.entropy": "엔트로피",
    "cli.heads.col.first_token": "첫 토큰",
    "cli.heads.col.previous_token": "이전 토큰",
    "cli.heads.col.self": "자기 자신",
    "cli.heads.col.duplicate_token": "중복 토큰",
    "cli.heads.col.induction": "인덕션",
    "cli.heads.rollout": "어텐션 롤아웃 (잔차 연결 포함): 층 {layers}개를 모두 지난 뒤 “{token}” 자리가 각 토큰에서 "
                         "가져오는 몫은 {shares}",
    "cli.heads.figure": "{model}: 토큰 {tokens}개",
    "cli.heads.probe_long": "{length}: 탐침 시퀀스(토큰 2 × {length}개)가 모델의 위치 {positions}개보다 길다",
    "cli.heads.probe_vocab": "{length}: 이 모델의 일반 토큰은 {ordinary}개뿐이다",
    "cli.masks.header": "{name}: {formula}   (T = {t}, 쌍 {total}개 중 {allowed}개 허용)",
    "cli.masks.blocks": "  {b}×{b} 블록: 건너뜀(S) {skipped}개, 전체(F) {full}개, 부분(P) {partial}개. 커널은 점수 "
                        "행렬의 {share}를 계산한다",
    "cli.masks.and": "그리고",
    "cli.masks.or": "또는",
    "cli.masks.unknown": "{value}: 목록에 없는 마스크이다. 다음 중 하나를 고른다: {names}",
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
    "cli.ring.col.formula": "공식 MiB",
    "cli.ring.col.os": "OS 기록 MiB",
    "cli.ring.col.peak": "최대 MiB",
    "cli.ring.col.error": "최대 오차",
    "cli.ring.overlap": "{name}: 링 한 단계마다 계산 {compute} ms (CPU 시간, 가장 느린 랭크), k/v 샤드 하나의 전송 "
                        "{transfer} ms (경과 시간): {verdict}",
    "cli.ring.hides": "전송이 계산 뒤에 숨는다",
    "cli.ring.longer": "전송이 계산보다 오래 걸린다",
    "cli.ring.balance": "{name}: 계산 시간, 가장 느린 랭크 ÷ 가장 빠른 랭크 = {ratio}",
    "cli.ring.timeout": "(0, 86400] 범위의 초여야 한다. 받은 값: {value}",
    "cli.ring.kv_heads": "H={heads}: G={kv}의 배수여야 한다",
    "cli.ring.strategies": "알 수 없는 방식 {names}: 다음 중에서 고른다: {choices}",
    "cli.ring.empty": "(빈 목록)",
    "cli.ring.seq": "T={seq}: {need}의 배수가 아니다 (zigzag 배치는 시퀀스를 같은 길이의 조각 2·P개로 자른다, "
                    "P={world}). --seq {fix}를 써 본다",
    "cli.ring.fail_rank": "0 … {last} 중 하나의 랭크여야 한다. 받은 값: {value}",
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
    "cli.generate.needs_sample": "--temperature, --top-k, --top-p, --seed는 샘플링 방법을 정한다. --sample을 함께 "
                                 "쓴다 (기본은 탐욕 디코딩이다)",
    "cli.generate.not_causal": "{model}: {kind}이다. 인과 언어 모델이 아니다 (generate는 gpt2, llama, mistral, qwen2를 "
                               "실행한다)",
    "cli.translate.to": "{value}: ko, ja, both 중 하나를 고른다",
    "cli.translate.figure_one": "그림은 한 언어만 보인다: --to ko 또는 --to ja를 붙인다",
    "cli.translate.derive_one": "계산 과정은 한 언어만 따라간다: --to ko 또는 --to ja를 붙인다",
    "cli.translate.digits": "{value}: 0 … 8이어야 한다",
    "cli.translate.figure_format": "알 수 없는 그림 형식이다. 다음 중 하나를 쓴다: {choices}",
    "cli.translate.lang.ko": "한국어",
    "cli.translate.lang.ja": "일본어",
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
    },
    "ko": {
        "mask": "마스크", "heads": "헤드", "positions": "위치", "rope": "따라가는 Query의 RoPE",
        "causal": "인과 마스크: Query i는 Key 0 … i만 본다 (각 행에서 대각선 오른쪽은 0이고, 계산 과정의 마스크 "
                  "단계에서는 그 자리가 −∞이다)",
        "window": "; 슬라이딩 윈도: 마지막 Key {w}개만 본다 (Query 자신 포함)",
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
    },
}


def check_lang(lang: str) -> None:
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {', '.join(LANGS)}, got {lang!r}")


def has(lang: str, key: str) -> bool:
    check_lang(lang)
    return key in LANGS[lang]


def text(lang: str, key: str, **values) -> str:
    """The sentence ``key`` in ``lang`` with its placeholders filled."""
    check_lang(lang)
    return LANGS[lang][key].format(**values)


def placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}
