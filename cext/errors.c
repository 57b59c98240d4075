/* The one place where a cb3_result becomes a Python exception. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cb3ext.h"

HPyGlobal cb3_DecryptionError;
HPyGlobal cb3_KeystreamExhaustedError;

int cb3_raisef(HPyContext *ctx, HPy type, const char *format, ...)
{
    char message[512];
    va_list ap;
    va_start(ap, format);
    vsnprintf(message, sizeof message, format, ap);
    va_end(ap);
    HPyErr_SetString(ctx, type, message);
    return -1;
}

int cb3_raise(HPyContext *ctx, cb3_result result, const cb3_given_lengths *given)
{
    switch (result) {
    case CB3_RESULT_INVALID_KEY_LENGTH:
        return cb3_raisef(ctx, ctx->h_ValueError, "key must be %d bytes, got %zu", CB3_KEY_SIZE, given->key);
    case CB3_RESULT_INVALID_NONCE_LENGTH:
        return cb3_raisef(ctx, ctx->h_ValueError, "nonce must be %d bytes, got %zu", CB3_NONCE_SIZE, given->nonce);
    case CB3_RESULT_INVALID_TAG_LENGTH:
        return cb3_raisef(ctx, ctx->h_ValueError, "tag must be %d bytes, got %zu", CB3_TAG_SIZE, given->tag);
    case CB3_RESULT_OVERLAPPING_BUFFERS:
        return cb3_raisef(ctx, ctx->h_ValueError,
                          "the output buffer overlaps an input; it may only start exactly at the data (in place)");
    case CB3_RESULT_DECRYPTION_FAILED: {
        HPy type = HPyGlobal_Load(ctx, cb3_DecryptionError);
        HPyErr_SetString(ctx, type,
                         "decryption failed: wrong key, nonce, associated data or tag, or modified ciphertext");
        HPy_Close(ctx, type);
        return -1;
    }
    case CB3_RESULT_COUNTER_OVERFLOW: {
        HPy type = HPyGlobal_Load(ctx, cb3_KeystreamExhaustedError);
        HPyErr_SetString(ctx, type,
                         "the ChaCha keystream is exhausted for this key and nonce: the block counter would "
                         "overflow (2**32 blocks with a 12- or 24-byte nonce, 2**64 with an 8-byte one); "
                         "nothing was processed");
        HPy_Close(ctx, type);
        return -1;
    }
    case CB3_RESULT_IO_ERROR:
        return cb3_raisef(ctx, ctx->h_OSError, "%s", cb3_result_message(result));
    case CB3_RESULT_OUT_OF_MEMORY:
        return cb3_raisef(ctx, ctx->h_MemoryError, "%s", cb3_result_message(result));
    case CB3_RESULT_STREAM_EXHAUSTED:
        return cb3_raisef(ctx, ctx->h_OverflowError, "%s", cb3_result_message(result));
    case CB3_RESULT_FORKED:
        return cb3_raise_forked(ctx, "this cb3 object", "", "create a new one in this process");
    case CB3_RESULT_INTERRUPTED:
        /* The interrupt callback set the exception (KeyboardInterrupt, ...). */
        if (!HPyErr_Occurred(ctx))
            HPyErr_SetString(ctx, ctx->h_KeyboardInterrupt, "");
        return -1;
    case CB3_RESULT_INSUFFICIENT_SIZE:
    case CB3_RESULT_INVALID_ARGUMENT:
        return cb3_raisef(ctx, ctx->h_ValueError, "%s", cb3_result_message(result));
    default:
        /* A panic is a bug: an internal error, reported with its code. */
        return cb3_raisef(ctx, ctx->h_SystemError, "cb3 internal error %d: %s", (int)result,
                          cb3_result_message(result));
    }
}

int cb3_raise_forked(HPyContext *ctx, const char *what, const char *why, const char *instead)
{
    return cb3_raisef(ctx, ctx->h_RuntimeError,
                      "%s was created in another process and cannot be used after fork()%s; %s", what, why,
                      instead);
}

/* CPython 3.11's messages, for objects without a __dict__. */
int cb3_refuse_setattr(HPyContext *ctx, HPy self, HPy name, const char *type_name, const char *property)
{
    if (!HPyUnicode_Check(ctx, name)) {
        PyObject *py = HPy_AsPyObject(ctx, name);
        cb3_raisef(ctx, ctx->h_TypeError, "attribute name must be string, not '%s'",
                   py ? Py_TYPE(py)->tp_name : "?");
        Py_XDECREF(py);
        return -1;
    }
    HPy_ssize_t size;
    const char *text = HPyUnicode_AsUTF8AndSize(ctx, name, &size);
    if (text == NULL)
        return -1;
    if (property != NULL && strcmp(property, text) == 0)
        return cb3_raisef(ctx, ctx->h_AttributeError, "attribute '%s' of '%s' objects is not writable", text,
                          type_name);
    HPy type = HPy_Type(ctx, self);
    int known = HPy_HasAttr(ctx, type, name);
    HPy_Close(ctx, type);
    if (known)
        return cb3_raisef(ctx, ctx->h_AttributeError, "'%s' object attribute '%s' is read-only", type_name, text);
    return cb3_raisef(ctx, ctx->h_AttributeError, "'%s' object has no attribute '%s'", type_name, text);
}

int cb3_refuse_subclass(HPyContext *ctx, const char *type_name)
{
    return cb3_raisef(ctx, ctx->h_TypeError, "type '%s' is not an acceptable base type", type_name);
}

int cb3_refuse_pickle(HPyContext *ctx, const char *type_name)
{
    /* copyreg's "cannot pickle 'X' object", plus what to do instead: the
     * object holds key material or secret-dependent state that must not be
     * serialised by accident (multiprocessing pickles every argument). */
    const char *hint = strcmp(type_name, "cb3.blake3") == 0
                           ? "hash in the worker (or send it the data or the digest); for keyed hashing pass the key "
                             "to the worker and build the hasher there"
                           : "pass the key to the worker and build the cipher there";
    return cb3_raisef(ctx, ctx->h_TypeError, "cannot pickle '%s' object: %s", type_name, hint);
}

const void *cb3_require_initialized(HPyContext *ctx, const void *inner)
{
    if (inner == NULL)
        cb3_raisef(ctx, ctx->h_TypeError, "this cb3 object was not initialized: create it by calling its class");
    return inner;
}
