/* cb3's ChaCha20 through its C ABI against OpenSSL's EVP ChaCha20, with no
 * Python in between: how much of a `ChaCha20.update_into` row of
 * docs/results/performance.md is the kernel and how much the call.
 *
 *   (cd rustlib && cargo build --release --locked)
 *   cc -O2 -Irustlib/include asv_benchmarks/tools/chacha_vs_openssl.c \
 *      rustlib/target/release/libcb3.a -lcrypto -lpthread -ldl -lm -o /tmp/chacha_vs_openssl
 *   /tmp/chacha_vs_openssl SIZE ROUNDS [OFFSET]
 *
 * Each round times 64 MiB worth of calls of each (cb3 first, then OpenSSL,
 * the same input and output buffers, both OFFSET bytes past a 64-byte line:
 * 16 by default, where Python puts a bytearray's bytes) and prints the
 * medians of the rounds' times and the median, 10th and 90th percentile of
 * the rounds' ratios (cb3 / OpenSSL). Both use a 12-byte nonce (RFC 8439).
 * Needs libssl-dev. */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cb3.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int ascending(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s SIZE ROUNDS [OFFSET]\n", argv[0]);
        return 2;
    }
    size_t size = strtoul(argv[1], NULL, 0), offset = argc > 3 ? strtoul(argv[3], NULL, 0) : 16;
    int rounds = atoi(argv[2]);
    if (size == 0 || rounds < 1 || offset >= 64) {
        fprintf(stderr, "SIZE and ROUNDS must be positive, OFFSET below 64\n");
        return 2;
    }
    int calls = size >= (64u << 20) ? 1 : (int)((64u << 20) / size);
    unsigned char key[32] = {1}, nonce[12] = {2}, iv[16] = {0};
    memcpy(iv + 4, nonce, sizeof nonce); /* OpenSSL's IV: a 32-bit counter, then the nonce */
    unsigned char *in_block = aligned_alloc(64, size + 128), *out_block = aligned_alloc(64, size + 128);
    double *ours = malloc(rounds * sizeof(double)), *theirs = malloc(rounds * sizeof(double)),
           *ratios = malloc(rounds * sizeof(double));
    cb3_chacha *chacha = NULL;
    EVP_CIPHER_CTX *openssl = EVP_CIPHER_CTX_new();
    if (!in_block || !out_block || !ours || !theirs || !ratios || !openssl ||
        cb3_chacha_new(key, sizeof key, nonce, sizeof nonce, 0, 20, &chacha) != CB3_RESULT_OK ||
        EVP_EncryptInit_ex(openssl, EVP_chacha20(), NULL, key, iv) != 1) {
        fprintf(stderr, "setup failed\n");
        return 1;
    }
    unsigned char *in = in_block + offset, *out = out_block + offset;
    memset(in, 7, size);
    for (int round = 0; round < rounds; round++) {
        int written;
        /* Both restart at block 0 each round: the 32-bit counter never runs out. */
        if (cb3_chacha_seek(chacha, 0, 0) != CB3_RESULT_OK || EVP_EncryptInit_ex(openssl, NULL, NULL, NULL, iv) != 1)
            return 1;
        double start = now();
        for (int i = 0; i < calls; i++)
            if (cb3_chacha_apply(chacha, in, size, out, size) != CB3_RESULT_OK)
                return 1;
        double middle = now();
        for (int i = 0; i < calls; i++)
            if (EVP_EncryptUpdate(openssl, out, &written, in, (int)size) != 1)
                return 1;
        double end = now();
        ours[round] = (middle - start) / calls;
        theirs[round] = (end - middle) / calls;
        ratios[round] = ours[round] / theirs[round];
    }
    qsort(ours, rounds, sizeof(double), ascending);
    qsort(theirs, rounds, sizeof(double), ascending);
    qsort(ratios, rounds, sizeof(double), ascending);
    printf("%zu B, %zu past a line, %d rounds: cb3 %.3f us, OpenSSL %.3f us; cb3 / OpenSSL median %.3f "
           "(p10 %.3f, p90 %.3f)\n",
           size, offset, rounds, ours[rounds / 2] * 1e6, theirs[rounds / 2] * 1e6, ratios[rounds / 2],
           ratios[rounds / 10], ratios[rounds * 9 / 10]);
    cb3_chacha_free(chacha);
    EVP_CIPHER_CTX_free(openssl);
    free(in_block);
    free(out_block);
    free(ours);
    free(theirs);
    free(ratios);
    return 0;
}
