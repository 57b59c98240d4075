/* Argon2id and the passphrase header: _cb3.argon2id (cb3.kdf.hash_secret_raw)
 * and the private _cb3.passphrase_header_size / passphrase_seal /
 * passphrase_open that cb3's passphrase files and key files use; a thin shell
 * over cb3_argon2id and cb3_passphrase_* (rustlib/src/kdf.rs, passphrase.rs).
 *
 * A derivation takes long whatever its inputs' size, so the frame keeps the
 * GIL (nbytes = 0) and the run hook releases it itself when the buffers are
 * pinned: Rust calls check_signals about every 20 ms, which takes the GIL
 * back to run Python's signal handlers (Ctrl-C raises KeyboardInterrupt at
 * once; the derivation finishes on cb3's pool and wipes its memory unseen). */
#include <string.h>

#include "call.h"
#include "module.h"

/* What a KDF call keeps beside the frame (call->state). */
typedef struct {
    HPyContext *ctx;
    HPyThreadState thread; /* while the GIL is released */
    int released;          /* 1: the GIL is released now */
    int raised;            /* 1: a signal handler raised; the GIL is held */
    cb3_passphrase_fault fault;
    cb3_passphrase_limits limits;
    uint8_t key[CB3_KEY_SIZE]; /* passphrase_open's key, until it is a bytearray; then wiped */
} kdf_state;

static int check_signals(void *arg)
{
    kdf_state *s = (kdf_state *)arg;
    if (s->released)
        HPy_ReenterPythonExecution(s->ctx, s->thread);
    if (PyErr_CheckSignals() < 0) {
        s->raised = 1;
        s->released = 0;
        return 1;
    }
    if (s->released)
        s->thread = HPy_LeavePythonExecution(s->ctx);
    return 0;
}

/* Releases the GIL for the derivation if every borrowed buffer stays put
 * without it (on PyPy some do not: then signals are checked with it held). */
static void leave(cb3_call *call, kdf_state *s)
{
    s->raised = 0;
    s->released = cb3_all_pinned(&call->set);
    if (s->released)
        s->thread = HPy_LeavePythonExecution(s->ctx);
}

static void reenter(kdf_state *s)
{
    if (s->released)
        HPy_ReenterPythonExecution(s->ctx, s->thread);
    s->released = 0;
}

/* The frame keeps the GIL (the run hook decides), and cb3_raise hears of the
 * fault detail. */
static void kdf_context(cb3_call *call, const char *secret_name)
{
    kdf_state *s = (kdf_state *)call->state;
    call->nbytes = 0;
    call->context = (cb3_error_context){.passphrase_fault = &s->fault, .secret_name = secret_name};
    call->given = &call->context;
    s->fault.field = CB3_PASSPHRASE_FIELD_NONE;
}

/* A 32-bit cost parameter (time_cost, memory_cost, parallelism, a limit). */
static int u32_arg(HPyContext *ctx, HPy obj, const char *name, uint64_t *out)
{
    cb3_int_param param = {name, 0, NULL};
    if (cb3_arg_int(ctx, obj, &param, out) < 0)
        return -1;
    if (*out > UINT32_MAX) {
        cb3_raisef(ctx, ctx->h_ValueError, "%s must be less than 2**32, got %llu", name, (unsigned long long)*out);
        return -1;
    }
    return 0;
}

/* Integer arguments `first` .. `first + count - 1` into call->value. */
static int u32_args(HPyContext *ctx, cb3_call *call, const cb3_method *m, int first, int count)
{
    for (int i = first; i < first + count; i++) {
        if (u32_arg(ctx, call->arg[i], m->spec.names[i], &call->value[i]) < 0)
            return -1;
    }
    return 0;
}

/* ---- argon2id(secret, salt, time_cost, memory_cost, parallelism, hash_len) -> bytes ---- */

static const cb3_method argon2id_method;

static int argon2id_convert(HPyContext *ctx, cb3_call *call)
{
    if (u32_args(ctx, call, &argon2id_method, 2, 3) < 0)
        return -1;
    static const cb3_int_param hash_len = {"hash_len", 0, NULL};
    if (cb3_arg_int(ctx, call->arg[5], &hash_len, &call->value[5]) < 0)
        return -1;
    if (call->value[5] > UINT32_MAX) {
        cb3_raisef(ctx, ctx->h_ValueError, "hash_len must be at most %u bytes, got %llu", UINT32_MAX,
                   (unsigned long long)call->value[5]);
        return -1;
    }
    return 0;
}

static int argon2id_prepare(HPyContext *ctx, cb3_call *call)
{
    kdf_context(call, "secret");
    return cb3_output_new(ctx, (size_t)call->value[5], &call->out[0]);
}

static cb3_result argon2id_run(cb3_call *call)
{
    kdf_state *s = (kdf_state *)call->state;
    const cb3_buffer *secret = call->in[CB3_ARG_DATA], *salt = call->in[CB3_ARG_BYTES];
    leave(call, s);
    cb3_result r = cb3_argon2id(secret->ptr, secret->len, salt->ptr, salt->len, (uint32_t)call->value[2],
                                (uint32_t)call->value[3], (uint32_t)call->value[4], check_signals, s,
                                call->out[0].ptr, call->out[0].len, &s->fault);
    reenter(s);
    return r;
}

static const cb3_method argon2id_method = {
    .spec = {"argon2id", {"secret", "salt", "time_cost", "memory_cost", "parallelism", "hash_len", NULL}, 6, 0},
    .role = {CB3_ARG_DATA, CB3_ARG_BYTES, CB3_ARG_OBJECT, CB3_ARG_OBJECT, CB3_ARG_OBJECT, CB3_ARG_OBJECT},
    .convert = argon2id_convert,
    .prepare = argon2id_prepare,
    .run = argon2id_run,
};

HPyDef_METH(cb3_argon2id_def, "argon2id", HPyFunc_KEYWORDS,
            .doc = "argon2id(secret, salt, time_cost, memory_cost, parallelism, hash_len)\n--\n\n"
                   "Argon2id (RFC 9106, version 0x13): hash_len bytes derived from secret and salt\n"
                   "(16-64 bytes), time_cost passes over memory_cost KiB in parallelism lanes. The GIL\n"
                   "is released and Ctrl-C interrupts it. Use cb3.kdf.hash_secret_raw.")
static HPy cb3_argon2id_def_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)
{
    kdf_state state = {.ctx = ctx};
    return cb3_method_call(ctx, &argon2id_method, self, args, nargs, kwnames, &state);
}

/* ---- passphrase_header_size(prefix) -> int ---- */

static int header_size_prepare(HPyContext *ctx, cb3_call *call)
{
    (void)ctx;
    kdf_context(call, "passphrase");
    return 0;
}

static cb3_result header_size_run(cb3_call *call)
{
    kdf_state *s = (kdf_state *)call->state;
    const cb3_buffer *prefix = call->in[CB3_ARG_DATA];
    return cb3_passphrase_header_size(prefix->ptr, prefix->len, &call->written, &s->fault);
}

static const cb3_method header_size_method = {
    .spec = {"passphrase_header_size", {"prefix", NULL}, 1, 0},
    .role = {CB3_ARG_DATA},
    .prepare = header_size_prepare,
    .run = header_size_run,
    .returns = CB3_RETURN_COUNT,
};

HPyDef_METH(cb3_passphrase_header_size_def, "passphrase_header_size", HPyFunc_KEYWORDS,
            .doc = "passphrase_header_size(prefix)\n--\n\n"
                   "The whole length of the passphrase header that starts with prefix (at least its\n"
                   "first 20 bytes). Raises ValueError if it is not one this cb3 reads.")
static HPy cb3_passphrase_header_size_def_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs,
                                                HPy kwnames)
{
    kdf_state state = {.ctx = ctx};
    return cb3_method_call(ctx, &header_size_method, self, args, nargs, kwnames, &state);
}

/* ---- passphrase_seal(passphrase, key, purpose, time_cost, memory_cost, parallelism, salt) -> bytes ---- */

static const cb3_method seal_method;

static int seal_convert(HPyContext *ctx, cb3_call *call)
{
    return u32_args(ctx, call, &seal_method, 2, 4);
}

static int seal_prepare(HPyContext *ctx, cb3_call *call)
{
    kdf_context(call, "passphrase");
    return cb3_output_new(ctx, CB3_PASSPHRASE_PREFIX_SIZE + CB3_KEY_SIZE + CB3_TAG_SIZE + call->in[CB3_ARG_BYTES]->len,
                          &call->out[0]);
}

static cb3_result seal_run(cb3_call *call)
{
    kdf_state *s = (kdf_state *)call->state;
    const cb3_buffer *passphrase = call->in[CB3_ARG_DATA], *key = call->in[CB3_ARG_KEY],
                     *salt = call->in[CB3_ARG_BYTES];
    leave(call, s);
    cb3_result r = cb3_passphrase_seal(passphrase->ptr, passphrase->len, key->ptr, key->len, (uint32_t)call->value[2],
                                       (uint32_t)call->value[3], (uint32_t)call->value[4], (uint32_t)call->value[5],
                                       salt->ptr, salt->len, check_signals, s, call->out[0].ptr, call->out[0].len,
                                       &call->written, &s->fault);
    reenter(s);
    return r;
}

static const cb3_method seal_method = {
    .spec = {"passphrase_seal",
             {"passphrase", "key", "purpose", "time_cost", "memory_cost", "parallelism", "salt", NULL}, 7, 0},
    .role = {CB3_ARG_DATA, CB3_ARG_KEY, CB3_ARG_OBJECT, CB3_ARG_OBJECT, CB3_ARG_OBJECT, CB3_ARG_OBJECT,
             CB3_ARG_BYTES},
    .convert = seal_convert,
    .prepare = seal_prepare,
    .run = seal_run,
};

HPyDef_METH(cb3_passphrase_seal_def, "passphrase_seal", HPyFunc_KEYWORDS,
            .doc = "passphrase_seal(passphrase, key, purpose, time_cost, memory_cost, parallelism, salt)\n--\n\n"
                   "The passphrase header (docs/passphrase-format.md) wrapping the 32-byte key under\n"
                   "Argon2id(passphrase, salt). purpose: 1 an encrypted file, 2 a key file. The GIL is\n"
                   "released and Ctrl-C interrupts the derivation.")
static HPy cb3_passphrase_seal_def_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)
{
    kdf_state state = {.ctx = ctx};
    return cb3_method_call(ctx, &seal_method, self, args, nargs, kwnames, &state);
}

/* ---- passphrase_open(header, passphrase, purpose, max_time_cost, max_memory_cost, max_parallelism)
 *      -> bytearray (the key: the caller can wipe it) ---- */

static const cb3_method open_method;

static int open_convert(HPyContext *ctx, cb3_call *call)
{
    return u32_args(ctx, call, &open_method, 2, 4);
}

static int open_prepare(HPyContext *ctx, cb3_call *call)
{
    (void)ctx;
    kdf_context(call, "passphrase");
    kdf_state *s = (kdf_state *)call->state;
    s->limits = (cb3_passphrase_limits){.max_time_cost = (uint32_t)call->value[3],
                                        .max_memory_cost = (uint32_t)call->value[4],
                                        .max_parallelism = (uint32_t)call->value[5]};
    return 0;
}

static cb3_result open_run(cb3_call *call)
{
    kdf_state *s = (kdf_state *)call->state;
    const cb3_buffer *header = call->in[CB3_ARG_DATA], *passphrase = call->in[CB3_ARG_BYTES];
    leave(call, s);
    cb3_result r = cb3_passphrase_open(header->ptr, header->len, passphrase->ptr, passphrase->len,
                                       (uint32_t)call->value[2], &s->limits, check_signals, s, s->key,
                                       sizeof s->key, &s->fault);
    reenter(s);
    return r;
}

static void wipe(void *p, size_t n)
{
    volatile uint8_t *v = (volatile uint8_t *)p;
    while (n--)
        *v++ = 0;
}

static HPy open_finish(HPyContext *ctx, cb3_call *call)
{
    kdf_state *s = (kdf_state *)call->state;
    PyObject *key = PyByteArray_FromStringAndSize((const char *)s->key, sizeof s->key);
    wipe(s->key, sizeof s->key);
    if (key == NULL)
        return HPy_NULL;
    HPy result = HPy_FromPyObject(ctx, key);
    Py_DECREF(key);
    return result;
}

static const cb3_method open_method = {
    .spec = {"passphrase_open",
             {"header", "passphrase", "purpose", "max_time_cost", "max_memory_cost", "max_parallelism", NULL}, 6, 0},
    .role = {CB3_ARG_DATA, CB3_ARG_BYTES, CB3_ARG_OBJECT, CB3_ARG_OBJECT, CB3_ARG_OBJECT, CB3_ARG_OBJECT},
    .convert = open_convert,
    .prepare = open_prepare,
    .run = open_run,
    .returns = CB3_RETURN_CUSTOM,
    .finish = open_finish,
};

HPyDef_METH(cb3_passphrase_open_def, "passphrase_open", HPyFunc_KEYWORDS,
            .doc = "passphrase_open(header, passphrase, purpose, max_time_cost, max_memory_cost,\n"
                   "                max_parallelism)\n--\n\n"
                   "The 32-byte key (a bytearray, to wipe after use) that the passphrase header wraps.\n"
                   "A header above the max_* limits is refused before anything is allocated\n"
                   "(cb3.PassphraseLimitError); a wrong passphrase or a modified header raises\n"
                   "cb3.WrongPassphrase. The GIL is released and Ctrl-C interrupts the derivation.")
static HPy cb3_passphrase_open_def_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)
{
    kdf_state state = {.ctx = ctx};
    HPy result = cb3_method_call(ctx, &open_method, self, args, nargs, kwnames, &state);
    wipe(state.key, sizeof state.key);
    return result;
}
