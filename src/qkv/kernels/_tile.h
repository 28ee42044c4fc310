/* qkv.kernels._tile.h: included by _fused.c (after struct flash_task, flash_block and the
 * softmax loops). tile_block(t, b) computes one key block of a query block's walk exactly as
 * flash_block_blas does (same meaning of every field; see _fused.c), or returns 0 to leave it to
 * flash_block_blas: with the scalar loops only (t->width < 8), for 1 or 2 query rows, dk > 128, dv
 * not a multiple of 16 or above 128, more than 512 keys, per-row key ranges, or q rows more than
 * TILE_MAXLDQ floats apart. AVX-512F CPUs take
 * tile_block_avx512 (below), AVX2+FMA CPUs tile_block_avx2 (the same steps on 8 lanes, after it).
 *
 * How (AVX-512F, no BLAS): the query rows go in groups of 32 (two 16-lane vectors, one lane per
 * row). For a group:
 *   1. qᵀ of the group is packed (dk × 32, zero rows past the end in the lanes step 2 reads; one
 *      gather of 16 rows per d) into a per-thread buffer.
 *   2. Sᵀ = k_j·qᵀ in register tiles of 8 keys × 32 rows (16 keys × 16 rows for a group of
 *      ≤ 16 rows; 16 accumulators, k broadcast from its rows, no packing). While a tile is in
 *      registers: the mask, causal limit and band start (a 32-bit "not allowed" row set per key,
 *      built once per group), the row max (a vertical max: one lane per row), P = exp(S − ref)
 *      with qkv_exp16 against the row's reference as it was, the row sum (vertical adds, the
 *      tile's keys pairwise); Pᵀ and Sᵀ (keys × 32) go to per-thread buffers.
 *   3. softmax_block's reference rule on the group's row maxes (on these S: the ref, α and
 *      row_max softmax_block gives; l up to the order of its additions). Where a reference moves
 *      up by d ≤ 64, the row's P (all < e^64) is multiplied by α = exp(−d) (values below FLT_MIN
 *      become 0, as qkv_exp16 gives them; P and l may differ from exp(S − m) by a rounding);
 *      where it moves up by more, or down (l = 0 and max − ref < −headroom), P and the sums are
 *      taken again from the stored Sᵀ. Both are rare (first blocks, or a row's max jumping past
 *      the headroom).
 *   4. acc rows whose α ≠ 1 are rescaled; acc += P·v_j in register tiles of 4 rows × 64 values
 *      (16 accumulators, v rows loaded as they are, P broadcast), 64 keys at a time so the v
 *      chunk stays in L1 for the whole group.
 * Keys past a causal limit, or before a band's start, for every row of the group are skipped
 * (their P is 0, as the BLAS step computes them), which halves the work of blocks on a diagonal.
 * Per-thread buffers: 16 KiB (qᵀ) + 2 × 66 KiB (Pᵀ, Sᵀ) + 2 KiB (masks).
 *
 * Measured (benchmarks/bench_tile.py: one core of a 2-core AMD EPYC Zen 4 shared with other work,
 * one head through flash_rows, 256-row query blocks × 512-key blocks, tile and BLAS alternating,
 * medians of 7): T = 4096, D = 64: 97 GFLOP/s against the BLAS step's 84 and torch SDPA's 81
 * (one thread, same rounds); causal 95 against 75; T = 512: 92 against 81, causal 77 against 42;
 * scores with spread 30 (references moving in most blocks) 93 against 80. The products
 * run at the core's FMA peak (~105 GFLOP/s; QK and PV measured alone); qkv_exp16 (12 FMA-port
 * operations per 16 scores, against 128 FMAs of the two products) costs the rest.
 */

#ifdef FUSED_X86

#define TILE_G 32      /* query rows per group: two 16-lane vectors */
#define TILE_MAXC 512  /* keys per block, at most */
#define TILE_MAXDK 128
#define TILE_MAXDV 128
#define TILE_KC 64     /* keys per P·V chunk */
#define TILE_R 4       /* rows per P·V register tile */
#define TILE_MINROWS 3 /* fewer query rows: BLAS (its matrix-vector path) is 3-4× faster */
#define TILE_MAXLDQ ((Py_ssize_t)1 << 25)   /* q's row stride, at most: tile_pack_q's 32-bit gather offsets */
#define TILE_RESCALE_MAX 64.0f   /* a reference moving up by at most this rescales P (see step 3) */

static __thread float tile_qt[TILE_MAXDK * TILE_G];
static __thread float tile_p[(TILE_MAXC + 16) * TILE_G];
static __thread float tile_s[(TILE_MAXC + 16) * TILE_G];
static __thread uint32_t tile_mt[TILE_MAXC + 16];

/* Step 2 for the first 16·V rows of the group (V = 1 or 2 lane vectors) and keys 0 … n−1 (n a
 * multiple of U, keys at once: 8 for V = 2, 16 for V = 1, 16 accumulators either way; keys from
 * `last` on read key `last`'s row and must be masked): Pᵀ into p and Sᵀ into sc (key c at
 * p + c·32), the rows' max (NaN ignored) into mx and their sums into sm (32 each; lanes past 16·V
 * −inf and 0). masked: mt[c] holds the rows (bits) that may not see key c. */
__attribute__((target("avx512f"), always_inline)) static inline void
tile_scores(const float *qt, const float *k, Py_ssize_t ldk, Py_ssize_t dk, Py_ssize_t n, Py_ssize_t last,
            const float *refs, float *p, float *sc, float *mx, float *sm, const uint32_t *mt, const int masked,
            const int V, const int U)
{
    __m512 r[2], m[2], s[2];
    for (int v = 0; v < 2; v++) {
        r[v] = _mm512_loadu_ps(refs + 16 * v);
        m[v] = _mm512_set1_ps(-INFINITY);
        s[v] = _mm512_setzero_ps();
    }
    for (Py_ssize_t c0 = 0; c0 < n; c0 += U) {
        const float *kp[16];
        __m512 a[16][2];
#pragma GCC unroll 16
        for (int u = 0; u < U; u++) {
            kp[u] = k + (c0 + u < last ? c0 + u : last) * ldk;
#pragma GCC unroll 2
            for (int v = 0; v < V; v++)
                a[u][v] = _mm512_setzero_ps();
        }
        for (Py_ssize_t d = 0; d < dk; d++) {
            __m512 qv[2];
#pragma GCC unroll 2
            for (int v = 0; v < V; v++)
                qv[v] = _mm512_loadu_ps(qt + d * TILE_G + 16 * v);
#pragma GCC unroll 16
            for (int u = 0; u < U; u++) {
                __m512 b = _mm512_set1_ps(kp[u][d]);
#pragma GCC unroll 2
                for (int v = 0; v < V; v++)
                    a[u][v] = _mm512_fmadd_ps(qv[v], b, a[u][v]);
            }
        }
#pragma GCC unroll 16
        for (int u = 0; u < U; u++) {
            uint32_t off = masked ? mt[c0 + u] : 0;
#pragma GCC unroll 2
            for (int v = 0; v < V; v++) {
                Py_ssize_t at = (c0 + u) * TILE_G + 16 * v;
                _mm512_storeu_ps(sc + at, a[u][v]);
                __m512 e = qkv_exp16(_mm512_sub_ps(a[u][v], r[v]));
                if (masked) {
                    __mmask16 keep = (__mmask16)~(off >> (16 * v));
                    m[v] = _mm512_mask_max_ps(m[v], keep, a[u][v], m[v]);   /* NaN in a: m kept */
                    e = _mm512_maskz_mov_ps(keep, e);
                } else {
                    m[v] = _mm512_max_ps(a[u][v], m[v]);
                }
                _mm512_storeu_ps(p + at, e);
                a[u][v] = e;
            }
        }
        /* the tile's keys pairwise in eights, then into the running sums */
#pragma GCC unroll 2
        for (int g = 0; g < U; g += 8)
#pragma GCC unroll 2
            for (int v = 0; v < V; v++)
                s[v] = _mm512_add_ps(s[v], _mm512_add_ps(
                    _mm512_add_ps(_mm512_add_ps(a[g][v], a[g + 1][v]), _mm512_add_ps(a[g + 2][v], a[g + 3][v])),
                    _mm512_add_ps(_mm512_add_ps(a[g + 4][v], a[g + 5][v]), _mm512_add_ps(a[g + 6][v], a[g + 7][v]))));
    }
    for (int v = 0; v < 2; v++) {
        _mm512_storeu_ps(mx + 16 * v, v < V ? m[v] : _mm512_set1_ps(-INFINITY));
        _mm512_storeu_ps(sm + 16 * v, v < V ? s[v] : _mm512_setzero_ps());
    }
}

#define TILE_SCORES(NAME, MASKED, V, U)                                                                              \
    __attribute__((target("avx512f"))) static void NAME(const float *qt, const float *k, Py_ssize_t ldk,            \
                                                        Py_ssize_t dk, Py_ssize_t n, Py_ssize_t last,                \
                                                        const float *refs, float *p, float *sc, float *mx,           \
                                                        float *sm, const uint32_t *mt)                               \
    {                                                                                                                \
        tile_scores(qt, k, ldk, dk, n, last, refs, p, sc, mx, sm, mt, MASKED, V, U);                                 \
    }
TILE_SCORES(tile_scores_32, 0, 2, 8)
TILE_SCORES(tile_scores_32_masked, 1, 2, 8)
TILE_SCORES(tile_scores_16, 0, 1, 16)
TILE_SCORES(tile_scores_16_masked, 1, 1, 16)

/* Step 3's second pass: P and the row sums again from the stored Sᵀ (sc), against refs. */
__attribute__((target("avx512f"))) static void tile_exp_again(const float *sc, Py_ssize_t n, const float *refs,
                                                              float *p, float *sm, const uint32_t *mt)
{
    const __m512 r0 = _mm512_loadu_ps(refs), r1 = _mm512_loadu_ps(refs + 16);
    __m512 s0 = _mm512_setzero_ps(), s1 = s0;
    for (Py_ssize_t c = 0; c < n; c++) {
        __m512 e0 = qkv_exp16(_mm512_sub_ps(_mm512_loadu_ps(sc + c * TILE_G), r0));
        __m512 e1 = qkv_exp16(_mm512_sub_ps(_mm512_loadu_ps(sc + c * TILE_G + 16), r1));
        if (mt) {
            e0 = _mm512_maskz_mov_ps((__mmask16)~mt[c], e0);
            e1 = _mm512_maskz_mov_ps((__mmask16)~(mt[c] >> 16), e1);
        }
        _mm512_storeu_ps(p + c * TILE_G, e0);
        _mm512_storeu_ps(p + c * TILE_G + 16, e1);
        s0 = _mm512_add_ps(s0, e0);
        s1 = _mm512_add_ps(s1, e1);
    }
    _mm512_storeu_ps(sm, s0);
    _mm512_storeu_ps(sm + 16, s1);
}

/* acc rows 0 … R−1 (row stride ldacc), values 0 … 16·NV−1 += Σ_c P[c][r]·v[c] for keys c0 … c1−1;
 * p holds Pᵀ (key c at p + c·32, these rows at lanes 0 … R−1). */
__attribute__((target("avx512f"), always_inline)) static inline void
tile_pv(float *acc, Py_ssize_t ldacc, const float *p, const float *v, Py_ssize_t ldv, Py_ssize_t c0, Py_ssize_t c1,
        const int R, const int NV)
{
    __m512 a[TILE_R][4];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int j = 0; j < NV; j++)
            a[r][j] = _mm512_loadu_ps(acc + r * ldacc + 16 * j);
    for (Py_ssize_t c = c0; c < c1; c++) {
        const float *vc = v + c * ldv, *pc = p + c * TILE_G;
        __m512 w[4];
#pragma GCC unroll 4
        for (int j = 0; j < NV; j++)
            w[j] = _mm512_loadu_ps(vc + 16 * j);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m512 b = _mm512_set1_ps(pc[r]);
#pragma GCC unroll 4
            for (int j = 0; j < NV; j++)
                a[r][j] = _mm512_fmadd_ps(b, w[j], a[r][j]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int j = 0; j < NV; j++)
            _mm512_storeu_ps(acc + r * ldacc + 16 * j, a[r][j]);
}

#define TILE_PV_CASE(R, NV) \
    case (R) * 8 + (NV): tile_pv(acc, ldacc, p, v, ldv, c0, c1, R, NV); break;
#define TILE_PV_ROWS(R) TILE_PV_CASE(R, 1) TILE_PV_CASE(R, 2) TILE_PV_CASE(R, 3) TILE_PV_CASE(R, 4)

__attribute__((target("avx512f"))) static void tile_pv_any(float *acc, Py_ssize_t ldacc, const float *p,
                                                           const float *v, Py_ssize_t ldv, Py_ssize_t c0,
                                                           Py_ssize_t c1, int R, int NV)
{
    switch (R * 8 + NV) {
        TILE_PV_ROWS(1) TILE_PV_ROWS(2) TILE_PV_ROWS(3) TILE_PV_ROWS(4)
    }
}

/* Step 1: qᵀ of rows g0 … g0+nr−1 into qt (d at qt + d·32), zeros past nr in the lanes step 2 reads
 * (16 for a group of ≤ 16 rows, tile_scores_16; 32 otherwise), by one gather of 16 rows per d (the
 * element-by-element copy, and zeroing 16 lanes that are never read, cost a 16-row call as much as
 * its products). Offsets in 32 bits: 31 rows of at most TILE_MAXLDQ floats (tile_block checks). */
__attribute__((target("avx512f"))) static void tile_pack_q(const struct flash_task *t, Py_ssize_t g0,
                                                           Py_ssize_t nr, float *qt)
{
    const float *q = t->q + g0 * t->ldq;
    const __m512i rows = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                            _mm512_set1_epi32((int)t->ldq));
    for (int v = 0; v < (nr > 16 ? 2 : 1); v++) {
        Py_ssize_t left = nr - 16 * v;
        __mmask16 have = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u);
        const float *base = q + 16 * v * t->ldq;
        for (Py_ssize_t d = 0; d < t->dk; d++)
            _mm512_storeu_ps(qt + d * TILE_G + 16 * v,
                             _mm512_mask_i32gather_ps(_mm512_setzero_ps(), have, rows, base + d, 4));
    }
}

/* The rows (bits) of the group g0 … g0+nr−1 that may not see key lo + c, for c < n: the block's
 * mask, the causal limit, a band's start, and keys from hi on (past the keys the group uses). */
__attribute__((target("avx512f"))) static void tile_mask_bits(const struct flash_block *b, Py_ssize_t g0,
                                                              Py_ssize_t nr, Py_ssize_t lo, Py_ssize_t hi,
                                                              Py_ssize_t n, uint32_t *mt)
{
    for (Py_ssize_t c = 0; c < n; c++) {
        Py_ssize_t key = lo + c;
        uint32_t off = key < hi ? 0u : ~0u;
        if (b->have_limit && key < hi) {    /* row r may not see key when key >= limit + g0 + r */
            Py_ssize_t below = key - b->limit - g0 + 1;   /* rows 0 … below−1 */
            off |= below <= 0 ? 0u : below >= 32 ? ~0u : (1u << below) - 1u;
        }
        if (b->have_start && key < hi) {    /* nor when key < start + g0 + r */
            Py_ssize_t from = key - b->start - g0 + 1;    /* rows from … 31 */
            off |= from <= 0 ? ~0u : from >= 32 ? 0u : ~((1u << from) - 1u);
        }
        mt[c] = off;
    }
    if (b->mask) {
        Py_ssize_t c = 0, count = hi - lo;
        for (; c + 16 <= count; c += 16) {
            __m512i bits = _mm512_loadu_si512((const void *)(mt + c));
            for (Py_ssize_t r = 0; r < nr; r++) {
                __m128i bytes = _mm_loadu_si128((const __m128i *)(b->mask + (g0 + r) * b->mstride + lo + c));
                __m512i wide = _mm512_cvtepi8_epi32(bytes);
                __mmask16 set = _mm512_test_epi32_mask(wide, wide);
                bits = _mm512_mask_or_epi32(bits, set, bits, _mm512_set1_epi32((int)(1u << r)));
            }
            _mm512_storeu_si512((void *)(mt + c), bits);
        }
        for (; c < count; c++)
            for (Py_ssize_t r = 0; r < nr; r++)
                if (b->mask[(g0 + r) * b->mstride + lo + c])
                    mt[c] |= 1u << r;
    }
}

__attribute__((target("avx512f"))) static int tile_block_avx512(const struct flash_task *t,
                                                                const struct flash_block *b)
{
    const Py_ssize_t rows = t->rows, cols = b->cols, dk = t->dk, dv = t->dv;
    const float *k = t->k + b->j0 * t->ldk, *v = t->v + b->j0 * t->ldv;
    float *qt = tile_qt, *p = tile_p, *sc = tile_s;
    uint32_t *mt = tile_mt;
    float refs[TILE_G], mx[TILE_G], sm[TILE_G], alpha[TILE_G];
    for (Py_ssize_t g0 = 0; g0 < rows; g0 += TILE_G) {
        Py_ssize_t nr = rows - g0 < TILE_G ? rows - g0 : TILE_G;
        /* keys lo … hi−1: those some row of the group may see (row g0 + r keeps keys c with
         * c < limit + g0 + r, and c >= start + g0 + r); n_keys of them */
        Py_ssize_t lo = 0, hi = cols;
        if (b->have_limit) {
            Py_ssize_t top = b->limit + g0 + nr - 1;
            hi = top < 0 ? 0 : (top < cols ? top : cols);
        }
        if (b->have_start) {
            Py_ssize_t bottom = b->start + g0;
            lo = bottom < 0 ? 0 : (bottom < cols ? bottom : cols);
        }
        Py_ssize_t n_keys = hi > lo ? hi - lo : 0;
        Py_ssize_t u = nr > 16 ? 8 : 16;   /* keys per register tile */
        Py_ssize_t n = (n_keys + u - 1) / u * u;
        int masked = b->mask != NULL || n != n_keys || (b->have_limit && b->limit + g0 < hi) || b->have_start;
        if (masked)
            tile_mask_bits(b, g0, nr, lo, lo + n_keys, n, mt);
        tile_pack_q(t, g0, nr, qt);
        for (Py_ssize_t r = 0; r < TILE_G; r++)
            refs[r] = r < nr ? t->ref[g0 + r] : 0.0f;
        if (nr > 16)
            (masked ? tile_scores_32_masked : tile_scores_32)(qt, k + lo * t->ldk, t->ldk, dk, n, n_keys - 1, refs, p,
                                                              sc, mx, sm, mt);
        else
            (masked ? tile_scores_16_masked : tile_scores_16)(qt, k + lo * t->ldk, t->ldk, dk, n, n_keys - 1, refs, p,
                                                              sc, mx, sm, mt);
        /* Step 3: softmax_block's reference rule on the group's row maxes. */
        int again = 0, rescale = 0;
        for (Py_ssize_t r = 0; r < TILE_G; r++)
            alpha[r] = 1.0f;
        for (Py_ssize_t r = 0; r < nr; r++) {
            Py_ssize_t i = g0 + r;
            float m = mx[r];
            if (m == -INFINITY && sm[r] != sm[r])
                m = NAN;   /* every allowed score NaN: row_max_avx512's answer */
            if (t->rmax && (m > t->rmax[i] || m != m))
                t->rmax[i] = m;
            float d = m - refs[r];
            if (d > t->headroom) {
                alpha[r] = qkv_exp1(-d);
                refs[r] = m;
                if (d <= TILE_RESCALE_MAX)
                    rescale = 1;
                else
                    again = 1;
            } else if (t->l[i] == 0.0f && d < -t->headroom && isfinite(d)) {
                refs[r] = m;
                again = 1;
            }
        }
        if (again) {   /* P against the moved references, from the stored S */
            tile_exp_again(sc, n, refs, p, sm, masked ? mt : NULL);
        } else if (rescale) {   /* P = exp(S − old)·α; values below FLT_MIN to 0, as qkv_exp16 */
            __m512 a0 = _mm512_loadu_ps(alpha), a1 = _mm512_loadu_ps(alpha + 16);
            __m512 tiny = _mm512_set1_ps(1.17549435e-38f);
            for (Py_ssize_t c = 0; c < n; c++) {
                __m512 p0 = _mm512_mul_ps(_mm512_loadu_ps(p + c * TILE_G), a0);
                __m512 p1 = _mm512_mul_ps(_mm512_loadu_ps(p + c * TILE_G + 16), a1);
                p0 = _mm512_mask_mov_ps(p0, _mm512_cmp_ps_mask(p0, tiny, _CMP_LT_OQ), _mm512_setzero_ps());
                p1 = _mm512_mask_mov_ps(p1, _mm512_cmp_ps_mask(p1, tiny, _CMP_LT_OQ), _mm512_setzero_ps());
                _mm512_storeu_ps(p + c * TILE_G, p0);
                _mm512_storeu_ps(p + c * TILE_G + 16, p1);
            }
            for (Py_ssize_t r = 0; r < nr; r++)
                sm[r] *= alpha[r];
        }
        for (Py_ssize_t r = 0; r < nr; r++) {
            Py_ssize_t i = g0 + r;
            t->ref[i] = refs[r];
            t->alpha[i] = alpha[r];
            t->l[i] = t->l[i] * alpha[r] + sm[r];
            if (alpha[r] != 1.0f) {
                float *row = t->acc + i * t->ldacc;
                __m512 s = _mm512_set1_ps(alpha[r]);
                for (Py_ssize_t c = 0; c < dv; c += 16)
                    _mm512_storeu_ps(row + c, _mm512_mul_ps(_mm512_loadu_ps(row + c), s));
            }
        }
        /* Step 4: acc += P·v_j over the keys the group sees. */
        for (Py_ssize_t c0 = 0; c0 < n_keys; c0 += TILE_KC) {
            Py_ssize_t c1 = n_keys - c0 < TILE_KC ? n_keys : c0 + TILE_KC;
            for (Py_ssize_t j = 0; j < dv; j += 64) {
                int nv = (int)((dv - j) / 16 < 4 ? (dv - j) / 16 : 4);
                for (Py_ssize_t r0 = 0; r0 < nr; r0 += TILE_R) {
                    int nrr = (int)(nr - r0 < TILE_R ? nr - r0 : TILE_R);
                    tile_pv_any(t->acc + (g0 + r0) * t->ldacc + j, t->ldacc, p + r0, v + lo * t->ldv + j, t->ldv, c0,
                                c1, nrr, nv);
                }
            }
        }
    }
    return 1;
}

/* ------------------------------------------------------------------------ AVX2 + FMA (8 lanes)
 * The same four steps with 16 ymm registers: groups of TILE2_G = 24 query rows (three 8-lane
 * vectors, one lane per row; Pᵀ, Sᵀ and qᵀ at a row stride of 24 floats in the same per-thread
 * buffers), Sᵀ in register tiles of 4 keys × 24 rows (6 × 16 for a group of ≤ 16 rows, 12 × 8 for
 * ≤ 8: 12 accumulators, 3 lane vectors of q, one broadcast k value), acc += P·v in register tiles
 * of 6 rows × 16 values (12 accumulators, two v vectors, one broadcast P value). The mask bits,
 * the reference rule, the rescaling and the second pass are step 3 of the AVX-512 code, 8 lanes
 * at a time (lane masks as all-ones / zero vectors).
 *
 * Measured (2-core AMD EPYC Zen 3, AVX2, no AVX-512; one thread's CPU time, best of many calls, the
 * machine shared with other work): one 256-row query block × 512 keys, D = 64: 81 GFLOP/s, against
 * an FMA peak of ~100 (12 independent FMA chains) and NumPy's sgemm 1024² at 90. Parts, per 24-row
 * group: q·kᵀ alone 94, with the exponentials on the tile 73 (qkv_exp8 is ~10 cycles per 8 scores
 * against 64 cycles of FMAs for their two products); P·v 87-94. The exponentials taken in a
 * separate pass over the stored Sᵀ were no faster. Through flash_rows (benchmarks/bench_tile.py,
 * Python between query blocks), tile against the BLAS step: T = 512 dense 64 against 43-66,
 * causal 43-53 against 24-25; T = 4096 63 against 56, causal 53 against 48; D = 32, T = 64-512:
 * the tile as fast or faster everywhere. */
#define TILE2_G 24     /* query rows per group: three 8-lane vectors */
#define TILE2_R 6      /* rows per P·V register tile */
#define TILE2_NV 2     /* 8-value vectors per P·V register tile */

/* The 8 lanes (rows 8·v … 8·v + 7 of the group) whose bit in `off >> 8·v` is 0: all-ones there. */
__attribute__((target("avx2,fma"), always_inline)) static inline __m256 tile2_keep(uint32_t off, int v)
{
    const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    __m256i set = _mm256_and_si256(_mm256_set1_epi32((int)((off >> (8 * v)) & 0xFFu)), bit);
    return _mm256_castsi256_ps(_mm256_cmpeq_epi32(set, _mm256_setzero_si256()));
}

/* Step 2 for the first 8·V rows of the group (V = 1, 2 or 3 lane vectors) and keys 0 … n−1 (n a
 * multiple of U; keys from `last` on read key `last`'s row and must be masked): as tile_scores,
 * key c at p + c·24 and sc + c·24, mx and sm 24 each (lanes past 8·V: −inf and 0). */
__attribute__((target("avx2,fma"), always_inline)) static inline void
tile2_scores(const float *qt, const float *k, Py_ssize_t ldk, Py_ssize_t dk, Py_ssize_t n, Py_ssize_t last,
             const float *refs, float *p, float *sc, float *mx, float *sm, const uint32_t *mt, const int masked,
             const int V, const int U)
{
    __m256 r[3], m[3], s[3];
    for (int v = 0; v < 3; v++) {
        r[v] = _mm256_loadu_ps(refs + 8 * v);
        m[v] = _mm256_set1_ps(-INFINITY);
        s[v] = _mm256_setzero_ps();
    }
    for (Py_ssize_t c0 = 0; c0 < n; c0 += U) {
        const float *kp[12];
        __m256 a[12][3];
#pragma GCC unroll 12
        for (int u = 0; u < U; u++) {
            kp[u] = k + (c0 + u < last ? c0 + u : last) * ldk;
#pragma GCC unroll 3
            for (int v = 0; v < V; v++)
                a[u][v] = _mm256_setzero_ps();
        }
        for (Py_ssize_t d = 0; d < dk; d++) {
            __m256 qv[3];
#pragma GCC unroll 3
            for (int v = 0; v < V; v++)
                qv[v] = _mm256_loadu_ps(qt + d * TILE2_G + 8 * v);
#pragma GCC unroll 12
            for (int u = 0; u < U; u++) {
                __m256 b = _mm256_broadcast_ss(kp[u] + d);
#pragma GCC unroll 3
                for (int v = 0; v < V; v++)
                    a[u][v] = _mm256_fmadd_ps(qv[v], b, a[u][v]);
            }
        }
#pragma GCC unroll 12
        for (int u = 0; u < U; u++) {
            uint32_t off = masked ? mt[c0 + u] : 0;
#pragma GCC unroll 3
            for (int v = 0; v < V; v++) {
                Py_ssize_t at = (c0 + u) * TILE2_G + 8 * v;
                _mm256_storeu_ps(sc + at, a[u][v]);
                __m256 e = qkv_exp8(_mm256_sub_ps(a[u][v], r[v]));
                if (masked) {
                    __m256 keep = tile2_keep(off, v);
                    m[v] = _mm256_blendv_ps(m[v], _mm256_max_ps(a[u][v], m[v]), keep);   /* NaN in a: m kept */
                    e = _mm256_and_ps(e, keep);
                } else {
                    m[v] = _mm256_max_ps(a[u][v], m[v]);
                }
                _mm256_storeu_ps(p + at, e);
                s[v] = _mm256_add_ps(s[v], e);
            }
        }
    }
    for (int v = 0; v < 3; v++) {
        _mm256_storeu_ps(mx + 8 * v, v < V ? m[v] : _mm256_set1_ps(-INFINITY));
        _mm256_storeu_ps(sm + 8 * v, v < V ? s[v] : _mm256_setzero_ps());
    }
}

#define TILE2_SCORES(NAME, MASKED, V, U)                                                                             \
    __attribute__((target("avx2,fma"))) static void NAME(const float *qt, const float *k, Py_ssize_t ldk,           \
                                                         Py_ssize_t dk, Py_ssize_t n, Py_ssize_t last,               \
                                                         const float *refs, float *p, float *sc, float *mx,          \
                                                         float *sm, const uint32_t *mt)                              \
    {                                                                                                                \
        tile2_scores(qt, k, ldk, dk, n, last, refs, p, sc, mx, sm, mt, MASKED, V, U);                                \
    }
TILE2_SCORES(tile2_scores_24, 0, 3, 4)
TILE2_SCORES(tile2_scores_24_masked, 1, 3, 4)
TILE2_SCORES(tile2_scores_16, 0, 2, 6)
TILE2_SCORES(tile2_scores_16_masked, 1, 2, 6)
TILE2_SCORES(tile2_scores_8, 0, 1, 12)
TILE2_SCORES(tile2_scores_8_masked, 1, 1, 12)

/* Step 3's second pass: P and the row sums again from the stored Sᵀ (sc), against refs. */
__attribute__((target("avx2,fma"))) static void tile2_exp_again(const float *sc, Py_ssize_t n, const float *refs,
                                                                float *p, float *sm, const uint32_t *mt)
{
    __m256 r[3], s[3];
    for (int v = 0; v < 3; v++) {
        r[v] = _mm256_loadu_ps(refs + 8 * v);
        s[v] = _mm256_setzero_ps();
    }
    for (Py_ssize_t c = 0; c < n; c++)
        for (int v = 0; v < 3; v++) {
            __m256 e = qkv_exp8(_mm256_sub_ps(_mm256_loadu_ps(sc + c * TILE2_G + 8 * v), r[v]));
            if (mt)
                e = _mm256_and_ps(e, tile2_keep(mt[c], v));
            _mm256_storeu_ps(p + c * TILE2_G + 8 * v, e);
            s[v] = _mm256_add_ps(s[v], e);
        }
    for (int v = 0; v < 3; v++)
        _mm256_storeu_ps(sm + 8 * v, s[v]);
}

/* acc rows 0 … R−1 (row stride ldacc), values 0 … 8·NV−1 += Σ_c P[c][r]·v[c] for keys c0 … c1−1;
 * p holds Pᵀ (key c at p + c·24, these rows at lanes 0 … R−1). */
__attribute__((target("avx2,fma"), always_inline)) static inline void
tile2_pv(float *acc, Py_ssize_t ldacc, const float *p, const float *v, Py_ssize_t ldv, Py_ssize_t c0, Py_ssize_t c1,
         const int R, const int NV)
{
    __m256 a[TILE2_R][TILE2_NV];
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
#pragma GCC unroll 2
        for (int j = 0; j < NV; j++)
            a[r][j] = _mm256_loadu_ps(acc + r * ldacc + 8 * j);
    for (Py_ssize_t c = c0; c < c1; c++) {
        const float *vc = v + c * ldv, *pc = p + c * TILE2_G;
        __m256 w[TILE2_NV];
#pragma GCC unroll 2
        for (int j = 0; j < NV; j++)
            w[j] = _mm256_loadu_ps(vc + 8 * j);
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            __m256 b = _mm256_broadcast_ss(pc + r);
#pragma GCC unroll 2
            for (int j = 0; j < NV; j++)
                a[r][j] = _mm256_fmadd_ps(b, w[j], a[r][j]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
#pragma GCC unroll 2
        for (int j = 0; j < NV; j++)
            _mm256_storeu_ps(acc + r * ldacc + 8 * j, a[r][j]);
}

#define TILE2_PV_CASE(R) \
    case (R): tile2_pv(acc, ldacc, p, v, ldv, c0, c1, R, TILE2_NV); break;

__attribute__((target("avx2,fma"))) static void tile2_pv_any(float *acc, Py_ssize_t ldacc, const float *p,
                                                             const float *v, Py_ssize_t ldv, Py_ssize_t c0,
                                                             Py_ssize_t c1, int R)
{
    switch (R) {
        TILE2_PV_CASE(1) TILE2_PV_CASE(2) TILE2_PV_CASE(3) TILE2_PV_CASE(4) TILE2_PV_CASE(5) TILE2_PV_CASE(6)
    }
}

/* Step 1: qᵀ of rows g0 … g0+nr−1 into qt (d at qt + d·24), zeros past nr. */
static void tile2_pack_q(const struct flash_task *t, Py_ssize_t g0, Py_ssize_t nr, float *qt)
{
    for (Py_ssize_t r = 0; r < TILE2_G; r++) {
        if (r < nr) {
            const float *qr = t->q + (g0 + r) * t->ldq;
            for (Py_ssize_t d = 0; d < t->dk; d++)
                qt[d * TILE2_G + r] = qr[d];
        } else {
            for (Py_ssize_t d = 0; d < t->dk; d++)
                qt[d * TILE2_G + r] = 0.0f;
        }
    }
}

/* tile_mask_bits for a group of ≤ 24 rows, the mask array's bytes read 8 keys at a time. */
__attribute__((target("avx2,fma"))) static void tile2_mask_bits(const struct flash_block *b, Py_ssize_t g0,
                                                                Py_ssize_t nr, Py_ssize_t lo, Py_ssize_t hi,
                                                                Py_ssize_t n, uint32_t *mt)
{
    for (Py_ssize_t c = 0; c < n; c++) {
        Py_ssize_t key = lo + c;
        uint32_t off = key < hi ? 0u : ~0u;
        if (b->have_limit && key < hi) {    /* row r may not see key when key >= limit + g0 + r */
            Py_ssize_t below = key - b->limit - g0 + 1;   /* rows 0 … below−1 */
            off |= below <= 0 ? 0u : below >= 32 ? ~0u : (1u << below) - 1u;
        }
        if (b->have_start && key < hi) {    /* nor when key < start + g0 + r */
            Py_ssize_t from = key - b->start - g0 + 1;    /* rows from … 31 */
            off |= from <= 0 ? ~0u : from >= 32 ? 0u : ~((1u << from) - 1u);
        }
        mt[c] = off;
    }
    if (b->mask) {
        Py_ssize_t c = 0, count = hi - lo;
        for (; c + 8 <= count; c += 8) {
            __m256i bits = _mm256_loadu_si256((const __m256i *)(mt + c));
            for (Py_ssize_t r = 0; r < nr; r++) {
                __m128i bytes = _mm_loadl_epi64((const __m128i *)(b->mask + (g0 + r) * b->mstride + lo + c));
                __m256i wide = _mm256_cvtepu8_epi32(bytes);
                __m256i clear = _mm256_cmpeq_epi32(wide, _mm256_setzero_si256());
                bits = _mm256_or_si256(bits, _mm256_andnot_si256(clear, _mm256_set1_epi32((int)(1u << r))));
            }
            _mm256_storeu_si256((__m256i *)(mt + c), bits);
        }
        for (; c < count; c++)
            for (Py_ssize_t r = 0; r < nr; r++)
                if (b->mask[(g0 + r) * b->mstride + lo + c])
                    mt[c] |= 1u << r;
    }
}

__attribute__((target("avx2,fma"))) static int tile_block_avx2(const struct flash_task *t,
                                                              const struct flash_block *b)
{
    const Py_ssize_t rows = t->rows, cols = b->cols, dk = t->dk, dv = t->dv;
    const float *k = t->k + b->j0 * t->ldk, *v = t->v + b->j0 * t->ldv;
    float *qt = tile_qt, *p = tile_p, *sc = tile_s;
    uint32_t *mt = tile_mt;
    float refs[TILE2_G], mx[TILE2_G], sm[TILE2_G], alpha[TILE2_G];
    for (Py_ssize_t g0 = 0; g0 < rows; g0 += TILE2_G) {
        Py_ssize_t nr = rows - g0 < TILE2_G ? rows - g0 : TILE2_G;
        /* keys lo … hi−1: those some row of the group may see (as tile_block_avx512) */
        Py_ssize_t lo = 0, hi = cols;
        if (b->have_limit) {
            Py_ssize_t top = b->limit + g0 + nr - 1;
            hi = top < 0 ? 0 : (top < cols ? top : cols);
        }
        if (b->have_start) {
            Py_ssize_t bottom = b->start + g0;
            lo = bottom < 0 ? 0 : (bottom < cols ? bottom : cols);
        }
        Py_ssize_t n_keys = hi > lo ? hi - lo : 0;
        Py_ssize_t u = nr > 16 ? 4 : nr > 8 ? 6 : 12;   /* keys per register tile */
        Py_ssize_t n = (n_keys + u - 1) / u * u;
        int masked = b->mask != NULL || n != n_keys || (b->have_limit && b->limit + g0 < hi) || b->have_start;
        if (masked)
            tile2_mask_bits(b, g0, nr, lo, lo + n_keys, n, mt);
        tile2_pack_q(t, g0, nr, qt);
        for (Py_ssize_t r = 0; r < TILE2_G; r++)
            refs[r] = r < nr ? t->ref[g0 + r] : 0.0f;
        const float *kl = k + lo * t->ldk;
        if (nr > 16)
            (masked ? tile2_scores_24_masked : tile2_scores_24)(qt, kl, t->ldk, dk, n, n_keys - 1, refs, p, sc, mx, sm,
                                                                mt);
        else if (nr > 8)
            (masked ? tile2_scores_16_masked : tile2_scores_16)(qt, kl, t->ldk, dk, n, n_keys - 1, refs, p, sc, mx, sm,
                                                                mt);
        else
            (masked ? tile2_scores_8_masked : tile2_scores_8)(qt, kl, t->ldk, dk, n, n_keys - 1, refs, p, sc, mx, sm,
                                                              mt);
        /* Step 3: softmax_block's reference rule on the group's row maxes. */
        int again = 0, rescale = 0;
        for (Py_ssize_t r = 0; r < TILE2_G; r++)
            alpha[r] = 1.0f;
        for (Py_ssize_t r = 0; r < nr; r++) {
            Py_ssize_t i = g0 + r;
            float m = mx[r];
            if (m == -INFINITY && sm[r] != sm[r])
                m = NAN;   /* every allowed score NaN: row_max_avx2's answer */
            if (t->rmax && (m > t->rmax[i] || m != m))
                t->rmax[i] = m;
            float d = m - refs[r];
            if (d > t->headroom) {
                alpha[r] = qkv_exp1(-d);
                refs[r] = m;
                if (d <= TILE_RESCALE_MAX)
                    rescale = 1;
                else
                    again = 1;
            } else if (t->l[i] == 0.0f && d < -t->headroom && isfinite(d)) {
                refs[r] = m;
                again = 1;
            }
        }
        if (again) {   /* P against the moved references, from the stored S */
            tile2_exp_again(sc, n, refs, p, sm, masked ? mt : NULL);
        } else if (rescale) {   /* P = exp(S − old)·α; values below FLT_MIN to 0, as qkv_exp8 */
            __m256 al[3];
            const __m256 tiny = _mm256_set1_ps(1.17549435e-38f);
            for (int w = 0; w < 3; w++)
                al[w] = _mm256_loadu_ps(alpha + 8 * w);
            for (Py_ssize_t c = 0; c < n; c++)
                for (int w = 0; w < 3; w++) {
                    __m256 x = _mm256_mul_ps(_mm256_loadu_ps(p + c * TILE2_G + 8 * w), al[w]);
                    x = _mm256_andnot_ps(_mm256_cmp_ps(x, tiny, _CMP_LT_OQ), x);
                    _mm256_storeu_ps(p + c * TILE2_G + 8 * w, x);
                }
            for (Py_ssize_t r = 0; r < nr; r++)
                sm[r] *= alpha[r];
        }
        for (Py_ssize_t r = 0; r < nr; r++) {
            Py_ssize_t i = g0 + r;
            t->ref[i] = refs[r];
            t->alpha[i] = alpha[r];
            t->l[i] = t->l[i] * alpha[r] + sm[r];
            if (alpha[r] != 1.0f) {
                float *row = t->acc + i * t->ldacc;
                __m256 s = _mm256_set1_ps(alpha[r]);
                for (Py_ssize_t c = 0; c < dv; c += 8)
                    _mm256_storeu_ps(row + c, _mm256_mul_ps(_mm256_loadu_ps(row + c), s));
            }
        }
        /* Step 4: acc += P·v_j over the keys the group sees. */
        for (Py_ssize_t c0 = 0; c0 < n_keys; c0 += TILE_KC) {
            Py_ssize_t c1 = n_keys - c0 < TILE_KC ? n_keys : c0 + TILE_KC;
            for (Py_ssize_t j = 0; j < dv; j += 8 * TILE2_NV)
                for (Py_ssize_t r0 = 0; r0 < nr; r0 += TILE2_R) {
                    int nrr = (int)(nr - r0 < TILE2_R ? nr - r0 : TILE2_R);
                    tile2_pv_any(t->acc + (g0 + r0) * t->ldacc + j, t->ldacc, p + r0, v + lo * t->ldv + j, t->ldv,
                                 c0, c1, nrr);
                }
        }
    }
    return 1;
}
#endif

static int tile_block(const struct flash_task *t, const struct flash_block *b)
{
#ifdef FUSED_X86
    if (t->width < 8 || t->rows < TILE_MINROWS || b->cols > TILE_MAXC || t->dk < 1 ||
        t->dk > TILE_MAXDK || t->dv < 16 || t->dv > TILE_MAXDV || t->dv % 16 || b->rlo != NULL ||
        t->ldq > TILE_MAXLDQ)
        return 0;   /* per-row key ranges (rlo/rhi): the BLAS step */
    return t->width >= 16 ? tile_block_avx512(t, b) : tile_block_avx2(t, b);
#else
    (void)t;
    (void)b;
    return 0;
#endif
}
