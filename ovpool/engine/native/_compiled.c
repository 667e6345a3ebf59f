/* ovpool's compiled kernels, each the same IEEE operations in the same order as the numpy code
 * it stands for (so the same bits), loaded by ovpool/engine/native/compiled.py. It is
 * built with -ffp-contract=off: a fused multiply-add would round once where numpy rounds twice.
 *
 * 1. The depthwise Conv tap loop of ovpool/engine/ops/conv.py (_conv_taps).
 *
 * For each row r (image * group), its input planes copied into a zero-bordered buffer x[r], and
 * each of its mg outputs m, over the flat positions t of the phase planes:
 *     acc[r, m, t] = x[r, t + offsets[0]] * w[g, m, 0]
 *     acc[r, m, t] = acc[r, m, t] + x[r, t + offsets[k]] * w[g, m, k]   for k = 1 .. taps - 1
 *     acc[r, m, t] = acc[r, m, t] + bias[g, m]                          if there is a bias
 * with g = r % groups: the numpy loop's operations, one multiply then one add each, in the same
 * order. Also a Conv's bias added to its output in one pass (numpy's add).
 *
 * 2. A chain of element-wise nodes (ovpool/engine/chains.py) of Add, Sub, Mul, Div, Clip (Relu is
 * Clip to [0, inf)) and Sqrt (IEEE's correctly rounded square root, as numpy's; Pow by 2 is x * x),
 * run over blocks of 256 positions held in the first-level cache.
 *
 * The module's Python functions: `address(array)` gives the address of an array's first element
 * (numpy's `a.ctypes.data`) through the buffer protocol, 0.1 us where `.ctypes.data` takes about
 * 1.2 us (a compiled call passes 5 to 8 of them); `chain(...)`; `taps_f32`/`taps_f64` and
 * `bias_f32`/`bias_f64` call the exported loops with addresses and counts (0.2 us a call, ctypes
 * about 1.5).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(_MSC_VER) && !defined(__clang__)
#define restrict __restrict /* MSVC's C takes the keyword only from /std:c11 on */
#endif

#if defined(_WIN32)
#define OVPOOL_EXPORT __declspec(dllexport)
#else
#define OVPOOL_EXPORT __attribute__((visibility("default")))
#endif

/* The loop for one plane row and output: `out[t]` for t < cells. The plain form takes positions
 * 256 at a time (the partial sums stay in the first-level cache across the taps); the AVX2 form
 * (x86-64, GCC or Clang, chosen when the processor has it and not AVX-512) holds 4 vectors of 32
 * bytes of sums in registers across the taps, and takes the last positions as a block that
 * overlaps the one before (each position's sum is computed alone, so computing it twice changes
 * nothing); the AVX-512 form is below. */
#define PLAIN_BLOCK 256

#define DEFINE_PLAIN(NAME, T)                                                                         \
    static void NAME##_plain(const T *restrict row, const int64_t *restrict offsets, int64_t taps,    \
                             const T *restrict w, const T *restrict bias, T *restrict out,            \
                             int64_t cells)                                                           \
    {                                                                                                 \
        for (int64_t start = 0; start < cells; start += PLAIN_BLOCK) {                                \
            const int64_t n = cells - start < PLAIN_BLOCK ? cells - start : PLAIN_BLOCK;              \
            T *restrict o = out + start;                                                              \
            const T *restrict x = row + offsets[0] + start;                                           \
            for (int64_t j = 0; j < n; ++j)                                                           \
                o[j] = x[j] * w[0];                                                                   \
            for (int64_t k = 1; k < taps; ++k) {                                                      \
                const T *restrict xk = row + offsets[k] + start;                                      \
                const T wk = w[k];                                                                    \
                for (int64_t j = 0; j < n; ++j)                                                       \
                    o[j] = o[j] + xk[j] * wk;                                                         \
            }                                                                                         \
            if (bias)                                                                                 \
                for (int64_t j = 0; j < n; ++j)                                                       \
                    o[j] = o[j] + *bias;                                                              \
        }                                                                                             \
    }

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define OVPOOL_AVX2 1

#define DEFINE_AVX2(NAME, T)                                                                          \
    typedef T NAME##_vector __attribute__((vector_size(32)));                                         \
    __attribute__((target("avx2"))) static inline NAME##_vector NAME##_load(const T *p)               \
    {                                                                                                 \
        NAME##_vector v;                                                                              \
        memcpy(&v, p, sizeof v);                                                                      \
        return v;                                                                                     \
    }                                                                                                 \
    __attribute__((target("avx2"))) static void NAME##_avx2(                                          \
        const T *restrict row, const int64_t *restrict offsets, int64_t taps, const T *restrict w,    \
        const T *restrict bias, T *restrict out, int64_t cells)                                       \
    {                                                                                                 \
        enum { L = 32 / sizeof(T), SPAN = 4 * L };                                                    \
        if (cells < SPAN) {                                                                           \
            NAME##_plain(row, offsets, taps, w, bias, out, cells);                                    \
            return;                                                                                   \
        }                                                                                             \
        for (int64_t start = 0;; start += SPAN) {                                                     \
            if (start + SPAN > cells)                                                                 \
                start = cells - SPAN;                                                                 \
            const T *x = row + offsets[0] + start;                                                    \
            NAME##_vector wv = (NAME##_vector){0} + w[0];                                             \
            NAME##_vector a0 = NAME##_load(x) * wv, a1 = NAME##_load(x + L) * wv;                     \
            NAME##_vector a2 = NAME##_load(x + 2 * L) * wv, a3 = NAME##_load(x + 3 * L) * wv;         \
            for (int64_t k = 1; k < taps; ++k) {                                                      \
                const T *xk = row + offsets[k] + start;                                               \
                wv = (NAME##_vector){0} + w[k];                                                       \
                a0 = a0 + NAME##_load(xk) * wv;                                                       \
                a1 = a1 + NAME##_load(xk + L) * wv;                                                   \
                a2 = a2 + NAME##_load(xk + 2 * L) * wv;                                               \
                a3 = a3 + NAME##_load(xk + 3 * L) * wv;                                               \
            }                                                                                         \
            if (bias) {                                                                               \
                const NAME##_vector b = (NAME##_vector){0} + *bias;                                   \
                a0 = a0 + b, a1 = a1 + b, a2 = a2 + b, a3 = a3 + b;                                   \
            }                                                                                         \
            memcpy(out + start, &a0, sizeof a0);                                                      \
            memcpy(out + start + L, &a1, sizeof a1);                                                  \
            memcpy(out + start + 2 * L, &a2, sizeof a2);                                              \
            memcpy(out + start + 3 * L, &a3, sizeof a3);                                              \
            if (start + SPAN == cells)                                                                \
                break;                                                                                \
        }                                                                                             \
    }
#else
#define DEFINE_AVX2(NAME, T)
#endif

/* What the loader (compiled.py, ABI) expects: an extension built from another version of this
 * file, whose functions may take other arguments, is not used. */
OVPOOL_EXPORT int ovpool_compiled_abi(void) { return 5; }

/* The plain loops even where AVX2 is at hand: the tests run both forms on one machine. */
static int plain_only = 0;

OVPOOL_EXPORT void ovpool_plain_only(int on) { plain_only = on; }

#if OVPOOL_AVX2
#define PICK(NAME) (__builtin_cpu_supports("avx2") && !plain_only ? NAME##_avx2 : NAME##_plain)
#else
#define PICK(NAME) NAME##_plain
#endif

#if OVPOOL_AVX2
#include <immintrin.h>

/* The AVX-512 form (x86-64, GCC or Clang, chosen when the processor has AVX-512F): the positions in
 * spans of up to 8 vectors of 64 bytes, the sums of a span held in registers across the taps. The
 * loads take whole vectors (lanes past the last position read the buffer's slack, SLACK: their
 * sums are never stored; a masked load costs a vector operation more); the last vector's store
 * takes `last` lanes, so no position is computed twice and none past the span is written.
 *
 * OP(sum, v, SUF) for each of the first `vectors` sums a0 .. a7, `v` its number (a constant
 * `vectors` leaves straight code). */
#define SPAN1(vectors, n, ACC, OP, SUF)                                                               \
    if (n < vectors) {                                                                                \
        OP(ACC, n, SUF);                                                                              \
    }
#define SPAN8(vectors, OP, SUF)                                                                       \
    SPAN1(vectors, 0, a0, OP, SUF) SPAN1(vectors, 1, a1, OP, SUF) SPAN1(vectors, 2, a2, OP, SUF)      \
    SPAN1(vectors, 3, a3, OP, SUF) SPAN1(vectors, 4, a4, OP, SUF) SPAN1(vectors, 5, a5, OP, SUF)      \
    SPAN1(vectors, 6, a6, OP, SUF) SPAN1(vectors, 7, a7, OP, SUF)
#define TAP_FIRST(a, v, SUF) a = _mm512_mul_##SUF(_mm512_loadu_##SUF(x + v * L), wv)
#define TAP_NEXT(a, v, SUF) a = _mm512_add_##SUF(a, _mm512_mul_##SUF(_mm512_loadu_##SUF(xk + v * L), wv))
#define TAP_BIAS(a, v, SUF) a = _mm512_add_##SUF(a, b)
#define TAP_STORE(a, v, SUF)                                                                          \
    _mm512_mask_storeu_##SUF(out + v * L, v == vectors - 1 ? last : (__typeof__(last))-1, a)

/* The same for sums whose vectors lie anywhere: vector v of the input at p[v], of the output at
 * q[v], its stored lanes mk[v]. */
#define RUN_FIRST(a, v, SUF) a = _mm512_mul_##SUF(_mm512_loadu_##SUF(p[v] + offsets[0]), wv)
#define RUN_NEXT(a, v, SUF) a = _mm512_add_##SUF(a, _mm512_mul_##SUF(_mm512_loadu_##SUF(p[v] + offset), wv))
#define RUN_STORE(a, v, SUF) _mm512_mask_storeu_##SUF(q[v], mk[v], a)

#define DEFINE_AVX512(NAME, T, V, SUF, MASK)                                                          \
    enum { NAME##_LANES = 64 / sizeof(T) };                                                           \
    __attribute__((target("avx512f"), always_inline)) static inline void NAME##_span(                 \
        const T *row, const int64_t *restrict offsets, int64_t taps, const T *restrict w,             \
        const T *restrict bias, T *out, const int vectors, MASK last)                                 \
    {                                                                                                 \
        enum { L = NAME##_LANES };                                                                    \
        V a0, a1, a2, a3, a4, a5, a6, a7;                                                             \
        const T *x = row + offsets[0];                                                                \
        V wv = _mm512_set1_##SUF(w[0]);                                                               \
        SPAN8(vectors, TAP_FIRST, SUF)                                                                \
        for (int64_t k = 1; k < taps; ++k) {                                                          \
            const T *xk = row + offsets[k];                                                           \
            wv = _mm512_set1_##SUF(w[k]);                                                             \
            SPAN8(vectors, TAP_NEXT, SUF)                                                             \
        }                                                                                             \
        if (bias) {                                                                                   \
            const V b = _mm512_set1_##SUF(*bias);                                                     \
            SPAN8(vectors, TAP_BIAS, SUF)                                                             \
        }                                                                                             \
        SPAN8(vectors, TAP_STORE, SUF)                                                                \
    }                                                                                                 \
    __attribute__((target("avx512f"))) static void NAME##_avx512(                                     \
        const T *restrict row, const int64_t *restrict offsets, int64_t taps, const T *restrict w,    \
        const T *restrict bias, T *restrict out, int64_t cells)                                       \
    {                                                                                                 \
        enum { L = NAME##_LANES };                                                                    \
        int64_t start = 0;                                                                            \
        for (; cells - start > 8 * L; start += 8 * L)                                                 \
            NAME##_span(row + start, offsets, taps, w, bias, out + start, 8, (MASK)-1);               \
        const int64_t rest = cells - start, tail = rest - (rest - 1) / L * L;                         \
        const MASK last = (MASK)(((uint64_t)1 << tail) - 1);                                          \
        switch ((rest + L - 1) / L) {                                                                 \
        case 1: NAME##_span(row + start, offsets, taps, w, bias, out + start, 1, last); break;        \
        case 2: NAME##_span(row + start, offsets, taps, w, bias, out + start, 2, last); break;        \
        case 3: NAME##_span(row + start, offsets, taps, w, bias, out + start, 3, last); break;        \
        case 4: NAME##_span(row + start, offsets, taps, w, bias, out + start, 4, last); break;        \
        case 5: NAME##_span(row + start, offsets, taps, w, bias, out + start, 5, last); break;        \
        case 6: NAME##_span(row + start, offsets, taps, w, bias, out + start, 6, last); break;        \
        case 7: NAME##_span(row + start, offsets, taps, w, bias, out + start, 7, last); break;        \
        case 8: NAME##_span(row + start, offsets, taps, w, bias, out + start, 8, last); break;        \
        default: break;                                                                               \
        }                                                                                             \
    }                                                                                                 \
    __attribute__((target("avx512f"), always_inline)) static inline void NAME##_gather(               \
        const T *const *p, T *const *q, const MASK *mk, const int64_t *restrict offsets, int64_t taps, \
        const T *restrict w, const T *restrict bias, const int vectors)                               \
    {                                                                                                 \
        V a0, a1, a2, a3, a4, a5, a6, a7;                                                             \
        V wv = _mm512_set1_##SUF(w[0]);                                                               \
        SPAN8(vectors, RUN_FIRST, SUF)                                                                \
        for (int64_t k = 1; k < taps; ++k) {                                                          \
            const int64_t offset = offsets[k];                                                        \
            wv = _mm512_set1_##SUF(w[k]);                                                             \
            SPAN8(vectors, RUN_NEXT, SUF)                                                             \
        }                                                                                             \
        if (bias) {                                                                                   \
            const V b = _mm512_set1_##SUF(*bias);                                                     \
            SPAN8(vectors, TAP_BIAS, SUF)                                                             \
        }                                                                                             \
        SPAN8(vectors, RUN_STORE, SUF)                                                                \
    }                                                                                                 \
    /* The runs of a row (outer x inner runs of `width`, placed as `runs` says) for its mg outputs,   \
     * straight into the output (`kept` values an output): runs of at most 4 vectors a few at once    \
     * (8 runs of 14, 4 of 28, 2 of 56 in a span of 8 vectors), longer runs span by span, each span   \
     * for every output while its input rows are in cache. */                                         \
    __attribute__((target("avx512f"))) static void NAME##_runs_avx512(                                \
        const T *buffer, const int64_t *restrict offsets, int64_t taps, const T *w, const T *bias,    \
        int64_t mg, T *out, int64_t kept, const int64_t *runs)                                        \
    {                                                                                                 \
        enum { L = NAME##_LANES };                                                                    \
        const int64_t outer_pitch = runs[1], inner = runs[2], inner_pitch = runs[3], width = runs[4]; \
        const int64_t count = runs[0] * inner, per = (width + L - 1) / L;                             \
        if (per > 4) {                                                                                \
            for (int64_t r = 0; r < count; ++r)                                                       \
                for (int64_t m = 0; m < mg; ++m)                                                      \
                    NAME##_avx512(buffer + r / inner * outer_pitch + r % inner * inner_pitch, offsets, \
                                  taps, w + m * taps, bias ? bias + m : NULL, out + m * kept + r * width, \
                                  width);                                                             \
            return;                                                                                   \
        }                                                                                             \
        const MASK last = (MASK)(((uint64_t)1 << (width - (per - 1) * L)) - 1);                       \
        const int64_t group = 8 / per;                                                                \
        const T *p[8];                                                                                \
        T *q[8];                                                                                      \
        MASK mk[8];                                                                                   \
        int64_t place[8]; /* each vector's place in the span's output */                              \
        for (int v = 0; v < group * per; ++v) {                                                       \
            mk[v] = v % per == per - 1 ? last : (MASK)-1;                                             \
            place[v] = v / per * width + v % per * L;                                                 \
        }                                                                                             \
        int64_t a = 0, i = 0; /* the span's first run */                                              \
        for (int64_t first = 0; first < count; first += group) {                                      \
            const int64_t n = count - first < group ? count - first : group;                          \
            const int vectors = (int)(n * per);                                                       \
            for (int64_t r = 0, v = 0; r < n; ++r) {                                                  \
                for (int64_t j = 0; j < per; ++j, ++v)                                                \
                    p[v] = buffer + a * outer_pitch + i * inner_pitch + j * L;                        \
                if (++i == inner)                                                                     \
                    i = 0, ++a;                                                                       \
            }                                                                                         \
            for (int64_t m = 0; m < mg; ++m) {                                                        \
                T *o = out + m * kept + first * width;                                                \
                for (int v = 0; v < vectors; ++v)                                                     \
                    q[v] = o + place[v];                                                              \
                const T *wm = w + m * taps, *bm = bias ? bias + m : NULL;                             \
                switch (vectors) {                                                                    \
                case 1: NAME##_gather(p, q, mk, offsets, taps, wm, bm, 1); break;                     \
                case 2: NAME##_gather(p, q, mk, offsets, taps, wm, bm, 2); break;                     \
                case 3: NAME##_gather(p, q, mk, offsets, taps, wm, bm, 3); break;                     \
                case 4: NAME##_gather(p, q, mk, offsets, taps, wm, bm, 4); break;                     \
                case 5: NAME##_gather(p, q, mk, offsets, taps, wm, bm, 5); break;                     \
                case 6: NAME##_gather(p, q, mk, offsets, taps, wm, bm, 6); break;                     \
                case 7: NAME##_gather(p, q, mk, offsets, taps, wm, bm, 7); break;                     \
                default: NAME##_gather(p, q, mk, offsets, taps, wm, bm, 8); break;                    \
                }                                                                                     \
            }                                                                                         \
        }                                                                                             \
    }
#else
#define DEFINE_AVX512(NAME, T, V, SUF, MASK)
#endif

/* The taps' loops at most AVX2 even where AVX-512 is at hand: the tests run every form. */
static int taps_avx2_only = 0;

OVPOOL_EXPORT void ovpool_taps_avx2_only(int on) { taps_avx2_only = on; }

/* Whether the taps' loops are the AVX-512 ones (conv.py routes dense Convs of a few channels to
 * them only then). */
OVPOOL_EXPORT int ovpool_taps_avx512(void)
{
#if OVPOOL_AVX2
    return __builtin_cpu_supports("avx512f");
#else
    return 0;
#endif
}

#if OVPOOL_AVX2
#define TAPS_WIDE (!plain_only && !taps_avx2_only && __builtin_cpu_supports("avx512f"))
#define PICK_TAPS(NAME)                                                                               \
    (TAPS_WIDE                                   ? NAME##_avx512                                      \
     : !plain_only && __builtin_cpu_supports("avx2") ? NAME##_avx2                                    \
                                                 : NAME##_plain)
#define RUNS_WIDE(NAME, ...) NAME##_runs_avx512(__VA_ARGS__)
#else
#define TAPS_WIDE 0
#define PICK_TAPS(NAME) NAME##_plain
#define RUNS_WIDE(NAME, ...) (void)0
#endif

/* The geometry of a Conv's taps for one input shape (int64, built by conv.py
 * _compiled_geometry): rows (images x groups), groups, outputs a group (mg), input channels a group
 * (cg), an input plane's elements, a padded channel's elements (its phase planes, `plane`), the
 * zero-bordered buffer of a row (cg planes and what the last tap reads past them), the `cells` a
 * tap sweeps, the taps (cg x kernel), the number of copies, whether the kept positions are
 * computed straight into the output (1) or all cells into a scratch first (0) by the plain and
 * AVX2 loops, the same for the AVX-512 ones (which put several short runs in one span), the five int64 of
 * the runs (outer, outer pitch, inner, inner pitch, width) that place the kept positions in the
 * output, the taps' offsets, then each copy as 11 int64: source and target offset, three counts,
 * three source steps, three target steps (an input plane's positions into a phase plane). */
enum { G_ROWS, G_GROUPS, G_MG, G_CG, G_SOURCE, G_PLANE, G_BUFFER, G_CELLS, G_TAPS, G_COPIES, G_DIRECT,
       G_DIRECT_WIDE, G_RUNS, G_OFFSETS = G_RUNS + 5, COPY_INTS = 11 };

/* Bytes past a row's buffer that the AVX-512 loops' whole-vector loads may read. */
#define SLACK 64

/* For each row, its cg input planes are copied into the zero-bordered buffer (in cache; the
 * copies write the same positions each row, so the border stays zero), then each output's sums
 * are computed: a 2-D phase plane 18 wide holding 14x14 outputs is 14 runs of 1 row of 14, 18
 * apart; 1-D: 1 run of 1 row. Returns 0, or 1 when the buffer cannot be allocated. */
#define DEFINE_TAPS(NAME, T, V, SUF, MASK)                                                            \
    DEFINE_PLAIN(NAME, T)                                                                             \
    DEFINE_AVX2(NAME, T)                                                                              \
    DEFINE_AVX512(NAME, T, V, SUF, MASK)                                                              \
    OVPOOL_EXPORT int NAME(const T *x, const T *weights, const T *bias, T *out, const int64_t *geometry) \
    {                                                                                                 \
        void (*loop)(const T *, const int64_t *, int64_t, const T *, const T *, T *, int64_t) =       \
            PICK_TAPS(NAME);                                                                          \
        const int64_t rows = geometry[G_ROWS], groups = geometry[G_GROUPS], mg = geometry[G_MG];      \
        const int64_t cg = geometry[G_CG], source = geometry[G_SOURCE], plane = geometry[G_PLANE];    \
        const int64_t cells = geometry[G_CELLS], taps = geometry[G_TAPS];                             \
        const int wide = TAPS_WIDE;                                                                   \
        const int64_t copies = geometry[G_COPIES], direct = geometry[wide ? G_DIRECT_WIDE : G_DIRECT]; \
        const int64_t *runs = geometry + G_RUNS, *offsets = geometry + G_OFFSETS;                     \
        const int64_t *copy = offsets + taps;                                                         \
        const int64_t outer = runs[0], outer_pitch = runs[1], inner = runs[2];                        \
        const int64_t inner_pitch = runs[3], width = runs[4], kept = outer * inner * width;           \
        T *buffer = calloc(geometry[G_BUFFER] + SLACK / sizeof(T) + (direct ? 0 : cells), sizeof(T)); \
        if (!buffer)                                                                                  \
            return 1;                                                                                 \
        T *scratch = buffer + geometry[G_BUFFER] + SLACK / sizeof(T);                                 \
        for (int64_t r = 0; r < rows; ++r) {                                                          \
            const int64_t g = r % groups;                                                             \
            for (int64_t c = 0; c < cg; ++c)                                                          \
                for (const int64_t *p = copy; p < copy + COPY_INTS * copies; p += COPY_INTS) {        \
                    const T *from = x + (r * cg + c) * source + p[0];                                 \
                    T *to = buffer + c * plane + p[1];                                                \
                    for (int64_t i = 0; i < p[2]; ++i)                                                \
                        for (int64_t j = 0; j < p[3]; ++j) {                                          \
                            const T *f = from + i * p[5] + j * p[6];                                  \
                            T *t = to + i * p[8] + j * p[9];                                          \
                            if (p[7] == 1 && p[10] == 1)                                              \
                                memcpy(t, f, p[4] * sizeof(T));                                       \
                            else if (p[7] == 2 && p[10] == 1) /* stride 2: a loop the compiler vectorizes */ \
                                for (int64_t k = 0; k < p[4]; ++k)                                    \
                                    t[k] = f[2 * k];                                                  \
                            else                                                                      \
                                for (int64_t k = 0; k < p[4]; ++k)                                    \
                                    t[k * p[10]] = f[k * p[7]];                                       \
                        }                                                                             \
                }                                                                                     \
            const T *w = weights + g * mg * taps, *b = bias ? bias + g * mg : NULL;                   \
            if (direct && wide) {                                                                     \
                RUNS_WIDE(NAME, buffer, offsets, taps, w, b, mg, out, kept, runs);                    \
                out += mg * kept;                                                                     \
                continue;                                                                             \
            }                                                                                         \
            if (direct) {                                                                             \
                T *o = out;                                                                           \
                for (int64_t a = 0; a < outer; ++a)                                                   \
                    for (int64_t i = 0; i < inner; ++i, o += width)                                   \
                        for (int64_t m = 0; m < mg; ++m)                                              \
                            loop(buffer + a * outer_pitch + i * inner_pitch, offsets, taps, w + m * taps, \
                                 b ? b + m : NULL, o + m * kept, width);                              \
                out += mg * kept;                                                                     \
                continue;                                                                             \
            }                                                                                         \
            for (int64_t m = 0; m < mg; ++m) {                                                        \
                loop(buffer, offsets, taps, w + m * taps, b ? b + m : NULL, scratch, cells);          \
                for (int64_t a = 0; a < outer; ++a)                                                   \
                    for (int64_t i = 0; i < inner; ++i, out += width)                                 \
                        memcpy(out, scratch + a * outer_pitch + i * inner_pitch, width * sizeof(T));  \
            }                                                                                         \
        }                                                                                             \
        free(buffer);                                                                                 \
        return 0;                                                                                     \
    }

/* A Conv's bias added to its output (N, M, plane) in place: out[r, j] = out[r, j] + bias[r % M]
 * for each of the `rows` (N x M) planes, numpy's add in one pass (numpy's broadcast add takes a
 * call of its inner loop per plane). */
#define BIAS_BODY(T)                                                                                  \
    {                                                                                                 \
        for (int64_t r = 0, c = 0; r < rows; ++r, out += plane, c = c + 1 == channels ? 0 : c + 1) {  \
            const T b = bias[c];                                                                      \
            for (int64_t j = 0; j < plane; ++j)                                                       \
                out[j] = out[j] + b;                                                                  \
        }                                                                                             \
    }
#define BIAS_ARGS(T) T *restrict out, const T *restrict bias, int64_t rows, int64_t channels, int64_t plane

#if OVPOOL_AVX2
#define DEFINE_BIAS_AVX2(NAME, T) __attribute__((target("avx2"))) static void NAME##_avx2(BIAS_ARGS(T)) BIAS_BODY(T)
#else
#define DEFINE_BIAS_AVX2(NAME, T)
#endif

#define DEFINE_BIAS(NAME, T)                                                                          \
    static void NAME##_plain(BIAS_ARGS(T)) BIAS_BODY(T)                                               \
    DEFINE_BIAS_AVX2(NAME, T)                                                                         \
    OVPOOL_EXPORT void NAME(BIAS_ARGS(T)) { PICK(NAME)(out, bias, rows, channels, plane); }

DEFINE_BIAS(ovpool_bias_f32, float)
DEFINE_BIAS(ovpool_bias_f64, double)

#if OVPOOL_AVX2
DEFINE_TAPS(ovpool_taps_f32, float, __m512, ps, __mmask16)
DEFINE_TAPS(ovpool_taps_f64, double, __m512d, pd, __mmask8)
#else
DEFINE_TAPS(ovpool_taps_f32, float, , , )
DEFINE_TAPS(ovpool_taps_f64, double, , , )
#endif

/* The chain: `ops` rows of 4 int64 (code, a, b, c), each operand -1 for the previous row's result,
 * -2 for the value a CHAIN_SAVE row saved (a node's input that later rows of the node read again),
 * or the index of an argument; an argument is `n` values, one, or one per plane of `plane` positions
 * (`sizes`: a (1, 96, 1, 1) scale of a (1, 96, 80, 80) tensor is 96 values, one per plane of 6400;
 * blocks then end at plane boundaries, and such a value is read as one value). Codes (enum chain_op
 * below): CHAIN_ADD a + b, CHAIN_SUB a - b, CHAIN_MUL a * b, CHAIN_DIV a / b, CHAIN_CLIP clip(a,
 * b, c) as numpy 2 computes it for floats: min(max(a, b), c) where max(x, y) is x if x is NaN or
 * x >= y, else y, and min(x, y) is x if x is NaN or x <= y, else y (np.clip(-0.0, 0, inf) is -0.0;
 * a NaN bound gives NaN everywhere), written `x < low ? low : x` and `v > high ? high : v` for
 * bounds that are numbers (one vector max and min); CHAIN_SAVE saves a for the rows after (the
 * previous result stays as it was); CHAIN_SQRT sqrt(a), correctly rounded as IEEE 754 has it and
 * numpy computes it (sqrt(2) in float32 is 1.41421354, sqrt(-0) is -0, sqrt(-1) NaN). A
 * row whose operands are all one value each computes one value (a squeeze-excite gate's
 * HardSigmoid once per plane, not per position). The last row writes `out`, each position after
 * the rows before it read it (`out` may be an argument). */
#define CHAIN_BLOCK 256

/* The instruction codes (ovpool/engine/native/chain_ops.py's table; tests/test_chain_codes.py
 * holds the two equal) and how many operands each reads. */
enum chain_op { CHAIN_ADD = 1, CHAIN_SUB = 2, CHAIN_MUL = 3, CHAIN_DIV = 4, CHAIN_CLIP = 5, CHAIN_SAVE = 6, CHAIN_SQRT = 7 };
static const int chain_operands[] = {
    [CHAIN_ADD] = 2, [CHAIN_SUB] = 2, [CHAIN_MUL] = 2, [CHAIN_DIV] = 2, [CHAIN_CLIP] = 3, [CHAIN_SAVE] = 1, [CHAIN_SQRT] = 1,
};

/* An operand of a row over the block from `start`: the previous result, the saved value, n values,
 * one value, or the value of the block's plane; `s` is 0 for one value. */
#define CHAIN_SOURCE(ref, p, s)                                                                       \
    if ((ref) == -1) {                                                                                \
        p = value;                                                                                    \
        s = value_wide;                                                                               \
    } else if ((ref) == -2) {                                                                         \
        p = saved;                                                                                    \
        s = saved_wide;                                                                               \
    } else if (sizes[(ref)] == n) {                                                                   \
        p = args[(ref)] + start;                                                                      \
        s = 1;                                                                                        \
    } else if (sizes[(ref)] == 1) {                                                                   \
        p = args[(ref)];                                                                              \
        s = 0;                                                                                        \
    } else {                                                                                          \
        p = args[(ref)] + start / plane;                                                              \
        s = 0;                                                                                        \
    }

/* The row's one value `r` as its result: the last row fills its positions of `out`. */
#define CHAIN_ONE(T, r)                                                                                 \
    {                                                                                                 \
        const T one = (r);                                                                            \
        if (last)                                                                                     \
            for (int64_t j = 0; j < m; ++j)                                                           \
                dest[j] = one;                                                                        \
        else                                                                                          \
            value[0] = one;                                                                           \
        value_wide = 0;                                                                               \
    }

#define CHAIN_BINARY(T, EXPR)                                                                         \
    if (sa && sb) {                                                                                   \
        for (int64_t j = 0; j < m; ++j) {                                                             \
            const T x = pa[j], y = pb[j];                                                             \
            dest[j] = EXPR;                                                                           \
        }                                                                                             \
        value_wide = 1;                                                                               \
    } else if (sa) {                                                                                  \
        const T y = pb[0];                                                                            \
        for (int64_t j = 0; j < m; ++j) {                                                             \
            const T x = pa[j];                                                                        \
            dest[j] = EXPR;                                                                           \
        }                                                                                             \
        value_wide = 1;                                                                               \
    } else if (sb) {                                                                                  \
        const T x = pa[0];                                                                            \
        for (int64_t j = 0; j < m; ++j) {                                                             \
            const T y = pb[j];                                                                        \
            dest[j] = EXPR;                                                                           \
        }                                                                                             \
        value_wide = 1;                                                                               \
    } else {                                                                                          \
        const T x = pa[0], y = pb[0];                                                                 \
        CHAIN_ONE(T, EXPR)                                                                             \
    }

#define CHAIN_BODY(T, SQRT)                                                                           \
    {                                                                                                 \
        T value[CHAIN_BLOCK], saved[CHAIN_BLOCK];                                                     \
        for (int64_t start = 0, m = 0; start < n; start += m) {                                       \
            const int64_t left = plane ? plane - start % plane : n - start;                           \
            m = left < CHAIN_BLOCK ? left : CHAIN_BLOCK;                                              \
            int value_wide = 1, saved_wide = 1;                                                       \
            for (int64_t k = 0; k < count; ++k) {                                                     \
                const int64_t *row = ops + 4 * k;                                                     \
                const int last = k == count - 1;                                                      \
                T *dest = last ? out + start : value;                                                 \
                const T *pa, *pb;                                                                     \
                int sa, sb;                                                                           \
                CHAIN_SOURCE(row[1], pa, sa)                                                          \
                CHAIN_SOURCE(row[2], pb, sb)                                                          \
                switch (row[0]) {                                                                     \
                case CHAIN_ADD:                                                                       \
                    CHAIN_BINARY(T, x + y)                                                            \
                    break;                                                                            \
                case CHAIN_SUB:                                                                       \
                    CHAIN_BINARY(T, x - y)                                                            \
                    break;                                                                            \
                case CHAIN_MUL:                                                                       \
                    CHAIN_BINARY(T, x * y)                                                            \
                    break;                                                                            \
                case CHAIN_DIV:                                                                       \
                    CHAIN_BINARY(T, x / y)                                                            \
                    break;                                                                            \
                case CHAIN_SAVE:                                                                      \
                    if (sa)                                                                           \
                        memcpy(saved, pa, m * sizeof(T));                                             \
                    else                                                                              \
                        saved[0] = pa[0];                                                             \
                    saved_wide = sa;                                                                  \
                    break;                                                                            \
                case CHAIN_SQRT:                                                                      \
                    if (sa) {                                                                         \
                        for (int64_t j = 0; j < m; ++j)                                               \
                            dest[j] = SQRT(pa[j]);                                                    \
                        value_wide = 1;                                                               \
                    } else                                                                            \
                        CHAIN_ONE(T, SQRT(pa[0]))                                                      \
                    break;                                                                            \
                case CHAIN_CLIP: {                                                                    \
                    const T low = pb[0], high = args[row[3]][0];                                      \
                    if (low != low || high != high) {                                                 \
                        CHAIN_ONE(T, low != low ? low : high)                                          \
                    } else if (sa) {                                                                  \
                        for (int64_t j = 0; j < m; ++j) {                                             \
                            const T x = pa[j];                                                        \
                            const T v = x < low ? low : x;                                            \
                            dest[j] = v > high ? high : v;                                            \
                        }                                                                             \
                        value_wide = 1;                                                               \
                    } else {                                                                          \
                        const T x = pa[0];                                                            \
                        const T v = x < low ? low : x;                                                \
                        CHAIN_ONE(T, v > high ? high : v)                                              \
                    }                                                                                 \
                }                                                                                     \
                }                                                                                     \
            }                                                                                         \
        }                                                                                             \
    }

#define CHAIN_ARGS(T)                                                                                 \
    int64_t n, int64_t plane, const T *const *args, const int64_t *sizes, int64_t count, const int64_t *ops, T *out

#if OVPOOL_AVX2
#define DEFINE_CHAIN_AVX2(NAME, T, SQRT) __attribute__((target("avx2"))) static void NAME##_avx2(CHAIN_ARGS(T)) CHAIN_BODY(T, SQRT)
#else
#define DEFINE_CHAIN_AVX2(NAME, T, SQRT)
#endif

#define DEFINE_CHAIN(NAME, T, SQRT)                                                                   \
    static void NAME##_plain(CHAIN_ARGS(T)) CHAIN_BODY(T, SQRT)                                       \
    DEFINE_CHAIN_AVX2(NAME, T, SQRT)                                                                  \
    static void NAME(CHAIN_ARGS(T)) { PICK(NAME)(n, plane, args, sizes, count, ops, out); }

DEFINE_CHAIN(ovpool_chain_f32, float, sqrtf)
DEFINE_CHAIN(ovpool_chain_f64, double, sqrt)

#define CHAIN_MOST 64 /* arguments of one chain call, its constants included */

/* chain(out, plane, ops, *arguments): the chain of `ops` (C-contiguous int64, rows of 4) over
 * `out`'s positions (a C-contiguous float32 or float64 buffer, written), each argument a
 * C-contiguous buffer of out's type holding n values, one, or one per plane of `plane` positions.
 * A row that names no argument, an argument of another type or length, is a ValueError: nothing
 * is read out of bounds whatever the caller passes. */
static PyObject *chain(PyObject *self, PyObject *const *argv, Py_ssize_t argc)
{
    Py_buffer views[CHAIN_MOST + 2];
    const void *args[CHAIN_MOST];
    int64_t sizes[CHAIN_MOST];
    Py_ssize_t held = 0;
    PyObject *result = NULL;
    if (argc < 3 || argc - 3 > CHAIN_MOST) {
        PyErr_SetString(PyExc_TypeError, "chain(out, plane, ops, *arguments): 0 to 64 arguments");
        return NULL;
    }
    const long long plane = PyLong_AsLongLong(argv[1]);
    if (plane == -1 && PyErr_Occurred())
        return NULL;
    if (PyObject_GetBuffer(argv[0], &views[0], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0)
        return NULL;
    held = 1;
    const Py_ssize_t width = views[0].itemsize;
    const char *format = views[0].format;
    if (!format || !((format[0] == 'f' && width == 4) || (format[0] == 'd' && width == 8)) || format[1]) {
        PyErr_SetString(PyExc_ValueError, "chain: out is not float32 or float64");
        goto done;
    }
    const int64_t n = views[0].len / width;
    if (PyObject_GetBuffer(argv[2], &views[1], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        goto done;
    held = 2;
    if (views[1].itemsize != 8 || !views[1].format || views[1].format[1] ||
        (views[1].format[0] != 'q' && views[1].format[0] != 'l') || views[1].len % 32) {
        PyErr_SetString(PyExc_ValueError, "chain: ops is not rows of 4 int64");
        goto done;
    }
    const int64_t count = views[1].len / 32;
    const int64_t *ops = views[1].buf;
    const Py_ssize_t arguments = argc - 3;
    if (plane < 0 || (plane > 0 && n % plane)) {
        PyErr_SetString(PyExc_ValueError, "chain: plane does not divide out's length");
        goto done;
    }
    for (Py_ssize_t k = 0; k < arguments; ++k) {
        if (PyObject_GetBuffer(argv[3 + k], &views[2 + k], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
            goto done;
        held = 3 + k;
        const Py_buffer *view = &views[2 + k];
        const int64_t size = view->len / width;
        if (view->itemsize != width || !view->format || strcmp(view->format, format) ||
            !(size == n || size == 1 || (plane > 0 && size == n / plane))) {
            PyErr_Format(PyExc_ValueError, "chain: argument %zd is not of out's type and a length it can read", k);
            goto done;
        }
        args[k] = view->buf;
        sizes[k] = size;
    }
    int saved = 0, valued = 0;
    for (int64_t k = 0; k < count; ++k) {
        const int64_t *row = ops + 4 * k;
        if (row[0] < CHAIN_ADD || row[0] > CHAIN_SQRT) {
            PyErr_Format(PyExc_ValueError, "chain: row %lld has no code %lld", (long long)k, (long long)row[0]);
            goto done;
        }
        const int operands = chain_operands[row[0]];
        for (int o = 1; o <= operands; ++o) {
            const int64_t ref = row[o];
            const int clip_bound = row[0] == CHAIN_CLIP && o > 1;
            if (ref >= arguments || ref < -2 || (ref == -1 && !valued) || (ref == -2 && !saved) || (clip_bound && ref < 0)) {
                PyErr_Format(PyExc_ValueError, "chain: row %lld reads no value at operand %d", (long long)k, o);
                goto done;
            }
        }
        saved = saved || row[0] == CHAIN_SAVE;
        valued = valued || row[0] != CHAIN_SAVE;
    }
    if (count > 0 && ops[4 * (count - 1)] == CHAIN_SAVE) {
        PyErr_SetString(PyExc_ValueError, "chain: the last row saves");
        goto done;
    }
    if (width == 4)
        ovpool_chain_f32(n, plane, (const float *const *)args, sizes, count, ops, views[0].buf);
    else
        ovpool_chain_f64(n, plane, (const double *const *)args, sizes, count, ops, views[0].buf);
    Py_INCREF(Py_None);
    result = Py_None;
done:
    for (Py_ssize_t k = 0; k < held; ++k)
        PyBuffer_Release(&views[k]);
    return result;
}

static PyObject *address(PyObject *self, PyObject *array)
{
    Py_buffer view;
    if (PyObject_GetBuffer(array, &view, PyBUF_STRIDES) < 0)
        return NULL;
    PyObject *result = PyLong_FromVoidPtr(view.buf);
    PyBuffer_Release(&view);
    return result;
}

/* bias_f32(out, bias, rows, channels, plane) and bias_f64: ovpool_bias_f32/f64 called from Python
 * with the five integers (addresses and counts) read in C: 0.2 us where the ctypes call of the
 * exported function takes about 1.5. The caller passes the addresses of arrays it holds, as it
 * does to the ctypes functions. */
#define DEFINE_BIAS_CALL(NAME, T)                                                                     \
    static PyObject *NAME##_call(PyObject *self, PyObject *const *argv, Py_ssize_t argc)              \
    {                                                                                                 \
        int64_t v[3];                                                                                 \
        if (argc != 5) {                                                                              \
            PyErr_SetString(PyExc_TypeError, #NAME "(out, bias, rows, channels, plane)");             \
            return NULL;                                                                              \
        }                                                                                             \
        void *out = PyLong_AsVoidPtr(argv[0]), *bias = PyLong_AsVoidPtr(argv[1]);                     \
        for (int k = 0; k < 3; ++k)                                                                   \
            v[k] = PyLong_AsLongLong(argv[k + 2]);                                                    \
        if (PyErr_Occurred())                                                                         \
            return NULL;                                                                              \
        NAME((T *)out, (const T *)bias, v[0], v[1], v[2]);                                            \
        Py_RETURN_NONE;                                                                               \
    }

DEFINE_BIAS_CALL(ovpool_bias_f32, float)
DEFINE_BIAS_CALL(ovpool_bias_f64, double)

/* taps_f32(x, weights, bias, out, geometry) and taps_f64: ovpool_taps_f32/f64 from Python as the
 * bias calls are (five addresses, bias 0 for none), returning its 0 or 1. */
#define DEFINE_TAPS_CALL(NAME, T)                                                                     \
    static PyObject *NAME##_call(PyObject *self, PyObject *const *argv, Py_ssize_t argc)              \
    {                                                                                                 \
        void *v[5];                                                                                   \
        if (argc != 5) {                                                                              \
            PyErr_SetString(PyExc_TypeError, #NAME "(x, weights, bias, out, geometry)");              \
            return NULL;                                                                              \
        }                                                                                             \
        for (int k = 0; k < 5; ++k)                                                                   \
            v[k] = PyLong_AsVoidPtr(argv[k]);                                                         \
        if (PyErr_Occurred())                                                                         \
            return NULL;                                                                              \
        const int failed = NAME((const T *)v[0], (const T *)v[1], (const T *)v[2], (T *)v[3], (const int64_t *)v[4]); \
        return PyLong_FromLong(failed);                                                               \
    }

DEFINE_TAPS_CALL(ovpool_taps_f32, float)
DEFINE_TAPS_CALL(ovpool_taps_f64, double)

static PyMethodDef methods[] = {
    {"address", address, METH_O, "The address of an array's first element."},
    {"bias_f32", (PyCFunction)(void (*)(void))ovpool_bias_f32_call, METH_FASTCALL, "bias_f32(out, bias, rows, channels, plane)"},
    {"bias_f64", (PyCFunction)(void (*)(void))ovpool_bias_f64_call, METH_FASTCALL, "bias_f64(out, bias, rows, channels, plane)"},
    {"taps_f32", (PyCFunction)(void (*)(void))ovpool_taps_f32_call, METH_FASTCALL, "taps_f32(x, weights, bias, out, geometry)"},
    {"taps_f64", (PyCFunction)(void (*)(void))ovpool_taps_f64_call, METH_FASTCALL, "taps_f64(x, weights, bias, out, geometry)"},
    {"chain", (PyCFunction)(void (*)(void))chain, METH_FASTCALL, "chain(out, plane, ops, *arguments)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_compiled", NULL, -1, methods};

PyMODINIT_FUNC PyInit__compiled(void) { return PyModule_Create(&module); }
