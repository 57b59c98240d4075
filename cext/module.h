/* What module.c registers: the types and functions each file defines. */
#ifndef CB3_MODULE_H
#define CB3_MODULE_H

#include "compat.h"

extern HPyType_Spec cb3_ChaCha20Blake3_spec; /* aead.c */
extern HPyType_Spec cb3_Stream_spec;         /* stream.c */
extern HPyType_Spec cb3_blake3_spec;         /* hash.c */
extern HPyType_Spec cb3_ChaCha20_spec;       /* chacha20.c */
extern HPyType_Spec cb3_Chunked_spec;        /* chunked.c: cb3's encrypted file format */

extern HPyDef cb3_hash_def;                  /* hash.c */
extern HPyDef cb3_keyed_hash_def;            /* hash.c */
extern HPyDef cb3_derive_key_def;            /* hash.c */
extern HPyDef cb3_hchacha20_def;             /* chacha20.c */
extern HPyDef cb3_chunked_header_encode_def; /* chunked.c */
extern HPyDef cb3_chunked_header_decode_def; /* chunked.c */

#endif /* CB3_MODULE_H */
