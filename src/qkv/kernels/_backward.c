/* qkv.kernels._fused, backward_many: the backward of the blocked attention kernel (FlashAttention-2's
 * algorithm), float32, in C: AVX2+FMA register tiles (below), or NumPy's own BLAS.
 *
 * Given the forward's inputs q, k, v, its output o and log-sum-exp lse (per query row), and the
 * output's gradient dO, it computes dQ, dK, dV without the Tq×Tk weight matrix: for every key block
 * K_j of one key/value head, for every query head of its group and every query block Q_i that sees
 * some key of K_j (each row i sees the keys rows_lo[i] <= j < rows_hi[i]: causal, windows, documents,
 * prefix-LM, chunked — qkv.masks' key ranges), the weights are recomputed from lse:
 *
 *     S  = scale·Q_i·K_jᵀ                 (rows × cols)
 *     P  = exp(S − lse_i), 0 outside the row's key range and for rows with lse = −inf (no key)
 *     dV_j += Pᵀ·dO_i
 *     dP = dO_i·V_jᵀ
 *     dS = P ∘ (dP − δ_i),  δ_i = rowsum(dO_i ∘ O_i) − dlse_i    (δ from the caller)
 *     dK_j += scale·dSᵀ·Q_i
 *     dQ_i += scale·dS·K_j
 *
 * Five products per visited block (the forward has two), each either one sgemm or bt_gemm's
 * register tiles (`tile`: the tiles on AVX2+FMA CPUs without AVX-512 when Dk and Dv are multiples
 * of 8; sgemm on other CPUs and shapes, and always for the scalar loops). A task is one key/value head and a range
 * of its key blocks, so dK and dV rows have one writer. dQ goes to a part of dq that no other
 * thread adds to: the calling thread's own (`part`; the caller sums the threads' parts at the end),
 * so tasks can be as small as one key block and the threads finish together (one key/value head
 * per task left one thread idle for up to a head's time: 50 ms of a 650 ms dense T = 2048 pass);
 * or the task's own column (one key range per head: part 0 for all). No atomics.
 * Block pairs that no row of the query block can see are never visited (the caller's pair lists):
 * the same block sparsity as the forward. Up to `group` consecutive query blocks of a key block run as
 * one taller block (fewer, larger sgemm). Memory: three (group·block_q × ld) scratch blocks per
 * thread (S/P, dP/dS, soft-cap's tanh; ld = block_k, or for the tiles block_k rounded up to an odd
 * number of 16 floats), and for the tiles Kᵀ and Vᵀ of the key block (Dk + Dv) × ld and a
 * 128 × 16 panel.
 *
 * Threads: each of the kernel's threads calls backward_many once; tasks are taken from a shared
 * atomic counter (heaviest first, as the caller orders them); the GIL is released while they run.
 * The BLAS is NumPy's: blocked.py finds its cblas_sgemm and hands its address to set_sgemm (one
 * pointer for the forward and the backward: this file is compiled into qkv.kernels._fused with
 * _fused.c, which holds the module table; see _kernel.h).
 */
#include "_kernel.h"   /* shared with _fused.c: BLAS, argument checks, the exponential, vector width */
#include <math.h>
#include <stdint.h>
#include <string.h>

#define gemm qkv_gemm

/* ------------------------------------------------------------------------ P = exp(S − lse) */
/* row[c] = exp(row[c] − sub) for lo <= c < hi (lo < hi), the rest of the row's `cols` left as is. */
static void exp_span_scalar(float *row, Py_ssize_t lo, Py_ssize_t hi, float sub)
{
    for (Py_ssize_t c = lo; c < hi; c++)
        row[c] = qkv_exp1(row[c] - sub);
}

#ifdef QKV_X86
__attribute__((target("avx2,fma"))) static void exp_span_avx2(float *row, Py_ssize_t lo, Py_ssize_t hi, float sub)
{
    __m256 s8 = _mm256_set1_ps(sub);
    Py_ssize_t c = lo;
    for (; c + 8 <= hi; c += 8)
        _mm256_storeu_ps(row + c, qkv_exp8(_mm256_sub_ps(_mm256_loadu_ps(row + c), s8)));
    for (; c < hi; c++)
        row[c] = qkv_exp1(row[c] - sub);
}

__attribute__((target("avx512f"))) static void exp_span_avx512(float *row, Py_ssize_t lo, Py_ssize_t hi, float sub)
{
    __m512 s16 = _mm512_set1_ps(sub);
    Py_ssize_t c = lo;
    for (; c + 16 <= hi; c += 16)
        _mm512_storeu_ps(row + c, qkv_exp16(_mm512_sub_ps(_mm512_loadu_ps(row + c), s16)));
    if (c < hi) {
        __mmask16 keep = (__mmask16)((1u << (hi - c)) - 1u);
        _mm512_mask_storeu_ps(row + c, keep, qkv_exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(keep, row + c), s16)));
    }
}
#endif

static void exp_span(float *row, Py_ssize_t lo, Py_ssize_t hi, float sub, int width)
{
#ifdef QKV_X86
    if (width >= 16) {
        exp_span_avx512(row, lo, hi, sub);
        return;
    }
    if (width >= 8) {
        exp_span_avx2(row, lo, hi, sub);
        return;
    }
#endif
    exp_span_scalar(row, lo, hi, sub);
}

/* dS = P ∘ (dP − δ) in place of dP, rows × cols (row stride ld); P is 0 outside the rows' ranges. */
static void ds_rows_scalar(const float *p, float *dp, Py_ssize_t ld, Py_ssize_t rows, Py_ssize_t cols,
                           const float *delta)
{
    for (Py_ssize_t r = 0; r < rows; r++) {
        const float *pr = p + r * ld;
        float *d = dp + r * ld, dl = delta[r];
        for (Py_ssize_t c = 0; c < cols; c++)
            d[c] = pr[c] * (d[c] - dl);
    }
}

#ifdef QKV_X86
__attribute__((target("avx2,fma"))) static void ds_rows_avx2(const float *p, float *dp, Py_ssize_t ld,
                                                            Py_ssize_t rows, Py_ssize_t cols, const float *delta)
{
    for (Py_ssize_t r = 0; r < rows; r++) {
        const float *pr = p + r * ld;
        float *d = dp + r * ld;
        __m256 dl = _mm256_set1_ps(delta[r]);
        Py_ssize_t c = 0;
        for (; c + 8 <= cols; c += 8)
            _mm256_storeu_ps(d + c, _mm256_mul_ps(_mm256_loadu_ps(pr + c), _mm256_sub_ps(_mm256_loadu_ps(d + c), dl)));
        for (; c < cols; c++)
            d[c] = pr[c] * (d[c] - delta[r]);
    }
}
#endif

static void ds_rows(const float *p, float *dp, Py_ssize_t ld, Py_ssize_t rows, Py_ssize_t cols, const float *delta,
                    int width)
{
#ifdef QKV_X86
    if (width >= 8) {
        ds_rows_avx2(p, dp, ld, rows, cols, delta);
        return;
    }
#endif
    ds_rows_scalar(p, dp, ld, rows, cols, delta);
}

/* d ← d·(1 − t²), rows × cols (row stride ld): dS through soft-cap, t = tanh(s / cap) */
static void cap_derivative_scalar(float *d, const float *t, Py_ssize_t ld, Py_ssize_t rows, Py_ssize_t cols)
{
    for (Py_ssize_t r = 0; r < rows; r++)
        for (Py_ssize_t c = 0; c < cols; c++)
            d[r * ld + c] *= 1.0f - t[r * ld + c] * t[r * ld + c];
}

#ifdef QKV_X86
__attribute__((target("avx2,fma"))) static void cap_derivative_avx2(float *d, const float *t, Py_ssize_t ld,
                                                                   Py_ssize_t rows, Py_ssize_t cols)
{
    __m256 one = _mm256_set1_ps(1.0f);
    for (Py_ssize_t r = 0; r < rows; r++) {
        float *dr = d + r * ld;
        const float *tr = t + r * ld;
        Py_ssize_t c = 0;
        for (; c + 8 <= cols; c += 8) {
            __m256 t8 = _mm256_loadu_ps(tr + c);
            _mm256_storeu_ps(dr + c, _mm256_mul_ps(_mm256_loadu_ps(dr + c), _mm256_fnmadd_ps(t8, t8, one)));
        }
        for (; c < cols; c++)
            dr[c] *= 1.0f - tr[c] * tr[c];
    }
}
#endif

static void cap_derivative(float *d, const float *t, Py_ssize_t ld, Py_ssize_t rows, Py_ssize_t cols, int width)
{
#ifdef QKV_X86
    if (width >= 8) {
        cap_derivative_avx2(d, t, ld, rows, cols);
        return;
    }
#endif
    cap_derivative_scalar(d, t, ld, rows, cols);
}

/* ------------------------------------------------------------------------ AVX2+FMA register tiles
 * The five products of a block pair without BLAS (`tile` path; AVX2+FMA CPUs, dk and dv multiples
 * of 8). All five are one register tile, C (M × 8·NV) = Σ_p A(u, p)·B(p, ·): B read as rows of 8·NV
 * floats (row stride ldb), A broadcast one value at a time from a[u·sa + p·sp], so the same tile
 * serves A = Q, dO, dS (sa = row stride, sp = 1) and A = Pᵀ, dSᵀ (sa = 1, sp = row stride) without
 * transposing anything. 6 rows × 16 values: 12 accumulators, 2 B vectors, 1 broadcast (15 of the
 * 16 ymm registers), 12 FMAs per 8 loads (the k loop unrolled 4 times: 1.2-1.3× over not unrolled,
 * the loop's own instructions had crowded the front end). Kᵀ and Vᵀ of the key block are packed once
 * per key block (dk × ld, zero past the block's keys) and reused by every query block and head of
 * the task. ld, the row stride of those panels and of S, P and dS, is block_k rounded up to an odd
 * number of 16 floats (144 for 128): dV's and dK's products read P and dS down their columns, and at
 * a stride of 128 floats those 256 lines fell into 8 of L1's 64 sets (the transposed products ran at
 * 0.9× sgemm's speed in the backward until then). The three accumulating products copy B's 16-value
 * panel (rows of q, dO or k: 256 bytes apart, the same set trouble) to one contiguous 128-step run
 * first (without: 1.10× slower per call). What the tile does with its accumulators (mode):
 *   BT_ACC   C += acc (dV += Pᵀ·dO, dK += dSᵀ·Q, dQ += dS·K: C loaded first, stored back)
 *   BT_SCALE C = scale·acc (S, when a score function follows)
 *   BT_EXP   C = exp(scale·acc − lse[row]) (S → P in registers)
 *   BT_DS    C = scale·P ∘ (acc − δ[row]) (dP → dS in registers; P read from the same place of the
 *            P block; scale folded in here serves both dK and dQ)
 *
 * Measured (2-core AMD EPYC Zen 3, AVX2, no AVX-512; the machine shared with other work at load
 * 5-13, so CPU time, tiles and sgemm alternating, medians): one block pair of 256 query rows × 128
 * keys, D = 64, its operands cycling through 8 heads × 2,048 rows as in a call: 75 GFLOP/s (five
 * products 280 µs) against sgemm's 64 (NumPy's OpenBLAS 0.3, one thread; the core's FMA peak
 * measured 101). Whole calls, one thread's CPU time inside backward_many (benchmarks/
 * bench_backward_tiles.py): causal T = 2048, H = 8: 194 against 208-212 ms (1.07-1.09×, groups 1
 * and 2; 1.01× at group 4); dense T = 1024 1.02-1.06×; causal T = 512 1.08×. Per product, in
 * the cycling harness: S with its exp 62-69 µs, dV 55-65, dS 46-57, dK 48-57, dQ 47-53 (the FMAs
 * alone: 42). The exp is most of what S costs above dS. On a pair whose rows see only part of its
 * keys (bt_ranges), tiles skip what is 0 for all their rows: a window of 64 keys, T = 2048, one
 * thread: 26-31 against 49-53 ms per call (sgemm 48-52); causal's diagonal pairs: within the noise.
 */
#define BT_KC 128   /* bt_gemm's chunk of the inner dimension when it packs B (BT_ACC) */
#ifdef QKV_X86
enum { BT_ACC = 0, BT_SCALE = 1, BT_EXP = 2, BT_DS = 3 };
#define BT_M 6

struct bt_epi {
    float scale;
    const float *rowv;   /* lse (BT_EXP) or δ (BT_DS), indexed by the tile's first row */
    const float *p;      /* BT_DS: P, same layout as C */
};

__attribute__((target("avx2,fma"), always_inline)) static inline void
bt_tile(const float *a, Py_ssize_t sa, Py_ssize_t sp, const float *b, Py_ssize_t ldb, Py_ssize_t kdim, float *c,
        Py_ssize_t ldc, const float *rowv, const float *p, float scale, const int M, const int NV, const int mode)
{
    __m256 acc[BT_M][2];
#pragma GCC unroll 6
    for (int u = 0; u < M; u++)
#pragma GCC unroll 2
        for (int j = 0; j < NV; j++)
            acc[u][j] = mode == BT_ACC ? _mm256_loadu_ps(c + u * ldc + 8 * j) : _mm256_setzero_ps();
#pragma GCC unroll 4
    for (Py_ssize_t k = 0; k < kdim; k++) {
        __m256 bv[2];
#pragma GCC unroll 2
        for (int j = 0; j < NV; j++)
            bv[j] = _mm256_loadu_ps(b + k * ldb + 8 * j);
        const float *ak = a + k * sp;
#pragma GCC unroll 6
        for (int u = 0; u < M; u++) {
            __m256 x = _mm256_broadcast_ss(ak + u * sa);
#pragma GCC unroll 2
            for (int j = 0; j < NV; j++)
                acc[u][j] = _mm256_fmadd_ps(x, bv[j], acc[u][j]);
        }
    }
    const __m256 s8 = _mm256_set1_ps(scale);
#pragma GCC unroll 6
    for (int u = 0; u < M; u++) {
        __m256 r8 = mode == BT_EXP || mode == BT_DS ? _mm256_set1_ps(rowv[u]) : s8;
#pragma GCC unroll 2
        for (int j = 0; j < NV; j++) {
            __m256 x = acc[u][j];
            if (mode == BT_SCALE)
                x = _mm256_mul_ps(x, s8);
            else if (mode == BT_EXP)
                x = qkv_exp8(_mm256_fmsub_ps(x, s8, r8));
            else if (mode == BT_DS)
                x = _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(p + u * ldc + 8 * j), s8), _mm256_sub_ps(x, r8));
            _mm256_storeu_ps(c + u * ldc + 8 * j, x);
        }
    }
}

#define BT_FN(MODE, M, NV)                                                                                           \
    __attribute__((target("avx2,fma"))) static void bt_##MODE##_##M##_##NV(                                         \
        const float *a, Py_ssize_t sa, Py_ssize_t sp, const float *b, Py_ssize_t ldb, Py_ssize_t kdim, float *c,     \
        Py_ssize_t ldc, const float *rowv, const float *p, float scale)                                              \
    {                                                                                                                \
        bt_tile(a, sa, sp, b, ldb, kdim, c, ldc, rowv, p, scale, M, NV, MODE);                                       \
    }
#define BT_FNS(MODE) BT_FN(MODE, 1, 1) BT_FN(MODE, 2, 1) BT_FN(MODE, 3, 1) BT_FN(MODE, 4, 1) BT_FN(MODE, 5, 1)         \
    BT_FN(MODE, 6, 1) BT_FN(MODE, 1, 2) BT_FN(MODE, 2, 2) BT_FN(MODE, 3, 2) BT_FN(MODE, 4, 2) BT_FN(MODE, 5, 2)    \
    BT_FN(MODE, 6, 2)
BT_FNS(0) BT_FNS(1) BT_FNS(2) BT_FNS(3)

typedef void (*bt_fn)(const float *, Py_ssize_t, Py_ssize_t, const float *, Py_ssize_t, Py_ssize_t, float *,
                      Py_ssize_t, const float *, const float *, float);
#define BT_ROW(MODE) {{bt_##MODE##_1_1, bt_##MODE##_2_1, bt_##MODE##_3_1, bt_##MODE##_4_1, bt_##MODE##_5_1,          \
                       bt_##MODE##_6_1},                                                                             \
                      {bt_##MODE##_1_2, bt_##MODE##_2_2, bt_##MODE##_3_2, bt_##MODE##_4_2, bt_##MODE##_5_2,          \
                       bt_##MODE##_6_2}}
static const bt_fn bt_table[4][2][BT_M] = {BT_ROW(0), BT_ROW(1), BT_ROW(2), BT_ROW(3)};

/* C (m × n, n a multiple of 8) by tiles of 6 rows × 16 values, B's 16-value panel outer (it stays in
 * L1 while A's rows stream past), the mode's epilogue per tile (see above). */
/* Which part of a product can be skipped on a block pair whose rows see only part of its keys
 * (row i of the pair sees keys lo[i] − key0 <= c < hi[i] − key0 of the block; P and dS are 0
 * elsewhere): BT_ALONG_ROWS, m runs over the pair's rows (S, dP: panels of keys no row of a tile
 * sees are not computed — P's are zeroed by the caller, dS's here; dQ: only the keys the tile's rows
 * see); BT_ALONG_KEYS, m runs over keys and k over rows (dV, dK: only the rows that see some key of
 * the tile). Without (full pairs, score functions): everything. */
enum { BT_ALL = 0, BT_ALONG_ROWS = 1, BT_ALONG_KEYS = 2 };
struct bt_ranges {
    int along;
    const int64_t *lo, *hi;   /* the pair's first row's entries */
    Py_ssize_t key0, rows;    /* the block's first key; the pair's rows */
};
#define BT_MAX_TILES 256

/* [*first, *end) ⊂ [0, count): the rows (along keys) or keys (along rows) the tile i0 … i0+n−1 may
 * need, as described above */
static void bt_span(const struct bt_ranges *rg, Py_ssize_t i0, int n, Py_ssize_t count, Py_ssize_t *first,
                    Py_ssize_t *end)
{
    Py_ssize_t f = count, e = 0;
    if (rg->along == BT_ALONG_ROWS) {
        for (int u = 0; u < n; u++) {
            Py_ssize_t a = (Py_ssize_t)rg->lo[i0 + u] - rg->key0, z = (Py_ssize_t)rg->hi[i0 + u] - rg->key0;
            if (z > a) {
                f = a < f ? a : f;
                e = z > e ? z : e;
            }
        }
    } else {
        Py_ssize_t c0 = i0 + rg->key0, c1 = c0 + n;
        for (Py_ssize_t r = 0; r < rg->rows; r++)
            if (rg->lo[r] < c1 && rg->hi[r] > c0 && rg->hi[r] > rg->lo[r]) {
                f = r < f ? r : f;
                e = r + 1;
            }
    }
    *first = f < 0 ? 0 : f;
    *end = e > count ? count : e;
}

static void bt_gemm(const float *a, Py_ssize_t sa, Py_ssize_t sp, const float *b, Py_ssize_t ldb, Py_ssize_t kdim,
                    float *c, Py_ssize_t ldc, Py_ssize_t m, Py_ssize_t n, int mode, const float *rowv, const float *p,
                    float scale, float *pack, const struct bt_ranges *rg)
{
    if (m > BT_M * (BT_MAX_TILES - 12)) {   /* taller than the tile list: in two calls */
        Py_ssize_t h = BT_M * (BT_MAX_TILES - 12);
        struct bt_ranges rest;
        if (rg) {
            rest = *rg;
            if (rg->along == BT_ALONG_ROWS) {
                rest.lo += h;
                rest.hi += h;
            } else {
                rest.key0 += h;
            }
        }
        bt_gemm(a, sa, sp, b, ldb, kdim, c, ldc, h, n, mode, rowv, p, scale, pack, rg);
        bt_gemm(a + h * sa, sa, sp, b, ldb, kdim, c + h * ldc, ldc, m - h, n, mode, rowv ? rowv + h : NULL,
                p ? p + h * ldc : NULL, scale, pack, rg ? &rest : NULL);
        return;
    }
    /* pack (BT_ACC): the inner dimension in chunks of BT_KC steps, B's 16-value panel of a chunk
     * copied to one contiguous stream (B's rows are a power-of-two stride apart, so its panel
     * would fall into a few of L1's sets) */
    Py_ssize_t kc = pack ? BT_KC : kdim;
    /* rows by tiles of 6; a last tile of 1 or 2 rows (2 or 4 FMA chains: bound by the FMA's latency)
     * is merged with the one before into two tiles of 3-4 rows */
    Py_ssize_t split = m % BT_M != 0 && m % BT_M <= 2 && m > BT_M ? m - BT_M - m % BT_M : m;
    Py_ssize_t starts[BT_MAX_TILES + 1], spans[2 * BT_MAX_TILES];
    int tiles = 0;
    for (Py_ssize_t i0 = 0; i0 < m; tiles++) {
        int rows = i0 < split ? (m - i0 < BT_M ? (int)(m - i0) : BT_M) : (int)((m - i0 + 1) / 2);
        if (i0 >= split && m - i0 <= 4)
            rows = (int)(m - i0);
        starts[tiles] = i0;
        /* the span of the other dimension this tile needs: keys (n for S and dP, k for dQ) or rows (k) */
        if (rg && rg->along)
            bt_span(rg, i0, rows, mode == BT_ACC ? kdim : n, spans + 2 * tiles, spans + 2 * tiles + 1);
        else {
            spans[2 * tiles] = 0;
            spans[2 * tiles + 1] = mode == BT_ACC ? kdim : n;
        }
        i0 += rows;
    }
    starts[tiles] = m;
    for (Py_ssize_t k0 = 0; k0 < kdim; k0 += kc) {
        Py_ssize_t kn = kdim - k0 < kc ? kdim - k0 : kc;
        for (Py_ssize_t j0 = 0; j0 < n; j0 += 16) {
            int nv = n - j0 >= 16 ? 2 : 1;
            const float *panel = b + k0 * ldb + j0;
            Py_ssize_t ldp = ldb;
            if (pack) {
                ldp = 8 * nv;
                for (Py_ssize_t k = 0; k < kn; k++)
                    for (Py_ssize_t e = 0; e < ldp; e++)
                        pack[k * ldp + e] = panel[k * ldb + e];
                panel = pack;
            }
            for (int t = 0; t < tiles; t++) {
                Py_ssize_t i0 = starts[t], f = spans[2 * t], e = spans[2 * t + 1];
                int rows = (int)(starts[t + 1] - i0);
                float *ct = c + i0 * ldc + j0;
                if (mode == BT_ACC) {   /* only the steps k0 … k0+kn−1 inside the tile's span */
                    Py_ssize_t from = f > k0 ? f : k0, to = e < k0 + kn ? e : k0 + kn;
                    if (to > from)
                        bt_table[mode][nv - 1][rows - 1](a + i0 * sa + from * sp, sa, sp, panel + (from - k0) * ldp,
                                                         ldp, to - from, ct, ldc, NULL, NULL, scale);
                } else if (j0 < e && j0 + 8 * nv > f) {
                    bt_table[mode][nv - 1][rows - 1](a + i0 * sa + k0 * sp, sa, sp, panel, ldp, kn, ct, ldc,
                                                     rowv ? rowv + i0 : NULL, p ? p + i0 * ldc + j0 : NULL, scale);
                } else if (mode == BT_DS) {   /* no row of the tile sees these keys: dS = 0 */
                    for (int u = 0; u < rows; u++)
                        memset(ct + u * ldc, 0, (size_t)(8 * nv) * sizeof(float));
                }
            }
        }
    }
}
#endif

/* ------------------------------------------------------------------------ one block pair */
struct bw_head {          /* one query head against one key/value head */
    const float *q;       /* (Tq, dk) */
    const float *dout;    /* (Tq, dv) */
    const float *lse;     /* (Tq,) */
    const float *delta;   /* (Tq,) */
    float *dq;            /* (Tq, dk): this task's part */
    const float *k;       /* (Tk, dk) */
    const float *v;       /* (Tk, dv) */
    float *dk;            /* (Tk, dk) */
    float *dv;            /* (Tk, dv) */
    const float *rel;     /* relative bias: score += rel[kv − q] (rel points at kv − q = 0 of the
                           * head's row of the table, Tq − 1 entries before it, Tk − 1 after), or NULL */
};

struct bw_shape {
    Py_ssize_t dk, dv, bq, bk;
    float scale;
    const int64_t *rlo, *rhi;   /* (Tq,): row i sees keys rlo[i] <= j < rhi[i] */
    float *s, *dp, *th;         /* scratch, (group·bq, ld) each (th: soft-cap's tanh) */
    Py_ssize_t ld;              /* the scratch blocks' row stride: bk, or bk rounded up to 16 (tiles) */
    int tiled;                  /* the AVX2 register tiles (bt_gemm) instead of BLAS */
    float *kt, *vt;             /* tiles: the key block's Kᵀ (dk × ld) and Vᵀ (dv × ld), zero past its keys */
    float *pk;                  /* tiles: BT_KC × 16 floats, bt_gemm's packed panel */
    int width;
    int score_kind;             /* SCORE_PLAIN, SCORE_RELATIVE, SCORE_SOFT_CAP */
    float cap;
};


/* Query rows i0 … i0+rows−1 of one head against keys j0 … j0+cols−1: the steps in the file's comment.
 * full: every row sees every key of the block (no range to apply). */
static void block_pair(const struct bw_head *h, const struct bw_shape *sh, Py_ssize_t i0, Py_ssize_t rows,
                       Py_ssize_t j0, Py_ssize_t cols, int full)
{
    Py_ssize_t dk = sh->dk, dv = sh->dv, ld = sh->ld;
    float *s = sh->s, *dp = sh->dp;
    const float *q = h->q + i0 * dk, *dout = h->dout + i0 * dv;
    const float *k = h->k + j0 * dk, *v = h->v + j0 * dv;
    int plain = sh->score_kind == SCORE_PLAIN;
#ifdef QKV_X86
    /* tiles: the cols of S and dP rounded up to 16 (≤ ld) are computed against the zero-padded
     * panels; the columns past `cols` are never read (the products that read P and dS stop at cols) */
    const int tiled = sh->tiled;
    const Py_ssize_t wide = (cols + 15) / 16 * 16;
    /* a pair whose rows see only part of its keys: the tiles skip what is 0 (causal's diagonal
     * blocks: a quarter of S and dP, and of dV, dK, dQ's steps, in a 256 × 128 pair) */
    struct bt_ranges rg_rows = {BT_ALONG_ROWS, sh->rlo + i0, sh->rhi + i0, j0, rows};
    struct bt_ranges rg_keys = {BT_ALONG_KEYS, sh->rlo + i0, sh->rhi + i0, j0, rows};
    const struct bt_ranges *along_rows = full ? NULL : &rg_rows, *along_keys = full ? NULL : &rg_keys;
#else
    const int tiled = 0;
#endif
    /* S = scale·Q·Kᵀ, then the score function: a relative bias s + bias_h[kv − q] (ALiBi, T5's
     * buckets; derivative 1), or soft-cap cap·tanh(s / cap) (derivative 1 − tanh², kept in th for dS).
     * Tiles with no score function: P = exp(S − lse) straight from the registers. */
#ifdef QKV_X86
    if (tiled)
        bt_gemm(q, dk, 1, sh->kt, ld, dk, s, ld, rows, wide, plain ? BT_EXP : BT_SCALE, h->lse + i0, NULL, sh->scale,
                NULL, plain ? along_rows : NULL);
    else
#endif
        gemm(0, 1, rows, cols, dk, sh->scale, q, dk, k, dk, 0.0f, s, ld);
    if (sh->score_kind == SCORE_RELATIVE) {
        for (Py_ssize_t r = 0; r < rows; r++) {
            float *row = s + r * ld;
            const float *bias = h->rel + (j0 - (i0 + r));
            for (Py_ssize_t c = 0; c < cols; c++)
                row[c] += bias[c];
        }
    } else if (sh->score_kind == SCORE_SOFT_CAP) {   /* the forward's own function (same weights) */
        for (Py_ssize_t r = 0; r < rows; r++)
            qkv_soft_cap_row(s + r * ld, sh->th + r * ld, cols, sh->cap, sh->width);
    }
    /* P = exp(S − lse) on each row's key range, 0 elsewhere (tiles, plain: exp taken already; only
     * the zeros are written) */
    int exp_done = tiled && plain;
    for (Py_ssize_t r = 0; r < rows; r++) {
        float *row = s + r * ld;
        float lse = h->lse[i0 + r];
        Py_ssize_t lo = 0, hi = cols;
        if (!full) {
            int64_t a = sh->rlo[i0 + r] - j0, z = sh->rhi[i0 + r] - j0;
            lo = a < 0 ? 0 : (a > cols ? cols : (Py_ssize_t)a);
            hi = z < lo ? lo : (z > cols ? cols : (Py_ssize_t)z);
        }
        if (!(lse > -INFINITY))   /* a row with no allowed key (lse = −inf): no weight anywhere */
            lo = hi = 0;
        if (lo > 0)
            memset(row, 0, (size_t)lo * sizeof(float));
        if (hi > lo && !exp_done)
            exp_span(row, lo, hi, lse, sh->width);
        if (hi < cols)
            memset(row + hi, 0, (size_t)(cols - hi) * sizeof(float));
    }
#ifdef QKV_X86
    if (tiled) {
        /* dV += Pᵀ·dO; dS = scale·P ∘ (dO·Vᵀ − δ) from the registers; dK += dSᵀ·Q; dQ += dS·K */
        bt_gemm(s, 1, ld, dout, dv, rows, h->dv + j0 * dv, dv, cols, dv, BT_ACC, NULL, NULL, 1.0f, sh->pk, along_keys);
        bt_gemm(dout, dv, 1, sh->vt, ld, dv, dp, ld, rows, wide, BT_DS, h->delta + i0, s, sh->scale, NULL,
                along_rows);
        if (sh->score_kind == SCORE_SOFT_CAP)
            cap_derivative(dp, sh->th, ld, rows, cols, sh->width);
        bt_gemm(dp, 1, ld, q, dk, rows, h->dk + j0 * dk, dk, cols, dk, BT_ACC, NULL, NULL, 1.0f, sh->pk, along_keys);
        bt_gemm(dp, ld, 1, k, dk, cols, h->dq + i0 * dk, dk, rows, dk, BT_ACC, NULL, NULL, 1.0f, sh->pk, along_rows);
        return;
    }
#endif
    /* dV += Pᵀ·dO */
    gemm(1, 0, cols, dv, rows, 1.0f, s, ld, dout, dv, 1.0f, h->dv + j0 * dv, dv);
    /* dP = dO·Vᵀ, then dS = P ∘ (dP − δ) in place of dP */
    gemm(0, 1, rows, cols, dv, 1.0f, dout, dv, v, dv, 0.0f, dp, ld);
    ds_rows(s, dp, ld, rows, cols, h->delta + i0, sh->width);
    if (sh->score_kind == SCORE_SOFT_CAP)   /* through the cap: ∂(cap·tanh(s/cap))/∂s = 1 − tanh² */
        cap_derivative(dp, sh->th, ld, rows, cols, sh->width);
    /* dK += scale·dSᵀ·Q; dQ += scale·dS·K */
    gemm(1, 0, cols, dk, rows, sh->scale, dp, ld, q, dk, 1.0f, h->dk + j0 * dk, dk);
    gemm(0, 0, rows, dk, cols, sh->scale, dp, ld, k, dk, 1.0f, h->dq + i0 * dk, dk);
}

/* Kᵀ (or Vᵀ) of keys j0 … j0+cols−1 into out (d × ld), zero for columns cols … ld−1. */
static void pack_transposed(const float *x, Py_ssize_t d, Py_ssize_t cols, Py_ssize_t ld, float *out)
{
    for (Py_ssize_t e = 0; e < d; e++) {
        float *o = out + e * ld;
        for (Py_ssize_t c = 0; c < cols; c++)
            o[c] = x[c * d + e];
        for (Py_ssize_t c = cols; c < ld; c++)
            o[c] = 0.0f;
    }
}

/* ------------------------------------------------------------------------ the entry point */
const char qkv_backward_many_doc[] =
"backward_many(q, k, v, dout, lse, delta, rows, dq, dk, dv, tasks, pairs, offsets, counter,\n"
"              block_q, block_k, scale, budget=0, score_kind=0, table=None, cap=1, width=0, part=-1,\n"
"              group=1, tile=-1) -> bool\n\n"
"Runs tasks (int64 (n, 4): kv head g, first key block, end key block, dq part) until none is\n"
"left, taking the next from counter[0] (int64 (1,), shared by the threads calling at once).\n"
"For each key block b of a task (keys b·block_k … min((b+1)·block_k, Tk) − 1), dk[g] and dv[g]\n"
"rows of that block are set to the block's gradients, summed over the query heads\n"
"g·G … g·G + G − 1 (G = Nq / Nk) and the query blocks pairs[offsets[b]:offsets[b+1], 0]\n"
"(pairs int64 (m, 2): query block, 1 when every row of it sees every key of the block);\n"
"dq[part·Nq + head] gets the blocks' dQ added. C-contiguous float32: q (Nq, Tq, Dk), k (Nk, Tk, Dk),\n"
"v (Nk, Tk, Dv), dout (Nq, Tq, Dv), lse and delta (Nq, Tq) (delta = rowsum(dout ∘ out) − dlse),\n"
"dq (parts·Nq, Tq, Dk) zeroed by the caller, dk (Nk, Tk, Dk), dv (Nk, Tk, Dv); rows int64 (2, Tq):\n"
"row i sees keys rows[0, i] <= j < rows[1, i]. Rows with lse = −inf get no gradient. The GIL is\n"
"released while tasks run. budget > 0: take no new task after that many seconds. score_kind 1:\n"
"a relative bias, score + table[head, kv − q + Tq − 1] (table float32 (Nq, Tq + Tk − 1): ALiBi,\n"
"T5's buckets); 2: soft-cap, cap·tanh(score / cap)\n"
"(lse is then the forward's of the modified scores). Returns True\n"
"while tasks are left. width: the vector loops (0: the widest the CPU has; 1, 8 or 16 at most\n"
"that: tests). part >= 0: every task's dQ goes to dq[part·Nq + head] instead of its own column (each\n"
"thread its own part, summed by the caller: tasks of any size, no two threads adding to one row).\n"
"group: up to that many consecutive query blocks of a key block computed as one taller block\n"
"(group·block_q rows: fewer, larger sgemm; scratch 3·group·block_q·block_k floats per thread).\n"
"tile: the five products of a block pair in AVX2+FMA register tiles instead of sgemm (1), in sgemm (0),\n"
"or −1: the tiles where they serve (vector loops of width 8 — an AVX2+FMA CPU without AVX-512, or\n"
"width=8 — and Dk, Dv multiples of 8), sgemm otherwise. tile=1 where they do not serve: ValueError.\n"
"Needs set_sgemm first.";

PyObject *qkv_backward_many(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"q", "k", "v", "dout", "lse", "delta", "rows", "dq", "dk", "dv", "tasks", "pairs",
                             "offsets", "counter", "block_q", "block_k", "scale", "budget", "score_kind", "table", "cap",
                             "width", "part", "group", "tile", NULL};
    PyObject *o_q, *o_k, *o_v, *o_do, *o_lse, *o_delta, *o_rows, *o_dq, *o_dk, *o_dv, *o_tasks, *o_pairs, *o_off,
        *o_counter;
    Py_ssize_t bq, bk;
    float scale;
    double budget = 0.0;
    int score_kind = SCORE_PLAIN;
    PyObject *o_table = Py_None;
    float cap = 1.0f;
    int width = 0;
    Py_ssize_t own_part = -1, group = 1;
    int tile = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOOOOOOOOOOnnf|diOfinni", kwlist, &o_q, &o_k, &o_v, &o_do,
                                     &o_lse, &o_delta, &o_rows, &o_dq, &o_dk, &o_dv, &o_tasks, &o_pairs, &o_off,
                                     &o_counter, &bq, &bk, &scale, &budget, &score_kind, &o_table, &cap, &width,
                                     &own_part, &group, &tile))
        return NULL;
    if (qkv_check_width(width) < 0)
        return NULL;
    if (qkv_sgemm_address == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "backward_many needs a BLAS sgemm: call set_sgemm first");
        return NULL;
    }
    Py_buffer vq, vk, vv, vdo, vlse, vdel, vrows, vdq, vdk, vdv, vt, vp, voff, vc, vsl;
    Py_buffer *views[15];
    int held = 0;
    PyObject *result = NULL;
#define HOLD(call, view) do { if ((call) < 0) goto done; views[held++] = (view); } while (0)
    HOLD(qkv_get_f32_contiguous(o_q, &vq, 0, 3, "q"), &vq);
    HOLD(qkv_get_f32_contiguous(o_k, &vk, 0, 3, "k"), &vk);
    HOLD(qkv_get_f32_contiguous(o_v, &vv, 0, 3, "v"), &vv);
    HOLD(qkv_get_f32_contiguous(o_do, &vdo, 0, 3, "dout"), &vdo);
    HOLD(qkv_get_f32_contiguous(o_lse, &vlse, 0, 2, "lse"), &vlse);
    HOLD(qkv_get_f32_contiguous(o_delta, &vdel, 0, 2, "delta"), &vdel);
    HOLD(qkv_get_int64(o_rows, &vrows, 0, vq.shape[1], "rows"), &vrows);
    HOLD(qkv_get_f32_contiguous(o_dq, &vdq, 1, 3, "dq"), &vdq);
    HOLD(qkv_get_f32_contiguous(o_dk, &vdk, 1, 3, "dk"), &vdk);
    HOLD(qkv_get_f32_contiguous(o_dv, &vdv, 1, 3, "dv"), &vdv);
    HOLD(qkv_get_int64(o_tasks, &vt, 0, 4, "tasks"), &vt);
    HOLD(qkv_get_int64(o_pairs, &vp, 0, 2, "pairs"), &vp);
    HOLD(qkv_get_int64(o_off, &voff, 0, 0, "offsets"), &voff);
    HOLD(qkv_get_int64(o_counter, &vc, 1, 0, "counter"), &vc);
    Py_ssize_t nq = vq.shape[0], tq = vq.shape[1], dk = vq.shape[2];
    Py_ssize_t nk = vk.shape[0], tk = vk.shape[1], dv = vv.shape[2];
    if (nk < 1 || nq % nk || vk.shape[2] != dk || vv.shape[0] != nk || vv.shape[1] != tk || vdo.shape[0] != nq ||
        vdo.shape[1] != tq || vdo.shape[2] != dv || vlse.shape[0] != nq || vlse.shape[1] != tq ||
        vdel.shape[0] != nq || vdel.shape[1] != tq || vrows.shape[0] != 2 || vdq.shape[0] < nq ||
        vdq.shape[0] % nq || vdq.shape[1] != tq || vdq.shape[2] != dk || vdk.shape[0] != nk || vdk.shape[1] != tk ||
        vdk.shape[2] != dk || vdv.shape[0] != nk || vdv.shape[1] != tk || vdv.shape[2] != dv || dk < 1 || dv < 1) {
        PyErr_SetString(PyExc_ValueError, "backward_many: the arrays' shapes do not agree (see the docstring)");
        goto done;
    }
    const float *table = NULL;
    if (score_kind == SCORE_RELATIVE) {
        HOLD(qkv_get_f32_contiguous(o_table, &vsl, 0, 2, "table"), &vsl);
        if (vsl.shape[0] != nq || vsl.shape[1] != tq + tk - 1) {
            PyErr_Format(PyExc_ValueError, "table must have shape (%zd, %zd): one row per query head, Tq + Tk − 1 "
                         "relative positions", nq, tq + tk - 1);
            goto done;
        }
        table = vsl.buf;
    } else if (score_kind == SCORE_SOFT_CAP) {
        if (!(cap > 0.0f) || !isfinite(cap)) {
            PyErr_SetString(PyExc_ValueError, "cap must be a positive finite number");
            goto done;
        }
    } else if (score_kind != SCORE_PLAIN) {
        PyErr_SetString(PyExc_ValueError, "score_kind must be 0 (none), 1 (relative bias) or 2 (soft-cap)");
        goto done;
    }
    if (bq < 1 || bk < 1 || vc.shape[0] < 1 || group < 1 || group > 64) {
        PyErr_SetString(PyExc_ValueError, "backward_many: block sizes must be positive, group 1 to 64 and counter "
                        "hold one value");
        goto done;
    }
    Py_ssize_t n_kb = (tk + bk - 1) / bk, n_qb = (tq + bq - 1) / bq, parts = vdq.shape[0] / nq;
    Py_ssize_t n_tasks = vt.shape[0], n_pairs = vp.shape[0];
    const int64_t *tasks = vt.buf, *pairs = vp.buf, *offsets = voff.buf;
    if (voff.shape[0] != n_kb + 1 || offsets[0] != 0 || offsets[n_kb] != n_pairs) {
        PyErr_Format(PyExc_ValueError, "offsets must have %zd entries, from 0 to the %zd pairs", n_kb + 1, n_pairs);
        goto done;
    }
    for (Py_ssize_t b = 0; b < n_kb; b++)
        if (offsets[b + 1] < offsets[b]) {
            PyErr_SetString(PyExc_ValueError, "offsets must not decrease");
            goto done;
        }
    for (Py_ssize_t p = 0; p < n_pairs; p++)
        if (pairs[2 * p] < 0 || pairs[2 * p] >= n_qb) {
            PyErr_Format(PyExc_ValueError, "pair %zd names query block %lld; there are %zd", p,
                         (long long)pairs[2 * p], n_qb);
            goto done;
        }
    if (own_part < -1 || own_part >= parts) {
        PyErr_Format(PyExc_ValueError, "part %zd is out of range: dq holds %zd parts", own_part, parts);
        goto done;
    }
    for (Py_ssize_t i = 0; i < n_tasks; i++) {
        const int64_t *t = tasks + 4 * i;
        if (t[0] < 0 || t[0] >= nk || t[1] < 0 || t[2] < t[1] || t[2] > n_kb || t[3] < 0 || t[3] >= parts) {
            PyErr_Format(PyExc_ValueError, "task %zd (%lld, %lld, %lld, %lld) is out of range", i, (long long)t[0],
                         (long long)t[1], (long long)t[2], (long long)t[3]);
            goto done;
        }
    }
    {
        const int64_t *rows = vrows.buf;
        int lanes = qkv_vector_width(width);
        /* the tiles: measured against OpenBLAS's sgemm on AVX2 (Zen 3) only, so AVX-512 CPUs keep
         * their (16-lane) BLAS unless asked */
        int servable = lanes >= 8 && dk % 8 == 0 && dv % 8 == 0;
#ifndef QKV_X86
        servable = 0;
#endif
        if (tile < -1 || tile > 1 || (tile == 1 && !servable)) {
            PyErr_SetString(PyExc_ValueError, tile == 1 ? "tile=1 needs AVX2+FMA vector loops (width 0 or 8 on such "
                            "a CPU) and Dk, Dv multiples of 8" : "tile must be -1, 0 or 1");
            goto done;
        }
        int tiled = tile == 1 || (tile == -1 && servable && lanes == 8);
        Py_ssize_t tall = group * bq;   /* rows of the tallest step */
        /* tiles: rows of an odd number of 64-byte lines, so a column of S, P or dS (read down by dV
         * and dK's products) spreads over all of L1's sets instead of 1/8 of them */
        Py_ssize_t ld = tiled ? ((bk + 15) / 16 | 1) * 16 : bk;
        Py_ssize_t extra = tiled ? (dk + dv) * ld + BT_KC * 16 : 0;
        /* 64-byte aligned (every block below starts a multiple of 16 floats in): the tiles' 32-byte
         * loads then never straddle two cache lines (16-byte aligned, half of them did: −20 %) */
        float *held_scratch = PyMem_RawMalloc((size_t)(3 * tall * ld + extra + 16) * sizeof(float));
        float *scratch = held_scratch ? (float *)(((uintptr_t)held_scratch + 63) & ~(uintptr_t)63) : NULL;
        if (scratch == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        struct bw_shape sh = {dk, dv, bq, bk, scale, rows, rows + tq, scratch, scratch + tall * ld,
                              scratch + 2 * tall * ld, ld, tiled, scratch + 3 * tall * ld,
                              scratch + 3 * tall * ld + dk * ld, scratch + 3 * tall * ld + (dk + dv) * ld,
                              tiled ? 8 : lanes, score_kind, cap};
        Py_ssize_t groups = nq / nk;
        int64_t *counter = vc.buf;
        double started = budget > 0 ? qkv_monotonic_seconds() : 0.0;
        Py_BEGIN_ALLOW_THREADS
        for (;;) {
            if (budget > 0 && qkv_monotonic_seconds() - started > budget)
                break;
            int64_t i = __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
            if (i >= n_tasks)
                break;
            const int64_t *t = tasks + 4 * i;
            Py_ssize_t g = (Py_ssize_t)t[0], part = own_part >= 0 ? own_part : (Py_ssize_t)t[3];
            float *dk_g = (float *)vdk.buf + g * tk * dk, *dv_g = (float *)vdv.buf + g * tk * dv;
            for (int64_t b = t[1]; b < t[2]; b++) {
                Py_ssize_t j0 = (Py_ssize_t)b * bk, cols = tk - j0 < bk ? tk - j0 : bk;
                memset(dk_g + j0 * dk, 0, (size_t)(cols * dk) * sizeof(float));
                memset(dv_g + j0 * dv, 0, (size_t)(cols * dv) * sizeof(float));
                if (tiled) {   /* Kᵀ and Vᵀ of the block, once for all its query blocks and heads */
                    pack_transposed((const float *)vk.buf + (g * tk + j0) * dk, dk, cols, ld, sh.kt);
                    pack_transposed((const float *)vv.buf + (g * tk + j0) * dv, dv, cols, ld, sh.vt);
                }
                for (Py_ssize_t hh = 0; hh < groups; hh++) {
                    Py_ssize_t head = g * groups + hh;
                    struct bw_head h = {(const float *)vq.buf + head * tq * dk, (const float *)vdo.buf + head * tq * dv,
                                        (const float *)vlse.buf + head * tq, (const float *)vdel.buf + head * tq,
                                        (float *)vdq.buf + (part * nq + head) * tq * dk,
                                        (const float *)vk.buf + g * tk * dk, (const float *)vv.buf + g * tk * dv,
                                        dk_g, dv_g, table ? table + head * (tq + tk - 1) + (tq - 1) : NULL};
                    /* up to `group` consecutive query blocks as one taller block: fewer, larger sgemm */
                    for (int64_t p = offsets[b]; p < offsets[b + 1];) {
                        int64_t first = pairs[2 * p], n = 1;
                        int full = pairs[2 * p + 1] != 0;
                        while (n < group && p + n < offsets[b + 1] && pairs[2 * (p + n)] == first + n) {
                            full = full && pairs[2 * (p + n) + 1] != 0;
                            n++;
                        }
                        Py_ssize_t i0 = (Py_ssize_t)first * bq, i1 = (Py_ssize_t)(first + n) * bq;
                        block_pair(&h, &sh, i0, (i1 < tq ? i1 : tq) - i0, j0, cols, full);
                        p += n;
                    }
                }
            }
        }
        Py_END_ALLOW_THREADS
        PyMem_RawFree(held_scratch);
        result = PyBool_FromLong(__atomic_load_n(counter, __ATOMIC_RELAXED) < n_tasks);
    }
done:
#undef HOLD
    while (held > 0)
        PyBuffer_Release(views[--held]);
    return result;
}
