"""A fast upper bound on the embedding model's token count, without loading the model.

The chunker must keep every chunk within the model's 512-token window, but the import
must not load llama.cpp. XLM-R's unigram vocabulary rarely needs more than one piece per
four letters of a Latin-script word, one per two digits, and one per symbol, so counting
that way over-estimates; tests check the bound against the real tokenizer.

The text splits into pieces: runs of letters, runs of digits, and single other non-space
characters. No piece holds whitespace, so the count is additive: for texts joined by
whitespace, content_tokens(a + " " + b) == content_tokens(a) + content_tokens(b), and
estimate_tokens(t) == SPECIAL_TOKENS + content_tokens(t). The chunker relies on that to
estimate each block once and keep running sums.

The common case (letters in the Latin range) is counted without a Python step per piece:
`str.translate` maps each character to its class (a: Latin letter, 0: digit, space, '.': any
other character, x: other letters), then `str.count` counts run starts (a letter after a
non-letter) plus one per 4 letters (a run of L letters counts 1 + L // 4), the other
characters, and for digits the '0's less the '00's (a run of D digits counts
ceil(D / 2) == D - D // 2). Only a letter run holding other letters (other scripts, or
¹²³¼½¾, which count differently) is counted piece by piece, as _piece_tokens says.
"""

from __future__ import annotations

import re

_PIECE = re.compile(r"[^\W\d_]+|\d+|\S", re.UNICODE)  # the pieces; counted below without listing them
SPECIAL_TOKENS = 2  # <s> and </s>

_DIGIT = re.compile(r"\d")
_LETTER = re.compile(r"[^\W\d_]")  # what _PIECE's letter runs are made of
_SPACE = re.compile(r"\s")


class _CharClasses(dict):
    """str.translate table: code point -> its class, computed (with _PIECE's own regex classes)
    the first time a character is seen."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        if _DIGIT.match(char):
            cls = "0"
        elif _LETTER.match(char):
            cls = "a" if code <= 0x24F and char.isalpha() else "x"
        elif _SPACE.match(char):
            cls = " "
        else:
            cls = "."
        self[code] = cls
        return cls


_CLASSES = _CharClasses()
# A letter run holding another letter (classes x), found from its start (no backtracking).
_OTHER_RUN = re.compile(r"(?<![ax])a*+x[ax]*")


def _piece_tokens(piece: str) -> int:
    first = piece[0]
    if first.isdigit():
        return (len(piece) + 1) // 2
    if len(piece) == 1:
        return 1
    if first.isalpha():
        if max(piece) <= "\u024f":  # Latin letters (with accents and umlauts)
            return 1 + len(piece) // 4
        return len(piece)  # other scripts: assume a piece per character
    return 1


def content_tokens(text: str) -> int:
    """The estimate without the special tokens; additive over whitespace-joined texts."""
    classes = text.translate(_CLASSES)  # one class character per character of text
    other = "x" in classes
    letters = classes.replace("x", "a") if other else classes
    count = (letters.count(".") + letters.count("aaaa")
             + letters.count(" a") + letters.count(".a") + letters.count("0a") + letters.startswith("a"))
    if "0" in letters:  # a run of D digits: D - D // 2
        count += letters.count("0") - letters.count("00")
    if other:  # such a run was counted as Latin letters (1 + L // 4): count it piece by piece
        for match in _OTHER_RUN.finditer(classes):
            start, end = match.span()
            count += _piece_tokens(text[start:end]) - 1 - (end - start) // 4
    return count


def estimate_tokens(text: str) -> int:
    return SPECIAL_TOKENS + content_tokens(text)
