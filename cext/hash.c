/* cb3.blake3 and the one-shot hash / keyed_hash / derive_key: a thin shell over
 * cb3_blake3_* (rustlib/src/ffi/hash.rs) with blake3-py's interface and errors. */
#include <string.h>

#include "cb3ext.h"

#define DEFAULT_LENGTH 32

typedef struct {
    cb3_blake3 *hasher; /* owned; locks internally, so shared freely between threads */
} Blake3Object;

HPyType_HELPERS(Blake3Object)
CB3_OWNER(Blake3, Blake3Object, cb3_blake3, CB3_OBJECT_KIND_BLAKE3, hasher, cb3_blake3_free)

/* What cb3_raise needs to explain a failure of a hasher (CB3_RESULT_FORKED). */
static const cb3_error_context hasher_given = {.object = "cb3.blake3"};

/* The UTF-8 bytes of a str argument (a context string). */
static const char *utf8_arg(HPyContext *ctx, HPy obj, const char *name, size_t *len)
{
    if (!HPyUnicode_Check(ctx, obj)) {
        cb3_raisef(ctx, ctx->h_TypeError, "%s must be a str, not '%s'", name, cb3_type_name(ctx, obj));
        return NULL;
    }
#if defined(PYPY_VERSION)
    /* PyPy's HPyUnicode_AsUTF8AndSize raises ValueError("invalid argument")
     * for lone surrogates; the strict encoder raises UnicodeEncodeError, as
     * CPython's HPyUnicode_AsUTF8AndSize does. Context strings are short. */
    HPy encoded = HPyUnicode_AsUTF8String(ctx, obj);
    if (HPy_IsNull(encoded))
        return NULL;
    HPy_Close(ctx, encoded);
#endif
    HPy_ssize_t size;
    const char *text = HPyUnicode_AsUTF8AndSize(ctx, obj, &size); /* UnicodeEncodeError for lone surrogates */
    *len = (size_t)size;
    return text;
}

/* The output `length`: an int in range(0, limit + 1); OverflowError beyond,
 * as blake3-py. blake3-py's digest() takes True as 1; cb3's one-shot
 * functions refuse bool, as every cb3 parameter does. */
static const cb3_int_param digest_length = {"length", CB3_INT_BOOL_OK | CB3_INT_OVERFLOW, NULL};
static const cb3_int_param one_shot_length = {"length", CB3_INT_OVERFLOW, NULL};

static int length_arg(HPyContext *ctx, HPy obj, const cb3_int_param *param, size_t limit, size_t *out)
{
    uint64_t value = DEFAULT_LENGTH;
    if (!HPy_IsNull(obj) && cb3_arg_int(ctx, obj, param, &value) < 0)
        return -1;
    if (value > (uint64_t)limit)
        return cb3_raisef(ctx, ctx->h_OverflowError, "length must be at most %zu, got %llu", limit,
                          (unsigned long long)value);
    *out = (size_t)value;
    return 0;
}

static HPy hex_string(HPyContext *ctx, const uint8_t *bytes, size_t len)
{
    static const char digits[] = "0123456789abcdef";
    PyObject *str = PyUnicode_New((Py_ssize_t)(2 * len), 127);
    if (str == NULL)
        return HPy_NULL;
    Py_UCS1 *out = PyUnicode_1BYTE_DATA(str);
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = (Py_UCS1)digits[bytes[i] >> 4];
        out[2 * i + 1] = (Py_UCS1)digits[bytes[i] & 15];
    }
    HPy result = HPy_FromPyObject(ctx, str);
    Py_DECREF(str);
    return result;
}

/* ---- construction ---- */

HPyDef_SLOT(Blake3_new, HPy_tp_new)
static HPy Blake3_new_impl(HPyContext *ctx, HPy type, const HPy *args, HPy_ssize_t nargs, HPy kw)
{
    static const cb3_argspec spec = {
        "blake3", {"data", "key", "derive_key_context", "max_threads", "usedforsecurity", NULL}, 0, 1, 1};
    cb3_call call;
    cb3_call_start(&call);
    HPy *arg = call.arg;
    HPy result = HPy_NULL;
    cb3_blake3 *hasher = NULL;
    if (cb3_call_parse_new(ctx, &call, &spec, args, nargs, kw) < 0)
        goto done;
    HPy key_obj = arg[1], context_obj = arg[2];
    if (!HPy_IsNull(key_obj) && HPy_Is(ctx, key_obj, ctx->h_None))
        key_obj = HPy_NULL;
    if (!HPy_IsNull(context_obj) && HPy_Is(ctx, context_obj, ctx->h_None))
        context_obj = HPy_NULL;
    /* blake3-py's parameter: True is 1, OverflowError beyond 64 bits */
    static const cb3_int_param threads = {"max_threads", CB3_INT_BOOL_OK | CB3_INT_OVERFLOW,
                                          "a positive int or blake3.AUTO (-1)"};
    size_t max_threads;
    if (cb3_arg_threads(ctx, arg[3], &threads, &max_threads) < 0)
        goto done;
    if (!HPy_IsNull(arg[4]) && !HPy_TypeCheck(ctx, arg[4], ctx->h_BoolType)) {
        cb3_raisef(ctx, ctx->h_TypeError, "usedforsecurity must be a bool, not '%s'", cb3_type_name(ctx, arg[4]));
        goto done;
    }
    /* usedforsecurity is accepted and ignored, as in blake3-py and hashlib. */
    const cb3_buffer *data = cb3_call_borrow(ctx, &call, 0, "data", CB3_READ | CB3_OPTIONAL);
    if (data == NULL)
        goto done;
    cb3_result r;
    if (!HPy_IsNull(key_obj) && !HPy_IsNull(context_obj)) {
        cb3_raisef(ctx, ctx->h_ValueError, "cannot use key and derive_key_context at the same time");
        goto done;
    } else if (!HPy_IsNull(key_obj)) {
        const cb3_buffer *key = cb3_call_borrow(ctx, &call, 1, "key", CB3_READ);
        if (key == NULL)
            goto done;
        r = cb3_blake3_new_keyed(key->ptr, key->len, max_threads, &hasher);
        if (cb3_raise(ctx, r, &(const cb3_error_context){.key = key->len}) < 0)
            goto done;
    } else if (!HPy_IsNull(context_obj)) {
        size_t len;
        const char *context = utf8_arg(ctx, context_obj, "derive_key_context", &len);
        if (context == NULL)
            goto done;
        r = cb3_blake3_new_derive_key((const uint8_t *)context, len, max_threads, &hasher);
    } else {
        r = cb3_blake3_new(max_threads, &hasher);
    }
    if (cb3_raise(ctx, r, &hasher_given) < 0)
        goto done;
    CB3_CALL_RUN(ctx, &call, data->len, &hasher_given, cb3_blake3_update(hasher, data->ptr, data->len));
    if (call.status < 0)
        goto done;
    result = Blake3_adopt(ctx, type, hasher);
    hasher = NULL; /* adopted or freed */
done:
    cb3_blake3_free(hasher);
    return cb3_call_end(ctx, &call, result);
}

/* ---- input ---- */

HPyDef_METH(Blake3_update, "update", HPyFunc_O,
            .doc = "update($self, data, /)\n--\n\n"
                   "Add input bytes to the hasher (any bytes-like object). Returns the hasher, so calls\n"
                   "can be chained. The GIL is released for inputs of 2048 bytes or more; with\n"
                   "max_threads != 1, inputs of 128 KiB or more are hashed on several threads.")
static HPy Blake3_update_impl(HPyContext *ctx, HPy self, HPy data_obj)
{
    if (CB3_INNER(ctx, self, Blake3Object, hasher) == NULL)
        return HPy_NULL;
    cb3_call call;
    cb3_call_start(&call);
    call.arg[0] = data_obj;
    const cb3_buffer *data = cb3_call_borrow(ctx, &call, 0, "data", CB3_READ);
    if (data == NULL)
        return cb3_call_end(ctx, &call, HPy_NULL);
    const cb3_blake3 *hasher = Blake3Object_AsStruct(ctx, self)->hasher;
    CB3_CALL_RUN(ctx, &call, data->len, &hasher_given, cb3_blake3_update(hasher, data->ptr, data->len));
    return cb3_call_end(ctx, &call, call.status < 0 ? HPy_NULL : HPy_Dup(ctx, self));
}

/* update_mmap reads with the GIL released; between chunks Rust calls
 * check_signals (at most every 20 ms, and at once after EINTR), which takes
 * the GIL back to run Python's signal handlers: Ctrl-C on /dev/zero or a
 * FIFO raises KeyboardInterrupt instead of reading forever. (Only the main
 * thread runs handlers; elsewhere it returns at once.) */
typedef struct {
    HPyContext *ctx;
    HPyThreadState state; /* while the GIL is released */
    int raised;           /* 1: a handler raised; the GIL is held again */
} file_reading;

static int check_signals(void *arg)
{
    file_reading *reading = (file_reading *)arg;
    HPy_ReenterPythonExecution(reading->ctx, reading->state);
    if (PyErr_CheckSignals() < 0) {
        reading->raised = 1;
        return 1;
    }
    reading->state = HPy_LeavePythonExecution(reading->ctx);
    return 0;
}

HPyDef_METH(Blake3_update_mmap, "update_mmap", HPyFunc_KEYWORDS,
            .doc = "update_mmap($self, path)\n--\n\n"
                   "Add the contents of the file at path (a str or os.PathLike[str]), memory-mapped when it\n"
                   "is a regular file of 16 KiB or more, read otherwise; on several threads when\n"
                   "max_threads != 1. Raises OSError (FileNotFoundError, IsADirectoryError, ...).\n"
                   "Other files (FIFOs, /dev/zero, ...) are read in chunks, and signals are handled in\n"
                   "between: Ctrl-C raises KeyboardInterrupt (the hasher then holds the part read: reset\n"
                   "it). Returns the hasher.")
static HPy Blake3_update_mmap_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)
{
    if (CB3_INNER(ctx, self, Blake3Object, hasher) == NULL)
        return HPy_NULL;
    static const cb3_argspec spec = {"update_mmap", {"path", NULL}, 1, 0};
    HPy arg[1];
    if (cb3_parse_args(ctx, &spec, args, nargs, kwnames, arg) < 0)
        return HPy_NULL;
    PyObject *given = HPy_AsPyObject(ctx, arg[0]);
    if (given == NULL)
        return HPy_NULL;
    PyObject *fspath = PyOS_FSPath(given);
    Py_DECREF(given);
    if (fspath == NULL) {
        PyErr_Clear();
        cb3_raisef(ctx, ctx->h_TypeError, "path must be a str or os.PathLike[str], not '%s'",
                   cb3_type_name(ctx, arg[0]));
        return HPy_NULL;
    }
    if (!PyUnicode_Check(fspath)) { /* bytes paths: rejected, as in blake3-py */
        cb3_raisef(ctx, ctx->h_TypeError, "path must be a str or os.PathLike[str], not '%s'",
                   Py_TYPE(fspath)->tp_name);
        Py_DECREF(fspath);
        return HPy_NULL;
    }
    PyObject *encoded = PyUnicode_EncodeFSDefault(fspath);
    if (encoded == NULL) {
        Py_DECREF(fspath);
        return HPy_NULL;
    }
    const uint8_t *path = (const uint8_t *)PyBytes_AS_STRING(encoded);
    size_t path_len = (size_t)PyBytes_GET_SIZE(encoded);
    const cb3_blake3 *hasher = Blake3Object_AsStruct(ctx, self)->hasher;
    int32_t os_error = 0;
    file_reading reading = {.ctx = ctx, .raised = 0};
    reading.state = HPy_LeavePythonExecution(ctx);
    cb3_result r = cb3_blake3_update_file(hasher, path, path_len, check_signals, &reading, &os_error);
    if (!reading.raised)
        HPy_ReenterPythonExecution(ctx, reading.state);
    Py_DECREF(encoded);
    HPy result = HPy_NULL;
    if (r != CB3_RESULT_OK) {
        cb3_error_context given = {.object = "cb3.blake3", .os_error = os_error, .path = HPy_FromPyObject(ctx, fspath)};
        cb3_raise(ctx, r, &given);
        HPy_Close(ctx, given.path);
    } else {
        result = HPy_Dup(ctx, self);
    }
    Py_DECREF(fspath);
    return result;
}

/* ---- output ---- */

/* The start of digest and hexdigest: the hasher, and their arguments
 * (length=32, *, seek=0); NULL with an exception set. */
static const cb3_blake3 *output_args(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames,
                                     const char *function, size_t limit, size_t *length, uint64_t *seek)
{
    const cb3_blake3 *hasher = CB3_INNER(ctx, self, Blake3Object, hasher);
    if (hasher == NULL)
        return NULL;
    /* Only the name changes between digest and hexdigest. */
    cb3_argspec spec = {function, {"length", "seek", NULL}, 0, 1};
    HPy arg[2];
    if (cb3_parse_args(ctx, &spec, args, nargs, kwnames, arg) < 0 || length_arg(ctx, arg[0], &digest_length, limit, length) < 0)
        return NULL;
    *seek = 0;
    static const cb3_int_param seek_param = {"seek", CB3_INT_BOOL_OK | CB3_INT_OVERFLOW, NULL};
    if (!HPy_IsNull(arg[1]) && cb3_arg_int(ctx, arg[1], &seek_param, seek) < 0)
        return NULL;
    return hasher;
}

HPyDef_METH(Blake3_digest, "digest", HPyFunc_KEYWORDS,
            .doc = "digest($self, length=32, *, seek=0)\n--\n\n"
                   "Finalize and return length bytes of output, starting at output byte seek (BLAKE3 is an\n"
                   "extendable-output function: shorter outputs are prefixes of longer ones). The hasher is\n"
                   "not changed: more input may follow.")
static HPy Blake3_digest_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)
{
    size_t length = 0;
    uint64_t seek = 0;
    const cb3_blake3 *hasher =
        output_args(ctx, self, args, nargs, kwnames, "digest", (size_t)PY_SSIZE_T_MAX, &length, &seek);
    cb3_output out = CB3_OUTPUT_INIT;
    if (hasher == NULL || cb3_output_new(ctx, length, &out) < 0)
        return HPy_NULL;
    cb3_result r;
    CB3_RUN(ctx, NULL, length, r, cb3_blake3_finalize(hasher, seek, out.ptr, out.len));
    if (r != CB3_RESULT_OK) {
        cb3_output_discard(&out);
        cb3_raise(ctx, r, &hasher_given);
        return HPy_NULL;
    }
    return cb3_output_finish(ctx, &out);
}

HPyDef_METH(Blake3_hexdigest, "hexdigest", HPyFunc_KEYWORDS,
            .doc = "hexdigest($self, length=32, *, seek=0)\n--\n\n"
                   "Like digest(), as a string of 2 * length lowercase hex digits.")
static HPy Blake3_hexdigest_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)
{
    size_t length = 0;
    uint64_t seek = 0;
    const cb3_blake3 *hasher =
        output_args(ctx, self, args, nargs, kwnames, "hexdigest", (size_t)PY_SSIZE_T_MAX / 2, &length, &seek);
    if (hasher == NULL)
        return HPy_NULL;
    uint8_t small[64];
    uint8_t *bytes = length <= sizeof small ? small : PyMem_Malloc(length);
    if (bytes == NULL)
        return HPyErr_NoMemory(ctx);
    cb3_result r;
    CB3_RUN(ctx, NULL, length, r, cb3_blake3_finalize(hasher, seek, bytes, length));
    HPy result = cb3_raise(ctx, r, &hasher_given) < 0 ? HPy_NULL : hex_string(ctx, bytes, length);
    if (bytes != small)
        PyMem_Free(bytes);
    return result;
}

/* ---- state ---- */

HPyDef_METH(Blake3_copy, "copy", HPyFunc_NOARGS,
            .doc = "copy($self)\n--\n\n"
                   "Return an independent hasher with the same state (and thread setting): an efficient way\n"
                   "to hash several inputs that share a prefix.")
static HPy Blake3_copy_impl(HPyContext *ctx, HPy self)
{
    if (CB3_INNER(ctx, self, Blake3Object, hasher) == NULL)
        return HPy_NULL;
    cb3_blake3 *copy = NULL;
    cb3_result r;
    CB3_LOCKING(ctx, NULL, r, cb3_blake3_copy(Blake3Object_AsStruct(ctx, self)->hasher, &copy));
    if (cb3_raise(ctx, r, &hasher_given) < 0)
        return HPy_NULL;
    HPy type = HPy_Type(ctx, self);
    HPy result = Blake3_adopt(ctx, type, copy);
    HPy_Close(ctx, type);
    return result;
}

HPyDef_METH(Blake3_reset, "reset", HPyFunc_NOARGS,
            .doc = "reset($self)\n--\n\n"
                   "Return the hasher to its initial state (same mode, key or context and threads). Input\n"
                   "given to the constructor is not replayed.")
static HPy Blake3_reset_impl(HPyContext *ctx, HPy self)
{
    if (CB3_INNER(ctx, self, Blake3Object, hasher) == NULL)
        return HPy_NULL;
    cb3_result r;
    CB3_LOCKING(ctx, NULL, r, cb3_blake3_reset(Blake3Object_AsStruct(ctx, self)->hasher));
    if (cb3_raise(ctx, r, &hasher_given) < 0)
        return HPy_NULL;
    return HPy_Dup(ctx, ctx->h_None);
}

static HPyDef *Blake3_defines[] = {
    &Blake3_new,    &Blake3_destroy,   &Blake3_update, &Blake3_update_mmap,
    &Blake3_digest, &Blake3_hexdigest, &Blake3_copy,   &Blake3_reset,       CB3_TYPE_FIXES_DEFS NULL,
};

HPyType_Spec cb3_blake3_spec = {
    .name = "cb3.blake3",
    .doc = "blake3(data=None, /, *, key=None, derive_key_context=None, max_threads=1, usedforsecurity=True)\n--\n\n"
           "An incremental BLAKE3 hasher with the interface of blake3-py (and hashlib): update(),\n"
           "update_mmap(), digest(length=32, *, seek=0), hexdigest(), copy(), reset().\n\n"
           "- data: initial input, as if passed to update().\n"
           "- key: 32 bytes; selects the keyed hashing mode (a MAC / PRF).\n"
           "- derive_key_context: a str; selects the key derivation mode (then feed the key material).\n"
           "  It should be hardcoded, globally unique and application-specific. Not with key.\n"
           "- max_threads: 1 (default), blake3.AUTO (-1: one thread per logical core) or a larger\n"
           "  maximum; inputs of 128 KiB or more are then hashed on several threads (rayon).\n"
           "- usedforsecurity: accepted and ignored, as in hashlib.\n\n"
           "Objects lock internally and may be shared between threads.",
    .basicsize = sizeof(Blake3Object),
    .builtin_shape = SHAPE(Blake3Object),
    .defines = Blake3_defines,
};

/* ---- one-shot functions ---- */

typedef enum { MODE_HASH, MODE_KEYED, MODE_DERIVE } one_shot_mode;

static cb3_result one_shot_call(one_shot_mode mode, const cb3_buffer *key, const uint8_t *context,
                                size_t context_len, const cb3_buffer *data, const cb3_output *out)
{
    switch (mode) {
    case MODE_HASH:
        return cb3_blake3_hash(data->ptr, data->len, out->ptr, out->len);
    case MODE_KEYED:
        return cb3_blake3_keyed_hash(key->ptr, key->len, data->ptr, data->len, out->ptr, out->len);
    default:
        return cb3_blake3_derive_key(context, context_len, data->ptr, data->len, out->ptr, out->len);
    }
}

static HPy one_shot(HPyContext *ctx, const HPy *args, size_t nargs, HPy kwnames, const cb3_argspec *spec,
                    one_shot_mode mode)
{
    cb3_call call;
    cb3_call_start(&call);
    HPy result = HPy_NULL;
    cb3_output *out = &call.out[0];
    if (cb3_call_parse(ctx, &call, spec, args, nargs, kwnames) < 0)
        return HPy_NULL;
    int n_inputs = mode == MODE_HASH ? 1 : 2;
    size_t length = 0; /* length_arg sets it; GCC 15 cannot see that (-Wmaybe-uninitialized) */
    if (length_arg(ctx, call.arg[n_inputs], &one_shot_length, (size_t)PY_SSIZE_T_MAX, &length) < 0)
        return HPy_NULL;
    const cb3_buffer *key = NULL;
    const char *context = NULL;
    size_t context_len = 0;
    if (mode == MODE_KEYED && (key = cb3_call_borrow(ctx, &call, 0, "key", CB3_READ)) == NULL)
        goto done;
    if (mode == MODE_DERIVE && (context = utf8_arg(ctx, call.arg[0], "context", &context_len)) == NULL)
        goto done;
    const cb3_buffer *data =
        cb3_call_borrow(ctx, &call, n_inputs - 1, mode == MODE_DERIVE ? "material" : "data", CB3_READ);
    if (data == NULL || cb3_output_new(ctx, length, out) < 0)
        goto done;
    CB3_CALL_RUN(ctx, &call, data->len + length, &(const cb3_error_context){.key = key ? key->len : 0},
                 one_shot_call(mode, key, (const uint8_t *)context, context_len, data, out));
    if (call.status < 0)
        goto done;
    result = cb3_output_finish(ctx, out);
done:
    return cb3_call_end(ctx, &call, result);
}

HPyDef_METH(cb3_hash_def, "hash", HPyFunc_KEYWORDS,
            .doc = "hash(data, length=32)\n--\n\n"
                   "The BLAKE3 hash of data: length output bytes (32 is the standard digest).")
static HPy cb3_hash_def_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)
{
    static const cb3_argspec spec = {"hash", {"data", "length", NULL}, 1, 0};
    return one_shot(ctx, args, nargs, kwnames, &spec, MODE_HASH);
}

HPyDef_METH(cb3_keyed_hash_def, "keyed_hash", HPyFunc_KEYWORDS,
            .doc = "keyed_hash(key, data, length=32)\n--\n\n"
                   "Keyed BLAKE3 (a MAC / PRF) of data under a 32-byte key: length output bytes.")
static HPy cb3_keyed_hash_def_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)
{
    static const cb3_argspec spec = {"keyed_hash", {"key", "data", "length", NULL}, 2, 0};
    return one_shot(ctx, args, nargs, kwnames, &spec, MODE_KEYED);
}

HPyDef_METH(cb3_derive_key_def, "derive_key", HPyFunc_KEYWORDS,
            .doc = "derive_key(context, material, length=32)\n--\n\n"
                   "BLAKE3 key derivation: length bytes derived from the key material under context, a str\n"
                   "that should be hardcoded, globally unique and application-specific.")
static HPy cb3_derive_key_def_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)
{
    static const cb3_argspec spec = {"derive_key", {"context", "material", "length", NULL}, 2, 0};
    return one_shot(ctx, args, nargs, kwnames, &spec, MODE_DERIVE);
}
