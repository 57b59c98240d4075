/* The one place where a cb3_result becomes a Python exception. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "errors.h"

HPyGlobal cb3_DecryptionError;
HPyGlobal cb3_KeystreamExhaustedError;
HPyGlobal cb3_ChunkedHeaderError;

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

/* CB3_RESULT_FORKED: why the object cannot go on in a fork() child, and what
 * to do instead, by type. */
static const struct {
    const char *object, *message;
} forked[] = {
    {"cb3.Stream", "this cb3.Stream was created in another process and cannot be used after fork(): parent and "
                   "child would both go on from the same message index, and two messages under one nonce reveal "
                   "each other's plaintext (a two-time pad); create a new Stream with a fresh nonce (or key) in "
                   "this process"},
    {"cb3.chacha20.ChaCha20",
     "this cb3.chacha20.ChaCha20 was created in another process and cannot be used after fork(): parent and child "
     "would both go on with the same keystream, and two messages under one keystream reveal each other's "
     "plaintext; create a new ChaCha20 with a fresh nonce (or key) in this process"},
    {"cb3.EncryptingWriter",
     "this cb3.EncryptingWriter was created in another process and cannot be used after fork(): parent and child "
     "would both seal chunks under the same nonces, and two chunks under one nonce reveal each other's plaintext; "
     "create a new EncryptingWriter (it picks a fresh nonce prefix) in this process"},
    {"cb3.blake3", "this cb3.blake3 hasher was in use by another thread when the process forked: its state is "
                   "incomplete and its lock is never released in the child; create a new hasher in this process "
                   "(or copy() one before forking)"},
};

static int raise_global(HPyContext *ctx, HPyGlobal global, const char *message)
{
    HPy type = HPyGlobal_Load(ctx, global);
    HPyErr_SetString(ctx, type, message);
    HPy_Close(ctx, type);
    return -1;
}

/* A chunked header that cb3_chunked_header_decode refused: cb3.ChunkedHeaderError
 * saying which rule it broke, in the words of docs/stream-format.md. */
static int raise_header_fault(HPyContext *ctx, const cb3_chunked_header_fault *fault)
{
    char message[200];
    unsigned long long value = (unsigned long long)fault->value;
    switch (fault->rule) {
    case CB3_CHUNKED_HEADER_RULE_LENGTH:
        snprintf(message, sizeof message, "not a cb3 stream: %llu bytes, shorter than the %d-byte header", value,
                 CB3_CHUNKED_HEADER_SIZE);
        break;
    case CB3_CHUNKED_HEADER_RULE_MAGIC:
        snprintf(message, sizeof message, "not a cb3 stream: the input does not start with b'CB3STRM'");
        break;
    case CB3_CHUNKED_HEADER_RULE_VERSION:
        snprintf(message, sizeof message, "unsupported cb3 stream version %llu (this cb3 reads version %d)", value,
                 CB3_CHUNKED_VERSION);
        break;
    default: /* CB3_CHUNKED_HEADER_RULE_CHUNK_SIZE */
        snprintf(message, sizeof message, "invalid cb3 stream header: chunk size %llu is outside %d..%d", value,
                 CB3_CHUNKED_MIN_CHUNK_SIZE, CB3_CHUNKED_MAX_CHUNK_SIZE);
    }
    return raise_global(ctx, cb3_ChunkedHeaderError, message);
}

int cb3_raise(HPyContext *ctx, cb3_result result, const cb3_error_context *given)
{
    static const cb3_error_context nothing = {.key = 0};
    if (given == NULL)
        given = &nothing;
    switch (result) {
    case CB3_RESULT_OK:
        return 0;
    case CB3_RESULT_INVALID_KEY_LENGTH:
        return cb3_raisef(ctx, ctx->h_ValueError, "key must be %d bytes, got %zu", CB3_KEY_SIZE, given->key);
    case CB3_RESULT_INVALID_NONCE_LENGTH:
        if (given->nonce_sizes)
            return cb3_raisef(ctx, ctx->h_ValueError, "nonce must be %s, got %zu", given->nonce_sizes, given->nonce);
        return cb3_raisef(ctx, ctx->h_ValueError, "nonce must be %d bytes, got %zu", CB3_NONCE_SIZE, given->nonce);
    case CB3_RESULT_INVALID_TAG_LENGTH:
        return cb3_raisef(ctx, ctx->h_ValueError, "tag must be %d bytes, got %zu", CB3_TAG_SIZE, given->tag);
    case CB3_RESULT_INVALID_ROUNDS:
        return cb3_raisef(ctx, ctx->h_ValueError, "rounds must be 20, 12 or 8, got %llu",
                          (unsigned long long)given->rounds);
    case CB3_RESULT_INVALID_COUNTER:
        return cb3_raisef(ctx, ctx->h_ValueError, "counter must be less than %s, got %llu",
                          given->wide ? "2**64 with an 8-byte nonce" : "2**32 with a 12- or 24-byte nonce",
                          (unsigned long long)given->counter);
    case CB3_RESULT_INVALID_POSITION:
        return cb3_raisef(ctx, ctx->h_ValueError, "position must be at most the end of the keystream (%s)",
                          given->wide ? "2**70 bytes with an 8-byte nonce" : "2**38 bytes with a 12- or 24-byte nonce");
    case CB3_RESULT_OVERLAPPING_BUFFERS:
        return cb3_raisef(ctx, ctx->h_ValueError,
                          "the output buffer overlaps an input; it may only start exactly at the data (in place)");
    case CB3_RESULT_DECRYPTION_FAILED:
        return raise_global(ctx, cb3_DecryptionError,
                            "decryption failed: wrong key, nonce, associated data or tag, or modified ciphertext");
    case CB3_RESULT_COUNTER_OVERFLOW:
        return raise_global(ctx, cb3_KeystreamExhaustedError,
                            "the ChaCha keystream is exhausted for this key and nonce: the block counter would "
                            "overflow (2**32 blocks with a 12- or 24-byte nonce, 2**64 with an 8-byte one); "
                            "nothing was processed");
    case CB3_RESULT_IO_ERROR:
        if (!HPy_IsNull(given->path)) { /* FileNotFoundError etc., with the errno and the file name */
            errno = given->os_error ? given->os_error : EIO;
            HPyErr_SetFromErrnoWithFilenameObjects(ctx, ctx->h_OSError, given->path, HPy_NULL);
            return -1;
        }
        return cb3_raisef(ctx, ctx->h_OSError, "%s", cb3_result_message(result));
    case CB3_RESULT_OUT_OF_MEMORY:
        return cb3_raisef(ctx, ctx->h_MemoryError, "%s", cb3_result_message(result));
    case CB3_RESULT_STREAM_EXHAUSTED:
        return cb3_raisef(ctx, ctx->h_OverflowError, "%s", cb3_result_message(result));
    case CB3_RESULT_FORKED:
        for (size_t i = 0; given->object != NULL && i < sizeof forked / sizeof forked[0]; i++) {
            if (strcmp(given->object, forked[i].object) == 0)
                return cb3_raisef(ctx, ctx->h_RuntimeError, "%s", forked[i].message);
        }
        return cb3_raisef(ctx, ctx->h_RuntimeError, "this cb3 object was created in another process and cannot be "
                                                    "used after fork(); create a new one in this process");
    case CB3_RESULT_INTERRUPTED:
        /* The interrupt callback set the exception (KeyboardInterrupt, ...). */
        if (!HPyErr_Occurred(ctx))
            HPyErr_SetString(ctx, ctx->h_KeyboardInterrupt, "");
        return -1;
    case CB3_RESULT_INVALID_HEADER:
        if (given->header_fault)
            return raise_header_fault(ctx, given->header_fault);
        return cb3_raisef(ctx, ctx->h_ValueError, "not a cb3 stream header (magic, version or chunk size)");
    case CB3_RESULT_INVALID_ARGUMENT:
        if (given->invalid)
            return cb3_raisef(ctx, ctx->h_ValueError, "%s", given->invalid);
        return cb3_raisef(ctx, ctx->h_ValueError, "%s", cb3_result_message(result));
    case CB3_RESULT_INSUFFICIENT_SIZE:
    case CB3_RESULT_INVALID_UTF8:
        return cb3_raisef(ctx, ctx->h_ValueError, "%s", cb3_result_message(result));
    default:
        /* A panic is a bug: an internal error, reported with its code. */
        return cb3_raisef(ctx, ctx->h_SystemError, "cb3 internal error %d: %s", (int)result,
                          cb3_result_message(result));
    }
}
