/* The one call frame (call.h): parse, convert, borrow, size the outputs, run
 * the Rust call under the GIL rule, raise its failure or make the result,
 * release. */
#include "call.h"
#include "types.h"

/* Sets only what the end of the call and the parsers read (the arguments,
 * the borrowed count, the outputs), not the whole frame: the rest is written
 * before it is read (a constructor's owned handles by cb3_parse_new_args). */
static inline __attribute__((always_inline)) void start(cb3_call *call, HPy self, void *state)
{
    for (int i = 0; i < CB3_MAX_ARGS; i++)
        call->arg[i] = HPy_NULL;
    call->set.count = 0;
    for (size_t i = 0; i < sizeof call->out / sizeof call->out[0]; i++) {
        call->out[i].ptr = NULL;
        call->out[i].len = 0;
#if CB3_OUTPUT_VIA_HPY
        call->out[i].heap = NULL;
#else
        call->out[i].obj = NULL;
#endif
#if CB3_OUTPUT_BYTEARRAY_MIN > 0
        call->out[i].array = NULL;
#endif
    }
    call->self = self;
    call->state = state;
    call->made = NULL;
}

/* Discards unfinished outputs (an output owns memory only while its `ptr`
 * is set), frees an unadopted Rust object, releases the buffers and, for a
 * constructor, the handles its parser made; returns `result`. */
static inline __attribute__((always_inline)) HPy end(HPyContext *ctx, const cb3_method *m, cb3_call *call,
                                                    HPy result, int constructor)
{
    for (size_t i = 0; i < sizeof call->out / sizeof call->out[0]; i++) {
        if (call->out[i].ptr != NULL)
            cb3_output_discard(&call->out[i]);
    }
    if (call->made != NULL)
        m->free(call->made);
    cb3_release_all(ctx, &call->set);
    if (constructor)
        cb3_close_all(ctx, call->owned, CB3_MAX_ARGS);
    return result;
}

HPy cb3_pair(HPyContext *ctx, HPy first, HPy second)
{
    HPy result = HPy_NULL;
    HPy items[2] = {first, second};
    if (!HPy_IsNull(items[0]) && !HPy_IsNull(items[1]))
        result = HPyTuple_FromArray(ctx, items, 2);
    for (int i = 0; i < 2; i++) {
        if (!HPy_IsNull(items[i]))
            HPy_Close(ctx, items[i]);
    }
    return result;
}

HPy cb3_call_adopt(HPyContext *ctx, const cb3_method *m, cb3_call *call)
{
    HPy result = cb3_new_instance(ctx, call->self, call->made, m->kind);
    if (!HPy_IsNull(result))
        call->made = NULL; /* the instance owns it; otherwise end() frees it */
    return result;
}

/* The error context of a failed run: the method's (or a hook's), with the
 * lengths of the arguments that explain length failures. */
static int raise(HPyContext *ctx, const cb3_method *m, cb3_call *call, cb3_result r)
{
    cb3_error_context given = {.key = 0};
    if (call->given != NULL)
        given = *call->given;
    for (int i = 0; i < CB3_MAX_ARGS && m->spec.names[i] != NULL; i++) {
        switch (m->role[i] & ~CB3_ARG_NONE_OK) {
        case CB3_ARG_KEY:
            given.key = call->in[CB3_ARG_KEY]->len;
            break;
        case CB3_ARG_NONCE:
            given.nonce = call->in[CB3_ARG_NONCE]->len;
            break;
        case CB3_ARG_TAG:
            given.tag = call->in[CB3_ARG_TAG]->len;
            break;
        default:
            break;
        }
    }
    return cb3_raise(ctx, r, &given);
}

/* Everything after parsing. */
static HPy run(HPyContext *ctx, const cb3_method *m, cb3_call *call)
{
    if (m->convert != NULL && m->convert(ctx, call) < 0)
        return HPy_NULL;
    /* Borrow in the order of the names: the first bad argument is the one reported. */
    size_t counted = 0, buf_len = 0;
    int has_data = 0;
    for (int i = 0; i < CB3_MAX_ARGS && m->spec.names[i] != NULL; i++) {
        int role = m->role[i] & ~CB3_ARG_NONE_OK;
        if (role == CB3_ARG_OBJECT)
            continue;
        int flags = role == CB3_ARG_BUF   ? CB3_WRITE
                    : role == CB3_ARG_AAD || (m->role[i] & CB3_ARG_NONE_OK) ? CB3_READ | CB3_OPTIONAL
                                          : CB3_READ;
        const cb3_buffer *buf = cb3_borrow(ctx, &call->set, call->arg[i], m->spec.names[i], flags);
        if (buf == NULL)
            return HPy_NULL;
        call->in[role] = buf;
        if (role == CB3_ARG_DATA) {
            has_data = 1;
            counted += buf->len;
        } else if (role == CB3_ARG_AAD) {
            counted += buf->len;
        } else if (role == CB3_ARG_BUF) {
            buf_len = buf->len;
        }
    }
    call->input = has_data ? call->in[CB3_ARG_DATA]->len : buf_len;
    call->nbytes = has_data ? counted : counted + buf_len;
    call->given = m->given;
    if (m->inner && (call->inner = cb3_inner(ctx, call->self)) == NULL)
        return HPy_NULL;
    if (m->exact != CB3_SIZE_NONE) {
        /* An opened size of an input shorter than the tag has no exact
         * length: Rust refuses the message first. */
        size_t expected = cb3_size_of((cb3_size_rule)m->exact, m->fixed, call->input);
        if ((m->exact != CB3_SIZE_OPENED || call->input >= CB3_TAG_SIZE) && buf_len != expected) {
            cb3_raisef(ctx, ctx->h_ValueError, "buf must be exactly %zu bytes (%s), got %zu", expected,
                       m->exact_rule, buf_len);
            return HPy_NULL;
        }
    }
    for (int k = 0; k < 2; k++) {
        if (m->size[k] != CB3_SIZE_NONE &&
            cb3_output_new(ctx, cb3_size_of((cb3_size_rule)m->size[k], m->fixed, call->input), &call->out[k]) < 0)
            return HPy_NULL;
    }
    if (m->prepare != NULL && m->prepare(ctx, call) < 0)
        return HPy_NULL;
    cb3_result r;
    CB3_RUN(ctx, &call->set, call->nbytes, r, m->run(call));
    if (r != CB3_RESULT_OK) {
        raise(ctx, m, call, r);
        return HPy_NULL;
    }
    switch (m->returns) {
    case CB3_RETURN_BYTES:
        return cb3_output_finish(ctx, &call->out[0]);
    case CB3_RETURN_PAIR:
        return cb3_pair(ctx, cb3_output_finish(ctx, &call->out[0]), cb3_output_finish(ctx, &call->out[1]));
    case CB3_RETURN_COUNT:
        return cb3_count_new(ctx, call->written);
    case CB3_RETURN_NONE:
        return HPy_Dup(ctx, ctx->h_None);
    case CB3_RETURN_SELF:
        return HPy_Dup(ctx, call->self);
    case CB3_RETURN_ADOPT:
        return cb3_call_adopt(ctx, m, call);
    default:
        return m->finish(ctx, call);
    }
}

HPy cb3_method_call(HPyContext *ctx, const cb3_method *m, HPy self, const HPy *args, size_t nargs, HPy kwnames,
                    void *state)
{
    cb3_call call;
    start(&call, self, state);
    if (cb3_parse_args(ctx, &m->spec, args, nargs, kwnames, call.arg) < 0)
        return HPy_NULL;
    return end(ctx, m, &call, run(ctx, m, &call), 0);
}

HPy cb3_method_call_o(HPyContext *ctx, const cb3_method *m, HPy self, HPy arg)
{
    cb3_call call;
    start(&call, self, NULL);
    call.arg[0] = arg;
    return end(ctx, m, &call, run(ctx, m, &call), 0);
}

HPy cb3_method_new(HPyContext *ctx, const cb3_method *m, HPy type, const HPy *args, HPy_ssize_t nargs, HPy kw)
{
    cb3_call call;
    start(&call, type, NULL);
    HPy result = HPy_NULL;
    if (cb3_parse_new_args(ctx, &m->spec, args, nargs, kw, call.arg, call.owned) == 0)
        result = run(ctx, m, &call);
    return end(ctx, m, &call, result, 1);
}
