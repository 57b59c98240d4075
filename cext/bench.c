/* cb3._cb3.bench_reference: times the chacha20-blake3 crate itself (rustlib/src/bench.rs)
 * for the raw-Rust column of `python -m cb3 bench`. */
#include "cb3ext.h"

HPyDef_METH(bench_reference, "bench_reference", HPyFunc_VARARGS,
            .doc = "bench_reference(mode, message_len, iterations) -> float\n\n"
                   "Seconds taken by `iterations` calls of the crate's encrypt (mode 0), "
                   "encrypt_in_place_detached (1) or decrypt (2).")
static HPy bench_reference_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs)
{
    int mode;
    HPy_ssize_t message_len;
    unsigned long long iterations;
    if (!HPyArg_Parse(ctx, NULL, args, nargs, "inK:bench_reference", &mode, &message_len, &iterations))
        return HPy_NULL;
    if (mode < 0 || mode > 2 || message_len < 0)
        return cb3_raisef(ctx, ctx->h_ValueError, "mode must be 0, 1 or 2 and message_len >= 0"), HPy_NULL;
    uint64_t elapsed_ns = 0;
    cb3_result r;
    CB3_RUN(ctx, NULL, (size_t)CB3_GIL_THRESHOLD, r,
            cb3_bench_reference((cb3_bench_mode)mode, (size_t)message_len, iterations, &elapsed_ns));
    if (r != CB3_RESULT_OK) {
        cb3_given_lengths none = {0, 0, 0};
        cb3_raise(ctx, r, &none);
        return HPy_NULL;
    }
    return HPyFloat_FromDouble(ctx, (double)elapsed_ns / 1e9);
}
