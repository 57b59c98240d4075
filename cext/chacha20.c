/* cb3.chacha20.ChaCha20 and hchacha20: the raw ChaCha stream ciphers, a thin shell
 * over cb3_chacha_* (rustlib/src/chacha20.rs). */
#include "call.h"
#include "module.h"
#include "types.h"

typedef struct {
    cb3_chacha *chacha; /* owned; locks internally, so shared freely between threads */
    int wide;           /* 8-byte nonce: 64-bit block counter (for messages) */
} ChaChaObject;

HPyType_HELPERS(ChaChaObject)
CB3_OWNER(ChaCha, ChaChaObject, cb3_chacha, chacha, cb3_chacha_free)

/* What cb3_raise needs to explain a failure of this object. */
static const cb3_error_context *given_for(int wide)
{
    static const cb3_error_context given[2] = {{.object = "cb3.chacha20.ChaCha20"},
                                               {.object = "cb3.chacha20.ChaCha20", .wide = 1}};
    return &given[wide != 0];
}

static int ChaCha_prepare(HPyContext *ctx, cb3_call *call)
{
    static const cb3_int_param counter_param = {"counter", 0, NULL}, rounds_param = {"rounds", 0, NULL};
    uint64_t counter = 0, rounds = 20;
    if (!HPy_IsNull(call->arg[2]) && cb3_arg_int(ctx, call->arg[2], &counter_param, &counter) < 0)
        return -1;
    if (!HPy_IsNull(call->arg[3]) && cb3_arg_int(ctx, call->arg[3], &rounds_param, &rounds) < 0)
        return -1;
    call->value[2] = counter;
    call->value[3] = rounds;
    call->context = (cb3_error_context){
        .nonce_sizes = "8 bytes (original ChaCha), 12 bytes (RFC 8439) or 24 bytes (XChaCha)",
        .counter = counter,
        .rounds = rounds,
        .wide = call->in[CB3_ARG_NONCE]->len == 8,
    };
    call->given = &call->context;
    return 0;
}

static cb3_result ChaCha_make(cb3_call *call)
{
    const cb3_buffer *key = call->in[CB3_ARG_KEY], *nonce = call->in[CB3_ARG_NONCE];
    uint64_t rounds = call->value[3];
    /* rounds above UINT32_MAX become 0, which Rust refuses as it does 7 */
    return cb3_chacha_new(key->ptr, key->len, nonce->ptr, nonce->len, call->value[2],
                          rounds > UINT32_MAX ? 0 : (uint32_t)rounds, (cb3_chacha **)&call->made);
}

static HPy ChaCha_finish_new(HPyContext *ctx, cb3_call *call);

static const cb3_method ChaCha_new_method = {
    .spec = {"ChaCha20", {"key", "nonce", "counter", "rounds", NULL}, 2, 2},
    .role = {CB3_ARG_KEY, CB3_ARG_NONCE, CB3_ARG_OBJECT, CB3_ARG_OBJECT},
    .prepare = ChaCha_prepare,
    .run = ChaCha_make,
    .returns = CB3_RETURN_CUSTOM,
    .finish = ChaCha_finish_new,
    .kind = CB3_OBJECT_KIND_CHACHA,
    .free = ChaCha_free,
};
CB3_CONSTRUCTOR(ChaCha_new, ChaCha_new_method)

static HPy ChaCha_finish_new(HPyContext *ctx, cb3_call *call)
{
    HPy result = cb3_call_adopt(ctx, &ChaCha_new_method, call);
    if (!HPy_IsNull(result))
        ChaChaObject_AsStruct(ctx, result)->wide = call->context.wide;
    return result;
}

/* ---- keystream ----
 *
 * update (a new bytes object), update_into (a caller's buffer) and
 * xor_in_place: one cb3_chacha_apply call each, of len(data) bytes. */

/* The object's error context. */
static int apply_prepare(HPyContext *ctx, cb3_call *call)
{
    call->given = given_for(ChaChaObject_AsStruct(ctx, call->self)->wide);
    return 0;
}

/* update_into: out holds len(data) bytes at least. */
static int into_prepare(HPyContext *ctx, cb3_call *call)
{
    const cb3_buffer *out = call->in[CB3_ARG_BUF];
    if (out->len < call->input)
        return cb3_raisef(ctx, ctx->h_ValueError, "out must be at least len(data) = %zu bytes, got %zu",
                          call->input, out->len);
    return apply_prepare(ctx, call);
}

static cb3_result update(cb3_call *call)
{
    const cb3_buffer *data = call->in[CB3_ARG_DATA];
    return cb3_chacha_apply(call->inner, data->ptr, data->len, call->out[0].ptr, data->len);
}

static cb3_result update_into(cb3_call *call)
{
    const cb3_buffer *data = call->in[CB3_ARG_DATA];
    call->written = data->len;
    return cb3_chacha_apply(call->inner, data->ptr, data->len, (uint8_t *)call->in[CB3_ARG_BUF]->ptr, data->len);
}

static cb3_result xor_in_place(cb3_call *call)
{
    const cb3_buffer *buf = call->in[CB3_ARG_BUF];
    return cb3_chacha_apply(call->inner, buf->ptr, buf->len, (uint8_t *)buf->ptr, buf->len);
}

static const cb3_method methods[] = {
    {.spec = {"update", {"data", NULL}, 1, 0}, .role = {CB3_ARG_DATA}, .inner = 1, .size = {CB3_SIZE_INPUT},
     .prepare = apply_prepare, .run = update},
    {.spec = {"update_into", {"data", "out", NULL}, 2, 0}, .role = {CB3_ARG_DATA, CB3_ARG_BUF}, .inner = 1,
     .prepare = into_prepare, .run = update_into, .returns = CB3_RETURN_COUNT},
    {.spec = {"xor_in_place", {"buf", NULL}, 1, 0}, .role = {CB3_ARG_BUF}, .inner = 1, .prepare = apply_prepare,
     .run = xor_in_place, .returns = CB3_RETURN_NONE},
};

CB3_METHOD(ChaCha_update, "update", methods[0],
           "update($self, data)\n--\n\n"
           "XOR data with the next len(data) keystream bytes (encrypts and decrypts alike).\n"
           "Raises cb3.KeystreamExhaustedError, processing nothing, if the block counter would\n"
           "overflow.")

CB3_METHOD(ChaCha_update_into, "update_into", methods[1],
           "update_into($self, data, out)\n--\n\n"
           "Like update(), writing the result into the writable buffer out (at least len(data)\n"
           "bytes; out may be data itself) instead of a new bytes object; returns len(data).")

CB3_METHOD(ChaCha_xor_in_place, "xor_in_place", methods[2],
           "xor_in_place($self, buf)\n--\n\n"
           "XOR the writable buffer buf with the next len(buf) keystream bytes, in place.")

/* ---- position ---- */

/* Splits a byte position into the halves cb3_chacha_seek takes (high * 2**64
 * + low). Rust checks the range: a high half beyond 64 bits is passed as
 * UINT64_MAX, which it refuses like any position past the end. */
static int split_position(HPyContext *ctx, HPy obj, uint64_t *high, uint64_t *low)
{
    static const cb3_int_param position = {"position", 0, NULL};
    HPy index = cb3_arg_index(ctx, obj, &position);
    if (HPy_IsNull(index))
        return -1;
    HPy bits = HPyLong_FromLong(ctx, 64);
    HPy upper = HPy_Rshift(ctx, index, bits); /* a floor: negative exactly when index is */
    int status = HPy_IsNull(upper) ? -1 : 0;
    if (status == 0) {
        *low = HPyLong_AsUInt64_tMask(ctx, index);
        *high = HPyLong_AsUInt64_t(ctx, upper); /* UINT64_MAX if it does not fit */
        if (*high == UINT64_MAX && HPyErr_Occurred(ctx)) {
            HPyErr_Clear(ctx);
            if (HPy_RichCompareBool(ctx, upper, bits, HPy_LT)) /* below 0 rather than above UINT64_MAX */
                status = cb3_raisef(ctx, ctx->h_ValueError, "position must not be negative");
        }
        HPy_Close(ctx, upper);
    }
    HPy_Close(ctx, bits);
    HPy_Close(ctx, index);
    return status;
}

HPyDef_METH(ChaCha_seek, "seek", HPyFunc_KEYWORDS,
            .doc = "seek($self, position)\n--\n\n"
                   "Move to keystream byte position, counted from block 0 (a cipher made with counter=c\n"
                   "starts at 64 * c). At most the end of the keystream: 2**38 bytes with a 12- or 24-byte\n"
                   "nonce, 2**70 with an 8-byte nonce.")
static HPy ChaCha_seek_impl(HPyContext *ctx, HPy self, const HPy *args, size_t nargs, HPy kwnames)
{
    static const cb3_argspec spec = {"seek", {"position", NULL}, 1, 0};
    HPy arg[1];
    if (cb3_parse_args(ctx, &spec, args, nargs, kwnames, arg) < 0)
        return HPy_NULL;
    if (cb3_inner(ctx, self) == NULL)
        return HPy_NULL;
    ChaChaObject *obj = ChaChaObject_AsStruct(ctx, self);
    uint64_t high = 0, low = 0;
    if (split_position(ctx, arg[0], &high, &low) < 0)
        return HPy_NULL;
    cb3_result r;
    CB3_LOCKING(ctx, NULL, r, cb3_chacha_seek(obj->chacha, high, low));
    if (cb3_raise(ctx, r, given_for(obj->wide)) < 0)
        return HPy_NULL;
    return HPy_Dup(ctx, ctx->h_None);
}

HPyDef_GET(ChaCha_position, "position",
           .doc = "The keystream byte position of the next byte, counted from block 0: 64 * counter\n"
                  "when new, then advanced by every byte processed.")
static HPy ChaCha_position_get(HPyContext *ctx, HPy self, void *closure)
{
    (void)closure;
    uint64_t high = 0, low = 0;
    const cb3_chacha *chacha = cb3_inner(ctx, self);
    if (chacha == NULL)
        return HPy_NULL;
    cb3_result r;
    CB3_LOCKING(ctx, NULL, r, cb3_chacha_position(chacha, &high, &low));
    if (cb3_raise(ctx, r, given_for(ChaChaObject_AsStruct(ctx, self)->wide)) < 0)
        return HPy_NULL;
    if (high == 0)
        return HPyLong_FromUInt64_t(ctx, low);
    /* high << 64 | low, from 2**64 on (8-byte nonces) */
    HPy part[4] = {HPyLong_FromUInt64_t(ctx, high), HPyLong_FromLong(ctx, 64), HPyLong_FromUInt64_t(ctx, low),
                   HPy_NULL};
    part[3] = HPy_Lshift(ctx, part[0], part[1]);
    HPy result = HPy_IsNull(part[3]) ? HPy_NULL : HPy_Or(ctx, part[3], part[2]);
    cb3_close_all(ctx, part, 4);
    return result;
}

static HPyDef *ChaCha_defines[] = {
    &ChaCha_new,  &ChaCha_destroy, &ChaCha_update, &ChaCha_update_into, &ChaCha_xor_in_place,
    &ChaCha_seek, &ChaCha_position, CB3_TYPE_FIXES_DEFS NULL,
};

HPyType_Spec cb3_ChaCha20_spec = {
    .name = "cb3.chacha20.ChaCha20",
    .doc = "ChaCha20(key, nonce, *, counter=0, rounds=20)\n--\n\n"
           "The raw ChaCha stream cipher (no authentication: see cb3.ChaCha20Blake3 for an AEAD).\n"
           "key is 32 bytes; the nonce length picks the variant:\n"
           "- 8 bytes: the original (DJB) layout with a 64-bit block counter;\n"
           "- 12 bytes: RFC 8439 with a 32-bit block counter;\n"
           "- 24 bytes: XChaCha (HChaCha subkey, then the RFC 8439 layout), 32-bit counter.\n"
           "counter is the starting block; rounds is 20, 12 or 8. The counter never wraps: past\n"
           "the last block, calls raise cb3.KeystreamExhaustedError and process nothing.\n"
           "Objects lock internally and may be shared between threads.",
    .basicsize = sizeof(ChaChaObject),
    .builtin_shape = SHAPE(ChaChaObject),
    .defines = ChaCha_defines,
};

/* ---- HChaCha20 ---- */

static cb3_result hchacha20(cb3_call *call)
{
    const cb3_buffer *key = call->in[CB3_ARG_KEY], *nonce = call->in[CB3_ARG_NONCE];
    return cb3_hchacha20(key->ptr, key->len, nonce->ptr, nonce->len, call->out[0].ptr, call->out[0].len);
}

static const cb3_error_context hchacha20_given = {.nonce_sizes = "16 bytes"};

static const cb3_method hchacha20_method = {
    .spec = {"hchacha20", {"key", "nonce", NULL}, 2, 0},
    .role = {CB3_ARG_KEY, CB3_ARG_NONCE},
    .size = {CB3_SIZE_FIXED},
    .fixed = 32,
    .given = &hchacha20_given,
    .run = hchacha20,
};

CB3_METHOD(cb3_hchacha20_def, "hchacha20", hchacha20_method,
           "hchacha20(key, nonce)\n--\n\n"
           "HChaCha20 (draft-irtf-cfrg-xchacha section 2.2): the 32-byte subkey derived from a\n"
           "32-byte key and a 16-byte nonce.")
