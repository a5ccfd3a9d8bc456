"""The pre-scan's removal of strings and comments, against a character-by-character lexer.

GIVEN MLIR-like text built from the characters that matter to the lexer (quotes, escapes,
slashes, newlines, brackets, digits), WHEN `without_strings_and_comments` removes its string
literals and `//` comments, THEN the result is what a plain scan of the text keeps: the fast
path (no escape, no comment) and the regular expression agree with it everywhere.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from irprof.errors import MlirError
from irprof.mlir.safe_parse import prescan_mlir, without_strings_and_comments


def _string_end(data: bytes, start: int) -> int | None:
    """Index of the `"` closing the string opened at `start`, or None (a newline or the end
    comes first; an escape takes the next character unless it is a newline)."""
    index = start + 1
    while index < len(data):
        char = data[index : index + 1]
        if char == b'"':
            return index
        if char == b"\n":
            return None
        if char == b"\\":
            if index + 1 < len(data) and data[index + 1 : index + 2] != b"\n":
                index += 2
                continue
            return None
        index += 1
    return None


def _scan(data: bytes) -> bytes:
    """What remains after removing strings and comments, one character at a time.

    A `"` that opens no complete one-line string is kept (the pre-scan then reports it)."""
    kept = bytearray()
    index = 0
    while index < len(data):
        if data[index : index + 1] == b'"':
            end = _string_end(data, index)
            if end is not None:
                index = end + 1
                continue
        elif data[index : index + 2] == b"//":
            newline = data.find(b"\n", index)
            index = len(data) if newline < 0 else newline
            continue
        kept += data[index : index + 1]
        index += 1
    return bytes(kept)


LEXER_TEXT = st.lists(st.sampled_from([b'"', b"\\", b"/", b"\n", b"a", b"(", b")", b"1", b" "]))
# No escape and no comment: the shape of printed modules, which takes the fast path.
PLAIN_TEXT = st.lists(st.sampled_from([b'"', b"\n", b"a", b"(", b")", b"1", b" ", b"/"]))


@given(LEXER_TEXT)
def test_removal_matches_a_plain_scan(parts: list[bytes]) -> None:
    data = b"".join(parts)
    assert without_strings_and_comments(data) == _scan(data)


@given(PLAIN_TEXT)
def test_removal_without_escapes_or_comments_matches_a_plain_scan(parts: list[bytes]) -> None:
    data = b"".join(parts)
    assert without_strings_and_comments(data) == _scan(data)


def test_printed_locations_lose_their_strings_only() -> None:
    data = (
        b'%0 = arith.addi %a, %b : i64 loc("layer_0/add(x)"("model.py":1:5))\n'
        b'%1 = arith.addi %0, %b : i64 loc("a"("b":2:5))\n'
    )
    expected = (
        b"%0 = arith.addi %a, %b : i64 loc((:1:5))\n%1 = arith.addi %0, %b : i64 loc((:2:5))\n"
    )
    assert without_strings_and_comments(data) == expected


def test_a_string_cut_by_a_newline_keeps_its_quote() -> None:
    # Two quotes, an even count, but the first string runs into a newline: not a pair.
    data = b'x = "ab\ncd" y'
    assert without_strings_and_comments(data) == data
    with pytest.raises(MlirError, match=r"cut\.mlir:1:5: unterminated string literal"):
        prescan_mlir(data, "cut.mlir")
