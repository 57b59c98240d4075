/* Strict argument parsing for vectorcall methods and tp_new.
 *
 * HPyArg_ParseKeywords* silently ignore surplus positional arguments,
 * unknown keywords and duplicates; a crypto API must not (a misspelled
 * `associated_data=` would otherwise authenticate nothing). */
#include <string.h>

#include "cb3ext.h"

static int count_names(const cb3_argspec *spec)
{
    int n = 0;
    while (n < CB3_MAX_ARGS && spec->names[n] != NULL)
        n++;
    return n;
}

/* Stores `value` under keyword `name`; `value` stays owned by the caller. */
static int put_keyword(HPyContext *ctx, const cb3_argspec *spec, int nnames, HPy name, HPy value, HPy *out)
{
    HPy_ssize_t size;
    const char *text = HPyUnicode_AsUTF8AndSize(ctx, name, &size);
    if (text == NULL)
        return -1;
    for (int i = 0; i < nnames; i++) {
        /* The whole name: `associated_data\0x` is not `associated_data`. */
        if ((size_t)size == strlen(spec->names[i]) && memcmp(text, spec->names[i], (size_t)size) == 0) {
            if (i < spec->positional_only)
                return cb3_raisef(ctx, ctx->h_TypeError,
                                  "%s() got some positional-only arguments passed as keyword arguments: '%s'",
                                  spec->function, spec->names[i]);
            if (!HPy_IsNull(out[i]))
                return cb3_raisef(ctx, ctx->h_TypeError, "%s() got multiple values for argument '%s'",
                                  spec->function, spec->names[i]);
            out[i] = value;
            return 0;
        }
    }
    /* The name's repr: it may hold a NUL or other unprintable characters. */
    HPy repr = HPy_Repr(ctx, name);
    HPy_ssize_t shown_size;
    const char *shown = HPy_IsNull(repr) ? NULL : HPyUnicode_AsUTF8AndSize(ctx, repr, &shown_size);
    if (shown == NULL) {
        HPyErr_Clear(ctx);
        shown = "?";
    }
    cb3_raisef(ctx, ctx->h_TypeError, "%s() got an unexpected keyword argument %.100s", spec->function, shown);
    if (!HPy_IsNull(repr))
        HPy_Close(ctx, repr);
    return -1;
}

static int start(HPyContext *ctx, const cb3_argspec *spec, size_t nargs, const HPy *args, HPy *out, int *nnames)
{
    *nnames = count_names(spec);
    int positional = spec->max_positional ? spec->max_positional : *nnames;
    if (nargs > (size_t)positional)
        return cb3_raisef(ctx, ctx->h_TypeError, "%s() takes at most %d positional arguments (%zu given)",
                          spec->function, positional, nargs);
    for (int i = 0; i < *nnames; i++)
        out[i] = i < (int)nargs ? args[i] : HPy_NULL;
    return 0;
}

static int check_required(HPyContext *ctx, const cb3_argspec *spec, const HPy *out)
{
    for (int i = 0; i < spec->required; i++) {
        if (HPy_IsNull(out[i]))
            return cb3_raisef(ctx, ctx->h_TypeError, "%s() missing required argument '%s' (pos %d)", spec->function,
                              spec->names[i], i + 1);
    }
    return 0;
}

int cb3_parse_args(HPyContext *ctx, const cb3_argspec *spec, const HPy *args, size_t nargs, HPy kwnames, HPy *out)
{
    int nnames;
    if (start(ctx, spec, nargs, args, out, &nnames) < 0)
        return -1;
    if (!HPy_IsNull(kwnames)) {
        HPy_ssize_t nkw = HPy_Length(ctx, kwnames);
        for (HPy_ssize_t k = 0; k < nkw; k++) {
            HPy name = HPy_GetItem_i(ctx, kwnames, k);
            if (HPy_IsNull(name))
                return -1;
            int status = put_keyword(ctx, spec, nnames, name, args[nargs + (size_t)k], out);
            HPy_Close(ctx, name);
            if (status < 0)
                return -1;
        }
    }
    return check_required(ctx, spec, out);
}

int cb3_parse_new_args(HPyContext *ctx, const cb3_argspec *spec, const HPy *args, HPy_ssize_t nargs, HPy kw,
                       HPy *out, HPy *owned)
{
    for (int i = 0; i < CB3_MAX_ARGS; i++)
        owned[i] = HPy_NULL;
    if (!HPy_IsNull(kw) && HPyTuple_Check(ctx, kw)) /* PyPy: kwnames, values follow args */
        return cb3_parse_args(ctx, spec, args, (size_t)nargs, kw, out);

    int nnames;
    if (start(ctx, spec, (size_t)nargs, args, out, &nnames) < 0)
        return -1;
    if (!HPy_IsNull(kw)) { /* CPython: a dict */
        HPy keys = HPyDict_Keys(ctx, kw);
        if (HPy_IsNull(keys))
            return -1;
        HPy_ssize_t nkw = HPy_Length(ctx, keys);
        int status = 0;
        for (HPy_ssize_t k = 0; k < nkw && status == 0; k++) {
            HPy name = HPy_GetItem_i(ctx, keys, k);
            HPy value = HPy_GetItem(ctx, kw, name);
            if (HPy_IsNull(name) || HPy_IsNull(value)) {
                status = -1;
            } else if (k >= CB3_MAX_ARGS) {
                status = cb3_raisef(ctx, ctx->h_TypeError, "%s() got too many keyword arguments", spec->function);
            } else {
                owned[k] = value;
                value = HPy_NULL;
                status = put_keyword(ctx, spec, nnames, name, owned[k], out);
            }
            if (!HPy_IsNull(name))
                HPy_Close(ctx, name);
            if (!HPy_IsNull(value))
                HPy_Close(ctx, value);
        }
        HPy_Close(ctx, keys);
        if (status < 0)
            return -1;
    }
    return check_required(ctx, spec, out);
}

void cb3_close_all(HPyContext *ctx, HPy *handles, int n)
{
    for (int i = 0; i < n; i++) {
        if (!HPy_IsNull(handles[i]))
            HPy_Close(ctx, handles[i]);
        handles[i] = HPy_NULL;
    }
}

int cb3_arg_u64(HPyContext *ctx, HPy obj, const char *name, HPy range_error, uint64_t *out)
{
    if (HPy_TypeCheck(ctx, obj, ctx->h_LongType)) { /* the common case: an int */
        uint64_t value = HPyLong_AsUInt64_t(ctx, obj);
        if (!(value == (uint64_t)-1 && HPyErr_Occurred(ctx))) {
            *out = value;
            return 0;
        }
        HPyErr_Clear(ctx);
    }
    HPy index = HPy_Index(ctx, obj);
    if (HPy_IsNull(index)) {
        HPyErr_Clear(ctx);
        PyObject *py = HPy_AsPyObject(ctx, obj);
        cb3_raisef(ctx, ctx->h_TypeError, "%s must be an int, not '%s'", name, py ? Py_TYPE(py)->tp_name : "?");
        Py_XDECREF(py);
        return -1;
    }
    uint64_t value = HPyLong_AsUInt64_t(ctx, index);
    int status = 0;
    if (value == (uint64_t)-1 && HPyErr_Occurred(ctx)) {
        HPyErr_Clear(ctx);
        HPy zero = HPyLong_FromLong(ctx, 0);
        int negative = HPy_RichCompareBool(ctx, index, zero, HPy_LT);
        HPy_Close(ctx, zero);
        if (negative)
            status = cb3_raisef(ctx, range_error, "%s must not be negative", name);
        else
            status = cb3_raisef(ctx, range_error, "%s must be less than 2**64", name);
    } else {
        *out = value;
    }
    HPy_Close(ctx, index);
    return status;
}
