/* Argument parsing with strict checks, and the integer converters (args.c). */
#ifndef CB3_ARGS_H
#define CB3_ARGS_H

#include "compat.h"

#define CB3_MAX_ARGS 7

/* max_threads value meaning "every core", as blake3-py's AUTO. */
#define CB3_AUTO (-1)

typedef struct {
    const char *function;                /* for messages: "encrypt" */
    const char *names[CB3_MAX_ARGS + 1]; /* NULL-terminated */
    int required;                        /* the first `required` names are required */
    int max_positional;                  /* 0: every name may be passed positionally */
    int positional_only;                 /* the first `positional_only` names cannot be keywords */
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

/* Integer arguments: one converter, one policy per parameter.
 * Every parameter accepts an int or any object with __index__ (numpy
 * integers) and refuses anything else with "NAME must be an int, not 'T'".
 * cb3's own parameters refuse bool too (True as a count or an index is a
 * misuse sign); blake3-py's (cb3.blake3's max_threads, digest's length and
 * seek) accept it, as blake3-py does. A value outside the C type raises
 * ValueError, or OverflowError (blake3-py's, and `length`), with `range` if
 * given, else "must not be negative" / "must be less than 2**64". Every other
 * range is Rust's to check. tests/api/test_bad_inputs.py records each policy. */
enum { CB3_INT_BOOL_OK = 1, CB3_INT_OVERFLOW = 2 };
typedef struct {
    const char *name;
    int flags;         /* CB3_INT_BOOL_OK | CB3_INT_OVERFLOW */
    const char *range; /* the rule told for a value outside the C type, or NULL */
} cb3_int_param;

/* As uint64_t. Returns 0, or -1 with the exception set. */
int cb3_arg_int(HPyContext *ctx, HPy obj, const cb3_int_param *param, uint64_t *out);

/* max_threads: the one parser of every constructor that takes it. Python
 * spells it as blake3-py does (a positive count, or AUTO = -1); rustlib's
 * value is the count, or CB3_BLAKE3_AUTO (0: every core); 1 when absent
 * (HPy_NULL). `policy` is cb3_max_threads (cb3's own: ChaCha20Blake3,
 * Chunked) or cb3_blake3_max_threads (blake3-py's: bool accepted,
 * OverflowError beyond 64 bits). Returns 0, or -1 with the exception set. */
extern const cb3_int_param cb3_max_threads, cb3_blake3_max_threads;
int cb3_arg_threads(HPyContext *ctx, HPy obj, const cb3_int_param *policy, size_t *out);

/* The integer as a Python int (a new handle), for values beyond 64 bits
 * (ChaCha positions), or HPy_NULL with TypeError set. */
HPy cb3_arg_index(HPyContext *ctx, HPy obj, const cb3_int_param *param);

#endif /* CB3_ARGS_H */
