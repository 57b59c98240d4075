/* cb3.Stream: counter nonces over one key, a thin shell over cb3_stream_* (rustlib/src/stream.rs).
 * Its messages are the AEAD's: the same frame sizes them by the same rules
 * (CB3_SIZE_SEALED, CB3_SIZE_OPENED) as ChaCha20Blake3's encrypt and decrypt. */
#include "call.h"
#include "module.h"
#include "types.h"

typedef struct {
    cb3_stream *stream; /* owned; locks internally, so shared freely between threads */
} StreamObject;

HPyType_HELPERS(StreamObject)
CB3_OWNER(Stream, StreamObject, cb3_stream, stream, cb3_stream_free)

#define INDEX_RANGE "in range(0, 2**64 - 1)" /* Rust refuses UINT64_MAX, C what is not a uint64_t */

static int Stream_prepare(HPyContext *ctx, cb3_call *call)
{
    static const cb3_int_param index_param = {"message_index", 0, INDEX_RANGE};
    call->value[2] = 0;
    return HPy_IsNull(call->arg[2]) ? 0 : cb3_arg_int(ctx, call->arg[2], &index_param, &call->value[2]);
}

static cb3_result Stream_make(cb3_call *call)
{
    const cb3_buffer *key = call->in[CB3_ARG_KEY], *nonce = call->in[CB3_ARG_NONCE];
    return cb3_stream_new(key->ptr, key->len, nonce->ptr, nonce->len, call->value[2], (cb3_stream **)&call->made);
}

static const cb3_error_context new_given = {.invalid = "message_index must be " INDEX_RANGE};

static const cb3_method Stream_new_method = {
    .spec = {"Stream", {"key", "nonce", "message_index", NULL}, 2, 2},
    .role = {CB3_ARG_KEY, CB3_ARG_NONCE, CB3_ARG_OBJECT},
    .given = &new_given,
    .prepare = Stream_prepare,
    .run = Stream_make,
    .returns = CB3_RETURN_ADOPT,
    .kind = CB3_OBJECT_KIND_STREAM,
    .free = Stream_free,
};
CB3_CONSTRUCTOR(Stream_new, Stream_new_method)

/* Decrypting into the new bytes object: an output no one else sees yet
 * (CB3_OUTPUT_MODE_PRIVATE). */
static cb3_result encrypt(cb3_call *call)
{
    const cb3_buffer *data = call->in[CB3_ARG_DATA], *aad = call->in[CB3_ARG_AAD];
    return cb3_stream_encrypt(call->inner, data->ptr, data->len, aad->ptr, aad->len, call->out[0].ptr,
                              call->out[0].len, NULL);
}

static cb3_result decrypt(cb3_call *call)
{
    const cb3_buffer *data = call->in[CB3_ARG_DATA], *aad = call->in[CB3_ARG_AAD];
    return cb3_stream_decrypt(call->inner, data->ptr, data->len, aad->ptr, aad->len, CB3_OUTPUT_MODE_PRIVATE,
                              call->out[0].ptr, call->out[0].len, NULL);
}

static const cb3_error_context given = {.object = "cb3.Stream"};

static const cb3_method methods[] = {
    {.spec = {"encrypt", {"data", "associated_data", NULL}, 1, 0}, .role = {CB3_ARG_DATA, CB3_ARG_AAD},
     .inner = 1, .size = {CB3_SIZE_SEALED}, .given = &given, .run = encrypt},
    {.spec = {"decrypt", {"data", "associated_data", NULL}, 1, 0}, .role = {CB3_ARG_DATA, CB3_ARG_AAD},
     .inner = 1, .size = {CB3_SIZE_OPENED}, .given = &given, .run = decrypt},
};

CB3_METHOD(Stream_encrypt, "encrypt", methods[0],
           "encrypt($self, data, associated_data=None)\n--\n\n"
           "Encrypt the next message (ciphertext || tag) under this message's nonce, then advance.\n"
           "Raises OverflowError, forever, once 2**64 - 1 messages have been sent.")

CB3_METHOD(Stream_decrypt, "decrypt", methods[1],
           "decrypt($self, data, associated_data=None)\n--\n\n"
           "Verify and decrypt the next message. The index advances only if the tag verifies;\n"
           "after cb3.DecryptionError the right message can still be decrypted.")

HPyDef_GET(Stream_message_index, "message_index",
           .doc = "The index of the next message: messages encrypted, or successfully decrypted, so far.")
static HPy Stream_message_index_get(HPyContext *ctx, HPy self, void *closure)
{
    (void)closure;
    const cb3_stream *stream = cb3_inner(ctx, self);
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
