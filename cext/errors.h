/* cb3_result -> Python exception (errors.c, the only place). */
#ifndef CB3_ERRORS_H
#define CB3_ERRORS_H

#include "compat.h"

/* The module's Python-level exception classes, loaded once at init. */
extern HPyGlobal cb3_DecryptionError;
extern HPyGlobal cb3_KeystreamExhaustedError;
extern HPyGlobal cb3_ChunkedHeaderError;

/* The error context of one call: what the caller passed, so that cb3_raise's
 * messages can say what was wrong. Always initialised with designators
 * (`{.key = key->len, .nonce = nonce->len}`); fields a call does not have
 * stay 0 (NULL, HPy_NULL). */
typedef struct {
    size_t key;
    size_t nonce;
    size_t tag;
    const char *nonce_sizes; /* the nonce rule when it is not "24 bytes" (raw ChaCha, HChaCha) */
    const char *object;      /* CB3_RESULT_FORKED: the object's type ("cb3.Stream"), or NULL */
    uint64_t counter;        /* cb3_chacha_new */
    uint64_t rounds;         /* cb3_chacha_new */
    int wide;                /* raw ChaCha with an 8-byte nonce (a 64-bit block counter) */
    int os_error;            /* CB3_RESULT_IO_ERROR: the errno value, or 0 */
    HPy path;                /* CB3_RESULT_IO_ERROR: the file name (borrowed), or HPy_NULL */
    const char *invalid;     /* CB3_RESULT_INVALID_ARGUMENT: the rule the call's arguments broke, or NULL */
    /* CB3_RESULT_INVALID_HEADER: the rule a stream header broke (a
     * cb3.ChunkedHeaderError), or NULL (a ValueError, as cb3_chunked_new's) */
    const cb3_chunked_header_fault *header_fault;
} cb3_error_context;

/* Sets the Python exception for a failed cb3 call: the only place where a
 * cb3_result becomes an exception. `given` may be NULL. Returns -1, or 0
 * (and sets nothing) for CB3_RESULT_OK: `if (cb3_raise(ctx, r, ...) < 0)`. */
int cb3_raise(HPyContext *ctx, cb3_result result, const cb3_error_context *given);

/* Sets `type(message)`, formatting like printf. Always returns -1. */
int cb3_raisef(HPyContext *ctx, HPy type, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif /* CB3_ERRORS_H */
