/* A minimal test harness for the C programs in tests/c (run by run.sh).
 *
 * CHECK(cond) and CHECK_RESULT(call, expected) count passes and failures and
 * print each failure with its file and line; check_summary() prints the
 * closing "N passed, N failed" line and gives main's exit status.
 *
 * Rust code is not instrumented by AddressSanitizer, so a write past the
 * end of a C buffer by the library would go unnoticed by it: the tests
 * therefore surround every output with guard bytes (guarded_alloc) and check
 * that the library wrote exactly what it said and nothing else.
 */
#ifndef CB3_TEST_CHECK_H
#define CB3_TEST_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cb3.h"

static int check_passed;
static int check_failed;

#define CHECK(cond) check_((cond) != 0, #cond, __FILE__, __LINE__)
#define CHECK_RESULT(call, expected) check_result_((call), (expected), #call, __FILE__, __LINE__)

static inline int check_(int ok, const char *what, const char *file, int line)
{
    if (ok) {
        check_passed++;
    } else {
        check_failed++;
        printf("FAIL %s:%d: %s\n", file, line, what);
        fflush(stdout);
    }
    return ok;
}

static inline int check_result_(cb3_result got, cb3_result expected, const char *call, const char *file, int line)
{
    if (got == expected) {
        check_passed++;
        return 1;
    }
    check_failed++;
    printf("FAIL %s:%d: %s\n    returned %u (%s), expected %u (%s)\n", file, line, call, (unsigned)got,
           cb3_result_message(got), (unsigned)expected, cb3_result_message(expected));
    fflush(stdout);
    return 0;
}

static inline int check_summary(const char *program)
{
    printf("%s: %d passed, %d failed\n", program, check_passed, check_failed);
    return check_failed == 0 ? 0 : 1;
}

/* Deterministic test bytes (xorshift), so failures reproduce. */
static inline void pattern(uint8_t *buf, size_t len, uint64_t seed)
{
    uint64_t state = seed * UINT64_C(0x9E3779B97F4A7C15) | 1;
    for (size_t i = 0; i < len; i++) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        buf[i] = (uint8_t)state;
    }
}

static inline int all_bytes(const uint8_t *buf, size_t len, uint8_t value)
{
    for (size_t i = 0; i < len; i++)
        if (buf[i] != value)
            return 0;
    return 1;
}

static inline size_t from_hex(uint8_t *out, const char *hex)
{
    size_t n = strlen(hex) / 2;
    for (size_t i = 0; i < n; i++) {
        unsigned byte;
        if (sscanf(hex + 2 * i, "%2x", &byte) != 1)
            abort();
        out[i] = (uint8_t)byte;
    }
    return n;
}

static inline void *xmalloc(size_t len)
{
    void *p = malloc(len ? len : 1);
    if (p == NULL) {
        perror("malloc");
        exit(2);
    }
    return p;
}

/* An output buffer of `len` bytes with GUARD bytes of SENTINEL on each
 * side, all filled with SENTINEL. */
#define GUARD 64
#define SENTINEL 0xA5

typedef struct {
    uint8_t *base; /* GUARD + len + GUARD bytes */
    uint8_t *ptr;  /* base + GUARD */
    size_t len;
} guarded;

static inline guarded guarded_alloc(size_t len)
{
    guarded g;
    g.base = (uint8_t *)xmalloc(len + 2 * GUARD);
    g.ptr = g.base + GUARD;
    g.len = len;
    memset(g.base, SENTINEL, len + 2 * GUARD);
    return g;
}

static inline void guarded_reset(guarded *g)
{
    memset(g->base, SENTINEL, g->len + 2 * GUARD);
}

/* True if the guards are intact and bytes [written, len) are untouched. */
static inline int guarded_intact(const guarded *g, size_t written)
{
    return all_bytes(g->base, GUARD, SENTINEL) && all_bytes(g->ptr + written, g->len - written + GUARD, SENTINEL);
}

static inline void guarded_free(guarded *g)
{
    free(g->base);
    g->base = g->ptr = NULL;
}

/* Shared test inputs. */
#define NOT_WRITTEN ((size_t)0x5A5A5A5A)

#endif /* CB3_TEST_CHECK_H */
