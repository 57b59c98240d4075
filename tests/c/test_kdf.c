/* cb3_argon2id and cb3_passphrase_*: a known answer, the fault detail of
 * every bad parameter, the seal/open round trip, limits refused before any
 * allocation, an interrupt, and nothing written on failure. */
#include <time.h>

#include "check.h"

/* "somesaltsomesalt", without a terminating NUL. */
static const uint8_t SALT[16] = {0x73, 0x6f, 0x6d, 0x65, 0x73, 0x61, 0x6c, 0x74, 0x73, 0x6f, 0x6d, 0x65, 0x73, 0x61, 0x6c, 0x74};
static const uint8_t KEY[CB3_KEY_SIZE] = {0x5a, 0x5a, 0x5a, 0x5a};

static int all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

static void test_argon2id(void)
{
    /* argon2-cffi: hash_secret_raw(b"password", b"somesaltsomesalt", time_cost=2,
     * memory_cost=64, parallelism=2, hash_len=24, type=Type.ID). */
    static const uint8_t expected[24] = {0x7f, 0xb3, 0xf1, 0xb1, 0x24, 0x3d, 0xe0, 0x1a, 0xa6, 0x79, 0x36, 0xf6,
                                         0xf3, 0x21, 0x3c, 0xda, 0x7f, 0x30, 0x26, 0x6a, 0x4d, 0xeb, 0x23, 0x9b};
    uint8_t out[24] = {0};
    cb3_passphrase_fault fault;
    CHECK_RESULT(cb3_argon2id((const uint8_t *)"password", 8, SALT, 16, 2, 64, 2, NULL, NULL, out, 24, &fault),
                 CB3_RESULT_OK);
    CHECK(memcmp(out, expected, 24) == 0);

    uint8_t none[32] = {0};
    CHECK_RESULT(cb3_argon2id(NULL, 0, SALT, 15, 1, 64, 1, NULL, NULL, none, 32, &fault), CB3_RESULT_INVALID_ARGUMENT);
    CHECK(fault.field == CB3_PASSPHRASE_FIELD_SALT && fault.value == 15 && fault.limit == 16);
    CHECK_RESULT(cb3_argon2id(NULL, 0, SALT, 16, 0, 64, 1, NULL, NULL, none, 32, &fault), CB3_RESULT_INVALID_ARGUMENT);
    CHECK(fault.field == CB3_PASSPHRASE_FIELD_TIME_COST && fault.value == 0);
    CHECK_RESULT(cb3_argon2id(NULL, 0, SALT, 16, 1, 31, 4, NULL, NULL, none, 32, &fault), CB3_RESULT_INVALID_ARGUMENT);
    CHECK(fault.field == CB3_PASSPHRASE_FIELD_MEMORY_COST && fault.value == 31 && fault.limit == 32);
    CHECK_RESULT(cb3_argon2id(NULL, 0, SALT, 16, 1, 4096, 256, NULL, NULL, none, 32, &fault),
                 CB3_RESULT_INVALID_ARGUMENT);
    CHECK(fault.field == CB3_PASSPHRASE_FIELD_PARALLELISM && fault.value == 256 && fault.limit == 255);
    CHECK_RESULT(cb3_argon2id(NULL, 0, SALT, 16, 1, 64, 1, NULL, NULL, none, 3, &fault), CB3_RESULT_INVALID_ARGUMENT);
    CHECK(fault.field == CB3_PASSPHRASE_FIELD_OUTPUT_LENGTH && fault.value == 3 && fault.limit == 4);
    CHECK_RESULT(cb3_argon2id(NULL, 0, SALT, 16, 1, 64, 1, NULL, NULL, NULL, 32, NULL), CB3_RESULT_NULL_PARAMETER);
    CHECK(all_zero(none, sizeof none));
}

static int stop_now(void *arg)
{
    int *calls = (int *)arg;
    return ++*calls >= 3;
}

static void test_interrupt(void)
{
    uint8_t out[32] = {0};
    int calls = 0;
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    CHECK_RESULT(cb3_argon2id((const uint8_t *)"pw", 2, SALT, 16, 50, 65536, 1, stop_now, &calls, out, 32, NULL),
                 CB3_RESULT_INTERRUPTED);
    clock_gettime(CLOCK_MONOTONIC, &end);
    double seconds = (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
    CHECK(calls == 3);
    CHECK(seconds < 1.0);
    CHECK(all_zero(out, sizeof out));
}

static void test_passphrase(void)
{
    uint8_t header[CB3_PASSPHRASE_MAX_HEADER_SIZE];
    size_t n = 0, size = 0;
    cb3_passphrase_fault fault;
    CHECK_RESULT(cb3_passphrase_seal((const uint8_t *)"correct horse", 13, KEY, CB3_KEY_SIZE,
                                     CB3_PASSPHRASE_PURPOSE_FILE, 1, 64, 2, SALT, CB3_PASSPHRASE_SALT_SIZE, NULL, NULL,
                                     header, sizeof header, &n, &fault),
                 CB3_RESULT_OK);
    CHECK(n == CB3_PASSPHRASE_HEADER_SIZE);
    CHECK(memcmp(header, "CB3PASS\x01\x01\x01", 10) == 0);
    CHECK_RESULT(cb3_passphrase_header_size(header, CB3_PASSPHRASE_PREFIX_SIZE, &size, &fault), CB3_RESULT_OK);
    CHECK(size == n);

    uint8_t key[CB3_KEY_SIZE] = {0};
    CHECK_RESULT(cb3_passphrase_open(header, n, (const uint8_t *)"correct horse", 13, CB3_PASSPHRASE_PURPOSE_FILE,
                                     NULL, NULL, NULL, key, sizeof key, &fault),
                 CB3_RESULT_OK);
    CHECK(memcmp(key, KEY, sizeof key) == 0);

    uint8_t other[CB3_KEY_SIZE] = {0};
    CHECK_RESULT(cb3_passphrase_open(header, n, (const uint8_t *)"correct horsE", 13, CB3_PASSPHRASE_PURPOSE_FILE,
                                     NULL, NULL, NULL, other, sizeof other, &fault),
                 CB3_RESULT_DECRYPTION_FAILED);
    CHECK(all_zero(other, sizeof other));

    /* 4 TiB claimed: refused by the limit, before any allocation. */
    header[14] = header[15] = header[16] = header[17] = 0xff;
    CHECK_RESULT(cb3_passphrase_open(header, n, (const uint8_t *)"correct horse", 13, CB3_PASSPHRASE_PURPOSE_FILE,
                                     NULL, NULL, NULL, other, sizeof other, &fault),
                 CB3_RESULT_LIMIT_EXCEEDED);
    CHECK(fault.field == CB3_PASSPHRASE_FIELD_MEMORY_COST && fault.value == 0xffffffffu &&
          fault.limit == CB3_PASSPHRASE_MAX_MEMORY_COST);
    cb3_passphrase_limits tight = {.max_time_cost = 1, .max_memory_cost = 64, .max_parallelism = 1};
    header[14] = header[15] = header[16] = 0;
    header[17] = 64;
    CHECK_RESULT(cb3_passphrase_open(header, n, (const uint8_t *)"correct horse", 13, CB3_PASSPHRASE_PURPOSE_FILE,
                                     &tight, NULL, NULL, other, sizeof other, &fault),
                 CB3_RESULT_LIMIT_EXCEEDED);
    CHECK(fault.field == CB3_PASSPHRASE_FIELD_PARALLELISM && fault.value == 2 && fault.limit == 1);
    CHECK_RESULT(cb3_passphrase_open(header, n, (const uint8_t *)"correct horse", 13, CB3_PASSPHRASE_PURPOSE_KEY_FILE,
                                     NULL, NULL, NULL, other, sizeof other, &fault),
                 CB3_RESULT_INVALID_HEADER);
    CHECK(fault.field == CB3_PASSPHRASE_FIELD_PURPOSE && fault.value == 1 && fault.limit == 2);
    CHECK(all_zero(other, sizeof other));
}

int main(void)
{
    test_argon2id();
    test_interrupt();
    test_passphrase();
    return check_summary("test_kdf");
}
