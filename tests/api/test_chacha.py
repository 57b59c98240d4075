"""cb3.chacha20: the raw ChaCha stream ciphers.

- RFC 8439 section 2.3.2 (block function), 2.4.2 (encryption) and appendix
  A.1 (block function) / A.2 (encryption) test vectors.
- draft-irtf-cfrg-xchacha: HChaCha20 (section 2.2.1) and XChaCha20 (A.3.2).
- Random cross-checks against pyca/cryptography (16-byte nonce:
  le32(counter) || nonce12, or counter64 || nonce8) and pycryptodome (8, 12
  and 24-byte nonces, seek), and against a plain-Python ChaCha for the
  reduced-round variants.
"""

import os
import platform
import random
import struct
import threading

import numpy
import pytest

import cb3
from helpers import assert_gil_released, run_threads
from cb3.chacha20 import ChaCha20, KeystreamExhaustedError, hchacha20
# The peers (pyca/cryptography, pycryptodome) are imported by the tests that
# compare with them, never at module level: the known-answer tests must run
# whether or not a peer is installed.


def h(text: str) -> bytes:
    return bytes.fromhex("".join(text.split()))


# ---- a plain-Python reference (RFC 8439 section 2.3), any rounds ----

MASK = 0xFFFFFFFF


def _rotl(v, c):
    return ((v << c) & MASK) | (v >> (32 - c))


def _rounds(s, n):
    def qr(a, b, c, d):
        s[a] = (s[a] + s[b]) & MASK
        s[d] = _rotl(s[d] ^ s[a], 16)
        s[c] = (s[c] + s[d]) & MASK
        s[b] = _rotl(s[b] ^ s[c], 12)
        s[a] = (s[a] + s[b]) & MASK
        s[d] = _rotl(s[d] ^ s[a], 8)
        s[c] = (s[c] + s[d]) & MASK
        s[b] = _rotl(s[b] ^ s[c], 7)

    for _ in range(n // 2):
        qr(0, 4, 8, 12), qr(1, 5, 9, 13), qr(2, 6, 10, 14), qr(3, 7, 11, 15)
        qr(0, 5, 10, 15), qr(1, 6, 11, 12), qr(2, 7, 8, 13), qr(3, 4, 9, 14)


CONSTANTS = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574]


def ref_block(key, tail_words, n):
    start = CONSTANTS + list(struct.unpack("<8I", key)) + list(tail_words)
    s = list(start)
    _rounds(s, n)
    return struct.pack("<16I", *((a + b) & MASK for a, b in zip(s, start)))


def ref_hchacha(key, nonce16, n=20):
    s = CONSTANTS + list(struct.unpack("<8I", key)) + list(struct.unpack("<4I", nonce16))
    _rounds(s, n)
    return struct.pack("<8I", *(s[:4] + s[12:]))


def ref_keystream(key, nonce, start, length, n=20):
    """Keystream bytes [start, start + length) by the spec."""
    out = bytearray()
    block = start // 64
    if len(nonce) == 24:
        key, nonce = ref_hchacha(key, nonce[:16], n), bytes(4) + nonce[16:]
    while len(out) < length + start % 64:
        if len(nonce) == 8:
            tail = [block & MASK, block >> 32] + list(struct.unpack("<2I", nonce))
        else:
            assert block < 2**32
            tail = [block] + list(struct.unpack("<3I", nonce))
        out += ref_block(key, tail, n)
        block += 1
    return bytes(out[start % 64 :][:length])


def xor(a, b):
    return bytes(x ^ y for x, y in zip(a, b))


# ---- RFC 8439 ----

RFC_KEY = bytes(range(32))


def test_rfc8439_2_3_2_block_function():
    cipher = ChaCha20(RFC_KEY, h("000000090000004a00000000"), counter=1)
    assert cipher.update(bytes(64)) == h(
        """10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e
           d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e"""
    )


SUNSCREEN = (
    b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, "
    b"sunscreen would be it."
)


def test_rfc8439_2_4_2_encryption():
    expected = h(
        """6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afccfd9fae0b
           f91b65c5524733ab8f593dabcd62b3571639d624e65152ab8f530c359f0861d8
           07ca0dbf500d6a6156a38e088a22b65e52bc514d16ccf806818ce91ab7793736
           5af90bbf74a35be6b40b8eedf2785e42874d"""
    )
    nonce = h("000000000000004a00000000")
    assert ChaCha20(RFC_KEY, nonce, counter=1).update(SUNSCREEN) == expected
    assert ChaCha20(RFC_KEY, nonce, counter=1).update(expected) == SUNSCREEN
    # Same with a seek instead of the counter, and in pieces.
    cipher = ChaCha20(RFC_KEY, nonce)
    cipher.seek(64)
    assert cipher.update(SUNSCREEN[:10]) + cipher.update(SUNSCREEN[10:]) == expected


# Appendix A.1: (key, nonce, block counter, keystream block)
A1 = [
    (
        bytes(32),
        bytes(12),
        0,
        """76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7
           da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586""",
    ),
    (
        bytes(32),
        bytes(12),
        1,
        """9f07e7be5551387a98ba977c732d080dcb0f29a048e3656912c6533e32ee7aed
           29b721769ce64e43d57133b074d839d531ed1f28510afb45ace10a1f4b794d6f""",
    ),
    (
        bytes(31) + b"\x01",
        bytes(12),
        1,
        """3aeb5224ecf849929b9d828db1ced4dd832025e8018b8160b82284f3c949aa5a
           8eca00bbb4a73bdad192b5c42f73f2fd4e273644c8b36125a64addeb006c13a0""",
    ),
    (
        b"\x00\xff" + bytes(30),
        bytes(12),
        2,
        """72d54dfbf12ec44b362692df94137f328fea8da73990265ec1bbbea1ae9af0ca
           13b25aa26cb4a648cb9b9d1be65b2c0924a66c54d545ec1b7374f4872e99f096""",
    ),
    (
        bytes(32),
        bytes(11) + b"\x02",
        0,
        """c2c64d378cd536374ae204b9ef933fcd1a8b2288b3dfa49672ab765b54ee27c7
           8a970e0e955c14f3a88e741b97c286f75f8fc299e8148362fa198a39531bed6d""",
    ),
]


@pytest.mark.parametrize("key, nonce, counter, block", A1)
def test_rfc8439_a1_block_function(key, nonce, counter, block):
    assert ChaCha20(key, nonce, counter=counter).update(bytes(64)) == h(block)
    assert ref_keystream(key, nonce, 64 * counter, 64) == h(block)


IETF_SUBMISSION = (
    b'Any submission to the IETF intended by the Contributor for publication as all or part of an IETF '
    b'Internet-Draft or RFC and any statement made within the context of an IETF activity is considered an '
    b'"IETF Contribution". Such statements include oral statements in IETF sessions, as well as written and '
    b"electronic communications made at any time or place, which are addressed to"
)
JABBERWOCKY = (
    b"'Twas brillig, and the slithy toves\nDid gyre and gimble in the wabe:\nAll mimsy were the borogoves,\n"
    b"And the mome raths outgrabe."
)

# Appendix A.2: (key, nonce, counter, plaintext, ciphertext)
A2 = [
    (
        bytes(32),
        bytes(12),
        0,
        bytes(64),
        """76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7
           da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586""",
    ),
    (
        bytes(31) + b"\x01",
        bytes(11) + b"\x02",
        1,
        IETF_SUBMISSION,
        """a3fbf07df3fa2fde4f376ca23e82737041605d9f4f4f57bd8cff2c1d4b7955ec
           2a97948bd3722915c8f3d337f7d370050e9e96d647b7c39f56e031ca5eb6250d
           4042e02785ececfa4b4bb5e8ead0440e20b6e8db09d881a7c6132f420e527950
           42bdfa7773d8a9051447b3291ce1411c680465552aa6c405b7764d5e87bea85a
           d00f8449ed8f72d0d662ab052691ca66424bc86d2df80ea41f43abf937d3259d
           c4b2d0dfb48a6c9139ddd7f76966e928e635553ba76c5c879d7b35d49eb2e62b
           0871cdac638939e25e8a1e0ef9d5280fa8ca328b351c3c765989cbcf3daa8b6c
           cc3aaf9f3979c92b3720fc88dc95ed84a1be059c6499b9fda236e7e818b04b0b
           c39c1e876b193bfe5569753f88128cc08aaa9b63d1a16f80ef2554d7189c411f
           5869ca52c5b83fa36ff216b9c1d30062bebcfd2dc5bce0911934fda79a86f6e6
           98ced759c3ff9b6477338f3da4f9cd8514ea9982ccafb341b2384dd902f3d1ab
           7ac61dd29c6f21ba5b862f3730e37cfdc4fd806c22f221""",
    ),
    (
        h("1c9240a5eb55d38af333888604f6b5f0473917c1402b80099dca5cbc207075c0"),
        bytes(11) + b"\x02",
        42,
        JABBERWOCKY,
        """62e6347f95ed87a45ffae7426f27a1df5fb69110044c0d73118effa95b01e5cf
           166d3df2d721caf9b21e5fb14c616871fd84c54f9d65b283196c7fe4f60553eb
           f39c6402c42234e32a356b3e764312a61a5532055716ead6962568f87d3f3f77
           04c6a8d1bcd1bf4d50d6154b6da731b187b58dfd728afa36757a797ac188d1""",
    ),
]


@pytest.mark.parametrize("key, nonce, counter, plaintext, ciphertext", A2)
def test_rfc8439_a2_encryption(key, nonce, counter, plaintext, ciphertext):
    assert ChaCha20(key, nonce, counter=counter).update(plaintext) == h(ciphertext)
    buf = bytearray(h(ciphertext))
    ChaCha20(key, nonce, counter=counter).xor_in_place(buf)
    assert buf == plaintext


# ---- draft-irtf-cfrg-xchacha ----


def test_hchacha20_2_2_1():
    key = bytes(range(32))
    nonce = h("000000090000004a0000000031415927")
    expected = h("82413b4227b27bfed30e42508a877d73a0f9e4d58a74a853c12ec41326d3ecdc")
    assert hchacha20(key, nonce) == expected
    assert hchacha20(key=bytearray(key), nonce=memoryview(nonce)) == expected
    assert ref_hchacha(key, nonce) == expected
    with pytest.raises(ValueError, match="nonce must be 16 bytes, got 12"):
        hchacha20(key, nonce[:12])
    with pytest.raises(ValueError, match="key must be 32 bytes, got 31"):
        hchacha20(key[:31], nonce)


DHOLE = h(
    """5468652064686f6c65202870726f6e6f756e6365642022646f6c652229206973
       20616c736f206b6e6f776e2061732074686520417369617469632077696c6420
       646f672c2072656420646f672c20616e642077686973746c696e6720646f672e
       2049742069732061626f7574207468652073697a65206f662061204765726d61
       6e20736865706865726420627574206c6f6f6b73206d6f7265206c696b652061
       206c6f6e672d6c656767656420666f782e205468697320686967686c7920656c
       757369766520616e6420736b696c6c6564206a756d70657220697320636c6173
       736966696564207769746820776f6c7665732c20636f796f7465732c206a6163
       6b616c732c20616e6420666f78657320696e20746865207461786f6e6f6d6963
       2066616d696c792043616e696461652e"""
)
DHOLE_KEYSTREAM = h(
    """29624b4b1b140ace53740e405b2168540fd7d630c1f536fecd722fc3cddba7f4
       cca98cf9e47e5e64d115450f9b125b54449ff76141ca620a1f9cfcab2a1a8a25
       5e766a5266b878846120ea64ad99aa479471e63befcbd37cd1c22a221fe46221
       5cf32c74895bf505863ccddd48f62916dc6521f1ec50a5ae08903aa259d9bf60
       7cd8026fba548604f1b6072d91bc91243a5b845f7fd171b02edc5a0a84cf28dd
       241146bc376e3f48df5e7fee1d11048c190a3d3deb0feb64b42d9c6fdeee290f
       a0e6ae2c26c0249ea8c181f7e2ffd100cbe5fd3c4f8271d62b15330cb8fdcf00
       b3df507ca8c924f7017b7e712d15a2eb5c50484451e54e1b4b995bd8fdd94597
       bb94d7af0b2c04df10ba0890899ed9293a0f55b8bafa999264035f1d4fbe7fe0
       aafa109a62372027e50e10cdfecca127"""
)
DHOLE_CIPHERTEXT = h(
    """7d0a2e6b7f7c65a236542630294e063b7ab9b555a5d5149aa21e4ae1e4fbce87
       ecc8e08a8b5e350abe622b2ffa617b202cfad72032a3037e76ffdcdc4376ee05
       3a190d7e46ca1de04144850381b9cb29f051915386b8a710b8ac4d027b8b050f
       7cba5854e028d564e453b8a968824173fc16488b8970cac828f11ae53cabd201
       12f87107df24ee6183d2274fe4c8b1485534ef2c5fbc1ec24bfc3663efaa08bc
       047d29d25043532db8391a8a3d776bf4372a6955827ccb0cdd4af403a7ce4c63
       d595c75a43e045f0cce1f29c8b93bd65afc5974922f214a40b7c402cdb91ae73
       c0b63615cdad0480680f16515a7ace9d39236464328a37743ffc28f4ddb324f4
       d0f5bbdc270c65b1749a6efff1fbaa09536175ccd29fb9e6057b307320d31683
       8a9c71f70b5b5907a66f7ea49aadc409"""
)
X_KEY = h("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f")
X_NONCE = h("404142434445464748494a4b4c4d4e4f5051525354555658")


def test_xchacha20_a_3_2():
    # The draft's keystream and ciphertext start at block 1.
    assert ChaCha20(X_KEY, X_NONCE, counter=1).update(bytes(len(DHOLE))) == DHOLE_KEYSTREAM
    assert ChaCha20(X_KEY, X_NONCE, counter=1).update(DHOLE) == DHOLE_CIPHERTEXT
    cipher = ChaCha20(X_KEY, X_NONCE)
    cipher.update(bytes(64))
    assert cipher.update(DHOLE) == DHOLE_CIPHERTEXT
    assert ref_keystream(X_KEY, X_NONCE, 64, len(DHOLE)) == DHOLE_KEYSTREAM
    assert xor(DHOLE, DHOLE_KEYSTREAM) == DHOLE_CIPHERTEXT


# ---- cross-checks ----


def cryptography_keystream(key, nonce16, length):
    ciphers = pytest.importorskip("cryptography.hazmat.primitives.ciphers")
    Cipher, algorithms = ciphers.Cipher, ciphers.algorithms
    return Cipher(algorithms.ChaCha20(key, nonce16), mode=None).encryptor().update(bytes(length))


def test_random_against_cryptography():
    rng = random.Random(8439)
    for _ in range(200):
        key = rng.randbytes(32)
        length = rng.choice([0, 1, 63, 64, 65, rng.randrange(5000), rng.randrange(300_000)])
        if rng.random() < 0.5:
            # RFC 8439: le32(counter) || nonce12, staying below the 32-bit end.
            nonce = rng.randbytes(12)
            counter = rng.choice([0, 1, rng.randrange(2**32 - 5000)])
            expected = cryptography_keystream(key, struct.pack("<I", counter) + nonce, length)
        else:
            # Original layout: counter64 || nonce8, any high word. (cryptography
            # 50 refuses to cross a 2**32-block boundary even in this layout;
            # the crossing is checked against pycryptodome and the reference.)
            nonce = rng.randbytes(8)
            low = rng.choice([0, rng.randrange(2**32 - 5000)])
            counter = rng.choice([0, rng.randrange(2**32)]) << 32 | low
            expected = cryptography_keystream(key, struct.pack("<Q", counter) + nonce, length)
        cipher = ChaCha20(key, nonce, counter=counter)
        got = b""
        while len(got) < length:
            got += cipher.update(bytes(rng.randrange(1, length - len(got) + 1)))
        assert got == expected
        assert cipher.position == 64 * counter + length


def test_random_against_pycryptodome():
    Crypto_ChaCha20 = pytest.importorskip("Crypto.Cipher.ChaCha20")
    rng = random.Random(7539)
    for _ in range(300):
        key = rng.randbytes(32)
        nonce = rng.randbytes(rng.choice([8, 12, 24]))
        data = rng.randbytes(rng.choice([0, 1, 64, rng.randrange(4000), rng.randrange(200_000)]))
        limit = 2**70 if len(nonce) == 8 else 2**38
        position = rng.choice([0, rng.randrange(10_000), rng.randrange(limit - len(data) - 64)])
        theirs = Crypto_ChaCha20.new(key=key, nonce=nonce)
        ours = ChaCha20(key, nonce)
        if position:
            theirs.seek(position)
            ours.seek(position)
        assert ours.position == position
        out = b""
        rest = data
        while rest:
            n = rng.randrange(1, len(rest) + 1)
            out += ours.update(rest[:n])
            rest = rest[n:]
        assert out == theirs.encrypt(data)
        assert ours.position == position + len(data)


@pytest.mark.parametrize("rounds", [8, 12, 20])
@pytest.mark.parametrize("nonce_len", [8, 12, 24])
def test_reduced_rounds_against_reference(rounds, nonce_len):
    rng = random.Random(rounds * 100 + nonce_len)
    key, nonce = rng.randbytes(32), rng.randbytes(nonce_len)
    for counter in (0, 1, 2**32 - 4):
        cipher = ChaCha20(key, nonce, counter=counter, rounds=rounds)
        assert cipher.update(bytes(200)) == ref_keystream(key, nonce, 64 * counter, 200, rounds)
    if nonce_len == 8:  # across the 2**32 block boundary, and at the very end
        cipher = ChaCha20(key, nonce, rounds=rounds)
        cipher.seek(64 * (2**32 - 1) + 5)
        assert cipher.update(bytes(150)) == ref_keystream(key, nonce, 64 * (2**32 - 1) + 5, 150, rounds)
        cipher = ChaCha20(key, nonce, counter=2**64 - 1, rounds=rounds)
        assert cipher.update(bytes(64)) == ref_keystream(key, nonce, 64 * (2**64 - 1), 64, rounds)
    if rounds == 20:
        theirs = pytest.importorskip("Crypto.Cipher.ChaCha20").new(key=key, nonce=nonce)
        assert ChaCha20(key, nonce).update(bytes(1000)) == theirs.encrypt(bytes(1000))


# ---- the counter never wraps ----


@pytest.mark.parametrize("nonce_len", [12, 24])
def test_32_bit_counter_end(nonce_len):
    key, nonce = os.urandom(32), os.urandom(nonce_len)
    last_block = 64 * (2**32 - 1)
    cipher = ChaCha20(key, nonce, counter=2**32 - 1)
    assert cipher.position == last_block
    cipher.seek(last_block - 10)
    with pytest.raises(KeystreamExhaustedError) as info:
        cipher.update(bytes(75))
    assert isinstance(info.value, OverflowError) and isinstance(info.value, ValueError)
    assert "nothing was processed" in str(info.value)
    assert cipher.position == last_block - 10  # nothing consumed
    assert cipher.update(bytes(74)) == ref_keystream(key, nonce, last_block - 10, 74)  # the last block is usable
    assert cipher.position == 2**38
    with pytest.raises(KeystreamExhaustedError):
        cipher.update(b"x")
    with pytest.raises(OverflowError):
        cipher.xor_in_place(bytearray(1))
    with pytest.raises(ValueError):
        cipher.update_into(b"x", bytearray(1))
    assert cipher.update(b"") == b""
    cipher.seek(2**38)
    with pytest.raises(ValueError, match="position must be at most the end of the keystream"):
        cipher.seek(2**38 + 1)
    with pytest.raises(ValueError, match="counter must be less than 2\\*\\*32"):
        ChaCha20(key, nonce, counter=2**32)


def test_64_bit_counter_end():
    key, nonce = os.urandom(32), os.urandom(8)
    cipher = ChaCha20(key, nonce, counter=2**64 - 1)
    assert cipher.update(bytes(64)) == ref_keystream(key, nonce, 64 * (2**64 - 1), 64)
    assert cipher.position == 2**70
    with pytest.raises(KeystreamExhaustedError):
        cipher.update(b"x")
    cipher.seek(2**70 - 1)
    assert cipher.position == 2**70 - 1
    cipher.seek(2**70)
    assert cipher.position == 2**70
    with pytest.raises(ValueError, match="2\\*\\*70"):
        cipher.seek(2**70 + 1)
    with pytest.raises(ValueError, match="counter must be less than 2\\*\\*64"):
        ChaCha20(key, nonce, counter=2**64)
    # The crossing from block 2**32 - 1 to 2**32 carries into the high word.
    cipher = ChaCha20(key, nonce, counter=2**32 - 1)
    assert cipher.update(bytes(128)) == ref_keystream(key, nonce, 64 * (2**32 - 1), 128)
    assert cipher.update(bytes(1000)) == ref_keystream(key, nonce, 64 * (2**32 + 1), 1000)


# ---- buffers and methods ----


def test_update_into_and_in_place():
    key, nonce = os.urandom(32), os.urandom(12)
    data = os.urandom(5000)
    expected = ChaCha20(key, nonce).update(data)

    out = bytearray(6000)
    assert ChaCha20(key, nonce).update_into(data, out) == 5000
    assert out[:5000] == expected and out[5000:] == bytes(1000)

    buf = bytearray(data)
    assert ChaCha20(key, nonce).update_into(buf, buf) == 5000  # the same buffer: in place
    assert buf == expected

    buf = bytearray(data)
    assert ChaCha20(key, nonce).xor_in_place(buf) is None
    assert buf == expected

    arr = numpy.frombuffer(bytearray(data), numpy.uint8)
    ChaCha20(key, nonce).xor_in_place(arr)
    assert arr.tobytes() == expected

    view = memoryview(bytearray(data))
    ChaCha20(key, nonce).xor_in_place(view[100:])
    assert view[:100] == data[:100] and view[100:] == ChaCha20(key, nonce).update(data[100:])

    with pytest.raises(ValueError, match="out must be at least len\\(data\\) = 5000 bytes, got 4999"):
        ChaCha20(key, nonce).update_into(data, bytearray(4999))
    buf = bytearray(data)
    with pytest.raises(ValueError, match="overlaps"):
        ChaCha20(key, nonce).update_into(memoryview(buf)[:100], memoryview(buf)[1:200])
    with pytest.raises(TypeError, match="out must be a writable buffer"):
        ChaCha20(key, nonce).update_into(data, bytes(5000))
    with pytest.raises(TypeError, match="buf must be a writable buffer"):
        ChaCha20(key, nonce).xor_in_place(b"read-only")


def test_argument_errors():
    key, nonce = bytes(32), bytes(12)
    for bad in (0, 7, 16, 23, 25, 32):
        with pytest.raises(ValueError, match=f"nonce must be 8 bytes .* got {bad}"):
            ChaCha20(key, bytes(bad))
    for bad in (0, 16, 31, 33):
        with pytest.raises(ValueError, match=f"key must be 32 bytes, got {bad}"):
            ChaCha20(bytes(bad), nonce)
    for bad in (0, 10, 16, 21):
        with pytest.raises(ValueError, match=f"rounds must be 20, 12 or 8, got {bad}"):
            ChaCha20(key, nonce, rounds=bad)
    with pytest.raises(ValueError, match="counter must not be negative"):
        ChaCha20(key, nonce, counter=-1)
    with pytest.raises(ValueError, match="counter must be less than 2\\*\\*64"):
        ChaCha20(key, bytes(8), counter=2**64)
    with pytest.raises(TypeError, match="counter must be an int, not 'float'"):
        ChaCha20(key, nonce, counter=1.0)
    with pytest.raises(TypeError, match="positional"):
        ChaCha20(key, nonce, 1)
    with pytest.raises(TypeError, match="missing required argument 'nonce'"):
        ChaCha20(key)
    with pytest.raises(TypeError, match="key must be a bytes-like object, not 'str'"):
        ChaCha20("k" * 32, nonce)
    with pytest.raises(TypeError, match="nonce must be a bytes-like object"):
        ChaCha20(key, None)
    cipher = ChaCha20(key, nonce)
    with pytest.raises(TypeError, match="data must be a bytes-like object, not 'str'"):
        cipher.update("text")
    with pytest.raises(ValueError, match="position must not be negative"):
        cipher.seek(-1)
    with pytest.raises(TypeError, match="position must be an int"):
        cipher.seek(1.5)
    with pytest.raises(ValueError, match="position must be at most"):
        cipher.seek(2**100)
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        cipher.update(dta=b"")
    with pytest.raises(AttributeError):
        cipher.position = 5
    assert cipher.update(data=b"") == b""
    assert cipher.position == 0


def test_keyword_arguments_and_counter():
    key, nonce = os.urandom(32), os.urandom(24)
    a = ChaCha20(key=key, nonce=nonce, counter=5, rounds=20)
    b = ChaCha20(key, nonce)
    b.seek(5 * 64)
    assert a.position == b.position == 320
    assert a.update(bytes(100)) == b.update(bytes(100))


def test_exports():
    assert cb3.chacha20.ChaCha20 is ChaCha20
    assert ChaCha20.__module__ == "cb3.chacha20"
    assert cb3.KeystreamExhaustedError is KeystreamExhaustedError
    assert issubclass(KeystreamExhaustedError, OverflowError)
    assert issubclass(KeystreamExhaustedError, ValueError)
    assert cb3.chacha20.NONCE_SIZES == (8, 12, 24)
    assert "Engine" in cb3.chacha20.__doc__ and "ChaChaCore" in cb3.chacha20.__doc__


# ---- threads ----


@pytest.mark.threads  # deselected under HPy debug mode only (see the marker in pyproject.toml)
def test_shared_between_threads():
    # Each update takes its own contiguous run of keystream, atomically.
    key, nonce = os.urandom(32), os.urandom(12)
    cipher = ChaCha20(key, nonce)
    size = 64 * 1024  # above the GIL threshold: the lock, not the GIL, serialises
    outputs = []
    lock = threading.Lock()

    def work():
        for _ in range(8):
            out = cipher.update(bytes(size))
            with lock:
                outputs.append(out)

    run_threads([work] * 4)
    whole = ChaCha20(key, nonce).update(bytes(32 * size))
    pieces = {whole[i : i + size] for i in range(0, len(whole), size)}
    assert set(outputs) == pieces and len(outputs) == 32
    assert cipher.position == 32 * size


@pytest.mark.skipif(
    platform.python_implementation() == "PyPy",
    reason="on PyPy cb3 keeps the GIL for bytearray buffers (cpyext has no export lock, cext/buffers.c); "
    "GIL release on PyPy is tested with bytes (test_smoke_pypy.py, test_hash.py)",
)
def test_gil_released_for_large_inputs():
    # While a worker thread encrypts a large buffer in place, this thread keeps
    # running: its longest pause is far shorter than the call.
    buf = bytearray(128 * 1024 * 1024)
    cipher = ChaCha20(bytes(32), bytes(8))
    assert_gil_released(lambda: cipher.xor_in_place(buf), "xor_in_place()")
