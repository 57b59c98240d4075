/* cb3_aead_*: known answers, every entry point against the others at every
 * size class, and every error path, checking that nothing is written on
 * failure and nothing past the documented length on success. */
#include <pthread.h>
#include <stdint.h>

#include "check.h"

static const struct {
    const char *key, *nonce, *plaintext, *aad, *expected;
} VECTORS[] = {
    /* The three test vectors of the chacha20-blake3 crate. */
    {"0000000000000000000000000000000000000000000000000000000000000000",
     "000000000000000000000000000000000000000000000000", "", "",
     "4fbdd67d41f66924b4304f0fc1eaa87a8e90fc7c5304fe3078f0a1b6e6142c33"},
    {"0100000000000000000000000000000000000000000000000000000000000010",
     "100000000000000000000000000000000000000000000001", "4368614368613230", "424c414b4533",
     "48fecfaf8d9553bfe7121700da72362e77e09080ddd55101aaca18cdcf259953923150cb89e1fef2"},
    {"3eb02a239a2a66de159b9bb5486ccc10a6f63ddf5862ef076650513372353622",
     "768e9bda14afb5686cc34de26210f9ff6fa1dfadc64ee3f0",
     "b8f60975cd7057a003ac84df00d514624fe40cb7855c50dd6594f59b3a2580e5",
     "c8d69ca92da6c5fd22f1805179fcd36cb7a9d45848fa346ba7118c2f34d23a48",
     "444d593bb2dea9ecde9cd3839d166141de70481340ce30739b3f0f28b059d63232324ace49e8a19729ac5110a093fba10aca"
     "eed93099dea1a9c20463a278c3a7"},
};

/* Sizes around the small-message cut-over (512), the ChaCha SIMD widths,
 * the BLAKE3 chunk (1024) and the fused 64 KiB piece. */
static const size_t LENGTHS[] = {0, 1, 31, 32, 63, 64, 65, 255, 511, 512, 513, 1023, 1024, 1025, 4096, 65535, 65536, 65537, 200003};
#define N_LENGTHS (sizeof LENGTHS / sizeof LENGTHS[0])

static uint8_t KEY[CB3_KEY_SIZE];
static uint8_t NONCE[CB3_NONCE_SIZE];
static uint8_t AAD[13];

static cb3_aead *new_aead(const uint8_t *key)
{
    cb3_aead *aead = NULL;
    if (!CHECK_RESULT(cb3_aead_new(key, CB3_KEY_SIZE, &aead), CB3_RESULT_OK) || !CHECK(aead != NULL))
        exit(check_summary("test_aead"));
    return aead;
}

static void test_vectors(void)
{
    for (size_t v = 0; v < sizeof VECTORS / sizeof VECTORS[0]; v++) {
        uint8_t key[32], nonce[24], pt[64], aad[64], expected[128];
        from_hex(key, VECTORS[v].key);
        from_hex(nonce, VECTORS[v].nonce);
        size_t pt_len = from_hex(pt, VECTORS[v].plaintext);
        size_t aad_len = from_hex(aad, VECTORS[v].aad);
        size_t expected_len = from_hex(expected, VECTORS[v].expected);
        cb3_aead *aead = new_aead(key);

        guarded out = guarded_alloc(pt_len + CB3_TAG_SIZE);
        size_t n = NOT_WRITTEN;
        CHECK_RESULT(cb3_aead_encrypt(aead, nonce, 24, pt, pt_len, aad, aad_len, out.ptr, out.len, &n), CB3_RESULT_OK);
        CHECK(n == expected_len);
        CHECK(memcmp(out.ptr, expected, expected_len) == 0);
        CHECK(guarded_intact(&out, n));

        guarded back = guarded_alloc(pt_len);
        n = NOT_WRITTEN;
        CHECK_RESULT(cb3_aead_decrypt(aead, nonce, 24, expected, expected_len, aad, aad_len, CB3_OUTPUT_MODE_SHARED, back.ptr, back.len, &n),
                     CB3_RESULT_OK);
        CHECK(n == pt_len);
        CHECK(memcmp(back.ptr, pt, pt_len) == 0);
        CHECK(guarded_intact(&back, n));
        guarded_free(&out);
        guarded_free(&back);
        cb3_aead_free(aead);
    }
}

/* Every encrypt entry point gives the same bytes and every decrypt entry
 * point inverts them; tampering fails and writes nothing. */
static void test_roundtrip(const cb3_aead *aead, size_t len)
{
    uint8_t *pt = (uint8_t *)xmalloc(len);
    pattern(pt, len, len);
    size_t total = len + CB3_TAG_SIZE;
    size_t n;

    /* Combined, out of place. */
    guarded ct = guarded_alloc(total);
    n = NOT_WRITTEN;
    CHECK_RESULT(cb3_aead_encrypt(aead, NONCE, 24, pt, len, AAD, sizeof AAD, ct.ptr, total, &n), CB3_RESULT_OK);
    CHECK(n == total);
    CHECK(guarded_intact(&ct, total));
    CHECK(len < 16 || memcmp(ct.ptr, pt, len) != 0);

    /* A larger output buffer: only `total` bytes are written. */
    guarded big = guarded_alloc(total + 100);
    n = NOT_WRITTEN;
    CHECK_RESULT(cb3_aead_encrypt(aead, NONCE, 24, pt, len, AAD, sizeof AAD, big.ptr, big.len, &n), CB3_RESULT_OK);
    CHECK(n == total && memcmp(big.ptr, ct.ptr, total) == 0 && guarded_intact(&big, total));
    guarded_free(&big);

    /* out_n may be NULL. */
    guarded ct2 = guarded_alloc(total);
    CHECK_RESULT(cb3_aead_encrypt(aead, NONCE, 24, pt, len, AAD, sizeof AAD, ct2.ptr, total, NULL), CB3_RESULT_OK);
    CHECK(memcmp(ct2.ptr, ct.ptr, total) == 0);
    guarded_free(&ct2);

    /* Combined, in place: the buffer holds the plaintext and room for the tag. */
    guarded inplace = guarded_alloc(total);
    memcpy(inplace.ptr, pt, len);
    n = NOT_WRITTEN;
    CHECK_RESULT(cb3_aead_encrypt(aead, NONCE, 24, inplace.ptr, len, AAD, sizeof AAD, inplace.ptr, total, &n),
                 CB3_RESULT_OK);
    CHECK(n == total && memcmp(inplace.ptr, ct.ptr, total) == 0 && guarded_intact(&inplace, total));

    /* Detached. */
    guarded dct = guarded_alloc(len), tag = guarded_alloc(CB3_TAG_SIZE);
    CHECK_RESULT(cb3_aead_encrypt_detached(aead, NONCE, 24, pt, len, AAD, sizeof AAD, dct.ptr, len, tag.ptr,
                                           CB3_TAG_SIZE),
                 CB3_RESULT_OK);
    CHECK(memcmp(dct.ptr, ct.ptr, len) == 0 && memcmp(tag.ptr, ct.ptr + len, CB3_TAG_SIZE) == 0);
    CHECK(guarded_intact(&dct, len) && guarded_intact(&tag, CB3_TAG_SIZE));

    /* Detached, in place via the detached call, and the in-place call. */
    guarded buf = guarded_alloc(len), tag2 = guarded_alloc(CB3_TAG_SIZE + 8);
    memcpy(buf.ptr, pt, len);
    CHECK_RESULT(cb3_aead_encrypt_detached(aead, NONCE, 24, buf.ptr, len, AAD, sizeof AAD, buf.ptr, len, tag2.ptr,
                                           tag2.len),
                 CB3_RESULT_OK);
    CHECK(memcmp(buf.ptr, ct.ptr, len) == 0 && memcmp(tag2.ptr, ct.ptr + len, CB3_TAG_SIZE) == 0);
    CHECK(guarded_intact(&tag2, CB3_TAG_SIZE));
    memcpy(buf.ptr, pt, len);
    guarded_reset(&tag2);
    CHECK_RESULT(cb3_aead_encrypt_in_place(aead, NONCE, 24, buf.ptr, len, AAD, sizeof AAD, tag2.ptr, tag2.len),
                 CB3_RESULT_OK);
    CHECK(memcmp(buf.ptr, ct.ptr, len) == 0 && memcmp(tag2.ptr, ct.ptr + len, CB3_TAG_SIZE) == 0);
    CHECK(guarded_intact(&buf, len) && guarded_intact(&tag2, CB3_TAG_SIZE));

    /* Decrypt: combined out of place, combined in place, detached, in place. */
    guarded back = guarded_alloc(len);
    n = NOT_WRITTEN;
    CHECK_RESULT(cb3_aead_decrypt(aead, NONCE, 24, ct.ptr, total, AAD, sizeof AAD, CB3_OUTPUT_MODE_SHARED, back.ptr, len, &n), CB3_RESULT_OK);
    CHECK(n == len && memcmp(back.ptr, pt, len) == 0 && guarded_intact(&back, len));

    n = NOT_WRITTEN;
    CHECK_RESULT(cb3_aead_decrypt(aead, NONCE, 24, inplace.ptr, total, AAD, sizeof AAD, CB3_OUTPUT_MODE_SHARED, inplace.ptr, total, &n),
                 CB3_RESULT_OK);
    CHECK(n == len && memcmp(inplace.ptr, pt, len) == 0);
    CHECK(memcmp(inplace.ptr + len, ct.ptr + len, CB3_TAG_SIZE) == 0); /* the tag is left alone */
    CHECK(guarded_intact(&inplace, total));

    guarded_reset(&back);
    CHECK_RESULT(cb3_aead_decrypt_detached(aead, NONCE, 24, dct.ptr, len, tag.ptr, CB3_TAG_SIZE, AAD, sizeof AAD,
                                           CB3_OUTPUT_MODE_SHARED,
                                           back.ptr, len),
                 CB3_RESULT_OK);
    CHECK(memcmp(back.ptr, pt, len) == 0 && guarded_intact(&back, len));

    CHECK_RESULT(cb3_aead_decrypt_detached(aead, NONCE, 24, dct.ptr, len, tag.ptr, CB3_TAG_SIZE, AAD, sizeof AAD,
                                           CB3_OUTPUT_MODE_SHARED,
                                           dct.ptr, len),
                 CB3_RESULT_OK);
    CHECK(memcmp(dct.ptr, pt, len) == 0 && guarded_intact(&dct, len));

    CHECK_RESULT(cb3_aead_decrypt_in_place(aead, NONCE, 24, buf.ptr, len, tag2.ptr, CB3_TAG_SIZE, AAD, sizeof AAD),
                 CB3_RESULT_OK);
    CHECK(memcmp(buf.ptr, pt, len) == 0 && guarded_intact(&buf, len));

    /* CB3_OUTPUT_MODE_PRIVATE (an output no one else sees): the same plaintext. */
    guarded_reset(&back);
    n = NOT_WRITTEN;
    CHECK_RESULT(cb3_aead_decrypt(aead, NONCE, 24, ct.ptr, total, AAD, sizeof AAD, CB3_OUTPUT_MODE_PRIVATE, back.ptr, len, &n),
                 CB3_RESULT_OK);
    CHECK(n == len && memcmp(back.ptr, pt, len) == 0 && guarded_intact(&back, len));
    guarded_reset(&back);
    CHECK_RESULT(cb3_aead_decrypt_detached(aead, NONCE, 24, ct.ptr, len, ct.ptr + len, CB3_TAG_SIZE, AAD,
                                                   sizeof AAD, CB3_OUTPUT_MODE_PRIVATE, back.ptr, len),
                 CB3_RESULT_OK);
    CHECK(memcmp(back.ptr, pt, len) == 0 && guarded_intact(&back, len));

    /* Tampering: every kind fails and writes nothing, for every decrypt call. */
    uint8_t *bad = (uint8_t *)xmalloc(total);
    uint8_t other_nonce[24], other_aad[sizeof AAD];
    memcpy(other_nonce, NONCE, 24);
    other_nonce[23] ^= 1;
    memcpy(other_aad, AAD, sizeof AAD);
    other_aad[0] ^= 0x80;
    size_t flips[] = {0, len / 2, len ? len - 1 : 0, len, total - 1}; /* body and tag bytes */
    for (size_t f = 0; f < sizeof flips / sizeof flips[0]; f++) {
        memcpy(bad, ct.ptr, total);
        bad[flips[f]] ^= 0x01;
        guarded_reset(&back);
        n = NOT_WRITTEN;
        CHECK_RESULT(cb3_aead_decrypt(aead, NONCE, 24, bad, total, AAD, sizeof AAD, CB3_OUTPUT_MODE_SHARED, back.ptr, len, &n),
                     CB3_RESULT_DECRYPTION_FAILED);
        CHECK(n == NOT_WRITTEN && guarded_intact(&back, 0));
        CHECK_RESULT(cb3_aead_decrypt_detached(aead, NONCE, 24, bad, len, bad + len, CB3_TAG_SIZE, AAD, sizeof AAD,
                                               CB3_OUTPUT_MODE_SHARED,
                                               back.ptr, len),
                     CB3_RESULT_DECRYPTION_FAILED);
        CHECK(guarded_intact(&back, 0));
        /* CB3_OUTPUT_MODE_PRIVATE: on failure the output is untouched (MAC input aad || 8 || ct || 8 up to 64 KiB: verified in
           private memory first) or holds zeros (longer messages), never plaintext. */
        for (int detached = 0; detached < 2; detached++) {
            guarded_reset(&back);
            n = NOT_WRITTEN;
            cb3_result r = detached ? cb3_aead_decrypt_detached(aead, NONCE, 24, bad, len, bad + len,
                                                                        CB3_TAG_SIZE, AAD, sizeof AAD, CB3_OUTPUT_MODE_PRIVATE, back.ptr, len)
                                    : cb3_aead_decrypt(aead, NONCE, 24, bad, total, AAD, sizeof AAD,
                                                               CB3_OUTPUT_MODE_PRIVATE,
                                                               back.ptr, len, &n);
            CHECK_RESULT(r, CB3_RESULT_DECRYPTION_FAILED);
            CHECK(n == NOT_WRITTEN && guarded_intact(&back, len));
            for (size_t i = 0; i < len; i++)
                CHECK(back.ptr[i] == (sizeof AAD + len + 16 <= 65536 ? SENTINEL : 0));
        }
        /* In place: the buffer keeps the (tampered) ciphertext. */
        uint8_t *copy = (uint8_t *)xmalloc(total);
        memcpy(copy, bad, total);
        CHECK_RESULT(cb3_aead_decrypt_in_place(aead, NONCE, 24, bad, len, bad + len, CB3_TAG_SIZE, AAD, sizeof AAD),
                     CB3_RESULT_DECRYPTION_FAILED);
        CHECK_RESULT(cb3_aead_decrypt(aead, NONCE, 24, bad, total, AAD, sizeof AAD, CB3_OUTPUT_MODE_SHARED, bad, total, &n),
                     CB3_RESULT_DECRYPTION_FAILED);
        CHECK(memcmp(copy, bad, total) == 0);
        free(copy);
    }
    guarded_reset(&back);
    n = NOT_WRITTEN;
    CHECK_RESULT(cb3_aead_decrypt(aead, other_nonce, 24, ct.ptr, total, AAD, sizeof AAD, CB3_OUTPUT_MODE_SHARED, back.ptr, len, &n),
                 CB3_RESULT_DECRYPTION_FAILED);
    CHECK_RESULT(cb3_aead_decrypt(aead, NONCE, 24, ct.ptr, total, other_aad, sizeof AAD, CB3_OUTPUT_MODE_SHARED, back.ptr, len, &n),
                 CB3_RESULT_DECRYPTION_FAILED);
    CHECK_RESULT(cb3_aead_decrypt(aead, NONCE, 24, ct.ptr, total, NULL, 0, CB3_OUTPUT_MODE_SHARED, back.ptr, len, &n),
                 CB3_RESULT_DECRYPTION_FAILED);
    uint8_t other_key[32];
    memcpy(other_key, KEY, 32);
    other_key[31] ^= 0x40;
    cb3_aead *wrong = new_aead(other_key);
    CHECK_RESULT(cb3_aead_decrypt(wrong, NONCE, 24, ct.ptr, total, AAD, sizeof AAD, CB3_OUTPUT_MODE_SHARED, back.ptr, len, &n),
                 CB3_RESULT_DECRYPTION_FAILED);
    cb3_aead_free(wrong);
    /* Truncated input (a missing tag byte, or the body cut short). */
    CHECK_RESULT(cb3_aead_decrypt(aead, NONCE, 24, ct.ptr, total - 1, AAD, sizeof AAD, CB3_OUTPUT_MODE_SHARED, back.ptr, len, &n),
                 CB3_RESULT_DECRYPTION_FAILED);
    CHECK(n == NOT_WRITTEN && guarded_intact(&back, 0));

    /* Short output buffers: refused, nothing written. */
    guarded shortbuf = guarded_alloc(total);
    n = NOT_WRITTEN;
    CHECK_RESULT(cb3_aead_encrypt(aead, NONCE, 24, pt, len, AAD, sizeof AAD, shortbuf.ptr, total - 1, &n),
                 CB3_RESULT_INSUFFICIENT_SIZE);
    CHECK(n == NOT_WRITTEN && guarded_intact(&shortbuf, 0));
    if (len > 0) {
        CHECK_RESULT(cb3_aead_decrypt(aead, NONCE, 24, ct.ptr, total, AAD, sizeof AAD, CB3_OUTPUT_MODE_SHARED, shortbuf.ptr, len - 1, &n),
                     CB3_RESULT_INSUFFICIENT_SIZE);
        CHECK_RESULT(cb3_aead_encrypt_detached(aead, NONCE, 24, pt, len, AAD, sizeof AAD, shortbuf.ptr, len - 1,
                                               tag2.ptr, CB3_TAG_SIZE),
                     CB3_RESULT_INSUFFICIENT_SIZE);
        CHECK_RESULT(cb3_aead_decrypt_detached(aead, NONCE, 24, dct.ptr, len, tag.ptr, CB3_TAG_SIZE, AAD, sizeof AAD,
                                               CB3_OUTPUT_MODE_SHARED,
                                               shortbuf.ptr, len - 1),
                     CB3_RESULT_INSUFFICIENT_SIZE);
        CHECK(n == NOT_WRITTEN && guarded_intact(&shortbuf, 0));
    }
    guarded_reset(&tag2);
    CHECK_RESULT(cb3_aead_encrypt_detached(aead, NONCE, 24, pt, len, AAD, sizeof AAD, shortbuf.ptr, len, tag2.ptr,
                                           CB3_TAG_SIZE - 1),
                 CB3_RESULT_INSUFFICIENT_SIZE);
    memcpy(buf.ptr, pt, len);
    CHECK_RESULT(cb3_aead_encrypt_in_place(aead, NONCE, 24, buf.ptr, len, AAD, sizeof AAD, tag2.ptr, CB3_TAG_SIZE - 1),
                 CB3_RESULT_INSUFFICIENT_SIZE);
    CHECK(guarded_intact(&shortbuf, 0) && guarded_intact(&tag2, 0) && memcmp(buf.ptr, pt, len) == 0);

    free(bad);
    free(pt);
    guarded_free(&ct);
    guarded_free(&inplace);
    guarded_free(&dct);
    guarded_free(&tag);
    guarded_free(&buf);
    guarded_free(&tag2);
    guarded_free(&back);
    guarded_free(&shortbuf);
}

static void test_new_and_free(void)
{
    static char marker;
    cb3_aead *const untouched = (cb3_aead *)(void *)&marker;
    cb3_aead *aead = untouched;
    uint8_t key[40] = {0};
    CHECK_RESULT(cb3_aead_new(NULL, 32, &aead), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_new(NULL, 0, &aead), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_new(key, 32, NULL), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_new(key, 0, &aead), CB3_RESULT_INVALID_KEY_LENGTH);
    CHECK_RESULT(cb3_aead_new(key, 31, &aead), CB3_RESULT_INVALID_KEY_LENGTH);
    CHECK_RESULT(cb3_aead_new(key, 33, &aead), CB3_RESULT_INVALID_KEY_LENGTH);
    CHECK_RESULT(cb3_aead_new(key, 24, &aead), CB3_RESULT_INVALID_KEY_LENGTH);
    CHECK_RESULT(cb3_aead_new(key, SIZE_MAX, &aead), CB3_RESULT_INVALID_KEY_LENGTH);
    CHECK(aead == untouched);
    CHECK_RESULT(cb3_aead_new(key, 32, &aead), CB3_RESULT_OK);
    CHECK(aead != NULL && aead != untouched);
    /* The key is copied: changing the caller's copy changes nothing. */
    uint8_t out1[CB3_TAG_SIZE], out2[CB3_TAG_SIZE];
    CHECK_RESULT(cb3_aead_encrypt(aead, NONCE, 24, NULL, 0, NULL, 0, out1, sizeof out1, NULL), CB3_RESULT_OK);
    memset(key, 0xFF, sizeof key);
    CHECK_RESULT(cb3_aead_encrypt(aead, NONCE, 24, NULL, 0, NULL, 0, out2, sizeof out2, NULL), CB3_RESULT_OK);
    CHECK(memcmp(out1, out2, sizeof out1) == 0);
    cb3_aead_free(aead);
    cb3_aead_free(NULL);
}

/* cb3_aead_new_with_threads: same argument checks as cb3_aead_new, and the
 * same bytes whatever the thread count (a 3 MiB message is split). */
static void test_new_with_threads(void)
{
    uint8_t key[32] = {0};
    cb3_aead *aead = NULL;
    CHECK_RESULT(cb3_aead_new_with_threads(NULL, 32, 2, &aead), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_new_with_threads(key, 31, 2, &aead), CB3_RESULT_INVALID_KEY_LENGTH);
    CHECK_RESULT(cb3_aead_new_with_threads(key, 32, 2, NULL), CB3_RESULT_NULL_PARAMETER);
    CHECK(aead == NULL);
    const size_t len = 3 * 1024 * 1024 + 5;
    uint8_t *pt = malloc(len), *one = malloc(len + CB3_TAG_SIZE), *many = malloc(len + CB3_TAG_SIZE);
    if (!CHECK(pt && one && many))
        return;
    pattern(pt, len, 9);
    cb3_aead *single = new_aead(KEY);
    size_t threads[] = {0, 2, 3};
    CHECK_RESULT(cb3_aead_encrypt(single, NONCE, 24, pt, len, AAD, 7, one, len + CB3_TAG_SIZE, NULL), CB3_RESULT_OK);
    for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++) {
        if (!CHECK_RESULT(cb3_aead_new_with_threads(KEY, 32, threads[i], &aead), CB3_RESULT_OK))
            continue;
        CHECK_RESULT(cb3_aead_encrypt(aead, NONCE, 24, pt, len, AAD, 7, many, len + CB3_TAG_SIZE, NULL), CB3_RESULT_OK);
        CHECK(memcmp(one, many, len + CB3_TAG_SIZE) == 0);
        cb3_aead_free(aead);
    }
    cb3_aead_free(single);
    free(pt);
    free(one);
    free(many);
}

/* NULL pointers, wrong lengths, lengths above PTRDIFF_MAX: the right code,
 * nothing written. Zero-length buffers may be NULL. */
static void test_arguments(const cb3_aead *aead)
{
    const uint8_t pt[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    uint8_t nonce_big[32] = {0};
    const size_t huge = (size_t)PTRDIFF_MAX + 1;
    guarded out = guarded_alloc(200), tag = guarded_alloc(CB3_TAG_SIZE);
    size_t n = NOT_WRITTEN;
    uint8_t ct[10 + CB3_TAG_SIZE];
    CHECK_RESULT(cb3_aead_encrypt(aead, NONCE, 24, pt, 10, NULL, 0, ct, sizeof ct, NULL), CB3_RESULT_OK);

#define UNTOUCHED() CHECK(n == NOT_WRITTEN && guarded_intact(&out, 0) && guarded_intact(&tag, 0))

    /* cb3_aead_encrypt */
    CHECK_RESULT(cb3_aead_encrypt(NULL, NONCE, 24, pt, 10, NULL, 0, out.ptr, out.len, &n), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_encrypt(aead, NULL, 24, pt, 10, NULL, 0, out.ptr, out.len, &n), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_encrypt(aead, NULL, 0, pt, 10, NULL, 0, out.ptr, out.len, &n), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_encrypt(aead, NONCE, 24, NULL, 10, NULL, 0, out.ptr, out.len, &n), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_encrypt(aead, NONCE, 24, pt, 10, NULL, 3, out.ptr, out.len, &n), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_encrypt(aead, NONCE, 24, pt, 10, NULL, 0, NULL, out.len, &n), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_encrypt(aead, NONCE, 24, NULL, 0, NULL, 0, NULL, 0, &n), CB3_RESULT_NULL_PARAMETER);
    size_t bad_nonce_lengths[] = {0, 8, 12, 23, 25, 32, SIZE_MAX};
    for (size_t i = 0; i < sizeof bad_nonce_lengths / sizeof bad_nonce_lengths[0]; i++) {
        size_t nl = bad_nonce_lengths[i];
        CHECK_RESULT(cb3_aead_encrypt(aead, nonce_big, nl, pt, 10, NULL, 0, out.ptr, out.len, &n),
                     CB3_RESULT_INVALID_NONCE_LENGTH);
        CHECK_RESULT(cb3_aead_decrypt(aead, nonce_big, nl, ct, sizeof ct, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len, &n),
                     CB3_RESULT_INVALID_NONCE_LENGTH);
        CHECK_RESULT(cb3_aead_encrypt_detached(aead, nonce_big, nl, pt, 10, NULL, 0, out.ptr, out.len, tag.ptr,
                                               CB3_TAG_SIZE),
                     CB3_RESULT_INVALID_NONCE_LENGTH);
        CHECK_RESULT(cb3_aead_decrypt_detached(aead, nonce_big, nl, ct, 10, ct + 10, CB3_TAG_SIZE, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr,
                                               out.len),
                     CB3_RESULT_INVALID_NONCE_LENGTH);
        CHECK_RESULT(cb3_aead_encrypt_in_place(aead, nonce_big, nl, out.ptr, 10, NULL, 0, tag.ptr, CB3_TAG_SIZE),
                     CB3_RESULT_INVALID_NONCE_LENGTH);
        CHECK_RESULT(cb3_aead_decrypt_in_place(aead, nonce_big, nl, out.ptr, 10, ct + 10, CB3_TAG_SIZE, NULL, 0),
                     CB3_RESULT_INVALID_NONCE_LENGTH);
        UNTOUCHED();
    }
    CHECK_RESULT(cb3_aead_encrypt(aead, NONCE, 24, pt, huge, NULL, 0, out.ptr, out.len, &n),
                 CB3_RESULT_INVALID_ARGUMENT);
    CHECK_RESULT(cb3_aead_encrypt(aead, NONCE, 24, pt, SIZE_MAX, NULL, 0, out.ptr, SIZE_MAX, &n),
                 CB3_RESULT_INVALID_ARGUMENT);
    CHECK_RESULT(cb3_aead_encrypt(aead, NONCE, 24, pt, 10, pt, huge, out.ptr, out.len, &n),
                 CB3_RESULT_INVALID_ARGUMENT);
    UNTOUCHED();

    /* cb3_aead_decrypt */
    CHECK_RESULT(cb3_aead_decrypt(NULL, NONCE, 24, ct, sizeof ct, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len, &n),
                 CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_decrypt(aead, NULL, 24, ct, sizeof ct, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len, &n),
                 CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_decrypt(aead, NONCE, 24, NULL, sizeof ct, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len, &n),
                 CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_decrypt(aead, NONCE, 24, ct, sizeof ct, NULL, 1, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len, &n),
                 CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_decrypt(aead, NONCE, 24, ct, sizeof ct, NULL, 0, CB3_OUTPUT_MODE_SHARED, NULL, 10, &n), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_decrypt(aead, NONCE, 24, NULL, 0, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len, &n),
                 CB3_RESULT_DECRYPTION_FAILED);
    CHECK_RESULT(cb3_aead_decrypt(aead, NONCE, 24, ct, CB3_TAG_SIZE - 1, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len, &n),
                 CB3_RESULT_DECRYPTION_FAILED);
    CHECK_RESULT(cb3_aead_decrypt(aead, NONCE, 24, ct, huge, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len, &n),
                 CB3_RESULT_INVALID_ARGUMENT);
    CHECK_RESULT(cb3_aead_decrypt(aead, NONCE, 24, ct, sizeof ct, ct, huge, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len, &n),
                 CB3_RESULT_INVALID_ARGUMENT);
    UNTOUCHED();

    /* cb3_aead_encrypt_detached */
    CHECK_RESULT(cb3_aead_encrypt_detached(NULL, NONCE, 24, pt, 10, NULL, 0, out.ptr, out.len, tag.ptr, CB3_TAG_SIZE),
                 CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_encrypt_detached(aead, NULL, 24, pt, 10, NULL, 0, out.ptr, out.len, tag.ptr, CB3_TAG_SIZE),
                 CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_encrypt_detached(aead, NONCE, 24, NULL, 10, NULL, 0, out.ptr, out.len, tag.ptr,
                                           CB3_TAG_SIZE),
                 CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_encrypt_detached(aead, NONCE, 24, pt, 10, NULL, 2, out.ptr, out.len, tag.ptr, CB3_TAG_SIZE),
                 CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_encrypt_detached(aead, NONCE, 24, pt, 10, NULL, 0, NULL, 10, tag.ptr, CB3_TAG_SIZE),
                 CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_encrypt_detached(aead, NONCE, 24, pt, 10, NULL, 0, out.ptr, out.len, NULL, CB3_TAG_SIZE),
                 CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_encrypt_detached(aead, NONCE, 24, NULL, 0, NULL, 0, NULL, 0, NULL, 0),
                 CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_encrypt_detached(aead, NONCE, 24, pt, huge, NULL, 0, out.ptr, SIZE_MAX, tag.ptr,
                                           CB3_TAG_SIZE),
                 CB3_RESULT_INVALID_ARGUMENT);
    UNTOUCHED();

    /* cb3_aead_decrypt_detached */
    CHECK_RESULT(cb3_aead_decrypt_detached(NULL, NONCE, 24, ct, 10, ct + 10, 32, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len),
                 CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_decrypt_detached(aead, NULL, 24, ct, 10, ct + 10, 32, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len),
                 CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_decrypt_detached(aead, NONCE, 24, NULL, 10, ct + 10, 32, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len),
                 CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_decrypt_detached(aead, NONCE, 24, ct, 10, NULL, 32, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len),
                 CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_decrypt_detached(aead, NONCE, 24, ct, 10, NULL, 0, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len),
                 CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_decrypt_detached(aead, NONCE, 24, ct, 10, ct + 10, 32, NULL, 4, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len),
                 CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_decrypt_detached(aead, NONCE, 24, ct, 10, ct + 10, 32, NULL, 0, CB3_OUTPUT_MODE_SHARED, NULL, 10),
                 CB3_RESULT_NULL_PARAMETER);
    size_t bad_tag_lengths[] = {0, 16, 31, 33, SIZE_MAX};
    for (size_t i = 0; i < sizeof bad_tag_lengths / sizeof bad_tag_lengths[0]; i++) {
        CHECK_RESULT(cb3_aead_decrypt_detached(aead, NONCE, 24, ct, 10, ct + 10, bad_tag_lengths[i], NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr,
                                               out.len),
                     CB3_RESULT_INVALID_TAG_LENGTH);
        CHECK_RESULT(cb3_aead_decrypt_in_place(aead, NONCE, 24, out.ptr, 10, ct + 10, bad_tag_lengths[i], NULL, 0),
                     CB3_RESULT_INVALID_TAG_LENGTH);
    }
    CHECK_RESULT(cb3_aead_decrypt_detached(aead, NONCE, 24, ct, huge, ct + 10, 32, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr, SIZE_MAX),
                 CB3_RESULT_INVALID_ARGUMENT);
    UNTOUCHED();

    /* cb3_aead_encrypt_in_place / cb3_aead_decrypt_in_place */
    CHECK_RESULT(cb3_aead_encrypt_in_place(NULL, NONCE, 24, out.ptr, 10, NULL, 0, tag.ptr, 32),
                 CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_encrypt_in_place(aead, NULL, 24, out.ptr, 10, NULL, 0, tag.ptr, 32),
                 CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_encrypt_in_place(aead, NONCE, 24, NULL, 10, NULL, 0, tag.ptr, 32),
                 CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_encrypt_in_place(aead, NONCE, 24, out.ptr, 10, NULL, 5, tag.ptr, 32),
                 CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_encrypt_in_place(aead, NONCE, 24, out.ptr, 10, NULL, 0, NULL, 32),
                 CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_encrypt_in_place(aead, NONCE, 24, out.ptr, huge, NULL, 0, tag.ptr, 32),
                 CB3_RESULT_INVALID_ARGUMENT);
    CHECK_RESULT(cb3_aead_decrypt_in_place(NULL, NONCE, 24, out.ptr, 10, ct + 10, 32, NULL, 0),
                 CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_decrypt_in_place(aead, NULL, 24, out.ptr, 10, ct + 10, 32, NULL, 0),
                 CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_decrypt_in_place(aead, NONCE, 24, NULL, 10, ct + 10, 32, NULL, 0),
                 CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_decrypt_in_place(aead, NONCE, 24, out.ptr, 10, NULL, 32, NULL, 0),
                 CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_decrypt_in_place(aead, NONCE, 24, out.ptr, 10, ct + 10, 32, NULL, 7),
                 CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_aead_decrypt_in_place(aead, NONCE, 24, out.ptr, huge, ct + 10, 32, NULL, 0),
                 CB3_RESULT_INVALID_ARGUMENT);
    UNTOUCHED();
#undef UNTOUCHED

    /* Zero-length buffers may be NULL. */
    uint8_t empty_ct[CB3_TAG_SIZE];
    n = NOT_WRITTEN;
    CHECK_RESULT(cb3_aead_encrypt(aead, NONCE, 24, NULL, 0, NULL, 0, empty_ct, sizeof empty_ct, &n), CB3_RESULT_OK);
    CHECK(n == CB3_TAG_SIZE);
    n = NOT_WRITTEN;
    CHECK_RESULT(cb3_aead_decrypt(aead, NONCE, 24, empty_ct, sizeof empty_ct, NULL, 0, CB3_OUTPUT_MODE_SHARED, NULL, 0, &n), CB3_RESULT_OK);
    CHECK(n == 0);
    uint8_t tag_only[CB3_TAG_SIZE];
    CHECK_RESULT(cb3_aead_encrypt_detached(aead, NONCE, 24, NULL, 0, NULL, 0, NULL, 0, tag_only, sizeof tag_only),
                 CB3_RESULT_OK);
    CHECK(memcmp(tag_only, empty_ct, CB3_TAG_SIZE) == 0);
    CHECK_RESULT(cb3_aead_decrypt_detached(aead, NONCE, 24, NULL, 0, tag_only, CB3_TAG_SIZE, NULL, 0, CB3_OUTPUT_MODE_SHARED, NULL, 0),
                 CB3_RESULT_OK);
    CHECK_RESULT(cb3_aead_encrypt_in_place(aead, NONCE, 24, NULL, 0, NULL, 0, tag_only, sizeof tag_only),
                 CB3_RESULT_OK);
    CHECK_RESULT(cb3_aead_decrypt_in_place(aead, NONCE, 24, NULL, 0, tag_only, CB3_TAG_SIZE, NULL, 0), CB3_RESULT_OK);
    tag_only[5] ^= 1;
    CHECK_RESULT(cb3_aead_decrypt_in_place(aead, NONCE, 24, NULL, 0, tag_only, CB3_TAG_SIZE, NULL, 0),
                 CB3_RESULT_DECRYPTION_FAILED);

    guarded_free(&out);
    guarded_free(&tag);
}

/* Overlapping buffers: every output against every input, partial overlaps
 * refused with nothing written; exact in place and adjacent buffers accepted. */
static void test_overlaps(const cb3_aead *aead)
{
    enum { LEN = 700, ARENA = 4096 };
    uint8_t *arena = (uint8_t *)xmalloc(ARENA);
    uint8_t *snapshot = (uint8_t *)xmalloc(ARENA);
    uint8_t *pt = (uint8_t *)xmalloc(LEN);
    uint8_t *ct = (uint8_t *)xmalloc(LEN + CB3_TAG_SIZE);
    pattern(pt, LEN, 99);
    CHECK_RESULT(cb3_aead_encrypt(aead, NONCE, 24, pt, LEN, AAD, sizeof AAD, ct, LEN + CB3_TAG_SIZE, NULL),
                 CB3_RESULT_OK);
    size_t n;
    /* Layout inside the arena: nonce at 0, aad at 100, data at 1000. */
    uint8_t *a_nonce = arena, *a_aad = arena + 100, *a_data = arena + 1000;

#define RESET(data_src, data_len)                                                                                      \
    do {                                                                                                               \
        memset(arena, 0x3C, ARENA);                                                                                    \
        memcpy(a_nonce, NONCE, 24);                                                                                    \
        memcpy(a_aad, AAD, sizeof AAD);                                                                                \
        memcpy(a_data, (data_src), (data_len));                                                                        \
        memcpy(snapshot, arena, ARENA);                                                                                \
        n = NOT_WRITTEN;                                                                                               \
    } while (0)
#define REFUSED(call)                                                                                                  \
    do {                                                                                                               \
        CHECK_RESULT((call), CB3_RESULT_OVERLAPPING_BUFFERS);                                                          \
        CHECK(memcmp(arena, snapshot, ARENA) == 0 && n == NOT_WRITTEN);                                                \
    } while (0)

    /* cb3_aead_encrypt: out (LEN + 32 bytes) against plaintext, aad, nonce. */
    ptrdiff_t enc_offsets[] = {1, -1, 5, LEN - 1, -(LEN + CB3_TAG_SIZE - 1)};
    for (size_t i = 0; i < sizeof enc_offsets / sizeof enc_offsets[0]; i++) {
        RESET(pt, LEN);
        REFUSED(cb3_aead_encrypt(aead, a_nonce, 24, a_data, LEN, a_aad, sizeof AAD, a_data + enc_offsets[i],
                                 LEN + CB3_TAG_SIZE, &n));
    }
    RESET(pt, LEN);
    REFUSED(cb3_aead_encrypt(aead, a_nonce, 24, a_data, LEN, a_aad, sizeof AAD, a_aad - 50, LEN + CB3_TAG_SIZE, &n));
    RESET(pt, LEN);
    REFUSED(cb3_aead_encrypt(aead, a_nonce, 24, a_data, LEN, a_aad, sizeof AAD, a_aad + 5, LEN + CB3_TAG_SIZE, &n));
    RESET(pt, LEN);
    REFUSED(cb3_aead_encrypt(aead, a_nonce, 24, a_data, 40, a_aad, sizeof AAD, a_nonce + 23, 40 + CB3_TAG_SIZE, &n));
    /* Exact in place, and an output that ends right where the data begins. */
    RESET(pt, LEN);
    CHECK_RESULT(cb3_aead_encrypt(aead, a_nonce, 24, a_data, LEN, a_aad, sizeof AAD, a_data, LEN + CB3_TAG_SIZE, &n),
                 CB3_RESULT_OK);
    CHECK(n == LEN + CB3_TAG_SIZE && memcmp(a_data, ct, n) == 0);
    RESET(pt, LEN);
    CHECK_RESULT(cb3_aead_encrypt(aead, a_nonce, 24, a_data + LEN + CB3_TAG_SIZE, LEN, a_aad, sizeof AAD, a_data,
                                  LEN + CB3_TAG_SIZE, &n),
                 CB3_RESULT_OK);
    CHECK(n == LEN + CB3_TAG_SIZE);
    CHECK(memcmp(a_data + LEN + CB3_TAG_SIZE, snapshot + 1000 + LEN + CB3_TAG_SIZE, LEN) == 0);

    /* cb3_aead_decrypt: out (LEN bytes) against ciphertext, tag, aad, nonce. */
    ptrdiff_t dec_offsets[] = {1, -1, LEN - 1, LEN, LEN + CB3_TAG_SIZE - 1, -(LEN - 1)};
    for (size_t i = 0; i < sizeof dec_offsets / sizeof dec_offsets[0]; i++) {
        RESET(ct, LEN + CB3_TAG_SIZE);
        REFUSED(cb3_aead_decrypt(aead, a_nonce, 24, a_data, LEN + CB3_TAG_SIZE, a_aad, sizeof AAD,
                                 CB3_OUTPUT_MODE_SHARED,
                                 a_data + dec_offsets[i], LEN, &n));
    }
    RESET(ct, LEN + CB3_TAG_SIZE);
    REFUSED(cb3_aead_decrypt(aead, a_nonce, 24, a_data, LEN + CB3_TAG_SIZE, a_aad, sizeof AAD, CB3_OUTPUT_MODE_SHARED, a_aad - 3, LEN, &n));
    RESET(ct, LEN + CB3_TAG_SIZE);
    REFUSED(cb3_aead_decrypt(aead, a_nonce, 24, a_data, LEN + CB3_TAG_SIZE, a_aad, sizeof AAD, CB3_OUTPUT_MODE_SHARED, a_nonce + 10, LEN, &n));
    /* Overlap is refused even when the tag would not verify: nothing leaks. */
    RESET(ct, LEN + CB3_TAG_SIZE);
    a_data[0] ^= 1;
    memcpy(snapshot, arena, ARENA);
    REFUSED(cb3_aead_decrypt(aead, a_nonce, 24, a_data, LEN + CB3_TAG_SIZE, a_aad, sizeof AAD, CB3_OUTPUT_MODE_SHARED, a_data + 1, LEN, &n));
    RESET(ct, LEN + CB3_TAG_SIZE);
    CHECK_RESULT(cb3_aead_decrypt(aead, a_nonce, 24, a_data, LEN + CB3_TAG_SIZE, a_aad, sizeof AAD, CB3_OUTPUT_MODE_SHARED, a_data, LEN, &n),
                 CB3_RESULT_OK);
    CHECK(n == LEN && memcmp(a_data, pt, LEN) == 0);
    RESET(ct, LEN + CB3_TAG_SIZE);
    CHECK_RESULT(cb3_aead_decrypt(aead, a_nonce, 24, a_data, LEN + CB3_TAG_SIZE, a_aad, sizeof AAD,
                                  CB3_OUTPUT_MODE_SHARED,
                                  a_data + LEN + CB3_TAG_SIZE, LEN, &n),
                 CB3_RESULT_OK);
    CHECK(memcmp(a_data + LEN + CB3_TAG_SIZE, pt, LEN) == 0);

    /* cb3_aead_encrypt_detached: ciphertext_out and tag_out. */
    uint8_t *tag_out = arena + 3000;
    RESET(pt, LEN);
    REFUSED(cb3_aead_encrypt_detached(aead, a_nonce, 24, a_data, LEN, a_aad, sizeof AAD, a_data + 3, LEN, tag_out, 32));
    RESET(pt, LEN);
    REFUSED(cb3_aead_encrypt_detached(aead, a_nonce, 24, a_data, LEN, a_aad, sizeof AAD, a_aad + 1, LEN, tag_out, 32));
    RESET(pt, LEN);
    REFUSED(cb3_aead_encrypt_detached(aead, a_nonce, 24, a_data, 40, a_aad, sizeof AAD, a_nonce + 1, 40, tag_out, 32));
    RESET(pt, LEN);
    REFUSED(cb3_aead_encrypt_detached(aead, a_nonce, 24, a_data, LEN, a_aad, sizeof AAD, tag_out - 40, LEN, tag_out - 50,
                                      32)); /* tag_out inside ciphertext_out */
    RESET(pt, LEN);
    REFUSED(cb3_aead_encrypt_detached(aead, a_nonce, 24, a_data, LEN, a_aad, sizeof AAD, a_data, LEN, a_data + 10,
                                      32)); /* tag_out inside the plaintext (in place) */
    RESET(pt, LEN);
    REFUSED(cb3_aead_encrypt_detached(aead, a_nonce, 24, a_data, LEN, a_aad, sizeof AAD, tag_out, LEN, a_aad + 2, 32));
    RESET(pt, LEN);
    REFUSED(cb3_aead_encrypt_detached(aead, a_nonce, 24, a_data, LEN, a_aad, sizeof AAD, tag_out, LEN, a_nonce + 20,
                                      32));
    RESET(pt, LEN);
    CHECK_RESULT(cb3_aead_encrypt_detached(aead, a_nonce, 24, a_data, LEN, a_aad, sizeof AAD, a_data, LEN,
                                           a_data + LEN, 32),
                 CB3_RESULT_OK);
    CHECK(memcmp(a_data, ct, LEN + CB3_TAG_SIZE) == 0);

    /* cb3_aead_decrypt_detached: plaintext_out against ciphertext, tag, aad, nonce. */
    uint8_t *a_tag = arena + 3000;
#define RESET_DETACHED()                                                                                               \
    do {                                                                                                               \
        RESET(ct, LEN);                                                                                                \
        memcpy(a_tag, ct + LEN, CB3_TAG_SIZE);                                                                         \
        memcpy(snapshot, arena, ARENA);                                                                                \
    } while (0)
    RESET_DETACHED();
    REFUSED(cb3_aead_decrypt_detached(aead, a_nonce, 24, a_data, LEN, a_tag, 32, a_aad, sizeof AAD, CB3_OUTPUT_MODE_SHARED, a_data + 1, LEN));
    RESET_DETACHED();
    REFUSED(cb3_aead_decrypt_detached(aead, a_nonce, 24, a_data, LEN, a_tag, 32, a_aad, sizeof AAD, CB3_OUTPUT_MODE_SHARED, a_tag - 10, LEN));
    RESET_DETACHED();
    REFUSED(cb3_aead_decrypt_detached(aead, a_nonce, 24, a_data, LEN, a_tag, 32, a_aad, sizeof AAD, CB3_OUTPUT_MODE_SHARED, a_aad, LEN));
    RESET_DETACHED();
    REFUSED(cb3_aead_decrypt_detached(aead, a_nonce, 24, a_data, 30, a_tag, 32, a_aad, sizeof AAD, CB3_OUTPUT_MODE_SHARED, a_nonce + 4, 30));
    RESET_DETACHED();
    CHECK_RESULT(cb3_aead_decrypt_detached(aead, a_nonce, 24, a_data, LEN, a_tag, 32, a_aad, sizeof AAD, CB3_OUTPUT_MODE_SHARED, a_data, LEN),
                 CB3_RESULT_OK);
    CHECK(memcmp(a_data, pt, LEN) == 0);

    /* cb3_aead_encrypt_in_place: buf against aad and nonce, tag_out against all. */
    RESET(pt, LEN);
    REFUSED(cb3_aead_encrypt_in_place(aead, a_nonce, 24, a_data, LEN, a_data + 5, sizeof AAD, tag_out, 32));
    RESET(pt, LEN);
    REFUSED(cb3_aead_encrypt_in_place(aead, a_nonce, 24, a_nonce + 10, 50, a_aad, sizeof AAD, tag_out, 32));
    RESET(pt, LEN);
    REFUSED(cb3_aead_encrypt_in_place(aead, a_nonce, 24, a_data, LEN, a_aad, sizeof AAD, a_data + LEN - 1, 32));
    RESET(pt, LEN);
    REFUSED(cb3_aead_encrypt_in_place(aead, a_nonce, 24, a_data, LEN, a_aad, sizeof AAD, a_aad - 31, 32));
    RESET(pt, LEN);
    REFUSED(cb3_aead_encrypt_in_place(aead, a_nonce, 24, a_data, LEN, a_aad, sizeof AAD, a_nonce + 23, 32));
    RESET(pt, LEN);
    CHECK_RESULT(cb3_aead_encrypt_in_place(aead, a_nonce, 24, a_data, LEN, a_aad, sizeof AAD, a_data + LEN, 32),
                 CB3_RESULT_OK);
    CHECK(memcmp(a_data, ct, LEN + CB3_TAG_SIZE) == 0);

    /* cb3_aead_decrypt_in_place: buf against tag, aad, nonce. */
    RESET_DETACHED();
    REFUSED(cb3_aead_decrypt_in_place(aead, a_nonce, 24, a_data, LEN, a_data + LEN - 1, 32, a_aad, sizeof AAD));
    RESET_DETACHED();
    REFUSED(cb3_aead_decrypt_in_place(aead, a_nonce, 24, a_data, LEN, a_tag, 32, a_data + 100, sizeof AAD));
    RESET_DETACHED();
    REFUSED(cb3_aead_decrypt_in_place(aead, a_nonce, 24, a_data - 1000, 1001, a_tag, 32, a_aad, sizeof AAD));
    RESET(ct, LEN + CB3_TAG_SIZE);
    CHECK_RESULT(cb3_aead_decrypt_in_place(aead, a_nonce, 24, a_data, LEN, a_data + LEN, 32, a_aad, sizeof AAD),
                 CB3_RESULT_OK);
    CHECK(memcmp(a_data, pt, LEN) == 0);
#undef RESET_DETACHED
#undef REFUSED
#undef RESET
    free(arena);
    free(snapshot);
    free(pt);
    free(ct);
}

/* One cb3_aead shared by several threads at once. */
enum { THREADS = 4, ROUNDS = 300 };

typedef struct {
    const cb3_aead *aead;
    int id;
    int failures;
} worker_arg;

static void *worker(void *p)
{
    worker_arg *arg = (worker_arg *)p;
    for (int round = 0; round < ROUNDS; round++) {
        size_t len = (size_t)(round * 37 % 2000);
        uint8_t nonce[24], pt[2000], ct[2000 + CB3_TAG_SIZE], back[2000];
        pattern(nonce, 24, (uint64_t)(arg->id * 100000 + round));
        pattern(pt, len, (uint64_t)round);
        size_t n = 0;
        if (cb3_aead_encrypt(arg->aead, nonce, 24, pt, len, NULL, 0, ct, sizeof ct, &n) != CB3_RESULT_OK)
            arg->failures++;
        if (cb3_aead_decrypt(arg->aead, nonce, 24, ct, n, NULL, 0, CB3_OUTPUT_MODE_SHARED, back, sizeof back, &n) != CB3_RESULT_OK ||
            n != len || memcmp(back, pt, len) != 0)
            arg->failures++;
    }
    return NULL;
}

static void test_threads(const cb3_aead *aead)
{
    pthread_t threads[THREADS];
    worker_arg args[THREADS];
    for (int i = 0; i < THREADS; i++) {
        args[i].aead = aead;
        args[i].id = i;
        args[i].failures = 0;
        CHECK(pthread_create(&threads[i], NULL, worker, &args[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++) {
        CHECK(pthread_join(threads[i], NULL) == 0);
        CHECK(args[i].failures == 0);
    }
}

int main(void)
{
    pattern(KEY, sizeof KEY, 1);
    pattern(NONCE, sizeof NONCE, 2);
    pattern(AAD, sizeof AAD, 3);
    test_vectors();
    test_new_and_free();
    test_new_with_threads();
    cb3_aead *aead = new_aead(KEY);
    for (size_t i = 0; i < N_LENGTHS; i++)
        test_roundtrip(aead, LENGTHS[i]);
    test_arguments(aead);
    test_overlaps(aead);
    test_threads(aead);
    cb3_aead_free(aead);
    return check_summary("test_aead");
}
