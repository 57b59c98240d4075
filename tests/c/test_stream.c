/* cb3_stream_*: the nonce schedule against cb3_aead_encrypt, index rules,
 * exhaustion at UINT64_MAX, every error path (nothing written, index
 * unchanged), and a stream shared by several threads. */
#include <pthread.h>
#include <stdint.h>

#include "check.h"

static uint8_t KEY[CB3_KEY_SIZE];
static uint8_t NONCE[CB3_NONCE_SIZE];

static void store_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t load_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* The documented schedule: nonce[0..16] || le64(le64(nonce[16..24]) + i). */
static void nonce_for(uint8_t out[24], const uint8_t base[24], uint64_t index)
{
    memcpy(out, base, 24);
    store_le64(out + 16, load_le64(base + 16) + index);
}

static cb3_stream *new_stream(const uint8_t *key, const uint8_t *nonce, uint64_t index)
{
    cb3_stream *stream = NULL;
    if (!CHECK_RESULT(cb3_stream_new(key, 32, nonce, 24, index, &stream), CB3_RESULT_OK) || !CHECK(stream != NULL))
        exit(check_summary("test_stream"));
    return stream;
}

static cb3_aead *new_aead(const uint8_t *key)
{
    cb3_aead *aead = NULL;
    if (!CHECK_RESULT(cb3_aead_new(key, 32, &aead), CB3_RESULT_OK))
        exit(check_summary("test_stream"));
    return aead;
}

static void test_schedule(void)
{
    uint8_t nonce[24];
    memcpy(nonce, NONCE, 24);
    store_le64(nonce + 16, UINT64_MAX - 1); /* the counter wraps at message 2 */
    cb3_stream *sender = new_stream(KEY, nonce, 0), *receiver = new_stream(KEY, nonce, 0);
    cb3_aead *aead = new_aead(KEY);
    const uint8_t aad[5] = {'h', 'e', 'l', 'l', 'o'};
    for (uint64_t i = 0; i < 6; i++) {
        size_t len = (size_t)(i * 300); /* the direct path (MAC input up to 64 KiB) */
        uint8_t *pt = (uint8_t *)xmalloc(len);
        pattern(pt, len, i);
        guarded ct = guarded_alloc(len + CB3_TAG_SIZE);
        guarded expected = guarded_alloc(len + CB3_TAG_SIZE);
        uint8_t message_nonce[24];
        nonce_for(message_nonce, nonce, i);
        size_t n = NOT_WRITTEN;
        CHECK(cb3_stream_message_index(sender) == i);
        CHECK_RESULT(cb3_stream_encrypt(sender, pt, len, aad, sizeof aad, ct.ptr, ct.len, &n), CB3_RESULT_OK);
        CHECK(n == len + CB3_TAG_SIZE && guarded_intact(&ct, n));
        CHECK_RESULT(cb3_aead_encrypt(aead, message_nonce, 24, pt, len, aad, sizeof aad, expected.ptr, expected.len,
                                      NULL),
                     CB3_RESULT_OK);
        CHECK(memcmp(ct.ptr, expected.ptr, ct.len) == 0);
        CHECK(cb3_stream_message_index(sender) == i + 1);

        guarded back = guarded_alloc(len);
        n = NOT_WRITTEN;
        CHECK_RESULT(cb3_stream_decrypt(receiver, ct.ptr, ct.len, aad, sizeof aad, CB3_OUTPUT_MODE_SHARED, back.ptr, back.len, &n),
                     CB3_RESULT_OK);
        CHECK(n == len && memcmp(back.ptr, pt, len) == 0 && guarded_intact(&back, len));
        CHECK(cb3_stream_message_index(receiver) == i + 1);
        /* CB3_OUTPUT_MODE_PRIVATE on the next message's twin: a message it does not
         * expect fails, leaves no plaintext and does not move the index. */
        guarded_reset(&back);
        n = NOT_WRITTEN;
        CHECK_RESULT(cb3_stream_decrypt(receiver, ct.ptr, ct.len, aad, sizeof aad, CB3_OUTPUT_MODE_PRIVATE, back.ptr, back.len, &n),
                     CB3_RESULT_DECRYPTION_FAILED);
        CHECK(n == NOT_WRITTEN && guarded_intact(&back, len) && cb3_stream_message_index(receiver) == i + 1);
        for (size_t b = 0; b < len; b++)
            CHECK(back.ptr[b] == (sizeof aad + len + 16 <= 65536 ? SENTINEL : 0)); /* zeros past 64 KiB of MAC input */
        guarded_free(&ct);
        guarded_free(&expected);
        guarded_free(&back);
        free(pt);
    }
    cb3_stream_free(sender);
    cb3_stream_free(receiver);
    cb3_aead_free(aead);
}

/* In place (out == plaintext / ciphertext), NULL out_n, and resuming at an
 * index gives the same bytes as getting there message by message. */
static void test_in_place_and_resume(void)
{
    cb3_stream *a = new_stream(KEY, NONCE, 0), *b = new_stream(KEY, NONCE, 3), *rx = new_stream(KEY, NONCE, 3);
    uint8_t buf_a[100 + CB3_TAG_SIZE], buf_b[100 + CB3_TAG_SIZE];
    for (int i = 0; i < 3; i++)
        CHECK_RESULT(cb3_stream_encrypt(a, NULL, 0, NULL, 0, buf_a, sizeof buf_a, NULL), CB3_RESULT_OK);
    CHECK(cb3_stream_message_index(a) == 3 && cb3_stream_message_index(b) == 3);
    pattern(buf_a, 100, 7);
    memcpy(buf_b, buf_a, 100);
    CHECK_RESULT(cb3_stream_encrypt(a, buf_a, 100, NULL, 0, buf_a, sizeof buf_a, NULL), CB3_RESULT_OK);
    CHECK_RESULT(cb3_stream_encrypt(b, buf_b, 100, NULL, 0, buf_b, sizeof buf_b, NULL), CB3_RESULT_OK);
    CHECK(memcmp(buf_a, buf_b, sizeof buf_a) == 0);
    size_t n = NOT_WRITTEN;
    CHECK_RESULT(cb3_stream_decrypt(rx, buf_b, sizeof buf_b, NULL, 0, CB3_OUTPUT_MODE_SHARED, buf_b, sizeof buf_b, &n), CB3_RESULT_OK);
    uint8_t expected[100];
    pattern(expected, 100, 7);
    CHECK(n == 100 && memcmp(buf_b, expected, 100) == 0);
    CHECK(cb3_stream_message_index(rx) == 4);
    cb3_stream_free(a);
    cb3_stream_free(b);
    cb3_stream_free(rx);
}

/* A failed call writes nothing and does not advance; the right message
 * still decrypts afterwards. */
static void test_failures_do_not_advance(void)
{
    cb3_stream *tx = new_stream(KEY, NONCE, 0), *rx = new_stream(KEY, NONCE, 0);
    uint8_t m0[20 + CB3_TAG_SIZE], m1[20 + CB3_TAG_SIZE], pt[20];
    pattern(pt, 20, 11);
    CHECK_RESULT(cb3_stream_encrypt(tx, pt, 20, NULL, 0, m0, sizeof m0, NULL), CB3_RESULT_OK);
    CHECK_RESULT(cb3_stream_encrypt(tx, pt, 20, NULL, 0, m1, sizeof m1, NULL), CB3_RESULT_OK);
    CHECK(memcmp(m0, m1, sizeof m0) != 0); /* different nonces */

    guarded out = guarded_alloc(64);
    size_t n = NOT_WRITTEN;
    const size_t huge = (size_t)PTRDIFF_MAX + 1;
#define UNCHANGED(stream, index)                                                                                       \
    CHECK(n == NOT_WRITTEN && guarded_intact(&out, 0) && cb3_stream_message_index(stream) == (index))

    /* Receiver: the wrong message, a modified one, a truncated one, errors. */
    CHECK_RESULT(cb3_stream_decrypt(rx, m1, sizeof m1, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len, &n), CB3_RESULT_DECRYPTION_FAILED);
    UNCHANGED(rx, 0);
    m0[3] ^= 4;
    CHECK_RESULT(cb3_stream_decrypt(rx, m0, sizeof m0, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len, &n), CB3_RESULT_DECRYPTION_FAILED);
    m0[3] ^= 4;
    CHECK_RESULT(cb3_stream_decrypt(rx, m0, sizeof m0, m0, 1, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len, &n), CB3_RESULT_DECRYPTION_FAILED);
    CHECK_RESULT(cb3_stream_decrypt(rx, m0, CB3_TAG_SIZE - 1, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len, &n),
                 CB3_RESULT_DECRYPTION_FAILED);
    CHECK_RESULT(cb3_stream_decrypt(rx, NULL, 0, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len, &n), CB3_RESULT_DECRYPTION_FAILED);
    CHECK_RESULT(cb3_stream_decrypt(rx, m0, sizeof m0, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr, 19, &n), CB3_RESULT_INSUFFICIENT_SIZE);
    CHECK_RESULT(cb3_stream_decrypt(rx, m0, sizeof m0, NULL, 0, CB3_OUTPUT_MODE_SHARED, NULL, 20, &n), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_stream_decrypt(rx, NULL, sizeof m0, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len, &n), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_stream_decrypt(rx, m0, sizeof m0, NULL, 3, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len, &n), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_stream_decrypt(NULL, m0, sizeof m0, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len, &n), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_stream_decrypt(rx, m0, huge, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len, &n), CB3_RESULT_INVALID_ARGUMENT);
    CHECK_RESULT(cb3_stream_decrypt(rx, m0, sizeof m0, m0, huge, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len, &n), CB3_RESULT_INVALID_ARGUMENT);
    CHECK_RESULT(cb3_stream_decrypt(rx, m0, sizeof m0, NULL, 0, CB3_OUTPUT_MODE_SHARED, m0 + 1, 20, &n), CB3_RESULT_OVERLAPPING_BUFFERS);
    CHECK_RESULT(cb3_stream_decrypt(rx, m0, sizeof m0, NULL, 0, CB3_OUTPUT_MODE_SHARED, m0 + 20, 20, &n), CB3_RESULT_OVERLAPPING_BUFFERS);
    UNCHANGED(rx, 0);
    CHECK_RESULT(cb3_stream_decrypt(rx, m0, sizeof m0, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len, &n), CB3_RESULT_OK);
    CHECK(n == 20 && memcmp(out.ptr, pt, 20) == 0 && cb3_stream_message_index(rx) == 1);
    guarded_reset(&out);
    n = NOT_WRITTEN;
    /* A replay of message 0 now fails. */
    CHECK_RESULT(cb3_stream_decrypt(rx, m0, sizeof m0, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len, &n), CB3_RESULT_DECRYPTION_FAILED);
    UNCHANGED(rx, 1);
    CHECK_RESULT(cb3_stream_decrypt(rx, m1, sizeof m1, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len, &n), CB3_RESULT_OK);
    CHECK(cb3_stream_message_index(rx) == 2);
    guarded_reset(&out);
    n = NOT_WRITTEN;

    /* Sender: every error leaves the index where it was. */
    CHECK_RESULT(cb3_stream_encrypt(tx, pt, 20, NULL, 0, out.ptr, 20 + CB3_TAG_SIZE - 1, &n),
                 CB3_RESULT_INSUFFICIENT_SIZE);
    CHECK_RESULT(cb3_stream_encrypt(tx, pt, 20, NULL, 0, NULL, 64, &n), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_stream_encrypt(tx, NULL, 0, NULL, 0, NULL, 0, &n), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_stream_encrypt(tx, NULL, 20, NULL, 0, out.ptr, out.len, &n), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_stream_encrypt(tx, pt, 20, NULL, 9, out.ptr, out.len, &n), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_stream_encrypt(NULL, pt, 20, NULL, 0, out.ptr, out.len, &n), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_stream_encrypt(tx, pt, huge, NULL, 0, out.ptr, out.len, &n), CB3_RESULT_INVALID_ARGUMENT);
    CHECK_RESULT(cb3_stream_encrypt(tx, pt, 20, pt, huge, out.ptr, out.len, &n), CB3_RESULT_INVALID_ARGUMENT);
    UNCHANGED(tx, 2);
    uint8_t arena[200];
    memset(arena, 0x11, sizeof arena);
    uint8_t snapshot[200];
    memcpy(snapshot, arena, sizeof arena);
    CHECK_RESULT(cb3_stream_encrypt(tx, arena + 10, 20, NULL, 0, arena + 11, 52, &n), CB3_RESULT_OVERLAPPING_BUFFERS);
    CHECK_RESULT(cb3_stream_encrypt(tx, arena + 10, 20, NULL, 0, arena, 52, &n), CB3_RESULT_OVERLAPPING_BUFFERS);
    CHECK_RESULT(cb3_stream_encrypt(tx, arena + 10, 20, arena + 100, 10, arena + 80, 52, &n),
                 CB3_RESULT_OVERLAPPING_BUFFERS);
    CHECK(memcmp(arena, snapshot, sizeof arena) == 0);
    UNCHANGED(tx, 2);
#undef UNCHANGED

    cb3_stream_free(tx);
    cb3_stream_free(rx);
    guarded_free(&out);
}

static void test_new_and_free(void)
{
    static char marker;
    cb3_stream *const untouched = (cb3_stream *)(void *)&marker;
    cb3_stream *stream = untouched;
    uint8_t buf[40] = {0};
    CHECK_RESULT(cb3_stream_new(NULL, 32, NONCE, 24, 0, &stream), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_stream_new(KEY, 32, NULL, 24, 0, &stream), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_stream_new(KEY, 32, NONCE, 24, 0, NULL), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_stream_new(NULL, 0, NONCE, 24, 0, &stream), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_stream_new(buf, 31, NONCE, 24, 0, &stream), CB3_RESULT_INVALID_KEY_LENGTH);
    CHECK_RESULT(cb3_stream_new(buf, 33, NONCE, 24, 0, &stream), CB3_RESULT_INVALID_KEY_LENGTH);
    CHECK_RESULT(cb3_stream_new(buf, SIZE_MAX, NONCE, 24, 0, &stream), CB3_RESULT_INVALID_KEY_LENGTH);
    CHECK_RESULT(cb3_stream_new(KEY, 32, buf, 0, 0, &stream), CB3_RESULT_INVALID_NONCE_LENGTH);
    CHECK_RESULT(cb3_stream_new(KEY, 32, buf, 12, 0, &stream), CB3_RESULT_INVALID_NONCE_LENGTH);
    CHECK_RESULT(cb3_stream_new(KEY, 32, buf, 25, 0, &stream), CB3_RESULT_INVALID_NONCE_LENGTH);
    CHECK_RESULT(cb3_stream_new(KEY, 32, NONCE, 24, UINT64_MAX, &stream), CB3_RESULT_INVALID_ARGUMENT);
    CHECK(stream == untouched);
    CHECK(cb3_stream_message_index(NULL) == 0);
    cb3_stream_free(NULL);
    /* The key and nonce are copied. */
    uint8_t key[32], nonce[24], c1[CB3_TAG_SIZE], c2[CB3_TAG_SIZE];
    memcpy(key, KEY, 32);
    memcpy(nonce, NONCE, 24);
    cb3_stream *s1 = new_stream(key, nonce, 5);
    memset(key, 0, 32);
    memset(nonce, 0, 24);
    cb3_stream *s2 = new_stream(KEY, NONCE, 5);
    CHECK_RESULT(cb3_stream_encrypt(s1, NULL, 0, NULL, 0, c1, sizeof c1, NULL), CB3_RESULT_OK);
    CHECK_RESULT(cb3_stream_encrypt(s2, NULL, 0, NULL, 0, c2, sizeof c2, NULL), CB3_RESULT_OK);
    CHECK(memcmp(c1, c2, sizeof c1) == 0);
    cb3_stream_free(s1);
    cb3_stream_free(s2);
}

/* A stream created at UINT64_MAX - 1 has exactly one message left. */
static void test_exhaustion(void)
{
    cb3_stream *tx = new_stream(KEY, NONCE, UINT64_MAX - 1), *rx = new_stream(KEY, NONCE, UINT64_MAX - 1);
    cb3_aead *aead = new_aead(KEY);
    const uint8_t pt[5] = {'l', 'a', 's', 't', '!'};
    uint8_t ct[5 + CB3_TAG_SIZE], expected[5 + CB3_TAG_SIZE], message_nonce[24];
    size_t n = NOT_WRITTEN;
    CHECK(cb3_stream_message_index(tx) == UINT64_MAX - 1);
    CHECK_RESULT(cb3_stream_encrypt(tx, pt, 5, NULL, 0, ct, sizeof ct, &n), CB3_RESULT_OK);
    CHECK(n == sizeof ct);
    nonce_for(message_nonce, NONCE, UINT64_MAX - 1);
    CHECK_RESULT(cb3_aead_encrypt(aead, message_nonce, 24, pt, 5, NULL, 0, expected, sizeof expected, NULL),
                 CB3_RESULT_OK);
    CHECK(memcmp(ct, expected, sizeof ct) == 0);
    CHECK(cb3_stream_message_index(tx) == UINT64_MAX);

    guarded out = guarded_alloc(64);
    for (int attempt = 0; attempt < 3; attempt++) {
        n = NOT_WRITTEN;
        CHECK_RESULT(cb3_stream_encrypt(tx, pt, 5, NULL, 0, out.ptr, out.len, &n), CB3_RESULT_STREAM_EXHAUSTED);
        CHECK_RESULT(cb3_stream_encrypt(tx, NULL, 0, NULL, 0, out.ptr, out.len, &n), CB3_RESULT_STREAM_EXHAUSTED);
        CHECK(n == NOT_WRITTEN && guarded_intact(&out, 0) && cb3_stream_message_index(tx) == UINT64_MAX);
    }

    /* A failed decrypt at the last index does not use it up. */
    n = NOT_WRITTEN;
    CHECK_RESULT(cb3_stream_decrypt(rx, expected, 4 + CB3_TAG_SIZE, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len, &n),
                 CB3_RESULT_DECRYPTION_FAILED);
    CHECK(cb3_stream_message_index(rx) == UINT64_MAX - 1);
    CHECK_RESULT(cb3_stream_decrypt(rx, ct, sizeof ct, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len, &n), CB3_RESULT_OK);
    CHECK(n == 5 && memcmp(out.ptr, pt, 5) == 0 && cb3_stream_message_index(rx) == UINT64_MAX);
    guarded_reset(&out);
    n = NOT_WRITTEN;
    CHECK_RESULT(cb3_stream_decrypt(rx, ct, sizeof ct, NULL, 0, CB3_OUTPUT_MODE_SHARED, out.ptr, out.len, &n), CB3_RESULT_STREAM_EXHAUSTED);
    CHECK(n == NOT_WRITTEN && guarded_intact(&out, 0) && cb3_stream_message_index(rx) == UINT64_MAX);

    guarded_free(&out);
    cb3_stream_free(tx);
    cb3_stream_free(rx);
    cb3_aead_free(aead);
}

/* One stream shared by several threads: every message gets its own index. */
enum { THREADS = 4, PER_THREAD = 100, TOTAL = THREADS * PER_THREAD, MSG = 8 };

typedef struct {
    cb3_stream *stream;
    uint8_t (*out)[MSG + CB3_TAG_SIZE];
    int failures;
} worker_arg;

static void *worker(void *p)
{
    worker_arg *arg = (worker_arg *)p;
    const uint8_t zeros[MSG] = {0};
    for (int i = 0; i < PER_THREAD; i++)
        if (cb3_stream_encrypt(arg->stream, zeros, MSG, NULL, 0, arg->out[i], MSG + CB3_TAG_SIZE, NULL) !=
            CB3_RESULT_OK)
            arg->failures++;
    return NULL;
}

static void test_threads(void)
{
    static uint8_t produced[TOTAL][MSG + CB3_TAG_SIZE], expected[TOTAL][MSG + CB3_TAG_SIZE];
    static int seen[TOTAL];
    cb3_stream *stream = new_stream(KEY, NONCE, 0);
    pthread_t threads[THREADS];
    worker_arg args[THREADS];
    for (int t = 0; t < THREADS; t++) {
        args[t].stream = stream;
        args[t].out = &produced[t * PER_THREAD];
        args[t].failures = 0;
        CHECK(pthread_create(&threads[t], NULL, worker, &args[t]) == 0);
    }
    for (int t = 0; t < THREADS; t++) {
        CHECK(pthread_join(threads[t], NULL) == 0);
        CHECK(args[t].failures == 0);
    }
    CHECK(cb3_stream_message_index(stream) == TOTAL);

    /* Each produced message is the encryption under exactly one index. */
    cb3_aead *aead = new_aead(KEY);
    const uint8_t zeros[MSG] = {0};
    for (uint64_t i = 0; i < TOTAL; i++) {
        uint8_t message_nonce[24];
        nonce_for(message_nonce, NONCE, i);
        CHECK_RESULT(cb3_aead_encrypt(aead, message_nonce, 24, zeros, MSG, NULL, 0, expected[i], sizeof expected[i],
                                      NULL),
                     CB3_RESULT_OK);
    }
    int unmatched = 0;
    for (int p = 0; p < TOTAL; p++) {
        int found = -1;
        for (int i = 0; i < TOTAL && found < 0; i++)
            if (memcmp(produced[p], expected[i], sizeof expected[i]) == 0)
                found = i;
        if (found < 0 || seen[found]++)
            unmatched++;
    }
    CHECK(unmatched == 0);
    cb3_aead_free(aead);
    cb3_stream_free(stream);
}

int main(void)
{
    pattern(KEY, sizeof KEY, 21);
    pattern(NONCE, sizeof NONCE, 22);
    test_schedule();
    test_in_place_and_resume();
    test_failures_do_not_advance();
    test_new_and_free();
    test_exhaustion();
    test_threads();
    return check_summary("test_stream");
}
