"""The C ABI check (rustlib/abi/cb3abi.py): cb3.h against the committed
snapshots of released versions and CHANGELOG.md, and the check's own
failure paths on deliberately changed copies of the header."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ABI_DIR = ROOT / "rustlib" / "abi"
HEADER = (ROOT / "rustlib" / "include" / "cb3.h").read_text(encoding="utf-8")
CHANGELOG = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")

_spec = importlib.util.spec_from_file_location("cb3abi", ABI_DIR / "cb3abi.py")
cb3abi = importlib.util.module_from_spec(_spec)
sys.modules["cb3abi"] = cb3abi  # dataclasses look their module up by name
_spec.loader.exec_module(cb3abi)

DECRYPT = "function cb3_aead_decrypt("


def with_version(header: str, version: str) -> str:
    major, minor, patch = version.split(".")
    for part, value in (("MAJOR", major), ("MINOR", minor), ("PATCH", patch)):
        header, n = re.subn(rf"^#define CB3_VERSION_{part} \d+$", f"#define CB3_VERSION_{part} {value}", header,
                            flags=re.M)
        assert n == 1
    return header


def changed_prototype(header: str) -> str:
    """cb3_aead_new with a flags argument: an incompatible change."""
    old = "enum cb3_result cb3_aead_new(const uint8_t *key, size_t key_len, struct cb3_aead **aead_out);"
    assert old in header
    return header.replace(old, old.replace("size_t key_len,", "size_t key_len, uint32_t flags,"))


def added_function(header: str) -> str:
    anchor = "size_t cb3_threads_count(size_t max_threads);"
    assert anchor in header
    return header.replace(anchor, anchor + "\n\nsize_t cb3_new_thing(const uint8_t *data, size_t data_len);")


def section(version: str, text: str) -> str:
    return f"# Changelog\n\n## {version}\n\n{text}\n\n" + CHANGELOG.split("\n## ", 1)[1].join(["## ", ""])


def test_the_header_follows_the_snapshots_and_the_changelog():
    assert cb3abi.check(HEADER, CHANGELOG, cb3abi.snapshots()) == []
    result = subprocess.run([sys.executable, str(ABI_DIR / "cb3abi.py"), "check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_the_header_version_is_the_latest_snapshot():
    """The release step ships the snapshot of the version it builds."""
    saved = cb3abi.snapshots()
    version = cb3abi.header_version(HEADER)
    assert max(saved) == version, f"no rustlib/abi/cb3-{cb3abi.show(version)}.abi: run rustlib/abi/cb3abi.py write"
    assert saved[version] == cb3abi.parse(HEADER)
    assert (0, 1, 0) in saved  # the first header, which 0.2.0's changes are recorded against


def test_parse_normalises_each_kind_of_item():
    header = """
    #define CB3_H
    #define CB3_VERSION_MAJOR 1
    #define CB3_SIZE (1 << 4)   /* a comment */
    typedef enum cb3_colour {
      /** doc */
      CB3_COLOUR_RED = 3,
      CB3_COLOUR_GREEN,
    } cb3_colour;
    typedef struct cb3_thing cb3_thing;
    typedef struct cb3_pair { enum cb3_colour colour; uint64_t value; } cb3_pair;
    typedef void *(*cb3_hook)(void *token);
    #ifdef __cplusplus
    extern "C" {
    #endif
    enum cb3_result cb3_f(const uint8_t *key,
                          size_t   key_len, unsigned int mode, struct cb3_thing **out);
    const char *cb3_g(void);
    #ifdef __cplusplus
    }
    #endif
    """
    assert cb3abi.parse(header) == [
        "enum cb3_colour CB3_COLOUR_GREEN = 4",
        "enum cb3_colour CB3_COLOUR_RED = 3",
        "function cb3_f(const uint8_t *, size_t, unsigned int, struct cb3_thing **) -> enum cb3_result",
        "function cb3_g(void) -> const char *",
        "macro CB3_SIZE (1 << 4)",
        "struct cb3_pair { enum cb3_colour; uint64_t }",
        "struct cb3_thing opaque",
        "typedef cb3_hook void * (*)(void *)",
    ]
    # Parameter names and layout (whitespace, comments) are not the ABI.
    renamed = header.replace("key_len", "length").replace("*key,", "* secret,")
    assert cb3abi.parse(renamed) == cb3abi.parse(header)


def test_parse_refuses_what_it_does_not_know():
    with pytest.raises(ValueError, match="does not know"):
        cb3abi.parse("struct cb3_x { int a; };")


def test_the_recorded_incompatible_change():
    """0.1.0 -> 0.2.0: the decryptions' output_mode, recorded in the changelog."""
    saved = cb3abi.snapshots()
    changes = cb3abi.compare(saved[(0, 1, 0)], saved[(0, 2, 0)])
    for function in ("cb3_aead_decrypt", "cb3_aead_decrypt_detached", "cb3_stream_decrypt"):
        assert f"function {function}" in changes.changed
    assert "function cb3_bench_reference" in changes.removed
    for function in ("cb3_threads_count", "cb3_cpu_maker", "cb3_cpu_model"):
        assert f"function {function}" in changes.added
    decrypt = next(item for item in saved[(0, 2, 0)] if item.startswith(DECRYPT))
    assert "size_t, unsigned int, uint8_t *" in decrypt  # output_mode after the associated data


def test_a_changed_prototype_in_a_released_version_fails():
    found = cb3abi.check(changed_prototype(HEADER), CHANGELOG, cb3abi.snapshots())
    assert len(found) == 1 and "is released" in found[0] and "cb3_aead_new" in found[0]


def test_a_changed_prototype_needs_a_breaking_bump_and_an_entry():
    saved = cb3abi.snapshots()
    header = changed_prototype(HEADER)
    # A minor bump allows a break under 0.x, but the changelog must say so.
    found = cb3abi.check(with_version(header, "0.3.0"), CHANGELOG, saved)
    assert len(found) == 1 and "no '## 0.3.0' section" in found[0] and "cb3_aead_new" in found[0]
    found = cb3abi.check(with_version(header, "0.3.0"), section("0.3.0", "- Something else."), saved)
    assert len(found) == 1 and "does not name" in found[0] and found[0].endswith("cb3_aead_new")
    assert cb3abi.check(with_version(header, "0.3.0"), section("0.3.0", "- `cb3_aead_new` takes flags."), saved) == []
    # A patch bump never allows it, whatever the changelog says.
    found = cb3abi.check(with_version(header, "0.2.1"), section("0.2.1", "- `cb3_aead_new` takes flags."), saved)
    assert len(found) == 1 and "needs a major bump" in found[0]


def test_an_added_function_needs_a_minor_bump():
    saved = cb3abi.snapshots()
    header = added_function(HEADER)
    entry = "- `cb3_new_thing`: new."
    found = cb3abi.check(with_version(header, "0.2.1"), section("0.2.1", entry), saved)
    assert len(found) == 1 and "at least a minor bump" in found[0] and "added: cb3_new_thing" in found[0]
    assert cb3abi.check(with_version(header, "0.3.0"), section("0.3.0", entry), saved) == []


def test_a_header_without_abi_changes_needs_no_entry():
    assert cb3abi.check(with_version(HEADER, "0.2.1"), CHANGELOG, cb3abi.snapshots()) == []


def test_a_changed_enum_value_is_breaking():
    header = HEADER.replace("CB3_OUTPUT_MODE_PRIVATE = 1,", "CB3_OUTPUT_MODE_PRIVATE = 2,")
    assert header != HEADER
    changes = cb3abi.compare(cb3abi.parse(HEADER), cb3abi.parse(header))
    assert changes.changed == ["enum cb3_output_mode CB3_OUTPUT_MODE_PRIVATE"] and not changes.added
    # Named by its enum's name in the changelog is enough.
    entry = section("0.3.0", "- `cb3_output_mode`: renumbered.")
    assert cb3abi.check(with_version(header, "0.3.0"), entry, cb3abi.snapshots()) == []


@pytest.mark.parametrize(
    ("old", "new", "breaking", "ok"),
    [
        ((0, 2, 0), (0, 3, 0), True, True),
        ((0, 2, 0), (0, 2, 5), True, False),
        ((0, 2, 0), (1, 0, 0), True, True),
        ((1, 2, 0), (1, 3, 0), True, False),
        ((1, 2, 0), (2, 0, 0), True, True),
        ((1, 2, 0), (1, 3, 0), False, True),
        ((1, 2, 0), (1, 2, 1), False, False),
    ],
)
def test_semantic_versioning_rule(old, new, breaking, ok):
    changes = cb3abi.Changes(removed=["function cb3_x"] if breaking else [], changed=[],
                             added=[] if breaking else ["function cb3_y"])
    assert cb3abi.allowed(old, new, changes) is ok
