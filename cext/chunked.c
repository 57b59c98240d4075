/* cb3._cb3.Chunked: the chunk batches of cb3's encrypted file format, a thin
 * shell over cb3_chunked_* (rustlib/src/ffi/chunked.rs). Private: cb3/chunked/
 * (EncryptingWriter, DecryptingReader, encrypt_file, decrypt_file) does the
 * framing and is the public API. */
#include "cb3ext.h"

typedef struct {
    cb3_chunked *chunked; /* owned; immutable, so shared freely between threads */
} ChunkedObject;

HPyType_HELPERS(ChunkedObject)
CB3_OWNER(Chunked, ChunkedObject, cb3_chunked, CB3_OBJECT_KIND_CHUNKED, chunked, cb3_chunked_free)

HPyDef_SLOT(Chunked_new, HPy_tp_new)
static HPy Chunked_new_impl(HPyContext *ctx, HPy type, const HPy *args, HPy_ssize_t nargs, HPy kw)
{
    static const cb3_argspec spec = {"Chunked", {"key", "header", "associated_data", "max_threads", NULL}, 4, 4};
    cb3_call call;
    cb3_call_start(&call);
    HPy result = HPy_NULL;
    uint64_t max_threads = 1;
    if (cb3_call_parse_new(ctx, &call, &spec, args, nargs, kw) < 0 ||
        cb3_arg_int(ctx, call.arg[3], &(const cb3_int_param){"max_threads", 0, NULL}, &max_threads) < 0)
        goto done;
    const cb3_buffer *key = cb3_call_borrow(ctx, &call, 0, "key", CB3_READ);
    const cb3_buffer *header = key ? cb3_call_borrow(ctx, &call, 1, "header", CB3_READ) : NULL;
    const cb3_buffer *aad = header ? cb3_call_borrow(ctx, &call, 2, "associated_data", CB3_READ | CB3_OPTIONAL) : NULL;
    if (aad == NULL)
        goto done;
    cb3_chunked *chunked = NULL;
    cb3_result r = cb3_chunked_new(key->ptr, key->len, header->ptr, header->len, aad->ptr, aad->len,
                                   (size_t)max_threads, &chunked);
    if (r != CB3_RESULT_OK) { /* a bad header: CB3_RESULT_INVALID_HEADER, a ValueError */
        const cb3_error_context given = {.key = key->len};
        cb3_raise(ctx, r, &given);
        goto done;
    }
    result = Chunked_adopt(ctx, type, chunked);
done:
    return cb3_call_end(ctx, &call, result);
}

typedef cb3_result (*chunked_op)(const cb3_chunked *, uint64_t, uint32_t, const uint8_t *, size_t, uint8_t *, size_t,
                                 size_t *);

/* (first_index, last, data, out) -> bytes written into out. */
static HPy run(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames, const cb3_argspec *spec,
               chunked_op op)
{
    cb3_call call;
    cb3_call_start(&call);
    HPy result = HPy_NULL;
    uint64_t first = 0;
    if (cb3_call_parse(ctx, &call, spec, args, nargs, kwnames) < 0 ||
        cb3_arg_int(ctx, call.arg[0], &(const cb3_int_param){"first_index", CB3_INT_OVERFLOW, NULL}, &first) < 0)
        return HPy_NULL;
    int last = HPy_IsTrue(ctx, call.arg[1]);
    if (last < 0)
        return HPy_NULL;
    const cb3_buffer *data = cb3_call_borrow(ctx, &call, 2, "data", CB3_READ);
    const cb3_buffer *out = data ? cb3_call_borrow(ctx, &call, 3, "out", CB3_WRITE) : NULL;
    if (out == NULL)
        goto done;
    const cb3_chunked *chunked = CB3_INNER(ctx, self, ChunkedObject, chunked);
    if (chunked == NULL)
        goto done;
    size_t written = 0;
    static const cb3_error_context context = {
        .invalid = "invalid chunk batch: a non-final batch must be whole chunks, only chunk 0 may be empty, "
                   "and chunk indices end at 2**64 - 1",
        .object = "cb3.EncryptingWriter", /* CB3_RESULT_FORKED: sealing in a fork() child */
    };
    CB3_CALL_RUN(ctx, &call, data->len, &context,
                 op(chunked, first, (uint32_t)last, data->ptr, data->len, (uint8_t *)out->ptr, out->len, &written));
    if (call.status < 0)
        goto done;
    result = cb3_count_new(ctx, written);
done:
    return cb3_call_end(ctx, &call, result);
}

HPyDef_METH(Chunked_seal_into, "seal_into", HPyFunc_KEYWORDS,
            .doc = "seal_into(first_index, last, data, out) -> int\n\n"
                   "Seal data as chunks first_index.. into out (cb3_chunked_seal); returns bytes written.")
static HPy Chunked_seal_into_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)
{
    static const cb3_argspec spec = {"seal_into", {"first_index", "last", "data", "out", NULL}, 4, 0};
    return run(ctx, self, args, nargs, kwnames, &spec, cb3_chunked_seal);
}

HPyDef_METH(Chunked_open_into, "open_into", HPyFunc_KEYWORDS,
            .doc = "open_into(first_index, last, data, out) -> int\n\n"
                   "Verify and decrypt chunks first_index.. into out (cb3_chunked_open); returns plaintext\n"
                   "bytes written. cb3.DecryptionError if any chunk fails (no plaintext is left in out).")
static HPy Chunked_open_into_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)
{
    static const cb3_argspec spec = {"open_into", {"first_index", "last", "data", "out", NULL}, 4, 0};
    return run(ctx, self, args, nargs, kwnames, &spec, cb3_chunked_open);
}

/* ---- the stream header: rustlib's one codec ---- */

HPyDef_METH(cb3_chunked_header_encode_def, "chunked_header_encode", HPyFunc_KEYWORDS,
            .doc = "chunked_header_encode(chunk_size, nonce_prefix)\n--\n\n"
                   "The 27-byte header of cb3's encrypted file format (cb3_chunked_header_encode).")
static HPy cb3_chunked_header_encode_def_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs,
                                              HPy kwnames)
{
    (void)self;
    static const cb3_argspec spec = {"chunked_header_encode", {"chunk_size", "nonce_prefix", NULL}, 2, 0};
#define CHUNK_SIZE_RANGE "in 64..16777216"
    static const cb3_int_param chunk_size_param = {"chunk_size", 0, CHUNK_SIZE_RANGE};
    cb3_call call;
    cb3_call_start(&call);
    HPy result = HPy_NULL;
    cb3_output *out = &call.out[0];
    uint64_t chunk_size = 0;
    if (cb3_call_parse(ctx, &call, &spec, args, nargs, kwnames) < 0 ||
        cb3_arg_int(ctx, call.arg[0], &chunk_size_param, &chunk_size) < 0)
        return HPy_NULL;
    const cb3_buffer *prefix = cb3_call_borrow(ctx, &call, 1, "nonce_prefix", CB3_READ);
    if (prefix == NULL || cb3_output_new(ctx, CB3_CHUNKED_HEADER_SIZE, out) < 0)
        goto done;
    const cb3_error_context given = {.nonce = prefix->len, .nonce_sizes = "15 bytes",
                                     .invalid = "chunk_size must be " CHUNK_SIZE_RANGE};
    /* A chunk size beyond 32 bits is out of range too: Rust checks one that fits. */
    uint32_t size = chunk_size > UINT32_MAX ? 0 : (uint32_t)chunk_size;
    CB3_CALL_RUN(ctx, &call, 0, &given, cb3_chunked_header_encode(prefix->ptr, prefix->len, size, out->ptr, out->len));
    if (call.status < 0)
        goto done;
    result = cb3_output_finish(ctx, out);
done:
    return cb3_call_end(ctx, &call, result);
}

HPyDef_METH(cb3_chunked_header_decode_def, "chunked_header_decode", HPyFunc_KEYWORDS,
            .doc = "chunked_header_decode(header)\n--\n\n"
                   "(chunk_size, nonce_prefix) of a stream header, from its first 27 bytes\n"
                   "(cb3_chunked_header_decode); cb3.ChunkedHeaderError naming the rule it breaks.")
static HPy cb3_chunked_header_decode_def_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs,
                                              HPy kwnames)
{
    (void)self;
    static const cb3_argspec spec = {"chunked_header_decode", {"header", NULL}, 1, 0};
    cb3_call call;
    cb3_call_start(&call);
    HPy result = HPy_NULL;
    if (cb3_call_parse(ctx, &call, &spec, args, nargs, kwnames) < 0)
        return HPy_NULL;
    const cb3_buffer *header = cb3_call_borrow(ctx, &call, 0, "header", CB3_READ);
    if (header == NULL)
        goto done;
    uint8_t prefix[CB3_CHUNKED_PREFIX_SIZE];
    uint32_t chunk_size = 0;
    cb3_chunked_header_fault fault = {CB3_CHUNKED_HEADER_RULE_LENGTH, 0};
    /* The first bytes of a stream: what follows the header is not its business. */
    size_t len = header->len < CB3_CHUNKED_HEADER_SIZE ? header->len : CB3_CHUNKED_HEADER_SIZE;
    CB3_CALL_RUN(ctx, &call, 0, &(const cb3_error_context){.header_fault = &fault},
                 cb3_chunked_header_decode(header->ptr, len, prefix, sizeof prefix, &chunk_size, &fault));
    if (call.status < 0)
        goto done;
    HPy items[2] = {HPyLong_FromSize_t(ctx, chunk_size),
                    HPyBytes_FromStringAndSize(ctx, (const char *)prefix, sizeof prefix)};
    if (!HPy_IsNull(items[0]) && !HPy_IsNull(items[1]))
        result = HPyTuple_FromArray(ctx, items, 2);
    for (int i = 0; i < 2; i++) {
        if (!HPy_IsNull(items[i]))
            HPy_Close(ctx, items[i]);
    }
done:
    return cb3_call_end(ctx, &call, result);
}

static HPyDef *Chunked_defines[] = {
    &Chunked_new, &Chunked_destroy, &Chunked_seal_into, &Chunked_open_into, CB3_TYPE_FIXES_DEFS NULL,
};

HPyType_Spec cb3_Chunked_spec = {
    .name = "cb3._cb3.Chunked",
    .doc = "Chunked(key, header, associated_data, max_threads)\n\n"
           "The chunks of one cb3 encrypted stream (docs/stream-format.md). Internal: use\n"
           "cb3.EncryptingWriter, cb3.DecryptingReader, cb3.encrypt_file, cb3.decrypt_file.",
    .basicsize = sizeof(ChunkedObject),
    .builtin_shape = SHAPE(ChunkedObject),
    .defines = Chunked_defines,
};
