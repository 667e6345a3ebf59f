/* The depthwise Conv tap loop of ovpool/runtime/ops/conv.py (_conv_taps), compiled.
 *
 * For each plane row r of a tile (image * group) and each of its mg outputs m, over the flat
 * positions t of the phase planes:
 *     acc[r, m, t] = x[r, t + offsets[0]] * w[g, m, 0]
 *     acc[r, m, t] = acc[r, m, t] + x[r, t + offsets[k]] * w[g, m, k]   for k = 1 .. taps - 1
 *     acc[r, m, t] = acc[r, m, t] + bias[g, m]                          if there is a bias
 * with g = (first + r) % groups: the numpy loop's operations, one multiply then one add each, in
 * the same order, so that the results are the same bits. It is built with -ffp-contract=off: a
 * fused multiply-add would round once where numpy rounds twice.
 *
 * Loaded with ctypes (ovpool/runtime/ops/taps_native.py); the module itself has no functions.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#if defined(_WIN32)
#define OVPOOL_EXPORT __declspec(dllexport)
#else
#define OVPOOL_EXPORT __attribute__((visibility("default")))
#endif

/* The loop for one plane row and output: `out[t]` for t < cells. The plain form takes positions
 * 256 at a time (the partial sums stay in the first-level cache across the taps); the AVX2 form
 * (x86-64, GCC or Clang, chosen when the processor has it) holds 4 vectors of 32 bytes of sums in
 * registers across the taps, and takes the last positions as a block that overlaps the one before
 * (each position's sum is computed alone, so computing it twice changes nothing). */
#define PLAIN_BLOCK 256

#define DEFINE_PLAIN(NAME, T)                                                                         \
    static void NAME##_plain(const T *restrict row, const int64_t *restrict offsets, int64_t taps,   \
                             const T *restrict w, const T *restrict bias, T *restrict out,           \
                             int64_t cells)                                                          \
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
        const T *restrict row, const int64_t *restrict offsets, int64_t taps, const T *restrict w,   \
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

#if OVPOOL_AVX2
#define PICK(NAME) (__builtin_cpu_supports("avx2") ? NAME##_avx2 : NAME##_plain)
#else
#define PICK(NAME) NAME##_plain
#endif

/* The sums of one plane row and output go to `scratch` (cells long), then their kept positions to
 * the output: `outer` runs of `inner` rows of `width` values, the rows `inner_pitch` apart and the
 * runs `outer_pitch` apart in `scratch` (a 2-D phase plane 18 wide holding 14x14 outputs: 14 runs
 * of 1 row of 14, 18 apart; 1-D: 1 run of 1 row). */
#define DEFINE_TAPS(NAME, T)                                                                          \
    DEFINE_PLAIN(NAME, T)                                                                             \
    DEFINE_AVX2(NAME, T)                                                                              \
    OVPOOL_EXPORT void NAME(const T *buffer, int64_t plane, int64_t first, int64_t count,             \
                            int64_t groups, int64_t mg, const int64_t *offsets, int64_t taps,         \
                            const T *weights, const T *bias, T *scratch, int64_t cells, T *out,       \
                            const int64_t *runs)                                                      \
    {                                                                                                 \
        void (*loop)(const T *, const int64_t *, int64_t, const T *, const T *, T *, int64_t) =       \
            PICK(NAME);                                                                               \
        const int64_t outer = runs[0], outer_pitch = runs[1], inner = runs[2];                        \
        const int64_t inner_pitch = runs[3], width = runs[4];                                         \
        for (int64_t r = 0; r < count; ++r) {                                                         \
            const int64_t g = (first + r) % groups;                                                   \
            for (int64_t m = 0; m < mg; ++m) {                                                        \
                loop(buffer + r * plane, offsets, taps, weights + (g * mg + m) * taps,                \
                     bias ? bias + g * mg + m : NULL, scratch, cells);                                \
                for (int64_t a = 0; a < outer; ++a)                                                   \
                    for (int64_t b = 0; b < inner; ++b, out += width)                                 \
                        memcpy(out, scratch + a * outer_pitch + b * inner_pitch, width * sizeof(T));  \
            }                                                                                         \
        }                                                                                             \
    }

DEFINE_TAPS(ovpool_taps_f32, float)
DEFINE_TAPS(ovpool_taps_f64, double)

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_taps", NULL, -1, NULL};

PyMODINIT_FUNC PyInit__taps(void) { return PyModule_Create(&module); }
