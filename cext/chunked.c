/* cb3._cb3.Chunked: the chunk batches of cb3's encrypted file format, a thin
 * shell over cb3_chunked_* (rustlib/src/chunked.rs). Private: cb3/chunked/
 * (EncryptingWriter, DecryptingReader, encrypt_file, decrypt_file) does the
 * framing and is the public API. */
#include "call.h"
#include "module.h"
#include "types.h"

typedef struct {
    cb3_chunked *chunked; /* owned; immutable, so shared freely between threads */
} ChunkedObject;

HPyType_HELPERS(ChunkedObject)
CB3_OWNER(Chunked, ChunkedObject, cb3_chunked, chunked, cb3_chunked_free)

/* max_threads: the AEAD's parser and rule (cb3.AUTO or a positive count). */
static int Chunked_convert(HPyContext *ctx, cb3_call *call)
{
    size_t max_threads;
    if (cb3_arg_threads(ctx, call->arg[3], &cb3_max_threads, &max_threads) < 0)
        return -1;
    call->value[3] = max_threads;
    return 0;
}

/* A bad header: CB3_RESULT_INVALID_HEADER, a ValueError (no header_fault). */
static cb3_result Chunked_make(cb3_call *call)
{
    const cb3_buffer *key = call->in[CB3_ARG_KEY], *header = call->in[CB3_ARG_BYTES], *aad = call->in[CB3_ARG_AAD];
    return cb3_chunked_new(key->ptr, key->len, header->ptr, header->len, aad->ptr, aad->len, (size_t)call->value[3],
                           (cb3_chunked **)&call->made);
}

/* The constructor keeps the GIL, whatever the associated data's length. */
static int Chunked_uncounted(HPyContext *ctx, cb3_call *call)
{
    (void)ctx;
    call->nbytes = 0;
    return 0;
}

static const cb3_method Chunked_new_method = {
    .spec = {"Chunked", {"key", "header", "associated_data", "max_threads", NULL}, 4, 4},
    .role = {CB3_ARG_KEY, CB3_ARG_BYTES, CB3_ARG_AAD, CB3_ARG_OBJECT},
    .convert = Chunked_convert,
    .prepare = Chunked_uncounted,
    .run = Chunked_make,
    .returns = CB3_RETURN_ADOPT,
    .kind = CB3_OBJECT_KIND_CHUNKED,
    .free = Chunked_free,
};
CB3_CONSTRUCTOR(Chunked_new, Chunked_new_method)

/* seal_into and open_into: (first_index, last, data, out) -> bytes written into out. */
static int batch_convert(HPyContext *ctx, cb3_call *call)
{
    static const cb3_int_param first_index = {"first_index", CB3_INT_OVERFLOW, NULL};
    if (cb3_arg_int(ctx, call->arg[0], &first_index, &call->value[0]) < 0)
        return -1;
    int last = HPy_IsTrue(ctx, call->arg[1]);
    call->value[1] = (uint64_t)last;
    return last < 0 ? -1 : 0;
}

#define BATCH(op)                                                                                               \
    const cb3_buffer *data = call->in[CB3_ARG_DATA], *out = call->in[CB3_ARG_BUF];                              \
    return op(call->inner, call->value[0], (uint32_t)call->value[1], data->ptr, data->len, (uint8_t *)out->ptr, \
              out->len, &call->written)

static cb3_result seal(cb3_call *call)
{
    BATCH(cb3_chunked_seal);
}

static cb3_result open_(cb3_call *call)
{
    BATCH(cb3_chunked_open);
}

static const cb3_error_context batch_given = {
    .invalid = "invalid chunk batch: a non-final batch must be whole chunks, only chunk 0 may be empty, "
               "and chunk indices end at 2**64 - 1",
    .object = "cb3.EncryptingWriter", /* CB3_RESULT_FORKED: sealing in a fork() child */
};

#define BATCH_ARGS {"first_index", "last", "data", "out", NULL}, 4, 0
#define BATCH_ROLES {CB3_ARG_OBJECT, CB3_ARG_OBJECT, CB3_ARG_DATA, CB3_ARG_BUF}

static const cb3_method batches[] = {
    {.spec = {"seal_into", BATCH_ARGS}, .role = BATCH_ROLES, .inner = 1, .given = &batch_given,
     .convert = batch_convert, .run = seal, .returns = CB3_RETURN_COUNT},
    {.spec = {"open_into", BATCH_ARGS}, .role = BATCH_ROLES, .inner = 1, .given = &batch_given,
     .convert = batch_convert, .run = open_, .returns = CB3_RETURN_COUNT},
};

CB3_METHOD(Chunked_seal_into, "seal_into", batches[0],
           "seal_into(first_index, last, data, out) -> int\n\n"
           "Seal data as chunks first_index.. into out (cb3_chunked_seal); returns bytes written.")

CB3_METHOD(Chunked_open_into, "open_into", batches[1],
           "open_into(first_index, last, data, out) -> int\n\n"
           "Verify and decrypt chunks first_index.. into out (cb3_chunked_open); returns plaintext\n"
           "bytes written. cb3.DecryptionError if any chunk fails (no plaintext is left in out).")

/* ---- the stream header: rustlib's one codec ---- */

#define CHUNK_SIZE_RANGE "in 64..16777216"

static int encode_convert(HPyContext *ctx, cb3_call *call)
{
    static const cb3_int_param chunk_size = {"chunk_size", 0, CHUNK_SIZE_RANGE};
    return cb3_arg_int(ctx, call->arg[0], &chunk_size, &call->value[0]);
}

static cb3_result encode(cb3_call *call)
{
    const cb3_buffer *prefix = call->in[CB3_ARG_NONCE];
    /* A chunk size beyond 32 bits is out of range too: Rust checks one that fits. */
    uint32_t size = call->value[0] > UINT32_MAX ? 0 : (uint32_t)call->value[0];
    return cb3_chunked_header_encode(prefix->ptr, prefix->len, size, call->out[0].ptr, call->out[0].len);
}

static const cb3_error_context encode_given = {.nonce_sizes = "15 bytes",
                                               .invalid = "chunk_size must be " CHUNK_SIZE_RANGE};

static const cb3_method encode_method = {
    .spec = {"chunked_header_encode", {"chunk_size", "nonce_prefix", NULL}, 2, 0},
    .role = {CB3_ARG_OBJECT, CB3_ARG_NONCE},
    .size = {CB3_SIZE_FIXED},
    .fixed = CB3_CHUNKED_HEADER_SIZE,
    .given = &encode_given,
    .convert = encode_convert,
    .run = encode,
};

CB3_METHOD(cb3_chunked_header_encode_def, "chunked_header_encode", encode_method,
           "chunked_header_encode(chunk_size, nonce_prefix)\n--\n\n"
           "The 27-byte header of cb3's encrypted file format (cb3_chunked_header_encode).")

/* The fault goes into call->context, which the prepare hook points at itself. */
static int decode_prepare(HPyContext *ctx, cb3_call *call)
{
    (void)ctx;
    call->context = (cb3_error_context){.header_fault = call->state};
    call->given = &call->context;
    return 0;
}

static cb3_result decode(cb3_call *call)
{
    const cb3_buffer *header = call->in[CB3_ARG_BYTES];
    uint32_t chunk_size = 0;
    /* The first bytes of a stream: what follows the header is not its business. */
    size_t len = header->len < CB3_CHUNKED_HEADER_SIZE ? header->len : CB3_CHUNKED_HEADER_SIZE;
    cb3_result r = cb3_chunked_header_decode(header->ptr, len, call->out[0].ptr, call->out[0].len, &chunk_size,
                                             call->state);
    call->written = chunk_size;
    return r;
}

/* (chunk_size, nonce_prefix) */
static HPy decode_finish(HPyContext *ctx, cb3_call *call)
{
    return cb3_pair(ctx, HPyLong_FromSize_t(ctx, call->written), cb3_output_finish(ctx, &call->out[0]));
}

static const cb3_method decode_method = {
    .spec = {"chunked_header_decode", {"header", NULL}, 1, 0},
    .role = {CB3_ARG_BYTES},
    .size = {CB3_SIZE_FIXED},
    .fixed = CB3_CHUNKED_PREFIX_SIZE,
    .prepare = decode_prepare,
    .run = decode,
    .returns = CB3_RETURN_CUSTOM,
    .finish = decode_finish,
};

HPyDef_METH(cb3_chunked_header_decode_def, "chunked_header_decode", HPyFunc_KEYWORDS,
            .doc = "chunked_header_decode(header)\n--\n\n"
                   "(chunk_size, nonce_prefix) of a stream header, from its first 27 bytes\n"
                   "(cb3_chunked_header_decode); cb3.ChunkedHeaderError naming the rule it breaks.")
static HPy cb3_chunked_header_decode_def_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs,
                                              HPy kwnames)
{
    cb3_chunked_header_fault fault = {CB3_CHUNKED_HEADER_RULE_LENGTH, 0};
    return cb3_method_call(ctx, &decode_method, self, args, nargs, kwnames, &fault);
}

static HPyDef *Chunked_defines[] = {
    &Chunked_new, &Chunked_destroy, &Chunked_seal_into, &Chunked_open_into, CB3_TYPE_FIXES_DEFS NULL,
};

HPyType_Spec cb3_Chunked_spec = {
    .name = "cb3._cb3.Chunked",
    .doc = "Chunked(key, header, associated_data, max_threads)\n\n"
           "The chunks of one cb3 encrypted stream (docs/stream-format.md). Internal: use\n"
           "cb3.EncryptingWriter, cb3.DecryptingReader, cb3.encrypt_file, cb3.decrypt_file.",
    .basicsize = sizeof(ChunkedObject),
    .builtin_shape = SHAPE(ChunkedObject),
    .defines = Chunked_defines,
};
