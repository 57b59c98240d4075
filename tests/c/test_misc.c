/* cb3_result_message, cb3_version, cb3_simd_backend, cb3_panic_boundary_check, cb3_cpu_maker, cb3_cpu_model, cb3_threads_count, cb3_object_size and the header's
 * constants and version macros. */
#include <stdint.h>

#include "check.h"

static const cb3_result ALL[] = {
    CB3_RESULT_OK,
    CB3_RESULT_NULL_PARAMETER,
    CB3_RESULT_INVALID_KEY_LENGTH,
    CB3_RESULT_INVALID_NONCE_LENGTH,
    CB3_RESULT_INVALID_TAG_LENGTH,
    CB3_RESULT_INSUFFICIENT_SIZE,
    CB3_RESULT_OVERLAPPING_BUFFERS,
    CB3_RESULT_DECRYPTION_FAILED,
    CB3_RESULT_STREAM_EXHAUSTED,
    CB3_RESULT_INVALID_ARGUMENT,
    CB3_RESULT_PANIC,
    CB3_RESULT_COUNTER_OVERFLOW,
    CB3_RESULT_IO_ERROR,
    CB3_RESULT_OUT_OF_MEMORY,
    CB3_RESULT_FORKED,
    CB3_RESULT_INTERRUPTED,
    CB3_RESULT_INVALID_ROUNDS,
    CB3_RESULT_INVALID_COUNTER,
    CB3_RESULT_INVALID_POSITION,
    CB3_RESULT_INVALID_UTF8,
    CB3_RESULT_INVALID_HEADER,
};
#define N_ALL (sizeof ALL / sizeof ALL[0])

static void test_result_codes(void)
{
    /* The numbering is ABI: 0, then 3000 upwards. */
    CHECK(CB3_RESULT_OK == 0);
    for (size_t i = 1; i < N_ALL; i++)
        CHECK((unsigned)ALL[i] == 3000 + (i - 1));

    const char *messages[N_ALL];
    for (size_t i = 0; i < N_ALL; i++) {
        messages[i] = cb3_result_message(ALL[i]);
        CHECK(messages[i] != NULL && strlen(messages[i]) > 0);
        CHECK(cb3_result_message(ALL[i]) == messages[i]); /* static */
        for (size_t j = 0; j < i; j++)
            CHECK(strcmp(messages[i], messages[j]) != 0);
    }
    CHECK(strcmp(cb3_result_message(CB3_RESULT_OK), "ok") == 0);
    CHECK(strstr(cb3_result_message(CB3_RESULT_DECRYPTION_FAILED), "decryption failed") != NULL);

    /* Any other integer: a message of its own, never undefined behaviour. */
    const unsigned unknown[] = {1, 2, 2999, 3020, 3021, 7000, 65535, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFFu};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        const char *m = cb3_result_message(unknown[i]);
        CHECK(m != NULL && strcmp(m, "unknown cb3_result code") == 0);
    }
    CHECK(strcmp(cb3_result_message((unsigned)-1), "unknown cb3_result code") == 0);
}

static void test_version(void)
{
    char expected[64];
    snprintf(expected, sizeof expected, "%d.%d.%d", CB3_VERSION_MAJOR, CB3_VERSION_MINOR, CB3_VERSION_PATCH);
    const char *version = cb3_version();
    CHECK(version != NULL);
    CHECK(strcmp(version, expected) == 0);
    if (version != NULL && strcmp(version, expected) != 0)
        printf("    cb3_version() = \"%s\", header macros = \"%s\"\n", version, expected);
    CHECK(cb3_version() == version);
}

static void test_simd_backend(void)
{
    static const char *const KNOWN[] = {"avx512", "avx2", "sse4.1", "sse2", "neon", "portable"};
    const char *backend = cb3_simd_backend();
    int known = 0;
    CHECK(backend != NULL);
    for (size_t i = 0; backend != NULL && i < sizeof KNOWN / sizeof KNOWN[0]; i++)
        known |= strcmp(backend, KNOWN[i]) == 0;
    CHECK(known);
    CHECK(cb3_simd_backend() == backend || strcmp(cb3_simd_backend(), backend) == 0);
    printf("simd backend: %s\n", backend ? backend : "(null)");
}

static void test_cache_tuning(void)
{
    const char *tuning = cb3_cache_tuning();
    CHECK(tuning != NULL);
    CHECK(tuning != NULL && strstr(tuning, "L2 ") != NULL && strstr(tuning, "; seal piece ") != NULL && strstr(tuning, ", open piece ") != NULL);
    CHECK(cb3_cache_tuning() == tuning); /* computed once */
    printf("cache tuning: %s\n", tuning ? tuning : "(null)");
}

static void test_panic_boundary(void)
{
    /* Twice: the first unwind leaves nothing behind that stops the second. */
    CHECK(cb3_panic_boundary_check() == CB3_RESULT_PANIC);
    CHECK(cb3_panic_boundary_check() == CB3_RESULT_PANIC);
}

static void test_constants(void)
{
    CHECK(CB3_KEY_SIZE == 32);
    CHECK(CB3_NONCE_SIZE == 24);
    CHECK(CB3_TAG_SIZE == 32);
    /* Usable in constant expressions, e.g. array sizes. */
    uint8_t tag[CB3_TAG_SIZE];
    CHECK(sizeof tag == 32);
}

static void test_cpu_and_threads(void)
{
    const char *maker = cb3_cpu_maker();
    CHECK(maker != NULL);
    CHECK(strcmp(maker, "Intel") == 0 || strcmp(maker, "AMD") == 0 || strcmp(maker, "other") == 0);
    const char *model = cb3_cpu_model();
    CHECK(model != NULL && model[0] != '\0');
    /* 0 is every usable core; any other request is capped at them. */
    size_t cores = cb3_threads_count(0);
    CHECK(cores >= 1);
    CHECK(cb3_threads_count(1) == 1);
    CHECK(cb3_threads_count(SIZE_MAX) == cores);
    CHECK(cb3_threads_count(cores + 1) == cores);
}

static void test_object_size(void)
{
    /* Each kind's allocation: at least its key (or a BLAKE3 hasher's chaining
     * value stack, 54 x 32 bytes) and a header; nothing for other values. */
    const unsigned int kinds[] = {CB3_OBJECT_KIND_AEAD, CB3_OBJECT_KIND_STREAM, CB3_OBJECT_KIND_BLAKE3,
                                  CB3_OBJECT_KIND_CHACHA, CB3_OBJECT_KIND_CHUNKED};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        CHECK(cb3_object_size(kinds[i]) >= CB3_KEY_SIZE + 8);
    CHECK(cb3_object_size(CB3_OBJECT_KIND_BLAKE3) >= 54 * 32);
    CHECK(cb3_object_size(CB3_OBJECT_KIND_CHUNKED + 1) == 0);
    CHECK(cb3_object_size(UINT32_MAX) == 0);
}

int main(void)
{
    test_cpu_and_threads();
    test_object_size();
    test_result_codes();
    test_version();
    test_simd_backend();
    test_cache_tuning();
    test_panic_boundary();
    test_constants();
    return check_summary("test_misc");
}
