/* cb3._cb3.bench_reference: times the chacha20-blake3 crate itself, and cb3's Rust core and its
 * parts (rustlib/src/ffi/bench.rs), for the raw-Rust column and the evidence rows of `python -m cb3 bench`. */
#include "cb3ext.h"

HPyDef_METH(bench_reference, "bench_reference", HPyFunc_KEYWORDS,
            .doc = "bench_reference(mode, message_len, iterations)\n--\n\n"
                   "Seconds taken by `iterations` calls of the crate's encrypt (mode 0), "
                   "encrypt_in_place_detached (1) or decrypt (2), of cb3's own Rust encryption (3), of cb3's ChaCha20 "
                   "and keyed BLAKE3 back to back (4), or of (3)'s XOR without its MAC, without (5) or with (6) its "
                   "private copy, on a message of at most 1 GiB.")
static HPy bench_reference_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)
{
    static const cb3_argspec spec = {"bench_reference", {"mode", "message_len", "iterations", NULL}, 3, 0};
    static const cb3_int_param params[3] = {{"mode", 0, NULL}, {"message_len", 0, NULL}, {"iterations", 0, NULL}};
    HPy arg[3];
    uint64_t value[3];
    if (cb3_parse_args(ctx, &spec, args, nargs, kwnames, arg) < 0)
        return HPy_NULL;
    for (int i = 0; i < 3; i++) {
        if (cb3_arg_int(ctx, arg[i], &params[i], &value[i]) < 0)
            return HPy_NULL;
    }
    uint64_t elapsed_ns = 0;
    cb3_result r;
    /* Rust checks the ranges; values past the C types become ones it refuses. */
    CB3_RUN(ctx, NULL, (size_t)CB3_GIL_THRESHOLD, r,
            cb3_bench_reference(value[0] > UINT_MAX ? UINT_MAX : (unsigned int)value[0],
                                value[1] > SIZE_MAX ? SIZE_MAX : (size_t)value[1], value[2], &elapsed_ns));
    static const cb3_error_context given = {
        .invalid = "bench_reference() takes mode in range(0, 7), message_len in range(0, 2**30 + 1) "
                   "and iterations of at least 1"};
    if (cb3_raise(ctx, r, &given) < 0)
        return HPy_NULL;
    return HPyFloat_FromDouble(ctx, (double)elapsed_ns / 1e9);
}
