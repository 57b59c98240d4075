/* cb3_blake3_*: known answers from tests/data/blake3_test_vectors.json (all
 * three modes, extended output, seek), the incremental hasher (split
 * updates, finalize twice, copy, reset, count), memory-mapped files and
 * their errno reporting, multi-threaded hashing (own pool and
 * CB3_BLAKE3_AUTO) against single-threaded, a hasher shared by several
 * threads, and every error path (nothing written, state unchanged). */
#define _POSIX_C_SOURCE 200809L /* mkstemp, write, unlink */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#include "check.h"

/* The official test vectors: input byte i is i % 251; 131 output bytes. */
#define XOF_LEN 131
static const char KEY[] = "whats the Elvish word for friend"; /* 32 bytes */
static const char CONTEXT[] = "BLAKE3 2019-12-27 16:29:52 test vectors context";
#define CONTEXT_LEN (sizeof CONTEXT - 1)
static const uint8_t *KEY_BYTES = (const uint8_t *)KEY;
static const uint8_t *CONTEXT_BYTES = (const uint8_t *)CONTEXT;

struct vector {
    size_t len;
    const char *hash, *keyed_hash, *derive_key;
};
static const struct vector VECTORS[] = {
    {0,
     "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262e00f03e7b69af26b7faaf09fcd333050338ddfe085b8cc869ca98b206c08243a"
     "26f5487789e8f660afe6c99ef9e0c52b92e7393024a80459cf91f476f9ffdbda7001c22e159b402631f277ca96f2defdf1078282314e763699a31c5363165421cce14d",
     "92b2b75604ed3c761f9d6f62392c8a9227ad0ea3f09573e783f1498a4ed60d26b18171a2f22a4b94822c701f107153dba24918c4bae4d2945c20ece13387627d"
     "3b73cbf97b797d5e59948c7ef788f54372df45e45e4293c7dc18c1d41144a9758be58960856be1eabbe22c2653190de560ca3b2ac4aa692a9210694254c371e851bc8f",
     "2cc39783c223154fea8dfb7c1b1660f2ac2dcbd1c1de8277b0b0dd39b7e50d7d905630c8be290dfcf3e6842f13bddd573c098c3f17361f1f206b8cad9d088aa4"
     "a3f746752c6b0ce6a83b0da81d59649257cdf8eb3e9f7d4998e41021fac119deefb896224ac99f860011f73609e6e0e4540f93b273e56547dfd3aa1a035ba6689d89a0",
    },
    {1,
     "2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213c3a6cb8bf623e20cdb535f8d1a5ffb86342d9c0b64aca3bce1d31f60adfa137b"
     "358ad4d79f97b47c3d5e79f179df87a3b9776ef8325f8329886ba42f07fb138bb502f4081cbcec3195c5871e6c23e2cc97d3c69a613eba131e5f1351f3f1da786545e5",
     "6d7878dfff2f485635d39013278ae14f1454b8c0a3a2d34bc1ab38228a80c95b6568c0490609413006fbd428eb3fd14e7756d90f73a4725fad147f7bf70fd61c"
     "4e0cf7074885e92b0e3f125978b4154986d4fb202a3f331a3fb6cf349a3a70e49990f98fe4289761c8602c4e6ab1138d31d3b62218078b2f3ba9a88e1d08d0dd4cea11",
     "b3e2e340a117a499c6cf2398a19ee0d29cca2bb7404c73063382693bf66cb06c5827b91bf889b6b97c5477f535361caefca0b5d8c4746441c576171119331589"
     "50670f9aa8a05d791daae10ac683cbef8faf897c84e6114a59d2173c3f417023a35d6983f2c7dfa57e7fc559ad751dbfb9ffab39c2ef8c4aafebc9ae973a64f0c76551",
    },
    {1025,
     "d00278ae47eb27b34faecf67b4fe263f82d5412916c1ffd97c8cb7fb814b8444f4c4a22b4b399155358a994e52bf255de60035742ec71bd08ac275a1b51cc6bf"
     "e332b0ef84b409108cda080e6269ed4b3e2c3f7d722aa4cdc98d16deb554e5627be8f955c98e1d5f9565a9194cad0c4285f93700062d9595adb992ae68ff12800ab67a",
     "357dc55de0c7e382c900fd6e320acc04146be01db6a8ce7210b7189bd664ea69362396b77fdc0d2634a552970843722066c3c15902ae5097e00ff53f1e116f1c"
     "d5352720113a837ab2452cafbde4d54085d9cf5d21ca613071551b25d52e69d6c81123872b6f19cd3bc1333edf0c52b94de23ba772cf82636cff4542540a7738d5b930",
     "effaa245f065fbf82ac186839a249707c3bddf6d3fdda22d1b95a3c970379bcb5d31013a167509e9066273ab6e2123bc835b408b067d88f96addb550d96b6852"
     "dad38e320b9d940f86db74d398c770f462118b35d2724efa13da97194491d96dd37c3c09cbef665953f2ee85ec83d88b88d11547a6f911c8217cca46defa2751e7f3ad",
    },
    {3072,
     "b98cb0ff3623be03326b373de6b9095218513e64f1ee2edd2525c7ad1e5cffd29a3f6b0b978d6608335c09dc94ccf682f9951cdfc501bfe47b9c9189a6fc7b40"
     "4d120258506341a6d802857322fbd20d3e5dae05b95c88793fa83db1cb08e7d8008d1599b6209d78336e24839724c191b2a52a80448306e0daa84a3fdb566661a37e11",
     "044a0e7b172a312dc02a4c9a818c036ffa2776368d7f528268d2e6b5df19177022f302d0529e4174cc507c463671217975e81dab02b8fdeb0d7ccc7568dd2257"
     "4c783a76be215441b32e91b9a904be8ea81f7a0afd14bad8ee7c8efc305ace5d3dd61b996febe8da4f56ca0919359a7533216e2999fc87ff7d8f176fbecb3d6f34278b",
     "050df97f8c2ead654d9bb3ab8c9178edcd902a32f8495949feadcc1e0480c46b3604131bbd6e3ba573b6dd682fa0a63e5b165d39fc43a625d00207607a2bfeb6"
     "5ff1d29292152e26b298868e3b87be95d6458f6f2ce6118437b632415abe6ad522874bcd79e4030a5e7bad2efa90a7a7c67e93f0a18fb28369d0a9329ab5c24134ccb0",
    },
    {31744,
     "62b6960e1a44bcc1eb1a611a8d6235b6b4b78f32e7abc4fb4c6cdcce94895c47860cc51f2b0c28a7b77304bd55fe73af663c02d3f52ea053ba43431ca5bab7bf"
     "ea2f5e9d7121770d88f70ae9649ea713087d1914f7f312147e247f87eb2d4ffef0ac978bf7b6579d57d533355aa20b8b77b13fd09748728a5cc327a8ec470f4013226f",
     "efa53b389ab67c593dba624d898d0f7353ab99e4ac9d42302ee64cbf9939a4193a7258db2d9cd32a7a3ecfce46144114b15c2fcb68a618a976bd74515d47be08"
     "b628be420b5e830fade7c080e351a076fbc38641ad80c736c8a18fe3c66ce12f95c61c2462a9770d60d0f77115bbcd3782b593016a4e728d4c06cee4505cb0c08a42ec",
     "39772aef80e0ebe60596361e45b061e8f417429d529171b6764468c22928e28e9759adeb797a3fbf771b1bcea30150a020e317982bf0d6e7d14dd9f064bc1102"
     "5c25f31e81bd78a921db0174f03dd481d30e93fd8e90f8b2fee209f849f2d2a52f31719a490fb0ba7aea1e09814ee912eba111a9fde9d5c274185f7bae8ba85d300a2b",
    },
};
#define N_VECTORS (sizeof VECTORS / sizeof VECTORS[0])

enum mode { PLAIN, KEYED, DERIVE };

static uint8_t *vector_input(size_t len)
{
    uint8_t *input = (uint8_t *)xmalloc(len);
    for (size_t i = 0; i < len; i++)
        input[i] = (uint8_t)(i % 251);
    return input;
}

static const char *expected_hex(const struct vector *v, enum mode mode)
{
    return mode == PLAIN ? v->hash : mode == KEYED ? v->keyed_hash : v->derive_key;
}

/* A sentinel that no constructor may write on failure. */
static cb3_blake3 *const UNTOUCHED = (cb3_blake3 *)(uintptr_t)0x5A5A5A50u;

static cb3_blake3 *new_hasher(enum mode mode, size_t max_threads)
{
    cb3_blake3 *hasher = NULL;
    cb3_result r = mode == PLAIN   ? cb3_blake3_new(max_threads, &hasher)
                   : mode == KEYED ? cb3_blake3_new_keyed(KEY_BYTES, 32, max_threads, &hasher)
                                   : cb3_blake3_new_derive_key(CONTEXT_BYTES, CONTEXT_LEN, max_threads, &hasher);
    if (!CHECK_RESULT(r, CB3_RESULT_OK) || !CHECK(hasher != NULL))
        exit(check_summary("test_hash"));
    return hasher;
}

/* hasher's XOF_LEN-byte output equals `expected` (and the 32-byte digest is its prefix). */
static void check_output(const cb3_blake3 *hasher, const uint8_t *expected)
{
    guarded out = guarded_alloc(XOF_LEN);
    CHECK_RESULT(cb3_blake3_finalize(hasher, 0, out.ptr, XOF_LEN), CB3_RESULT_OK);
    CHECK(memcmp(out.ptr, expected, XOF_LEN) == 0 && guarded_intact(&out, XOF_LEN));
    guarded_reset(&out);
    CHECK_RESULT(cb3_blake3_finalize(hasher, 0, out.ptr, CB3_BLAKE3_OUT_LEN), CB3_RESULT_OK);
    CHECK(memcmp(out.ptr, expected, 32) == 0 && guarded_intact(&out, 32));
    guarded_free(&out);
}

static void test_one_shot_vectors(void)
{
    for (size_t i = 0; i < N_VECTORS; i++) {
        const struct vector *v = &VECTORS[i];
        uint8_t *input = vector_input(v->len);
        for (int m = PLAIN; m <= DERIVE; m++) {
            uint8_t expected[XOF_LEN];
            CHECK(from_hex(expected, expected_hex(v, (enum mode)m)) == XOF_LEN);
            const size_t lens[] = {XOF_LEN, 32, 1, 0};
            for (size_t j = 0; j < sizeof lens / sizeof lens[0]; j++) {
                guarded out = guarded_alloc(lens[j]);
                cb3_result r = m == PLAIN ? cb3_blake3_hash(input, v->len, out.ptr, lens[j])
                               : m == KEYED
                                   ? cb3_blake3_keyed_hash(KEY_BYTES, 32, input, v->len, out.ptr, lens[j])
                                   : cb3_blake3_derive_key(CONTEXT_BYTES, CONTEXT_LEN, input, v->len, out.ptr, lens[j]);
                CHECK_RESULT(r, CB3_RESULT_OK);
                if (!CHECK(memcmp(out.ptr, expected, lens[j]) == 0 && guarded_intact(&out, lens[j])))
                    printf("    vector %zu, mode %d, out_len %zu\n", v->len, m, lens[j]);
                guarded_free(&out);
            }
        }
        free(input);
    }
    /* An empty input may be NULL. */
    uint8_t expected[XOF_LEN], out[32];
    from_hex(expected, VECTORS[0].hash);
    CHECK_RESULT(cb3_blake3_hash(NULL, 0, out, 32), CB3_RESULT_OK);
    CHECK(memcmp(out, expected, 32) == 0);
    from_hex(expected, VECTORS[0].keyed_hash);
    CHECK_RESULT(cb3_blake3_keyed_hash(KEY_BYTES, 32, NULL, 0, out, 32), CB3_RESULT_OK);
    CHECK(memcmp(out, expected, 32) == 0);
    from_hex(expected, VECTORS[0].derive_key);
    CHECK_RESULT(cb3_blake3_derive_key(CONTEXT_BYTES, CONTEXT_LEN, NULL, 0, out, 32), CB3_RESULT_OK);
    CHECK(memcmp(out, expected, 32) == 0);
    /* An empty output may be NULL. */
    CHECK_RESULT(cb3_blake3_hash(out, 32, NULL, 0), CB3_RESULT_OK);
}

static void test_incremental_vectors(void)
{
    for (size_t i = 0; i < N_VECTORS; i++) {
        const struct vector *v = &VECTORS[i];
        uint8_t *input = vector_input(v->len);
        for (int m = PLAIN; m <= DERIVE; m++) {
            uint8_t expected[XOF_LEN];
            from_hex(expected, expected_hex(v, (enum mode)m));
            cb3_blake3 *hasher = new_hasher((enum mode)m, 1);
            CHECK(cb3_blake3_count(hasher) == 0);
            /* Uneven pieces: 1, 2, 3, ... bytes (the result does not depend on the split). */
            size_t done = 0;
            for (size_t step = 1; done < v->len; step++) {
                size_t take = v->len - done < step ? v->len - done : step;
                CHECK_RESULT(cb3_blake3_update(hasher, input + done, take), CB3_RESULT_OK);
                done += take;
            }
            CHECK_RESULT(cb3_blake3_update(hasher, NULL, 0), CB3_RESULT_OK);
            CHECK(cb3_blake3_count(hasher) == v->len);
            check_output(hasher, expected);
            check_output(hasher, expected); /* finalize leaves the hasher unchanged */

            /* Seek into the extended output. */
            const uint64_t seeks[] = {1, 31, 32, 63, 64, 65, 100, 130, 131};
            for (size_t j = 0; j < sizeof seeks / sizeof seeks[0]; j++) {
                size_t len = XOF_LEN - (size_t)seeks[j];
                guarded out = guarded_alloc(len);
                CHECK_RESULT(cb3_blake3_finalize(hasher, seeks[j], out.ptr, len), CB3_RESULT_OK);
                CHECK(memcmp(out.ptr, expected + seeks[j], len) == 0 && guarded_intact(&out, len));
                guarded_free(&out);
            }

            /* reset: back to the empty input of the same mode and key/context. */
            uint8_t empty[XOF_LEN];
            from_hex(empty, expected_hex(&VECTORS[0], (enum mode)m));
            CHECK_RESULT(cb3_blake3_reset(hasher), CB3_RESULT_OK);
            CHECK(cb3_blake3_count(hasher) == 0);
            check_output(hasher, empty);
            CHECK_RESULT(cb3_blake3_update(hasher, input, v->len), CB3_RESULT_OK);
            check_output(hasher, expected);
            cb3_blake3_free(hasher);
        }
        free(input);
    }
}

static void test_seek_far(void)
{
    /* Output bytes at a large offset equal the same bytes read from the start of that block. */
    cb3_blake3 *hasher = new_hasher(PLAIN, 1);
    CHECK_RESULT(cb3_blake3_update(hasher, (const uint8_t *)"abc", 3), CB3_RESULT_OK);
    uint8_t a[100], b[200];
    const uint64_t far = (UINT64_C(1) << 40) + 64 * 3;
    CHECK_RESULT(cb3_blake3_finalize(hasher, far + 50, a, sizeof a), CB3_RESULT_OK);
    CHECK_RESULT(cb3_blake3_finalize(hasher, far, b, sizeof b), CB3_RESULT_OK);
    CHECK(memcmp(a, b + 50, sizeof a) == 0);
    /* The very end of the 64-bit output space. */
    CHECK_RESULT(cb3_blake3_finalize(hasher, UINT64_MAX - 64, b, 64), CB3_RESULT_OK);
    CHECK_RESULT(cb3_blake3_finalize(hasher, UINT64_MAX - 32, a, 32), CB3_RESULT_OK);
    CHECK(memcmp(a, b + 32, 32) == 0);
    cb3_blake3_free(hasher);
}

static void test_copy(void)
{
    const struct vector *v = &VECTORS[N_VECTORS - 1];
    uint8_t *input = vector_input(v->len);
    for (int m = PLAIN; m <= DERIVE; m++) {
        uint8_t expected[XOF_LEN], prefix[XOF_LEN];
        from_hex(expected, expected_hex(v, (enum mode)m));
        cb3_blake3 *hasher = new_hasher((enum mode)m, 1);
        CHECK_RESULT(cb3_blake3_update(hasher, input, 1000), CB3_RESULT_OK);
        CHECK_RESULT(cb3_blake3_finalize(hasher, 0, prefix, XOF_LEN), CB3_RESULT_OK);
        cb3_blake3 *copy = UNTOUCHED;
        CHECK_RESULT(cb3_blake3_copy(hasher, &copy), CB3_RESULT_OK);
        CHECK(copy != NULL && copy != UNTOUCHED && copy != hasher);
        CHECK(cb3_blake3_count(copy) == 1000);
        /* Independent: the original goes on, the copy still has the prefix. */
        CHECK_RESULT(cb3_blake3_update(hasher, input + 1000, v->len - 1000), CB3_RESULT_OK);
        check_output(hasher, expected);
        check_output(copy, prefix);
        CHECK(cb3_blake3_count(copy) == 1000);
        CHECK_RESULT(cb3_blake3_update(copy, input + 1000, v->len - 1000), CB3_RESULT_OK);
        cb3_blake3_free(hasher);
        check_output(copy, expected); /* outlives its original */
        /* reset of a copy: the original's mode and key, not an unkeyed hasher. */
        uint8_t empty[XOF_LEN];
        from_hex(empty, expected_hex(&VECTORS[0], (enum mode)m));
        CHECK_RESULT(cb3_blake3_reset(copy), CB3_RESULT_OK);
        check_output(copy, empty);
        cb3_blake3_free(copy);
    }
    free(input);
}

#define BIG (1u << 20)

static void test_threads(void)
{
    uint8_t *input = (uint8_t *)xmalloc(BIG + 12345);
    pattern(input, BIG + 12345, 7);
    const size_t lens[] = {BIG, BIG + 12345, CB3_BLAKE3_PARALLEL_MIN, CB3_BLAKE3_PARALLEL_MIN - 1};
    for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
        for (int m = PLAIN; m <= DERIVE; m++) {
            uint8_t single[XOF_LEN];
            cb3_blake3 *reference = new_hasher((enum mode)m, 1);
            CHECK_RESULT(cb3_blake3_update(reference, input, lens[l]), CB3_RESULT_OK);
            CHECK_RESULT(cb3_blake3_finalize(reference, 0, single, XOF_LEN), CB3_RESULT_OK);
            cb3_blake3_free(reference);
            if (m == PLAIN) {
                uint8_t one_shot[XOF_LEN];
                CHECK_RESULT(cb3_blake3_hash(input, lens[l], one_shot, XOF_LEN), CB3_RESULT_OK);
                CHECK(memcmp(one_shot, single, XOF_LEN) == 0);
            }
            const size_t threads[] = {2, CB3_BLAKE3_AUTO, 3};
            for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
                cb3_blake3 *hasher = new_hasher((enum mode)m, threads[t]);
                CHECK_RESULT(cb3_blake3_update(hasher, input, lens[l]), CB3_RESULT_OK);
                CHECK(cb3_blake3_count(hasher) == lens[l]);
                check_output(hasher, single);
                /* Pieces above and below the parallel threshold. */
                CHECK_RESULT(cb3_blake3_reset(hasher), CB3_RESULT_OK);
                size_t first = lens[l] / 3;
                CHECK_RESULT(cb3_blake3_update(hasher, input, first), CB3_RESULT_OK);
                CHECK_RESULT(cb3_blake3_update(hasher, input + first, 100), CB3_RESULT_OK);
                CHECK_RESULT(cb3_blake3_update(hasher, input + first + 100, lens[l] - first - 100), CB3_RESULT_OK);
                check_output(hasher, single);
                /* A copy shares the pool and outlives its original. */
                cb3_blake3 *copy = NULL;
                CHECK_RESULT(cb3_blake3_copy(hasher, &copy), CB3_RESULT_OK);
                cb3_blake3_free(hasher);
                CHECK_RESULT(cb3_blake3_reset(copy), CB3_RESULT_OK);
                CHECK_RESULT(cb3_blake3_update(copy, input, lens[l]), CB3_RESULT_OK);
                check_output(copy, single);
                cb3_blake3_free(copy);
            }
        }
    }
    free(input);
}

/* ---- memory-mapped files ---- */

static char *write_temp_file(const uint8_t *data, size_t len)
{
    const char *dir = getenv("TMPDIR");
    char *path = (char *)xmalloc(4096);
    snprintf(path, 4096, "%s/cb3-test-hash-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        exit(2);
    }
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, data + done, len - done);
        if (n <= 0) {
            perror("write");
            exit(2);
        }
        done += (size_t)n;
    }
    close(fd);
    return path;
}

static cb3_result update_file(const cb3_blake3 *hasher, const char *path, int32_t *os_error)
{
    return cb3_blake3_update_mmap(hasher, (const uint8_t *)path, strlen(path), os_error);
}

static void test_update_mmap(void)
{
    /* Vector files: 31744 bytes is mapped (>= 16 KiB), the others are read. */
    for (size_t i = 0; i < N_VECTORS; i++) {
        const struct vector *v = &VECTORS[i];
        uint8_t *input = vector_input(v->len);
        char *path = write_temp_file(input, v->len);
        for (int m = PLAIN; m <= DERIVE; m++) {
            uint8_t expected[XOF_LEN];
            from_hex(expected, expected_hex(v, (enum mode)m));
            cb3_blake3 *hasher = new_hasher((enum mode)m, 1);
            int32_t os_error = 12345;
            CHECK_RESULT(update_file(hasher, path, &os_error), CB3_RESULT_OK);
            CHECK(os_error == 12345); /* written only on an I/O error */
            CHECK(cb3_blake3_count(hasher) == v->len);
            check_output(hasher, expected);
            /* Twice: the file's bytes appended again, as update would. */
            CHECK_RESULT(update_file(hasher, path, NULL), CB3_RESULT_OK);
            cb3_blake3 *twice = new_hasher((enum mode)m, 1);
            CHECK_RESULT(cb3_blake3_update(twice, input, v->len), CB3_RESULT_OK);
            CHECK_RESULT(cb3_blake3_update(twice, input, v->len), CB3_RESULT_OK);
            uint8_t a[32], b[32];
            CHECK_RESULT(cb3_blake3_finalize(hasher, 0, a, 32), CB3_RESULT_OK);
            CHECK_RESULT(cb3_blake3_finalize(twice, 0, b, 32), CB3_RESULT_OK);
            CHECK(memcmp(a, b, 32) == 0 && cb3_blake3_count(hasher) == 2 * v->len);
            cb3_blake3_free(twice);
            cb3_blake3_free(hasher);
        }
        unlink(path);
        free(path);
        free(input);
    }

    /* A 1 MiB file with threads: the single-threaded digest. */
    uint8_t *big = (uint8_t *)xmalloc(BIG);
    pattern(big, BIG, 11);
    uint8_t expected[32];
    CHECK_RESULT(cb3_blake3_hash(big, BIG, expected, 32), CB3_RESULT_OK);
    char *path = write_temp_file(big, BIG);
    const size_t threads[] = {1, 2, CB3_BLAKE3_AUTO};
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        cb3_blake3 *hasher = new_hasher(PLAIN, threads[t]);
        CHECK_RESULT(update_file(hasher, path, NULL), CB3_RESULT_OK);
        uint8_t got[32];
        CHECK_RESULT(cb3_blake3_finalize(hasher, 0, got, 32), CB3_RESULT_OK);
        CHECK(memcmp(got, expected, 32) == 0 && cb3_blake3_count(hasher) == BIG);
        cb3_blake3_free(hasher);
    }
    unlink(path);
    free(path);
    free(big);

    /* Errors. */
    cb3_blake3 *hasher = new_hasher(PLAIN, 1);
    CHECK_RESULT(cb3_blake3_update(hasher, (const uint8_t *)"abc", 3), CB3_RESULT_OK);
    uint8_t abc[32], got[32];
    CHECK_RESULT(cb3_blake3_finalize(hasher, 0, abc, 32), CB3_RESULT_OK);
    int32_t os_error = 12345;
    const char *missing = "/nonexistent-cb3-dir/no such file";
    CHECK_RESULT(update_file(hasher, missing, &os_error), CB3_RESULT_IO_ERROR);
    CHECK(os_error == ENOENT);
    CHECK_RESULT(update_file(hasher, missing, NULL), CB3_RESULT_IO_ERROR); /* os_error is optional */
    os_error = 12345;
    CHECK_RESULT(cb3_blake3_update_mmap(hasher, NULL, 0, &os_error), CB3_RESULT_IO_ERROR); /* "" */
    CHECK(os_error == ENOENT);
    os_error = 12345;
    CHECK_RESULT(cb3_blake3_update_mmap(hasher, (const uint8_t *)"/tmp\0/x", 7, &os_error), CB3_RESULT_IO_ERROR);
    CHECK(os_error == EINVAL);
    os_error = 12345;
    CHECK_RESULT(update_file(hasher, "/", &os_error), CB3_RESULT_IO_ERROR); /* a directory */
    CHECK(os_error == EISDIR);
    /* A path is not NUL-terminated: path_len bytes of "<missing>XYZ" name the missing file. */
    os_error = 12345;
    CHECK_RESULT(cb3_blake3_update_mmap(hasher, (const uint8_t *)"/nonexistent-cb3-dir/fileXYZ", 25, &os_error),
                 CB3_RESULT_IO_ERROR);
    CHECK(os_error == ENOENT);
    /* NULL pointers: no errno detail. */
    os_error = 12345;
    CHECK_RESULT(cb3_blake3_update_mmap(hasher, NULL, 5, &os_error), CB3_RESULT_NULL_PARAMETER);
    CHECK(os_error == 12345);
    CHECK_RESULT(cb3_blake3_update_mmap(NULL, (const uint8_t *)"/", 1, &os_error), CB3_RESULT_NULL_PARAMETER);
    CHECK(os_error == 12345);
    CHECK_RESULT(cb3_blake3_update_mmap(hasher, (const uint8_t *)"/", (size_t)PTRDIFF_MAX + 1, &os_error),
                 CB3_RESULT_INVALID_ARGUMENT);
    CHECK(os_error == 12345);
    /* A failed open left the state alone. */
    CHECK(cb3_blake3_count(hasher) == 3);
    CHECK_RESULT(cb3_blake3_finalize(hasher, 0, got, 32), CB3_RESULT_OK);
    CHECK(memcmp(got, abc, 32) == 0);
    cb3_blake3_free(hasher);
}

/* ---- error paths ---- */

static void test_constructor_errors(void)
{
    cb3_blake3 *out = UNTOUCHED;
    uint8_t key[40];
    memcpy(key, KEY, 32);
    CHECK_RESULT(cb3_blake3_new(1, NULL), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_blake3_new(CB3_BLAKE3_AUTO, NULL), CB3_RESULT_NULL_PARAMETER);

    CHECK_RESULT(cb3_blake3_new_keyed(NULL, 32, 1, &out), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_blake3_new_keyed(NULL, 0, 1, &out), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_blake3_new_keyed(key, 0, 1, &out), CB3_RESULT_INVALID_KEY_LENGTH);
    CHECK_RESULT(cb3_blake3_new_keyed(key, 31, 1, &out), CB3_RESULT_INVALID_KEY_LENGTH);
    CHECK_RESULT(cb3_blake3_new_keyed(key, 33, 1, &out), CB3_RESULT_INVALID_KEY_LENGTH);
    CHECK_RESULT(cb3_blake3_new_keyed(key, 32, 1, NULL), CB3_RESULT_NULL_PARAMETER);
    CHECK(out == UNTOUCHED);

    CHECK_RESULT(cb3_blake3_new_derive_key(NULL, 5, 1, &out), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_blake3_new_derive_key((const uint8_t *)"ab\xff", 3, 1, &out), CB3_RESULT_INVALID_UTF8);
    CHECK_RESULT(cb3_blake3_new_derive_key((const uint8_t *)"\xc3", 1, 1, &out), CB3_RESULT_INVALID_UTF8);
    CHECK_RESULT(cb3_blake3_new_derive_key(CONTEXT_BYTES, CONTEXT_LEN, 1, NULL), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_blake3_new_derive_key(CONTEXT_BYTES, (size_t)PTRDIFF_MAX + 1, 1, &out),
                 CB3_RESULT_INVALID_ARGUMENT);
    CHECK(out == UNTOUCHED);

    /* The key is copied: changing it afterwards changes nothing. */
    cb3_blake3 *keyed = NULL;
    CHECK_RESULT(cb3_blake3_new_keyed(key, 32, 1, &keyed), CB3_RESULT_OK);
    memset(key, 0, sizeof key);
    uint8_t expected[XOF_LEN], got[32];
    from_hex(expected, VECTORS[0].keyed_hash);
    CHECK_RESULT(cb3_blake3_finalize(keyed, 0, got, 32), CB3_RESULT_OK);
    CHECK(memcmp(got, expected, 32) == 0);
    cb3_blake3_free(keyed);

    /* An empty context (NULL, 0) is valid UTF-8; it matches the one-shot function. */
    cb3_blake3 *empty = NULL;
    CHECK_RESULT(cb3_blake3_new_derive_key(NULL, 0, 1, &empty), CB3_RESULT_OK);
    CHECK_RESULT(cb3_blake3_update(empty, (const uint8_t *)"material", 8), CB3_RESULT_OK);
    CHECK_RESULT(cb3_blake3_finalize(empty, 0, got, 32), CB3_RESULT_OK);
    CHECK_RESULT(cb3_blake3_derive_key(NULL, 0, (const uint8_t *)"material", 8, expected, 32), CB3_RESULT_OK);
    CHECK(memcmp(got, expected, 32) == 0);
    cb3_blake3_free(empty);

    CHECK_RESULT(cb3_blake3_copy(NULL, &out), CB3_RESULT_NULL_PARAMETER);
    CHECK(out == UNTOUCHED);
    cb3_blake3 *hasher = new_hasher(PLAIN, 1);
    CHECK_RESULT(cb3_blake3_copy(hasher, NULL), CB3_RESULT_NULL_PARAMETER);
    cb3_blake3_free(hasher);
    cb3_blake3_free(NULL);
}

static void test_call_errors(void)
{
    cb3_blake3 *hasher = new_hasher(KEYED, 1);
    uint8_t data[64];
    pattern(data, sizeof data, 3);
    CHECK_RESULT(cb3_blake3_update(hasher, data, sizeof data), CB3_RESULT_OK);
    uint8_t before[32];
    CHECK_RESULT(cb3_blake3_finalize(hasher, 0, before, 32), CB3_RESULT_OK);

    CHECK_RESULT(cb3_blake3_update(NULL, data, 5), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_blake3_update(NULL, NULL, 0), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_blake3_update(hasher, NULL, 5), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_blake3_update(hasher, data, (size_t)PTRDIFF_MAX + 1), CB3_RESULT_INVALID_ARGUMENT);
    CHECK_RESULT(cb3_blake3_update(hasher, data, SIZE_MAX), CB3_RESULT_INVALID_ARGUMENT);
    CHECK(cb3_blake3_count(hasher) == sizeof data);

    guarded out = guarded_alloc(32);
    CHECK_RESULT(cb3_blake3_finalize(NULL, 0, out.ptr, 32), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_blake3_finalize(hasher, 0, NULL, 32), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_blake3_finalize(hasher, 0, out.ptr, (size_t)PTRDIFF_MAX + 1), CB3_RESULT_INVALID_ARGUMENT);
    CHECK(guarded_intact(&out, 0));
    CHECK_RESULT(cb3_blake3_finalize(hasher, 0, NULL, 0), CB3_RESULT_OK);
    CHECK_RESULT(cb3_blake3_finalize(hasher, 5, out.ptr, 0), CB3_RESULT_OK);
    CHECK(guarded_intact(&out, 0));

    CHECK_RESULT(cb3_blake3_reset(NULL), CB3_RESULT_NULL_PARAMETER);
    CHECK(cb3_blake3_count(NULL) == 0);
    /* None of the failures changed the state. */
    CHECK_RESULT(cb3_blake3_finalize(hasher, 0, out.ptr, 32), CB3_RESULT_OK);
    CHECK(memcmp(out.ptr, before, 32) == 0 && guarded_intact(&out, 32));
    guarded_free(&out);
    cb3_blake3_free(hasher);
}

static void test_one_shot_errors(void)
{
    uint8_t input[100];
    pattern(input, sizeof input, 5);
    uint8_t saved[100];
    memcpy(saved, input, sizeof input);
    guarded out = guarded_alloc(64);
    const uint8_t *k = KEY_BYTES;

    /* cb3_blake3_hash */
    CHECK_RESULT(cb3_blake3_hash(NULL, 5, out.ptr, 32), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_blake3_hash(input, 5, NULL, 32), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_blake3_hash(input, (size_t)PTRDIFF_MAX + 1, out.ptr, 32), CB3_RESULT_INVALID_ARGUMENT);
    CHECK_RESULT(cb3_blake3_hash(input, 5, out.ptr, (size_t)PTRDIFF_MAX + 1), CB3_RESULT_INVALID_ARGUMENT);
    CHECK(guarded_intact(&out, 0));
    /* Output overlapping the input, in place included. */
    CHECK_RESULT(cb3_blake3_hash(input, 64, input, 32), CB3_RESULT_OVERLAPPING_BUFFERS);
    CHECK_RESULT(cb3_blake3_hash(input, 64, input + 63, 32), CB3_RESULT_OVERLAPPING_BUFFERS);
    CHECK_RESULT(cb3_blake3_hash(input + 32, 64, input, 33), CB3_RESULT_OVERLAPPING_BUFFERS);
    CHECK(memcmp(input, saved, sizeof input) == 0);
    /* Adjacent is fine. */
    CHECK_RESULT(cb3_blake3_hash(input, 32, input + 32, 32), CB3_RESULT_OK);
    CHECK_RESULT(cb3_blake3_hash(saved, 32, out.ptr, 32), CB3_RESULT_OK);
    CHECK(memcmp(input + 32, out.ptr, 32) == 0 && memcmp(input, saved, 32) == 0);
    memcpy(input, saved, sizeof input);
    guarded_reset(&out);

    /* cb3_blake3_keyed_hash */
    uint8_t key[64];
    memcpy(key, k, 32);
    CHECK_RESULT(cb3_blake3_keyed_hash(NULL, 32, input, 5, out.ptr, 32), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_blake3_keyed_hash(NULL, 0, input, 5, out.ptr, 32), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_blake3_keyed_hash(key, 0, input, 5, out.ptr, 32), CB3_RESULT_INVALID_KEY_LENGTH);
    CHECK_RESULT(cb3_blake3_keyed_hash(key, 16, input, 5, out.ptr, 32), CB3_RESULT_INVALID_KEY_LENGTH);
    CHECK_RESULT(cb3_blake3_keyed_hash(key, 31, input, 5, out.ptr, 32), CB3_RESULT_INVALID_KEY_LENGTH);
    CHECK_RESULT(cb3_blake3_keyed_hash(key, 33, input, 5, out.ptr, 32), CB3_RESULT_INVALID_KEY_LENGTH);
    CHECK_RESULT(cb3_blake3_keyed_hash(key, 32, NULL, 5, out.ptr, 32), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_blake3_keyed_hash(key, 32, input, 5, NULL, 32), CB3_RESULT_NULL_PARAMETER);
    CHECK(guarded_intact(&out, 0));
    CHECK_RESULT(cb3_blake3_keyed_hash(key, 32, input, 64, input + 10, 32), CB3_RESULT_OVERLAPPING_BUFFERS);
    CHECK_RESULT(cb3_blake3_keyed_hash(key, 32, input, 64, key + 31, 32), CB3_RESULT_OVERLAPPING_BUFFERS);
    CHECK_RESULT(cb3_blake3_keyed_hash(key, 32, input, 64, key, 32), CB3_RESULT_OVERLAPPING_BUFFERS);
    CHECK(memcmp(input, saved, sizeof input) == 0 && memcmp(key, k, 32) == 0);
    CHECK_RESULT(cb3_blake3_keyed_hash(key, 32, input, 64, key + 32, 32), CB3_RESULT_OK); /* adjacent */
    CHECK_RESULT(cb3_blake3_keyed_hash(k, 32, input, 64, out.ptr, 32), CB3_RESULT_OK);
    CHECK(memcmp(key + 32, out.ptr, 32) == 0);
    guarded_reset(&out);

    /* cb3_blake3_derive_key */
    uint8_t context[64];
    memcpy(context, CONTEXT, 47);
    CHECK_RESULT(cb3_blake3_derive_key(NULL, 5, input, 5, out.ptr, 32), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_blake3_derive_key((const uint8_t *)"\xff\xfe", 2, input, 5, out.ptr, 32),
                 CB3_RESULT_INVALID_UTF8);
    CHECK_RESULT(cb3_blake3_derive_key((const uint8_t *)"\xe2\x82", 2, input, 5, out.ptr, 32),
                 CB3_RESULT_INVALID_UTF8); /* truncated sequence */
    CHECK_RESULT(cb3_blake3_derive_key(context, 47, NULL, 5, out.ptr, 32), CB3_RESULT_NULL_PARAMETER);
    CHECK_RESULT(cb3_blake3_derive_key(context, 47, input, 5, NULL, 32), CB3_RESULT_NULL_PARAMETER);
    CHECK(guarded_intact(&out, 0));
    CHECK_RESULT(cb3_blake3_derive_key(context, 47, input, 64, input + 63, 32), CB3_RESULT_OVERLAPPING_BUFFERS);
    CHECK_RESULT(cb3_blake3_derive_key(context, 47, input, 64, context + 40, 16), CB3_RESULT_OVERLAPPING_BUFFERS);
    CHECK_RESULT(cb3_blake3_derive_key(context, 47, context, 47, context + 47, 16), CB3_RESULT_OK); /* adjacent */
    CHECK(memcmp(context, CONTEXT, 47) == 0 && memcmp(input, saved, sizeof input) == 0);
    /* Non-ASCII UTF-8 is a valid context. */
    CHECK_RESULT(cb3_blake3_derive_key((const uint8_t *)"caf\xc3\xa9", 5, input, 5, out.ptr, 32), CB3_RESULT_OK);
    guarded_free(&out);
}

/* ---- one hasher, several threads ---- */

#define N_THREADS 4
#define CHUNK 1000
#define REPEATS 200

static void *update_many(void *arg)
{
    const cb3_blake3 *hasher = (const cb3_blake3 *)arg;
    uint8_t chunk[CHUNK];
    for (size_t i = 0; i < CHUNK; i++)
        chunk[i] = (uint8_t)i;
    for (int i = 0; i < REPEATS; i++)
        if (cb3_blake3_update(hasher, chunk, CHUNK) != CB3_RESULT_OK)
            return (void *)1;
    return NULL;
}

static void test_shared_hasher(void)
{
    /* Every thread adds the same chunk: in whatever order the updates are
     * serialised, the input is N_THREADS * REPEATS copies of it. */
    const size_t modes[] = {1, 2};
    for (size_t m = 0; m < 2; m++) {
        cb3_blake3 *hasher = new_hasher(PLAIN, modes[m]);
        pthread_t threads[N_THREADS];
        for (int t = 0; t < N_THREADS; t++)
            CHECK(pthread_create(&threads[t], NULL, update_many, hasher) == 0);
        for (int t = 0; t < N_THREADS; t++) {
            void *ret = (void *)1;
            CHECK(pthread_join(threads[t], &ret) == 0 && ret == NULL);
        }
        CHECK(cb3_blake3_count(hasher) == (uint64_t)N_THREADS * REPEATS * CHUNK);
        size_t total = (size_t)N_THREADS * REPEATS * CHUNK;
        uint8_t *all = (uint8_t *)xmalloc(total);
        for (size_t i = 0; i < total; i++)
            all[i] = (uint8_t)(i % CHUNK);
        uint8_t expected[32], got[32];
        CHECK_RESULT(cb3_blake3_hash(all, total, expected, 32), CB3_RESULT_OK);
        CHECK_RESULT(cb3_blake3_finalize(hasher, 0, got, 32), CB3_RESULT_OK);
        CHECK(memcmp(got, expected, 32) == 0);
        free(all);
        cb3_blake3_free(hasher);
    }
}

int main(void)
{
    CHECK(strlen(KEY) == CB3_BLAKE3_KEY_LEN && CB3_BLAKE3_OUT_LEN == 32 && CB3_BLAKE3_BLOCK_LEN == 64);
    CHECK(CB3_BLAKE3_AUTO == 0 && CB3_BLAKE3_PARALLEL_MIN == 128 * 1024);
    test_one_shot_vectors();
    test_incremental_vectors();
    test_seek_far();
    test_copy();
    test_threads();
    test_update_mmap();
    test_constructor_errors();
    test_call_errors();
    test_one_shot_errors();
    test_shared_hasher();
    return check_summary("test_hash");
}
