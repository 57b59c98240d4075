// cb3.h from C++: the header compiles as C++ and links (extern "C") against
// libcb3.a; a round trip and the error enum work as in C.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cb3.h"

int main()
{
    int failed = 0, passed = 0;
    auto check = [&](bool ok, const char *what) {
        if (ok) {
            passed++;
        } else {
            failed++;
            std::printf("FAIL %s\n", what);
        }
    };
    std::vector<uint8_t> key(CB3_KEY_SIZE, 7), nonce(CB3_NONCE_SIZE, 9);
    const std::string message = "hello from C++";
    cb3_aead *aead = nullptr;
    check(cb3_aead_new(key.data(), key.size(), &aead) == CB3_RESULT_OK, "cb3_aead_new");
    std::vector<uint8_t> ct(message.size() + CB3_TAG_SIZE), back(message.size());
    size_t n = 0;
    cb3_result r = cb3_aead_encrypt(aead, nonce.data(), nonce.size(),
                                    reinterpret_cast<const uint8_t *>(message.data()), message.size(), nullptr, 0,
                                    ct.data(), ct.size(), &n);
    check(r == CB3_RESULT_OK && n == ct.size(), "cb3_aead_encrypt");
    r = cb3_aead_decrypt(aead, nonce.data(), nonce.size(), ct.data(), ct.size(), nullptr, 0, CB3_OUTPUT_MODE_SHARED, back.data(), back.size(),
                         &n);
    check(r == CB3_RESULT_OK && std::memcmp(back.data(), message.data(), message.size()) == 0, "cb3_aead_decrypt");
    ct[0] ^= 1;
    r = cb3_aead_decrypt(aead, nonce.data(), nonce.size(), ct.data(), ct.size(), nullptr, 0, CB3_OUTPUT_MODE_SHARED, back.data(), back.size(),
                         &n);
    check(r == CB3_RESULT_DECRYPTION_FAILED, "tampered ciphertext fails");
    check(std::string(cb3_result_message(r)).find("decryption failed") == 0, "cb3_result_message");
    cb3_aead_free(aead);

    cb3_stream *stream = nullptr;
    check(cb3_stream_new(key.data(), key.size(), nonce.data(), nonce.size(), 0, &stream) == CB3_RESULT_OK,
          "cb3_stream_new");
    check(cb3_stream_message_index(stream) == 0, "cb3_stream_message_index");
    cb3_stream_free(stream);
    check(std::string(cb3_version()) == std::to_string(CB3_VERSION_MAJOR) + "." + std::to_string(CB3_VERSION_MINOR) +
                                            "." + std::to_string(CB3_VERSION_PATCH),
          "cb3_version");
    check(cb3_simd_backend() != nullptr, "cb3_simd_backend");
    std::printf("test_cxx: %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
