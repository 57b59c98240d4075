/* One call frame for every function and method of the extension: parse the
 * arguments, borrow their buffers, run the Rust call (CB3_CALL_RUN: the GIL
 * released from CB3_GIL_THRESHOLD bytes), raise its failure, release. */
#include "cb3ext.h"

int cb3_call_parse(HPyContext *ctx, cb3_call *call, const cb3_argspec *spec, const HPy *args, size_t nargs,
                   HPy kwnames)
{
    return cb3_parse_args(ctx, spec, args, nargs, kwnames, call->arg);
}

int cb3_call_parse_new(HPyContext *ctx, cb3_call *call, const cb3_argspec *spec, const HPy *args,
                       HPy_ssize_t nargs, HPy kw)
{
    return cb3_parse_new_args(ctx, spec, args, nargs, kw, call->arg, call->owned);
}

HPy cb3_call_end(HPyContext *ctx, cb3_call *call, HPy result)
{
    for (size_t i = 0; i < sizeof call->out / sizeof call->out[0]; i++)
        cb3_output_discard(&call->out[i]);
    cb3_release_all(ctx, &call->set);
    cb3_close_all(ctx, call->owned, CB3_MAX_ARGS);
    return result;
}

int cb3_call_parse_key_and_nonce(HPyContext *ctx, cb3_call *call, const cb3_argspec *spec, const HPy *args,
                                 HPy_ssize_t nargs, HPy kw, const cb3_buffer **key, const cb3_buffer **nonce)
{
    if (cb3_call_parse_new(ctx, call, spec, args, nargs, kw) < 0)
        return -1;
    *key = cb3_call_borrow(ctx, call, 0, "key", CB3_READ);
    *nonce = *key ? cb3_call_borrow(ctx, call, 1, "nonce", CB3_READ) : NULL;
    return *nonce ? 0 : -1;
}
