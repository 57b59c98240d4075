/* What every cb3 object shares (rustlib/src/object.rs), from C, under
 * AddressSanitizer: calls on a freed object (or on a pointer of another type)
 * return CB3_RESULT_INVALID_ARGUMENT, a double free aborts with a message
 * instead of corrupting the heap (ASan would report a double free: it never
 * reaches free()), streams and ChaCha objects refuse in a fork() child
 * (CB3_RESULT_FORKED), as does sealing with a cb3_chunked (opening works), and the wait hooks and the interrupt callback of
 * cb3_blake3_update_file run when documented. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static const uint8_t KEY[32] = {1, 2, 3};
static const uint8_t NONCE[24] = {4, 5, 6};

static cb3_result stream_encrypt(const cb3_stream *stream)
{
    uint8_t out[1 + CB3_TAG_SIZE];
    return cb3_stream_encrypt(stream, (const uint8_t *)"x", 1, NULL, 0, out, sizeof out, NULL);
}

static cb3_result chacha_apply(const cb3_chacha *chacha)
{
    uint8_t out[1];
    return cb3_chacha_apply(chacha, (const uint8_t *)"x", 1, out, 1);
}

static void test_use_after_free(void)
{
    /* Nothing is allocated between a free and the calls: the allocator could
     * hand the block to a new object of the same type (the limit of a tag). */
    cb3_stream *stream = NULL;
    CHECK_RESULT(cb3_stream_new(KEY, 32, NONCE, 24, 0, &stream), CB3_RESULT_OK);
    cb3_stream_free(stream);
    CHECK_RESULT(stream_encrypt(stream), CB3_RESULT_INVALID_ARGUMENT);
    CHECK(cb3_stream_message_index(stream) == 0);

    cb3_chacha *chacha = NULL;
    CHECK_RESULT(cb3_chacha_new(KEY, 32, NONCE, 12, 0, 20, &chacha), CB3_RESULT_OK);
    cb3_chacha_free(chacha);
    CHECK_RESULT(chacha_apply(chacha), CB3_RESULT_INVALID_ARGUMENT);

    cb3_blake3 *hasher = NULL;
    CHECK_RESULT(cb3_blake3_new(1, &hasher), CB3_RESULT_OK);
    cb3_blake3_free(hasher);
    CHECK_RESULT(cb3_blake3_update(hasher, (const uint8_t *)"x", 1), CB3_RESULT_INVALID_ARGUMENT);
    uint8_t digest[32];
    CHECK_RESULT(cb3_blake3_finalize(hasher, 0, digest, 32), CB3_RESULT_INVALID_ARGUMENT);

    cb3_aead *aead = NULL;
    CHECK_RESULT(cb3_aead_new(KEY, 32, &aead), CB3_RESULT_OK);
    cb3_aead_free(aead);
    uint8_t out[1 + CB3_TAG_SIZE];
    CHECK_RESULT(cb3_aead_encrypt(aead, NONCE, 24, (const uint8_t *)"x", 1, NULL, 0, out, sizeof out, NULL),
                 CB3_RESULT_INVALID_ARGUMENT);
}

static void test_wrong_type(void)
{
    cb3_stream *stream = NULL;
    CHECK_RESULT(cb3_stream_new(KEY, 32, NONCE, 24, 0, &stream), CB3_RESULT_OK);
    CHECK_RESULT(chacha_apply((const cb3_chacha *)(const void *)stream), CB3_RESULT_INVALID_ARGUMENT);
    CHECK_RESULT(cb3_blake3_update((const cb3_blake3 *)(const void *)stream, (const uint8_t *)"x", 1),
                 CB3_RESULT_INVALID_ARGUMENT);
    CHECK_RESULT(stream_encrypt(stream), CB3_RESULT_OK);
    cb3_stream_free(stream);
}

/* Runs `body` in a child whose stderr goes to `err` (NUL-terminated); returns
 * the wait status. */
static int in_child(void (*body)(void), char *err, size_t err_size)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        body();
        _exit(0);
    }
    close(fds[1]);
    size_t used = 0;
    ssize_t n;
    while (used + 1 < err_size && (n = read(fds[0], err + used, err_size - 1 - used)) > 0)
        used += (size_t)n;
    err[used] = '\0';
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
}

static void double_free_stream(void)
{
    cb3_stream *stream = NULL;
    cb3_stream_new(KEY, 32, NONCE, 24, 0, &stream);
    cb3_stream_free(stream);
    cb3_stream_free(stream);
}

static void double_free_hasher(void)
{
    cb3_blake3 *hasher = NULL;
    cb3_blake3_new(1, &hasher);
    cb3_blake3_free(hasher);
    cb3_blake3_free(hasher);
}

static void free_wrong_type(void)
{
    cb3_chacha *chacha = NULL;
    cb3_chacha_new(KEY, 32, NONCE, 12, 0, 20, &chacha);
    cb3_aead_free((cb3_aead *)(void *)chacha);
}

static void test_double_free_aborts(void)
{
    char err[4096];
    int status = in_child(double_free_stream, err, sizeof err);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    CHECK(strstr(err, "cb3: cb3_stream_free(") != NULL);
    CHECK(strstr(err, "not a live cb3_stream (freed twice, or never made by cb3): aborting") != NULL);
    CHECK(strstr(err, "AddressSanitizer") == NULL); /* never reached free() */
    status = in_child(double_free_hasher, err, sizeof err);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    CHECK(strstr(err, "not a live cb3_blake3") != NULL);
    status = in_child(free_wrong_type, err, sizeof err);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    CHECK(strstr(err, "cb3: cb3_aead_free(") != NULL);
}

static cb3_stream *fork_stream;
static cb3_chacha *fork_chacha;
static cb3_blake3 *fork_hasher;
static cb3_chunked *fork_chunked;
static uint8_t fork_sealed[1 + CB3_TAG_SIZE];

static cb3_result chunked_seal(const cb3_chunked *chunked)
{
    return cb3_chunked_seal(chunked, 0, 1, (const uint8_t *)"x", 1, fork_sealed, sizeof fork_sealed, NULL);
}

static cb3_result chunked_open(const cb3_chunked *chunked)
{
    uint8_t plain[1];
    return cb3_chunked_open(chunked, 0, 1, fork_sealed, sizeof fork_sealed, plain, sizeof plain, NULL);
}

static void use_after_fork(void)
{
    int failures = 0;
    failures += chunked_seal(fork_chunked) != CB3_RESULT_FORKED; /* the parent's nonces */
    failures += chunked_open(fork_chunked) != CB3_RESULT_OK;
    cb3_chunked_free(fork_chunked);
    failures += stream_encrypt(fork_stream) != CB3_RESULT_FORKED;
    failures += chacha_apply(fork_chacha) != CB3_RESULT_FORKED;
    failures += cb3_stream_message_index(fork_stream) != 1;
    uint64_t high = 9, low = 9;
    failures += cb3_chacha_position(fork_chacha, &high, &low) != CB3_RESULT_OK; /* reading is allowed */
    failures += high != 0 || low != 1;
    failures += cb3_blake3_update(fork_hasher, (const uint8_t *)"x", 1) != CB3_RESULT_OK; /* idle: moves here */
    cb3_stream *fresh = NULL;
    failures += cb3_stream_new(KEY, 32, NONCE, 24, 0, &fresh) != CB3_RESULT_OK;
    failures += stream_encrypt(fresh) != CB3_RESULT_OK;
    cb3_stream_free(fresh);
    /* The child frees its copies (LeakSanitizer runs at its exit too). */
    cb3_stream_free(fork_stream);
    cb3_chacha_free(fork_chacha);
    cb3_blake3_free(fork_hasher);
    fprintf(stderr, "child failures: %d\n", failures);
}

static void test_fork(void)
{
    CHECK_RESULT(cb3_stream_new(KEY, 32, NONCE, 24, 0, &fork_stream), CB3_RESULT_OK);
    CHECK_RESULT(cb3_chacha_new(KEY, 32, NONCE, 24, 0, 20, &fork_chacha), CB3_RESULT_OK);
    CHECK_RESULT(cb3_blake3_new(1, &fork_hasher), CB3_RESULT_OK);
    uint8_t header[CB3_CHUNKED_HEADER_SIZE];
    CHECK_RESULT(cb3_chunked_header_encode(NONCE, CB3_CHUNKED_PREFIX_SIZE, 64, header, sizeof header), CB3_RESULT_OK);
    CHECK_RESULT(cb3_chunked_new(KEY, 32, header, sizeof header, NULL, 0, 1, &fork_chunked), CB3_RESULT_OK);
    CHECK_RESULT(chunked_seal(fork_chunked), CB3_RESULT_OK);
    CHECK_RESULT(stream_encrypt(fork_stream), CB3_RESULT_OK);
    CHECK_RESULT(chacha_apply(fork_chacha), CB3_RESULT_OK);
    char err[4096];
    int status = in_child(use_after_fork, err, sizeof err);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(strcmp(err, "child failures: 0\n") == 0);
    CHECK_RESULT(stream_encrypt(fork_stream), CB3_RESULT_OK);
    CHECK_RESULT(chacha_apply(fork_chacha), CB3_RESULT_OK);
    CHECK_RESULT(chunked_seal(fork_chunked), CB3_RESULT_OK);
    cb3_stream_free(fork_stream);
    cb3_chacha_free(fork_chacha);
    cb3_blake3_free(fork_hasher);
    cb3_chunked_free(fork_chunked);
}

/* ---- wait hooks and interrupts ----
 * Thread A hashes /dev/zero; its interrupt callback (which runs holding the
 * hasher's lock) waits until thread B is blocked on that lock (B's wait hook
 * says so), then stops A. B then gets the lock. */
static cb3_blake3 *shared;
static sem_t a_in_callback, b_waiting;
static int begins, ends, callbacks;
static int token;

static void *count_begin(void)
{
    begins++;
    sem_post(&b_waiting);
    return &token;
}

static void count_end(void *got)
{
    CHECK(got == &token);
    ends++;
}

static int stop_when_b_waits(void *arg)
{
    CHECK(arg == &callbacks);
    callbacks++;
    sem_post(&a_in_callback);
    sem_wait(&b_waiting);
    return 1;
}

static void *thread_a(void *result)
{
    const char *path = "/dev/zero";
    int32_t os_error = 0;
    *(cb3_result *)result =
        cb3_blake3_update_file(shared, (const uint8_t *)path, strlen(path), stop_when_b_waits, &callbacks, &os_error);
    return NULL;
}

static void *thread_b(void *result)
{
    *(cb3_result *)result = cb3_blake3_update(shared, (const uint8_t *)"x", 1);
    return NULL;
}

static void test_wait_hooks_and_interrupt(void)
{
    CHECK_RESULT(cb3_set_wait_hooks(count_begin, NULL), CB3_RESULT_INVALID_ARGUMENT);
    CHECK_RESULT(cb3_set_wait_hooks(count_begin, count_end), CB3_RESULT_OK);
    sem_init(&a_in_callback, 0, 0);
    sem_init(&b_waiting, 0, 0);
    CHECK_RESULT(cb3_blake3_new(1, &shared), CB3_RESULT_OK);
    CHECK_RESULT(cb3_blake3_update(shared, (const uint8_t *)"x", 1), CB3_RESULT_OK); /* free lock: no hook */
    CHECK(begins == 0);
    cb3_result a = CB3_RESULT_OK, b = CB3_RESULT_PANIC;
    pthread_t ta, tb;
    pthread_create(&ta, NULL, thread_a, &a);
    sem_wait(&a_in_callback);
    pthread_create(&tb, NULL, thread_b, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK_RESULT(a, CB3_RESULT_INTERRUPTED);
    CHECK_RESULT(b, CB3_RESULT_OK);
    CHECK(callbacks == 1 && begins == 1 && ends == 1);
    CHECK(cb3_blake3_count(shared) > 2);
    CHECK_RESULT(cb3_set_wait_hooks(NULL, NULL), CB3_RESULT_OK);
    cb3_blake3_free(shared);
    sem_destroy(&a_in_callback);
    sem_destroy(&b_waiting);
}

int main(void)
{
    test_use_after_free();
    test_wrong_type();
    test_double_free_aborts();
    test_fork();
    test_wait_hooks_and_interrupt();
    return check_summary("test_objects");
}
