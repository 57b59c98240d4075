/* Strict argument parsing for vectorcall methods and tp_new.
 *
 * HPyArg_ParseKeywords* silently ignore surplus positional arguments,
 * unknown keywords and duplicates; a crypto API must not (a misspelled
 * `associated_data=` would otherwise authenticate nothing). */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "errors.h"
#include "types.h"

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

/* "encrypt(nonce, data, associated_data=...)": the call shape that messages
 * show, from the spec (required names bare, "/" after positional-only ones,
 * "*" before keyword-only ones). */
static void format_signature(const cb3_argspec *spec, int nnames, char *buf, size_t size)
{
    int positional = spec->max_positional ? spec->max_positional : nnames;
    int used = snprintf(buf, size, "%s(", spec->function);
    for (int i = 0; i < nnames && used >= 0 && (size_t)used < size; i++) {
        const char *sep = i == 0 ? "" : ", ";
        used += snprintf(buf + used, size - (size_t)used, "%s%s%s%s%s", sep, i == positional ? "*, " : "",
                         spec->names[i], i < spec->required ? "" : "=...", i + 1 == spec->positional_only ? ", /" : "");
    }
    if (used >= 0 && (size_t)used < size)
        snprintf(buf + used, size - (size_t)used, ")");
}

static int start(HPyContext *ctx, const cb3_argspec *spec, size_t nargs, const HPy *args, HPy *out, int *nnames)
{
    *nnames = count_names(spec);
    int positional = spec->max_positional ? spec->max_positional : *nnames;
    if (nargs > (size_t)positional) {
        /* Name the keyword-only arguments: ChaCha20Blake3(key, 4) is a
         * max_threads passed positionally. */
        char signature[160];
        format_signature(spec, *nnames, signature, sizeof signature);
        return cb3_raisef(ctx, ctx->h_TypeError, "%s() takes at most %d positional argument%s (%zu given)%s: %s",
                          spec->function, positional, positional == 1 ? "" : "s", nargs,
                          *nnames > positional ? "; the arguments after '*' are keyword-only (name=value)" : "",
                          signature);
    }
    for (int i = 0; i < *nnames; i++)
        out[i] = i < (int)nargs ? args[i] : HPy_NULL;
    return 0;
}

static int check_required(HPyContext *ctx, const cb3_argspec *spec, size_t nargs, const HPy *out)
{
    for (int i = 0; i < spec->required; i++) {
        if (!HPy_IsNull(out[i]))
            continue;
        /* encrypt(data) binds data to nonce: say where it went and show the order. */
        char signature[160];
        format_signature(spec, count_names(spec), signature, sizeof signature);
        if (nargs == 0 || nargs > (size_t)i)
            return cb3_raisef(ctx, ctx->h_TypeError, "%s() missing required argument '%s' (pos %d): %s",
                              spec->function, spec->names[i], i + 1, signature);
        char taken[96] = "";
        for (size_t k = 0, used = 0; k < nargs && used < sizeof taken; k++)
            used += (size_t)snprintf(taken + used, sizeof taken - used, "%s%s", k ? ", " : "", spec->names[k]);
        return cb3_raisef(ctx, ctx->h_TypeError,
                          "%s() missing required argument '%s' (pos %d): the %zu positional argument%s given %s "
                          "taken as %s; the order is %s",
                          spec->function, spec->names[i], i + 1, nargs, nargs == 1 ? "" : "s",
                          nargs == 1 ? "was" : "were", taken, signature);
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
    return check_required(ctx, spec, nargs, out);
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
    return check_required(ctx, spec, nargs, out);
}

void cb3_close_all(HPyContext *ctx, HPy *handles, int n)
{
    for (int i = 0; i < n; i++) {
        if (!HPy_IsNull(handles[i]))
            HPy_Close(ctx, handles[i]);
        handles[i] = HPy_NULL;
    }
}

/* The one integer converter (args.h): an int, or any object with
 * __index__; `bool` only where the parameter's policy accepts it. */
HPy cb3_arg_index(HPyContext *ctx, HPy obj, const cb3_int_param *param)
{
    HPy index = HPy_NULL;
    if ((param->flags & CB3_INT_BOOL_OK) || !HPy_TypeCheck(ctx, obj, ctx->h_BoolType)) {
        index = HPy_Index(ctx, obj);
        if (!HPy_IsNull(index))
            return index;
        HPyErr_Clear(ctx);
    }
    cb3_raisef(ctx, ctx->h_TypeError, "%s must be an int, not '%s'", param->name, cb3_type_name(ctx, obj));
    return HPy_NULL;
}

/* The error for an integer outside the C type: its policy's text, or the
 * type's bounds. Returns -1. */
static int out_of_range(HPyContext *ctx, HPy index, const cb3_int_param *param, const char *bound)
{
    HPy error = (param->flags & CB3_INT_OVERFLOW) ? ctx->h_OverflowError : ctx->h_ValueError;
    if (param->range != NULL)
        return cb3_raisef(ctx, error, "%s must be %s", param->name, param->range);
    HPy zero = HPyLong_FromLong(ctx, 0);
    int negative = HPy_RichCompareBool(ctx, index, zero, HPy_LT);
    HPy_Close(ctx, zero);
    return cb3_raisef(ctx, error, "%s must %s", param->name, negative ? "not be negative" : bound);
}

int cb3_arg_int(HPyContext *ctx, HPy obj, const cb3_int_param *param, uint64_t *out)
{
    HPy index = cb3_arg_index(ctx, obj, param);
    if (HPy_IsNull(index))
        return -1;
    uint64_t value = HPyLong_AsUInt64_t(ctx, index);
    int status = 0;
    if (value == (uint64_t)-1 && HPyErr_Occurred(ctx)) {
        HPyErr_Clear(ctx);
        status = out_of_range(ctx, index, param, "be less than 2**64");
    } else {
        *out = value;
    }
    HPy_Close(ctx, index);
    return status;
}

/* cb3's own: bool refused, ValueError beyond 64 bits. blake3-py's: True is 1,
 * OverflowError beyond 64 bits. */
const cb3_int_param cb3_max_threads = {"max_threads", 0, "a positive int or cb3.AUTO (-1)"};
const cb3_int_param cb3_blake3_max_threads = {"max_threads", CB3_INT_BOOL_OK | CB3_INT_OVERFLOW,
                                              "a positive int or blake3.AUTO (-1)"};

int cb3_arg_threads(HPyContext *ctx, HPy obj, const cb3_int_param *param, size_t *out)
{
    *out = 1;
    if (HPy_IsNull(obj))
        return 0;
    HPy index = cb3_arg_index(ctx, obj, param);
    if (HPy_IsNull(index))
        return -1;
    int64_t value = HPyLong_AsInt64_t(ctx, index);
    int status = 0;
    if (value == -1 && HPyErr_Occurred(ctx)) {
        HPyErr_Clear(ctx);
        status = out_of_range(ctx, index, param, "fit in a 64-bit int");
    } else if (value == CB3_AUTO) {
        *out = CB3_BLAKE3_AUTO;
    } else if (value >= 1) {
        *out = (size_t)value;
    } else {
        status = cb3_raisef(ctx, ctx->h_ValueError, "%s must be %s, got %lld: not a valid number of threads",
                            param->name, param->range, (long long)value);
    }
    HPy_Close(ctx, index);
    return status;
}
