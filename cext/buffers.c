/* The one place where Python objects become (pointer, length) pairs, and
 * where output bytes objects are made.
 *
 * Safety reasoning:
 * - A bytes object is immutable and the caller's handle keeps it alive for
 *   the whole call, so its internal pointer is used directly (zero copy),
 *   also while the GIL is released.
 * - Any other object is read through PyObject_GetBuffer. The Py_buffer keeps
 *   the exporter alive and, for bytearray and friends, holds the export lock:
 *   a resize from another thread while the GIL is released fails with
 *   BufferError instead of freeing memory under us. Other threads can still
 *   write into a mutable buffer concurrently; like hashlib and blake3-py we
 *   accept that a program racing on its own buffer gets unspecified bytes,
 *   never memory unsafety (the memory stays allocated).
 * - PyPy has no export lock: through cpyext, PyObject_GetBuffer on a
 *   bytearray (or array, or a memoryview of one) returns a pointer into the
 *   object's storage, but another thread may still resize the object, which
 *   moves the storage and frees the old block (lost output, then a crash).
 *   Such buffers are therefore not "pinned", and
 *   CB3_RUN keeps the GIL while any buffer of the call is unpinned: no other
 *   Python thread runs until the pointers are dropped. bytes (immutable, the
 *   HPy zero-copy path) and output bytes made here (private until returned)
 *   stay pinned, so bytes-in/bytes-out calls still release the GIL on PyPy.
 * - Only C-contiguous buffers of 1-byte items are accepted: anything else
 *   would make `len` mean something other than a byte count.
 * - Output bytes (CPython) are created with PyBytes_FromStringAndSize(NULL, n),
 *   filled by Rust before anyone else can see the object, then handed to HPy.
 *   On PyPy, Rust fills C memory that HPyBytes_FromStringAndSize copies
 *   (buffers.h, cb3_output).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buffers.h"
#include "errors.h"

#if defined(PYPY_VERSION)
#define CB3_VIEWS_PINNED 0 /* see above: PyPy does not lock exported buffers */
#else
#define CB3_VIEWS_PINNED 1
#endif

/* bytes input through HPyBytes_AS_STRING (1, the default) or, like other
 * buffers, through the C API (0: only for measuring the difference, see
 * docs/pypy.md; CFLAGS=-DCB3_BYTES_VIA_HPY=0). */
#ifndef CB3_BYTES_VIA_HPY
#define CB3_BYTES_VIA_HPY 1
#endif

/* A struct-module format of one byte-sized item: "B", "b" or "c", optionally
 * after a byte-order mark (ctypes arrays say "<B"). NULL means "B". */
static int is_byte_format(const char *format)
{
    if (format == NULL)
        return 1;
    if (*format != '\0' && strchr("@=<>!", *format) != NULL)
        format++;
    return (format[0] == 'B' || format[0] == 'b' || format[0] == 'c') && format[1] == '\0';
}

static const char *type_name(PyObject *obj)
{
    return Py_TYPE(obj)->tp_name;
}

#if defined(PYPY_VERSION)
/* 1 if `obj` is exactly bytes (not a subclass). Three context calls, each a
 * call into RPython; the bytes path below asks this first, so that exact
 * bytes need no HPyBytes_Check on top. */
static int is_exact_bytes(HPyContext *ctx, HPy obj)
{
    HPy type = HPy_Type(ctx, obj);
    int exact = HPy_Is(ctx, type, ctx->h_BytesType);
    HPy_Close(ctx, type);
    return exact;
}

/* bytes.__bytes__(obj) for a bytes subclass: an exact bytes copy of its
 * content, made by the builtin itself (no method of the subclass runs). */
static HPy exact_copy(HPyContext *ctx, HPy obj)
{
    HPy method = HPy_GetAttr_s(ctx, ctx->h_BytesType, "__bytes__");
    if (HPy_IsNull(method))
        return HPy_NULL;
    HPy copy = HPy_Call(ctx, method, &obj, 1, HPy_NULL);
    HPy_Close(ctx, method);
    return copy;
}
#endif

/* `out` borrows the inside of `bytes_obj`: zero copy. */
static void borrow_bytes(HPyContext *ctx, HPy bytes_obj, cb3_buffer *out)
{
    out->ptr = (const uint8_t *)HPyBytes_AS_STRING(ctx, bytes_obj);
    out->len = (size_t)HPyBytes_GET_SIZE(ctx, bytes_obj);
}

/* An empty buffer that owns nothing: what cb3_buffer_release may always be
 * given, and what None (or an absent optional argument) borrows. */
static void buffer_empty(cb3_buffer *out)
{
    out->ptr = NULL;
    out->len = 0;
    out->pinned = 1;
    out->view = NULL;
    out->copy = HPy_NULL;
}

int cb3_buffer_get(HPyContext *ctx, HPy obj, const char *name, int writable, int none_ok, cb3_buffer *out)
{
    buffer_empty(out);
    if (none_ok && HPy_Is(ctx, obj, ctx->h_None))
        return 0;
    if (!writable) {
#if defined(PYPY_VERSION)
        if (CB3_BYTES_VIA_HPY && is_exact_bytes(ctx, obj)) {
            borrow_bytes(ctx, obj, out);
            return 0;
        }
        if (HPyBytes_Check(ctx, obj)) {
            /* A bytes subclass on PyPy: both HPyBytes_GET_SIZE and cpyext's
             * buffer export answer with len(), which the subclass may
             * override, so they could describe more bytes than exist.
             * bytes.__bytes__(obj) copies its real content; read that copy
             * instead. Not bytes(obj): that would run the subclass's own
             * __bytes__, Python code that could resize a bytearray another
             * argument of this call has already borrowed (on PyPy nothing
             * stops a resize; the borrowed pointer would dangle).
             * (Measurement builds, CB3_BYTES_VIA_HPY=0, send exact bytes on
             * to the C API below.) */
            if (CB3_BYTES_VIA_HPY || !is_exact_bytes(ctx, obj)) {
                out->copy = exact_copy(ctx, obj);
                if (HPy_IsNull(out->copy))
                    return -1;
                borrow_bytes(ctx, out->copy, out);
                return 0;
            }
        }
#else
        /* CPython: a subclass's size and data are its real ones, so any
         * bytes is borrowed, and HPyBytes_Check is a flag test (asking
         * is_exact_bytes first, as PyPy does, cost a PyObject_Type call
         * through the PLT and a reference count per argument). */
        if (CB3_BYTES_VIA_HPY && HPyBytes_Check(ctx, obj)) {
            borrow_bytes(ctx, obj, out);
            return 0;
        }
#endif
    }
    PyObject *py = HPy_AsPyObject(ctx, obj);
    if (py == NULL)
        return -1;
    int status = -1;
    if (PyUnicode_Check(py)) {
        cb3_raisef(ctx, ctx->h_TypeError, "%s must be a bytes-like object, not 'str' (encode it first)", name);
        goto done;
    }
    if (!PyObject_CheckBuffer(py)) {
        cb3_raisef(ctx, ctx->h_TypeError, "%s must be a bytes-like object, not '%s'", name, type_name(py));
        goto done;
    }
    Py_buffer *view = &out->view_storage;
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(py, view, flags) < 0) {
        /* An exporter that refuses every request (a released memoryview, a
         * closed mmap) is not a layout problem: keep its own exception type
         * and message, and say which argument it was. */
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        if (PyObject_GetBuffer(py, view, PyBUF_FULL_RO) < 0) {
            PyErr_Clear();
            PyErr_NormalizeException(&type, &value, &traceback);
            if (type != NULL && value != NULL)
                PyErr_Format(type, "%s cannot be used as a buffer: %S", name, value);
            else
                cb3_raisef(ctx, ctx->h_BufferError, "%s cannot be used as a buffer", name);
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(traceback);
            goto done;
        }
        PyBuffer_Release(view);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(traceback);
        if (writable && PyObject_GetBuffer(py, view, PyBUF_SIMPLE) == 0) {
            PyBuffer_Release(view);
            cb3_raisef(ctx, ctx->h_TypeError, "%s must be a writable buffer, not read-only '%s'", name,
                       type_name(py));
        } else {
            PyErr_Clear();
            cb3_raisef(ctx, ctx->h_BufferError, "%s must be a C-contiguous buffer", name);
        }
        goto done;
    }
    if (view->itemsize != 1 || !is_byte_format(view->format)) {
        /* The format string belongs to the view: copy it before the release. */
        char format[100];
        snprintf(format, sizeof format, "%s", view->format ? view->format : "?");
        PyBuffer_Release(view);
        cb3_raisef(ctx, ctx->h_BufferError, "%s must be a buffer of bytes (item size 1), not format '%s'", name,
                   format);
        goto done;
    }
    out->ptr = (const uint8_t *)view->buf;
    out->len = (size_t)view->len;
    out->view = view;
    out->pinned = CB3_VIEWS_PINNED;
    status = 0;
done:
    Py_DECREF(py);
    return status;
}

void cb3_buffer_release(HPyContext *ctx, cb3_buffer *buf)
{
    if (!HPy_IsNull(buf->copy)) {
        HPy_Close(ctx, buf->copy);
        buf->copy = HPy_NULL;
    }
    if (buf->view != NULL) {
        PyBuffer_Release(buf->view);
        buf->view = NULL;
    }
}

int cb3_output_new(HPyContext *ctx, size_t len, cb3_output *out)
{
    out->ptr = NULL;
    out->len = 0;
#if CB3_OUTPUT_VIA_HPY
    out->heap = NULL;
#else
    out->obj = NULL;
#endif
    if (len > (size_t)PY_SSIZE_T_MAX) {
        return cb3_raisef(ctx, ctx->h_OverflowError, "output of %zu bytes is too large", len);
    }
#if CB3_OUTPUT_BYTEARRAY_MIN > 0
    /* Pinned like the other routes: nothing else holds the bytearray until
     * it is returned, so nothing can resize it, and its storage does not
     * move until resized (on PyPy, PyByteArray_AsString makes it
     * non-moving). */
    out->array = NULL;
    if (len >= CB3_OUTPUT_BYTEARRAY_MIN) {
        out->array = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)len);
        if (out->array == NULL)
            return -1;
        out->ptr = (uint8_t *)PyByteArray_AsString(out->array);
        if (out->ptr == NULL) {
            Py_CLEAR(out->array);
            return -1;
        }
        out->len = len;
        return 0;
    }
#endif
#if CB3_OUTPUT_VIA_HPY
    /* A plain malloc per large output: glibc's dynamic mmap threshold
     * already serves repeated large blocks from the heap, so a per-thread
     * reusable block would save nothing. No wiping of this copy: the bytes object made from it lives in PyPy's
     * moving GC, which leaves copies of its own anyway. */
    if (len <= CB3_OUTPUT_INLINE) {
        out->ptr = out->inline_buf;
    } else {
        out->heap = malloc(len);
        if (out->heap == NULL) {
            HPyErr_NoMemory(ctx);
            return -1;
        }
        out->ptr = out->heap;
    }
#else
    out->obj = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)len);
    if (out->obj == NULL)
        return -1;
    out->ptr = (uint8_t *)PyBytes_AS_STRING(out->obj);
#endif
    out->len = len;
    return 0;
}

HPy cb3_output_finish(HPyContext *ctx, cb3_output *out)
{
#if CB3_OUTPUT_BYTEARRAY_MIN > 0
    if (out->array != NULL) {
        HPy array = HPy_FromPyObject(ctx, out->array);
        cb3_output_discard(out);
        return array;
    }
#endif
#if CB3_OUTPUT_VIA_HPY
    HPy result = HPyBytes_FromStringAndSize(ctx, (const char *)out->ptr, (HPy_ssize_t)out->len);
#else
    HPy result = HPy_FromPyObject(ctx, out->obj);
#endif
    cb3_output_discard(out);
    return result;
}

void cb3_output_discard(cb3_output *out)
{
#if CB3_OUTPUT_BYTEARRAY_MIN > 0
    Py_XDECREF(out->array);
    out->array = NULL;
#endif
#if CB3_OUTPUT_VIA_HPY
    free(out->heap);
    out->heap = NULL;
#else
    Py_XDECREF(out->obj);
    out->obj = NULL;
#endif
    out->ptr = NULL;
    out->len = 0;
}

const cb3_buffer *cb3_borrow(HPyContext *ctx, cb3_borrowed *set, HPy obj, const char *name, int flags)
{
    cb3_buffer *buf = &set->items[set->count];
    int optional = (flags & CB3_OPTIONAL) != 0;
    if (optional && HPy_IsNull(obj)) {
        buffer_empty(buf);
    } else if (cb3_buffer_get(ctx, obj, name, flags & CB3_WRITE, optional, buf) < 0) {
        return NULL;
    }
    set->count++;
    return buf;
}

int cb3_all_pinned(const cb3_borrowed *set)
{
    if (set == NULL) /* the call borrows no Python buffer */
        return 1;
    for (int i = 0; i < set->count; i++) {
        if (!set->items[i].pinned)
            return 0;
    }
    return 1;
}

void cb3_release_all(HPyContext *ctx, cb3_borrowed *set)
{
    for (int i = 0; i < set->count; i++)
        cb3_buffer_release(ctx, &set->items[i]);
    set->count = 0;
}

/* PyPy's HPyLong_FromInt32_t makes a small int (space.newint), a shorter
 * path than FromSize_t's newlong_from_rarith_int; on CPython FromSize_t is
 * the cheaper one (docs/pypy.md, "Per-call
 * cost"). */
HPy cb3_count_new(HPyContext *ctx, size_t count)
{
#if defined(PYPY_VERSION)
    if (count <= INT32_MAX)
        return HPyLong_FromInt32_t(ctx, (int32_t)count);
#endif
    return HPyLong_FromSize_t(ctx, count);
}
