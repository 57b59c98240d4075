/* cb3.ChaCha20Blake3: the AEAD class, a thin shell over cb3_aead_* (rustlib/src/aead.rs). */
#include "cb3ext.h"

typedef struct {
    cb3_aead *aead; /* owned; immutable, so shared freely between threads */
} CipherObject;

HPyType_HELPERS(CipherObject)

static cb3_given_lengths lengths(const cb3_buffer *nonce, const cb3_buffer *tag)
{
    cb3_given_lengths given = {0, nonce ? nonce->len : 0, tag ? tag->len : 0};
    return given;
}

/* ---- construction ---- */

/* max_threads as Python spells it (blake3-py's convention: a positive count
 * or AUTO = -1) -> rustlib's (0 = every core). Returns -1 on error. */
static int parse_max_threads(HPyContext *ctx, HPy value, size_t *out)
{
    *out = 1;
    if (HPy_IsNull(value))
        return 0;
    if (!HPy_TypeCheck(ctx, value, ctx->h_LongType) || HPy_TypeCheck(ctx, value, ctx->h_BoolType))
        return cb3_raisef(ctx, ctx->h_TypeError, "max_threads must be an int");
    HPy_ssize_t n = HPyLong_AsSsize_t(ctx, value);
    if (n == -1 && HPyErr_Occurred(ctx)) {
        HPyErr_Clear(ctx);
        n = 0;
    }
    if (n == CB3_AUTO)
        *out = 0;
    else if (n >= 1)
        *out = (size_t)n;
    else
        return cb3_raisef(ctx, ctx->h_ValueError, "max_threads must be a positive int or cb3.AUTO (-1)");
    return 0;
}

HPyDef_SLOT(Cipher_new, HPy_tp_new)
static HPy Cipher_new_impl(HPyContext *ctx, HPy type, const HPy *args, HPy_ssize_t nargs, HPy kw)
{
    static const cb3_argspec spec = {"ChaCha20Blake3", {"key", "max_threads", NULL}, 1, 1};
    HPy arg[2], owned[CB3_MAX_ARGS];
    HPy result = HPy_NULL;
    cb3_borrowed set = {.count = 0};
    size_t max_threads;
    if (cb3_parse_new_args(ctx, &spec, args, nargs, kw, arg, owned) < 0 ||
        parse_max_threads(ctx, arg[1], &max_threads) < 0)
        goto done;
    const cb3_buffer *key = cb3_borrow(ctx, &set, arg[0], "key", CB3_READ);
    if (key == NULL)
        goto done;
    cb3_aead *aead = NULL;
    cb3_result r = cb3_aead_new_with_threads(key->ptr, key->len, max_threads, &aead);
    if (r != CB3_RESULT_OK) {
        cb3_given_lengths given = {key->len, 0, 0};
        cb3_raise(ctx, r, &given);
        goto done;
    }
    CipherObject *self;
    result = HPy_New(ctx, type, &self);
    if (HPy_IsNull(result)) {
        cb3_aead_free(aead);
        goto done;
    }
    self->aead = aead;
done:
    cb3_release_all(ctx, &set);
    cb3_close_all(ctx, owned, CB3_MAX_ARGS);
    return result;
}

HPyDef_SLOT(Cipher_destroy, HPy_tp_destroy)
static void Cipher_destroy_impl(void *obj)
{
    CipherObject *self = (CipherObject *)obj;
    cb3_aead_free(self->aead); /* wipes the key */
    self->aead = NULL;
}

/* ---- combined ciphertext || tag ---- */

HPyDef_METH(Cipher_encrypt, "encrypt", HPyFunc_KEYWORDS,
            .doc = "encrypt($self, nonce, data, associated_data=None)\n--\n\n"
                   "Encrypt and authenticate data; returns ciphertext || 32-byte tag.\n"
                   "nonce must be 24 bytes and never reused with this key (cb3.generate_nonce() is safe).")
static HPy Cipher_encrypt_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)
{
    static const cb3_argspec spec = {"encrypt", {"nonce", "data", "associated_data", NULL}, 2, 0};
    HPy arg[3];
    HPy result = HPy_NULL;
    cb3_borrowed set = {.count = 0};
    cb3_output out = CB3_OUTPUT_INIT;
    if (cb3_parse_args(ctx, &spec, args, nargs, kwnames, arg) < 0)
        return HPy_NULL;
    const cb3_buffer *nonce = cb3_borrow(ctx, &set, arg[0], "nonce", CB3_READ);
    const cb3_buffer *data = nonce ? cb3_borrow(ctx, &set, arg[1], "data", CB3_READ) : NULL;
    const cb3_buffer *aad = data ? cb3_borrow(ctx, &set, arg[2], "associated_data", CB3_READ | CB3_OPTIONAL) : NULL;
    if (aad == NULL || cb3_output_new(ctx, data->len + CB3_TAG_SIZE, &out) < 0)
        goto done;
    const cb3_aead *aead = CB3_INNER(ctx, self, CipherObject, aead);
    if (aead == NULL)
        goto done;
    cb3_result r;
    CB3_RUN(ctx, &set, data->len + aad->len, r,
            cb3_aead_encrypt(aead, nonce->ptr, nonce->len, data->ptr, data->len, aad->ptr, aad->len, out.ptr,
                             out.len, NULL));
    if (r != CB3_RESULT_OK) {
        cb3_given_lengths given = lengths(nonce, NULL);
        cb3_raise(ctx, r, &given);
        goto done;
    }
    result = cb3_output_finish(ctx, &out);
done:
    cb3_output_discard(&out);
    cb3_release_all(ctx, &set);
    return result;
}

HPyDef_METH(Cipher_decrypt, "decrypt", HPyFunc_KEYWORDS,
            .doc = "decrypt($self, nonce, data, associated_data=None)\n--\n\n"
                   "Verify and decrypt ciphertext || tag. Raises cb3.DecryptionError if the tag does not\n"
                   "match (or data is shorter than the 32-byte tag); no plaintext is released then.")
static HPy Cipher_decrypt_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)
{
    static const cb3_argspec spec = {"decrypt", {"nonce", "data", "associated_data", NULL}, 2, 0};
    HPy arg[3];
    HPy result = HPy_NULL;
    cb3_borrowed set = {.count = 0};
    cb3_output out = CB3_OUTPUT_INIT;
    if (cb3_parse_args(ctx, &spec, args, nargs, kwnames, arg) < 0)
        return HPy_NULL;
    const cb3_buffer *nonce = cb3_borrow(ctx, &set, arg[0], "nonce", CB3_READ);
    const cb3_buffer *data = nonce ? cb3_borrow(ctx, &set, arg[1], "data", CB3_READ) : NULL;
    const cb3_buffer *aad = data ? cb3_borrow(ctx, &set, arg[2], "associated_data", CB3_READ | CB3_OPTIONAL) : NULL;
    /* An input shorter than the tag gets an empty output; Rust then orders
     * the checks (a wrong nonce length first, then DecryptionError). */
    if (aad == NULL || cb3_output_new(ctx, data->len >= CB3_TAG_SIZE ? data->len - CB3_TAG_SIZE : 0, &out) < 0)
        goto done;
    const cb3_aead *aead = CB3_INNER(ctx, self, CipherObject, aead);
    if (aead == NULL)
        goto done;
    cb3_result r;
    CB3_RUN(ctx, &set, data->len + aad->len, r,
            cb3_aead_decrypt_private(aead, nonce->ptr, nonce->len, data->ptr, data->len, aad->ptr, aad->len,
                                     out.ptr, out.len, NULL));
    if (r != CB3_RESULT_OK) {
        cb3_given_lengths given = lengths(nonce, NULL);
        cb3_raise(ctx, r, &given);
        goto done;
    }
    result = cb3_output_finish(ctx, &out);
done:
    cb3_output_discard(&out);
    cb3_release_all(ctx, &set);
    return result;
}

/* ---- detached tag ---- */

HPyDef_METH(Cipher_encrypt_detached, "encrypt_detached", HPyFunc_KEYWORDS,
            .doc = "encrypt_detached($self, nonce, data, associated_data=None)\n--\n\n"
                   "Like encrypt() but returns (ciphertext, tag) separately.")
static HPy Cipher_encrypt_detached_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)
{
    static const cb3_argspec spec = {"encrypt_detached", {"nonce", "data", "associated_data", NULL}, 2, 0};
    HPy arg[3];
    HPy result = HPy_NULL;
    cb3_borrowed set = {.count = 0};
    cb3_output ct = CB3_OUTPUT_INIT, tag = CB3_OUTPUT_INIT;
    if (cb3_parse_args(ctx, &spec, args, nargs, kwnames, arg) < 0)
        return HPy_NULL;
    const cb3_buffer *nonce = cb3_borrow(ctx, &set, arg[0], "nonce", CB3_READ);
    const cb3_buffer *data = nonce ? cb3_borrow(ctx, &set, arg[1], "data", CB3_READ) : NULL;
    const cb3_buffer *aad = data ? cb3_borrow(ctx, &set, arg[2], "associated_data", CB3_READ | CB3_OPTIONAL) : NULL;
    if (aad == NULL || cb3_output_new(ctx, data->len, &ct) < 0 || cb3_output_new(ctx, CB3_TAG_SIZE, &tag) < 0)
        goto done;
    const cb3_aead *aead = CB3_INNER(ctx, self, CipherObject, aead);
    if (aead == NULL)
        goto done;
    cb3_result r;
    CB3_RUN(ctx, &set, data->len + aad->len, r,
            cb3_aead_encrypt_detached(aead, nonce->ptr, nonce->len, data->ptr, data->len, aad->ptr, aad->len,
                                      ct.ptr, ct.len, tag.ptr, tag.len));
    if (r != CB3_RESULT_OK) {
        cb3_given_lengths given = lengths(nonce, NULL);
        cb3_raise(ctx, r, &given);
        goto done;
    }
    HPy items[2];
    items[0] = cb3_output_finish(ctx, &ct);
    items[1] = cb3_output_finish(ctx, &tag);
    if (!HPy_IsNull(items[0]) && !HPy_IsNull(items[1]))
        result = HPyTuple_FromArray(ctx, items, 2);
    for (int i = 0; i < 2; i++) {
        if (!HPy_IsNull(items[i]))
            HPy_Close(ctx, items[i]);
    }
done:
    cb3_output_discard(&ct);
    cb3_output_discard(&tag);
    cb3_release_all(ctx, &set);
    return result;
}

HPyDef_METH(Cipher_decrypt_detached, "decrypt_detached", HPyFunc_KEYWORDS,
            .doc = "decrypt_detached($self, nonce, data, tag, associated_data=None)\n--\n\n"
                   "Verify the 32-byte tag over the ciphertext, then decrypt it.\n"
                   "Raises cb3.DecryptionError on a mismatch.")
static HPy Cipher_decrypt_detached_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)
{
    static const cb3_argspec spec = {"decrypt_detached", {"nonce", "data", "tag", "associated_data", NULL}, 3, 0};
    HPy arg[4];
    HPy result = HPy_NULL;
    cb3_borrowed set = {.count = 0};
    cb3_output out = CB3_OUTPUT_INIT;
    if (cb3_parse_args(ctx, &spec, args, nargs, kwnames, arg) < 0)
        return HPy_NULL;
    const cb3_buffer *nonce = cb3_borrow(ctx, &set, arg[0], "nonce", CB3_READ);
    const cb3_buffer *data = nonce ? cb3_borrow(ctx, &set, arg[1], "data", CB3_READ) : NULL;
    const cb3_buffer *tag = data ? cb3_borrow(ctx, &set, arg[2], "tag", CB3_READ) : NULL;
    const cb3_buffer *aad = tag ? cb3_borrow(ctx, &set, arg[3], "associated_data", CB3_READ | CB3_OPTIONAL) : NULL;
    if (aad == NULL || cb3_output_new(ctx, data->len, &out) < 0)
        goto done;
    const cb3_aead *aead = CB3_INNER(ctx, self, CipherObject, aead);
    if (aead == NULL)
        goto done;
    cb3_result r;
    CB3_RUN(ctx, &set, data->len + aad->len, r,
            cb3_aead_decrypt_detached_private(aead, nonce->ptr, nonce->len, data->ptr, data->len, tag->ptr,
                                              tag->len, aad->ptr, aad->len, out.ptr, out.len));
    if (r != CB3_RESULT_OK) {
        cb3_given_lengths given = lengths(nonce, tag);
        cb3_raise(ctx, r, &given);
        goto done;
    }
    result = cb3_output_finish(ctx, &out);
done:
    cb3_output_discard(&out);
    cb3_release_all(ctx, &set);
    return result;
}

/* ---- into a caller's buffer ---- */

static int check_out_size(HPyContext *ctx, const cb3_buffer *buf, size_t expected, const char *rule)
{
    if (buf->len != expected)
        return cb3_raisef(ctx, ctx->h_ValueError, "buf must be exactly %zu bytes (%s), got %zu", expected, rule,
                          buf->len);
    return 0;
}

HPyDef_METH(Cipher_encrypt_into, "encrypt_into", HPyFunc_KEYWORDS,
            .doc = "encrypt_into($self, nonce, data, associated_data, buf)\n--\n\n"
                   "Write ciphertext || tag into buf, a writable buffer of exactly len(data) + 32 bytes;\n"
                   "returns the number of bytes written. data may be the start of buf (in place).")
static HPy Cipher_encrypt_into_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)
{
    static const cb3_argspec spec = {"encrypt_into", {"nonce", "data", "associated_data", "buf", NULL}, 4, 0};
    HPy arg[4];
    HPy result = HPy_NULL;
    cb3_borrowed set = {.count = 0};
    if (cb3_parse_args(ctx, &spec, args, nargs, kwnames, arg) < 0)
        return HPy_NULL;
    const cb3_buffer *nonce = cb3_borrow(ctx, &set, arg[0], "nonce", CB3_READ);
    const cb3_buffer *data = nonce ? cb3_borrow(ctx, &set, arg[1], "data", CB3_READ) : NULL;
    const cb3_buffer *aad = data ? cb3_borrow(ctx, &set, arg[2], "associated_data", CB3_READ | CB3_OPTIONAL) : NULL;
    const cb3_buffer *buf = aad ? cb3_borrow(ctx, &set, arg[3], "buf", CB3_WRITE) : NULL;
    if (buf == NULL || check_out_size(ctx, buf, data->len + CB3_TAG_SIZE, "len(data) + 32") < 0)
        goto done;
    const cb3_aead *aead = CB3_INNER(ctx, self, CipherObject, aead);
    if (aead == NULL)
        goto done;
    size_t written = 0;
    cb3_result r;
    CB3_RUN(ctx, &set, data->len + aad->len, r,
            cb3_aead_encrypt(aead, nonce->ptr, nonce->len, data->ptr, data->len, aad->ptr, aad->len,
                             (uint8_t *)buf->ptr, buf->len, &written));
    if (r != CB3_RESULT_OK) {
        cb3_given_lengths given = lengths(nonce, NULL);
        cb3_raise(ctx, r, &given);
        goto done;
    }
    result = HPyLong_FromSize_t(ctx, written);
done:
    cb3_release_all(ctx, &set);
    return result;
}

HPyDef_METH(Cipher_decrypt_into, "decrypt_into", HPyFunc_KEYWORDS,
            .doc = "decrypt_into($self, nonce, data, associated_data, buf)\n--\n\n"
                   "Verify ciphertext || tag and write the plaintext into buf, a writable buffer of exactly\n"
                   "len(data) - 32 bytes; returns the number of bytes written. On any failure buf is left\n"
                   "exactly as it was (the tag is checked before a byte is written).")
static HPy Cipher_decrypt_into_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)
{
    static const cb3_argspec spec = {"decrypt_into", {"nonce", "data", "associated_data", "buf", NULL}, 4, 0};
    HPy arg[4];
    HPy result = HPy_NULL;
    cb3_borrowed set = {.count = 0};
    if (cb3_parse_args(ctx, &spec, args, nargs, kwnames, arg) < 0)
        return HPy_NULL;
    const cb3_buffer *nonce = cb3_borrow(ctx, &set, arg[0], "nonce", CB3_READ);
    const cb3_buffer *data = nonce ? cb3_borrow(ctx, &set, arg[1], "data", CB3_READ) : NULL;
    const cb3_buffer *aad = data ? cb3_borrow(ctx, &set, arg[2], "associated_data", CB3_READ | CB3_OPTIONAL) : NULL;
    const cb3_buffer *buf = aad ? cb3_borrow(ctx, &set, arg[3], "buf", CB3_WRITE) : NULL;
    if (buf == NULL)
        goto done;
    /* Shorter than the tag: no size to check here; Rust orders the checks. */
    if (data->len >= CB3_TAG_SIZE && check_out_size(ctx, buf, data->len - CB3_TAG_SIZE, "len(data) - 32") < 0)
        goto done;
    const cb3_aead *aead = CB3_INNER(ctx, self, CipherObject, aead);
    if (aead == NULL)
        goto done;
    size_t written = 0;
    cb3_result r;
    CB3_RUN(ctx, &set, data->len + aad->len, r,
            cb3_aead_decrypt(aead, nonce->ptr, nonce->len, data->ptr, data->len, aad->ptr, aad->len,
                             (uint8_t *)buf->ptr, buf->len, &written));
    if (r != CB3_RESULT_OK) {
        cb3_given_lengths given = lengths(nonce, NULL);
        cb3_raise(ctx, r, &given);
        goto done;
    }
    result = HPyLong_FromSize_t(ctx, written);
done:
    cb3_release_all(ctx, &set);
    return result;
}

/* ---- in place ---- */

HPyDef_METH(Cipher_encrypt_in_place, "encrypt_in_place", HPyFunc_KEYWORDS,
            .doc = "encrypt_in_place($self, nonce, buf, associated_data=None)\n--\n\n"
                   "Encrypt the writable buffer buf in place; returns the 32-byte tag.")
static HPy Cipher_encrypt_in_place_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)
{
    static const cb3_argspec spec = {"encrypt_in_place", {"nonce", "buf", "associated_data", NULL}, 2, 0};
    HPy arg[3];
    HPy result = HPy_NULL;
    cb3_borrowed set = {.count = 0};
    cb3_output tag = CB3_OUTPUT_INIT;
    if (cb3_parse_args(ctx, &spec, args, nargs, kwnames, arg) < 0)
        return HPy_NULL;
    const cb3_buffer *nonce = cb3_borrow(ctx, &set, arg[0], "nonce", CB3_READ);
    const cb3_buffer *buf = nonce ? cb3_borrow(ctx, &set, arg[1], "buf", CB3_WRITE) : NULL;
    const cb3_buffer *aad = buf ? cb3_borrow(ctx, &set, arg[2], "associated_data", CB3_READ | CB3_OPTIONAL) : NULL;
    if (aad == NULL || cb3_output_new(ctx, CB3_TAG_SIZE, &tag) < 0)
        goto done;
    const cb3_aead *aead = CB3_INNER(ctx, self, CipherObject, aead);
    if (aead == NULL)
        goto done;
    cb3_result r;
    CB3_RUN(ctx, &set, buf->len + aad->len, r,
            cb3_aead_encrypt_in_place(aead, nonce->ptr, nonce->len, (uint8_t *)buf->ptr, buf->len, aad->ptr,
                                      aad->len, tag.ptr, tag.len));
    if (r != CB3_RESULT_OK) {
        cb3_given_lengths given = lengths(nonce, NULL);
        cb3_raise(ctx, r, &given);
        goto done;
    }
    result = cb3_output_finish(ctx, &tag);
done:
    cb3_output_discard(&tag);
    cb3_release_all(ctx, &set);
    return result;
}

HPyDef_METH(Cipher_decrypt_in_place, "decrypt_in_place", HPyFunc_KEYWORDS,
            .doc = "decrypt_in_place($self, nonce, buf, tag, associated_data=None)\n--\n\n"
                   "Verify tag over the writable buffer buf, then decrypt it in place. On a mismatch\n"
                   "raises cb3.DecryptionError and leaves buf unchanged.")
static HPy Cipher_decrypt_in_place_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)
{
    static const cb3_argspec spec = {"decrypt_in_place", {"nonce", "buf", "tag", "associated_data", NULL}, 3, 0};
    HPy arg[4];
    HPy result = HPy_NULL;
    cb3_borrowed set = {.count = 0};
    if (cb3_parse_args(ctx, &spec, args, nargs, kwnames, arg) < 0)
        return HPy_NULL;
    const cb3_buffer *nonce = cb3_borrow(ctx, &set, arg[0], "nonce", CB3_READ);
    const cb3_buffer *buf = nonce ? cb3_borrow(ctx, &set, arg[1], "buf", CB3_WRITE) : NULL;
    const cb3_buffer *tag = buf ? cb3_borrow(ctx, &set, arg[2], "tag", CB3_READ) : NULL;
    const cb3_buffer *aad = tag ? cb3_borrow(ctx, &set, arg[3], "associated_data", CB3_READ | CB3_OPTIONAL) : NULL;
    if (aad == NULL)
        goto done;
    const cb3_aead *aead = CB3_INNER(ctx, self, CipherObject, aead);
    if (aead == NULL)
        goto done;
    cb3_result r;
    CB3_RUN(ctx, &set, buf->len + aad->len, r,
            cb3_aead_decrypt_in_place(aead, nonce->ptr, nonce->len, (uint8_t *)buf->ptr, buf->len, tag->ptr,
                                      tag->len, aad->ptr, aad->len));
    if (r != CB3_RESULT_OK) {
        cb3_given_lengths given = lengths(nonce, tag);
        cb3_raise(ctx, r, &given);
        goto done;
    }
    result = HPy_Dup(ctx, ctx->h_None);
done:
    cb3_release_all(ctx, &set);
    return result;
}

CB3_TYPE_FIXES(Cipher, "cb3.ChaCha20Blake3", NULL)

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
    CB3_TYPE_FIXES_DEFS(Cipher) NULL,
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
