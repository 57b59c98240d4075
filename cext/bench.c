/* cb3._cb3.bench_reference: times the chacha20-blake3 crate itself (rustlib/src/bench.rs)
 * for the raw-Rust column of `python -m cb3 bench`. */
#include "cb3ext.h"

/* An int argument in [min, max]: TypeError or ValueError naming it. */
static int int_in_range(HPyContext *ctx, HPy value, const char *name, long long min, long long max, long long *out)
{
    if (!HPy_TypeCheck(ctx, value, ctx->h_LongType) || HPy_TypeCheck(ctx, value, ctx->h_BoolType))
        return cb3_raisef(ctx, ctx->h_TypeError, "%s must be an int", name);
    long long n = HPyLong_AsLongLong(ctx, value);
    if (n == -1 && HPyErr_Occurred(ctx)) {
        HPyErr_Clear(ctx);
        return cb3_raisef(ctx, ctx->h_ValueError, "%s must be in range(%lld, %lld)", name, min, max + 1);
    }
    if (n < min || n > max)
        return cb3_raisef(ctx, ctx->h_ValueError, "%s must be in range(%lld, %lld)", name, min, max + 1);
    *out = n;
    return 0;
}

HPyDef_METH(bench_reference, "bench_reference", HPyFunc_KEYWORDS,
            .doc = "bench_reference(mode, message_len, iterations)\n--\n\n"
                   "Seconds taken by `iterations` calls of the crate's encrypt (mode 0), "
                   "encrypt_in_place_detached (1) or decrypt (2) on a message of at most 1 GiB.")
static HPy bench_reference_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)
{
    static const cb3_argspec spec = {"bench_reference", {"mode", "message_len", "iterations", NULL}, 3, 0};
    HPy arg[3];
    long long mode, message_len, iterations;
    if (cb3_parse_args(ctx, &spec, args, nargs, kwnames, arg) < 0 ||
        int_in_range(ctx, arg[0], "mode", 0, 2, &mode) < 0 ||
        int_in_range(ctx, arg[1], "message_len", 0, 1LL << 30, &message_len) < 0 ||
        int_in_range(ctx, arg[2], "iterations", 1, INT64_MAX - 1, &iterations) < 0)
        return HPy_NULL;
    uint64_t elapsed_ns = 0;
    cb3_result r;
    CB3_RUN(ctx, NULL, (size_t)CB3_GIL_THRESHOLD, r,
            cb3_bench_reference((unsigned int)mode, (size_t)message_len, (uint64_t)iterations, &elapsed_ns));
    if (r != CB3_RESULT_OK) {
        cb3_raise(ctx, r, NULL);
        return HPy_NULL;
    }
    return HPyFloat_FromDouble(ctx, (double)elapsed_ns / 1e9);
}
