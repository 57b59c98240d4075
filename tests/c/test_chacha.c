/* cb3_chacha_* and cb3_hchacha20: RFC 8439 (§2.3.2, §2.4.2, A.1) and
 * draft-irtf-cfrg-xchacha (§2.2.1 HChaCha20, A.3.2 XChaCha20) known answers,
 * a small reference implementation (all three nonce layouts, 20/12/8
 * rounds) for everything else, seek/position and the ends of the 32- and
 * 64-bit block counters, and every error path (nothing written, position
 * unchanged), plus one object shared by several threads. */
#include <pthread.h>
#include <stdint.h>

#include "check.h"

/* ---- reference ChaCha (straight from RFC 8439 §2.1-2.3) ---- */

static uint32_t rotl(uint32_t v, int c) { return (v << c) | (v >> (32 - c)); }

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

#define QR(a, b, c, d)                                                                                               \
    do {                                                                                                             \
        x[a] += x[b]; x[d] = rotl(x[d] ^ x[a], 16);                                                                  \
        x[c] += x[d]; x[b] = rotl(x[b] ^ x[c], 12);                                                                  \
        x[a] += x[b]; x[d] = rotl(x[d] ^ x[a], 8);                                                                   \
        x[c] += x[d]; x[b] = rotl(x[b] ^ x[c], 7);                                                                   \
    } while (0)

static void ref_rounds(uint32_t x[16], unsigned rounds)
{
    for (unsigned i = 0; i < rounds; i += 2) {
        QR(0, 4, 8, 12); QR(1, 5, 9, 13); QR(2, 6, 10, 14); QR(3, 7, 11, 15);
        QR(0, 5, 10, 15); QR(1, 6, 11, 12); QR(2, 7, 8, 13); QR(3, 4, 9, 14);
    }
}

static void ref_setup(uint32_t st[16], const uint8_t key[32])
{
    st[0] = 0x61707865; st[1] = 0x3320646e; st[2] = 0x79622d32; st[3] = 0x6b206574;
    for (int i = 0; i < 8; i++)
        st[4 + i] = le32(key + 4 * i);
}

static void ref_hchacha(uint8_t out[32], const uint8_t key[32], const uint8_t nonce[16], unsigned rounds)
{
    uint32_t x[16];
    ref_setup(x, key);
    for (int i = 0; i < 4; i++)
        x[12 + i] = le32(nonce + 4 * i);
    ref_rounds(x, rounds);
    for (int i = 0; i < 4; i++) {
        put_le32(out + 4 * i, x[i]);
        put_le32(out + 16 + 4 * i, x[12 + i]);
    }
}

/* `len` keystream bytes from byte `offset` of block `block` (which must not
 * run past the counter: the caller keeps within it). */
static void ref_keystream(uint8_t *out, size_t len, const uint8_t key[32], const uint8_t *nonce, size_t nonce_len,
                          unsigned rounds, uint64_t block, unsigned offset)
{
    uint32_t st[16];
    uint8_t n12[12] = {0}, subkey[32];
    if (nonce_len == 24) {
        ref_hchacha(subkey, key, nonce, rounds);
        memcpy(n12 + 4, nonce + 16, 8);
        ref_setup(st, subkey);
    } else {
        if (nonce_len == 12)
            memcpy(n12, nonce, 12);
        ref_setup(st, key);
    }
    while (len > 0) {
        st[12] = (uint32_t)block;
        if (nonce_len == 8) {
            st[13] = (uint32_t)(block >> 32);
            st[14] = le32(nonce);
            st[15] = le32(nonce + 4);
        } else {
            st[13] = le32(n12);
            st[14] = le32(n12 + 4);
            st[15] = le32(n12 + 8);
        }
        uint32_t x[16];
        uint8_t ks[64];
        memcpy(x, st, sizeof x);
        ref_rounds(x, rounds);
        for (int i = 0; i < 16; i++)
            put_le32(ks + 4 * i, x[i] + st[i]);
        size_t take = len < 64 - offset ? len : 64 - offset;
        memcpy(out, ks + offset, take);
        out += take;
        len -= take;
        offset = 0;
        block++;
    }
}

/* ---- known answers ---- */

static const char SUNSCREEN[] = "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the "
                                "future, sunscreen would be it.";
static const char SUNSCREEN_CT[] =
    "6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afccfd9fae0b"
    "f91b65c5524733ab8f593dabcd62b3571639d624e65152ab8f530c359f0861d8"
    "07ca0dbf500d6a6156a38e088a22b65e52bc514d16ccf806818ce91ab7793736"
    "5af90bbf74a35be6b40b8eedf2785e42874d";
static const char BLOCK_2_3_2[] =
    "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
    "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e";
static const char ZERO_BLOCK_0[] = /* A.1 #1: zero key, zero nonce, block 0 */
    "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
    "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586";
static const char ZERO_BLOCK_1[] = /* A.1 #2: block 1 */
    "9f07e7be5551387a98ba977c732d080dcb0f29a048e3656912c6533e32ee7aed"
    "29b721769ce64e43d57133b074d839d531ed1f28510afb45ace10a1f4b794d6f";

static const char X_KEY[] = "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f";
static const char X_NONCE[] = "404142434445464748494a4b4c4d4e4f5051525354555658";
static const char DHOLE[] =
    "5468652064686f6c65202870726f6e6f756e6365642022646f6c652229206973"
    "20616c736f206b6e6f776e2061732074686520417369617469632077696c6420"
    "646f672c2072656420646f672c20616e642077686973746c696e6720646f672e"
    "2049742069732061626f7574207468652073697a65206f662061204765726d61"
    "6e20736865706865726420627574206c6f6f6b73206d6f7265206c696b652061"
    "206c6f6e672d6c656767656420666f782e205468697320686967686c7920656c"
    "757369766520616e6420736b696c6c6564206a756d70657220697320636c6173"
    "736966696564207769746820776f6c7665732c20636f796f7465732c206a6163"
    "6b616c732c20616e6420666f78657320696e20746865207461786f6e6f6d6963"
    "2066616d696c792043616e696461652e";
static const char DHOLE_KEYSTREAM[] =
    "29624b4b1b140ace53740e405b2168540fd7d630c1f536fecd722fc3cddba7f4"
    "cca98cf9e47e5e64d115450f9b125b54449ff76141ca620a1f9cfcab2a1a8a25"
    "5e766a5266b878846120ea64ad99aa479471e63befcbd37cd1c22a221fe46221"
    "5cf32c74895bf505863ccddd48f62916dc6521f1ec50a5ae08903aa259d9bf60"
    "7cd8026fba548604f1b6072d91bc91243a5b845f7fd171b02edc5a0a84cf28dd"
    "241146bc376e3f48df5e7fee1d11048c190a3d3deb0feb64b42d9c6fdeee290f"
    "a0e6ae2c26c0249ea8c181f7e2ffd100cbe5fd3c4f8271d62b15330cb8fdcf00"
    "b3df507ca8c924f7017b7e712d15a2eb5c50484451e54e1b4b995bd8fdd94597"
    "bb94d7af0b2c04df10ba0890899ed9293a0f55b8bafa999264035f1d4fbe7fe0"
    "aafa109a62372027e50e10cdfecca127";
static const char DHOLE_CT[] =
    "7d0a2e6b7f7c65a236542630294e063b7ab9b555a5d5149aa21e4ae1e4fbce87"
    "ecc8e08a8b5e350abe622b2ffa617b202cfad72032a3037e76ffdcdc4376ee05"
    "3a190d7e46ca1de04144850381b9cb29f051915386b8a710b8ac4d027b8b050f"
    "7cba5854e028d564e453b8a968824173fc16488b8970cac828f11ae53cabd201"
    "12f87107df24ee6183d2274fe4c8b1485534ef2c5fbc1ec24bfc3663efaa08bc"
    "047d29d25043532db8391a8a3d776bf4372a6955827ccb0cdd4af403a7ce4c63"
    "d595c75a43e045f0cce1f29c8b93bd65afc5974922f214a40b7c402cdb91ae73"
    "c0b63615cdad0480680f16515a7ace9d39236464328a37743ffc28f4ddb324f4"
    "d0f5bbdc270c65b1749a6efff1fbaa09536175ccd29fb9e6057b307320d31683"
    "8a9c71f70b5b5907a66f7ea49aadc409";
static const char HCHACHA_NONCE[] = "000000090000004a0000000031415927";
static const char HCHACHA_OUT[] = "82413b4227b27bfed30e42508a877d73a0f9e4d58a74a853c12ec41326d3ecdc";

static uint8_t RFC_KEY[32]; /* 00 01 02 ... 1f */

static cb3_chacha *const UNTOUCHED = (cb3_chacha *)(uintptr_t)0x5A5A5A50u;

static cb3_chacha *new_chacha(const uint8_t *key, const uint8_t *nonce, size_t nonce_len, uint64_t counter,
                              uint32_t rounds)
{
    cb3_chacha *chacha = NULL;
    if (!CHECK_RESULT(cb3_chacha_new(key, 32, nonce, nonce_len, counter, rounds, &chacha), CB3_RESULT_OK) ||
        !CHECK(chacha != NULL))
        exit(check_summary("test_chacha"));
    return chacha;
}

/* The position is a byte count split into halves: high * 2^64 + low. */
static int position_is(const cb3_chacha *chacha, uint64_t high, uint64_t low)
{
    uint64_t h = 12345, l = 12345;
    if (cb3_chacha_position(chacha, &h, &l) != CB3_RESULT_OK)
        return 0;
    if (h != high || l != low)
        printf("    position (%llu, %llu), expected (%llu, %llu)\n", (unsigned long long)h, (unsigned long long)l,
               (unsigned long long)high, (unsigned long long)low);
    return h == high && l == low;
}

static void test_rfc8439(void)
{
    uint8_t nonce[12], expected[128], pt[128];
    size_t len = strlen(SUNSCREEN);
    CHECK(from_hex(expected, SUNSCREEN_CT) == len);
    from_hex(nonce, "000000000000004a00000000");

    /* §2.4.2: encrypt with counter 1, then decrypt. */
    cb3_chacha *chacha = new_chacha(RFC_KEY, nonce, 12, 1, 20);
    CHECK(position_is(chacha, 0, 64));
    guarded out = guarded_alloc(len);
    CHECK_RESULT(cb3_chacha_apply(chacha, (const uint8_t *)SUNSCREEN, len, out.ptr, len), CB3_RESULT_OK);
    CHECK(memcmp(out.ptr, expected, len) == 0 && guarded_intact(&out, len));
    CHECK(position_is(chacha, 0, 64 + len));
    CHECK_RESULT(cb3_chacha_seek(chacha, 0, 64), CB3_RESULT_OK);
    CHECK_RESULT(cb3_chacha_apply(chacha, expected, len, pt, len), CB3_RESULT_OK);
    CHECK(memcmp(pt, SUNSCREEN, len) == 0);
    /* In place, in pieces, from a seek to byte 64. */
    CHECK_RESULT(cb3_chacha_seek(chacha, 0, 64), CB3_RESULT_OK);
    CHECK(position_is(chacha, 0, 64));
    memcpy(pt, SUNSCREEN, len);
    CHECK_RESULT(cb3_chacha_apply(chacha, pt, 10, pt, 10), CB3_RESULT_OK);
    CHECK_RESULT(cb3_chacha_apply(chacha, pt + 10, 60, pt + 10, 60), CB3_RESULT_OK);
    CHECK_RESULT(cb3_chacha_apply(chacha, pt + 70, len - 70, pt + 70, len - 70), CB3_RESULT_OK);
    CHECK(memcmp(pt, expected, len) == 0);
    cb3_chacha_free(chacha);
    guarded_free(&out);

    /* §2.3.2: the block function. */
    uint8_t zeros[64] = {0}, block[64];
    from_hex(nonce, "000000090000004a00000000");
    from_hex(expected, BLOCK_2_3_2);
    chacha = new_chacha(RFC_KEY, nonce, 12, 1, 20);
    CHECK_RESULT(cb3_chacha_apply(chacha, zeros, 64, block, 64), CB3_RESULT_OK);
    CHECK(memcmp(block, expected, 64) == 0);
    ref_keystream(block, 64, RFC_KEY, nonce, 12, 20, 1, 0);
    CHECK(memcmp(block, expected, 64) == 0); /* the reference agrees */
    cb3_chacha_free(chacha);

    /* A.1 #1/#2 with a zero key: the same blocks with the 12-byte and the 8-byte (DJB) nonce. */
    uint8_t zero_key[32] = {0}, zero_nonce[12] = {0}, ks[128];
    from_hex(expected, ZERO_BLOCK_0);
    from_hex(expected + 64, ZERO_BLOCK_1);
    for (size_t nl = 8; nl <= 12; nl += 4) {
        chacha = new_chacha(zero_key, zero_nonce, nl, 0, 20);
        uint8_t in[128] = {0};
        CHECK_RESULT(cb3_chacha_apply(chacha, in, 128, ks, 128), CB3_RESULT_OK);
        CHECK(memcmp(ks, expected, 128) == 0);
        ref_keystream(ks, 128, zero_key, zero_nonce, nl, 20, 0, 0);
        CHECK(memcmp(ks, expected, 128) == 0);
        cb3_chacha_free(chacha);
    }
}

static void test_xchacha(void)
{
    uint8_t key[32], nonce[24], pt[512], expected_ks[512], expected_ct[512];
    from_hex(key, X_KEY);
    from_hex(nonce, X_NONCE);
    size_t len = from_hex(pt, DHOLE);
    CHECK(from_hex(expected_ks, DHOLE_KEYSTREAM) == len && from_hex(expected_ct, DHOLE_CT) == len);

    /* A.3.2: keystream and ciphertext start at block 1. */
    cb3_chacha *chacha = new_chacha(key, nonce, 24, 1, 20);
    guarded out = guarded_alloc(len);
    CHECK_RESULT(cb3_chacha_apply(chacha, pt, len, out.ptr, len), CB3_RESULT_OK);
    CHECK(memcmp(out.ptr, expected_ct, len) == 0 && guarded_intact(&out, len));
    cb3_chacha_free(chacha);

    chacha = new_chacha(key, nonce, 24, 0, 20);
    uint8_t *zeros = (uint8_t *)calloc(1, len + 64);
    guarded ks = guarded_alloc(len + 64);
    CHECK_RESULT(cb3_chacha_apply(chacha, zeros, len + 64, ks.ptr, len + 64), CB3_RESULT_OK);
    CHECK(memcmp(ks.ptr + 64, expected_ks, len) == 0 && guarded_intact(&ks, len + 64));
    ref_keystream(ks.ptr, len, key, nonce, 24, 20, 1, 0);
    CHECK(memcmp(ks.ptr, expected_ks, len) == 0);
    /* Decrypt after seeking back to block 1. */
    CHECK_RESULT(cb3_chacha_seek(chacha, 0, 64), CB3_RESULT_OK);
    guarded_reset(&out);
    CHECK_RESULT(cb3_chacha_apply(chacha, expected_ct, len, out.ptr, len + 5), CB3_RESULT_OK); /* out_len > len */
    CHECK(memcmp(out.ptr, pt, len) == 0 && guarded_intact(&out, len));
    cb3_chacha_free(chacha);
    guarded_free(&out);
    guarded_free(&ks);
    free(zeros);
}

static void test_hchacha20(void)
{
    uint8_t nonce[16], expected[32], buf[96] = {0};
    from_hex(nonce, HCHACHA_NONCE);
    from_hex(expected, HCHACHA_OUT);
    guarded out = guarded_alloc(64);
    CHECK_RESULT(cb3_hchacha20(RFC_KEY, 32, nonce, 16, out.ptr, 32), CB3_RESULT_OK);
    CHECK(memcmp(out.ptr, expected, 32) == 0 && guarded_intact(&out, 32));
    guarded_reset(&out);
    CHECK_RESULT(cb3_hchacha20(RFC_KEY, 32, nonce, 16, out.ptr, 64), CB3_RESULT_OK); /* exactly 32 written */
    CHECK(memcmp(out.ptr, expected, 32) == 0 && guarded_intact(&out, 32));
    uint8_t ref[32];
    ref_hchacha(ref, RFC_KEY, nonce, 20);
    CHECK(memcmp(ref, expected, 32) == 0);

    /* Errors: nothing written. */
    guarded_reset(&out);
    CHECK_RESULT(cb3_hchacha20(NULL, 32, nonce, 16, out.ptr, 32), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_hchacha20(NULL, 0, nonce, 16, out.ptr, 32), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_hchacha20(RFC_KEY, 31, nonce, 16, out.ptr, 32), CB3_RESULT_INVALID_KEY_LENGTH);
    CHECK_RESULT(cb3_hchacha20(RFC_KEY, 33, nonce, 16, out.ptr, 32), CB3_RESULT_INVALID_KEY_LENGTH);
    CHECK_RESULT(cb3_hchacha20(RFC_KEY, 0, nonce, 16, out.ptr, 32), CB3_RESULT_INVALID_KEY_LENGTH);
    CHECK_RESULT(cb3_hchacha20(RFC_KEY, 32, NULL, 16, out.ptr, 32), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_hchacha20(RFC_KEY, 32, nonce, 12, out.ptr, 32), CB3_RESULT_INVALID_NONCE_LENGTH);
    CHECK_RESULT(cb3_hchacha20(RFC_KEY, 32, nonce, 24, out.ptr, 32), CB3_RESULT_INVALID_NONCE_LENGTH);
    CHECK_RESULT(cb3_hchacha20(RFC_KEY, 32, nonce, 0, out.ptr, 32), CB3_RESULT_INVALID_NONCE_LENGTH);
    CHECK_RESULT(cb3_hchacha20(RFC_KEY, 32, nonce, 16, NULL, 32), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_hchacha20(RFC_KEY, 32, nonce, 16, NULL, 0), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_hchacha20(RFC_KEY, 32, nonce, 16, out.ptr, 31), CB3_RESULT_INSUFFICIENT_SIZE);
    CHECK_RESULT(cb3_hchacha20(RFC_KEY, 32, nonce, 16, out.ptr, 0), CB3_RESULT_INSUFFICIENT_SIZE);
    CHECK(guarded_intact(&out, 0));
    /* Overlaps: out over the key or the nonce (in place included). */
    memcpy(buf, RFC_KEY, 32);
    memcpy(buf + 32, nonce, 16);
    CHECK_RESULT(cb3_hchacha20(buf, 32, buf + 32, 16, buf, 32), CB3_RESULT_OVERLAPPING_BUFFERS);
    CHECK_RESULT(cb3_hchacha20(buf, 32, buf + 32, 16, buf + 31, 32), CB3_RESULT_OVERLAPPING_BUFFERS);
    CHECK_RESULT(cb3_hchacha20(buf, 32, buf + 32, 16, buf + 40, 32), CB3_RESULT_OVERLAPPING_BUFFERS);
    CHECK_RESULT(cb3_hchacha20(buf, 32, buf + 32, 16, buf + 32, 32), CB3_RESULT_OVERLAPPING_BUFFERS);
    CHECK(memcmp(buf, RFC_KEY, 32) == 0 && memcmp(buf + 32, nonce, 16) == 0);
    CHECK_RESULT(cb3_hchacha20(buf, 32, buf + 32, 16, buf + 48, 48), CB3_RESULT_OK); /* adjacent */
    CHECK(memcmp(buf + 48, expected, 32) == 0 && all_bytes(buf + 80, 16, 0)); /* 32 of 48 bytes written */
    guarded_free(&out);
}

/* Every variant and round count against the reference, at assorted
 * positions and lengths (the library caches short runs and splits bulk runs:
 * lengths around 64, 3*64, 16*64 exercise both). */
static void test_against_reference(void)
{
    const size_t nonce_lens[] = {8, 12, 24};
    const uint32_t rounds[] = {20, 12, 8};
    const size_t pieces[] = {0, 1, 3, 63, 64, 65, 127, 128, 192, 200, 256, 1000, 1024, 1088, 1152, 4096, 5000, 70000};
    const size_t n_pieces = sizeof pieces / sizeof pieces[0];
    size_t total = 0;
    for (size_t i = 0; i < n_pieces; i++)
        total += pieces[i];
    uint8_t *data = (uint8_t *)xmalloc(total), *expected = (uint8_t *)xmalloc(total);
    uint8_t key[32], nonce[24];
    for (size_t n = 0; n < 3; n++) {
        for (size_t r = 0; r < 3; r++) {
            pattern(key, 32, 100 + n * 3 + r);
            pattern(nonce, 24, 200 + n * 3 + r);
            pattern(data, total, 300 + n * 3 + r);
            const uint64_t counter = 7;
            ref_keystream(expected, total, key, nonce, nonce_lens[n], rounds[r], counter, 0);
            for (size_t i = 0; i < total; i++)
                expected[i] ^= data[i];
            /* Separate output, in pieces. */
            cb3_chacha *chacha = new_chacha(key, nonce, nonce_lens[n], counter, rounds[r]);
            guarded out = guarded_alloc(total);
            size_t done = 0;
            for (size_t i = 0; i < n_pieces; i++) {
                CHECK_RESULT(cb3_chacha_apply(chacha, data + done, pieces[i], out.ptr + done, pieces[i]),
                             CB3_RESULT_OK);
                done += pieces[i];
                CHECK(position_is(chacha, 0, 64 * counter + done));
            }
            if (!CHECK(memcmp(out.ptr, expected, total) == 0 && guarded_intact(&out, total)))
                printf("    nonce %zu, rounds %u\n", nonce_lens[n], rounds[r]);
            /* In place, in one call, after seeking back; then backwards pieces. */
            CHECK_RESULT(cb3_chacha_seek(chacha, 0, 64 * counter), CB3_RESULT_OK);
            memcpy(out.ptr, data, total);
            CHECK_RESULT(cb3_chacha_apply(chacha, out.ptr, total, out.ptr, total), CB3_RESULT_OK);
            CHECK(memcmp(out.ptr, expected, total) == 0 && guarded_intact(&out, total));
            guarded_reset(&out);
            done = total;
            for (size_t i = n_pieces; i-- > 0;) {
                done -= pieces[i];
                CHECK_RESULT(cb3_chacha_seek(chacha, 0, 64 * counter + done), CB3_RESULT_OK);
                CHECK_RESULT(cb3_chacha_apply(chacha, data + done, pieces[i], out.ptr + done, pieces[i]),
                             CB3_RESULT_OK);
            }
            CHECK(memcmp(out.ptr, expected, total) == 0 && guarded_intact(&out, total));
            cb3_chacha_free(chacha);
            guarded_free(&out);
        }
    }
    free(data);
    free(expected);
}

/* ---- the ends of the block counter ---- */

static void test_counter_32(size_t nonce_len)
{
    uint8_t key[32], nonce[24], data[200], expected[200], saved[200];
    pattern(key, 32, 1);
    pattern(nonce, 24, 2);
    pattern(data, sizeof data, 3);
    const uint64_t last = UINT32_MAX, end = UINT64_C(1) << 38; /* the last block; the end in bytes */
    cb3_chacha *out_ptr = UNTOUCHED;
    CHECK_RESULT(cb3_chacha_new(key, 32, nonce, nonce_len, last + 1, 20, &out_ptr), CB3_RESULT_INVALID_COUNTER);
    CHECK_RESULT(cb3_chacha_new(key, 32, nonce, nonce_len, UINT64_MAX, 20, &out_ptr), CB3_RESULT_INVALID_COUNTER);
    CHECK(out_ptr == UNTOUCHED);

    /* The last block is usable (RFC 8439 allows counter 2^32 - 1). */
    cb3_chacha *chacha = new_chacha(key, nonce, nonce_len, last, 20);
    guarded out = guarded_alloc(sizeof data);
    /* More than the last block: COUNTER_OVERFLOW, nothing processed. */
    CHECK_RESULT(cb3_chacha_apply(chacha, data, 65, out.ptr, 65), CB3_RESULT_COUNTER_OVERFLOW);
    CHECK(guarded_intact(&out, 0) && position_is(chacha, 0, 64 * last));
    memcpy(saved, data, sizeof data);
    CHECK_RESULT(cb3_chacha_apply(chacha, data, 65, data, 65), CB3_RESULT_COUNTER_OVERFLOW); /* in place */
    CHECK(memcmp(saved, data, sizeof data) == 0 && position_is(chacha, 0, 64 * last));
    CHECK_RESULT(cb3_chacha_apply(chacha, data, 30, out.ptr, 30), CB3_RESULT_OK);
    CHECK_RESULT(cb3_chacha_apply(chacha, data + 30, 35, out.ptr + 30, 35), CB3_RESULT_COUNTER_OVERFLOW);
    CHECK(position_is(chacha, 0, 64 * last + 30) && guarded_intact(&out, 30));
    CHECK_RESULT(cb3_chacha_apply(chacha, data + 30, 34, out.ptr + 30, 34), CB3_RESULT_OK);
    ref_keystream(expected, 64, key, nonce, nonce_len, 20, last, 0);
    for (int i = 0; i < 64; i++)
        expected[i] ^= data[i];
    CHECK(memcmp(out.ptr, expected, 64) == 0 && guarded_intact(&out, 64));
    /* At the end, 2^38: only empty calls succeed. */
    CHECK(position_is(chacha, 0, end));
    CHECK_RESULT(cb3_chacha_apply(chacha, data, 1, out.ptr + 64, 1), CB3_RESULT_COUNTER_OVERFLOW);
    CHECK(guarded_intact(&out, 64));
    CHECK_RESULT(cb3_chacha_apply(chacha, data, 0, out.ptr + 64, 0), CB3_RESULT_OK);
    CHECK_RESULT(cb3_chacha_apply(chacha, NULL, 0, NULL, 0), CB3_RESULT_OK);
    CHECK(position_is(chacha, 0, end));

    /* Seeks: up to the end, never past it. */
    CHECK_RESULT(cb3_chacha_seek(chacha, 0, 330), CB3_RESULT_OK);
    CHECK_RESULT(cb3_chacha_seek(chacha, 0, end + 1), CB3_RESULT_INVALID_POSITION);
    CHECK_RESULT(cb3_chacha_seek(chacha, 0, end + 64), CB3_RESULT_INVALID_POSITION);
    CHECK_RESULT(cb3_chacha_seek(chacha, 0, UINT64_MAX), CB3_RESULT_INVALID_POSITION);
    CHECK_RESULT(cb3_chacha_seek(chacha, 1, 0), CB3_RESULT_INVALID_POSITION); /* 2^64 */
    CHECK_RESULT(cb3_chacha_seek(chacha, 64, 0), CB3_RESULT_INVALID_POSITION); /* a 64-bit counter's end */
    CHECK_RESULT(cb3_chacha_seek(chacha, UINT64_MAX, UINT64_MAX), CB3_RESULT_INVALID_POSITION);
    CHECK(position_is(chacha, 0, 330));
    CHECK_RESULT(cb3_chacha_seek(chacha, 0, end - 1), CB3_RESULT_OK);
    CHECK(position_is(chacha, 0, end - 1));
    CHECK_RESULT(cb3_chacha_seek(chacha, 0, end), CB3_RESULT_OK);
    CHECK(position_is(chacha, 0, end));
    /* Seek backwards below the creation counter: counted from block 0. */
    CHECK_RESULT(cb3_chacha_seek(chacha, 0, 0), CB3_RESULT_OK);
    guarded_reset(&out);
    CHECK_RESULT(cb3_chacha_apply(chacha, data, sizeof data, out.ptr, sizeof data), CB3_RESULT_OK);
    ref_keystream(expected, sizeof data, key, nonce, nonce_len, 20, 0, 0);
    for (size_t i = 0; i < sizeof data; i++)
        expected[i] ^= data[i];
    CHECK(memcmp(out.ptr, expected, sizeof data) == 0 && guarded_intact(&out, sizeof data));
    cb3_chacha_free(chacha);
    guarded_free(&out);
}

static void test_counter_64(void)
{
    uint8_t key[32], nonce[8], data[300], expected[300];
    pattern(key, 32, 4);
    pattern(nonce, 8, 5);
    pattern(data, sizeof data, 6);
    for (size_t r = 0; r < 3; r++) {
        const uint32_t rounds = r == 0 ? 20 : r == 1 ? 12 : 8;
        /* Any 64-bit counter is valid, and runs cross 2^32-block boundaries. */
        const uint64_t starts[] = {UINT64_C(1) << 32, (UINT64_C(1) << 32) - 2, (UINT64_C(5) << 32) - 1,
                                   UINT64_MAX - 4};
        for (size_t s = 0; s < sizeof starts / sizeof starts[0]; s++) {
            cb3_chacha *chacha = new_chacha(key, nonce, 8, starts[s], rounds);
            guarded out = guarded_alloc(sizeof data);
            CHECK_RESULT(cb3_chacha_apply(chacha, data, 17, out.ptr, 17), CB3_RESULT_OK);
            CHECK_RESULT(cb3_chacha_apply(chacha, data + 17, 283, out.ptr + 17, 283), CB3_RESULT_OK);
            ref_keystream(expected, sizeof data, key, nonce, 8, rounds, starts[s], 0);
            for (size_t i = 0; i < sizeof data; i++)
                expected[i] ^= data[i];
            if (!CHECK(memcmp(out.ptr, expected, sizeof data) == 0 && guarded_intact(&out, sizeof data)))
                printf("    start block %llu, rounds %u\n", (unsigned long long)starts[s], rounds);
            const uint64_t block = starts[s] + 4; /* byte 64 * block + 44, as high and low halves */
            CHECK(position_is(chacha, block >> 58, (block << 6) | 44));
            cb3_chacha_free(chacha);
            guarded_free(&out);
        }
        /* The very end: block 2^64 - 1 works; the end is 2^70 = (64, 0). */
        const uint64_t last_high = 63, last_low = UINT64_MAX - 63; /* 2^70 - 64, block 2^64 - 1 */
        cb3_chacha *chacha = new_chacha(key, nonce, 8, UINT64_MAX, rounds);
        guarded out = guarded_alloc(128);
        CHECK_RESULT(cb3_chacha_apply(chacha, data, 65, out.ptr, 65), CB3_RESULT_COUNTER_OVERFLOW);
        CHECK(guarded_intact(&out, 0) && position_is(chacha, last_high, last_low));
        CHECK_RESULT(cb3_chacha_apply(chacha, data, 64, out.ptr, 64), CB3_RESULT_OK);
        ref_keystream(expected, 64, key, nonce, 8, rounds, UINT64_MAX, 0);
        for (size_t i = 0; i < 64; i++)
            expected[i] ^= data[i];
        CHECK(memcmp(out.ptr, expected, 64) == 0 && guarded_intact(&out, 64));
        CHECK(position_is(chacha, 64, 0));
        CHECK_RESULT(cb3_chacha_apply(chacha, data, 1, out.ptr + 64, 1), CB3_RESULT_COUNTER_OVERFLOW);
        CHECK(guarded_intact(&out, 64) && position_is(chacha, 64, 0));
        /* Past the end: refused, the position unchanged. */
        CHECK_RESULT(cb3_chacha_seek(chacha, 64, 1), CB3_RESULT_INVALID_POSITION);
        CHECK_RESULT(cb3_chacha_seek(chacha, 64, UINT64_MAX), CB3_RESULT_INVALID_POSITION);
        CHECK_RESULT(cb3_chacha_seek(chacha, 65, 0), CB3_RESULT_INVALID_POSITION);
        CHECK_RESULT(cb3_chacha_seek(chacha, UINT64_MAX, 0), CB3_RESULT_INVALID_POSITION);
        CHECK(position_is(chacha, 64, 0));
        CHECK_RESULT(cb3_chacha_seek(chacha, last_high, last_low + 10), CB3_RESULT_OK);
        CHECK(position_is(chacha, last_high, last_low + 10));
        CHECK_RESULT(cb3_chacha_seek(chacha, 64, 1), CB3_RESULT_INVALID_POSITION);
        CHECK(position_is(chacha, last_high, last_low + 10));
        CHECK_RESULT(cb3_chacha_apply(chacha, data, 55, out.ptr, 55), CB3_RESULT_COUNTER_OVERFLOW);
        CHECK_RESULT(cb3_chacha_apply(chacha, data, 54, out.ptr, 54), CB3_RESULT_OK);
        CHECK(position_is(chacha, 64, 0));
        CHECK_RESULT(cb3_chacha_seek(chacha, 64, 0), CB3_RESULT_OK);
        CHECK(position_is(chacha, 64, 0));
        /* 2^64 exactly is (1, 0), block 2^58; the byte before it is (0, 2^64 - 1). */
        CHECK_RESULT(cb3_chacha_seek(chacha, 0, UINT64_MAX), CB3_RESULT_OK);
        CHECK(position_is(chacha, 0, UINT64_MAX));
        CHECK_RESULT(cb3_chacha_apply(chacha, data, 65, out.ptr, 65), CB3_RESULT_OK);
        CHECK(position_is(chacha, 1, 64));
        ref_keystream(expected, 65, key, nonce, 8, rounds, (UINT64_C(1) << 58) - 1, 63);
        for (size_t i = 0; i < 65; i++)
            expected[i] ^= data[i];
        CHECK(memcmp(out.ptr, expected, 65) == 0);
        CHECK_RESULT(cb3_chacha_seek(chacha, 1, 0), CB3_RESULT_OK);
        CHECK(position_is(chacha, 1, 0));
        CHECK_RESULT(cb3_chacha_apply(chacha, data, 70, out.ptr, 70), CB3_RESULT_OK);
        CHECK(position_is(chacha, 1, 70));
        ref_keystream(expected, 70, key, nonce, 8, rounds, UINT64_C(1) << 58, 0);
        for (size_t i = 0; i < 70; i++)
            expected[i] ^= data[i];
        CHECK(memcmp(out.ptr, expected, 70) == 0 && guarded_intact(&out, 70));
        cb3_chacha_free(chacha);
        guarded_free(&out);
    }
}

/* ---- error paths ---- */

static void test_new_errors(void)
{
    uint8_t key[33], nonce[25];
    pattern(key, sizeof key, 8);
    pattern(nonce, sizeof nonce, 9);
    cb3_chacha *out = UNTOUCHED;
    CHECK_RESULT(cb3_chacha_new(NULL, 32, nonce, 12, 0, 20, &out), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_chacha_new(NULL, 0, nonce, 12, 0, 20, &out), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_chacha_new(key, 0, nonce, 12, 0, 20, &out), CB3_RESULT_INVALID_KEY_LENGTH);
    CHECK_RESULT(cb3_chacha_new(key, 16, nonce, 12, 0, 20, &out), CB3_RESULT_INVALID_KEY_LENGTH);
    CHECK_RESULT(cb3_chacha_new(key, 31, nonce, 12, 0, 20, &out), CB3_RESULT_INVALID_KEY_LENGTH);
    CHECK_RESULT(cb3_chacha_new(key, 33, nonce, 12, 0, 20, &out), CB3_RESULT_INVALID_KEY_LENGTH);
    CHECK_RESULT(cb3_chacha_new(key, 32, NULL, 12, 0, 20, &out), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_chacha_new(key, 32, NULL, 0, 0, 20, &out), CB3_RESULT_NULL_PARAMETER);
    const size_t bad_nonces[] = {0, 1, 7, 9, 11, 13, 16, 23, 25};
    for (size_t i = 0; i < sizeof bad_nonces / sizeof bad_nonces[0]; i++) {
        CHECK_RESULT(cb3_chacha_new(key, 32, nonce, bad_nonces[i], 0, 20, &out), CB3_RESULT_INVALID_NONCE_LENGTH);
        CHECK_RESULT(cb3_chacha_new(key, 32, nonce, bad_nonces[i], 0, 7, &out), CB3_RESULT_INVALID_NONCE_LENGTH);
    }
    const uint32_t bad_rounds[] = {0, 1, 7, 10, 16, 21, 24, UINT32_MAX};
    for (size_t n = 8; n <= 24; n += n == 8 ? 4 : 12)
        for (size_t i = 0; i < sizeof bad_rounds / sizeof bad_rounds[0]; i++)
            CHECK_RESULT(cb3_chacha_new(key, 32, nonce, n, 0, bad_rounds[i], &out), CB3_RESULT_INVALID_ROUNDS);
    CHECK_RESULT(cb3_chacha_new(key, 32, nonce, 12, 0, 20, NULL), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_chacha_new(key, 32, nonce, (size_t)PTRDIFF_MAX + 1, 0, 20, &out), CB3_RESULT_INVALID_ARGUMENT);
    CHECK(out == UNTOUCHED);

    /* Key and nonce are copied. */
    uint8_t data[100], expected[100], got[100];
    pattern(data, sizeof data, 10);
    for (size_t n = 8; n <= 24; n += n == 8 ? 4 : 12) {
        uint8_t k[32], v[24];
        memcpy(k, key, 32);
        memcpy(v, nonce, n);
        cb3_chacha *chacha = new_chacha(k, v, n, 3, 12);
        memset(k, 0, sizeof k);
        memset(v, 0, sizeof v);
        CHECK_RESULT(cb3_chacha_apply(chacha, data, sizeof data, got, sizeof got), CB3_RESULT_OK);
        ref_keystream(expected, sizeof data, key, nonce, n, 12, 3, 0);
        for (size_t i = 0; i < sizeof data; i++)
            expected[i] ^= data[i];
        CHECK(memcmp(got, expected, sizeof got) == 0);
        cb3_chacha_free(chacha);
    }
    cb3_chacha_free(NULL);
}

static void test_call_errors(void)
{
    uint8_t key[32], nonce[12];
    pattern(key, 32, 11);
    pattern(nonce, 12, 12);
    cb3_chacha *chacha = new_chacha(key, nonce, 12, 2, 20);
    CHECK_RESULT(cb3_chacha_seek(chacha, 0, 133), CB3_RESULT_OK); /* block 2, byte 5 */
    uint8_t buf[300], saved[300];
    pattern(buf, sizeof buf, 13);
    memcpy(saved, buf, sizeof buf);
    guarded out = guarded_alloc(200);

    CHECK_RESULT(cb3_chacha_apply(NULL, buf, 10, out.ptr, 10), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_chacha_apply(NULL, NULL, 0, NULL, 0), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_chacha_apply(chacha, NULL, 10, out.ptr, 10), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_chacha_apply(chacha, buf, 10, NULL, 10), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_chacha_apply(chacha, buf, 10, NULL, 0), CB3_RESULT_NULL_PARAMETER);
    /* Short output. */
    CHECK_RESULT(cb3_chacha_apply(chacha, buf, 10, out.ptr, 9), CB3_RESULT_INSUFFICIENT_SIZE);
    CHECK_RESULT(cb3_chacha_apply(chacha, buf, 200, out.ptr, 0), CB3_RESULT_INSUFFICIENT_SIZE);
    CHECK_RESULT(cb3_chacha_apply(chacha, buf, (size_t)PTRDIFF_MAX + 1, out.ptr, SIZE_MAX),
                 CB3_RESULT_INVALID_ARGUMENT);
    CHECK(guarded_intact(&out, 0));
    /* Overlaps other than exact in place: output shifted either way, or inside. */
    CHECK_RESULT(cb3_chacha_apply(chacha, buf, 100, buf + 1, 100), CB3_RESULT_OVERLAPPING_BUFFERS);
    CHECK_RESULT(cb3_chacha_apply(chacha, buf + 1, 100, buf, 100), CB3_RESULT_OVERLAPPING_BUFFERS);
    CHECK_RESULT(cb3_chacha_apply(chacha, buf, 100, buf + 99, 100), CB3_RESULT_OVERLAPPING_BUFFERS);
    CHECK_RESULT(cb3_chacha_apply(chacha, buf + 99, 100, buf, 100), CB3_RESULT_OVERLAPPING_BUFFERS);
    CHECK_RESULT(cb3_chacha_apply(chacha, buf, 200, buf + 50, 200), CB3_RESULT_OVERLAPPING_BUFFERS);
    CHECK(memcmp(buf, saved, sizeof buf) == 0);
    /* Adjacent is not an overlap. */
    CHECK_RESULT(cb3_chacha_seek(chacha, 0, 133), CB3_RESULT_OK);
    CHECK_RESULT(cb3_chacha_apply(chacha, buf, 100, buf + 100, 100), CB3_RESULT_OK);
    CHECK(memcmp(buf, saved, 100) == 0 && memcmp(buf + 200, saved + 200, 100) == 0);
    uint8_t expected[100];
    ref_keystream(expected, 100, key, nonce, 12, 20, 2, 5);
    for (int i = 0; i < 100; i++)
        expected[i] ^= saved[i];
    CHECK(memcmp(buf + 100, expected, 100) == 0);
    CHECK(position_is(chacha, 0, 233));
    memcpy(buf, saved, sizeof buf);
    CHECK_RESULT(cb3_chacha_seek(chacha, 0, 133), CB3_RESULT_OK);

    /* seek / position */
    CHECK_RESULT(cb3_chacha_seek(NULL, 0, 0), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_chacha_seek(chacha, 1, 0), CB3_RESULT_INVALID_POSITION);
    uint64_t high = 777, low = 888;
    CHECK_RESULT(cb3_chacha_position(NULL, &high, &low), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_chacha_position(chacha, NULL, &low), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_chacha_position(chacha, &high, NULL), CB3_RESULT_NULL_PARAMETER);
    CHECK(high == 777 && low == 888);

    /* None of the failures moved the position or wrote anything. */
    CHECK(position_is(chacha, 0, 133));
    CHECK_RESULT(cb3_chacha_apply(chacha, buf, 100, out.ptr, 200), CB3_RESULT_OK);
    CHECK(memcmp(out.ptr, expected, 100) == 0 && guarded_intact(&out, 100));
    /* Empty calls: NULL allowed, nothing moves. */
    CHECK_RESULT(cb3_chacha_apply(chacha, NULL, 0, NULL, 0), CB3_RESULT_OK);
    CHECK_RESULT(cb3_chacha_apply(chacha, NULL, 0, out.ptr, 0), CB3_RESULT_OK);
    CHECK_RESULT(cb3_chacha_apply(chacha, buf, 0, NULL, 5), CB3_RESULT_OK);
    CHECK(position_is(chacha, 0, 233));
    cb3_chacha_free(chacha);
    guarded_free(&out);
}

/* ---- one object, several threads ---- */

#define N_THREADS 4
#define CALLS 100
#define RUN 100 /* bytes per call: runs straddle block boundaries */

struct worker {
    const cb3_chacha *chacha;
    uint8_t out[CALLS][RUN];
    int failed;
};

static void *apply_many(void *arg)
{
    struct worker *w = (struct worker *)arg;
    uint8_t zeros[RUN] = {0};
    for (int i = 0; i < CALLS; i++)
        w->failed |= cb3_chacha_apply(w->chacha, zeros, RUN, w->out[i], RUN) != CB3_RESULT_OK;
    return NULL;
}

static void test_shared(void)
{
    /* Each call gets its own contiguous run: together the runs are exactly
     * the keystream's first N_THREADS * CALLS runs, each once. */
    uint8_t key[32], nonce[24];
    pattern(key, 32, 14);
    pattern(nonce, 24, 15);
    cb3_chacha *chacha = new_chacha(key, nonce, 24, 0, 20);
    static struct worker workers[N_THREADS];
    pthread_t threads[N_THREADS];
    for (int t = 0; t < N_THREADS; t++) {
        workers[t].chacha = chacha;
        workers[t].failed = 0;
        CHECK(pthread_create(&threads[t], NULL, apply_many, &workers[t]) == 0);
    }
    for (int t = 0; t < N_THREADS; t++)
        CHECK(pthread_join(threads[t], NULL) == 0 && !workers[t].failed);
    const size_t runs = N_THREADS * CALLS;
    uint8_t *ks = (uint8_t *)xmalloc(runs * RUN);
    ref_keystream(ks, runs * RUN, key, nonce, 24, 20, 0, 0);
    char *seen = (char *)calloc(runs, 1);
    int all_found = 1;
    for (int t = 0; t < N_THREADS; t++) {
        for (int i = 0; i < CALLS; i++) {
            size_t k = 0;
            while (k < runs && (seen[k] || memcmp(ks + k * RUN, workers[t].out[i], RUN) != 0))
                k++;
            if (k == runs)
                all_found = 0;
            else
                seen[k] = 1;
        }
    }
    CHECK(all_found);
    CHECK(position_is(chacha, 0, runs * RUN));
    free(seen);
    free(ks);
    cb3_chacha_free(chacha);
}

int main(void)
{
    for (int i = 0; i < 32; i++)
        RFC_KEY[i] = (uint8_t)i;
    CHECK(CB3_CHACHA_BLOCK_SIZE == 64);
    test_rfc8439();
    test_xchacha();
    test_hchacha20();
    test_against_reference();
    test_counter_32(12);
    test_counter_32(24);
    test_counter_64();
    test_new_errors();
    test_call_errors();
    test_shared();
    return check_summary("test_chacha");
}
