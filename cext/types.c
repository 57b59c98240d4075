/* What the extension's types share: making an instance that owns its Rust
 * object, type names for messages, and the refusals that make HPy types on
 * PyPy behave as CPython's do (compat.h, CB3_TYPE_FIXES_ON). */
#include <string.h>

#include "errors.h"
#include "types.h"

/* Not HPyType_GetName: its context slot lies past h_Builtins, where PyPy's
 * HPy context differs from hpy 0.9.0's (docs/pypy.md, hpy-0.9 notes). */
const char *cb3_type_name(HPyContext *ctx, HPy obj)
{
    PyObject *py = HPy_AsPyObject(ctx, obj);
    if (py == NULL)
        return "?";
    const char *name = Py_TYPE(py)->tp_name; /* the type outlives this call: obj holds it */
    Py_DECREF(py);
    return name;
}

#if defined(PYPY_VERSION)
/* __pypy__.add_memory_pressure (module_exec loads it). PyPy frees an
 * instance, and through its destroy slot the Rust object, only at a major
 * collection, and its collector cannot see the Rust allocation
 * (cb3_object_size): told nothing, it lets objects made in a loop pile up
 * without bound (docs/pypy.md, "Objects made in a loop"). So the
 * instances tell it. */
HPyGlobal cb3_add_memory_pressure;

/* Reported in batches of this many bytes: one call of the interpreter per
 * batch, the collector's count short by less than one batch. */
#define REPORT_BATCH (64 * 1024)
static size_t unreported; /* made since the last report; the GIL guards it */

static int report_memory(HPyContext *ctx, size_t bytes)
{
    unreported += bytes;
    if (unreported < REPORT_BATCH)
        return 0;
    HPy report = HPyGlobal_Load(ctx, cb3_add_memory_pressure);
    HPy size = HPyLong_FromSize_t(ctx, unreported);
    unreported = 0;
    HPy done = HPy_IsNull(size) ? HPy_NULL : HPy_Call(ctx, report, &size, 1, HPy_NULL);
    int status = HPy_IsNull(done) ? -1 : 0;
    HPy_Close(ctx, report);
    if (!HPy_IsNull(size))
        HPy_Close(ctx, size);
    if (!HPy_IsNull(done))
        HPy_Close(ctx, done);
    return status;
}
#endif

HPy cb3_new_instance(HPyContext *ctx, HPy type, void *inner, cb3_object_kind kind)
{
#if defined(PYPY_VERSION)
    /* Before the instance exists: on failure `inner` is still the caller's. */
    if (report_memory(ctx, cb3_object_size((unsigned int)kind)) < 0)
        return HPy_NULL;
#else
    (void)kind; /* CPython frees the instance when its last reference goes */
#endif
    void *data;
    HPy self = HPy_New(ctx, type, &data);
    if (!HPy_IsNull(self))
        memcpy(data, &inner, sizeof inner); /* the struct's first field */
    return self;
}

/* CPython 3.11's messages, for objects without a __dict__. */
static int refuse_setattr(HPyContext *ctx, HPy self, HPy name, const char *type_name, const char *property)
{
    if (!HPyUnicode_Check(ctx, name))
        return cb3_raisef(ctx, ctx->h_TypeError, "attribute name must be string, not '%s'",
                          cb3_type_name(ctx, name));
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

static int refuse_subclass(HPyContext *ctx, const char *type_name)
{
    return cb3_raisef(ctx, ctx->h_TypeError, "type '%s' is not an acceptable base type", type_name);
}

static int refuse_pickle(HPyContext *ctx, const char *type_name)
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

/* ---- the refusals as methods, shared by every type ---- */

HPyGlobal cb3_type_ChaCha20Blake3, cb3_type_Stream, cb3_type_blake3, cb3_type_ChaCha20, cb3_type_Chunked;

/* Each type: its attribute in the module, the name the messages give, and
 * its read-only property (NULL: none). */
static const struct {
    HPyGlobal *type;
    const char *attribute, *name, *property;
} types[] = {
    {&cb3_type_ChaCha20Blake3, "ChaCha20Blake3", "cb3.ChaCha20Blake3", NULL},
    {&cb3_type_Stream, "Stream", "cb3.Stream", "message_index"},
    {&cb3_type_blake3, "blake3", "cb3.blake3", NULL},
    {&cb3_type_ChaCha20, "ChaCha20", "cb3.chacha20.ChaCha20", "position"},
    {&cb3_type_Chunked, "Chunked", "cb3._cb3.Chunked", NULL},
};
#define N_TYPES (sizeof types / sizeof types[0])

int cb3_store_types(HPyContext *ctx, HPy module)
{
    for (size_t i = 0; i < N_TYPES; i++) {
        if (cb3_load_global(ctx, module, types[i].attribute, types[i].type) < 0)
            return -1;
    }
    return 0;
}

/* What the refusals say of `obj`: the entry of the type it is an instance
 * of, or its own type's name (not one of these: nothing to refuse by name). */
typedef struct {
    const char *name, *property;
} refused;

static refused type_of(HPyContext *ctx, HPy obj)
{
    for (size_t i = 0; i < N_TYPES; i++) {
        HPy type = HPyGlobal_Load(ctx, *types[i].type);
        int is = HPy_TypeCheck(ctx, obj, type);
        HPy_Close(ctx, type);
        if (is)
            return (refused){.name = types[i].name, .property = types[i].property};
    }
    return (refused){.name = cb3_type_name(ctx, obj), .property = NULL};
}

HPyDef_METH(cb3_setattr_def, "__setattr__", HPyFunc_VARARGS,
            .doc = "Implement setattr(self, name, value): refused, as on CPython.")
static HPy cb3_setattr_def_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs)
{
    if (nargs != 2) {
        cb3_raisef(ctx, ctx->h_TypeError, "expected 2 arguments, got %zu", nargs);
        return HPy_NULL;
    }
    refused type = type_of(ctx, self);
    refuse_setattr(ctx, self, args[0], type.name, type.property);
    return HPy_NULL;
}

HPyDef_METH(cb3_delattr_def, "__delattr__", HPyFunc_O,
            .doc = "Implement delattr(self, name): refused, as on CPython.")
static HPy cb3_delattr_def_impl(HPyContext *ctx, HPy self, HPy name)
{
    refused type = type_of(ctx, self);
    refuse_setattr(ctx, self, name, type.name, type.property);
    return HPy_NULL;
}

HPyDef_METH(cb3_init_subclass_def, "__init_subclass__", HPyFunc_KEYWORDS, .doc = "Refuses subclasses, as on CPython.")
static HPy cb3_init_subclass_def_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)
{
    (void)args, (void)nargs, (void)kwnames;
    refuse_subclass(ctx, type_of(ctx, self).name);
    return HPy_NULL;
}

HPyDef_METH(cb3_reduce_ex_def, "__reduce_ex__", HPyFunc_O, .doc = "Refuses pickling and copying, as on CPython.")
static HPy cb3_reduce_ex_def_impl(HPyContext *ctx, HPy self, HPy protocol)
{
    (void)protocol;
    refuse_pickle(ctx, type_of(ctx, self).name);
    return HPy_NULL;
}

HPyDef_METH(cb3_reduce_def, "__reduce__", HPyFunc_NOARGS, .doc = "Refuses pickling and copying, as on CPython.")
static HPy cb3_reduce_def_impl(HPyContext *ctx, HPy self)
{
    refuse_pickle(ctx, type_of(ctx, self).name);
    return HPy_NULL;
}
