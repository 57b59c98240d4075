/* cb3.Stream: counter nonces over one key, a thin shell over cb3_stream_* (rustlib/src/ffi/stream.rs). */
#include "cb3ext.h"

typedef struct {
    cb3_stream *stream; /* owned; locks internally, so shared freely between threads */
} StreamObject;

HPyType_HELPERS(StreamObject)
CB3_OWNER(Stream, StreamObject, cb3_stream, CB3_OBJECT_KIND_STREAM, stream, cb3_stream_free)

HPyDef_SLOT(Stream_new, HPy_tp_new)
static HPy Stream_new_impl(HPyContext *ctx, HPy type, const HPy *args, HPy_ssize_t nargs, HPy kw)
{
    static const cb3_argspec spec = {"Stream", {"key", "nonce", "message_index", NULL}, 2, 2};
    cb3_call call;
    cb3_call_start(&call);
    HPy result = HPy_NULL;
    const cb3_buffer *key, *nonce;
    if (cb3_call_parse_key_and_nonce(ctx, &call, &spec, args, nargs, kw, &key, &nonce) < 0)
        goto done;
#define INDEX_RANGE "in range(0, 2**64 - 1)" /* Rust refuses UINT64_MAX, C what is not a uint64_t */
    static const cb3_int_param index_param = {"message_index", 0, INDEX_RANGE};
    uint64_t index = 0;
    if (!HPy_IsNull(call.arg[2]) && cb3_arg_int(ctx, call.arg[2], &index_param, &index) < 0)
        goto done;
    cb3_stream *stream = NULL;
    cb3_result r = cb3_stream_new(key->ptr, key->len, nonce->ptr, nonce->len, index, &stream);
    const cb3_error_context given = {.key = key->len, .nonce = nonce->len, .invalid = "message_index must be " INDEX_RANGE};
    if (cb3_raise(ctx, r, &given) < 0)
        goto done;
    result = Stream_adopt(ctx, type, stream);
done:
    return cb3_call_end(ctx, &call, result);
}

/* cb3_stream_encrypt, or cb3_stream_decrypt into the new bytes object (an
   output no one else sees yet: CB3_OUTPUT_MODE_PRIVATE). */
static cb3_result stream_call(const cb3_stream *stream, int decrypt, const cb3_buffer *data, const cb3_buffer *aad,
                              const cb3_output *out)
{
    if (decrypt)
        return cb3_stream_decrypt(stream, data->ptr, data->len, aad->ptr, aad->len, CB3_OUTPUT_MODE_PRIVATE, out->ptr,
                                  out->len, NULL);
    return cb3_stream_encrypt(stream, data->ptr, data->len, aad->ptr, aad->len, out->ptr, out->len, NULL);
}

static HPy run(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames, const cb3_argspec *spec,
               int decrypt)
{
    cb3_call call;
    cb3_call_start(&call);
    HPy result = HPy_NULL;
    cb3_output *out = &call.out[0];
    if (cb3_call_parse(ctx, &call, spec, args, nargs, kwnames) < 0)
        return HPy_NULL;
    const cb3_buffer *data = cb3_call_borrow(ctx, &call, 0, "data", CB3_READ);
    const cb3_buffer *aad = data ? cb3_call_borrow(ctx, &call, 1, "associated_data", CB3_READ | CB3_OPTIONAL) : NULL;
    if (aad == NULL)
        goto done;
    /* Shorter than the tag: an empty output, and Rust refuses the message. */
    size_t out_len = !decrypt ? data->len + CB3_TAG_SIZE : data->len >= CB3_TAG_SIZE ? data->len - CB3_TAG_SIZE : 0;
    if (cb3_output_new(ctx, out_len, out) < 0)
        goto done;
    const cb3_stream *stream = CB3_INNER(ctx, self, StreamObject, stream);
    if (stream == NULL)
        goto done;
    CB3_CALL_RUN(ctx, &call, data->len + aad->len, &(const cb3_error_context){.object = "cb3.Stream"},
                 stream_call(stream, decrypt, data, aad, out));
    if (call.status < 0)
        goto done;
    result = cb3_output_finish(ctx, out);
done:
    return cb3_call_end(ctx, &call, result);
}

HPyDef_METH(Stream_encrypt, "encrypt", HPyFunc_KEYWORDS,
            .doc = "encrypt($self, data, associated_data=None)\n--\n\n"
                   "Encrypt the next message (ciphertext || tag) under this message's nonce, then advance.\n"
                   "Raises OverflowError, forever, once 2**64 - 1 messages have been sent.")
static HPy Stream_encrypt_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)
{
    static const cb3_argspec spec = {"encrypt", {"data", "associated_data", NULL}, 1, 0};
    return run(ctx, self, args, nargs, kwnames, &spec, 0);
}

HPyDef_METH(Stream_decrypt, "decrypt", HPyFunc_KEYWORDS,
            .doc = "decrypt($self, data, associated_data=None)\n--\n\n"
                   "Verify and decrypt the next message. The index advances only if the tag verifies;\n"
                   "after cb3.DecryptionError the right message can still be decrypted.")
static HPy Stream_decrypt_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)
{
    static const cb3_argspec spec = {"decrypt", {"data", "associated_data", NULL}, 1, 0};
    return run(ctx, self, args, nargs, kwnames, &spec, 1);
}

HPyDef_GET(Stream_message_index, "message_index",
           .doc = "The index of the next message: messages encrypted, or successfully decrypted, so far.")
static HPy Stream_message_index_get(HPyContext *ctx, HPy self, void *closure)
{
    (void)closure;
    const cb3_stream *stream = CB3_INNER(ctx, self, StreamObject, stream);
    if (stream == NULL)
        return HPy_NULL;
    return HPyLong_FromUInt64_t(ctx, cb3_stream_message_index(stream));
}

static HPyDef *Stream_defines[] = {
    &Stream_new, &Stream_destroy, &Stream_encrypt, &Stream_decrypt, &Stream_message_index,
    CB3_TYPE_FIXES_DEFS NULL,
};

HPyType_Spec cb3_Stream_spec = {
    .name = "cb3.Stream",
    .doc = "Stream(key, nonce, *, message_index=0)\n--\n\n"
           "A sequence of ChaCha20-BLAKE3 messages under one key: message i uses the nonce\n"
           "nonce[:16] + (int.from_bytes(nonce[16:], 'little') + i mod 2**64).to_bytes(8, 'little'),\n"
           "the schedule of the Ruby gem chacha20blake3. Each call holds a lock. Truncation (dropped\n"
           "trailing messages) is not detected.",
    .basicsize = sizeof(StreamObject),
    .builtin_shape = SHAPE(StreamObject),
    .defines = Stream_defines,
};
