/* What the extension's types share: making an instance that owns its Rust
 * object, type names for messages, and the refusals that make HPy types on
 * PyPy behave as CPython's do (CB3_TYPE_FIXES in cb3ext.h). */
#include <string.h>

#include "cb3ext.h"

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

HPy cb3_new_instance(HPyContext *ctx, HPy type, void *inner)
{
    void *data;
    HPy self = HPy_New(ctx, type, &data);
    if (!HPy_IsNull(self))
        memcpy(data, &inner, sizeof inner); /* the struct's first field */
    return self;
}

/* CPython 3.11's messages, for objects without a __dict__. */
int cb3_refuse_setattr(HPyContext *ctx, HPy self, HPy name, const char *type_name, const char *property)
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
