/* qkv.kernels._kernel.h: what the two C sources of the one extension qkv.kernels._fused share.
 *
 * _fused.c holds the forward (softmax step, flash_rows, flash_many, gelu, …), the module table and
 * everything below; _backward.c holds the backward (backward_many), which the module table lists.
 * One BLAS pointer (set_sgemm), one set of argument checks, one exponential (_exp.h), one choice
 * of vector loops. Hidden visibility: nothing here is exported from the shared object but PyInit. */
#ifndef QKV_KERNEL_H
#define QKV_KERNEL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "_exp.h"      /* qkv_exp1/8/16: the one float32 exponential of the forward and the backward */

#define QKV_SHARED __attribute__((visibility("hidden")))

/* C (m × n, row stride ldc) = alpha·op(A)·op(B) + beta·C, row-major, through NumPy's cblas_sgemm
 * (set_sgemm); op = transpose where ta / tb. */
QKV_SHARED extern void *qkv_sgemm_address;
QKV_SHARED void qkv_gemm(int ta, int tb, Py_ssize_t m, Py_ssize_t n, Py_ssize_t k, float alpha, const float *a,
                         Py_ssize_t lda, const float *b, Py_ssize_t ldb, float beta, float *c, Py_ssize_t ldc);

QKV_SHARED double qkv_monotonic_seconds(void);

/* The vector loops a call uses: 16 (AVX-512), 8 (AVX2+FMA) or 1 (scalar): the widest the CPU has,
 * at most `requested` (0: no limit; the entry points take it as their `width` argument). */
QKV_SHARED int qkv_vector_width(int requested);
/* width argument check: 0, 1, 8 or 16 (else ValueError, −1) */
QKV_SHARED int qkv_check_width(int requested);

/* A C-contiguous float32 array of ndim dimensions (writable if asked). 0, or −1 with ValueError. */
QKV_SHARED int qkv_get_f32_contiguous(PyObject *obj, Py_buffer *view, int writable, int ndim, const char *name);
/* A C-contiguous int64 array: (n, cols) when cols > 0, 1-D when cols == 0. 0, or −1 with ValueError. */
QKV_SHARED int qkv_get_int64(PyObject *obj, Py_buffer *view, int writable, Py_ssize_t cols, const char *name);

/* _backward.c */
QKV_SHARED PyObject *qkv_backward_many(PyObject *self, PyObject *args, PyObject *kwargs);
QKV_SHARED extern const char qkv_backward_many_doc[];

/* The catalogue's score functions the C routes compute: a relative bias s + bias_h[kv − q] (ALiBi,
 * T5's buckets, any score_mod declared relative: one table row per head, evaluated in Python from
 * the function itself; derivative 1) and soft-cap cap·tanh(s / cap) (derivative 1 − tanh²). */
enum { SCORE_PLAIN = 0, SCORE_RELATIVE = 1, SCORE_SOFT_CAP = 2 };

/* Soft-cap along a row: row[c] = cap·tanh(row[c] / cap), and th[c] = tanh(row[c] / cap) unless th is
 * NULL (the backward's derivative 1 − th²), on the vector loops of `width` (qkv_vector_width). */
QKV_SHARED void qkv_soft_cap_row(float *row, float *th, Py_ssize_t cols, float cap, int width);

#endif
