/* cb3_chunked_*: the chunk-level API of cb3's encrypted file format
 * (docs/stream-format.md): a published vector from tests/reference.py
 * (tests/data/stream_vectors.json), header encode/decode, batches equal to
 * chunk-by-chunk calls on 1, 2 and every thread, every tampering kind,
 * shape rules, and every error path writing nothing. */
#include <stdint.h>

#include "check.h"

#define PIECE(size) ((size) + CB3_TAG_SIZE)

/* "three chunks, short final": key 01..20, prefix a0..ae, chunk size 64,
 * associated data "v3", plaintext byte i = 7 * i mod 256, 150 bytes. */
static const char *VECTOR = "4342335354524d0100000040a0a1a2a3a4a5a6a7a8a9aaabacadaeba849377831302e4041f25b94e5f181a88b1d00c4ca5527b6efc1e4b57d095e6724f0f8e92bf0d6c0f2a416e5571e45a9e2c069f019b26a16ebe6a578a61d61bc7152c21f4a59bd3f6a11f667c9e8a2fc2d9fd5e458a0c977666553d90030c5c16885e98ecce4d5fdbcd90a36d6b9a7d83a7698086a1d6526ab513975eb77da8710c3433f11fe98d28a3785e63943e1a5ecad6cf42d2610ae9276d59212a2ebfbc50f2d0ae8d41d0eab1bcb87518a55dcf593712c353732b9038197c661de5c0b03d36587b3ea9cb0c652f15db9035659ff9c950e3d4d2758ded0b721d205430125e12bea64e55057ce9eb986ff8e60c62112fc87409";

static uint8_t KEY[32], PREFIX[15];

static cb3_chunked *open_stream(const uint8_t *header, const uint8_t *aad, size_t aad_len, size_t threads)
{
    cb3_chunked *chunked = NULL;
    if (!CHECK_RESULT(cb3_chunked_new(KEY, 32, header, CB3_CHUNKED_HEADER_SIZE, aad, aad_len, threads, &chunked),
                      CB3_RESULT_OK))
        exit(check_summary("test_chunked"));
    return chunked;
}

static void test_vector(void)
{
    uint8_t stream[400], pt[150], header[CB3_CHUNKED_HEADER_SIZE];
    size_t stream_len = from_hex(stream, VECTOR);
    CHECK(stream_len == 27 + 150 + 3 * 32);
    for (size_t i = 0; i < sizeof pt; i++)
        pt[i] = (uint8_t)(7 * i);
    CHECK_RESULT(cb3_chunked_header_encode(PREFIX, 15, 64, header, sizeof header), CB3_RESULT_OK);
    CHECK(memcmp(header, stream, CB3_CHUNKED_HEADER_SIZE) == 0);
    uint8_t prefix[15];
    uint32_t chunk_size = 0;
    CHECK_RESULT(cb3_chunked_header_decode(stream, 27, prefix, sizeof prefix, &chunk_size, NULL), CB3_RESULT_OK);
    CHECK(chunk_size == 64 && memcmp(prefix, PREFIX, 15) == 0);
    CHECK_RESULT(cb3_chunked_header_decode(stream, 27, NULL, 0, NULL, NULL), CB3_RESULT_OK);
    for (size_t threads = 0; threads <= 2; threads++) {
        cb3_chunked *chunked = open_stream(header, (const uint8_t *)"v3", 2, threads);
        /* The whole stream in one call. */
        guarded out = guarded_alloc(stream_len - 27);
        size_t n = NOT_WRITTEN;
        CHECK_RESULT(cb3_chunked_seal(chunked, 0, 1, pt, 150, out.ptr, out.len, &n), CB3_RESULT_OK);
        CHECK(n == out.len && memcmp(out.ptr, stream + 27, n) == 0 && guarded_intact(&out, n));
        /* Chunk by chunk. */
        guarded_reset(&out);
        CHECK_RESULT(cb3_chunked_seal(chunked, 0, 0, pt, 128, out.ptr, out.len, &n), CB3_RESULT_OK);
        CHECK(n == 2 * PIECE(64));
        CHECK_RESULT(cb3_chunked_seal(chunked, 2, 1, pt + 128, 22, out.ptr + n, out.len - n, &n), CB3_RESULT_OK);
        CHECK(n == 22 + 32 && memcmp(out.ptr, stream + 27, out.len) == 0);
        /* Open: whole, then in two batches. */
        guarded plain = guarded_alloc(150);
        CHECK_RESULT(cb3_chunked_open(chunked, 0, 1, stream + 27, stream_len - 27, plain.ptr, 150, &n), CB3_RESULT_OK);
        CHECK(n == 150 && memcmp(plain.ptr, pt, 150) == 0 && guarded_intact(&plain, 150));
        guarded_reset(&plain);
        CHECK_RESULT(cb3_chunked_open(chunked, 0, 0, stream + 27, 2 * PIECE(64), plain.ptr, 150, &n), CB3_RESULT_OK);
        CHECK(n == 128);
        CHECK_RESULT(cb3_chunked_open(chunked, 2, 1, stream + 27 + 2 * PIECE(64), 54, plain.ptr + 128, 22, &n),
                     CB3_RESULT_OK);
        CHECK(memcmp(plain.ptr, pt, 150) == 0 && guarded_intact(&plain, 150));
        guarded_free(&plain);
        guarded_free(&out);
        cb3_chunked_free(chunked);
    }
}

/* Every change fails with DECRYPTION_FAILED, leaving no plaintext (zeros in
 * the batch's range, the rest untouched) and *out_n unwritten. */
static void expect_failure(cb3_chunked *chunked, uint64_t first, uint32_t last, const uint8_t *ct, size_t len,
                           size_t plain_len)
{
    guarded plain = guarded_alloc(plain_len);
    size_t n = NOT_WRITTEN;
    CHECK_RESULT(cb3_chunked_open(chunked, first, last, ct, len, plain.ptr, plain.len, &n),
                 CB3_RESULT_DECRYPTION_FAILED);
    CHECK(n == NOT_WRITTEN && all_bytes(plain.ptr, plain_len, 0) && guarded_intact(&plain, plain_len));
    guarded_free(&plain);
}

static void test_tampering(void)
{
    enum { SIZE = 64, CHUNKS = 40 };
    const size_t len = SIZE * CHUNKS - 10, sealed_len = len + CHUNKS * 32;
    uint8_t header[27], other_header[27], other_prefix[15];
    memset(other_prefix, 0x33, 15);
    cb3_chunked_header_encode(PREFIX, 15, SIZE, header, 27);
    cb3_chunked_header_encode(other_prefix, 15, SIZE, other_header, 27);
    cb3_chunked *chunked = open_stream(header, NULL, 0, 2);
    cb3_chunked *other = open_stream(other_header, NULL, 0, 1);
    uint8_t *pt = (uint8_t *)xmalloc(len), *ct = (uint8_t *)xmalloc(sealed_len), *ct2 = (uint8_t *)xmalloc(sealed_len);
    uint8_t *bad = (uint8_t *)xmalloc(sealed_len + PIECE(SIZE));
    pattern(pt, len, 9);
    CHECK_RESULT(cb3_chunked_seal(chunked, 0, 1, pt, len, ct, sealed_len, NULL), CB3_RESULT_OK);
    CHECK_RESULT(cb3_chunked_seal(other, 0, 1, pt, len, ct2, sealed_len, NULL), CB3_RESULT_OK);
    CHECK(memcmp(ct, ct2, sealed_len) != 0);
    /* A flipped bit anywhere. */
    for (size_t at = 0; at < sealed_len; at += 37) {
        memcpy(bad, ct, sealed_len);
        bad[at] ^= 4;
        expect_failure(chunked, 0, 1, bad, sealed_len, len);
    }
    /* Reordered: chunks 3 and 4 swapped. */
    memcpy(bad, ct, sealed_len);
    memcpy(bad + 3 * PIECE(SIZE), ct + 4 * PIECE(SIZE), PIECE(SIZE));
    memcpy(bad + 4 * PIECE(SIZE), ct + 3 * PIECE(SIZE), PIECE(SIZE));
    expect_failure(chunked, 0, 1, bad, sealed_len, len);
    /* Dropped chunk 5 (everything after shifts down). */
    memcpy(bad, ct, 5 * PIECE(SIZE));
    memcpy(bad + 5 * PIECE(SIZE), ct + 6 * PIECE(SIZE), sealed_len - 6 * PIECE(SIZE));
    expect_failure(chunked, 0, 1, bad, sealed_len - PIECE(SIZE), len - SIZE);
    /* Truncated at a chunk boundary: the last full chunk is not final. */
    expect_failure(chunked, 0, 1, ct, 10 * PIECE(SIZE), 10 * SIZE);
    /* Appended: a full final chunk followed by more data opens as non-final. */
    uint8_t full[2 * (64 + 32)], plain[128];
    CHECK_RESULT(cb3_chunked_seal(chunked, 0, 1, pt, 128, full, sizeof full, NULL), CB3_RESULT_OK);
    expect_failure(chunked, 0, 0, full, sizeof full, 128);
    CHECK_RESULT(cb3_chunked_open(chunked, 0, 1, full, sizeof full, plain, 128, NULL), CB3_RESULT_OK);
    /* Spliced: chunk 2 from a stream with another prefix; wrong index; wrong header. */
    memcpy(bad, ct, sealed_len);
    memcpy(bad + 2 * PIECE(SIZE), ct2 + 2 * PIECE(SIZE), PIECE(SIZE));
    expect_failure(chunked, 0, 1, bad, sealed_len, len);
    expect_failure(chunked, 1, 1, ct, sealed_len, len);
    expect_failure(other, 0, 1, ct, sealed_len, len);
    /* An empty final chunk is valid only as chunk 0. */
    uint8_t empty[32];
    CHECK_RESULT(cb3_chunked_seal(chunked, 0, 1, NULL, 0, empty, 32, NULL), CB3_RESULT_OK);
    CHECK_RESULT(cb3_chunked_open(chunked, 0, 1, empty, 32, NULL, 0, NULL), CB3_RESULT_OK);
    expect_failure(chunked, 1, 1, empty, 32, 0);
    expect_failure(chunked, 0, 1, empty, 31, 0);
    free(pt), free(ct), free(ct2), free(bad);
    cb3_chunked_free(chunked);
    cb3_chunked_free(other);
}

static void test_errors(void)
{
    uint8_t header[27], out[200], pt[128] = {0};
    size_t n = NOT_WRITTEN;
    CHECK_RESULT(cb3_chunked_header_encode(PREFIX, 14, 64, header, 27), CB3_RESULT_INVALID_NONCE_LENGTH);
    CHECK_RESULT(cb3_chunked_header_encode(PREFIX, 15, 63, header, 27), CB3_RESULT_INVALID_ARGUMENT);
    CHECK_RESULT(cb3_chunked_header_encode(PREFIX, 15, CB3_CHUNKED_MAX_CHUNK_SIZE + 1, header, 27),
                 CB3_RESULT_INVALID_ARGUMENT);
    CHECK_RESULT(cb3_chunked_header_encode(PREFIX, 15, 64, header, 26), CB3_RESULT_INSUFFICIENT_SIZE);
    CHECK_RESULT(cb3_chunked_header_encode(NULL, 15, 64, header, 27), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_chunked_header_encode(PREFIX, 15, 64, NULL, 27), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_chunked_header_encode(PREFIX, 15, CB3_CHUNKED_DEFAULT_CHUNK_SIZE, header, 27), CB3_RESULT_OK);
    uint8_t bad[27];
    uint32_t size = 12345;
    uint8_t prefix[15];
    memset(prefix, 0xEE, 15);
    for (size_t at = 0; at < 8; at++) { /* magic and version */
        memcpy(bad, header, 27);
        bad[at] ^= 1;
        CHECK_RESULT(cb3_chunked_header_decode(bad, 27, prefix, 15, &size, NULL), CB3_RESULT_INVALID_HEADER);
    }
    const uint32_t out_of_range[] = {0, 63, CB3_CHUNKED_MAX_CHUNK_SIZE + 1, UINT32_MAX};
    for (size_t i = 0; i < 4; i++) {
        memcpy(bad, header, 27);
        for (int b = 0; b < 4; b++)
            bad[8 + b] = (uint8_t)(out_of_range[i] >> (24 - 8 * b));
        CHECK_RESULT(cb3_chunked_header_decode(bad, 27, prefix, 15, &size, NULL), CB3_RESULT_INVALID_HEADER);
    }
    CHECK_RESULT(cb3_chunked_header_decode(header, 26, prefix, 15, &size, NULL), CB3_RESULT_INVALID_HEADER);
    CHECK_RESULT(cb3_chunked_header_decode(header, 27, prefix, 14, &size, NULL), CB3_RESULT_INSUFFICIENT_SIZE);
    CHECK_RESULT(cb3_chunked_header_decode(NULL, 27, prefix, 15, &size, NULL), CB3_RESULT_NULL_PARAMETER);
    CHECK(size == 12345 && all_bytes(prefix, 15, 0xEE));
    /* The fault detail: the first rule broken and the value that breaks it. */
    {
        cb3_chunked_header_fault fault = {(cb3_chunked_header_rule)0, 99};
        memcpy(bad, header, 27);
        CHECK_RESULT(cb3_chunked_header_decode(bad, 26, NULL, 0, &size, &fault), CB3_RESULT_INVALID_HEADER);
        CHECK(fault.rule == CB3_CHUNKED_HEADER_RULE_LENGTH && fault.value == 26);
        bad[7] = 2;
        CHECK_RESULT(cb3_chunked_header_decode(bad, 27, NULL, 0, &size, &fault), CB3_RESULT_INVALID_HEADER);
        CHECK(fault.rule == CB3_CHUNKED_HEADER_RULE_VERSION && fault.value == 2);
        bad[0] = 'X';
        CHECK_RESULT(cb3_chunked_header_decode(bad, 27, NULL, 0, &size, &fault), CB3_RESULT_INVALID_HEADER);
        CHECK(fault.rule == CB3_CHUNKED_HEADER_RULE_MAGIC && fault.value == 0);
        memcpy(bad, header, 27);
        bad[8] = bad[9] = bad[10] = 0;
        bad[11] = 63;
        CHECK_RESULT(cb3_chunked_header_decode(bad, 27, NULL, 0, &size, &fault), CB3_RESULT_INVALID_HEADER);
        CHECK(fault.rule == CB3_CHUNKED_HEADER_RULE_CHUNK_SIZE && fault.value == 63 && size == 12345);
        fault.value = 99;
        CHECK_RESULT(cb3_chunked_header_decode(header, 27, NULL, 0, &size, &fault), CB3_RESULT_OK);
        CHECK(fault.value == 99 && size == CB3_CHUNKED_DEFAULT_CHUNK_SIZE);
        size = 12345;
    }
    cb3_chunked *chunked = NULL;
    CHECK_RESULT(cb3_chunked_new(KEY, 31, header, 27, NULL, 0, 1, &chunked), CB3_RESULT_INVALID_KEY_LENGTH);
    CHECK_RESULT(cb3_chunked_new(KEY, 32, bad, 27, NULL, 0, 1, &chunked), CB3_RESULT_INVALID_HEADER);
    CHECK_RESULT(cb3_chunked_new(KEY, 32, header, 27, NULL, 5, 1, &chunked), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_chunked_new(KEY, 32, header, 27, NULL, 0, 1, NULL), CB3_RESULT_NULL_PARAMETER);
    CHECK(chunked == NULL);
    cb3_chunked_header_encode(PREFIX, 15, 64, header, 27);
    chunked = open_stream(header, NULL, 0, 1);
    memset(out, SENTINEL, sizeof out);
    /* Shapes: a non-final batch of whole chunks only; too small an output; overlap; bad flag. */
    CHECK_RESULT(cb3_chunked_seal(chunked, 0, 0, pt, 100, out, sizeof out, &n), CB3_RESULT_INVALID_ARGUMENT);
    CHECK_RESULT(cb3_chunked_seal(chunked, 0, 0, pt, 0, out, sizeof out, &n), CB3_RESULT_INVALID_ARGUMENT);
    CHECK_RESULT(cb3_chunked_seal(chunked, 3, 1, pt, 0, out, sizeof out, &n), CB3_RESULT_INVALID_ARGUMENT);
    CHECK_RESULT(cb3_chunked_seal(chunked, 0, 2, pt, 64, out, sizeof out, &n), CB3_RESULT_INVALID_ARGUMENT);
    CHECK_RESULT(cb3_chunked_seal(chunked, UINT64_MAX, 0, pt, 128, out, sizeof out, &n), CB3_RESULT_INVALID_ARGUMENT);
    CHECK_RESULT(cb3_chunked_seal(chunked, 0, 1, pt, 128, out, 191, &n), CB3_RESULT_INSUFFICIENT_SIZE);
    CHECK_RESULT(cb3_chunked_seal(chunked, 0, 1, out, 64, out + 10, 150, &n), CB3_RESULT_OVERLAPPING_BUFFERS);
    CHECK_RESULT(cb3_chunked_seal(chunked, 0, 1, NULL, 64, out, sizeof out, &n), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_chunked_seal(chunked, 0, 1, pt, 64, NULL, 96, &n), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_chunked_seal(NULL, 0, 1, pt, 64, out, 96, &n), CB3_RESULT_NULL_PARAMETER);
    CHECK(n == NOT_WRITTEN && all_bytes(out, sizeof out, SENTINEL));
    CHECK_RESULT(cb3_chunked_seal(chunked, UINT64_MAX, 1, pt, 64, out, 96, &n), CB3_RESULT_OK);
    CHECK(n == 96);
    uint8_t plain[64];
    memset(plain, SENTINEL, sizeof plain);
    n = NOT_WRITTEN;
    CHECK_RESULT(cb3_chunked_open(chunked, UINT64_MAX, 1, out, 96, plain, 63, &n), CB3_RESULT_INSUFFICIENT_SIZE);
    CHECK_RESULT(cb3_chunked_open(chunked, UINT64_MAX, 0, out, 95, plain, 64, &n), CB3_RESULT_INVALID_ARGUMENT);
    CHECK_RESULT(cb3_chunked_open(chunked, UINT64_MAX, 2, out, 96, plain, 64, &n), CB3_RESULT_INVALID_ARGUMENT);
    CHECK_RESULT(cb3_chunked_open(chunked, UINT64_MAX, 1, out, 96, out + 8, 64, &n), CB3_RESULT_OVERLAPPING_BUFFERS);
    CHECK(n == NOT_WRITTEN && all_bytes(plain, sizeof plain, SENTINEL));
    CHECK_RESULT(cb3_chunked_open(chunked, UINT64_MAX, 1, out, 96, plain, 64, &n), CB3_RESULT_OK);
    CHECK(n == 64 && all_bytes(plain, 64, 0));
    cb3_chunked_free(chunked);
    cb3_chunked_free(NULL);
}

int main(void)
{
    for (int i = 0; i < 32; i++)
        KEY[i] = (uint8_t)(i + 1);
    for (int i = 0; i < 15; i++)
        PREFIX[i] = (uint8_t)(0xA0 + i);
    test_vector();
    test_tampering();
    test_errors();
    return check_summary("test_chunked");
}
