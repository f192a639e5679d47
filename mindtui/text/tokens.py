"""A fast upper bound on the embedding model's token count, without loading the model.

The chunker must keep every chunk within the model's 512-token window, but the import
must not load llama.cpp. XLM-R's unigram vocabulary rarely needs more than one piece per
four letters of a Latin-script word, one per two digits, and one per symbol, so counting
that way over-estimates; tests check the bound against the real tokenizer.
"""

from __future__ import annotations

import re

_PIECE = re.compile(r"[^\W\d_]+|\d+|\S", re.UNICODE)
SPECIAL_TOKENS = 2  # <s> and </s>


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


def estimate_tokens(text: str) -> int:
    return SPECIAL_TOKENS + sum(_piece_tokens(p) for p in _PIECE.findall(text))
