"""The real multilingual-e5-small model through llama.cpp: quality, determinism, failure modes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from mindtui.config import load_settings
from mindtui.models import files
from mindtui.models.embedder import Embedder
from mindtui.models.files import ModelUnavailableError, ensure_embedding_model
from mindtui.store import open_database
from mindtui.text.names import passage_text
from mindtui.text.tokens import estimate_tokens

from conftest import SAMPLE_VAULT, run_import


def cos(a, b) -> float:
    return float(np.dot(a, b))


def test_vectors_are_384d_unit_length(e5_embedder):
    vectors = e5_embedder.embed_passages(["Ein kurzer Satz.", "A short sentence."])
    assert vectors.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_embeddings_are_deterministic(e5_embedder):
    text = "Der Zettelkasten verknüpft Notizen über Verweise."
    first = e5_embedder.embed_passages([text])[0]
    second = e5_embedder.embed_passages(["etwas anderes davor", text])[1]
    assert np.allclose(first, second, atol=1e-6)


def test_a_passages_vector_does_not_depend_on_the_passages_embedded_with_it(e5_embedder):
    """To the bit: a hidden note's chunks in the same sweep must not move a visible note's vector
    (an agent's scores would tell they exist). In one llama.cpp batch they moved up to 1e-3."""
    texts = [path.read_text(encoding="utf-8")[:600] for path in sorted((SAMPLE_VAULT / "Konzepte").glob("*.md"))[:12]]
    together = e5_embedder.embed_passages(texts)
    assert np.array_equal(together, np.concatenate([e5_embedder.embed_passages([text]) for text in texts]))
    assert np.array_equal(together[1:], e5_embedder.embed_passages(texts[1:]))


@pytest.mark.parametrize("anchor, paraphrase, unrelated", [
    ("Wie verknüpfe ich Notizen miteinander?", "Notizen lassen sich über Links verbinden.",
     "Der Kuchen braucht 40 Minuten im Ofen."),
    ("Der Zug hat heute zwanzig Minuten Verspätung.", "Die Bahn kommt heute deutlich später an.",
     "Photosynthese wandelt Licht in chemische Energie um."),
    ("How do I search my notes by meaning?", "Semantic search finds notes with similar content.",
     "The recipe needs two eggs and some flour."),
])
def test_paraphrases_beat_unrelated(e5_embedder, anchor, paraphrase, unrelated):
    query = e5_embedder.embed_query(anchor)
    passages = e5_embedder.embed_passages([paraphrase, unrelated])
    assert cos(query, passages[0]) > cos(query, passages[1]) + 0.03


def test_translations_find_each_other(e5_embedder):
    german = ["Die Vergessenskurve beschreibt, wie schnell wir Gelerntes vergessen.",
              "SQLite speichert eine ganze Datenbank in einer einzigen Datei.",
              "Reciprocal Rank Fusion kombiniert mehrere Ergebnislisten."]
    english = ["Reciprocal rank fusion combines several result lists.",
               "The forgetting curve describes how quickly we forget what we learned.",
               "SQLite stores a whole database in a single file."]
    de = e5_embedder.embed_passages(german)
    en = e5_embedder.embed_passages(english)
    best = (de @ en.T).argmax(axis=1)
    assert best.tolist() == [1, 2, 0]


def test_long_input_is_capped_not_an_error(e5_embedder):
    vector = e5_embedder.embed_passages(["Wort " * 3000])[0]
    assert np.isfinite(vector).all() and abs(np.linalg.norm(vector) - 1) < 1e-5


def test_token_estimate_is_an_upper_bound(e5_embedder, tmp_path):
    """The chunker budgets with estimate_tokens; it must never under-count the real tokenizer."""
    db = tmp_path / "t.db"
    run_import(db, SAMPLE_VAULT)
    conn = open_database(db)
    texts = [passage_text(t, h, x) for t, h, x in conn.execute(
        "SELECT n.title, c.heading_path, c.text FROM chunks c JOIN notes n USING(note_id)")]
    conn.close()
    texts += ["https://github.com/obsidianmd/obsidian-help/blob/master/en/Linking%20notes.md",
              "Straße, Größe, Ärger — ﬁnally ①② with  double  spaces", "東京タワー 漢字 かな", "😀🎉👍" * 20,
              "0123456789" * 20, "a_b_c_d" * 30, "((([[{{}}]])))" * 10, "Donaudampfschifffahrtsgesellschaft " * 10]
    for text in texts:
        assert estimate_tokens("passage: " + text) >= e5_embedder.count_tokens("passage: " + text), text


def test_corrupt_gguf_is_a_clear_error(tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + os.urandom(4096))
    with pytest.raises(ModelUnavailableError, match="cannot load the embedding model"):
        Embedder(broken, "broken", n_threads=1).embed_query("x")
    (tmp_path / "text.gguf").write_text("not a model at all\n" * 10)
    with pytest.raises(ModelUnavailableError, match=r"\(llama\.cpp: .*invalid magic"):  # llama.cpp's own reason
        Embedder(tmp_path / "text.gguf", "text", n_threads=1).embed_query("x")
    with pytest.raises(ModelUnavailableError, match="does not exist"):
        Embedder(tmp_path / "absent.gguf", "absent", n_threads=1).embed_query("x")


def test_missing_model_is_built_and_corrupt_model_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("MINDTUI_MODELS__DIR", str(tmp_path))
    settings = load_settings()
    messages: list[str] = []
    model = ensure_embedding_model(settings, say=messages.append)
    assert model.path.is_file() and files.sha256_file(model.path) == files.E5_GGUF_SHA256
    assert any("building the embedding model" in m for m in messages)
    with model.path.open("r+b") as handle:  # flip a byte in the middle
        handle.seek(40_000_000)
        byte = handle.read(1)
        handle.seek(40_000_000)
        handle.write(bytes([byte[0] ^ 0xFF]))
    messages.clear()
    ensure_embedding_model(settings, say=messages.append)
    assert any("corrupt" in m for m in messages)
    assert files.sha256_file(model.path) == files.E5_GGUF_SHA256


def test_unexpected_build_result_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("MINDTUI_MODELS__DIR", str(tmp_path))
    monkeypatch.setattr(files, "E5_GGUF_SHA256", "0" * 64)
    with pytest.raises(ModelUnavailableError, match="expected 0000"):
        ensure_embedding_model(load_settings())


def test_models_status_and_build_commands(real_model, tmp_path):
    status = subprocess.run([sys.executable, "-m", "mindtui", "models", "status", "--json"],
                            capture_output=True, text=True, timeout=60, check=True)
    entries = {e["role"]: e for e in json.loads(status.stdout)["models"]}
    assert entries["embedding"]["usable"] and entries["embedding"]["sha256"] == files.E5_GGUF_SHA256
    assert not entries["reranker"]["usable"] and "not configured" in entries["reranker"]["reason"]
    # `models build` into an empty folder: the pinned bytes, where status then finds them usable.
    env = {**os.environ, "MINDTUI_MODELS__DIR": str(tmp_path / "built")}
    empty = subprocess.run([sys.executable, "-m", "mindtui", "models", "status", "--json"],
                           capture_output=True, text=True, timeout=60, check=True, env=env)
    assert not {e["role"]: e for e in json.loads(empty.stdout)["models"]}["embedding"]["usable"]
    built = subprocess.run([sys.executable, "-m", "mindtui", "models", "build", "--json", "-q"],
                           capture_output=True, text=True, timeout=300, env=env)
    assert built.returncode == 0, built.stderr
    result = json.loads(built.stdout)
    assert result["path"] == str(tmp_path / "built" / files.E5_FILE_NAME)
    assert result["sha256"] == files.E5_GGUF_SHA256 == files.sha256_file(tmp_path / "built" / files.E5_FILE_NAME)
    after = subprocess.run([sys.executable, "-m", "mindtui", "models", "status", "--json"],
                           capture_output=True, text=True, timeout=60, check=True, env=env)
    assert {e["role"]: e for e in json.loads(after.stdout)["models"]}["embedding"]["usable"]


# Runs the embedding sweep as `mindtui embed` would (the configured model, batches of 4) and SIGKILLs
# its own process from the progress callback, which the sweep calls after each batch is committed:
# the kill lands after exactly the given number of texts, whatever the speed of the machine.
SWEEP_KILLED_AFTER = """
import os, signal, sys
from mindtui.config import load_settings
from mindtui.models.embedder import Embedder
from mindtui.models.files import ensure_embedding_model
from mindtui.models.sweep import run_embed_sweep
from mindtui.store import open_database

db, kill_after = sys.argv[1], int(sys.argv[2])
settings = load_settings()
model = ensure_embedding_model(settings)
embedder = Embedder(model.path, model.model_id, n_threads=2)

def progress(done, total, detail):
    if done >= kill_after:
        os.kill(os.getpid(), signal.SIGKILL)

run_embed_sweep(open_database(db), embedder, batch_size=4, progress=progress)
sys.exit(3)  # the sweep finished without reaching the kill point
"""


def test_embed_command_is_incremental_and_resumable(real_model, vault, db_path):
    for i in range(48):
        vault.write(f"Notiz {i}.md", f"Notiz {i} über Wissensmanagement, Thema {i % 5}. " * 12 + "\n")
    run_import(db_path, vault.root)
    killed = subprocess.run([sys.executable, "-c", SWEEP_KILLED_AFTER, str(db_path), "8"],
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    conn = open_database(db_path)
    (embedded,) = conn.execute("SELECT count(*) FROM embeddings").fetchone()
    conn.close()
    assert embedded == 8  # two committed batches of 4; the kill lost nothing that was committed
    env = {**os.environ, "MINDTUI_MODELS__EMBED_BATCH": "4"}
    done = subprocess.run([sys.executable, "-m", "mindtui", "embed", "--db", str(db_path), "--json"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["embedded"], report["skipped"], report["removed"]) == (40, 8, 0)  # exactly the rest
    assert report["model"] == files.E5_MODEL_ID
    conn = open_database(db_path)
    (total,) = conn.execute("SELECT count(*) FROM embeddings").fetchone()
    conn.close()
    assert total == 48
    again = subprocess.run([sys.executable, "-m", "mindtui", "embed", "--db", str(db_path), "--json"],
                           capture_output=True, text=True, timeout=120, env=env)
    assert again.returncode == 0, again.stderr
    assert (json.loads(again.stdout)["embedded"], json.loads(again.stdout)["skipped"]) == (0, 48)


def test_a_repeated_query_is_embedded_once(monkeypatch, tmp_path):
    """Recent query vectors are kept (eval runs each query under several systems; the TUI repeats
    a search); forget_queries drops them. No model is loaded: _embed is counted."""
    from mindtui.models import embedder as module

    calls = []
    embedder = Embedder(tmp_path / "unused.gguf", "fake", n_threads=1)
    monkeypatch.setattr(embedder, "_embed", lambda texts, threads=None: calls.append(list(texts)) or np.ones((len(texts), 4)))
    monkeypatch.setattr(module, "QUERY_CACHE", 2)
    first = embedder.embed_query("a")
    assert embedder.embed_query("a") is first and calls == [["query: a"]]
    assert not first.flags.writeable  # one array serves every caller: nobody may change it
    embedder.embed_query("b")
    embedder.embed_query("c")  # over the cap: "a", the least recently used, is dropped
    embedder.embed_query("a")
    assert len(calls) == 4
    embedder.forget_queries()
    embedder.embed_query("c")
    assert len(calls) == 5


def test_a_query_is_embedded_on_one_thread_and_passages_on_the_configured_ones(e5_models_dir):
    """Two threads that wait for each other stall for a second while another process holds a
    core; a query (a few tokens) gains nothing from the second one."""
    import llama_cpp

    from mindtui.models.files import E5_FILE_NAME, E5_MODEL_ID

    embedder = Embedder(e5_models_dir / E5_FILE_NAME, E5_MODEL_ID, n_threads=2)
    try:
        embedder.embed_passages(["warm"])
        llm = embedder._model()
        seen = []
        embed = llm.embed

        def recording(*args, **kwargs):
            seen.append(llama_cpp.llama_n_threads_batch(llm.ctx))
            return embed(*args, **kwargs)

        llm.embed = recording
        query = embedder.embed_query("Wie verlinke ich Notizen?")
        passages = embedder.embed_passages(["Wie verlinke ich Notizen?"])
        assert seen == [1, 2]
        assert llama_cpp.llama_n_threads_batch(llm.ctx) == 2  # given back
        assert cos(query, passages[0]) > 0.8  # the same model, whatever the threads
    finally:
        embedder.close()


LOAD_BESIDE_WRITES = """
import os, sys, threading
from pathlib import Path
from mindtui.models.embedder import Embedder
loaded = threading.Event()
def load():
    Embedder(Path(sys.argv[1]), "e5", n_threads=1).embed_query("hallo")
    loaded.set()
worker = threading.Thread(target=load)
worker.start()
written = 0
while not loaded.is_set() or written < 50:  # at least 50 lines, and lines until the model answered
    os.write(2, f"line {written}\\n".encode())
    sys.stdout.write(f"out {written}\\n")
    written += 1
    loaded.wait(0.002)
worker.join()
print("written", written)
"""


def test_loading_the_model_takes_no_output_from_other_threads(e5_models_dir, tmp_path):
    """llama-cpp-python's verbose=False pointed fd 1 and 2 at /dev/null while a model loaded: what
    other threads wrote meanwhile (the TUI's frames, the MCP server's notices) was lost."""
    done = subprocess.run([sys.executable, "-c", LOAD_BESIDE_WRITES, str(e5_models_dir / files.E5_FILE_NAME)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    written = int(done.stdout.splitlines()[-1].split()[1])
    assert done.stderr.splitlines() == [f"line {n}" for n in range(written)]  # every line, and llama.cpp's none
    assert done.stdout.splitlines()[:-1] == [f"out {n}" for n in range(written)]
