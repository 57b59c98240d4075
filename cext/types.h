/* What the extension's types share (types.c): instances that own a Rust
 * object, type names for messages, and the refusals that make HPy types on
 * PyPy behave as CPython's do (compat.h, CB3_TYPE_FIXES_ON). */
#ifndef CB3_TYPES_H
#define CB3_TYPES_H

#include "compat.h"

/* A new instance of `type`, whose struct starts with the pointer to its Rust
 * object, owning `inner`, a Rust object of `kind` (on PyPy its size is
 * reported to the garbage collector). HPy_NULL with an exception set if it
 * could not be made: `inner` is then still the caller's to free. */
HPy cb3_new_instance(HPyContext *ctx, HPy type, void *inner, cb3_object_kind kind);

/* For a type whose struct `Type` starts with `Inner *field`, the Rust object
 * (of `kind`) it owns: the prefix_destroy slot, which frees it (free_fn wipes
 * any key), and prefix_free, free_fn for a constructor's table entry
 * (cb3_method.free: an object made but not adopted). */
#define CB3_OWNER(prefix, Type, Inner, field, free_fn)                                          \
    _Static_assert(offsetof(Type, field) == 0, "the Rust object is the struct's first field"); \
    static void prefix##_free(void *inner)                                                      \
    {                                                                                           \
        free_fn((Inner *)inner);                                                                \
    }                                                                                           \
    HPyDef_SLOT(prefix##_destroy, HPy_tp_destroy)                                               \
    static void prefix##_destroy_impl(void *obj)                                                \
    {                                                                                           \
        Type *self = (Type *)obj;                                                               \
        free_fn(self->field);                                                                   \
        self->field = NULL;                                                                     \
    }

/* The Rust object of `self`, an instance of one of the module's types (each
 * struct starts with it, CB3_OWNER), or NULL with a TypeError set when
 * `self` was not made by its type's constructor: PyPy lets
 * object.__new__(cls) through, leaving no struct behind. One AsStruct call
 * (a context call on PyPy). */
const void *cb3_require_initialized(HPyContext *ctx, const void *inner);
static inline const void *cb3_inner(HPyContext *ctx, HPy self)
{
    const void *object = _HPy_AsStruct_Object(ctx, self);
    return cb3_require_initialized(ctx, object ? *(const void *const *)object : NULL);
}

/* The name of obj's type ("float"), for messages. */
const char *cb3_type_name(HPyContext *ctx, HPy obj);

/* The refusals as methods, in each type's defines (compat.h says why). */
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
/* Stores `from`.`name` in `global`; -1 with the exception set if it has none (module.c). */
int cb3_load_global(HPyContext *ctx, HPy from, const char *name, HPyGlobal *global);

#endif /* CB3_TYPES_H */
