/* The one call frame (call.c): every function, method and constructor of the
 * extension is a table entry, a cb3_method, that states what differs (its
 * arguments and what each one is, its outputs' sizes, its Rust call, what it
 * returns), and cb3_method_call / cb3_method_new run the same sequence for
 * all of them:
 *
 *     parse -> convert -> borrow -> self's Rust object -> size outputs
 *           -> prepare -> run (CB3_RUN: the GIL rule) -> raise or return
 *           -> release (always)
 *
 * so that parsing, borrowing, sizing, the GIL rule, raising and releasing are
 * written once. The frame lives on the caller's stack and allocates nothing
 * besides the outputs themselves. */
#ifndef CB3_CALL_H
#define CB3_CALL_H

#include "compat.h"
#include "args.h"
#include "buffers.h"
#include "errors.h"

/* What an argument is to its method: how the frame takes it, and what it
 * tells the frame. A method has each role but OBJECT at most once
 * (call->in is indexed by role). */
typedef enum {
    CB3_ARG_OBJECT = 0, /* not borrowed: the handle stays in call->arg[i], for the hooks */
    CB3_ARG_KEY,        /* read; its length explains a key-length failure */
    CB3_ARG_NONCE,      /* read; its length explains a nonce-length failure */
    CB3_ARG_TAG,        /* read; its length explains a tag-length failure */
    CB3_ARG_DATA,       /* read; the input: it sizes the outputs and counts for the GIL rule */
    CB3_ARG_AAD,        /* read, None or absent: empty; counts for the GIL rule */
    CB3_ARG_BUF,        /* writable; the input as well when the method has no DATA */
    CB3_ARG_BYTES,      /* read; counts for nothing */
    CB3_ARG_ROLES
} cb3_arg_role;
/* Or'ed to a read role: None or an absent argument is an empty buffer. */
#define CB3_ARG_NONE_OK 0x80

/* What a method returns when its Rust call succeeds. */
typedef enum {
    CB3_RETURN_BYTES = 0, /* out[0] */
    CB3_RETURN_PAIR,      /* (out[0], out[1]) */
    CB3_RETURN_COUNT,     /* call->written, an int */
    CB3_RETURN_NONE,
    CB3_RETURN_SELF,
    CB3_RETURN_ADOPT, /* constructors: a new instance owning call->made */
    CB3_RETURN_CUSTOM /* the method's finish hook */
} cb3_return;

typedef struct cb3_method cb3_method;

typedef struct {
    HPy arg[CB3_MAX_ARGS];   /* the arguments by name (borrowed handles; HPy_NULL if absent) */
    HPy owned[CB3_MAX_ARGS]; /* constructors only: handles cb3_parse_new_args made, closed at the end */
    cb3_borrowed set;        /* the buffers borrowed, released at the end */
    cb3_output out[2];       /* new bytes being filled: discarded at the end unless finished */
    /* The rest is set as the call goes on, and read only after that. */
    const cb3_buffer *in[CB3_ARG_ROLES]; /* the borrowed arguments by role (the method's roles only) */
    HPy self;                /* the instance, or the type for a constructor */
    const void *inner;       /* the instance's Rust object (methods with .inner) */
    void *made;              /* constructors: the new Rust object, owned until adopted */
    size_t input;            /* the input's length: DATA's, or BUF's when there is no DATA */
    size_t nbytes;           /* what the GIL rule counts (CB3_RUN) */
    size_t written;          /* what a Rust call reports writing */
    uint64_t value[CB3_MAX_ARGS]; /* integer arguments, as the hooks convert them */
    const char *text;        /* a str argument's UTF-8 (a context string), as a hook takes it */
    size_t text_len;
    const cb3_error_context *given; /* what cb3_raise is told: the method's, or one a hook sets */
    cb3_error_context context;      /* storage for a hook's own error context */
    void *state;             /* the method's own storage, passed by its entry point */
} cb3_call;

struct cb3_method {
    cb3_argspec spec;
    uint8_t role[CB3_MAX_ARGS]; /* cb3_arg_role of each name */
    uint8_t inner;              /* 1: call->inner is self's Rust object */
    uint8_t size[2];            /* cb3_size_rule of out[0] and out[1] (buffers.h) */
    uint8_t exact;              /* cb3_size_rule BUF's length must match, or CB3_SIZE_NONE */
    uint8_t returns;            /* cb3_return */
    size_t fixed;               /* the size of CB3_SIZE_FIXED outputs */
    const char *exact_rule;     /* how the message states `exact` ("len(data) + 32") */
    const cb3_error_context *given; /* the static part of the error context, or NULL; the
                                       lengths of KEY, NONCE and TAG are filled in */
    /* The Rust call (required) and the hooks (optional: NULL is none); the
     * hooks return 0, or -1 with the exception set. */
    int (*convert)(HPyContext *ctx, cb3_call *call); /* before borrowing: OBJECT arguments */
    int (*prepare)(HPyContext *ctx, cb3_call *call); /* after sizing: the rest */
    cb3_result (*run)(cb3_call *call); /* the Rust call: only pointers from the frame */
    HPy (*finish)(HPyContext *ctx, cb3_call *call); /* CB3_RETURN_CUSTOM */
    /* Constructors: the Rust object's kind, and its free function, which
     * the frame calls on an object made but not adopted. */
    cb3_object_kind kind;
    void (*free)(void *made);
};

/* Runs method `m` of `self` (HPy_NULL for module functions) on vectorcall
 * arguments; `state` is the method's own storage (call->state) or NULL. */
HPy cb3_method_call(HPyContext *ctx, const cb3_method *m, HPy self, const HPy *args, size_t nargs, HPy kwnames,
                    void *state);
/* The same for a method of one positional argument (HPyFunc_O: the
 * interpreter checks the count, so there is nothing to parse). */
HPy cb3_method_call_o(HPyContext *ctx, const cb3_method *m, HPy self, HPy arg);
/* The same for a constructor (tp_new's arguments). */
HPy cb3_method_new(HPyContext *ctx, const cb3_method *m, HPy type, const HPy *args, HPy_ssize_t nargs, HPy kw);

/* A new instance of call->self (a type) owning call->made, as
 * CB3_RETURN_ADOPT does (for a finish hook that sets more fields). */
HPy cb3_call_adopt(HPyContext *ctx, const cb3_method *m, cb3_call *call);

/* The tuple (first, second), taking both handles (closed here); HPy_NULL,
 * with the exception set, if either is HPy_NULL or the tuple fails. */
HPy cb3_pair(HPyContext *ctx, HPy first, HPy second);

/* The method entry points: HPyDef_METH's impl, passing the table entry. */
#define CB3_METHOD(def, py_name, entry, doc_text)                                                            \
    HPyDef_METH(def, py_name, HPyFunc_KEYWORDS, .doc = doc_text)                                             \
    static HPy def##_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)             \
    {                                                                                                        \
        return cb3_method_call(ctx, &(entry), self, args, nargs, kwnames, NULL);                             \
    }
#define CB3_CONSTRUCTOR(def, entry)                                                                          \
    HPyDef_SLOT(def, HPy_tp_new)                                                                             \
    static HPy def##_impl(HPyContext *ctx, HPy type, const HPy *args, HPy_ssize_t nargs, HPy kw)             \
    {                                                                                                        \
        return cb3_method_new(ctx, &(entry), type, args, nargs, kw);                                         \
    }

#endif /* CB3_CALL_H */
