"""Importing a vault: rows written, idempotence, incremental changes, resolution over time."""

from __future__ import annotations

import json
import os

from mindtui.store import edges as edge_store
from mindtui.store import open_database
from mindtui.store.migrate import apply_migrations, latest_version, load_migrations

from conftest import dump_database, run_import


def query(db_path, sql, args=()):
    conn = open_database(db_path, migrate=False)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def edges_of(db_path, source_path):
    return query(db_path,
                 "SELECT e.kind, t.path, e.provenance, e.rule_id, e.signal, e.confidence, e.weight FROM edges e"
                 " JOIN notes s ON s.note_id = e.source_id JOIN notes t ON t.note_id = e.target_id"
                 " WHERE s.path = ? ORDER BY 1, 2, 4", (source_path,))


def small_vault(vault):
    vault.write("Konzepte/BM25.md", """
        ---
        aliases: [Okapi BM25]
        ---
        # BM25
        BM25 gewichtet Terme nach Häufigkeit. Siehe [[Vektorsuche]] und [[Vektorsuche|nochmal]].
        rel: similar_to [[TF-IDF]]
        """)
    vault.write("Konzepte/Vektorsuche.md", "Vektoren finden Ähnliches. Gegenstück: [[Okapi BM25]].\n")
    vault.write("Konzepte/TF-IDF.md", "> [!edge] derived_from: [[BM25]]\nAlt, aber gut.\n")
    vault.write("Projekte/Suche.md", """
        ---
        related: ["[[BM25]]"]
        ---
        Wir bauen eine Suche mit [[Konzepte/Vektorsuche]] und [[Fehlt noch]].
        """)


def test_import_writes_notes_chunks_links_and_edges(vault, db_path):
    small_vault(vault)
    report = run_import(db_path, vault.root)
    assert (report.notes_total, report.notes_added) == (4, 4)
    assert report.unresolved_total == 2 and report.missing_total == 2  # [[Fehlt noch]], [[Okapi BM25]]
    assert report.inline_total == 1 and report.callout_total == 1 and report.frontmatter_total == 1
    assert report.chunks_total == 4 and report.structure_total == 4  # one belongs_to per chunk

    assert edges_of(db_path, "Konzepte/BM25.md") == [
        ("links_to", "Konzepte/TF-IDF.md", "explicit", "wikilink", "wikilink", 1.0, 1.0),
        ("links_to", "Konzepte/Vektorsuche.md", "explicit", "wikilink", "wikilink", 1.0, 2.0),  # two mentions
        ("related_to", "Konzepte/TF-IDF.md", "rule", "edge_defaults:concept:related_to", "type_default", 0.7, 2.0),
        ("related_to", "Konzepte/Vektorsuche.md", "rule", "edge_defaults:concept:related_to", "type_default", 0.7, 2.0),
        ("similar_to", "Konzepte/TF-IDF.md", "explicit", "inline:rel", "inline", 0.95, 1.0),
    ]
    project = edges_of(db_path, "Projekte/Suche.md")
    assert ("related_to", "Konzepte/BM25.md", "explicit", "frontmatter:related", "frontmatter", 1.0, 1.0) in project
    assert ("uses", "Konzepte/Vektorsuche.md", "rule", "edge_defaults:project:uses", "type_default", 0.7, 1.0) in project
    # An alias does not resolve a link (Obsidian's rule): [[Okapi BM25]] stays unresolved.
    assert ("links_to", "Konzepte/BM25.md") not in [(k, t) for k, t, *_ in edges_of(db_path, "Konzepte/Vektorsuche.md")]
    unresolved = query(db_path, "SELECT target_raw, reason, evidence FROM unresolved_links ORDER BY target_raw")
    assert [row[:2] for row in unresolved] == [("Fehlt noch", "missing"), ("Okapi BM25", "missing")]
    assert "Wir bauen eine Suche" in unresolved[0][2]


def test_dedup_key_holds(vault, db_path):
    small_vault(vault)
    run_import(db_path, vault.root)
    dupes = query(db_path, "SELECT source_id, target_id, kind, scope, rule_id, count(*) FROM edges"
                           " GROUP BY 1, 2, 3, 4, 5 HAVING count(*) > 1")
    assert dupes == []


def test_structure_edges_chain_chunks(vault, db_path):
    """The chain is the chunks' own order: counted, never stored as edge rows (migration 0016)."""
    long_text = "\n\n".join(f"## Teil {i}\n" + "Wort " * 120 for i in range(3))
    vault.write("Lang.md", long_text, dedent=False)
    vault.write("Kurz.md", "# Kurz\n\nEin Absatz.\n")
    report = run_import(db_path, vault.root)
    keys = [k for (k,) in query(db_path, "SELECT chunk_key FROM chunks WHERE chunk_key NOT IN"
                                         " (SELECT chunk_key FROM chunks JOIN notes USING (note_id) WHERE path = 'Kurz.md')"
                                         " ORDER BY seq")]
    assert len(keys) == 3
    assert report.structure_total == (3 + 2 + 2) + 1  # belongs_to each, next and prev each pair
    assert query(db_path, "SELECT count(*) FROM edges WHERE provenance = 'structure' OR scope = 'chunk'") == [(0,)]


def test_structure_edges_of_an_older_store_go(vault, db_path):
    vault.write("Lang.md", "\n\n".join(f"## Teil {i}\n" + "Wort " * 120 for i in range(2)), dedent=False)
    run_import(db_path, vault.root)
    conn = open_database(db_path)
    (note_id, first, second), = conn.execute(
        "SELECT note_id, min(chunk_key), max(chunk_key) FROM chunks GROUP BY note_id").fetchall()
    conn.executemany(
        "INSERT INTO edges (kind, scope, source_id, target_id, owner_note_id, provenance, rule_id, confidence, signal)"
        " VALUES (?, 'chunk', ?, ?, ?, 'structure', 'structure', 1.0, 'structure')",
        [("belongs_to", first, note_id, note_id), ("belongs_to", second, note_id, note_id),
         ("next", first, second, note_id), ("prev", second, first, note_id)])
    (derived,) = [m.version for m in load_migrations() if m.name.endswith("_structure_edges_derived.sql")]
    conn.execute(f"PRAGMA user_version = {derived - 1}")  # as written before that migration
    # That migration alone (the later ones are in the file already, and an ADD COLUMN runs once).
    apply_migrations(conn, db_path, load_migrations()[:derived])
    conn.execute(f"PRAGMA user_version = {latest_version()}")
    conn.close()
    conn = open_database(db_path)
    try:
        assert conn.execute("SELECT count(*) FROM edges WHERE provenance = 'structure'").fetchone() == (0,)
        assert edge_store.edge_counts(conn)["structure_total"] == 2 + 2
    finally:
        conn.close()


def test_second_run_changes_nothing(vault, db_path):
    small_vault(vault)
    run_import(db_path, vault.root)
    before = dump_database(db_path)
    report = run_import(db_path, vault.root)
    assert (report.notes_unchanged, report.notes_added, report.notes_changed, report.notes_deleted) == (4, 0, 0, 0)
    assert dump_database(db_path) == before


def test_touched_but_identical_file_is_not_rewritten(vault, db_path):
    small_vault(vault)
    run_import(db_path, vault.root)
    path = vault.root / "Konzepte/BM25.md"
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 5_000_000_000))
    report = run_import(db_path, vault.root)
    assert report.notes_changed == 0 and report.notes_unchanged == 4
    assert query(db_path, "SELECT mtime_ns FROM notes WHERE path = ?", ("Konzepte/BM25.md",))[0][0] == path.stat().st_mtime_ns


def test_incremental_equals_clean(vault, db_path, tmp_path):
    """Change, delete, add and rename files; the incremental result equals a fresh import, except
    that the renamed note kept the id it had (a fresh import has no history to keep)."""
    small_vault(vault)
    run_import(db_path, vault.root)
    (old_id,) = query(db_path, "SELECT note_id FROM notes WHERE path = 'Projekte/Suche.md'")[0]
    vault.write("Konzepte/Vektorsuche.md", "Jetzt mit Link auf [[TF-IDF]].\n")
    vault.remove("Konzepte/TF-IDF.md")
    vault.write("Neu.md", "Neu verweist auf [[Fehlt noch]] und [[BM25]].\n")
    vault.rename("Projekte/Suche.md", "Archiv/Suche alt.md")
    report = run_import(db_path, vault.root)
    assert (report.notes_added, report.notes_changed, report.notes_deleted, report.notes_renamed) == (1, 1, 1, 1)
    assert query(db_path, "SELECT note_id FROM notes WHERE path = 'Archiv/Suche alt.md'") == [(old_id,)]
    fresh = tmp_path / "fresh.db"
    run_import(fresh, vault.root)
    (fresh_id,) = query(fresh, "SELECT note_id FROM notes WHERE path = 'Archiv/Suche alt.md'")[0]
    renamed = {table: sorted(repr(row).replace(old_id, fresh_id) for row in rows)
               for table, rows in dump_database(db_path).items()}
    assert renamed == {table: sorted(repr(row) for row in rows) for table, rows in dump_database(fresh).items()}
    # the deleted note took its chunks and edges; links to it are unresolved now
    assert query(db_path, "SELECT count(*) FROM notes WHERE path = 'Konzepte/TF-IDF.md'")[0][0] == 0
    assert ("TF-IDF", "missing") in query(db_path, "SELECT target_raw, reason FROM unresolved_links")


def test_link_resolves_when_target_appears(vault, db_path):
    vault.write("A.md", "Verweis auf [[Später]].\n")
    report = run_import(db_path, vault.root)
    assert report.unresolved_total == 1
    vault.write("Unterordner/Später.md", "Jetzt gibt es mich.\n")
    report = run_import(db_path, vault.root)
    assert report.unresolved_total == 0 and report.notes_relinked == 1
    assert [k for k, *_ in edges_of(db_path, "A.md")] == ["links_to"]


def test_link_to_a_name_that_becomes_an_alias_stays_unresolved_and_says_whose(vault, db_path):
    vault.write("A.md", "Verweis auf [[RRF]].\n")
    vault.write("Reciprocal Rank Fusion.md", "Fusion.\n")
    assert run_import(db_path, vault.root).unresolved_total == 1
    vault.write("Reciprocal Rank Fusion.md", "---\naliases: [RRF]\n---\nFusion.\n")
    report = run_import(db_path, vault.root)
    assert report.unresolved_total == 1 and report.notes_changed == 1 and report.notes_relinked == 1
    assert edges_of(db_path, "A.md") == []
    assert query(db_path, "SELECT detail FROM note_links") == [
        ("no note named 'RRF'; it is an alias of Reciprocal Rank Fusion.md (aliases do not resolve links)",)]


def test_link_becomes_ambiguous_when_a_namesake_appears(vault, db_path, tmp_path):
    vault.write("A.md", "Verweis auf [[Notizen]].\n")
    vault.write("Projekte/Notizen.md", "eins\n")
    assert run_import(db_path, vault.root).unresolved_total == 0
    vault.write("Inbox/Notizen.md", "zwei\n")
    report = run_import(db_path, vault.root)
    assert report.ambiguous_total == 1 and edges_of(db_path, "A.md") == []
    fresh = tmp_path / "fresh.db"
    run_import(fresh, vault.root)
    assert dump_database(db_path) == dump_database(fresh)


def test_type_from_folder_frontmatter_and_overrides(vault, db_path):
    vault.write("Personen/Ada.md", "Person.\n")
    vault.write("Inbox/Buch.md", "---\ntype: book\nretriever_weight: 1.3\n---\nBuch.\n")
    vault.write("Inbox/X.md", "---\ntype: erfunden\nchunk_profile: fine\n---\nX.\n")
    run_import(db_path, vault.root)
    rows = dict((p, (t, w, prof)) for p, t, w, prof in
                query(db_path, "SELECT path, type, retriever_weight, chunk_profile FROM notes"))
    assert rows["Personen/Ada.md"] == ("person", 0.85, "compact")
    assert rows["Inbox/Buch.md"] == ("book", 1.3, "fine")
    assert rows["Inbox/X.md"] == ("erfunden", 1.0, "fine")
    (weights,) = query(db_path, "SELECT c.retriever_weight FROM chunks c JOIN notes n USING(note_id) WHERE n.path = 'Inbox/Buch.md'")
    assert weights == (1.3,)


def test_privacy_and_ai_processing_flags(vault, db_path):
    vault.write("Privat.md", "---\nprivate: true\n---\nGeheim.\n")
    vault.write("Sichtbar.md", "---\nvisibility: private\nai_processing: none\n---\nNur für mich.\n")
    vault.write("Offen.md", "Offen.\n")
    run_import(db_path, vault.root)
    flags = dict((p, (pr, ai)) for p, pr, ai in query(db_path, "SELECT path, private, ai_processing FROM notes"))
    assert flags == {"Privat.md": (1, 1), "Sichtbar.md": (1, 0), "Offen.md": (0, 1)}


def test_frontmatter_id_is_the_note_id_and_survives_a_rename(vault, db_path):
    vault.write("Alt.md", "---\nid: zk-001\n---\nText [[Ziel]].\n")
    vault.write("Ziel.md", "Ziel.\n")
    run_import(db_path, vault.root)
    assert query(db_path, "SELECT note_id FROM notes WHERE path = 'Alt.md'") == [("zk-001",)]
    vault.rename("Alt.md", "Neu/Umbenannt.md")
    report = run_import(db_path, vault.root)
    assert report.notes_renamed == 1
    assert query(db_path, "SELECT path FROM notes WHERE note_id = 'zk-001'") == [("Neu/Umbenannt.md",)]


def test_a_duplicate_id_stays_with_the_note_that_has_it(vault, db_path, tmp_path):
    """A copy of a note (Obsidian's "duplicate") must not take the original's id and what hangs on
    it; without history (a fresh index) the first path in sort order has it."""
    vault.write("b.md", "---\nid: same\n---\nB\n")
    run_import(db_path, vault.root)
    vault.write("a.md", "---\nid: same\n---\nA\n")  # sorts first, but b.md holds the id
    report = run_import(db_path, vault.root)
    ids = dict(query(db_path, "SELECT path, note_id FROM notes"))
    assert ids["b.md"] == "same" and ids["a.md"] != "same"
    assert any(w.path == "a.md" and "duplicate frontmatter id 'same' (also in b.md)" in w.reason
               for w in report.warnings)
    fresh = tmp_path / "fresh.db"
    run_import(fresh, vault.root)
    assert dict(query(fresh, "SELECT path, note_id FROM notes"))["a.md"] == "same"
    assert run_import(db_path, vault.root).notes_unchanged == 2  # settled: nothing moves on the next run


def test_sample_vault_imports_cleanly(sample_vault, db_path):
    report = run_import(db_path, sample_vault.root)
    assert 40 <= report.notes_total <= 80
    assert report.inline_total > 0 and report.callout_total > 0 and report.frontmatter_total > 0
    assert report.defaults_total > 0 and report.missing_total >= 1
    assert not [w for w in report.warnings], [w.as_dict() for w in report.warnings]
    paths = {p for (p,) in query(db_path, "SELECT path FROM notes")}
    assert not any(p.startswith((".obsidian", ".trash", "Templates/")) for p in paths)
    assert query(db_path, "SELECT count(*) FROM notes WHERE ai_processing = 0")[0][0] >= 1
    assert query(db_path, "SELECT count(*) FROM notes WHERE private = 1")[0][0] >= 1
    fm = json.loads(query(db_path, "SELECT frontmatter FROM notes LIMIT 1")[0][0])
    assert isinstance(fm, dict)


def test_notes_written_by_other_code_are_parsed_again(vault, db_path, tmp_path, monkeypatch):
    """Each note remembers the parser/analyzer/type-registry fingerprint it was written with."""
    from mindtui.config import load_settings

    small_vault(vault)
    run_import(db_path, vault.root)
    registry = tmp_path / "types.yaml"
    registry.write_text(load_settings().types_file.read_text(encoding="utf-8").replace(
        "concept: {chunk_profile: default, retriever_weight: 1.15", "concept: {chunk_profile: default, "
        "retriever_weight: 1.3"), encoding="utf-8")
    monkeypatch.setenv("MINDTUI_TYPES_FILE", str(registry))
    report = run_import(db_path, vault.root)
    assert (report.notes_changed, report.notes_unchanged) == (4, 0)
    assert query(db_path, "SELECT retriever_weight FROM notes WHERE path = 'Konzepte/BM25.md'") == [(1.3,)]
    assert run_import(db_path, vault.root).notes_unchanged == 4


def test_path_patterns_name_folders_as_people_write_them():
    from mindtui.text.globs import excluded_by

    for pattern in ("Privat", "Privat/", "Privat/**"):
        assert excluded_by("Privat/Tagebuch.md", [pattern]) == pattern
        assert excluded_by("Privatsache.md", [pattern]) is None
    assert excluded_by("Journal/Log.md", ["Journal/Log.md"]) and not excluded_by("Journal/Log.md.bak", ["Journal/Log.md"])
    assert excluded_by("a/b/Templates/x.md", ["**/Templates/**"]) and not excluded_by("Templatesx/y.md", ["Templates/**"])
    assert excluded_by("Notiz.md", ["*.md"]) and not excluded_by("Ordner/Notiz.md", ["*.md"])


def test_an_edit_that_changes_no_name_re_resolves_no_other_notes_links(vault, db_path, monkeypatch):
    """Issue 21 item 5: a re-run re-resolved every unchanged note's links (most of a 100k-note re-run)."""
    from mindtui.vault import relink

    vault.write("A.md", "Siehe [[B]] und [[Fehlt]].\n")
    vault.write("B.md", "Siehe [[A]].\n")
    vault.write("C.md", "Erster Stand.\n")
    run_import(db_path, vault.root)
    resolved_for: list[str] = []
    real = relink.resolve_links
    monkeypatch.setattr(relink, "resolve_links",
                        lambda links, note_id, path, names: resolved_for.append(path) or real(links, note_id, path, names))
    assert run_import(db_path, vault.root).notes_unchanged == 3 and resolved_for == []
    vault.write("C.md", "Zweiter Stand, mit [[B]].\n")
    assert run_import(db_path, vault.root).notes_changed == 1
    assert resolved_for == []  # C.md's own links are resolved as it is written; A's and B's stay
    assert query(db_path, "SELECT count(*) FROM edges WHERE kind = 'links_to' AND provenance = 'explicit'")[0][0] == 3
    vault.write("Fehlt.md", "Jetzt gibt es mich.\n")  # a new name: the others' links are resolved again
    run_import(db_path, vault.root)
    assert query(db_path, "SELECT count(*) FROM unresolved_links")[0][0] == 0
