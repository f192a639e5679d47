"""A fast upper bound on the embedding model's token count, without loading the model.

The chunker must keep every chunk within the model's 512-token window, but the import
must not load llama.cpp. XLM-R's unigram vocabulary rarely needs more than one piece per
four letters of an English or German word, one per two digits, and one per symbol; a symbol
that starts a word may cost two (the word's "▁" can be a piece of its own: " | " is "▁", "|");
a letter outside ASCII and äöüß costs one of its own (Czech, Polish, Turkish words split at
them), and a character of another script one per character of its NFKC form. The stated
bound, which tests check with the real tokenizer (tests/e5_tokens.py): on natural text in
any language, code, URLs, tables and markdown the estimate never under-counts. Strings of
random letters (base64, keys) can need a token per one or two letters: they may be
under-counted.

The text splits into pieces: runs of letters, runs of digits, and single other non-space
characters. No piece holds whitespace, so the count is additive: for texts joined by
whitespace, content_tokens(a + " " + b) == content_tokens(a) + content_tokens(b), and
estimate_tokens(t) == SPECIAL_TOKENS + content_tokens(t). The chunker relies on that to
estimate each block once and keep running sums.

The common case (ASCII letters and äöüß) is counted without a Python step per piece:
`str.translate` maps each character to its class (a: such a letter, 0: digit, space, '.': any
other character, x: other letters), then `str.count` counts run starts (a letter after a
non-letter) plus one per 4 letters (a run of L letters counts 1 + L // 4), the other
characters and once more those that start a word, and for digits the '0's less the '00's
(a run of D digits counts ceil(D / 2) == D - D // 2). Only a letter run holding other
letters is counted piece by piece, as _run_tokens says.
"""

from __future__ import annotations

import functools
import re
import unicodedata

_PIECE = re.compile(r"[^\W\d_]+|\d+|\S", re.UNICODE)  # the pieces; counted below without listing them
SPECIAL_TOKENS = 2  # <s> and </s>

_DIGIT = re.compile(r"\d")
_LETTER = re.compile(r"[^\W\d_]")  # what _PIECE's letter runs are made of
# What the tokenizer takes for a space: ASCII whitespace, and what NFKC turns into spaces
# (no-break and typographic spaces). Other characters that Python calls whitespace (\x1c-\x1f,
# \x85, line and paragraph separators) are kept as tokens.
_SPACES = frozenset(" \t\n\r\f\v")
_COMMON_LETTERS = frozenset("äöüßÄÖÜ")  # German: the vocabulary holds their words whole
MAX_CHAR_TOKENS = 8  # NFKC expands a few characters to whole phrases (U+FDFA: 18 characters)


class _CharClasses(dict):
    """str.translate table: code point -> its class, computed (with _PIECE's own regex classes)
    the first time a character is seen."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        if _DIGIT.match(char):
            cls = "0"
        elif _LETTER.match(char):
            cls = "a" if (code < 0x80 or char in _COMMON_LETTERS) and char.isalpha() else "x"
        elif char in _SPACES or unicodedata.normalize("NFKC", char).isspace():
            cls = " "
        else:
            cls = "."
        self[code] = cls
        return cls


_CLASSES = _CharClasses()
# A letter run holding another letter (classes x), found from its start (no backtracking).
_OTHER_RUN = re.compile(r"(?<![ax])a*+x[ax]*")


@functools.cache
def _other_letter_tokens(char: str) -> int:
    """A letter outside ASCII and äöüß: a piece per character of its NFKC form (ﬁ is f, i)."""
    return min(MAX_CHAR_TOKENS, max(1, len(unicodedata.normalize("NFKC", char))))


def _run_tokens(run: str) -> int:
    """A letter run holding other letters: the common letters a piece per four, each other
    letter its own pieces, and one more for the word's start (its "▁" may stand alone)."""
    common = sum(1 for char in run if _CLASSES[ord(char)] == "a")
    return 1 + common // 4 + sum(_other_letter_tokens(char) for char in run if _CLASSES[ord(char)] != "a")


def content_tokens(text: str) -> int:
    """The estimate without the special tokens; additive over whitespace-joined texts."""
    classes = text.translate(_CLASSES)  # one class character per character of text
    other = "x" in classes
    letters = classes.replace("x", "a") if other else classes
    count = (letters.count(".") + letters.count(" .") + letters.startswith(".") + letters.count("aaaa")
             + letters.count(" a") + letters.count(".a") + letters.count("0a") + letters.startswith("a"))
    if "0" in letters:  # a run of D digits: D - D // 2
        count += letters.count("0") - letters.count("00")
    if other:  # such a run was counted as Latin letters (1 + L // 4): count it piece by piece
        for match in _OTHER_RUN.finditer(classes):
            start, end = match.span()
            count += _run_tokens(text[start:end]) - 1 - (end - start) // 4
    return count


def estimate_tokens(text: str) -> int:
    return SPECIAL_TOKENS + content_tokens(text)
