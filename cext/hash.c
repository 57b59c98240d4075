/* cb3.blake3 and the one-shot hash / keyed_hash / derive_key: a thin shell over
 * cb3_blake3_* (rustlib/src/hash.rs) with blake3-py's interface and errors. */
#include <string.h>

#include "call.h"
#include "module.h"
#include "types.h"

#define DEFAULT_LENGTH 32

typedef struct {
    cb3_blake3 *hasher; /* owned; locks internally, so shared freely between threads */
} Blake3Object;

HPyType_HELPERS(Blake3Object)
CB3_OWNER(Blake3, Blake3Object, cb3_blake3, hasher, cb3_blake3_free)

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

static int Blake3_convert(HPyContext *ctx, cb3_call *call)
{
    size_t max_threads;
    if (cb3_arg_threads(ctx, call->arg[3], &cb3_blake3_max_threads, &max_threads) < 0)
        return -1;
    call->value[3] = max_threads;
    HPy used = call->arg[4];
    if (!HPy_IsNull(used) && !HPy_TypeCheck(ctx, used, ctx->h_BoolType))
        return cb3_raisef(ctx, ctx->h_TypeError, "usedforsecurity must be a bool, not '%s'", cb3_type_name(ctx, used));
    /* usedforsecurity is accepted and ignored, as in blake3-py and hashlib. */
    return 0;
}

/* The mode: key (borrowed), derive_key_context (its UTF-8), or neither;
 * None is absent. */
static int Blake3_prepare(HPyContext *ctx, cb3_call *call)
{
    HPy key_obj = call->arg[1], context_obj = call->arg[2];
    int keyed = !HPy_IsNull(key_obj) && !HPy_Is(ctx, key_obj, ctx->h_None);
    int derived = !HPy_IsNull(context_obj) && !HPy_Is(ctx, context_obj, ctx->h_None);
    call->in[CB3_ARG_KEY] = NULL;
    call->text = NULL;
    call->context = hasher_given;
    call->given = &call->context;
    if (keyed && derived)
        return cb3_raisef(ctx, ctx->h_ValueError, "cannot use key and derive_key_context at the same time");
    if (keyed) {
        const cb3_buffer *key = cb3_borrow(ctx, &call->set, key_obj, "key", CB3_READ);
        if (key == NULL)
            return -1;
        call->in[CB3_ARG_KEY] = key;
        call->context.key = key->len;
    } else if (derived && (call->text = utf8_arg(ctx, context_obj, "derive_key_context", &call->text_len)) == NULL) {
        return -1;
    }
    return 0;
}

/* The hasher, then its first input. */
static cb3_result Blake3_make(cb3_call *call)
{
    cb3_blake3 **hasher = (cb3_blake3 **)&call->made;
    size_t threads = (size_t)call->value[3];
    const cb3_buffer *key = call->in[CB3_ARG_KEY], *data = call->in[CB3_ARG_DATA];
    cb3_result r = key           ? cb3_blake3_new_keyed(key->ptr, key->len, threads, hasher)
                   : call->text ? cb3_blake3_new_derive_key((const uint8_t *)call->text, call->text_len, threads, hasher)
                                 : cb3_blake3_new(threads, hasher);
    return r != CB3_RESULT_OK ? r : cb3_blake3_update(*hasher, data->ptr, data->len);
}

static const cb3_method Blake3_new_method = {
    .spec = {"blake3", {"data", "key", "derive_key_context", "max_threads", "usedforsecurity", NULL}, 0, 1, 1},
    .role = {CB3_ARG_DATA | CB3_ARG_NONE_OK},
    .convert = Blake3_convert,
    .prepare = Blake3_prepare,
    .run = Blake3_make,
    .returns = CB3_RETURN_ADOPT,
    .kind = CB3_OBJECT_KIND_BLAKE3,
    .free = Blake3_free,
};
CB3_CONSTRUCTOR(Blake3_new, Blake3_new_method)

/* ---- input ---- */

static cb3_result update(cb3_call *call)
{
    return cb3_blake3_update(call->inner, call->in[CB3_ARG_DATA]->ptr, call->in[CB3_ARG_DATA]->len);
}

static const cb3_method update_method = {
    .spec = {"update", {"data", NULL}, 1, 0, 1},
    .role = {CB3_ARG_DATA},
    .inner = 1,
    .given = &hasher_given,
    .run = update,
    .returns = CB3_RETURN_SELF,
};

HPyDef_METH(Blake3_update, "update", HPyFunc_O,
            .doc = "update($self, data, /)\n--\n\n"
                   "Add input bytes to the hasher (any bytes-like object). Returns the hasher, so calls\n"
                   "can be chained. The GIL is released for inputs of 2048 bytes or more; with\n"
                   "max_threads != 1, inputs of 128 KiB or more are hashed on several threads.")
static HPy Blake3_update_impl(HPyContext *ctx, HPy self, HPy data)
{
    return cb3_method_call_o(ctx, &update_method, self, data);
}

/* update_mmap reads with the GIL released; between chunks Rust calls
 * check_signals (at intervals, and at once after EINTR), which takes
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
    if (cb3_inner(ctx, self) == NULL)
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
    const cb3_blake3 *hasher = cb3_inner(ctx, self);
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
    const cb3_blake3 *hasher = cb3_inner(ctx, self);
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
    const cb3_blake3 *hasher = cb3_inner(ctx, self);
    if (hasher == NULL)
        return HPy_NULL;
    cb3_blake3 *copy = NULL;
    cb3_result r;
    CB3_LOCKING(ctx, NULL, r, cb3_blake3_copy(hasher, &copy));
    if (cb3_raise(ctx, r, &hasher_given) < 0)
        return HPy_NULL;
    HPy type = HPy_Type(ctx, self);
    HPy result = cb3_new_instance(ctx, type, copy, CB3_OBJECT_KIND_BLAKE3);
    HPy_Close(ctx, type);
    if (HPy_IsNull(result))
        cb3_blake3_free(copy);
    return result;
}

HPyDef_METH(Blake3_reset, "reset", HPyFunc_NOARGS,
            .doc = "reset($self)\n--\n\n"
                   "Return the hasher to its initial state (same mode, key or context and threads). Input\n"
                   "given to the constructor is not replayed.")
static HPy Blake3_reset_impl(HPyContext *ctx, HPy self)
{
    const cb3_blake3 *hasher = cb3_inner(ctx, self);
    if (hasher == NULL)
        return HPy_NULL;
    cb3_result r;
    CB3_LOCKING(ctx, NULL, r, cb3_blake3_reset(hasher));
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

/* ---- one-shot functions ----
 *
 * (data or key material, length=32): value[0] is the output's length. */

static int one_shot_length_at(HPyContext *ctx, cb3_call *call, int index)
{
    size_t length = 0;
    if (length_arg(ctx, call->arg[index], &one_shot_length, (size_t)PY_SSIZE_T_MAX, &length) < 0)
        return -1;
    call->value[0] = length;
    return 0;
}

static int hash_convert(HPyContext *ctx, cb3_call *call)
{
    return one_shot_length_at(ctx, call, 1);
}

static int keyed_hash_convert(HPyContext *ctx, cb3_call *call)
{
    return one_shot_length_at(ctx, call, 2);
}

static int derive_key_convert(HPyContext *ctx, cb3_call *call)
{
    if (one_shot_length_at(ctx, call, 2) < 0)
        return -1;
    call->text = utf8_arg(ctx, call->arg[0], "context", &call->text_len);
    return call->text == NULL ? -1 : 0;
}

/* The output, which the GIL rule counts too. */
static int one_shot_prepare(HPyContext *ctx, cb3_call *call)
{
    call->nbytes += (size_t)call->value[0];
    return cb3_output_new(ctx, (size_t)call->value[0], &call->out[0]);
}

static cb3_result hash(cb3_call *call)
{
    const cb3_buffer *data = call->in[CB3_ARG_DATA];
    return cb3_blake3_hash(data->ptr, data->len, call->out[0].ptr, call->out[0].len);
}

static cb3_result keyed_hash(cb3_call *call)
{
    const cb3_buffer *key = call->in[CB3_ARG_KEY], *data = call->in[CB3_ARG_DATA];
    return cb3_blake3_keyed_hash(key->ptr, key->len, data->ptr, data->len, call->out[0].ptr, call->out[0].len);
}

static cb3_result derive_key(cb3_call *call)
{
    const cb3_buffer *data = call->in[CB3_ARG_DATA];
    return cb3_blake3_derive_key((const uint8_t *)call->text, call->text_len, data->ptr, data->len,
                                 call->out[0].ptr, call->out[0].len);
}

static const cb3_method one_shot[] = {
    {.spec = {"hash", {"data", "length", NULL}, 1, 0}, .role = {CB3_ARG_DATA, CB3_ARG_OBJECT},
     .convert = hash_convert, .prepare = one_shot_prepare, .run = hash},
    {.spec = {"keyed_hash", {"key", "data", "length", NULL}, 2, 0},
     .role = {CB3_ARG_KEY, CB3_ARG_DATA, CB3_ARG_OBJECT}, .convert = keyed_hash_convert,
     .prepare = one_shot_prepare, .run = keyed_hash},
    {.spec = {"derive_key", {"context", "material", "length", NULL}, 2, 0},
     .role = {CB3_ARG_OBJECT, CB3_ARG_DATA, CB3_ARG_OBJECT}, .convert = derive_key_convert,
     .prepare = one_shot_prepare, .run = derive_key},
};

CB3_METHOD(cb3_hash_def, "hash", one_shot[0],
           "hash(data, length=32)\n--\n\n"
           "The BLAKE3 hash of data: length output bytes (32 is the standard digest).")

CB3_METHOD(cb3_keyed_hash_def, "keyed_hash", one_shot[1],
           "keyed_hash(key, data, length=32)\n--\n\n"
           "Keyed BLAKE3 (a MAC / PRF) of data under a 32-byte key: length output bytes.")

CB3_METHOD(cb3_derive_key_def, "derive_key", one_shot[2],
           "derive_key(context, material, length=32)\n--\n\n"
           "BLAKE3 key derivation: length bytes derived from the key material under context, a str\n"
           "that should be hardcoded, globally unique and application-specific.")
