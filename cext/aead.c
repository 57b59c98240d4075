/* cb3.ChaCha20Blake3: the AEAD class, a thin shell over cb3_aead_* (rustlib/src/ffi/aead.rs). */

#include "cb3ext.h"

typedef struct {
    cb3_aead *aead; /* owned; immutable, so shared freely between threads */
} CipherObject;

HPyType_HELPERS(CipherObject)
CB3_OWNER(Cipher, CipherObject, cb3_aead, CB3_OBJECT_KIND_AEAD, aead, cb3_aead_free)

/* ---- construction ---- */

HPyDef_SLOT(Cipher_new, HPy_tp_new)
static HPy Cipher_new_impl(HPyContext *ctx, HPy type, const HPy *args, HPy_ssize_t nargs, HPy kw)
{
    static const cb3_argspec spec = {"ChaCha20Blake3", {"key", "max_threads", NULL}, 1, 1};
    cb3_call call;
    cb3_call_start(&call);
    HPy result = HPy_NULL;
    size_t max_threads;
    static const cb3_int_param threads = {"max_threads", 0, "a positive int or cb3.AUTO (-1)"};
    if (cb3_call_parse_new(ctx, &call, &spec, args, nargs, kw) < 0 ||
        cb3_arg_threads(ctx, call.arg[1], &threads, &max_threads) < 0)
        goto done;
    const cb3_buffer *key = cb3_call_borrow(ctx, &call, 0, "key", CB3_READ);
    if (key == NULL)
        goto done;
    cb3_aead *aead = NULL;
    cb3_result r = cb3_aead_new_with_threads(key->ptr, key->len, max_threads, &aead);
    if (cb3_raise(ctx, r, &(const cb3_error_context){.key = key->len}) < 0)
        goto done;
    result = Cipher_adopt(ctx, type, aead);
done:
    return cb3_call_end(ctx, &call, result);
}

/* ---- the eight methods: one shape ----
 *
 * Each method borrows its arguments in the order of its names (nonce first;
 * "associated_data" may be None, "buf" must be writable), sizes its outputs,
 * makes one cb3_aead_* call and returns bytes, a (ciphertext, tag) tuple, the
 * number of bytes written into buf, or None. */

typedef enum {
    ENCRYPT,
    DECRYPT,
    ENCRYPT_DETACHED,
    DECRYPT_DETACHED,
    ENCRYPT_INTO,
    DECRYPT_INTO,
    ENCRYPT_IN_PLACE,
    DECRYPT_IN_PLACE,
} method;

/* The arguments of one call, by name (NULL where the method has none). */
typedef struct {
    const cb3_buffer *nonce, *data, *tag, *aad, *buf;
} call_args;

static int check_out_size(HPyContext *ctx, const cb3_buffer *buf, size_t expected, const char *rule)
{
    if (buf->len != expected)
        return cb3_raisef(ctx, ctx->h_ValueError, "buf must be exactly %zu bytes (%s), got %zu", expected, rule,
                          buf->len);
    return 0;
}

static cb3_result call(const cb3_aead *aead, method m, const call_args *a, cb3_output *out, cb3_output *tag,
                       size_t *written)
{
    const uint8_t *n = a->nonce->ptr, *ad = a->aad->ptr;
    size_t nn = a->nonce->len, nad = a->aad->len;
    uint8_t *buf = a->buf ? (uint8_t *)a->buf->ptr : NULL;
    switch (m) {
    case ENCRYPT:
        return cb3_aead_encrypt(aead, n, nn, a->data->ptr, a->data->len, ad, nad, out->ptr, out->len, NULL);
    case DECRYPT:
        return cb3_aead_decrypt(aead, n, nn, a->data->ptr, a->data->len, ad, nad, CB3_OUTPUT_MODE_PRIVATE, out->ptr, out->len, NULL);
    case ENCRYPT_DETACHED:
        return cb3_aead_encrypt_detached(aead, n, nn, a->data->ptr, a->data->len, ad, nad, out->ptr, out->len,
                                         tag->ptr, tag->len);
    case DECRYPT_DETACHED:
        return cb3_aead_decrypt_detached(aead, n, nn, a->data->ptr, a->data->len, a->tag->ptr, a->tag->len,
                                                 ad, nad, CB3_OUTPUT_MODE_PRIVATE, out->ptr, out->len);
    case ENCRYPT_INTO:
        return cb3_aead_encrypt(aead, n, nn, a->data->ptr, a->data->len, ad, nad, buf, a->buf->len, written);
    case DECRYPT_INTO:
        return cb3_aead_decrypt(aead, n, nn, a->data->ptr, a->data->len, ad, nad, CB3_OUTPUT_MODE_SHARED, buf, a->buf->len, written);
    case ENCRYPT_IN_PLACE:
        return cb3_aead_encrypt_in_place(aead, n, nn, buf, a->buf->len, ad, nad, tag->ptr, tag->len);
    case DECRYPT_IN_PLACE:
        return cb3_aead_decrypt_in_place(aead, n, nn, buf, a->buf->len, a->tag->ptr, a->tag->len, ad, nad);
    }
    return CB3_RESULT_PANIC;
}

static HPy run(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames, const cb3_argspec *spec,
               method m)
{
    cb3_call frame;
    cb3_call_start(&frame);
    HPy result = HPy_NULL;
    cb3_output *out = &frame.out[0], *tag = &frame.out[1];
    call_args a = {.nonce = NULL};
    if (cb3_call_parse(ctx, &frame, spec, args, nargs, kwnames) < 0)
        return HPy_NULL;
    for (int i = 0; spec->names[i] != NULL; i++) {
        const char *name = spec->names[i];
        /* The names' first letters differ (nonce, data, tag, buf,
         * associated_data): one compare each, not a strcmp chain per call. */
        const cb3_buffer **slot = name[0] == 'n'   ? &a.nonce
                                  : name[0] == 'd' ? &a.data
                                  : name[0] == 't' ? &a.tag
                                  : name[0] == 'b' ? &a.buf
                                                   : &a.aad;
        int flags = slot == &a.buf ? CB3_WRITE : slot == &a.aad ? CB3_READ | CB3_OPTIONAL : CB3_READ;
        if ((*slot = cb3_call_borrow(ctx, &frame, i, name, flags)) == NULL)
            goto done;
    }
    const cb3_buffer *input = a.data ? a.data : a.buf;
    size_t n = input->len;
    int failed = 0;
    switch (m) {
    case ENCRYPT:
        failed = cb3_output_new(ctx, n + CB3_TAG_SIZE, out);
        break;
    case DECRYPT: /* shorter than the tag: an empty output, and Rust orders the checks */
        failed = cb3_output_new(ctx, n >= CB3_TAG_SIZE ? n - CB3_TAG_SIZE : 0, out);
        break;
    case ENCRYPT_DETACHED:
        failed = cb3_output_new(ctx, n, out) < 0 || cb3_output_new(ctx, CB3_TAG_SIZE, tag) < 0;
        break;
    case DECRYPT_DETACHED:
        failed = cb3_output_new(ctx, n, out);
        break;
    case ENCRYPT_INTO:
        failed = check_out_size(ctx, a.buf, n + CB3_TAG_SIZE, "len(data) + 32");
        break;
    case DECRYPT_INTO: /* shorter than the tag: no size to check here; Rust orders the checks */
        failed = n >= CB3_TAG_SIZE && check_out_size(ctx, a.buf, n - CB3_TAG_SIZE, "len(data) - 32") < 0;
        break;
    case ENCRYPT_IN_PLACE:
        failed = cb3_output_new(ctx, CB3_TAG_SIZE, tag);
        break;
    case DECRYPT_IN_PLACE:
        break;
    }
    if (failed)
        goto done;
    const cb3_aead *aead = CB3_INNER(ctx, self, CipherObject, aead);
    if (aead == NULL)
        goto done;
    size_t written = 0;
    CB3_CALL_RUN(ctx, &frame, n + a.aad->len, (&(const cb3_error_context){.nonce = a.nonce->len, .tag = a.tag ? a.tag->len : 0}),
                 call(aead, m, &a, out, tag, &written));
    if (frame.status < 0)
        goto done;
    switch (m) {
    case ENCRYPT_DETACHED: {
        HPy items[2] = {cb3_output_finish(ctx, out), cb3_output_finish(ctx, tag)};
        if (!HPy_IsNull(items[0]) && !HPy_IsNull(items[1]))
            result = HPyTuple_FromArray(ctx, items, 2);
        for (int i = 0; i < 2; i++) {
            if (!HPy_IsNull(items[i]))
                HPy_Close(ctx, items[i]);
        }
        break;
    }
    case ENCRYPT_INTO:
    case DECRYPT_INTO:
        result = cb3_count_new(ctx, written);
        break;
    case ENCRYPT_IN_PLACE:
        result = cb3_output_finish(ctx, tag);
        break;
    case DECRYPT_IN_PLACE:
        result = HPy_Dup(ctx, ctx->h_None);
        break;
    default:
        result = cb3_output_finish(ctx, out);
    }
done:
    return cb3_call_end(ctx, &frame, result);
}

/* One method: its argument spec and docstring; the body is run(). */
#define CB3_AEAD_METHOD(c_name, m, doc_text, ...)                                                               \
    HPyDef_METH(Cipher_##c_name, #c_name, HPyFunc_KEYWORDS, .doc = doc_text)                                    \
    static HPy Cipher_##c_name##_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)   \
    {                                                                                                           \
        static const cb3_argspec spec = {#c_name, __VA_ARGS__};                                                         \
        return run(ctx, self, args, nargs, kwnames, &spec, m);                                                  \
    }

CB3_AEAD_METHOD(encrypt, ENCRYPT,
                "encrypt($self, nonce, data, associated_data=None)\n--\n\n"
                "Encrypt and authenticate data; returns ciphertext || 32-byte tag.\n"
                "nonce must be 24 bytes and never reused with this key (cb3.generate_nonce() is safe).",
                {"nonce", "data", "associated_data", NULL}, 2, 0)

CB3_AEAD_METHOD(decrypt, DECRYPT,
                "decrypt($self, nonce, data, associated_data=None)\n--\n\n"
                "Verify and decrypt ciphertext || tag. Raises cb3.DecryptionError if the tag does not\n"
                "match (or data is shorter than the 32-byte tag); no plaintext is released then.",
                {"nonce", "data", "associated_data", NULL}, 2, 0)

CB3_AEAD_METHOD(encrypt_detached, ENCRYPT_DETACHED,
                "encrypt_detached($self, nonce, data, associated_data=None)\n--\n\n"
                "Like encrypt() but returns (ciphertext, tag) separately.",
                {"nonce", "data", "associated_data", NULL}, 2, 0)

CB3_AEAD_METHOD(decrypt_detached, DECRYPT_DETACHED,
                "decrypt_detached($self, nonce, data, tag, associated_data=None)\n--\n\n"
                "Verify the 32-byte tag over the ciphertext, then decrypt it.\n"
                "Raises cb3.DecryptionError on a mismatch.",
                {"nonce", "data", "tag", "associated_data", NULL}, 3, 0)

CB3_AEAD_METHOD(encrypt_into, ENCRYPT_INTO,
                "encrypt_into($self, nonce, data, associated_data, buf)\n--\n\n"
                "Write ciphertext || tag into buf, a writable buffer of exactly len(data) + 32 bytes;\n"
                "returns the number of bytes written. data may be the start of buf (in place).",
                {"nonce", "data", "associated_data", "buf", NULL}, 4, 0)

CB3_AEAD_METHOD(decrypt_into, DECRYPT_INTO,
                "decrypt_into($self, nonce, data, associated_data, buf)\n--\n\n"
                "Verify ciphertext || tag and write the plaintext into buf, a writable buffer of exactly\n"
                "len(data) - 32 bytes; returns the number of bytes written. On any failure buf is left\n"
                "exactly as it was (the tag is checked before a byte is written).",
                {"nonce", "data", "associated_data", "buf", NULL}, 4, 0)

CB3_AEAD_METHOD(encrypt_in_place, ENCRYPT_IN_PLACE,
                "encrypt_in_place($self, nonce, buf, associated_data=None)\n--\n\n"
                "Encrypt the writable buffer buf in place; returns the 32-byte tag.",
                {"nonce", "buf", "associated_data", NULL}, 2, 0)

CB3_AEAD_METHOD(decrypt_in_place, DECRYPT_IN_PLACE,
                "decrypt_in_place($self, nonce, buf, tag, associated_data=None)\n--\n\n"
                "Verify tag over the writable buffer buf, then decrypt it in place. On a mismatch\n"
                "raises cb3.DecryptionError and leaves buf unchanged.",
                {"nonce", "buf", "tag", "associated_data", NULL}, 3, 0)

static HPyDef *Cipher_defines[] = {
    &Cipher_new,
    &Cipher_destroy,
    &Cipher_encrypt,
    &Cipher_decrypt,
    &Cipher_encrypt_detached,
    &Cipher_decrypt_detached,
    &Cipher_encrypt_into,
    &Cipher_decrypt_into,
    &Cipher_encrypt_in_place,
    &Cipher_decrypt_in_place,
    CB3_TYPE_FIXES_DEFS NULL,
};

HPyType_Spec cb3_ChaCha20Blake3_spec = {
    .name = "cb3.ChaCha20Blake3",
    .doc = "ChaCha20Blake3(key, *, max_threads=1)\n--\n\n"
           "ChaCha20-BLAKE3, a committing AEAD: 32-byte key, 24-byte nonce (random nonces are safe),\n"
           "32-byte tag. Immutable and safe to share between threads. Bit-for-bit compatible with\n"
           "the Rust crate chacha20-blake3 and the Ruby gem chacha20blake3.\n\n"
           "max_threads > 1 (or cb3.AUTO) splits each message of 1 MiB or more across that many\n"
           "threads; the output is byte-for-byte the same.",
    .basicsize = sizeof(CipherObject),
    .builtin_shape = SHAPE(CipherObject),
    .defines = Cipher_defines,
};
