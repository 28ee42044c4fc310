/* qkv.kernels._fused: the blocked kernel's C loops.
 *
 * - softmax_rows / softmax_block: the softmax step (steps 3-5 of blocked.py) in one pass per row:
 *   the row max, the lazy reference moved exactly as blocked.py's NumPy path does (see _HEADROOM
 *   there), then, while the row is still in L1, P = exp(S - ref) in place and its sum into l.
 * - flash_rows: one query block's whole walk over its key blocks (both products in NumPy's own
 *   BLAS, or tile_block's AVX-512 / AVX2 register tiles from _tile.h); flash_many: every task of a call,
 *   taken from a shared counter by each of the kernel's threads. See blocked.py for the routes.
 * - gelu, absmax, exp: the activation's fast path, the values' check, the exponential for tests
 *   (absmax_at: the same pass at a tensor's address).
 *
 * The exponential (qkv_exp16 / qkv_exp8 / qkv_exp1) is Cephes' expf polynomial with a
 * floor-based range reduction: n = floor(x·log2 e), r = x − (n + ½)·ln 2 ∈ [−½ln 2, ½ln 2), and
 * exp(x) = 2^n · √2·e^r with √2 folded into the polynomial's coefficients. x is clamped to
 * [−88, 89] first, so that 2^n is built from exponent bits with no blends:
 *   x < ln(FLT_MIN) ≈ −87.34 (and −inf) → n ≤ −127 → exponent bits 0 → exactly 0 (no denormals:
 *     np.exp returns values below 1.2e-38 there; absolute error < 1.2e-38),
 *   x > ln(FLT_MAX) ≈ 88.72 (and +inf) → n = 128 → exponent bits all ones → +inf,
 *   NaN → NaN.
 * Measured against float64 np.exp (tests/test_fused.py): ≤ 2 float32 ulps relative over
 * [−87.3, 88.7].
 *
 * Portable: compiled without -march; the AVX-512 and AVX2+FMA loops are target("avx512f") and
 * target("avx2,fma") functions chosen at run time with __builtin_cpu_supports (vector_width), the
 * scalar loops (same polynomial) are the fallback. The GIL is released around every loop so the
 * kernel's worker threads run in parallel.
 */
#include "_kernel.h"   /* what this file shares with _backward.c (one extension, one module table) */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

double qkv_monotonic_seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

#ifdef QKV_X86         /* (_exp.h: GCC-compatible compiler on x86) */
#define FUSED_X86 1
#endif


/* One row: the max over `cols` scores (NaNs ignored unless all are NaN). */
static float row_max_scalar(const float *row, Py_ssize_t cols)
{
    float m = -INFINITY;
    int nan = 0;
    for (Py_ssize_t j = 0; j < cols; j++) {
        if (row[j] > m)
            m = row[j];
        else if (row[j] != row[j])
            nan = 1;
    }
    return (nan && m == -INFINITY) ? NAN : m;
}

static float row_exp_scalar_lim(float *row, Py_ssize_t cols, float ref, Py_ssize_t lim)
{
    float sum = 0.0f;
    Py_ssize_t j = 0;
    for (; j < cols && j < lim; j++) {
        float e = qkv_exp1(row[j] - ref);
        row[j] = e;
        sum += e;
    }
    if (j < cols)
        memset(row + j, 0, (size_t)(cols - j) * sizeof(float));
    return sum;
}

static float row_exp_scalar(float *row, Py_ssize_t cols, float ref)
{
    float sum = 0.0f;
    for (Py_ssize_t j = 0; j < cols; j++) {
        float e = qkv_exp1(row[j] - ref);
        row[j] = e;
        sum += e;
    }
    return sum;
}

#ifdef FUSED_X86

__attribute__((target("avx2,fma"))) static float hmax8(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

__attribute__((target("avx2,fma"))) static float hsum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

__attribute__((target("avx2,fma"))) static float row_max_avx2(const float *row, Py_ssize_t cols)
{
    __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0;
    __m256 nan = _mm256_setzero_ps();
    Py_ssize_t j = 0;
    for (; j + 16 <= cols; j += 16) {
        __m256 a = _mm256_loadu_ps(row + j), b = _mm256_loadu_ps(row + j + 8);
        m0 = _mm256_max_ps(m0, a);
        m1 = _mm256_max_ps(m1, b);
        nan = _mm256_or_ps(nan, _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
    }
    float m = hmax8(_mm256_max_ps(m0, m1));
    int any_nan = _mm256_movemask_ps(nan) != 0;
    for (; j < cols; j++) {
        if (row[j] > m)
            m = row[j];
        else if (row[j] != row[j])
            any_nan = 1;
    }
    return (any_nan && m == -INFINITY) ? NAN : m;
}

__attribute__((target("avx2,fma"))) static float row_exp_avx2(float *row, Py_ssize_t cols, float ref)
{
    __m256 r8 = _mm256_set1_ps(ref);
    __m256 s0 = _mm256_setzero_ps();   /* one vector per step: two spill (16 ymm registers) */
    Py_ssize_t j = 0;
    for (; j + 8 <= cols; j += 8) {
        __m256 a = qkv_exp8(_mm256_sub_ps(_mm256_loadu_ps(row + j), r8));
        _mm256_storeu_ps(row + j, a);
        s0 = _mm256_add_ps(s0, a);
    }
    float sum = hsum8(s0);
    for (; j < cols; j++) {
        float e = qkv_exp1(row[j] - ref);
        row[j] = e;
        sum += e;
    }
    return sum;
}

/* row_exp_avx2 for a row whose columns lim … cols−1 are masked (causal): those become 0 and take
 * no exp; the sum adds the same lanes in the same order as row_exp_avx2 on a row holding −inf
 * there (exp(−inf) = +0 adds nothing), so the result is bit for bit the same. */
__attribute__((target("avx2,fma"))) static float row_exp_avx2_lim(float *row, Py_ssize_t cols, float ref,
                                                                 Py_ssize_t lim)
{
    __m256 r8 = _mm256_set1_ps(ref);
    __m256 s0 = _mm256_setzero_ps();
    Py_ssize_t vend = cols - cols % 8, j = 0;
    for (; j + 8 <= lim && j + 8 <= cols; j += 8) {
        __m256 a = qkv_exp8(_mm256_sub_ps(_mm256_loadu_ps(row + j), r8));
        _mm256_storeu_ps(row + j, a);
        s0 = _mm256_add_ps(s0, a);
    }
    if (j < lim && j + 8 <= cols) {   /* the vector holding the limit: −inf past it */
        float tmp[8];
        for (int c = 0; c < 8; c++)
            tmp[c] = j + c < lim ? row[j + c] : -INFINITY;
        __m256 a = qkv_exp8(_mm256_sub_ps(_mm256_loadu_ps(tmp), r8));
        _mm256_storeu_ps(row + j, a);
        s0 = _mm256_add_ps(s0, a);
        j += 8;
    }
    if (j < vend)
        memset(row + j, 0, (size_t)(vend - j) * sizeof(float));
    float sum = hsum8(s0);
    for (j = vend; j < cols; j++) {
        if (j < lim) {
            float e = qkv_exp1(row[j] - ref);
            row[j] = e;
            sum += e;
        } else {
            row[j] = 0.0f;
        }
    }
    return sum;
}

__attribute__((target("avx2,fma"))) static void exp_avx2(const float *src, float *dst, Py_ssize_t n)
{
    Py_ssize_t j = 0;
    for (; j + 8 <= n; j += 8)
        _mm256_storeu_ps(dst + j, qkv_exp8(_mm256_loadu_ps(src + j)));
    for (; j < n; j++)
        dst[j] = qkv_exp1(src[j]);
}

/* ------------------------------------------------------------------------ AVX-512 (16 lanes)
 * The same polynomial and range reduction as qkv_exp8, on 16 lanes; tails use lane masks
 * instead of a scalar loop. Chosen at run time where the CPU has AVX-512F. */

static inline uint16_t lanes(Py_ssize_t n)   /* the first n (< 16) lanes */
{
    return (uint16_t)((1u << n) - 1u);
}

/* The row max of the first `cols` scores; NaNs ignored unless every score is NaN. */
__attribute__((target("avx512f"))) static float row_max_avx512(const float *row, Py_ssize_t cols)
{
    __m512 m0 = _mm512_set1_ps(-INFINITY), m1 = m0;
    __mmask16 nan = 0;
    Py_ssize_t j = 0;
    for (; j + 32 <= cols; j += 32) {
        __m512 a = _mm512_loadu_ps(row + j), b = _mm512_loadu_ps(row + j + 16);
        m0 = _mm512_max_ps(a, m0);   /* NaN in a: m0 (the second operand) kept */
        m1 = _mm512_max_ps(b, m1);
        nan |= _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q);
    }
    for (; j < cols; j += 16) {
        __mmask16 k = cols - j >= 16 ? (__mmask16)0xFFFF : lanes(cols - j);
        __m512 a = _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), k, row + j);
        m0 = _mm512_max_ps(a, m0);
        nan |= _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
    }
    float m = _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
    return (nan && m == -INFINITY) ? NAN : m;
}

/* row[j] = exp(row[j] − ref) for j < lim, 0 for lim ≤ j < cols; returns the sum. The lanes are
 * grouped the same way whatever lim is, so a row masked by lim sums to the same bits as the row
 * holding −inf there (exp(−inf) = +0 adds nothing). */
__attribute__((target("avx512f"))) static float row_exp_avx512(float *row, Py_ssize_t cols, float ref, Py_ssize_t lim)
{
    __m512 r16 = _mm512_set1_ps(ref);
    __m512 s0 = _mm512_setzero_ps();
    Py_ssize_t j = 0;
    for (; j + 16 <= lim; j += 16) {
        __m512 a = qkv_exp16(_mm512_sub_ps(_mm512_loadu_ps(row + j), r16));
        _mm512_storeu_ps(row + j, a);
        s0 = _mm512_add_ps(s0, a);
    }
    if (j < lim) {   /* the vector holding the limit (or the row's end) */
        __mmask16 keep = lanes(lim - j);
        __mmask16 inside = cols - j >= 16 ? (__mmask16)0xFFFF : lanes(cols - j);
        __m512 a = qkv_exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(keep, row + j), r16));
        a = _mm512_maskz_mov_ps(keep, a);
        _mm512_mask_storeu_ps(row + j, inside, a);
        s0 = _mm512_add_ps(s0, a);
        j += 16;
    }
    if (j < cols)
        memset(row + j, 0, (size_t)(cols - j) * sizeof(float));
    return _mm512_reduce_add_ps(s0);
}

__attribute__((target("avx512f"))) static void exp_avx512(const float *src, float *dst, Py_ssize_t n)
{
    Py_ssize_t j = 0;
    for (; j + 16 <= n; j += 16)
        _mm512_storeu_ps(dst + j, qkv_exp16(_mm512_loadu_ps(src + j)));
    if (j < n) {
        __mmask16 k = lanes(n - j);
        _mm512_mask_storeu_ps(dst + j, k, qkv_exp16(_mm512_maskz_loadu_ps(k, src + j)));
    }
}
#endif

static int cpu_avx2(void)
{
#ifdef FUSED_X86
    static int cached = -1;
    if (cached < 0) {
        __builtin_cpu_init();
        cached = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    return cached;
#else
    return 0;
#endif
}

static int cpu_avx512(void)
{
#ifdef FUSED_X86
    static int cached = -1;
    if (cached < 0) {
        __builtin_cpu_init();
        cached = __builtin_cpu_supports("avx512f") && cpu_avx2();
    }
    return cached;
#else
    return 0;
#endif
}

/* The widest vector loops the CPU has; every entry point takes a `width` argument (0: these; 1, 8,
 * 16: at most that, so that tests run every loop on this CPU: qkv_vector_width). */
static int have_avx2(void)
{
    return cpu_avx2();
}

static int have_avx512(void)
{
    return cpu_avx512();
}

/* ------------------------------------------------------------------------ the softmax step
 * For rows 0 … rows−1 of a float32 score block (row i at scores + i·stride): the reference rule
 * of blocked.py (see softmax_rows' docstring), P = exp(S − ref) in place, l = α·l + Σ P.
 * With have_limit, row i keeps only columns j < limit + i (causal). Returns 1 when some α ≠ 1. */
static int softmax_block(float *scores, Py_ssize_t stride, Py_ssize_t rows, Py_ssize_t cols, float *ref, float *l,
                         float *alpha, float *rmax, float headroom, int have_limit, Py_ssize_t limit, int have_start,
                         Py_ssize_t start, const int64_t *rlo, const int64_t *rhi, Py_ssize_t j0, int width)
{
    int moved = 0;
    for (Py_ssize_t i = 0; i < rows; i++) {
        float *row = scores + i * stride;
        float m;
        Py_ssize_t lim = cols;   /* columns lim … cols−1 are masked (causal, or a band's end) */
        if (have_limit) {
            lim = limit + i;
            lim = lim < 0 ? 0 : (lim > cols ? cols : lim);
        }
        Py_ssize_t lo = 0;       /* columns 0 … lo−1 are masked (a band's start) */
        if (have_start) {
            lo = start + i;
            lo = lo < 0 ? 0 : (lo > cols ? cols : lo);
        }
        if (rlo) {               /* row i keeps keys rlo[i] ≤ j < rhi[i] (absolute): columns j − j0 */
            int64_t a = rlo[i] - j0, z = rhi[i] - j0;
            a = a < 0 ? 0 : (a > cols ? cols : a);
            z = z < 0 ? 0 : (z > cols ? cols : z);
            if (a > lo)
                lo = (Py_ssize_t)a;
            if (z < lim)
                lim = (Py_ssize_t)z;
        }
        if (lo) {
            if (lim < lo)
                lim = lo;
            memset(row, 0, (size_t)lo * sizeof(float));
            row += lo;
        }
        Py_ssize_t n = cols - lo, nlim = lim - lo;
#ifdef FUSED_X86
        m = width >= 16 ? row_max_avx512(row, nlim) : width >= 8 ? row_max_avx2(row, nlim) : row_max_scalar(row, nlim);
#else
        m = row_max_scalar(row, nlim);
#endif
        if (rmax && (m > rmax[i] || m != m))
            rmax[i] = m;
        float a = 1.0f, d = m - ref[i];
        if (d > headroom) {
            a = qkv_exp1(-d);
            ref[i] = m;
            moved = 1;
        } else if (l[i] == 0.0f && d < -headroom && isfinite(d)) {
            ref[i] = m;
        }
        alpha[i] = a;
        float sum;
#ifdef FUSED_X86
        if (width >= 16)
            sum = row_exp_avx512(row, n, ref[i], nlim);
        else if (nlim < n)
            sum = width >= 8 ? row_exp_avx2_lim(row, n, ref[i], nlim) : row_exp_scalar_lim(row, n, ref[i], nlim);
        else
            sum = width >= 8 ? row_exp_avx2(row, n, ref[i]) : row_exp_scalar(row, n, ref[i]);
#else
        sum = nlim < n ? row_exp_scalar_lim(row, n, ref[i], nlim) : row_exp_scalar(row, n, ref[i]);
#endif
        l[i] = l[i] * a + sum;
    }
    return moved;
}

static int vector_width(void)
{
    return have_avx512() ? 16 : have_avx2() ? 8 : 1;
}

int qkv_vector_width(int requested)
{
    int w = vector_width();
    return requested <= 0 || w <= requested ? w : (requested >= 8 && w >= 8 ? 8 : 1);
}

int qkv_check_width(int requested)
{
    if (requested != 0 && requested != 1 && requested != 8 && requested != 16) {
        PyErr_Format(PyExc_ValueError, "width must be 0 (the widest loops the CPU has), 1, 8 or 16, got %d", requested);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------ buffer formats */
/* A buffer's item format without its byte-order prefix ('<', '=', '@'; "B" when the exporter gives none):
 * the one reading of it behind every buffer check in this file. */
static const char *item_format(const Py_buffer *view)
{
    const char *fmt = view->format ? view->format : "B";
    return (*fmt == '<' || *fmt == '=' || *fmt == '@') ? fmt + 1 : fmt;
}

static int is_float32(const Py_buffer *view)
{
    return view->itemsize == 4 && strcmp(item_format(view), "f") == 0;
}

static int is_16bit(const Py_buffer *view)   /* int16, uint16, float16 (bfloat16 is viewed as int16) */
{
    const char *fmt = item_format(view);
    return view->itemsize == 2 && (strcmp(fmt, "h") == 0 || strcmp(fmt, "H") == 0 || strcmp(fmt, "e") == 0);
}

static int is_int64(const Py_buffer *view)
{
    const char *fmt = item_format(view);
    return view->itemsize == 8 && (strcmp(fmt, "q") == 0 || strcmp(fmt, "l") == 0);
}

int qkv_get_f32_contiguous(PyObject *obj, Py_buffer *view, int writable, int ndim, const char *name)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    if (view->ndim != ndim || !is_float32(view)) {
        PyErr_Format(PyExc_ValueError, "%s must be a C-contiguous %s%d-D float32 array", name,
                     writable ? "writable " : "", ndim);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------ buffer helpers */
static int get_f32(PyObject *obj, Py_buffer *view, int ndim, const char *name)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_STRIDES | PyBUF_FORMAT | PyBUF_WRITABLE) < 0)
        return -1;
    if (view->ndim != ndim || !is_float32(view) ||
        view->strides[ndim - 1] != 4 || (ndim == 2 && view->strides[0] % 4)) {
        PyErr_Format(PyExc_ValueError, "%s must be a writable %d-D float32 array with contiguous rows", name, ndim);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(softmax_rows_doc,
"softmax_rows(scores, ref, row_sum, alpha, row_max, headroom, limit=None, width=0) -> bool\n\n"
"In place, for each row i of the float32 block scores (rows, cols), rows contiguous:\n"
"  m = max_j scores[i, j]; row_max[i] = max(row_max[i], m) unless row_max is None;\n"
"  if m - ref[i] > headroom: alpha[i] = exp(ref[i] - m), ref[i] = m      (reference moves up)\n"
"  elif row_sum[i] == 0 and -inf < m - ref[i] < -headroom: ref[i] = m   (down, nothing to rescale)\n"
"  otherwise alpha[i] = 1;\n"
"  scores[i] = exp(scores[i] - ref[i]); row_sum[i] = row_sum[i]*alpha[i] + sum_j scores[i, j].\n"
"ref, row_sum, alpha, row_max: float32 (rows,). Returns True when some alpha != 1 (the caller\n"
"must then rescale its accumulated output rows by alpha).\n\n"
"limit (optional int): causal masking in the same pass: row i keeps only columns j < limit + i;\n"
"the others are treated as -inf scores (they take no exp, become 0 and are not read), the same\n"
"result, bit for bit, as adding a 0/-inf band before the call (for finite scores).\n"
"width: the vector loops, 0 (the widest the CPU has) or at most 1, 8 or 16 (tests run each).");

static PyObject *softmax_rows(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"scores", "ref", "row_sum", "alpha", "row_max", "headroom", "limit", "width", NULL};
    PyObject *o_scores, *o_ref, *o_sum, *o_alpha, *o_max;
    float headroom;
    PyObject *o_limit = Py_None;
    int requested = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOf|Oi", kwlist, &o_scores, &o_ref, &o_sum, &o_alpha, &o_max,
                                     &headroom, &o_limit, &requested))
        return NULL;
    if (qkv_check_width(requested) < 0)
        return NULL;
    int have_limit = o_limit != Py_None;
    Py_ssize_t limit = 0;
    if (have_limit) {
        limit = PyNumber_AsSsize_t(o_limit, PyExc_OverflowError);
        if (limit == -1 && PyErr_Occurred())
            return NULL;
    }
    Py_buffer vs, vr, vl, va, vm;
    int have_max = o_max != Py_None;
    if (get_f32(o_scores, &vs, 2, "scores") < 0)
        return NULL;
    if (get_f32(o_ref, &vr, 1, "ref") < 0)
        goto fail_s;
    if (get_f32(o_sum, &vl, 1, "row_sum") < 0)
        goto fail_r;
    if (get_f32(o_alpha, &va, 1, "alpha") < 0)
        goto fail_l;
    if (have_max && get_f32(o_max, &vm, 1, "row_max") < 0)
        goto fail_a;
    Py_ssize_t rows = vs.shape[0], cols = vs.shape[1], stride = vs.strides[0] / 4;
    if (vr.shape[0] != rows || vl.shape[0] != rows || va.shape[0] != rows || (have_max && vm.shape[0] != rows)) {
        PyErr_Format(PyExc_ValueError, "ref, row_sum, alpha and row_max must have the block's %zd rows", rows);
        goto fail_m;
    }
    float *scores = vs.buf, *ref = vr.buf, *l = vl.buf, *alpha = va.buf, *rmax = have_max ? vm.buf : NULL;
    int moved, width = qkv_vector_width(requested);
    Py_BEGIN_ALLOW_THREADS
    moved = softmax_block(scores, stride, rows, cols, ref, l, alpha, rmax, headroom, have_limit, limit, 0, 0, NULL,
                          NULL, 0, width);
    Py_END_ALLOW_THREADS
    if (have_max)
        PyBuffer_Release(&vm);
    PyBuffer_Release(&va);
    PyBuffer_Release(&vl);
    PyBuffer_Release(&vr);
    PyBuffer_Release(&vs);
    return PyBool_FromLong(moved);
fail_m:
    if (have_max)
        PyBuffer_Release(&vm);
fail_a:
    PyBuffer_Release(&va);
fail_l:
    PyBuffer_Release(&vl);
fail_r:
    PyBuffer_Release(&vr);
fail_s:
    PyBuffer_Release(&vs);
    return NULL;
}

/* ------------------------------------------------------------------------ one query block in C
 * flash_rows walks one query block over its key blocks with no Python in between: for each key
 * block, S = Q·K_jᵀ (BLAS sgemm), the mask (−inf where not allowed), the softmax step above, the
 * rescaling of acc where a reference moved, and acc += P·V_j (sgemm with β = 1, no temporary).
 * The BLAS is NumPy's own: blocked.py finds its cblas_sgemm with ctypes and hands the address to
 * set_sgemm once (threadpoolctl holds it to one thread while the kernel's threads run). */
typedef void (*sgemm64_fn)(int, int, int, int64_t, int64_t, int64_t, float, const float *, int64_t, const float *,
                           int64_t, float, float *, int64_t);
typedef void (*sgemm32_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int, float,
                           float *, int);
void *qkv_sgemm_address = NULL;
static int sgemm_ilp64 = 0;
enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };

void qkv_gemm(int ta, int tb, Py_ssize_t m, Py_ssize_t n, Py_ssize_t k, float alpha, const float *a, Py_ssize_t lda,
              const float *b, Py_ssize_t ldb, float beta, float *c, Py_ssize_t ldc)
{
    if (sgemm_ilp64)
        ((sgemm64_fn)qkv_sgemm_address)(ROW_MAJOR, ta ? TRANS : NO_TRANS, tb ? TRANS : NO_TRANS, m, n, k, alpha, a,
                                        lda, b, ldb, beta, c, ldc);
    else
        ((sgemm32_fn)qkv_sgemm_address)(ROW_MAJOR, ta ? TRANS : NO_TRANS, tb ? TRANS : NO_TRANS, (int)m, (int)n,
                                        (int)k, alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
}

static void sgemm(int trans_b, Py_ssize_t m, Py_ssize_t n, Py_ssize_t k, const float *a, Py_ssize_t lda,
                  const float *b, Py_ssize_t ldb, float beta, float *c, Py_ssize_t ldc)
{
    qkv_gemm(0, trans_b, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
}

/* One query block's walk: its inputs and running state (see flash_rows), and one key block of it. */
struct flash_task {
    const float *q;          /* (rows, dk), scaled, row stride ldq */
    Py_ssize_t ldq;
    const float *k;          /* (Tk, dk), row stride ldk */
    Py_ssize_t ldk;
    const float *v;          /* (Tk, dv), row stride ldv */
    Py_ssize_t ldv;
    float *acc;              /* (rows, dv), row stride ldacc: Σ P·V so far, against ref */
    Py_ssize_t ldacc;
    Py_ssize_t rows, dk, dv;
    float *ref, *l, *alpha;  /* (rows,): the lazy reference, the row sums, scratch for α */
    float *rmax;             /* (rows,) running max, or NULL */
    float headroom;
    float *scores;           /* scratch, at least (rows, cols) of any block, row stride lds */
    Py_ssize_t lds;
    int width;               /* qkv_vector_width(the call's width): 16, 8 or 1 */
    int score_kind;          /* SCORE_PLAIN, SCORE_RELATIVE or SCORE_SOFT_CAP (below) */
    const float *rel;        /* SCORE_RELATIVE: the head's bias over relative positions; row r of the block,
                              * key j: rel[j − r + rel_offset] */
    Py_ssize_t rel_offset;
    float cap;               /* SCORE_SOFT_CAP: cap·tanh(s / cap) */
};


/* cap·tanh(s / cap) along a row, as cap·(1 − 2/(e^(2s/cap) + 1)) with the module's exponential
 * (tanhf one value at a time made soft-cap slower in C than in NumPy: 2.0 s against 1.2 s at
 * T = 2048, H = 8). Absolute error ≤ ~1e-7·cap against tanhf; e^(2s/cap) = inf gives cap, 0 gives −cap.
 * th (or NULL): also each tanh(s / cap), for the backward's derivative 1 − tanh². The forward and
 * the backward both call this one function, so the backward's recomputed weights are the forward's. */
static void soft_cap_row_scalar(float *row, float *th, Py_ssize_t cols, float cap)
{
    for (Py_ssize_t c = 0; c < cols; c++) {
        float t = tanhf(row[c] / cap);
        if (th)
            th[c] = t;
        row[c] = cap * t;
    }
}

#ifdef FUSED_X86
__attribute__((target("avx2,fma"))) static void soft_cap_row_avx2(float *row, float *th, Py_ssize_t cols, float cap)
{
    __m256 two_over = _mm256_set1_ps(2.0f / cap), one = _mm256_set1_ps(1.0f), two = _mm256_set1_ps(2.0f);
    __m256 c8 = _mm256_set1_ps(cap);
    Py_ssize_t c = 0;
    for (; c + 8 <= cols; c += 8) {
        __m256 e = qkv_exp8(_mm256_mul_ps(_mm256_loadu_ps(row + c), two_over));
        __m256 t = _mm256_sub_ps(one, _mm256_div_ps(two, _mm256_add_ps(e, one)));
        if (th)
            _mm256_storeu_ps(th + c, t);
        _mm256_storeu_ps(row + c, _mm256_mul_ps(c8, t));
    }
    soft_cap_row_scalar(row + c, th ? th + c : NULL, cols - c, cap);
}

__attribute__((target("avx512f"))) static void soft_cap_row_avx512(float *row, float *th, Py_ssize_t cols, float cap)
{
    __m512 two_over = _mm512_set1_ps(2.0f / cap), one = _mm512_set1_ps(1.0f), two = _mm512_set1_ps(2.0f);
    __m512 c16 = _mm512_set1_ps(cap);
    for (Py_ssize_t c = 0; c < cols; c += 16) {
        __mmask16 k = cols - c >= 16 ? (__mmask16)0xFFFF : lanes(cols - c);
        __m512 e = qkv_exp16(_mm512_mul_ps(_mm512_maskz_loadu_ps(k, row + c), two_over));
        __m512 t = _mm512_sub_ps(one, _mm512_div_ps(two, _mm512_add_ps(e, one)));
        if (th)
            _mm512_mask_storeu_ps(th + c, k, t);
        _mm512_mask_storeu_ps(row + c, k, _mm512_mul_ps(c16, t));
    }
}
#endif

void qkv_soft_cap_row(float *row, float *th, Py_ssize_t cols, float cap, int width)
{
#ifdef FUSED_X86
    if (width >= 16)
        soft_cap_row_avx512(row, th, cols, cap);
    else if (width >= 8)
        soft_cap_row_avx2(row, th, cols, cap);
    else
#endif
        soft_cap_row_scalar(row, th, cols, cap);
}

/* The score function on a block of scaled scores (rows × cols at row stride ld, keys j0 …). */
static void apply_score(const struct flash_task *t, float *scores, Py_ssize_t ld, Py_ssize_t rows, Py_ssize_t j0,
                        Py_ssize_t cols)
{
    if (t->score_kind == SCORE_RELATIVE) {
        for (Py_ssize_t r = 0; r < rows; r++) {
            float *row = scores + r * ld;
            const float *bias = t->rel + (j0 - r + t->rel_offset);
            for (Py_ssize_t c = 0; c < cols; c++)
                row[c] += bias[c];
        }
    } else if (t->score_kind == SCORE_SOFT_CAP) {
        for (Py_ssize_t r = 0; r < rows; r++)
            qkv_soft_cap_row(scores + r * ld, NULL, cols, t->cap, t->width);
    }
}

/* The tables Python hands flash_rows and flash_many: C-contiguous int64 rows, one struct per row
 * (the same columns are named in qkv/kernels/blocked.py: BLOCK_COLUMNS, TASK_COLUMNS).
 * block_row: keys j0:j1 of one key block; flags BLOCK_LIMIT (row i keeps only keys j0 + c with
 *   c < limit + i: the causal diagonal or a band's upper edge), BLOCK_START (only c >= start + i: a
 *   band's lower edge), BLOCK_RANGES (each row's own key range, from flash_many's ranges).
 * task_row (flash_many): rows i0:i1 of q[q_head], keys and values of k[kv_head], v[kv_head], the
 *   result into out[out_head], over the key blocks blocks[b0:b1]. */
enum { BLOCK_LIMIT = 1, BLOCK_START = 2, BLOCK_RANGES = 4 };
struct block_row { int64_t j0, j1, flags, limit, start; };
struct task_row { int64_t q_head, kv_head, out_head, i0, i1, b0, b1; };
_Static_assert(sizeof(struct block_row) == 5 * sizeof(int64_t), "block rows are 5 int64 columns");
_Static_assert(sizeof(struct task_row) == 7 * sizeof(int64_t), "task rows are 7 int64 columns");

struct flash_block {
    Py_ssize_t j0, cols;     /* keys j0 … j0 + cols − 1 */
    const char *mask;        /* NULL, or (rows, cols) bytes, row stride mstride: nonzero = not allowed */
    Py_ssize_t mstride;
    int have_limit;          /* causal: row i keeps only keys j0 + c with c < limit + i */
    Py_ssize_t limit;
    int have_start;          /* a band's start: row i keeps only keys j0 + c with c >= start + i */
    Py_ssize_t start;
    const int64_t *rlo, *rhi; /* NULL, or per row i of the task: keeps only keys rlo[i] <= j < rhi[i] */
};

/* Decoding (one or two query rows): S = q·k_jᵀ and acc += P·v_j as plain loops over k's and v's rows.
 * BLAS's sgemm packs all of k_j and v_j first for a one-row product, reading them twice or more:
 * measured 8.0 ms against 2.9 for the plain path (one query, 16,384 keys, 8 heads). */
#define SMALL_ROWS 2

static inline float dot_scalar(const float *a, const float *b, Py_ssize_t n)
{
    float s = 0.0f;
    for (Py_ssize_t d = 0; d < n; d++)
        s += a[d] * b[d];
    return s;
}

#ifdef FUSED_X86
__attribute__((target("avx512f"))) static void small_rows_avx512(const struct flash_task *t, Py_ssize_t j0,
                                                                 Py_ssize_t cols, int scores_pass)
{
    Py_ssize_t dk = t->dk, dv = t->dv;
    for (Py_ssize_t i = 0; i < t->rows; i++) {
        const float *q = t->q + i * t->ldq;
        float *s = t->scores + i * t->lds, *acc = t->acc + i * t->ldacc;
        if (scores_pass) {
            for (Py_ssize_t c = 0; c < cols; c++) {
                const float *k = t->k + (j0 + c) * t->ldk;
                __m512 sum = _mm512_setzero_ps();
                for (Py_ssize_t d = 0; d < dk; d += 16) {
                    __mmask16 m = dk - d >= 16 ? (__mmask16)0xFFFF : lanes(dk - d);
                    sum = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + d), _mm512_maskz_loadu_ps(m, k + d), sum);
                }
                s[c] = _mm512_reduce_add_ps(sum);
            }
        } else {
            for (Py_ssize_t d = 0; d < dv; d += 64) {   /* acc[d:d+64] += Σ_c P[c]·v_c[d:d+64] */
                __m512 a[4];
                __mmask16 m[4];
                for (int u = 0; u < 4; u++) {
                    Py_ssize_t at = d + 16 * u;
                    m[u] = at >= dv ? 0 : (dv - at >= 16 ? (__mmask16)0xFFFF : lanes(dv - at));
                    a[u] = _mm512_maskz_loadu_ps(m[u], acc + at);
                }
                for (Py_ssize_t c = 0; c < cols; c++) {
                    if (s[c] == 0.0f)
                        continue;   /* hidden keys (P = 0) are not read */
                    const float *v = t->v + (j0 + c) * t->ldv + d;
                    __m512 p = _mm512_set1_ps(s[c]);
                    for (int u = 0; u < 4; u++)
                        a[u] = _mm512_fmadd_ps(p, _mm512_maskz_loadu_ps(m[u], v + 16 * u), a[u]);
                }
                for (int u = 0; u < 4; u++)
                    _mm512_mask_storeu_ps(acc + d + 16 * u, m[u], a[u]);
            }
        }
    }
}
#endif

static void small_rows(const struct flash_task *t, Py_ssize_t j0, Py_ssize_t cols, int scores_pass)
{
#ifdef FUSED_X86
    if (t->width >= 16) {
        small_rows_avx512(t, j0, cols, scores_pass);
        return;
    }
#endif
    for (Py_ssize_t i = 0; i < t->rows; i++) {
        const float *q = t->q + i * t->ldq;
        float *s = t->scores + i * t->lds, *acc = t->acc + i * t->ldacc;
        for (Py_ssize_t c = 0; c < cols; c++) {
            if (scores_pass) {
                s[c] = dot_scalar(q, t->k + (j0 + c) * t->ldk, t->dk);
            } else if (s[c] != 0.0f) {
                const float *v = t->v + (j0 + c) * t->ldv;
                for (Py_ssize_t d = 0; d < t->dv; d++)
                    acc[d] += s[c] * v[d];
            }
        }
    }
}

/* One key block through BLAS: S = q·k_jᵀ, the mask, the softmax step, acc rescaled where a
 * reference moved, acc += P·v_j. (One or two rows: small_rows instead of BLAS.) */
static void flash_block_blas(const struct flash_task *t, const struct flash_block *b)
{
    Py_ssize_t rows = t->rows, cols = b->cols;
    float *scores = t->scores;
    int small = rows <= SMALL_ROWS;
    if (small)
        small_rows(t, b->j0, cols, 1);
    else
        sgemm(1, rows, cols, t->dk, t->q, t->ldq, t->k + b->j0 * t->ldk, t->ldk, 0.0f, scores, t->lds);
    if (t->score_kind != SCORE_PLAIN)
        apply_score(t, scores, t->lds, rows, b->j0, cols);
    if (b->mask) {
        for (Py_ssize_t i = 0; i < rows; i++) {
            float *row = scores + i * t->lds;
            const char *m = b->mask + i * b->mstride;
            for (Py_ssize_t j = 0; j < cols; j++)
                if (m[j])
                    row[j] = -INFINITY;
        }
    }
    if (softmax_block(scores, t->lds, rows, cols, t->ref, t->l, t->alpha, t->rmax, t->headroom, b->have_limit,
                      b->limit, b->have_start, b->start, b->rlo, b->rhi, b->j0, t->width)) {
        for (Py_ssize_t i = 0; i < rows; i++)
            if (t->alpha[i] != 1.0f) {
                float *row = t->acc + i * t->ldacc;
                for (Py_ssize_t c = 0; c < t->dv; c++)
                    row[c] *= t->alpha[i];
            }
    }
    if (small)
        small_rows(t, b->j0, cols, 0);
    else
        sgemm(0, rows, t->dv, cols, scores, t->lds, t->v + b->j0 * t->ldv, t->ldv, 1.0f, t->acc, t->ldacc);
}

/* tile_block (in _tile.h): the same step without BLAS, the exponentials taken on the score tile
 * while it is in registers; returns 0 where it does not apply (the caller then uses BLAS). Whether
 * it may be tried is the call's `tile` argument (the route's plan, Route.tile; tests pass False
 * to run the BLAS step on the same blocks). */
#include "_tile.h"

/* The rows of a blocks table ((n, 5) int64: j0, j1, flags, limit, start) checked before any work:
 * 0 <= j0 < j1 <= tk, at most max_cols keys, flag 4 (row ranges) only where ranges were given. */
static int check_blocks(const struct block_row *blocks, Py_ssize_t n, Py_ssize_t tk, Py_ssize_t max_cols,
                        int have_ranges)
{
    for (Py_ssize_t b = 0; b < n; b++) {
        int64_t j0 = blocks[b].j0, j1 = blocks[b].j1;
        if (j0 < 0 || j1 <= j0 || j1 > tk || j1 - j0 > max_cols) {
            PyErr_Format(PyExc_ValueError, "block %zd covers keys %lld:%lld; expected 0 <= j0 < j1 <= %zd and at most "
                         "%zd keys (the scratch's columns)", b, (long long)j0, (long long)j1, tk, max_cols);
            return -1;
        }
        if ((blocks[b].flags & BLOCK_RANGES) && !have_ranges) {
            PyErr_Format(PyExc_ValueError, "block %zd uses row ranges (flag 4) but no ranges were given", b);
            return -1;
        }
    }
    return 0;
}

/* One row of a blocks table as a flash_block (no mask; row ranges for flag 4 from rlo/rhi, which
 * point at the task's first query row). */
static struct flash_block block_at(const struct block_row *row, const int64_t *rlo, const int64_t *rhi)
{
    struct flash_block block = {(Py_ssize_t)row->j0, (Py_ssize_t)(row->j1 - row->j0), NULL, 0,
                                (row->flags & BLOCK_LIMIT) != 0, (Py_ssize_t)row->limit,
                                (row->flags & BLOCK_START) != 0, (Py_ssize_t)row->start, NULL, NULL};
    if (row->flags & BLOCK_RANGES) {
        block.rlo = rlo;
        block.rhi = rhi;
    }
    return block;
}

#ifdef FUSED_X86
/* o[c] /= d for c < n on 16 lanes: IEEE division is correctly rounded at any width, so the same bits as
 * the scalar loop; the baseline build's 4-lane divps cost a short call (T = 16, 8 heads) ~2 µs. */
__attribute__((target("avx512f"))) static void divide_row_avx512(float *o, Py_ssize_t n, float d)
{
    __m512 dd = _mm512_set1_ps(d);
    Py_ssize_t c = 0;
    for (; c + 16 <= n; c += 16)
        _mm512_storeu_ps(o + c, _mm512_div_ps(_mm512_loadu_ps(o + c), dd));
    if (c < n) {
        __mmask16 tail = (__mmask16)((1u << (n - c)) - 1u);
        _mm512_mask_storeu_ps(o + c, tail, _mm512_div_ps(_mm512_maskz_loadu_ps(tail, o + c), dd));
    }
}
#endif

/* The end of a query block's walk: out = acc / l row by row (a row with l = 0, no allowed key, becomes
 * 0; a NaN l, from a NaN score, divides: NaN, as NumPy) and, unless lse is NULL, lse = ref + log l
 * (−inf for those empty rows). width: the vector loops (qkv_vector_width; the division is exact at each). */
static void finish_rows(float *acc, Py_ssize_t ldacc, Py_ssize_t rows, Py_ssize_t dv, const float *ref,
                        const float *l, float *lse, int width)
{
    for (Py_ssize_t r = 0; r < rows; r++) {
        float *o = acc + r * ldacc;
        int empty = l[r] <= 0.0f;
        if (!empty) {
            float d = l[r];
#ifdef FUSED_X86
            if (width >= 16) {
                divide_row_avx512(o, dv, d);
            } else
#endif
            for (Py_ssize_t c = 0; c < dv; c++)
                o[c] /= d;
        } else {
            memset(o, 0, (size_t)dv * sizeof(float));
        }
        if (lse)
            lse[r] = empty ? -INFINITY : ref[r] + logf(l[r]);
    }
}

PyDoc_STRVAR(set_sgemm_doc,
"set_sgemm(address, ilp64) -> None\n\n"
"The address of a CBLAS cblas_sgemm (64-bit integers when ilp64) for flash_rows, flash_many and\n"
"backward_many; 0 forgets it.");

static PyObject *fused_set_sgemm(PyObject *self, PyObject *args)
{
    unsigned long long address;
    int ilp64;
    if (!PyArg_ParseTuple(args, "Kp", &address, &ilp64))
        return NULL;
    qkv_sgemm_address = (void *)(uintptr_t)address;
    sgemm_ilp64 = ilp64;
    Py_RETURN_NONE;
}

/* A float32 2-D array (read-only allowed) with contiguous rows and a row stride of at least
 * min_ld elements (what BLAS needs); its row stride in elements goes to *ld. */
static int get_matrix(PyObject *obj, Py_buffer *view, int writable, Py_ssize_t rows, Py_ssize_t cols,
                      Py_ssize_t *ld, const char *name)
{
    int flags = PyBUF_STRIDES | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0)
        return -1;
    if (view->ndim != 2 || !is_float32(view) || view->strides[1] != 4 ||
        view->strides[0] % 4) {
        PyErr_Format(PyExc_ValueError, "%s must be a %s2-D float32 array with contiguous rows", name,
                     writable ? "writable " : "");
        PyBuffer_Release(view);
        return -1;
    }
    Py_ssize_t stride = view->strides[0] / 4;
    if ((rows >= 0 && view->shape[0] < rows) || (cols >= 0 && view->shape[1] != cols) ||
        (view->shape[0] > 1 && stride < (view->shape[1] > 1 ? view->shape[1] : 1))) {
        PyErr_Format(PyExc_ValueError, "%s has shape (%zd, %zd) and row stride %zd; expected %zd rows or more, %zd "
                     "columns, rows not overlapping", name, view->shape[0], view->shape[1], stride, rows, cols);
        PyBuffer_Release(view);
        return -1;
    }
    *ld = view->shape[0] > 1 ? stride : (view->shape[1] > 1 ? view->shape[1] : 1);
    return 0;
}

static int check_score(int score_kind, float cap)
{
    if (score_kind != SCORE_PLAIN && score_kind != SCORE_RELATIVE && score_kind != SCORE_SOFT_CAP) {
        PyErr_SetString(PyExc_ValueError, "score_kind must be 0 (none), 1 (relative bias) or 2 (soft-cap)");
        return -1;
    }
    if (score_kind == SCORE_SOFT_CAP && !(cap > 0.0f && isfinite(cap))) {
        PyErr_SetString(PyExc_ValueError, "cap must be a positive finite number");
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(flash_rows_doc,
"flash_rows(q, k, v, acc, ref, row_sum, alpha, row_max, scores, blocks, masks, headroom, scale=1.0,\n"
"           finalize=False, score_kind=0, table=None, cap=1, offset=0, tile=True, width=0) -> None\n\n"
"One query block of the blocked kernel, every key block in C (the GIL released throughout):\n"
"for each row (j0, j1, flags, limit, start) of blocks (int64, (n, 5)):\n"
"  S = q·k[j0:j1]ᵀ; S = −inf where masks[b] is True (masks: None, or a sequence of n entries,\n"
"  each None or a bool (rows, j1 − j0) array with contiguous rows); the softmax step of\n"
"  softmax_rows on S, where row i keeps only keys j0 + c with c < limit + i when flags & 1 and\n"
"  c >= start + i when flags & 2 (causal diagonals, bands); acc[i] *= alpha[i] where a\n"
"  reference moved;\n"
"  acc += P·v[j0:j1].\n"
"q (rows, Dk), k (Tk, Dk), v (Tk, Dv), acc (rows, Dv): float32 with contiguous rows; ref,\n"
"row_sum, alpha, row_max (or None): float32 (rows,); scores: float32 scratch of at least\n"
"(rows, max j1 − j0). q is multiplied by scale first (into a copy). finalize: at the end,\n"
"acc /= row_sum row by row (rows with row_sum = 0 become 0). score_kind 1 (a relative bias:\n"
"S[r, c] += table[j0 + c − r + offset], table float32 (L,), one head's bias over relative\n"
"positions) or 2 (soft-cap: S = cap·tanh(S / cap)), applied before the masks. tile: False keeps\n"
"every block on the BLAS step (no AVX-512 register tiles); width: the vector loops (0: the\n"
"widest the CPU has; 1, 8, 16: at most that). Needs set_sgemm first.");

static PyObject *flash_rows(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"q", "k", "v", "acc", "ref", "row_sum", "alpha", "row_max", "scores", "blocks", "masks",
                             "headroom", "scale", "finalize", "score_kind", "table", "cap", "offset", "tile", "width",
                             NULL};
    PyObject *o_q, *o_k, *o_v, *o_acc, *o_ref, *o_sum, *o_alpha, *o_max, *o_scores, *o_blocks, *o_masks;
    PyObject *o_table = Py_None;
    float headroom, scale = 1.0f, cap = 1.0f;
    int finalize = 0, score_kind = SCORE_PLAIN, tile_on = 1, requested = 0;
    Py_ssize_t rel_offset = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOOOOOOOf|fpiOfnpi", kwlist, &o_q, &o_k, &o_v, &o_acc, &o_ref,
                                     &o_sum, &o_alpha, &o_max, &o_scores, &o_blocks, &o_masks, &headroom, &scale,
                                     &finalize, &score_kind, &o_table, &cap, &rel_offset, &tile_on, &requested))
        return NULL;
    if (qkv_check_width(requested) < 0)
        return NULL;
    if (qkv_sgemm_address == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "flash_rows needs a BLAS sgemm: call set_sgemm first");
        return NULL;
    }
    Py_buffer vq, vk, vv, vacc, vr, vl, va, vm, vs, vb, vtab;
    Py_buffer *views[11];
    int held = 0, have_max = o_max != Py_None;
    Py_buffer *mviews = NULL;
    Py_ssize_t n_masks = 0, held_masks = 0;
    PyObject *result = NULL;
    Py_ssize_t ldq, ldk, ldv, ldacc, lds;
#define HOLD(call, view) do { if ((call) < 0) goto done; views[held++] = (view); } while (0)
    HOLD(get_matrix(o_q, &vq, 0, -1, -1, &ldq, "q"), &vq);
    Py_ssize_t rows = vq.shape[0], dk = vq.shape[1];
    HOLD(get_matrix(o_k, &vk, 0, -1, dk, &ldk, "k"), &vk);
    Py_ssize_t tk = vk.shape[0];
    HOLD(get_matrix(o_v, &vv, 0, -1, -1, &ldv, "v"), &vv);
    Py_ssize_t dv = vv.shape[1];
    if (vv.shape[0] != tk) {
        PyErr_Format(PyExc_ValueError, "v has %zd rows but k has %zd", vv.shape[0], tk);
        goto done;
    }
    HOLD(get_matrix(o_acc, &vacc, 1, rows, dv, &ldacc, "acc"), &vacc);
    if (vacc.shape[0] != rows) {
        PyErr_Format(PyExc_ValueError, "acc has %zd rows but q has %zd", vacc.shape[0], rows);
        goto done;
    }
    HOLD(get_f32(o_ref, &vr, 1, "ref"), &vr);
    HOLD(get_f32(o_sum, &vl, 1, "row_sum"), &vl);
    HOLD(get_f32(o_alpha, &va, 1, "alpha"), &va);
    if (have_max)
        HOLD(get_f32(o_max, &vm, 1, "row_max"), &vm);
    if (vr.shape[0] != rows || vl.shape[0] != rows || va.shape[0] != rows || (have_max && vm.shape[0] != rows)) {
        PyErr_Format(PyExc_ValueError, "ref, row_sum, alpha and row_max must have q's %zd rows", rows);
        goto done;
    }
    HOLD(get_matrix(o_scores, &vs, 1, rows, -1, &lds, "scores"), &vs);
    if (PyObject_GetBuffer(o_blocks, &vb, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        goto done;
    views[held++] = &vb;
    {
        if (vb.ndim != 2 || vb.shape[1] != 5 || !is_int64(&vb)) {
            PyErr_SetString(PyExc_ValueError, "blocks must be a C-contiguous int64 array of shape (n, 5)");
            goto done;
        }
    }
    Py_ssize_t n_blocks = vb.shape[0];
    const struct block_row *blocks = vb.buf;
    if (check_blocks(blocks, n_blocks, tk, vs.shape[1], 0) < 0)
        goto done;
    const float *table = NULL;
    if (check_score(score_kind, cap) < 0)
        goto done;
    if (score_kind == SCORE_RELATIVE) {   /* every (row, key) of every block reads inside the table */
        HOLD(get_f32(o_table, &vtab, 1, "table"), &vtab);
        for (Py_ssize_t b = 0; b < n_blocks && rows > 0; b++)
            if (blocks[b].j0 - (rows - 1) + rel_offset < 0 || blocks[b].j1 - 1 + rel_offset >= vtab.shape[0]) {
                PyErr_Format(PyExc_ValueError, "table (%zd relative positions) with offset %zd does not cover block "
                             "%zd (keys %lld:%lld, %zd rows)", vtab.shape[0], rel_offset, b, (long long)blocks[b].j0,
                             (long long)blocks[b].j1, rows);
                goto done;
            }
        table = vtab.buf;
    }
    if (o_masks != Py_None) {
        PyObject *seq = PySequence_Fast(o_masks, "masks must be None or a sequence");
        if (seq == NULL)
            goto done;
        n_masks = PySequence_Fast_GET_SIZE(seq);
        if (n_masks != n_blocks) {
            PyErr_Format(PyExc_ValueError, "masks has %zd entries for %zd blocks", n_masks, n_blocks);
            Py_DECREF(seq);
            goto done;
        }
        mviews = PyMem_Calloc((size_t)(n_masks ? n_masks : 1), sizeof(Py_buffer));
        if (mviews == NULL) {
            PyErr_NoMemory();
            Py_DECREF(seq);
            goto done;
        }
        for (Py_ssize_t b = 0; b < n_masks; b++, held_masks++) {
            PyObject *item = PySequence_Fast_GET_ITEM(seq, b);
            if (item == Py_None) {
                mviews[b].buf = NULL;
                continue;
            }
            if (PyObject_GetBuffer(item, &mviews[b], PyBUF_STRIDES | PyBUF_FORMAT) < 0) {
                Py_DECREF(seq);
                goto done;
            }
            Py_buffer *mv = &mviews[b];
            const char *fmt = item_format(mv);
            int64_t cols = blocks[b].j1 - blocks[b].j0;
            if (mv->ndim != 2 || strcmp(fmt, "?") != 0 || mv->shape[0] != rows || mv->shape[1] != cols ||
                mv->strides[1] != 1) {
                PyErr_Format(PyExc_ValueError, "masks[%zd] must be a bool (%zd, %lld) array with contiguous rows", b,
                             rows, (long long)cols);
                PyBuffer_Release(mv);
                Py_DECREF(seq);
                goto done;
            }
        }
        Py_DECREF(seq);
    }
    {
        const float *q = vq.buf, *k = vk.buf, *v = vv.buf;
        float *acc = vacc.buf, *ref = vr.buf, *l = vl.buf, *alpha = va.buf, *rmax = have_max ? vm.buf : NULL;
        float *scores = vs.buf, *scaled = NULL;
        int width = qkv_vector_width(requested);
        if (scale != 1.0f && rows > 0) {   /* q·scale once, into a copy (the caller's q is read-only) */
            scaled = PyMem_RawMalloc((size_t)(rows * dk) * sizeof(float));
            if (scaled == NULL) {
                PyErr_NoMemory();
                goto done;
            }
        }
        Py_BEGIN_ALLOW_THREADS
        if (scaled) {
            for (Py_ssize_t i = 0; i < rows; i++)
                for (Py_ssize_t c = 0; c < dk; c++)
                    scaled[i * dk + c] = q[i * ldq + c] * scale;
            q = scaled;
            ldq = dk;
        }
        struct flash_task task = {q, ldq, k, ldk, v, ldv, acc, ldacc, rows, dk, dv, ref, l, alpha, rmax, headroom,
                                  scores, lds, width, score_kind, table, rel_offset, cap};
        for (Py_ssize_t b = 0; b < n_blocks; b++) {
            struct flash_block block = block_at(blocks + b, NULL, NULL);
            if (mviews && mviews[b].buf) {
                block.mask = mviews[b].buf;
                block.mstride = mviews[b].strides[0];
            }
            if (!(tile_on && score_kind == SCORE_PLAIN && tile_block(&task, &block)))
                flash_block_blas(&task, &block);
        }
        if (finalize)
            finish_rows(acc, ldacc, rows, dv, ref, l, NULL, width);
        Py_END_ALLOW_THREADS
        PyMem_RawFree(scaled);
    }
    result = Py_None;
    Py_INCREF(result);
done:
#undef HOLD
    for (Py_ssize_t b = 0; b < held_masks; b++)
        if (mviews[b].buf)
            PyBuffer_Release(&mviews[b]);
    PyMem_Free(mviews);
    while (held > 0)
        PyBuffer_Release(views[--held]);
    return result;
}

/* ------------------------------------------------------------------------ many query blocks
 * flash_many runs whole (head, query block) tasks that need no mask arrays, taking the next task
 * from a shared counter: each of the kernel's threads calls it once, so there is no Python per
 * task at all. */
static int get_tensor3(PyObject *obj, Py_buffer *view, int writable, const char *name)
{
    int flags = PyBUF_STRIDES | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0)
        return -1;
    if (view->ndim != 3 || !is_float32(view) || view->strides[2] != 4 ||
        view->strides[1] % 4 || view->strides[0] % 4 ||
        (view->shape[1] > 1 && view->strides[1] < 4 * (view->shape[2] > 1 ? view->shape[2] : 1))) {
        PyErr_Format(PyExc_ValueError, "%s must be a %s3-D float32 array with contiguous, non-overlapping rows", name,
                     writable ? "writable " : "");
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

int qkv_get_int64(PyObject *obj, Py_buffer *view, int writable, Py_ssize_t cols, const char *name)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    if (!is_int64(view) ||
        (cols > 0 ? (view->ndim != 2 || view->shape[1] != cols) : view->ndim != 1)) {
        if (cols > 0)
            PyErr_Format(PyExc_ValueError, "%s must be a C-contiguous int64 array of shape (n, %zd)", name, cols);
        else
            PyErr_Format(PyExc_ValueError, "%s must be a C-contiguous 1-D int64 array", name);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(flash_many_doc,
"flash_many(q, k, v, out, lse, tasks, blocks, counter, scores, vectors, headroom, scale, budget=0,\n"
"           ranges=None, score_kind=0, table=None, cap=1, tile=True, width=0)\n"
"    -> bool\n\n"
"Runs tasks (int64 (n, 7): q head, kv head, out head, i0, i1, b0, b1) until none is left,\n"
"taking the next one from counter[0] (int64, shared by the threads that call this at once):\n"
"rows i0:i1 of q[q head]·scale over the key blocks blocks[b0:b1] (int64 (m, 5), as flash_rows'\n"
"blocks) of k[kv head], v[kv head]; out[out head, i0:i1] = softmax·v (rows with no allowed key:\n"
"0) and, unless lse is None, lse[out head, i0:i1] = log Σ exp(score) (−inf for those rows).\n"
"q (Nq, Tq, Dk), k (Nk, Tk, Dk), v (Nk, Tk, Dv), out (No, Tq, Dv): float32, contiguous rows;\n"
"lse (No, Tq) float32 with contiguous rows or None; scores: this thread's float32 scratch of at\n"
"least (rows, cols) of any task and block; vectors: float32 (3, rows) scratch. The GIL is\n"
"released while the tasks run. budget > 0: take no new task after that many seconds (so the\n"
"caller can handle signals). ranges: None or int64 (2, Tq): query row i sees only keys\n"
"ranges[0, i] <= j < ranges[1, i] in blocks whose flags have 4 (document-like masks).\n"
"score_kind 1: a relative bias, score + table[out head, kv − q + Tq − 1] (table float32 (No,\n"
"Tq + Tk − 1), rows contiguous); 2: soft-cap, cap·tanh(score / cap); before the masks.\n"
"tile, width: as flash_rows'.\n"
"Returns True while tasks are left. Needs set_sgemm first.");

static PyObject *flash_many(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"q", "k", "v", "out", "lse", "tasks", "blocks", "counter", "scores", "vectors", "headroom",
                             "scale", "budget", "ranges", "score_kind", "table", "cap", "tile", "width", NULL};
    PyObject *o_q, *o_k, *o_v, *o_out, *o_lse, *o_tasks, *o_blocks, *o_counter, *o_scores, *o_vectors;
    float headroom, scale;
    double budget = 0.0;
    PyObject *o_ranges = Py_None, *o_table = Py_None;
    int score_kind = SCORE_PLAIN, tile_on = 1, requested = 0;
    float cap = 1.0f;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOOOOOOff|dOiOfpi", kwlist, &o_q, &o_k, &o_v, &o_out, &o_lse,
                                     &o_tasks, &o_blocks, &o_counter, &o_scores, &o_vectors, &headroom, &scale, &budget,
                                     &o_ranges, &score_kind, &o_table, &cap, &tile_on, &requested))
        return NULL;
    if (qkv_check_width(requested) < 0)
        return NULL;
    if (qkv_sgemm_address == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "flash_many needs a BLAS sgemm: call set_sgemm first");
        return NULL;
    }
    Py_buffer vq, vk, vv, vo, vlse, vt, vb, vc, vs, vvec, vrange, vtab;
    Py_buffer *views[12];
    const float *table = NULL;
    int held = 0, have_lse = o_lse != Py_None;
    PyObject *result = NULL;
    float *scaled = NULL;
    Py_ssize_t lds, ldvec, ldtab = 0;
    const int64_t *row_lo = NULL, *row_hi = NULL;
#define HOLD(call, view) do { if ((call) < 0) goto done; views[held++] = (view); } while (0)
    HOLD(get_tensor3(o_q, &vq, 0, "q"), &vq);
    HOLD(get_tensor3(o_k, &vk, 0, "k"), &vk);
    HOLD(get_tensor3(o_v, &vv, 0, "v"), &vv);
    HOLD(get_tensor3(o_out, &vo, 1, "out"), &vo);
    Py_ssize_t tq = vq.shape[1], dk = vq.shape[2], tk = vk.shape[1], dv = vv.shape[2];
    if (vk.shape[2] != dk || vv.shape[0] != vk.shape[0] || vv.shape[1] != tk || vo.shape[1] != tq ||
        vo.shape[2] != dv) {
        PyErr_Format(PyExc_ValueError, "shapes do not agree: q (%zd, %zd, %zd), k (%zd, %zd, %zd), v (%zd, %zd, %zd), "
                     "out (%zd, %zd, %zd)", vq.shape[0], tq, dk, vk.shape[0], tk, vk.shape[2], vv.shape[0],
                     vv.shape[1], dv, vo.shape[0], vo.shape[1], vo.shape[2]);
        goto done;
    }
    if (have_lse) {
        if (PyObject_GetBuffer(o_lse, &vlse, PyBUF_STRIDES | PyBUF_FORMAT | PyBUF_WRITABLE) < 0)
            goto done;
        views[held++] = &vlse;
        if (vlse.ndim != 2 || !is_float32(&vlse) || vlse.strides[1] != 4 || vlse.strides[0] % 4 ||
            vlse.shape[0] != vo.shape[0] || vlse.shape[1] != tq) {
            PyErr_Format(PyExc_ValueError, "lse must be a writable float32 (%zd, %zd) array with contiguous rows",
                         vo.shape[0], tq);
            goto done;
        }
    }
    HOLD(qkv_get_int64(o_tasks, &vt, 0, 7, "tasks"), &vt);
    HOLD(qkv_get_int64(o_blocks, &vb, 0, 5, "blocks"), &vb);
    HOLD(qkv_get_int64(o_counter, &vc, 1, 0, "counter"), &vc);
    HOLD(get_matrix(o_scores, &vs, 1, -1, -1, &lds, "scores"), &vs);
    HOLD(get_matrix(o_vectors, &vvec, 1, 3, -1, &ldvec, "vectors"), &vvec);
    if (vc.shape[0] < 1) {
        PyErr_SetString(PyExc_ValueError, "counter must hold one value");
        goto done;
    }
    if (o_ranges != Py_None) {   /* (2, Tq): each query row's allowed keys [lo, hi) */
        HOLD(qkv_get_int64(o_ranges, &vrange, 0, tq, "ranges"), &vrange);
        if (vrange.shape[0] != 2) {
            PyErr_Format(PyExc_ValueError, "ranges must have shape (2, %zd)", tq);
            goto done;
        }
        row_lo = vrange.buf;
        row_hi = row_lo + tq;
    }
    if (check_score(score_kind, cap) < 0)
        goto done;
    if (score_kind == SCORE_RELATIVE) {
        HOLD(get_matrix(o_table, &vtab, 0, vo.shape[0], tq + tk - 1, &ldtab, "table"), &vtab);
        table = vtab.buf;
    }
    Py_ssize_t n_tasks = vt.shape[0], n_blocks = vb.shape[0], max_rows = 0;
    const struct task_row *tasks = vt.buf;
    const struct block_row *blocks = vb.buf;
    if (check_blocks(blocks, n_blocks, tk, vs.shape[1], row_lo != NULL) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < n_tasks; i++) {
        const struct task_row *t = tasks + i;
        if (t->q_head < 0 || t->q_head >= vq.shape[0] || t->kv_head < 0 || t->kv_head >= vk.shape[0] ||
            t->out_head < 0 || t->out_head >= vo.shape[0] || t->i0 < 0 || t->i1 <= t->i0 || t->i1 > tq ||
            t->i1 - t->i0 > vs.shape[0] || t->i1 - t->i0 > vvec.shape[1] || t->b0 < 0 || t->b1 < t->b0 ||
            t->b1 > n_blocks) {
            PyErr_Format(PyExc_ValueError, "task %zd (q_head %lld, kv_head %lld, out_head %lld, i0 %lld, i1 %lld, "
                         "b0 %lld, b1 %lld) is out of range", i, (long long)t->q_head, (long long)t->kv_head,
                         (long long)t->out_head, (long long)t->i0, (long long)t->i1, (long long)t->b0, (long long)t->b1);
            goto done;
        }
        if (t->i1 - t->i0 > max_rows)
            max_rows = t->i1 - t->i0;
    }
    if (scale != 1.0f && max_rows > 0) {
        scaled = PyMem_RawMalloc((size_t)(max_rows * (dk > 0 ? dk : 1)) * sizeof(float));
        if (scaled == NULL) {
            PyErr_NoMemory();
            goto done;
        }
    }
    {
        int64_t *counter = vc.buf;
        float *vectors = vvec.buf;
        int width = qkv_vector_width(requested);
        Py_ssize_t sq0 = vq.strides[0] / 4, sq1 = vq.strides[1] / 4, sk0 = vk.strides[0] / 4, sk1 = vk.strides[1] / 4;
        Py_ssize_t sv0 = vv.strides[0] / 4, sv1 = vv.strides[1] / 4, so0 = vo.strides[0] / 4, so1 = vo.strides[1] / 4;
        Py_ssize_t sl0 = have_lse ? vlse.strides[0] / 4 : 0;
        double started = budget > 0 ? qkv_monotonic_seconds() : 0.0;
        Py_BEGIN_ALLOW_THREADS
        for (;;) {
            if (budget > 0 && qkv_monotonic_seconds() - started > budget)
                break;   /* back to Python (signals, a stop flag); the caller calls again */
            int64_t i = __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
            if (i >= n_tasks)
                break;
            const struct task_row *tk_ = tasks + i;
            Py_ssize_t i0 = (Py_ssize_t)tk_->i0, rows = (Py_ssize_t)(tk_->i1 - tk_->i0);
            const float *q = (const float *)vq.buf + tk_->q_head * sq0 + i0 * sq1;
            Py_ssize_t ldq = sq1 >= dk && sq1 > 0 ? sq1 : (dk > 0 ? dk : 1);   /* one row: any ld >= dk */
            if (scaled) {
                for (Py_ssize_t r = 0; r < rows; r++)
                    for (Py_ssize_t c = 0; c < dk; c++)
                        scaled[r * dk + c] = q[r * sq1 + c] * scale;
                q = scaled;
                ldq = dk > 0 ? dk : 1;
            }
            float *acc = (float *)vo.buf + tk_->out_head * so0 + i0 * so1;
            Py_ssize_t ldacc = so1 >= dv && so1 > 0 ? so1 : (dv > 0 ? dv : 1);
            float *ref = vectors, *l = vectors + ldvec, *alpha = vectors + 2 * ldvec;
            for (Py_ssize_t r = 0; r < rows; r++) {
                ref[r] = 0.0f;
                l[r] = 0.0f;
                memset(acc + r * ldacc, 0, (size_t)dv * sizeof(float));
            }
            struct flash_task task = {q, ldq, (const float *)vk.buf + tk_->kv_head * sk0, sk1 >= dk && sk1 > 0 ? sk1 : (dk > 0 ? dk : 1),
                                      (const float *)vv.buf + tk_->kv_head * sv0, sv1 >= dv && sv1 > 0 ? sv1 : (dv > 0 ? dv : 1), acc, ldacc, rows, dk,
                                      dv, ref, l, alpha, NULL, headroom, vs.buf, lds, width, score_kind,
                                      table ? table + tk_->out_head * ldtab : NULL, tq - 1 - i0, cap};
            for (int64_t b = tk_->b0; b < tk_->b1; b++) {
                struct flash_block block = block_at(blocks + b, row_lo ? row_lo + i0 : NULL,
                                                    row_hi ? row_hi + i0 : NULL);
                if (!(tile_on && score_kind == SCORE_PLAIN && tile_block(&task, &block)))
                    flash_block_blas(&task, &block);
            }
            finish_rows(acc, ldacc, rows, dv, ref, l, have_lse ? (float *)vlse.buf + tk_->out_head * sl0 + i0 : NULL,
                        width);
        }
        Py_END_ALLOW_THREADS
        result = PyBool_FromLong(__atomic_load_n(counter, __ATOMIC_RELAXED) < n_tasks);
    }
done:
#undef HOLD
    PyMem_RawFree(scaled);
    while (held > 0)
        PyBuffer_Release(views[--held]);
    return result;
}

PyDoc_STRVAR(absmax_doc,
"absmax(x, width=0) -> float\n\n"
"max |x| over a C-contiguous float32 array in one pass: NaN when x holds a NaN, inf when it holds\n"
"an infinity (and no NaN), 0 for an empty array. The GIL is released.");

#ifdef FUSED_X86
__attribute__((target("avx512f"))) static void absmax_avx512(const float *x, Py_ssize_t n, float *top, int *nan)
{
    __m512 m0 = _mm512_setzero_ps(), m1 = m0;
    __mmask16 bad = 0;
    Py_ssize_t j = 0;
    for (; j + 32 <= n; j += 32) {
        __m512 a = _mm512_abs_ps(_mm512_loadu_ps(x + j)), b = _mm512_abs_ps(_mm512_loadu_ps(x + j + 16));
        bad |= _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q);
        m0 = _mm512_max_ps(a, m0);
        m1 = _mm512_max_ps(b, m1);
    }
    for (; j < n; j += 16) {
        __mmask16 k = n - j >= 16 ? (__mmask16)0xFFFF : lanes(n - j);
        __m512 a = _mm512_abs_ps(_mm512_maskz_loadu_ps(k, x + j));
        bad |= _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
        m0 = _mm512_max_ps(a, m0);
    }
    *top = _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
    *nan = bad != 0;
}

/* absmax_avx512 on 8 lanes: without it an AVX2 CPU took the scalar loop, 0.16-0.25 ms for the v of
 * one B1 H8 T512 D64 call (17-22 µs here; qkv.attention looks at q, k and v). */
__attribute__((target("avx2,fma"))) static void absmax_avx2(const float *x, Py_ssize_t n, float *top, int *nan)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 m0 = _mm256_setzero_ps(), m1 = m0, bad = m0;
    Py_ssize_t j = 0;
    for (; j + 16 <= n; j += 16) {
        __m256 a = _mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)), b = _mm256_andnot_ps(sign, _mm256_loadu_ps(x + j + 8));
        bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
        m0 = _mm256_max_ps(a, m0);   /* NaN in a: m0 kept (bad says so) */
        m1 = _mm256_max_ps(b, m1);
    }
    float m = hmax8(_mm256_max_ps(m0, m1));
    int any = _mm256_movemask_ps(bad) != 0;
    for (; j < n; j++) {
        float a = fabsf(x[j]);
        if (a != a)
            any = 1;
        else if (a > m)
            m = a;
    }
    *top = m;
    *nan = any;
}
#endif

/* The one pass of each kind over `n` contiguous items, the GIL released (absmax, absmax_bits16 and
 * absmax_at all run these): max |x| of float32 values (NaN when one is NaN), and the largest 16-bit
 * pattern with its sign bit cleared (bits16_top_*, below). `lanes`: qkv_vector_width's answer. */
static double absmax_f32_pass(const float *x, Py_ssize_t n, int lanes)
{
    float top = 0.0f;
    int nan = 0;
    Py_BEGIN_ALLOW_THREADS
#ifdef FUSED_X86
    if (lanes >= 16)
        absmax_avx512(x, n, &top, &nan);
    else if (lanes >= 8)
        absmax_avx2(x, n, &top, &nan);
    else
#endif
        for (Py_ssize_t j = 0; j < n; j++) {
            float a = fabsf(x[j]);
            if (a != a)
                nan = 1;
            else if (a > top)
                top = a;
        }
    Py_END_ALLOW_THREADS
    (void)lanes;
    return nan ? (double)NAN : (double)top;
}

/* The buffer-format check of absmax and absmax_bits16: `arg` as a C-contiguous buffer of float32 items
 * (itemsize 4, format "f") or of 2-byte items (itemsize 2, formats "h", "H", "e"), a byte-order prefix
 * allowed. 0 with the view held (the caller releases it), or -1 with ValueError naming what x must be. */
static int absmax_view(PyObject *arg, Py_buffer *view, int itemsize)
{
    if (PyObject_GetBuffer(arg, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if (!(itemsize == 4 ? is_float32(view) : is_16bit(view))) {
        PyErr_SetString(PyExc_ValueError, itemsize == 4 ? "x must be a C-contiguous float32 array"
                        : "x must be a C-contiguous array of 2-byte items (int16, uint16, float16)");
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* absmax's and absmax_bits16's arguments (x, width=0): x's buffer checked by absmax_view and the vector width
 * to use; 0 with the view held (the caller releases it), or -1 with the error set. */
static int absmax_args(PyObject *args, PyObject *kwargs, Py_buffer *view, int itemsize, int *lanes)
{
    static char *kwlist[] = {"x", "width", NULL};
    PyObject *arg;
    int requested = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|i", kwlist, &arg, &requested) || qkv_check_width(requested) < 0)
        return -1;
    if (absmax_view(arg, view, itemsize) < 0)
        return -1;
    *lanes = qkv_vector_width(requested);
    return 0;
}

static PyObject *fused_absmax(PyObject *self, PyObject *args, PyObject *kwargs)
{
    Py_buffer view;
    int lanes;
    if (absmax_args(args, kwargs, &view, 4, &lanes) < 0)
        return NULL;
    double top = absmax_f32_pass(view.buf, view.len / 4, lanes);
    PyBuffer_Release(&view);
    return PyFloat_FromDouble(top);
}

PyDoc_STRVAR(absmax_bits16_doc,
"absmax_bits16(x, width=0) -> int\n\n"
"The largest 16-bit pattern of a C-contiguous 2-byte array (int16, uint16, float16; a bfloat16 tensor\n"
"viewed as int16) with its top (sign) bit cleared, 0 for an empty array: for bfloat16 and float16 the\n"
"bits of max |x| (IEEE patterns without the sign order as their magnitudes; a NaN's pattern is above\n"
"inf's). One pass, no temporaries; the GIL is released.");

/* The same loop twice: compiled for the x86-64 baseline (SSE2: 8 lanes of pmaxsw after the mask) and
 * for AVX2 (16 lanes). NumPy's bitwise_and + max made a temporary and took 23 µs for the 32,768 values of
 * one B1 H8 T64 D64 bfloat16 tensor on the AVX2 EPYC, three per call against SDPA's ~210 µs there. */
static int bits16_top_scalar(const uint16_t *x, Py_ssize_t n)
{
    int16_t top = 0;
    for (Py_ssize_t j = 0; j < n; j++) {
        int16_t a = (int16_t)(x[j] & 0x7FFF);
        top = a > top ? a : top;
    }
    return top;
}

#ifdef FUSED_X86
__attribute__((target("avx2"))) static int bits16_top_avx2(const uint16_t *x, Py_ssize_t n)
{
    int16_t top = 0;
    for (Py_ssize_t j = 0; j < n; j++) {
        int16_t a = (int16_t)(x[j] & 0x7FFF);
        top = a > top ? a : top;
    }
    return top;
}
#endif

/* bits16_top_avx2 or _scalar by the vector width, the GIL released. */
static int bits16_top(const uint16_t *x, Py_ssize_t n, int lanes)
{
    int top;
    Py_BEGIN_ALLOW_THREADS
#ifdef FUSED_X86
    if (lanes >= 8)
        top = bits16_top_avx2(x, n);
    else
#endif
        top = bits16_top_scalar(x, n);
    Py_END_ALLOW_THREADS
    (void)lanes;
    return top;
}

static PyObject *fused_absmax_bits16(PyObject *self, PyObject *args, PyObject *kwargs)
{
    Py_buffer view;
    int lanes;
    if (absmax_args(args, kwargs, &view, 2, &lanes) < 0)
        return NULL;
    int top = bits16_top(view.buf, view.len / 2, lanes);
    PyBuffer_Release(&view);
    return PyLong_FromLong(top);
}

PyDoc_STRVAR(absmax_at_doc,
"absmax_at(address, count, itemsize, width=0) -> float | int\n\n"
"absmax (itemsize 4: float32, a float) or absmax_bits16 (itemsize 2: the bits, an int) of `count`\n"
"contiguous items at `address` — a contiguous CPU torch tensor's data_ptr(), which the caller holds for\n"
"the call. Reading a tensor through .numpy() (and .view(torch.int16) for bfloat16) cost 5-10 µs a\n"
"tensor on the AVX2 EPYC, more than the pass itself, twice per call in front of a 50 µs SDPA call.");

static PyObject *fused_absmax_at(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"address", "count", "itemsize", "width", NULL};
    unsigned long long address;
    Py_ssize_t n;
    int itemsize, requested = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Kni|i", kwlist, &address, &n, &itemsize, &requested)
        || qkv_check_width(requested) < 0)
        return NULL;
    if (n < 0 || (itemsize != 2 && itemsize != 4) || (address == 0 && n > 0)) {
        PyErr_SetString(PyExc_ValueError, "absmax_at: a non-null address, count >= 0 and itemsize 2 or 4");
        return NULL;
    }
    int lanes = qkv_vector_width(requested);
    if (itemsize == 2)
        return PyLong_FromLong(bits16_top((const uint16_t *)(uintptr_t)address, n, lanes));
    return PyFloat_FromDouble(absmax_f32_pass((const float *)(uintptr_t)address, n, lanes));
}

/* (max |x| of each of three contiguous runs of items at the addresses): floats for itemsize 4, the largest
 * 16-bit patterns (sign cleared) as ints for itemsize 2; absmax3_at's answer and flash_at's with tops. */
static PyObject *tops3(const unsigned long long *address, const Py_ssize_t *count, int itemsize)
{
    int lanes = qkv_vector_width(0);
    PyObject *tops = PyTuple_New(3);
    if (tops == NULL)
        return NULL;
    for (int i = 0; i < 3; i++) {
        PyObject *top = itemsize == 2
            ? PyLong_FromLong(bits16_top((const uint16_t *)(uintptr_t)address[i], count[i], lanes))
            : PyFloat_FromDouble(absmax_f32_pass((const float *)(uintptr_t)address[i], count[i], lanes));
        if (top == NULL) {
            Py_DECREF(tops);
            return NULL;
        }
        PyTuple_SET_ITEM(tops, i, top);
    }
    return tops;
}

PyDoc_STRVAR(absmax3_at_doc,
"absmax3_at(address_q, count_q, address_k, count_k, address_v, count_v, itemsize) -> tuple\n\n"
"absmax_at of three tensors of one item size in one call, as a tuple of three (floats for itemsize 4,\n"
"the bits as ints for itemsize 2), on the widest vector loops: the value look of a short call reads\n"
"q, k and v together (kernels/magnitude.py value_tops), where three calls cost ~1 µs more.");

static PyObject *fused_absmax3_at(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "absmax3_at takes 7 arguments (3 addresses and counts, the item size)");
        return NULL;
    }
    unsigned long long address[3];
    Py_ssize_t count[3];
    for (int i = 0; i < 3; i++) {
        address[i] = PyLong_AsUnsignedLongLong(args[2 * i]);
        count[i] = PyLong_AsSsize_t(args[2 * i + 1]);
    }
    long itemsize = PyLong_AsLong(args[6]);
    if (PyErr_Occurred())
        return NULL;
    for (int i = 0; i < 3; i++)
        if (count[i] < 0 || (address[i] == 0 && count[i] > 0) || (itemsize != 2 && itemsize != 4)) {
            PyErr_SetString(PyExc_ValueError, "absmax3_at: non-null addresses, counts >= 0 and itemsize 2 or 4");
            return NULL;
        }
    return tops3(address, count, (int)itemsize);
}

PyDoc_STRVAR(convert16_doc,
"convert16(src, dst, bfloat16, width=0)\n\n"
"Casts between float32 and a 16-bit float, one thread, no temporaries, the GIL released: src a\n"
"C-contiguous float32 array and dst a C-contiguous 2-byte one (int16/uint16/float16: a bfloat16 or float16\n"
"tensor's bits) of as many items — float32 to the 16-bit float, rounded to nearest even as torch rounds\n"
"(bfloat16: c10's round_to_nearest_even, a NaN stays a NaN; float16: IEEE, beyond its range inf) — or src\n"
"2-byte and dst"
" float32: exact. bfloat16: True for bfloat16, False for float16. float16 needs F16C (width >= 8): ValueError\n"
"on the scalar loops. torch's own .to() runs an OpenMP team from 32,768 values on: on 2 cores other\n"
"processes kept busy its barrier cost 6-27 ms of CPU per cast of a B1 H8 T128 D64 tensor.");

static void bf16_to_f32(const uint16_t *src, uint32_t *dst, Py_ssize_t n)
{
    for (Py_ssize_t j = 0; j < n; j++)
        dst[j] = (uint32_t)src[j] << 16;
}

static void f32_to_bf16(const uint32_t *src, uint16_t *dst, Py_ssize_t n)
{
    for (Py_ssize_t j = 0; j < n; j++) {   /* c10::BFloat16's round_to_nearest_even */
        uint32_t u = src[j];
        uint16_t r = (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
        dst[j] = (u & 0x7FFFFFFFu) > 0x7F800000u ? (uint16_t)0x7FC0 : r;
    }
}

#ifdef FUSED_X86
__attribute__((target("avx2"))) static void bf16_to_f32_avx2(const uint16_t *src, uint32_t *dst, Py_ssize_t n)
{
    for (Py_ssize_t j = 0; j < n; j++)
        dst[j] = (uint32_t)src[j] << 16;
}

__attribute__((target("avx2"))) static void f32_to_bf16_avx2(const uint32_t *src, uint16_t *dst, Py_ssize_t n)
{
    for (Py_ssize_t j = 0; j < n; j++) {
        uint32_t u = src[j];
        uint16_t r = (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
        dst[j] = (u & 0x7FFFFFFFu) > 0x7F800000u ? (uint16_t)0x7FC0 : r;
    }
}

__attribute__((target("avx2,f16c"))) static void f16_to_f32_f16c(const uint16_t *src, float *dst, Py_ssize_t n)
{
    Py_ssize_t j = 0;
    for (; j + 8 <= n; j += 8)
        _mm256_storeu_ps(dst + j, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + j))));
    for (; j < n; j++)
        dst[j] = _cvtsh_ss(src[j]);
}

__attribute__((target("avx2,f16c"))) static void f32_to_f16_f16c(const float *src, uint16_t *dst, Py_ssize_t n)
{
    Py_ssize_t j = 0;
    for (; j + 8 <= n; j += 8)
        _mm_storeu_si128((__m128i *)(dst + j), _mm256_cvtps_ph(_mm256_loadu_ps(src + j), _MM_FROUND_TO_NEAREST_INT));
    for (; j < n; j++)
        dst[j] = _cvtss_sh(src[j], _MM_FROUND_TO_NEAREST_INT);
}
#endif

static PyObject *fused_convert16(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"src", "dst", "bfloat16", "width", NULL};
    PyObject *src_obj, *dst_obj;
    int bfloat16, requested = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOp|i", kwlist, &src_obj, &dst_obj, &bfloat16, &requested) ||
        qkv_check_width(requested) < 0)
        return NULL;
    int lanes = qkv_vector_width(requested);
    if (!bfloat16 && lanes < 8) {
        PyErr_SetString(PyExc_ValueError, "convert16: float16 needs the F16C instructions (width >= 8)");
        return NULL;
    }
    Py_buffer src, dst;
    if (PyObject_GetBuffer(src_obj, &src, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    if (PyObject_GetBuffer(dst_obj, &dst, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&src);
        return NULL;
    }
    int widen = is_16bit(&src) && is_float32(&dst), narrow = is_float32(&src) && is_16bit(&dst);
    Py_ssize_t n = src.len / (src.itemsize ? src.itemsize : 1);
    if (!(widen || narrow) || dst.len / dst.itemsize != n) {
        PyErr_SetString(PyExc_ValueError, "convert16: src and dst must be C-contiguous float32 and 2-byte arrays "
                                          "(either way round) of as many items");
        PyBuffer_Release(&src);
        PyBuffer_Release(&dst);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
#ifdef FUSED_X86
    if (lanes >= 8) {
        if (bfloat16 && widen)
            bf16_to_f32_avx2(src.buf, dst.buf, n);
        else if (bfloat16)
            f32_to_bf16_avx2(src.buf, dst.buf, n);
        else if (widen)
            f16_to_f32_f16c(src.buf, dst.buf, n);
        else
            f32_to_f16_f16c(src.buf, dst.buf, n);
    } else
#endif
    if (widen)
        bf16_to_f32(src.buf, dst.buf, n);
    else
        f32_to_bf16(src.buf, dst.buf, n);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(flash_at_doc,
"flash_at(q, k, v, out, heads, kv_heads, tq, tk, dk, dv, scale, headroom, causal, kind, block_q=128,\n"
"         block_k=128, width=0, tops=False) -> None | tuple\n\n"
"out = softmax(q·kᵀ·scale)·v of whole contiguous CPU torch tensors read at their addresses (each a\n"
"data_ptr() the caller holds for the call), on this thread, the GIL released: q (heads, tq, dk),\n"
"k (kv_heads, tk, dk), v (kv_heads, tk, dv), out (heads, tq, dv), all of one kind — 0 float32, 1\n"
"bfloat16, 2 float16 (computed in float32 and rounded to nearest even, as convert16) — with q head h\n"
"reading kv head h / (heads / kv_heads). causal: row i sees keys j <= i + tk − tq (bottom-right); a\n"
"row that sees no key gives 0. The same query and key blocks (block_q × block_k), block table and\n"
"per-block steps as flash_many (headroom: its lazy reference's, blocked._HEADROOM) over the C training route's plan, so the same bits: the route for a\n"
"short call no gradient is asked of, where building NumPy views, a task table and an autograd\n"
"Function cost more than the arithmetic (kernels/autograd.py). Needs set_sgemm first. tops: also return\n"
"absmax3_at(q, k, v)'s tuple, read after the arithmetic (the caller's value look, in the same call).");

static PyObject *fused_flash_at(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"q", "k", "v", "out", "heads", "kv_heads", "tq", "tk", "dk", "dv", "scale", "headroom",
                             "causal", "kind", "block_q", "block_k", "width", "tops", NULL};
    unsigned long long a_q, a_k, a_v, a_out;
    Py_ssize_t heads, kv_heads, tq, tk, dk, dv, bq = 128, bk = 128;
    float scale, headroom;
    int causal, kind, requested = 0, want_tops = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "KKKKnnnnnnffpi|nnip", kwlist, &a_q, &a_k, &a_v, &a_out, &heads,
                                     &kv_heads, &tq, &tk, &dk, &dv, &scale, &headroom, &causal, &kind, &bq, &bk, &requested,
                                     &want_tops)
        || qkv_check_width(requested) < 0)
        return NULL;
    int width = qkv_vector_width(requested);
    if (!a_q || !a_k || !a_v || !a_out || heads < 1 || kv_heads < 1 || heads % kv_heads || tq < 1 || tk < 1 ||
        dk < 1 || dv < 1 || bq < 1 || bk < 1 || kind < 0 || kind > 2) {
        PyErr_SetString(PyExc_ValueError, "flash_at: non-null addresses, heads a multiple of kv_heads >= 1, sizes and "
                                          "blocks >= 1, kind 0 (float32), 1 (bfloat16) or 2 (float16)");
        return NULL;
    }
    if (kind == 2 && width < 8) {
        PyErr_SetString(PyExc_ValueError, "flash_at: float16 needs the F16C instructions (width >= 8)");
        return NULL;
    }
    if (qkv_sgemm_address == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "flash_at needs a BLAS sgemm: call set_sgemm first");
        return NULL;
    }
    if (bq > tq)
        bq = tq;
    if (bk > tk)
        bk = tk;
    Py_ssize_t half = kind != 0;
    /* scratch: the scaled q rows of a block, the scores, three row vectors, and for 16-bit kinds one kv
     * head's k and v and a block's output in float32 */
    size_t n_qs = (size_t)(bq * dk), n_sc = (size_t)(bq * bk), n_vec = (size_t)(3 * bq);
    size_t n_kv = half ? (size_t)(tk * dk + tk * dv) : 0, n_acc = half ? (size_t)(bq * dv) : 0;
    float *scratch = PyMem_RawMalloc((n_qs + n_sc + n_vec + n_kv + n_acc) * sizeof(float));
    if (scratch == NULL)
        return PyErr_NoMemory();
    float *qs = scratch, *sc = qs + n_qs, *vec = sc + n_sc, *kf = vec + n_vec, *vf = kf + (half ? tk * dk : 0);
    float *acc_half = vf + (half ? tk * dv : 0);
    Py_ssize_t group = heads / kv_heads, shift = tk - tq;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t g = 0; g < kv_heads; g++) {
        const float *kh, *vh;
        if (kind == 0) {
            kh = (const float *)(uintptr_t)a_k + g * tk * dk;
            vh = (const float *)(uintptr_t)a_v + g * tk * dv;
        } else {
            const uint16_t *k16 = (const uint16_t *)(uintptr_t)a_k + g * tk * dk;
            const uint16_t *v16 = (const uint16_t *)(uintptr_t)a_v + g * tk * dv;
#ifdef FUSED_X86
            if (kind == 2) {
                f16_to_f32_f16c(k16, kf, tk * dk);
                f16_to_f32_f16c(v16, vf, tk * dv);
            } else if (width >= 8) {   /* (the same loops as convert16's, compiled for AVX2: the same bits) */
                bf16_to_f32_avx2(k16, (uint32_t *)kf, tk * dk);
                bf16_to_f32_avx2(v16, (uint32_t *)vf, tk * dv);
            } else
#endif
            {
                bf16_to_f32(k16, (uint32_t *)kf, tk * dk);
                bf16_to_f32(v16, (uint32_t *)vf, tk * dv);
            }
            kh = kf;
            vh = vf;
        }
        for (Py_ssize_t h = g * group; h < (g + 1) * group; h++) {
            for (Py_ssize_t i0 = 0; i0 < tq; i0 += bq) {
                Py_ssize_t rows = tq - i0 < bq ? tq - i0 : bq;
                float *acc = kind == 0 ? (float *)(uintptr_t)a_out + (h * tq + i0) * dv : acc_half;
                float *ref = vec, *l = vec + bq, *alpha = vec + 2 * bq;
                /* the keys this block's last row sees (causal): none, no work (a zero output) */
                Py_ssize_t end = causal ? i0 + rows + shift : tk;
                if (end > tk)
                    end = tk;
                for (Py_ssize_t r = 0; r < rows; r++) {
                    ref[r] = 0.0f;
                    l[r] = 0.0f;
                    memset(acc + r * dv, 0, (size_t)dv * sizeof(float));
                }
                if (end > 0) {
                    if (kind == 0) {
                        const float *q = (const float *)(uintptr_t)a_q + (h * tq + i0) * dk;
                        for (Py_ssize_t x = 0; x < rows * dk; x++)
                            qs[x] = q[x] * scale;
                    } else {
                        const uint16_t *q16 = (const uint16_t *)(uintptr_t)a_q + (h * tq + i0) * dk;
#ifdef FUSED_X86
                        if (kind == 2)
                            f16_to_f32_f16c(q16, qs, rows * dk);
                        else if (width >= 8)
                            bf16_to_f32_avx2(q16, (uint32_t *)qs, rows * dk);
                        else
#endif
                            bf16_to_f32(q16, (uint32_t *)qs, rows * dk);
                        for (Py_ssize_t x = 0; x < rows * dk; x++)
                            qs[x] *= scale;
                    }
                    struct flash_task task = {qs, dk, kh, dk, vh, dv, acc, dv, rows, dk, dv, ref, l, alpha, NULL,
                                              headroom, sc, bk, width, SCORE_PLAIN, NULL, 0, 1.0f};
                    for (Py_ssize_t j0 = 0; j0 < end; j0 += bk) {
                        Py_ssize_t j1 = j0 + bk < tk ? j0 + bk : tk;
                        /* as the plan's table (autograd._Plan): a block every row sees whole is full (no flag);
                         * one the causal diagonal cuts keeps c < limit + r in row r */
                        struct block_row row = {j0, j1, 0, 0, 0};
                        if (causal && i0 + shift + 1 < j1) {
                            row.flags = BLOCK_LIMIT;
                            row.limit = i0 + shift + 1 - j0;
                        }
                        struct flash_block block = block_at(&row, NULL, NULL);
                        if (!tile_block(&task, &block))
                            flash_block_blas(&task, &block);
                    }
                }
                finish_rows(acc, dv, rows, dv, ref, l, NULL, width);
                if (kind != 0) {
                    uint16_t *o16 = (uint16_t *)(uintptr_t)a_out + (h * tq + i0) * dv;
#ifdef FUSED_X86
                    if (kind == 2)
                        f32_to_f16_f16c(acc, o16, rows * dv);
                    else if (width >= 8)
                        f32_to_bf16_avx2((const uint32_t *)acc, o16, rows * dv);
                    else
#endif
                        f32_to_bf16((const uint32_t *)acc, o16, rows * dv);
                }
            }
        }
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(scratch);
    if (!want_tops)
        Py_RETURN_NONE;
    /* max |q|, |k|, |v| as absmax3_at gives them, read after the arithmetic (the caller's value look) */
    unsigned long long addresses[3] = {a_q, a_k, a_v};
    Py_ssize_t counts[3] = {heads * tq * dk, kv_heads * tk * dk, kv_heads * tk * dv};
    return tops3(addresses, counts, kind == 0 ? 4 : 2);
}

PyDoc_STRVAR(exp_doc,
"exp(src, dst, width=0)\n\n"
"dst = exp(src) elementwise with this module's float32 exponential (for testing its accuracy);\n"
"src and dst are 1-D float32 arrays of equal length. width: the vector loops (0: the widest the\n"
"CPU has; 1 the scalar loop, 8 AVX2, 16 AVX-512 at most).");

static PyObject *fused_exp(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"src", "dst", "width", NULL};
    PyObject *o_src, *o_dst;
    int requested = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|i", kwlist, &o_src, &o_dst, &requested) ||
        qkv_check_width(requested) < 0)
        return NULL;
    Py_buffer vsrc, vdst;
    if (get_f32(o_src, &vsrc, 1, "src") < 0)
        return NULL;
    if (get_f32(o_dst, &vdst, 1, "dst") < 0) {
        PyBuffer_Release(&vsrc);
        return NULL;
    }
    if (vsrc.shape[0] != vdst.shape[0]) {
        PyErr_SetString(PyExc_ValueError, "src and dst must have equal lengths");
        PyBuffer_Release(&vdst);
        PyBuffer_Release(&vsrc);
        return NULL;
    }
    const float *src = vsrc.buf;
    float *dst = vdst.buf;
    Py_ssize_t n = vsrc.shape[0];
    int width = qkv_vector_width(requested);
    Py_BEGIN_ALLOW_THREADS
#ifdef FUSED_X86
    if (width >= 16)
        exp_avx512(src, dst, n);
    else if (width >= 8)
        exp_avx2(src, dst, n);
    else
#endif
        for (Py_ssize_t j = 0; j < n; j++)
            dst[j] = qkv_exp1(src[j]);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&vdst);
    PyBuffer_Release(&vsrc);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------ GELU (exact, erf form)
 * gelu(x) = x·Φ(x) = max(x, 0) − |x|·Φ(−|x|) with Φ(−a) = ½·erfc(a/√2) from Abramowitz & Stegun
 * 7.1.26: ½·erfc(z) = ½·(a1·t + … + a5·t⁵)·exp(−z²), t = 1/(1 + p·z) — the same formula, the same
 * order of operations as qkv.activations.gelu's NumPy path, with this module's exp. */
#define GELU_P (0.3275911f * 0.70710678118654752f)   /* p/√2: t = 1/(1 + p·|x|/√2) */
#define GELU_A1 (0.5f * 0.254829592f)
#define GELU_A2 (0.5f * -0.284496736f)
#define GELU_A3 (0.5f * 1.421413741f)
#define GELU_A4 (0.5f * -1.453152027f)
#define GELU_A5 (0.5f * 1.061405429f)

static inline float gelu1(float x)
{
    float a = fabsf(x);
    float t = 1.0f / (1.0f + a * GELU_P);
    float p = t * GELU_A5;
    p = (p + GELU_A4) * t;
    p = (p + GELU_A3) * t;
    p = (p + GELU_A2) * t;
    p = (p + GELU_A1) * t;
    float tail = p * qkv_exp1(-0.5f * (x * x)) * a;
    return (x > 0.0f ? x : (x != x ? x : 0.0f)) - tail;
}

static void gelu_rows_scalar(float *x, const float *bias, Py_ssize_t rows, Py_ssize_t cols)
{
    for (Py_ssize_t i = 0; i < rows; i++, x += cols)
        for (Py_ssize_t j = 0; j < cols; j++)
            x[j] = gelu1(bias ? x[j] + bias[j] : x[j]);
}

#ifdef FUSED_X86
__attribute__((target("avx2,fma"))) static inline __m256 gelu8(__m256 x)
{
    __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
    __m256 t = _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_fmadd_ps(a, _mm256_set1_ps(GELU_P), _mm256_set1_ps(1.0f)));
    __m256 p = _mm256_mul_ps(t, _mm256_set1_ps(GELU_A5));
    p = _mm256_mul_ps(_mm256_add_ps(p, _mm256_set1_ps(GELU_A4)), t);
    p = _mm256_mul_ps(_mm256_add_ps(p, _mm256_set1_ps(GELU_A3)), t);
    p = _mm256_mul_ps(_mm256_add_ps(p, _mm256_set1_ps(GELU_A2)), t);
    p = _mm256_mul_ps(_mm256_add_ps(p, _mm256_set1_ps(GELU_A1)), t);
    __m256 e = qkv_exp8(_mm256_mul_ps(_mm256_set1_ps(-0.5f), _mm256_mul_ps(x, x)));
    __m256 tail = _mm256_mul_ps(_mm256_mul_ps(p, e), a);
    return _mm256_sub_ps(_mm256_max_ps(_mm256_setzero_ps(), x), tail);   /* max returns x for NaN */
}

__attribute__((target("avx2,fma"))) static void gelu_rows_avx2(float *x, const float *bias, Py_ssize_t rows,
                                                               Py_ssize_t cols)
{
    for (Py_ssize_t i = 0; i < rows; i++, x += cols) {
        Py_ssize_t j = 0;
        for (; j + 8 <= cols; j += 8) {
            __m256 v = _mm256_loadu_ps(x + j);
            if (bias)
                v = _mm256_add_ps(v, _mm256_loadu_ps(bias + j));
            _mm256_storeu_ps(x + j, gelu8(v));
        }
        for (; j < cols; j++)
            x[j] = gelu1(bias ? x[j] + bias[j] : x[j]);
    }
}
#endif

PyDoc_STRVAR(gelu_doc,
"gelu(x, bias=None, width=0)\n\n"
"In place: x = gelu(x + bias) for a writable C-contiguous float32 array x (…, D), bias a float32\n"
"(D,) array or None; the exact (erf) GELU with erf from Abramowitz & Stegun 7.1.26, as\n"
"qkv.activations.gelu computes it in NumPy. Releases the GIL. width: as exp's (the AVX2 loop or\n"
"the scalar one).");

static PyObject *fused_gelu(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"x", "bias", "width", NULL};
    PyObject *o_x, *o_bias = Py_None;
    int requested = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|Oi", kwlist, &o_x, &o_bias, &requested) ||
        qkv_check_width(requested) < 0)
        return NULL;
    Py_buffer vx, vb;
    if (PyObject_GetBuffer(o_x, &vx, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0)
        return NULL;
    if (vx.ndim < 1 || !is_float32(&vx)) {
        PyErr_SetString(PyExc_ValueError, "x must be a writable C-contiguous float32 array of at least one dimension");
        PyBuffer_Release(&vx);
        return NULL;
    }
    Py_ssize_t cols = vx.shape[vx.ndim - 1], rows = cols ? vx.len / 4 / cols : 0;
    int have_bias = o_bias != Py_None;
    if (have_bias) {
        if (get_f32(o_bias, &vb, 1, "bias") < 0) {
            PyBuffer_Release(&vx);
            return NULL;
        }
        if (vb.shape[0] != cols) {
            PyErr_Format(PyExc_ValueError, "bias has %zd values but x has rows of %zd", vb.shape[0], cols);
            PyBuffer_Release(&vb);
            PyBuffer_Release(&vx);
            return NULL;
        }
    }
    float *x = vx.buf;
    const float *bias = have_bias ? vb.buf : NULL;
    int avx2 = qkv_vector_width(requested) >= 8;
    Py_BEGIN_ALLOW_THREADS
#ifdef FUSED_X86
    if (avx2)
        gelu_rows_avx2(x, bias, rows, cols);
    else
#endif
        gelu_rows_scalar(x, bias, rows, cols);
    Py_END_ALLOW_THREADS
    (void)avx2;
    if (have_bias)
        PyBuffer_Release(&vb);
    PyBuffer_Release(&vx);
    Py_RETURN_NONE;
}

static PyObject *fused_width(PyObject *self, PyObject *unused)
{
    return PyLong_FromLong(vector_width());
}

static PyMethodDef methods[] = {
    {"softmax_rows", (PyCFunction)(void (*)(void))softmax_rows, METH_VARARGS | METH_KEYWORDS, softmax_rows_doc},
    {"flash_rows", (PyCFunction)(void (*)(void))flash_rows, METH_VARARGS | METH_KEYWORDS, flash_rows_doc},
    {"flash_many", (PyCFunction)(void (*)(void))flash_many, METH_VARARGS | METH_KEYWORDS, flash_many_doc},
    {"flash_at", (PyCFunction)(void (*)(void))fused_flash_at, METH_VARARGS | METH_KEYWORDS, flash_at_doc},
    {"backward_many", (PyCFunction)(void (*)(void))qkv_backward_many, METH_VARARGS | METH_KEYWORDS,
     qkv_backward_many_doc},
    {"absmax", (PyCFunction)(void (*)(void))fused_absmax, METH_VARARGS | METH_KEYWORDS, absmax_doc},
    {"absmax_bits16", (PyCFunction)(void (*)(void))fused_absmax_bits16, METH_VARARGS | METH_KEYWORDS,
     absmax_bits16_doc},
    {"absmax_at", (PyCFunction)(void (*)(void))fused_absmax_at, METH_VARARGS | METH_KEYWORDS, absmax_at_doc},
    {"absmax3_at", (PyCFunction)(void (*)(void))fused_absmax3_at, METH_FASTCALL, absmax3_at_doc},
    {"convert16", (PyCFunction)(void (*)(void))fused_convert16, METH_VARARGS | METH_KEYWORDS, convert16_doc},
    {"set_sgemm", fused_set_sgemm, METH_VARARGS, set_sgemm_doc},
    {"exp", (PyCFunction)(void (*)(void))fused_exp, METH_VARARGS | METH_KEYWORDS, exp_doc},
    {"gelu", (PyCFunction)(void (*)(void))fused_gelu, METH_VARARGS | METH_KEYWORDS, gelu_doc},
    {"vector_width", fused_width, METH_NOARGS,
     "vector_width() -> 16 (AVX-512 loops), 8 (AVX2+FMA) or 1 (scalar): the widest this CPU has (width=0)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "qkv.kernels._fused",
    "The blocked kernel's C loops: the softmax step, the key walk (flash_rows, flash_many), its backward "
    "(backward_many, in _backward.c), gelu.",
    -1, methods,
};

PyMODINIT_FUNC PyInit__fused(void)
{
    return PyModule_Create(&module);
}
