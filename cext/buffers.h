/* Python objects -> (pointer, length), output bytes and their strategies,
 * and the GIL rule for running a Rust call on them (buffers.c). */
#ifndef CB3_BUFFERS_H
#define CB3_BUFFERS_H

#include "compat.h"

/* A contiguous byte buffer borrowed from a Python object for one call. */
typedef struct {
    const uint8_t *ptr;
    size_t len;
    int pinned;      /* 1 if the memory stays put while the GIL is released (see buffers.c) */
    Py_buffer *view; /* &view_storage while a view is held (to release), or NULL */
    HPy copy;        /* an exact-bytes copy this buffer owns (PyPy, bytes subclasses), or HPy_NULL */
    /* Inline even on PyPy, where a Py_buffer is large: the call frame does
     * not zero it, and a malloc'ed view would cost a malloc per call. */
    Py_buffer view_storage;
} cb3_buffer;

/* Borrows the bytes of `obj` (bytes, bytearray, memoryview, mmap, array('B'),
 * numpy uint8, ... any C-contiguous buffer of 1-byte items). With
 * `writable`, the buffer must be writable. If `none_ok` and obj is None the
 * result is an empty buffer. `name` is the argument name used in errors.
 * Returns 0, or -1 with a Python exception set. */
int cb3_buffer_get(HPyContext *ctx, HPy obj, const char *name, int writable, int none_ok, cb3_buffer *out);
void cb3_buffer_release(HPyContext *ctx, cb3_buffer *buf);

/* The buffers borrowed by one call, released together. */
#define CB3_MAX_BUFFERS 4
typedef struct {
    cb3_buffer items[CB3_MAX_BUFFERS];
    int count;
} cb3_borrowed;

enum { CB3_READ = 0, CB3_WRITE = 1, CB3_OPTIONAL = 2 };

/* Borrows `obj` into `set` (flags: CB3_READ or CB3_WRITE, | CB3_OPTIONAL to
 * accept None or an absent argument as empty). Returns the buffer, or NULL
 * with an exception set. */
const cb3_buffer *cb3_borrow(HPyContext *ctx, cb3_borrowed *set, HPy obj, const char *name, int flags);
void cb3_release_all(HPyContext *ctx, cb3_borrowed *set);

/* 1 if every buffer in `set` (NULL: none) is pinned: only then may the GIL
 * be released. */
int cb3_all_pinned(const cb3_borrowed *set);

/* Runs `call` (an expression giving a cb3_result) with the GIL released when
 * the call touches at least CB3_GIL_THRESHOLD bytes and every buffer borrowed
 * in `set` is pinned (on PyPy, buffers borrowed through cpyext are not: see
 * buffers.c). Every pointer it uses must come from `set` or from C memory
 * (cb3_output), never from object fields. */
#define CB3_RUN(ctx, set, nbytes, result, call)                        \
    do {                                                               \
        int cb3_pinned_ = cb3_all_pinned(set);                         \
        if ((nbytes) >= CB3_GIL_THRESHOLD && cb3_pinned_) {            \
            HPy_BEGIN_LEAVE_PYTHON(ctx)                                \
            (result) = (call);                                         \
            HPy_END_LEAVE_PYTHON(ctx)                                  \
        } else {                                                       \
            cb3_wait_ctx = cb3_pinned_ ? (ctx) : NULL;                 \
            (result) = (call);                                         \
            cb3_wait_ctx = NULL;                                       \
        }                                                              \
    } while (0)

/* Runs `call`, a cb3 call that takes an object's lock (cb3_stream_*,
 * cb3_blake3_*, cb3_chacha_*), with the GIL held, as CB3_RUN does for small
 * inputs: if the lock is busy, the call waits for it with the GIL released
 * (hashlib's pattern), so that the thread holding the lock, and every other
 * thread, can go on. Rust calls the wait hooks that module.c installs
 * (cb3_set_wait_hooks); they release the GIL through cb3_wait_ctx, which is
 * set only for the duration of such a call, and only when the buffers in
 * `set` are pinned (the GIL is then released as for a large input). */
extern _Thread_local HPyContext *cb3_wait_ctx;
#define CB3_LOCKING(ctx, set, result, call) CB3_RUN(ctx, set, 0, result, call)

/* ---- output bytes (the routes: compat.h, CB3_OUTPUT_VIA_HPY) ---- */

#define CB3_OUTPUT_INLINE 128 /* a 64-byte message and its tag stay on the stack */

typedef struct {
    uint8_t *ptr;
    size_t len;
#if CB3_OUTPUT_VIA_HPY
    uint8_t *heap; /* malloc'ed, or NULL when `ptr` is `inline_buf` */
    uint8_t inline_buf[CB3_OUTPUT_INLINE];
#else
    PyObject *obj;
#endif
#if CB3_OUTPUT_BYTEARRAY_MIN > 0
    PyObject *array; /* the private bytearray, or NULL */
#endif
} cb3_output;

#define CB3_OUTPUT_INIT {.ptr = NULL, .len = 0}

/* Output memory is private until finish, so it is always "pinned" (CB3_RUN). */
int cb3_output_new(HPyContext *ctx, size_t len, cb3_output *out);
HPy cb3_output_finish(HPyContext *ctx, cb3_output *out);   /* the bytes, or HPy_NULL; always releases */
void cb3_output_discard(cb3_output *out);                  /* on failure; safe to repeat */
/* A count of bytes (what the *_into calls return) as an int. */
HPy cb3_count_new(HPyContext *ctx, size_t count);

/* How an output's size follows from the call's input (the DATA argument, or
 * the writable BUF where there is none: call.h) and the AEAD's tag: the one
 * derivation of the sealed and opened sizes, for ChaCha20Blake3 and Stream
 * alike. */
typedef enum {
    CB3_SIZE_NONE = 0, /* no output */
    CB3_SIZE_SEALED,   /* input + CB3_TAG_SIZE: ciphertext || tag */
    CB3_SIZE_OPENED,   /* input - CB3_TAG_SIZE; 0 for inputs shorter than the tag (Rust refuses them) */
    CB3_SIZE_INPUT,    /* as long as the input */
    CB3_SIZE_FIXED,    /* a fixed number of bytes, given beside it */
} cb3_size_rule;

/* The size `rule` gives for an input of `input` bytes (`fixed` for
 * CB3_SIZE_FIXED). */
static inline size_t cb3_size_of(cb3_size_rule rule, size_t fixed, size_t input)
{
    switch (rule) {
    case CB3_SIZE_SEALED:
        return input + CB3_TAG_SIZE;
    case CB3_SIZE_OPENED:
        return input >= CB3_TAG_SIZE ? input - CB3_TAG_SIZE : 0;
    case CB3_SIZE_INPUT:
        return input;
    case CB3_SIZE_FIXED:
        return fixed;
    default:
        return 0;
    }
}

#endif /* CB3_BUFFERS_H */
