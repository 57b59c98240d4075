/* cb3.ChaCha20Blake3: the AEAD class, a thin shell over cb3_aead_* (rustlib/src/aead.rs). */

#include "call.h"
#include "module.h"
#include "types.h"

typedef struct {
    cb3_aead *aead; /* owned; immutable, so shared freely between threads */
} CipherObject;

HPyType_HELPERS(CipherObject)
CB3_OWNER(Cipher, CipherObject, cb3_aead, aead, cb3_aead_free)

/* ---- construction ---- */

static int Cipher_convert(HPyContext *ctx, cb3_call *call)
{
    size_t max_threads;
    if (cb3_arg_threads(ctx, call->arg[1], &cb3_max_threads, &max_threads) < 0)
        return -1;
    call->value[1] = max_threads;
    return 0;
}

static cb3_result Cipher_make(cb3_call *call)
{
    const cb3_buffer *key = call->in[CB3_ARG_KEY];
    return cb3_aead_new_with_threads(key->ptr, key->len, (size_t)call->value[1], (cb3_aead **)&call->made);
}

static const cb3_method Cipher_new_method = {
    .spec = {"ChaCha20Blake3", {"key", "max_threads", NULL}, 1, 1},
    .role = {CB3_ARG_KEY, CB3_ARG_OBJECT},
    .convert = Cipher_convert,
    .run = Cipher_make,
    .returns = CB3_RETURN_ADOPT,
    .kind = CB3_OBJECT_KIND_AEAD,
    .free = Cipher_free,
};
CB3_CONSTRUCTOR(Cipher_new, Cipher_new_method)

/* ---- the eight methods ----
 *
 * Each borrows its arguments in the order of its names ("associated_data"
 * may be None, "buf" must be writable), sizes its outputs by the sealed or
 * opened rule (buffers.h, cb3_size_of), makes one cb3_aead_* call and returns
 * bytes, a (ciphertext, tag) pair, the tag, the number of bytes written into
 * buf, or None. */

#define AEAD (const cb3_aead *)call->inner
#define NONCE call->in[CB3_ARG_NONCE]->ptr, call->in[CB3_ARG_NONCE]->len
#define DATA call->in[CB3_ARG_DATA]->ptr, call->in[CB3_ARG_DATA]->len
#define AAD call->in[CB3_ARG_AAD]->ptr, call->in[CB3_ARG_AAD]->len
#define TAG call->in[CB3_ARG_TAG]->ptr, call->in[CB3_ARG_TAG]->len
#define BUF (uint8_t *)call->in[CB3_ARG_BUF]->ptr, call->in[CB3_ARG_BUF]->len
#define OUT(k) call->out[k].ptr, call->out[k].len

static cb3_result encrypt(cb3_call *call)
{
    return cb3_aead_encrypt(AEAD, NONCE, DATA, AAD, OUT(0), NULL);
}

static cb3_result decrypt(cb3_call *call)
{
    return cb3_aead_decrypt(AEAD, NONCE, DATA, AAD, CB3_OUTPUT_MODE_PRIVATE, OUT(0), NULL);
}

static cb3_result encrypt_detached(cb3_call *call)
{
    return cb3_aead_encrypt_detached(AEAD, NONCE, DATA, AAD, OUT(0), OUT(1));
}

static cb3_result decrypt_detached(cb3_call *call)
{
    return cb3_aead_decrypt_detached(AEAD, NONCE, DATA, TAG, AAD, CB3_OUTPUT_MODE_PRIVATE, OUT(0));
}

static cb3_result encrypt_into(cb3_call *call)
{
    return cb3_aead_encrypt(AEAD, NONCE, DATA, AAD, BUF, &call->written);
}

static cb3_result decrypt_into(cb3_call *call)
{
    return cb3_aead_decrypt(AEAD, NONCE, DATA, AAD, CB3_OUTPUT_MODE_SHARED, BUF, &call->written);
}

static cb3_result encrypt_in_place(cb3_call *call)
{
    return cb3_aead_encrypt_in_place(AEAD, NONCE, BUF, AAD, OUT(0));
}

static cb3_result decrypt_in_place(cb3_call *call)
{
    return cb3_aead_decrypt_in_place(AEAD, NONCE, BUF, TAG, AAD);
}

enum { N = CB3_ARG_NONCE, D = CB3_ARG_DATA, A = CB3_ARG_AAD, T = CB3_ARG_TAG, B = CB3_ARG_BUF };
#define WITH_DATA {"nonce", "data", "associated_data", NULL}, 2, 0

static const cb3_method methods[] = {
    {.spec = {"encrypt", WITH_DATA}, .role = {N, D, A}, .inner = 1, .size = {CB3_SIZE_SEALED}, .run = encrypt},
    {.spec = {"decrypt", WITH_DATA}, .role = {N, D, A}, .inner = 1, .size = {CB3_SIZE_OPENED}, .run = decrypt},
    {.spec = {"encrypt_detached", WITH_DATA}, .role = {N, D, A}, .inner = 1,
     .size = {CB3_SIZE_INPUT, CB3_SIZE_FIXED}, .fixed = CB3_TAG_SIZE, .returns = CB3_RETURN_PAIR,
     .run = encrypt_detached},
    {.spec = {"decrypt_detached", {"nonce", "data", "tag", "associated_data", NULL}, 3, 0}, .role = {N, D, T, A},
     .inner = 1, .size = {CB3_SIZE_INPUT}, .run = decrypt_detached},
    {.spec = {"encrypt_into", {"nonce", "data", "associated_data", "buf", NULL}, 4, 0}, .role = {N, D, A, B},
     .inner = 1, .exact = CB3_SIZE_SEALED, .exact_rule = "len(data) + 32", .returns = CB3_RETURN_COUNT,
     .run = encrypt_into},
    {.spec = {"decrypt_into", {"nonce", "data", "associated_data", "buf", NULL}, 4, 0}, .role = {N, D, A, B},
     .inner = 1, .exact = CB3_SIZE_OPENED, .exact_rule = "len(data) - 32", .returns = CB3_RETURN_COUNT,
     .run = decrypt_into},
    {.spec = {"encrypt_in_place", {"nonce", "buf", "associated_data", NULL}, 2, 0}, .role = {N, B, A}, .inner = 1,
     .size = {CB3_SIZE_FIXED}, .fixed = CB3_TAG_SIZE, .run = encrypt_in_place},
    {.spec = {"decrypt_in_place", {"nonce", "buf", "tag", "associated_data", NULL}, 3, 0}, .role = {N, B, T, A},
     .inner = 1, .returns = CB3_RETURN_NONE, .run = decrypt_in_place},
};

CB3_METHOD(Cipher_encrypt, "encrypt", methods[0],
           "encrypt($self, nonce, data, associated_data=None)\n--\n\n"
           "Encrypt and authenticate data; returns ciphertext || 32-byte tag.\n"
           "nonce must be 24 bytes and never reused with this key (cb3.generate_nonce() is safe).")

CB3_METHOD(Cipher_decrypt, "decrypt", methods[1],
           "decrypt($self, nonce, data, associated_data=None)\n--\n\n"
           "Verify and decrypt ciphertext || tag. Raises cb3.DecryptionError if the tag does not\n"
           "match (or data is shorter than the 32-byte tag); no plaintext is released then.")

CB3_METHOD(Cipher_encrypt_detached, "encrypt_detached", methods[2],
           "encrypt_detached($self, nonce, data, associated_data=None)\n--\n\n"
           "Like encrypt() but returns (ciphertext, tag) separately.")

CB3_METHOD(Cipher_decrypt_detached, "decrypt_detached", methods[3],
           "decrypt_detached($self, nonce, data, tag, associated_data=None)\n--\n\n"
           "Verify the 32-byte tag over the ciphertext, then decrypt it.\n"
           "Raises cb3.DecryptionError on a mismatch.")

CB3_METHOD(Cipher_encrypt_into, "encrypt_into", methods[4],
           "encrypt_into($self, nonce, data, associated_data, buf)\n--\n\n"
           "Write ciphertext || tag into buf, a writable buffer of exactly len(data) + 32 bytes;\n"
           "returns the number of bytes written. data may be the start of buf (in place).")

CB3_METHOD(Cipher_decrypt_into, "decrypt_into", methods[5],
           "decrypt_into($self, nonce, data, associated_data, buf)\n--\n\n"
           "Verify ciphertext || tag and write the plaintext into buf, a writable buffer of exactly\n"
           "len(data) - 32 bytes; returns the number of bytes written. On any failure buf is left\n"
           "exactly as it was (the tag is checked before a byte is written).")

CB3_METHOD(Cipher_encrypt_in_place, "encrypt_in_place", methods[6],
           "encrypt_in_place($self, nonce, buf, associated_data=None)\n--\n\n"
           "Encrypt the writable buffer buf in place; returns the 32-byte tag.")

CB3_METHOD(Cipher_decrypt_in_place, "decrypt_in_place", methods[7],
           "decrypt_in_place($self, nonce, buf, tag, associated_data=None)\n--\n\n"
           "Verify tag over the writable buffer buf, then decrypt it in place. On a mismatch\n"
           "raises cb3.DecryptionError and leaves buf unchanged.")

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
