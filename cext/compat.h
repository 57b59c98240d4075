/* What every file of the cb3._cb3 extension builds on: the ABI check, the
 * Python, HPy and cb3 headers, and the switches that make CPython and PyPy
 * take their own routes (each switch says which interpreter it serves and
 * how a build overrides it for testing). */
#ifndef CB3_COMPAT_H
#define CB3_COMPAT_H

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
 * a noticeable share of the call (buffers.h, CB3_RUN). */
#define CB3_GIL_THRESHOLD 2048

/* Output bytes (buffers.h, cb3_output): Rust writes into `ptr[0..len)`, then
 * cb3_output_finish makes the bytes object. Two routes:
 * - C API (CPython): `ptr` is the inside of a fresh PyBytes object, no copy.
 * - HPy (PyPy): `ptr` is C memory (inline, or malloc), copied once by
 *   HPyBytes_FromStringAndSize. A cpyext PyBytes object would be copied again
 *   when it reaches Python and freed only at a later collection
 *   (docs/pypy.md). CFLAGS=-DCB3_OUTPUT_VIA_HPY=0 builds the other route for
 *   measuring, CFLAGS=-DCB3_OUTPUT_VIA_HPY=1 this route on CPython, for
 *   testing. */
#if !defined(CB3_OUTPUT_VIA_HPY)
#if defined(PYPY_VERSION)
#define CB3_OUTPUT_VIA_HPY 1
#else
#define CB3_OUTPUT_VIA_HPY 0
#endif
#endif

/* Outputs of at least CB3_OUTPUT_BYTEARRAY_MIN bytes (0: never) are made as a
 * private bytearray, which cb3/_loading/signatures.py's forwarders turn into
 * bytes at the Python level. For PyPy with HPy's cpython ABI (cpyext): there
 * every bytes object a C function returns gets a C copy of its contents
 * (cpyext's PyBytesObject), made and freed per call, at a cost per byte; a
 * bytearray crosses as it is, and bytes() copies it inside PyPy
 * (docs/pypy.md, "PyPy 8.0: bytes results"). The module exports the value as
 * OUTPUT_BYTEARRAY_MIN. A CPython build may set it (CFLAGS) for testing. */
#if !defined(CB3_OUTPUT_BYTEARRAY_MIN)
#if defined(PYPY_VERSION) && defined(HPY_ABI_CPYTHON)
/* From the GIL threshold, where calls on bytes release the GIL
 * anyway: below it, the extra objects bring on collections whose finalizers
 * may run another thread during a call that keeps the GIL (test_threads.py
 * checks that none does). */
#define CB3_OUTPUT_BYTEARRAY_MIN CB3_GIL_THRESHOLD
#else
#define CB3_OUTPUT_BYTEARRAY_MIN 0
#endif
#endif
#if CB3_OUTPUT_BYTEARRAY_MIN > 0 && !defined(HPY_ABI_CPYTHON)
#error "CB3_OUTPUT_BYTEARRAY_MIN needs HPy's cpython ABI (the bytearray is made through the C API)"
#endif

/* PyPy's HPy turns an HPyType_Spec into an ordinary heap type, so its
 * instances behave unlike CPython's in three ways:
 *   - instances get a __dict__ (any attribute can be set), and assigning to a
 *     read-only HPyDef_GET property aborts the whole process ("Fatal RPython
 *     error: NotImplementedError" in W_HPyGetSetProperty.readonly_attribute);
 *     an HPyDef_GETSET setter's -1 return is ignored, so that is no way out;
 *   - the type can be subclassed although HPy_TPFLAGS_BASETYPE is not set;
 *   - pickle and copy accept the objects: copyreg does not see the C struct
 *     and pickles an empty shell, where CPython raises TypeError.
 * types.c defines methods, shared by every type, that restore CPython's
 * behaviour (types.h, CB3_TYPE_FIXES_DEFS). On CPython, which needs none of
 * the rest (CFLAGS=-DCB3_TYPE_FIXES_ON=1 compiles it there too, for testing),
 * only __reduce_ex__ and __reduce__ remain: they replace copyreg's bare
 * "cannot pickle" with one that says what to do. */
#if !defined(CB3_TYPE_FIXES_ON)
#if defined(PYPY_VERSION)
#define CB3_TYPE_FIXES_ON 1
#else
#define CB3_TYPE_FIXES_ON 0
#endif
#endif

#endif /* CB3_COMPAT_H */
