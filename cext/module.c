/* The module cb3._cb3: multi-phase init registers the types and functions and
 * loads the exception classes that cb3/errors.py defines. */
#include "args.h"
#include "buffers.h"
#include "errors.h"
#include "module.h"
#include "types.h"

HPyDef_METH(version, "version", HPyFunc_NOARGS, .doc = "version()\n--\n\nThe version of the Rust core (rustlib).")
static HPy version_impl(HPyContext *ctx, HPy self)
{
    (void)self;
    return HPyUnicode_FromString(ctx, cb3_version());
}

HPyDef_METH(simd_backend, "simd_backend", HPyFunc_NOARGS,
            .doc = "simd_backend()\n--\n\nThe widest SIMD instruction set the BLAKE3/ChaCha cores use on this CPU.")
static HPy simd_backend_impl(HPyContext *ctx, HPy self)
{
    (void)self;
    return HPyUnicode_FromString(ctx, cb3_simd_backend());
}

HPyDef_METH(cache_tuning, "cache_tuning", HPyFunc_NOARGS,
            .doc = "cache_tuning()\n--\n\nThis CPU's cache sizes, the AEAD's piece sizes derived from them and the pages of its piece buffers.")
static HPy cache_tuning_impl(HPyContext *ctx, HPy self)
{
    (void)self;
    return HPyUnicode_FromString(ctx, cb3_cache_tuning());
}

HPyDef_METH(panic_boundary_check, "panic_boundary_check", HPyFunc_NOARGS,
            .doc = "panic_boundary_check()\n--\n\nUnwinds a deliberate Rust panic to the boundary every export runs in and\n"
                   "returns the message of the result it made (CB3_RESULT_PANIC's). A build whose unwinder\n"
                   "cannot do that aborts instead, as it would on any panic (rustlib/src/info.rs).")
static HPy panic_boundary_check_impl(HPyContext *ctx, HPy self)
{
    (void)self;
    return HPyUnicode_FromString(ctx, cb3_result_message((unsigned)cb3_panic_boundary_check()));
}

HPyDef_METH(cpu_maker, "cpu_maker", HPyFunc_NOARGS,
            .doc = "cpu_maker()\n--\n\nWho made this CPU, as the Rust core's tuning sees it: \"Intel\", \"AMD\" or \"other\".")
static HPy cpu_maker_impl(HPyContext *ctx, HPy self)
{
    (void)self;
    return HPyUnicode_FromString(ctx, cb3_cpu_maker());
}

HPyDef_METH(cpu_model, "cpu_model", HPyFunc_NOARGS,
            .doc = "cpu_model()\n--\n\nThis CPU's model name (cpuid's brand string on x86-64), or \"unknown\".")
static HPy cpu_model_impl(HPyContext *ctx, HPy self)
{
    (void)self;
    return HPyUnicode_FromString(ctx, cb3_cpu_model());
}

HPyDef_METH(thread_count, "thread_count", HPyFunc_KEYWORDS,
            .doc = "thread_count(max_threads)\n--\n\n"
                   "The threads an object made with this max_threads (a positive int or cb3.AUTO) works on:\n"
                   "cb3.AUTO is every usable core, any other count is capped at the usable cores (CPU\n"
                   "affinity and cgroup quota; cb3_threads_count).")
static HPy thread_count_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)
{
    (void)self;
    static const cb3_argspec spec = {"thread_count", {"max_threads", NULL}, 1, 0};
    HPy arg[1];
    if (cb3_parse_args(ctx, &spec, args, nargs, kwnames, arg) < 0)
        return HPy_NULL;
    size_t max_threads = 1;
    if (cb3_arg_threads(ctx, arg[0], &cb3_max_threads, &max_threads) < 0)
        return HPy_NULL;
    return HPyLong_FromSize_t(ctx, cb3_threads_count(max_threads));
}

/* module.name = value, a new handle (HPy_NULL: its error is set). */
static int add(HPyContext *ctx, HPy module, const char *name, HPy value)
{
    if (HPy_IsNull(value))
        return -1;
    int status = HPy_SetAttr_s(ctx, module, name, value);
    HPy_Close(ctx, value);
    return status;
}

int cb3_load_global(HPyContext *ctx, HPy from, const char *name, HPyGlobal *global)
{
    HPy value = HPy_GetAttr_s(ctx, from, name);
    if (HPy_IsNull(value))
        return -1;
    HPyGlobal_Store(ctx, global, value);
    HPy_Close(ctx, value);
    return 0;
}

/* What the extension takes from Python modules, once, at import. */
static const struct {
    const char *module, *name;
    HPyGlobal *global;
} imported[] = {
    {"cb3.errors", "DecryptionError", &cb3_DecryptionError},
    {"cb3.errors", "KeystreamExhaustedError", &cb3_KeystreamExhaustedError},
    {"cb3.errors", "ChunkedHeaderError", &cb3_ChunkedHeaderError},
#if defined(PYPY_VERSION)
    {"__pypy__", "add_memory_pressure", &cb3_add_memory_pressure},
#endif
};

static int load_imported(HPyContext *ctx)
{
    for (size_t i = 0; i < sizeof imported / sizeof imported[0]; i++) {
        HPy module = HPyImport_ImportModule(ctx, imported[i].module);
        if (HPy_IsNull(module))
            return -1;
        int status = cb3_load_global(ctx, module, imported[i].name, imported[i].global);
        HPy_Close(ctx, module);
        if (status < 0)
            return -1;
    }
    return 0;
}

#if !defined(CB3_BUILD_INTERPRETER) || !defined(CB3_BUILD_HPY_VERSION)
#error "setup.py defines CB3_BUILD_INTERPRETER and CB3_BUILD_HPY_VERSION (the build's interpreter and HPy)"
#endif

/* The HPy version whose context layout this binary assumes; None for the
 * cpython ABI, which calls the C API directly and has no HPyContext. */
static HPy built_hpy_version(HPyContext *ctx)
{
#if defined(HPY_ABI_CPYTHON)
    return HPy_Dup(ctx, ctx->h_None);
#else
    return HPyUnicode_FromString(ctx, CB3_BUILD_HPY_VERSION);
#endif
}

/* Raises ImportError unless the running interpreter (and, for the hybrid ABI,
 * its HPy runtime) is the one this binary was built for: cb3._loading.guard.check_build
 * (cb3/_loading/guard.py), the same check the loader stub makes before loading us.
 * Runs first, and uses only HPyContext members that precede the point where
 * the context layouts of hpy 0.9.0 and PyPy's 0.9.1.dev diverge (h_Builtins). */
static int check_build(HPyContext *ctx)
{
    int status = -1;
    HPy guard = HPy_NULL, check = HPy_NULL, items[3] = {HPy_NULL, HPy_NULL, HPy_NULL}, args = HPy_NULL,
        result = HPy_NULL;
    guard = HPyImport_ImportModule(ctx, "cb3._loading.guard");
    if (HPy_IsNull(guard))
        goto done;
    check = HPy_GetAttr_s(ctx, guard, "check_build");
    if (HPy_IsNull(check))
        goto done;
    items[0] = HPyUnicode_FromString(ctx, "cb3._cb3");
    items[1] = HPyUnicode_FromString(ctx, CB3_BUILD_INTERPRETER);
    items[2] = built_hpy_version(ctx);
    if (HPy_IsNull(items[0]) || HPy_IsNull(items[1]) || HPy_IsNull(items[2]))
        goto done;
    args = HPyTuple_FromArray(ctx, items, 3);
    if (HPy_IsNull(args))
        goto done;
    result = HPy_CallTupleDict(ctx, check, args, HPy_NULL);
    if (!HPy_IsNull(result))
        status = 0;
done:
    for (int i = 0; i < 3; i++)
        if (!HPy_IsNull(items[i]))
            HPy_Close(ctx, items[i]);
    if (!HPy_IsNull(result))
        HPy_Close(ctx, result);
    if (!HPy_IsNull(args))
        HPy_Close(ctx, args);
    if (!HPy_IsNull(check))
        HPy_Close(ctx, check);
    if (!HPy_IsNull(guard))
        HPy_Close(ctx, guard);
    return status;
}

/* ---- waiting for an object's lock without the GIL (CB3_LOCKING) ---- */

_Thread_local HPyContext *cb3_wait_ctx;
static _Thread_local HPyThreadState wait_state;

/* Called by Rust, on the calling thread, before it blocks on a busy lock. */
static void *wait_begin(void)
{
    HPyContext *ctx = cb3_wait_ctx;
    if (ctx == NULL) /* the GIL is released already, or buffers are not pinned */
        return NULL;
    wait_state = HPy_LeavePythonExecution(ctx);
    return ctx;
}

/* ... and after it got the lock. */
static void wait_end(void *token)
{
    if (token != NULL)
        HPy_ReenterPythonExecution((HPyContext *)token, wait_state);
}

HPyDef_SLOT(module_exec, HPy_mod_exec)
static int module_exec_impl(HPyContext *ctx, HPy module)
{
    if (check_build(ctx) < 0)
        return -1;
    if (cb3_set_wait_hooks(wait_begin, wait_end) != CB3_RESULT_OK)
        return cb3_raisef(ctx, ctx->h_SystemError, "cb3_set_wait_hooks failed");
    if (load_imported(ctx) < 0)
        return -1;
    if (!HPyHelpers_AddType(ctx, module, "ChaCha20Blake3", &cb3_ChaCha20Blake3_spec, NULL) ||
        !HPyHelpers_AddType(ctx, module, "Stream", &cb3_Stream_spec, NULL) ||
        !HPyHelpers_AddType(ctx, module, "blake3", &cb3_blake3_spec, NULL) ||
        !HPyHelpers_AddType(ctx, module, "ChaCha20", &cb3_ChaCha20_spec, NULL) ||
        !HPyHelpers_AddType(ctx, module, "Chunked", &cb3_Chunked_spec, NULL) || cb3_store_types(ctx, module) < 0)
        return -1;
#if defined(HPY_ABI_CPYTHON)
    const char *abi = "cpython";
#else
    const char *abi = "hybrid";
#endif
    if (add(ctx, module, "KEY_SIZE", HPyLong_FromLong(ctx, CB3_KEY_SIZE)) < 0 ||
        add(ctx, module, "NONCE_SIZE", HPyLong_FromLong(ctx, CB3_NONCE_SIZE)) < 0 ||
        add(ctx, module, "TAG_SIZE", HPyLong_FromLong(ctx, CB3_TAG_SIZE)) < 0 ||
        add(ctx, module, "GIL_THRESHOLD", HPyLong_FromLong(ctx, CB3_GIL_THRESHOLD)) < 0 ||
        add(ctx, module, "AUTO", HPyLong_FromLong(ctx, CB3_AUTO)) < 0 ||
        add(ctx, module, "BLAKE3_PARALLEL_MIN", HPyLong_FromLong(ctx, CB3_BLAKE3_PARALLEL_MIN)) < 0 ||
        add(ctx, module, "CHUNKED_HEADER_SIZE", HPyLong_FromLong(ctx, CB3_CHUNKED_HEADER_SIZE)) < 0 ||
        add(ctx, module, "CHUNKED_PREFIX_SIZE", HPyLong_FromLong(ctx, CB3_CHUNKED_PREFIX_SIZE)) < 0 ||
        add(ctx, module, "CHUNKED_VERSION", HPyLong_FromLong(ctx, CB3_CHUNKED_VERSION)) < 0 ||
        add(ctx, module, "CHUNKED_DEFAULT_CHUNK_SIZE", HPyLong_FromLong(ctx, CB3_CHUNKED_DEFAULT_CHUNK_SIZE)) < 0 ||
        add(ctx, module, "CHUNKED_MIN_CHUNK_SIZE", HPyLong_FromLong(ctx, CB3_CHUNKED_MIN_CHUNK_SIZE)) < 0 ||
        add(ctx, module, "CHUNKED_MAX_CHUNK_SIZE", HPyLong_FromLong(ctx, CB3_CHUNKED_MAX_CHUNK_SIZE)) < 0 ||
        add(ctx, module, "HPY_ABI", HPyUnicode_FromString(ctx, abi)) < 0 ||
        add(ctx, module, "OUTPUT_BYTEARRAY_MIN", HPyLong_FromLong(ctx, CB3_OUTPUT_BYTEARRAY_MIN)) < 0 ||
        add(ctx, module, "BUILD_INTERPRETER", HPyUnicode_FromString(ctx, CB3_BUILD_INTERPRETER)) < 0 ||
        add(ctx, module, "BUILD_HPY_VERSION", HPyUnicode_FromString(ctx, CB3_BUILD_HPY_VERSION)) < 0)
        return -1;
    return 0;
}

static HPyDef *module_defines[] = {
    &module_exec,        &version,           &simd_backend,      &cache_tuning,      &panic_boundary_check,
    &cb3_hash_def,       &cb3_keyed_hash_def, &cb3_derive_key_def, &cb3_hchacha20_def,
    &cb3_chunked_header_encode_def, &cb3_chunked_header_decode_def, &cpu_maker, &cpu_model, &thread_count, NULL,
};
static HPyGlobal *module_globals[] = {
    &cb3_DecryptionError, &cb3_KeystreamExhaustedError, &cb3_ChunkedHeaderError, &cb3_type_ChaCha20Blake3,
    &cb3_type_Stream,     &cb3_type_blake3,             &cb3_type_ChaCha20,     &cb3_type_Chunked,
#if defined(PYPY_VERSION)
    &cb3_add_memory_pressure,
#endif
    NULL,
};

static HPyModuleDef moduledef = {
    .doc = "cb3's HPy extension: ChaCha20-BLAKE3, BLAKE3 and ChaCha over the Rust core (rustlib). "
           "Use the cb3 package.",
    .size = 0,
    .defines = module_defines,
    .globals = module_globals,
};

HPy_MODINIT(_cb3, moduledef)
