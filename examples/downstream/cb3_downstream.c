/* cb3_downstream: an example of a C extension module that uses cb3's C API
 * (cb3.h, linked against the static library libcb3.a that the cb3 package
 * ships; see setup.py beside this file and docs/c-api.md).
 *
 *   encrypt_many(key, nonce, messages, associated_data=b"") -> list[bytes]
 *
 * encrypts every message under one key, message i with the nonce
 * nonce[0..16] || le64(le64(nonce[16..24]) + i): the nonce schedule of
 * cb3.Stream, so the result equals
 * [cb3.Stream(key, nonce).encrypt(m, associated_data) for m in messages]
 * and cb3 can decrypt it. The loop runs in C with the GIL released. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "cb3.h"

/* A failed cb3 call as a Python exception. */
static PyObject *raise_cb3(cb3_result result)
{
    PyObject *type = PyExc_RuntimeError;
    switch (result) {
    case CB3_RESULT_INVALID_KEY_LENGTH:
    case CB3_RESULT_INVALID_NONCE_LENGTH:
    case CB3_RESULT_INVALID_ARGUMENT:
        type = PyExc_ValueError;
        break;
    default:
        break;
    }
    PyErr_Format(type, "cb3: %s (cb3_result %u)", cb3_result_message(result), (unsigned)result);
    return NULL;
}

static void message_nonce(uint8_t out[CB3_NONCE_SIZE], const uint8_t *base, uint64_t index)
{
    uint64_t counter = 0;
    memcpy(out, base, CB3_NONCE_SIZE);
    for (int i = 7; i >= 0; i--)
        counter = (counter << 8) | base[16 + i];
    counter += index; /* wraps mod 2^64, as cb3_stream does */
    for (int i = 0; i < 8; i++)
        out[16 + i] = (uint8_t)(counter >> (8 * i));
}

static PyObject *encrypt_many(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"key", "nonce", "messages", "associated_data", NULL};
    Py_buffer key = {0}, nonce = {0}, aad = {0};
    PyObject *messages = NULL, *sequence = NULL, *result = NULL;
    Py_buffer *views = NULL;
    Py_ssize_t count = 0, acquired = 0;
    cb3_aead *aead = NULL;
    cb3_result status = CB3_RESULT_OK;
    (void)module;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*y*O|y*:encrypt_many", keywords, &key, &nonce, &messages, &aad))
        return NULL;
    if (nonce.len != CB3_NONCE_SIZE) {
        PyErr_Format(PyExc_ValueError, "nonce must be %d bytes, got %zd", CB3_NONCE_SIZE, nonce.len);
        goto done;
    }
    status = cb3_aead_new((const uint8_t *)key.buf, (size_t)key.len, &aead);
    if (status != CB3_RESULT_OK) {
        raise_cb3(status);
        goto done;
    }
    sequence = PySequence_Fast(messages, "messages must be a sequence of bytes-like objects");
    if (sequence == NULL)
        goto done;
    count = PySequence_Fast_GET_SIZE(sequence);
    views = (Py_buffer *)PyMem_Calloc((size_t)count + 1, sizeof *views);
    result = PyList_New(count);
    if (views == NULL || result == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    /* Hold every input buffer and allocate every output before letting go of
     * the GIL; the outputs are bytes objects filled in place. */
    for (Py_ssize_t i = 0; i < count; i++) {
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(sequence, i), &views[i], PyBUF_SIMPLE) < 0)
            goto fail;
        acquired++;
        if (views[i].len > PY_SSIZE_T_MAX - CB3_TAG_SIZE) {
            PyErr_SetString(PyExc_OverflowError, "message too long");
            goto fail;
        }
        PyObject *out = PyBytes_FromStringAndSize(NULL, views[i].len + CB3_TAG_SIZE);
        if (out == NULL)
            goto fail;
        PyList_SET_ITEM(result, i, out);
    }

    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < count && status == CB3_RESULT_OK; i++) {
        uint8_t n[CB3_NONCE_SIZE];
        PyObject *out = PyList_GET_ITEM(result, i);
        message_nonce(n, (const uint8_t *)nonce.buf, (uint64_t)i);
        status = cb3_aead_encrypt(aead, n, sizeof n, (const uint8_t *)views[i].buf, (size_t)views[i].len,
                                  (const uint8_t *)aad.buf, (size_t)aad.len, (uint8_t *)PyBytes_AS_STRING(out),
                                  (size_t)PyBytes_GET_SIZE(out), NULL);
    }
    Py_END_ALLOW_THREADS
    if (status != CB3_RESULT_OK) {
        raise_cb3(status);
        goto fail;
    }
    goto done;

fail:
    Py_CLEAR(result);
done:
    for (Py_ssize_t i = 0; i < acquired; i++)
        PyBuffer_Release(&views[i]);
    PyMem_Free(views);
    Py_XDECREF(sequence);
    cb3_aead_free(aead); /* wipes the key copy; NULL is fine */
    PyBuffer_Release(&key);
    PyBuffer_Release(&nonce);
    if (aad.obj != NULL)
        PyBuffer_Release(&aad);
    return result;
}

static PyMethodDef methods[] = {
    {"encrypt_many", (PyCFunction)(void (*)(void))encrypt_many, METH_VARARGS | METH_KEYWORDS,
     "encrypt_many(key, nonce, messages, associated_data=b'') -> list[bytes]\n\n"
     "ChaCha20-BLAKE3 of each message under one key with consecutive nonces\n"
     "(the nonce schedule of cb3.Stream), computed in C with the GIL released."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "cb3_downstream", "An example extension that uses cb3's C API.", 0, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_cb3_downstream(void)
{
    char header_version[32];
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL)
        return NULL;
    /* The cb3 version compiled against (cb3.h) and the one linked (libcb3.a). */
    snprintf(header_version, sizeof header_version, "%d.%d.%d", CB3_VERSION_MAJOR, CB3_VERSION_MINOR,
             CB3_VERSION_PATCH);
    if (PyModule_AddStringConstant(module, "HEADER_VERSION", header_version) < 0 ||
        PyModule_AddStringConstant(module, "LIBRARY_VERSION", cb3_version()) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
