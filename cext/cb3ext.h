/* Internal declarations shared by the files of the cb3._cb3 HPy extension.
 *
 * One file per concern, mirrored in rustlib/src and cb3/:
 *   module.c   module definition, multi-phase init
 *   errors.c   cb3_result -> Python exception (the only place)
 *   buffers.c  Python objects -> (pointer, length) and output bytes (the only place)
 *   args.c     vectorcall argument parsing with strict checks
 *   call.c     the one call frame: parse, borrow, run, raise, release
 *   types.c    what the types share: instances owning a Rust object, type names, PyPy's refusals
 *   aead.c     ChaCha20Blake3
 *   stream.c   Stream
 *   chunked.c  Chunked (private): chunk batches of the encrypted file format (cb3/chunked/)
 *   hash.c     blake3, hash, keyed_hash, derive_key
 *   chacha20.c ChaCha20, hchacha20
 */
#ifndef CB3EXT_H
#define CB3EXT_H

#include <stddef.h>
#include <stdint.h>

#if !defined(HPY_ABI_CPYTHON) && !defined(HPY_ABI_HYBRID)
/* HPy 0.9's universal ABI has no buffer-consumer API and no way to fill a new
 * bytes object, so cb3 is built with the cpython ABI on CPython and the
 * hybrid ABI (legacy buffer calls) everywhere else. */
#error "cb3._cb3 must be built with --hpy-abi=cpython or --hpy-abi=hybrid"
#endif

#include <Python.h>
#include "hpy.h"
#include "cb3.h"

/* Release the GIL for inputs of at least this many bytes, as hashlib,
 * blake3-py and pyca/cryptography do: below it the release/reacquire costs
 * a noticeable share of the call. */
#define CB3_GIL_THRESHOLD 2048

/* max_threads value meaning "every core", as blake3-py's AUTO. */
#define CB3_AUTO (-1)

/* ---- errors.c ---- */

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

/* ---- buffers.c ---- */

/* A contiguous byte buffer borrowed from a Python object for one call. */
typedef struct {
    const uint8_t *ptr;
    size_t len;
    int pinned;     /* 1 if the memory stays put while the GIL is released (see buffers.c) */
    Py_buffer *view; /* &view_storage while a view is held (to release), or NULL */
    HPy copy;       /* an exact-bytes copy this buffer owns (PyPy, bytes subclasses), or HPy_NULL */
    /* Inline even on PyPy, where a Py_buffer is 1,112 bytes: cb3_call_start
     * does not zero it, and a malloc'ed view cost more (docs/design/pypy.md). */
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

/* Output bytes: Rust writes into `ptr[0..len)`, then cb3_output_finish makes
 * the bytes object. Two routes, chosen at compile time (see buffers.c):
 * - C API (CPython): `ptr` is the inside of a fresh PyBytes object, no copy.
 * - HPy (PyPy): `ptr` is C memory (inline below, or malloc), copied once by
 *   HPyBytes_FromStringAndSize. On PyPy that is 2-3x faster for 1 MiB than a
 *   cpyext PyBytes object, which PyPy copies again when it reaches Python and
 *   frees only at a later GC (docs/pypy.md has the numbers;
 *   CFLAGS=-DCB3_OUTPUT_VIA_HPY=0 builds the other route for measuring, and
 *   CFLAGS=-DCB3_OUTPUT_VIA_HPY=1 this route on CPython, for testing). */
#if !defined(CB3_OUTPUT_VIA_HPY)
#if defined(PYPY_VERSION)
#define CB3_OUTPUT_VIA_HPY 1
#else
#define CB3_OUTPUT_VIA_HPY 0
#endif
#endif

#define CB3_OUTPUT_INLINE 128 /* 64-byte messages + tag stay on the stack */

/* Outputs of at least CB3_OUTPUT_BYTEARRAY_MIN bytes (0: never) are made as
 * a private bytearray, which cb3/_loading/signatures.py's forwarders turn
 * into bytes at the Python level. For PyPy with HPy's cpython ABI (PyPy 8.0,
 * cpyext): there every bytes object a C function returns gets a C copy of
 * its contents (cpyext's PyBytesObject), made and freed per call, which cost
 * ~0.7 ns per byte (a 1 MiB encrypt 5x CPython's time); a bytearray crosses
 * as it is, and bytes() copies it inside PyPy (docs/design/pypy.md, "PyPy
 * 8.0: bytes results"). The module exports the value as
 * OUTPUT_BYTEARRAY_MIN. A CPython build may set it (CFLAGS) for testing. */
#if !defined(CB3_OUTPUT_BYTEARRAY_MIN)
#if defined(PYPY_VERSION) && defined(HPY_ABI_CPYTHON)
/* From the GIL threshold, where calls on bytes release the GIL anyway:
 * with 1024, PyPy 8.0's suite saw another thread run during failing 2 KiB
 * decrypts, which keep the GIL (test_threads.py, 2 runs of 2; not reproduced
 * alone), likely a finalizer run at a bytecode boundary after a collection
 * that the extra objects bring on. */
#define CB3_OUTPUT_BYTEARRAY_MIN CB3_GIL_THRESHOLD
#else
#define CB3_OUTPUT_BYTEARRAY_MIN 0
#endif
#endif
#if CB3_OUTPUT_BYTEARRAY_MIN > 0 && !defined(HPY_ABI_CPYTHON)
#error "CB3_OUTPUT_BYTEARRAY_MIN needs HPy's cpython ABI (the bytearray is made through the C API)"
#endif

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

/* ---- args.c ---- */

#define CB3_MAX_ARGS 6

typedef struct {
    const char *function;              /* for messages: "encrypt" */
    const char *names[CB3_MAX_ARGS + 1]; /* NULL-terminated */
    int required;                      /* the first `required` names are required */
    int max_positional;                /* 0: every name may be passed positionally */
    int positional_only;               /* the first `positional_only` names cannot be keywords */
} cb3_argspec;

/* Parses vectorcall arguments (positional `args[0..nargs)`, then values for
 * the names in `kwnames`) into `out` (borrowed handles, HPy_NULL if absent).
 * Unlike HPyArg_ParseKeywords it rejects surplus positional arguments,
 * unknown keywords and duplicates. Returns 0, or -1 with TypeError set. */
int cb3_parse_args(HPyContext *ctx, const cb3_argspec *spec, const HPy *args, size_t nargs, HPy kwnames, HPy *out);

/* The same for tp_new, whose `kw` is a dict on CPython and a kwnames tuple
 * (values after the positional args) on PyPy. `owned` receives handles that
 * the caller closes with cb3_close_all. */
int cb3_parse_new_args(HPyContext *ctx, const cb3_argspec *spec, const HPy *args, HPy_ssize_t nargs, HPy kw,
                       HPy *out, HPy *owned);
void cb3_close_all(HPyContext *ctx, HPy *handles, int n);

/* ---- call.c: the one call frame ----
 *
 * Every function and method runs the same sequence:
 *     cb3_call call;
 *     cb3_call_start(&call);
 *     if (cb3_call_parse(ctx, &call, &spec, args, nargs, kwnames) < 0) ...
 *     const cb3_buffer *data = cb3_call_borrow(ctx, &call, 0, "data", CB3_READ);
 *     ... cb3_output_new(ctx, len, &call.out[0]) ...
 *     CB3_CALL_RUN(ctx, &call, data->len, &(const cb3_error_context){...}, cb3_x(...));
 *     if (call.status < 0) goto done;
 *     result = cb3_output_finish(ctx, &call.out[0]);
 * done:
 *     return cb3_call_end(ctx, &call, result);
 * so that borrowing, the GIL rule, raising and releasing are written once. */
typedef struct {
    HPy arg[CB3_MAX_ARGS];   /* the arguments by name (borrowed handles; HPy_NULL if absent) */
    HPy owned[CB3_MAX_ARGS]; /* tp_new: handles cb3_parse_new_args made, closed by cb3_call_end */
    cb3_borrowed set;        /* the buffers borrowed, released by cb3_call_end */
    cb3_output out[2];       /* new bytes being filled: discarded by cb3_call_end unless finished */
    int status;              /* CB3_CALL_RUN's: 0, or -1 with the exception set */
} cb3_call;

/* Starts a call: sets only what cb3_call_end and the parsers read (the
 * arguments, the owned handles, the borrowed count, the outputs), not the
 * whole frame: zeroing its ~600 bytes (one rep stos per call) was ~1% of a
 * 64-byte encrypt. One loop per array: GCC 12 turns a single loop over both
 * into one 96-byte memset, which it emits as a rep stos again (~1% of a
 * 64-byte encrypt's samples on an Intel Xeon); two 48-byte ones become six
 * vector stores. */
static inline void cb3_call_start(cb3_call *call)
{
    for (int i = 0; i < CB3_MAX_ARGS; i++)
        call->arg[i] = HPy_NULL;
    for (int i = 0; i < CB3_MAX_ARGS; i++)
        call->owned[i] = HPy_NULL;
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
    call->status = 0;
}

/* Arguments into call->arg: of a method or function (cb3_parse_args), or of a
 * tp_new (cb3_parse_new_args). Return 0, or -1 with TypeError set. */
int cb3_call_parse(HPyContext *ctx, cb3_call *call, const cb3_argspec *spec, const HPy *args, size_t nargs,
                   HPy kwnames);
int cb3_call_parse_new(HPyContext *ctx, cb3_call *call, const cb3_argspec *spec, const HPy *args,
                       HPy_ssize_t nargs, HPy kw);

/* The start of a tp_new whose first two arguments are `key` and `nonce`:
 * parses, then borrows both. Returns 0, or -1 with the exception set. */
int cb3_call_parse_key_and_nonce(HPyContext *ctx, cb3_call *call, const cb3_argspec *spec, const HPy *args,
                                 HPy_ssize_t nargs, HPy kw, const cb3_buffer **key, const cb3_buffer **nonce);

/* Borrows argument `index` for the call (see cb3_borrow). */
static inline const cb3_buffer *cb3_call_borrow(HPyContext *ctx, cb3_call *call, int index, const char *name,
                                                int flags)
{
    return cb3_borrow(ctx, &call->set, call->arg[index], name, flags);
}

/* Runs `expr`, a cb3 call giving a cb3_result, as CB3_RUN does (the GIL
 * released for `nbytes` >= CB3_GIL_THRESHOLD when the buffers are pinned),
 * then raises its failure with the error context `context` (may be NULL):
 * call->status is 0, or -1 with the exception set. */
#define CB3_CALL_RUN(ctx, call, nbytes, context, expr)                   \
    do {                                                               \
        cb3_result cb3_call_result_;                                   \
        CB3_RUN(ctx, &(call)->set, nbytes, cb3_call_result_, expr);    \
        /* `context` is built only for a failure (a compound literal). */ \
        (call)->status = cb3_call_result_ == CB3_RESULT_OK ? 0 : cb3_raise(ctx, cb3_call_result_, context); \
    } while (0)

/* The end of every call: discards unfinished outputs, releases the buffers
 * and the handles, and returns `result`. */
HPy cb3_call_end(HPyContext *ctx, cb3_call *call, HPy result);

/* Integer arguments: one converter (args.c), one policy per parameter.
 * Every parameter accepts an int or any object with __index__ (numpy
 * integers) and refuses anything else with "NAME must be an int, not 'T'".
 * cb3's own parameters refuse bool too (True as a count or an index is a
 * misuse sign); blake3-py's (cb3.blake3's max_threads, digest's length and
 * seek) accept it, as blake3-py does. A value outside the C type raises
 * ValueError, or OverflowError (blake3-py's, and `length`), with `range` if
 * given, else "must not be negative" / "must be less than 2**64". Every other
 * range is Rust's to check. tests/test_bad_inputs.py records each policy. */
enum { CB3_INT_BOOL_OK = 1, CB3_INT_OVERFLOW = 2 };
typedef struct {
    const char *name;
    int flags;         /* CB3_INT_BOOL_OK | CB3_INT_OVERFLOW */
    const char *range; /* the rule told for a value outside the C type, or NULL */
} cb3_int_param;

/* As uint64_t. Returns 0, or -1 with the exception set. */
int cb3_arg_int(HPyContext *ctx, HPy obj, const cb3_int_param *param, uint64_t *out);
/* max_threads as Python spells it (blake3-py's: a positive count, or AUTO =
 * -1) -> rustlib's (CB3_BLAKE3_AUTO = 0: every core); 1 when absent
 * (HPy_NULL). `range` says the rule ("a positive int or cb3.AUTO (-1)"). */
int cb3_arg_threads(HPyContext *ctx, HPy obj, const cb3_int_param *param, size_t *out);
/* The integer as a Python int (a new handle), for values beyond 64 bits
 * (ChaCha positions), or HPy_NULL with TypeError set. */
HPy cb3_arg_index(HPyContext *ctx, HPy obj, const cb3_int_param *param);

/* The name of obj's type ("float"), for messages (types.c). */
const char *cb3_type_name(HPyContext *ctx, HPy obj);

/* ---- types ---- */

/* A new instance of `type`, whose struct starts with the pointer to its Rust
 * object, owning `inner`, a Rust object of `kind` (types.c: on PyPy its size is
 * reported to the garbage collector). HPy_NULL with an exception set if it
 * could not be made: `inner` is then still the caller's to free. */
HPy cb3_new_instance(HPyContext *ctx, HPy type, void *inner, cb3_object_kind kind);


/* For a type whose struct `Type` starts with `Inner *field`, the Rust object
 * (of `kind`) it owns: prefix_adopt(ctx, type, inner), a new instance owning
 * `inner` (HPy_NULL with `inner` freed if it could not be made), and the
 * prefix_destroy slot, which frees it (free_fn wipes any key). */
#define CB3_OWNER(prefix, Type, Inner, kind, field, free_fn)          \
    static HPy prefix##_adopt(HPyContext *ctx, HPy type, Inner *inner) \
    {                                                                 \
        HPy self = cb3_new_instance(ctx, type, inner, kind);          \
        if (HPy_IsNull(self))                                         \
            free_fn(inner);                                           \
        return self;                                                  \
    }                                                                 \
    HPyDef_SLOT(prefix##_destroy, HPy_tp_destroy)                     \
    static void prefix##_destroy_impl(void *obj)                      \
    {                                                                 \
        Type *self = (Type *)obj;                                     \
        free_fn(self->field);                                         \
        self->field = NULL;                                           \
    }

/* `Type_AsStruct(ctx, self)->field` (the Rust object), or NULL with a
 * TypeError set when `self` was not made by its type's constructor: PyPy
 * lets object.__new__(cls) through, leaving no struct behind. */
#define CB3_INNER(ctx, self, Type, field) \
    cb3_require_initialized(ctx, cb3_field_or_null(Type##_AsStruct(ctx, self), offsetof(Type, field)))
const void *cb3_require_initialized(HPyContext *ctx, const void *inner);
/* The pointer field at `offset` of `object`, or NULL if `object` is NULL: one
 * AsStruct call (a context call on PyPy) instead of two. */
static inline const void *cb3_field_or_null(const void *object, size_t offset)
{
    return object ? *(const void *const *)((const char *)object + offset) : NULL;
}

/* ---- PyPy: making HPy types behave like CPython's (types.c) ----
 *
 * PyPy 7.3.19's HPy (_hpy_universal) turns an HPyType_Spec into an ordinary
 * heap type, so its instances behave unlike CPython's in three ways:
 *   - instances get a __dict__ (any attribute can be set), and assigning to a
 *     read-only HPyDef_GET property aborts the whole process ("Fatal RPython
 *     error: NotImplementedError" in W_HPyGetSetProperty.readonly_attribute);
 *     an HPyDef_GETSET setter's -1 return is ignored, so that is no way out;
 *   - the type can be subclassed although HPy_TPFLAGS_BASETYPE is not set;
 *   - pickle and copy accept the objects: copyreg does not see the C struct
 *     and pickles an empty shell, where CPython raises TypeError.
 * types.c defines methods, shared by every type, that restore CPython's
 * behaviour: __setattr__ and __delattr__ (AttributeError with CPython's
 * messages, naming the type's read-only property), __init_subclass__ (a
 * TypeError; PyPy calls it without an instance, so the message is PyPy's
 * "descriptor '__init_subclass__' ... needs an argument", not CPython's "not
 * an acceptable base type"), __reduce_ex__ and __reduce__ (TypeError "cannot
 * pickle ..."). CB3_TYPE_FIXES_DEFS lists them in each type's defines. On
 * CPython, which needs none of the rest (CFLAGS=-DCB3_TYPE_FIXES_ON=1 compiles
 * it there too, for testing), only __reduce_ex__ and __reduce__ remain: they
 * replace copyreg's bare "cannot pickle" with one that says what to do. */
#if !defined(CB3_TYPE_FIXES_ON)
#if defined(PYPY_VERSION)
#define CB3_TYPE_FIXES_ON 1
#else
#define CB3_TYPE_FIXES_ON 0
#endif
#endif

extern HPyDef cb3_setattr_def, cb3_delattr_def, cb3_init_subclass_def, cb3_reduce_ex_def, cb3_reduce_def;
#if CB3_TYPE_FIXES_ON
#define CB3_TYPE_FIXES_DEFS \
    &cb3_setattr_def, &cb3_delattr_def, &cb3_init_subclass_def, &cb3_reduce_ex_def, &cb3_reduce_def,
#else
#define CB3_TYPE_FIXES_DEFS &cb3_reduce_ex_def, &cb3_reduce_def,
#endif

/* The module's types, for the refusals to know whose instance they refuse
 * (module_exec stores them once the types are added). */
extern HPyGlobal cb3_type_ChaCha20Blake3, cb3_type_Stream, cb3_type_blake3, cb3_type_ChaCha20, cb3_type_Chunked;
#if defined(PYPY_VERSION)
extern HPyGlobal cb3_add_memory_pressure;
#endif
int cb3_store_types(HPyContext *ctx, HPy module);
/* Stores `from`.`name` in `global`; -1 with the exception set if it has none. */
int cb3_load_global(HPyContext *ctx, HPy from, const char *name, HPyGlobal *global);

extern HPyType_Spec cb3_ChaCha20Blake3_spec;
extern HPyType_Spec cb3_Stream_spec;
extern HPyType_Spec cb3_blake3_spec;
extern HPyType_Spec cb3_ChaCha20_spec;
extern HPyType_Spec cb3_Chunked_spec; /* chunked.c: cb3's encrypted file format */

/* ---- module-level functions ---- */

extern HPyDef cb3_hash_def;        /* hash.c */
extern HPyDef cb3_keyed_hash_def;  /* hash.c */
extern HPyDef cb3_derive_key_def;  /* hash.c */
extern HPyDef cb3_hchacha20_def;   /* chacha20.c */
extern HPyDef cb3_chunked_header_encode_def; /* chunked.c */
extern HPyDef cb3_chunked_header_decode_def; /* chunked.c */

#endif /* CB3EXT_H */
