"""The graph signals: vaultmap rule, change graph from work-log tables, search pairs, neighbours, stats."""

from __future__ import annotations

import json

import pytest
from fakes import DeterministicFakeEmbedder

from mindtui.cli import main
from mindtui.config import load_settings
from mindtui.graph.change_graph import build_change_graph, columns_from
from mindtui.graph.change_log import read_work_log
from mindtui.errors import NoteNotFound
from mindtui.graph.neighbours import GROUPS, find_note, neighbours
from mindtui.models.sweep import run_embed_sweep
from mindtui.search.engine import SearchEngine, SearchOptions
from mindtui.store import open_database
from mindtui.store.graph_store import prune_search_pairs

from conftest import imported, run_import

LOG = """\
# Arbeitslog

| Datum | Sitzung | Notizen | Dauer |
|---|---|---|---|
| 2026-10-01 | S1 | [[Alpha]], [[Beta]] | 30 min |
| 2026-10-02 | S2 | [[Alpha]], [[Beta]], [[Gamma]] | 20 min |
| 2026-10-03 | S3 | [[Alpha]], [[Beta]], [[Gamma]], [[Delta]], [[Epsilon]] | 5 min |
| 2026-10-04 | S4 | [[Delta]], [[Archiv/Alt\\|die alte Liste]] | 10 min |
"""


# The change pairs LOG makes with at most 4 notes per session: S1, S2 and S4 (S3 names 5 notes).
LOG_PAIRS = {("Alpha", "Beta"): 2, ("Alpha", "Gamma"): 1, ("Beta", "Gamma"): 1, ("Alt", "Delta"): 1}


def change_pairs(db_path) -> dict[tuple[str, str], float]:
    """(title, title) -> weight of every change edge; a note outside the index by its file name."""
    conn = open_database(db_path)
    try:
        titles = dict(conn.execute("SELECT note_id, title FROM notes").fetchall())
        rows = conn.execute("SELECT source_id, target_id, weight FROM edges WHERE signal = 'change'").fetchall()
    finally:
        conn.close()

    def name(node: str) -> str:
        return titles.get(node) or node.removeprefix("path:").rpartition("/")[2].removesuffix(".md")

    return {tuple(sorted((name(a), name(b)))): w for a, b, w in rows}


@pytest.fixture
def graph_vault(vault):
    for name in ("Alpha", "Beta", "Gamma", "Delta", "Epsilon"):
        vault.write(f"{name}.md", f"# {name}\n\nText über {name}.\n")
    vault.write("Archiv/Alt.md", "Eine alte Liste. [[Alpha]]\n")
    vault.write("Journal/Arbeitslog.md", LOG, dedent=False)
    return vault


def build(db_path, vault_root, **graph_settings):
    settings = load_settings(overrides={"graph": {"max_notes_per_session": 4, **graph_settings},
                                        "import": {"exclude": ["Archiv/**"]}})
    run_import(db_path, vault_root, exclude=["Archiv/**"])
    conn = open_database(db_path)
    try:
        return build_change_graph(conn, vault_root, settings)
    finally:
        conn.close()


def test_sessions_become_weighted_pairs_and_mass_edits_are_left_out(graph_vault, db_path):
    report = build(db_path, graph_vault.root)
    pairs = change_pairs(db_path)
    assert pairs == LOG_PAIRS  # S1 and S2 pair Alpha and Beta twice; S3 is a mass edit (5 notes > 4)
    assert [{k: v for k, v in m.items() if k not in ("log_id", "targets")} for m in report.mass_edits] == [
        {"log": "Journal/Arbeitslog.md", "session": "2026-10-03 S3", "date": "2026-10-03", "notes": 5}]
    # The change graph spans the whole vault: an excluded note still pairs, by its path.
    assert report.outside_notes == 1


def test_columns_are_found_by_header_not_position(graph_vault, db_path):
    build(db_path, graph_vault.root)
    expected = change_pairs(db_path)
    assert expected == LOG_PAIRS
    reordered = LOG.replace("| Datum | Sitzung | Notizen | Dauer |", "| Dauer | Notizen | Sitzung | Datum | Ort |")
    rows = []
    for line in reordered.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")] if line.startswith("| 2026") else None
        if cells:
            date, session, notes, duration = cells
            rows.append(f"| {duration} | {notes} | {session} | {date} | Büro |")
        elif line.startswith("|---"):
            rows.append("|---|---|---|---|---|")
        else:
            rows.append(line)
    graph_vault.write("Journal/Arbeitslog.md", "\n".join(rows) + "\n", dedent=False)
    build(db_path, graph_vault.root)
    assert change_pairs(db_path) == expected
    # An optional column renamed, and the date column dropped: the same sessions, the same edges.
    graph_vault.write("Journal/Arbeitslog.md", LOG.replace("| Dauer |", "| Zeitaufwand |"), dedent=False)
    build(db_path, graph_vault.root)
    assert change_pairs(db_path) == expected
    no_date = "\n".join("|".join(line.split("|")[:1] + line.split("|")[2:]) if line.startswith("|") else line
                        for line in LOG.splitlines())
    assert "Datum" not in no_date and "2026-10-01" not in no_date
    graph_vault.write("Journal/Arbeitslog.md", no_date + "\n", dedent=False)
    build(db_path, graph_vault.root)
    assert change_pairs(db_path) == expected


def test_a_dropped_optional_column_and_a_renamed_header_still_read():
    text = "| date | **Session** | Notes |\n|:--|:-:|--:|\n| 2026-01-01 | A | [[X]] [[Y]] |\n| 2026-01-02 | | [[Y]], [[Z]] |\n"
    reading = read_work_log(text, columns_from(load_settings()), "log.md")
    assert [(s.key, s.targets) for s in reading.sessions] == [("2026-01-01 A", ["X", "Y"]), ("2026-01-02", ["Y", "Z"])]
    assert not reading.warnings


def test_a_missing_required_column_is_a_clear_warning(graph_vault, db_path):
    graph_vault.write("Journal/Arbeitslog.md", "| Datum | Sitzung | Dauer |\n|---|---|---|\n| 2026-10-01 | S1 | 1h |\n")
    report = build(db_path, graph_vault.root)
    assert report.pairs == 0
    reason = report.warnings[0]["reason"]
    assert "no table with a notes column (Notizen / Notes)" in reason and "Datum | Sitzung | Dauer" in reason


def test_unresolved_names_in_a_session_are_reported_not_guessed(graph_vault, db_path):
    graph_vault.write("Journal/Arbeitslog.md", "| Datum | Notizen |\n|---|---|\n| 2026-10-01 | [[Alpha]], [[Nirgends]] |\n")
    report = build(db_path, graph_vault.root)
    assert report.unresolved == 1 and "Nirgends" in report.warnings[0]["reason"]


def test_rebuilding_replaces_the_change_graph(graph_vault, db_path):
    build(db_path, graph_vault.root)
    graph_vault.write("Journal/Arbeitslog.md", "| Datum | Notizen |\n|---|---|\n| 2026-10-01 | [[Gamma]] [[Delta]] |\n")
    build(db_path, graph_vault.root)
    assert change_pairs(db_path) == {("Delta", "Gamma"): 1}


@pytest.fixture
def linked_db(vault, db_path):
    vault.write("Konzept.md", "---\naliases: [Idee]\n---\nrel: similar_to [[Verwandt]]\nSiehe [[Projekt]].\n")
    vault.write("Projekt.md", "---\ntype: project\n---\nWendet [[Konzept]] an.\n")
    vault.write("Verwandt.md", "Nichts verlinkt zurück.\n")
    vault.write("Fremd.md", "Ein Gedanke ohne Verbindung.\n")
    vault.write("Quelle.md", "> [!edge] supports: [[Konzept]]\n")
    vault.write("Vorlagen/Alt.md", "alt\n")
    vault.write("Liste.md", "[[Vorlagen/Alt]] und [[Konzept]]\n")
    vault.write("Arbeitslog.md", "| Sitzung | Notizen |\n|---|---|\n| 1 | [[Konzept]], [[Verwandt]] |\n")
    with imported(db_path, vault.root, exclude=["Vorlagen/**"]) as conn:
        build_change_graph(conn, vault.root, load_settings())
        yield conn


def group_paths(found, group):
    return [n.path for n in found[group]]


def test_neighbours_grouped_by_signal(linked_db):
    symmetric = frozenset({"similar_to", "related_to"})
    note = find_note(linked_db, "Konzept")
    found = neighbours(linked_db, load_settings(), note, symmetric)
    assert list(found) == list(GROUPS)
    assert group_paths(found, "links_out") == ["Projekt.md", "Verwandt.md"]  # a rel: link is a link too
    assert group_paths(found, "backlinks") == ["Arbeitslog.md", "Liste.md", "Projekt.md", "Quelle.md"]
    relations = {(n.path, n.kind, n.extra["direction"]) for n in found["relations"]}
    assert relations == {("Verwandt.md", "similar_to", "both"), ("Quelle.md", "supports", "in")}
    # A symmetric relation reads both ways: the target sees it too.
    back = neighbours(linked_db, load_settings(), find_note(linked_db, "Verwandt.md"), symmetric)
    assert [(n.path, n.extra["direction"]) for n in back["relations"]] == [("Konzept.md", "both")]
    change = found["change"][0]
    assert (change.path, change.weight, change.provenance) == ("Verwandt.md", 1.0, "signal")
    assert "| 1 | [[Konzept]], [[Verwandt]] |" in change.evidence
    link = found["links_out"][0]
    assert (link.provenance, link.confidence, link.evidence) == ("explicit", 1.0, "Siehe [[Projekt]].")


def test_vaultmap_links_to_excluded_notes_are_out_of_corpus_not_edges(linked_db):
    note = find_note(linked_db, "Liste")
    found = neighbours(linked_db, load_settings(), note, frozenset())
    assert group_paths(found, "links_out") == ["Konzept.md"]
    (resolution,) = linked_db.execute("SELECT resolution FROM note_links l JOIN notes n USING (note_id)"
                                      " WHERE n.path = 'Liste.md' AND target_path = 'Vorlagen/Alt'").fetchone()
    assert resolution == "out_of_corpus"


def test_search_pairs_confirmed_at_the_configured_weight_and_pruned(linked_db, vault, db_path):
    # Words only from each note's own text: with anchor text "Siehe" would also find Projekt.md
    # (Konzept.md links it with "Siehe [[Projekt]]").
    engine = SearchEngine(linked_db, load_settings().with_values({"search": {"anchor_text": False}}))
    for _ in range(2):
        engine.search("Wendet Siehe", SearchOptions(mode="fts", expand=False))  # Projekt.md and Konzept.md
    engine.search("Siehe verlinkt", SearchOptions(mode="fts", expand=False))  # Konzept.md and Verwandt.md
    found = neighbours(linked_db, load_settings(), find_note(linked_db, "Konzept"), frozenset())
    search = {n.path: (n.weight, n.extra["confirmed"]) for n in found["search"]}
    assert search["Projekt.md"] == (2.0, True)
    assert search["Verwandt.md"] == (1.0, False)  # found together once: present, not confirmed
    assert "Wendet Siehe" in next(n for n in found["search"] if n.path == "Projekt.md").evidence
    vault.remove("Projekt.md")
    run_import(db_path, vault.root, exclude=["Vorlagen/**"])
    assert prune_search_pairs(linked_db) == 1  # the Projekt-Konzept pair; Konzept-Verwandt stays
    found = neighbours(linked_db, load_settings(), find_note(linked_db, "Konzept"), frozenset())
    assert group_paths(found, "search") == ["Verwandt.md"]


def test_suggestions_leave_out_every_linked_note(linked_db):
    """Plumbing (a hash-seeded fake embedder, every cosine admitted): linked notes never come back."""
    fake = DeterministicFakeEmbedder()
    run_embed_sweep(linked_db, fake, batch_size=16)
    settings = load_settings(overrides={"graph": {"suggest_min_cosine": -1.0}})
    found = neighbours(linked_db, settings, find_note(linked_db, "Konzept"), frozenset())
    suggested = group_paths(found, "suggestions")
    assert "Fremd.md" in suggested
    assert not {"Projekt.md", "Verwandt.md", "Quelle.md", "Liste.md", "Konzept.md", "Arbeitslog.md"} & set(suggested)
    cosines = [n.extra["cosine"] for n in found["suggestions"]]
    assert cosines == sorted(cosines, reverse=True)


def test_suggestions_by_meaning_with_the_real_model(vault, db_path, e5_embedder):
    """The closest unlinked note in meaning comes first; an unrelated one is not suggested at all
    (default graph.suggest_min_cosine 0.80; measured cosines to Kaffee: Espresso 0.89, Tee 0.83,
    Steuer 0.76); a linked note is never suggested however close."""
    vault.write("Kaffee rösten.md", "Beim Rösten von Kaffeebohnen entstehen bei etwa 200 Grad die Aromen; helle "
                                    "Röstungen schmecken säuerlicher, dunkle bitterer. Siehe [[Kaffeemühle]].\n")
    vault.write("Kaffeemühle.md", "Eine Kaffeemühle mit Kegelmahlwerk mahlt die gerösteten Bohnen gleichmäßig.\n")
    vault.write("Espresso.md", "Für Espresso werden die Bohnen meist dunkler geröstet und sehr fein gemahlen; das "
                               "Wasser presst man mit neun Bar durch das Kaffeepulver.\n")
    vault.write("Steuererklärung.md", "Die Einkommensteuererklärung für das letzte Jahr muss bis Ende Juli beim "
                                      "Finanzamt sein; Belege für Werbungskosten sammeln.\n")
    vault.write("Grüner Tee.md", "Grüner Tee wird nicht fermentiert und mit 70 bis 80 Grad heißem Wasser "
                                 "aufgegossen.\n")
    with imported(db_path, vault.root) as conn:
        run_embed_sweep(conn, e5_embedder, batch_size=16)
        found = neighbours(conn, load_settings(), find_note(conn, "Kaffee rösten"), frozenset())
    suggested = group_paths(found, "suggestions")
    assert suggested[0] == "Espresso.md"
    assert "Steuererklärung.md" not in suggested and "Kaffeemühle.md" not in suggested
    assert all(n.extra["cosine"] >= 0.80 for n in found["suggestions"])


def test_find_note_by_path_title_alias_id_and_ambiguity(linked_db, vault, db_path):
    note = find_note(linked_db, "Konzept.md")
    assert find_note(linked_db, "idee").note_id == note.note_id == find_note(linked_db, note.note_id).note_id
    with pytest.raises(NoteNotFound, match="no note"):
        find_note(linked_db, "Gibt es nicht")
    vault.write("Unter/Konzept.md", "zweites\n")
    vault.write("A/Thema.md", "eins\n")
    vault.write("B/Thema.md", "zwei\n")
    run_import(db_path, vault.root, exclude=["Vorlagen/**"])
    assert find_note(linked_db, "Konzept").path == "Konzept.md"  # an exact vault path wins over a title
    with pytest.raises(NoteNotFound, match="ambiguous: 2 notes match by title: A/Thema.md, B/Thema.md"):
        find_note(linked_db, "Thema")


def test_neighbors_cli_json_shape_and_graph_stats(linked_db, db_path, capsys):
    assert main(["neighbors", "Idee", "--db", str(db_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["note"]["path"] == "Konzept.md" and list(data["groups"]) == list(GROUPS)
    entry = data["groups"]["links_out"][0]
    assert {"note_id", "path", "title", "kind", "provenance", "confidence", "weight", "evidence"} <= set(entry)
    assert main(["neighbors", "Idee", "--db", str(db_path), "--json", "--signal", "change"]) == 0
    assert list(json.loads(capsys.readouterr().out)["groups"]) == ["change"]
    assert main(["neighbors", "Niemand", "--db", str(db_path)]) == 1
    assert "no note" in capsys.readouterr().err
    assert main(["graph", "stats", "--db", str(db_path), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    # links: Konzept->Verwandt (a rel: line is a link too), Konzept->Projekt, Projekt->Konzept, Quelle->Konzept,
    # Liste->Konzept (its link to the excluded Vorlagen/Alt is none), Arbeitslog->Konzept, Arbeitslog->Verwandt;
    # relations: similar_to (inline) and supports (callout); type default: project -uses-> Konzept.
    counts = stats["counts"]
    assert (counts["links"], counts["relations"], counts["type_defaults"], counts["change"]) == (7, 2, 1, 1)
    top = stats["most_connected"]["links"][0]
    assert (top["path"], top["neighbours"]) == ("Konzept.md", 5)


def test_graph_refresh_command_runs_the_graph_step(graph_vault, db_path, capsys):
    run_import(db_path, graph_vault.root)
    assert main(["graph", "refresh", "--vault", str(graph_vault.root), "--db", str(db_path), "--json", "-q"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["steps"][0]["report"]["logs"] == ["Journal/Arbeitslog.md"]
    assert change_pairs(db_path)[("Alpha", "Beta")] == 3  # S3 has 5 notes: under the default limit of 10


def test_suggestion_cascade_puts_shared_links_first_then_meaning():
    from mindtui.graph.suggest import cascade, fuse

    shared = {"b": 2.0, "c": 1.0}
    similar = {"d": 0.95, "b": 0.9, "e": 0.85, "x": 0.99}
    assert [n for n, _ in cascade([shared, similar], {"x"}, 4)] == ["b", "c", "d", "e"]
    assert [n for n, _ in fuse([shared, similar], {"x"}, 2)] == ["b", "d"]  # b is in both lists


def test_session_numbers_that_restart_per_day_do_not_merge_and_code_blocks_are_examples():
    text = ("```\n| Datum | Sitzung | Notizen |\n|---|---|---|\n| 2000-01-01 | 1 | [[P]] [[Q]] |\n```\n\n"
            "| Datum | Sitzung | Notizen |\n|---|---|---|\n| 2026-01-01 | 1 | [[X]] [[Y]] |\n"
            "| 2026-01-02 | 1 | [[Y]] [[Z]] |\n| 2026-01-02 | 1 | [[W]] |\n")
    reading = read_work_log(text, columns_from(load_settings()), "log.md")
    assert [(s.key, s.targets) for s in reading.sessions] == [
        ("2026-01-01 1", ["X", "Y"]), ("2026-01-02 1", ["Y", "Z", "W"])]


def test_mass_edit_limit_counts_named_notes_even_unresolvable_ones(graph_vault, db_path):
    graph_vault.write("Journal/Arbeitslog.md", "| Datum | Notizen |\n|---|---|\n"
                      "| 2026-10-01 | [[Alpha]] [[Beta]] [[Weg1]] [[Weg2]] [[Weg3]] |\n")
    report = build(db_path, graph_vault.root)
    assert report.pairs == 0 and report.mass_edits[0]["notes"] == 5
