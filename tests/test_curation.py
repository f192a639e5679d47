"""The curation queue's cards: each kind found, refresh idempotent, cards that close and reopen by
themselves, answers that stick (dismissed/rejected never come back), snooze, the suggestion cap."""

from __future__ import annotations

import json

import pytest

from curation_support import index, nightly, query, rows, settings_for, write_vault
from mindtui.audience import Audience
from mindtui.curation.refresh import refresh
from mindtui.service import NotAllowed, Service
from mindtui.store import open_database


@pytest.fixture
def queue(vault, db_path):
    write_vault(vault)
    settings = settings_for(db_path, vault)
    nightly(settings, vault)
    service = Service(settings, audience=Audience.OWNER)
    yield settings, service
    service.close()


def cards(service, kind, status="open"):
    return service.curation_list(kind, status)


def test_each_kind_is_found_with_its_payload(queue, vault):
    settings, service = queue
    assert service.curation_counts() == {"unresolved_link": 2, "alias_link": 0, "ambiguous_link": 1, "link_suggestion": 1,
                                         "mass_edit": 1, "unresolved_entity": 0, "duplicate": 0,
                                         "contradiction": 0, "missing_quote": 0, "gap_question": 0, "stale": 0}
    alpha, beta = sorted(cards(service, "unresolved_link"), key=lambda c: c.payload["source_path"])
    assert (alpha.payload["source_path"], alpha.payload["target"], alpha.payload["linked_from"]) == ("Alpha.md",
                                                                                                   "Fehlt", 2)
    assert [link["line"] for link in alpha.payload["links"]] == [3, 3, 5]  # three links, one card; code is no link
    assert alpha.payload["links"][2]["embed"] is True
    assert alpha.importance == beta.importance == 0.65  # two notes link the missing note
    [ambiguous] = cards(service, "ambiguous_link")
    assert ambiguous.payload["matched_by"] == "file name"
    assert sorted(c["path"] for c in ambiguous.payload["candidates"]) == ["A/Doppelt.md", "B/Doppelt.md"]
    [suggestion] = cards(service, "link_suggestion")
    assert {suggestion.payload["source"]["path"], suggestion.payload["target"]["path"]} == {"Alpha.md", "Beta.md"}
    assert suggestion.payload["cosine"] == pytest.approx(0.97, abs=1e-4)
    assert suggestion.importance == pytest.approx(0.2 + 0.5 * (0.97 - 0.93) / 0.07, abs=1e-3)
    [mass] = cards(service, "mass_edit")
    assert (mass.payload["log"], mass.payload["session"], mass.payload["notes"]) == ("Journal/Arbeitslog.md",
                                                                                     "2026-10-02 S2", 3)
    assert mass.payload["targets"] == ["Alpha", "Beta", "Gamma"]
    # Sorted by importance, and each card says what can be done, with its key.
    listed = service.curation_list()
    assert [c.importance for c in listed] == sorted((c.importance for c in listed), reverse=True)
    assert [(a["name"], a["key"]) for a in alpha.actions] == [("create", "c"), ("retarget", "r"), ("dismiss", "d")]


def test_a_second_refresh_changes_nothing(queue, db_path):
    settings, service = queue
    before = rows(db_path)
    report = service.curation_refresh()
    assert (report["new_total"], report["updated_total"], report["closed_total"], report["reopened_total"]) == (
        0, 0, 0, 0)
    assert report["kinds"]["mass_edit"]["open"] == 1  # the mass edits were looked at, not skipped
    assert rows(db_path) == before  # not even updated_at moved


def test_a_card_closes_by_itself_when_the_cause_is_fixed_and_comes_back_with_it(queue, vault, db_path):
    settings, service = queue
    vault.write("Fehlt.md", "# Fehlt\n\nNebelwort.\n", dedent=False)
    report = index(settings, vault).steps[0].report["curation"]
    assert report["kinds"]["unresolved_link"]["closed"] == 2
    closed = cards(service, "unresolved_link", "resolved")
    assert [c.answer for c in closed] == [{"by": "auto", "reason": "the link resolves now, or it is gone"}] * 2
    vault.remove("Fehlt.md")
    report = index(settings, vault).steps[0].report["curation"]
    assert report["kinds"]["unresolved_link"]["reopened"] == 2
    assert len(cards(service, "unresolved_link")) == 2
    assert len(rows(db_path)) == 5  # the same cards, never a second one


def test_dismissed_and_rejected_cards_never_come_back(queue, vault, db_path):
    settings, service = queue
    alpha = next(c for c in cards(service, "unresolved_link") if c.payload["source_path"] == "Alpha.md")
    [suggestion] = cards(service, "link_suggestion")
    service.curation_resolve(alpha.item_id, "dismiss")
    service.curation_resolve(suggestion.item_id, "reject")
    # Fixed, then broken again: an answered card stays answered.
    vault.write("Fehlt.md", "# Fehlt\n", dedent=False)
    index(settings, vault)
    vault.remove("Fehlt.md")
    index(settings, vault)
    # The pair the other way round (Beta now has fewer links, so it would be the source): same subject.
    vault.write("Alpha.md", vault.root.joinpath("Alpha.md").read_text() + "\n[[Gamma]] [[A/Doppelt]]\n",
                dedent=False)
    index(settings, vault, steps=("import", "graph"))
    assert service.curation_card(alpha.item_id).status == "dismissed"
    assert service.curation_card(suggestion.item_id).status == "dismissed"
    assert cards(service, "link_suggestion") == []
    kinds = [kind for kind, in query(db_path, "SELECT kind FROM curation_items")]
    assert kinds.count("link_suggestion") == 1 and kinds.count("unresolved_link") == 2


def test_a_snoozed_card_opens_again_when_its_time_has_come(queue, db_path):
    settings, service = queue
    [suggestion] = cards(service, "link_suggestion")
    outcome = service.curation_resolve(suggestion.item_id, "snooze")
    card = service.curation_card(suggestion.item_id)
    assert outcome.status == card.status == "snoozed"
    assert card.snoozed_until[:10] > card.updated_at[:10]  # curation.snooze_days (7) ahead
    conn = open_database(db_path)
    try:
        refresh(conn, settings, kinds=["link_suggestion"], now=card.updated_at)
        assert service.curation_card(suggestion.item_id).status == "snoozed"
        report = refresh(conn, settings, kinds=["link_suggestion"], now="9999-01-01T00:00:00+00:00")
    finally:
        conn.close()
    assert report.kinds["link_suggestion"].reopened == 1
    assert service.curation_card(suggestion.item_id).status == "open"


def test_new_suggestions_are_capped_and_come_in_as_others_are_answered(vault, db_path):
    write_vault(vault)
    vault.write("Delta.md", "# Delta\n\nNebelwort.\n", dedent=False)  # close to Alpha (0.96) and Beta
    settings = settings_for(db_path, vault, curation={"max_new_suggestions": 1})
    nightly(settings, vault)
    with Service(settings, audience=Audience.OWNER) as service:
        [first] = cards(service, "link_suggestion")
        assert first.payload["cosine"] == pytest.approx(0.9995, abs=1e-3)  # the best pair first (Beta-Delta)
        assert service.curation_refresh()["kinds"]["link_suggestion"]["new"] == 0
        service.curation_resolve(first.item_id, "reject")
        report = service.curation_refresh()["kinds"]["link_suggestion"]
        assert (report["new"], report["open"]) == (1, 1)
        [second] = cards(service, "link_suggestion")
        assert second.payload["cosine"] < first.payload["cosine"]


def test_suggestions_leave_out_notes_no_model_may_read_and_work_logs(vault, db_path):
    write_vault(vault)
    vault.write("Geheim.md", "---\nai_processing: none\n---\n# Geheim\n\nApfelwort.\n", dedent=False)
    vault.write("Journal/Arbeitslog.md", LOG_CLOSE, dedent=False)
    settings = settings_for(db_path, vault)
    nightly(settings, vault)
    pairs = [json.loads(key)["pair"] for key, in query(
        db_path, "SELECT subject_key FROM curation_items WHERE kind = 'link_suggestion'")]
    paths = dict(query(db_path, "SELECT note_id, path FROM notes"))
    assert [sorted(paths[n] for n in pair) for pair in pairs] == [["Alpha.md", "Beta.md"]]


LOG_CLOSE = "# Arbeitslog\n\nApfelwort.\n"  # as close to Alpha as can be, but a work log


def test_cards_follow_a_note_whose_id_changes(queue, vault, db_path):
    settings, service = queue
    alpha = next(c for c in cards(service, "unresolved_link") if c.payload["source_path"] == "Alpha.md")
    service.curation_resolve(alpha.item_id, "dismiss")
    vault.write("Alpha.md", "---\nid: alpha-1\n---\n" + vault.root.joinpath("Alpha.md").read_text(), dedent=False)
    index(settings, vault)
    card = service.curation_card(alpha.item_id)
    assert card.note_id == "alpha-1" and card.status == "dismissed"
    assert len(rows(db_path)) == 5  # no new card for the new id


def test_the_queue_is_the_owners(queue):
    settings, _ = queue
    with Service(settings, audience=Audience.AGENT) as agent:
        with pytest.raises(NotAllowed):
            agent.curation_list()
        with pytest.raises(NotAllowed):
            agent.curation_resolve(1, "dismiss")
    # Below the service too: an agent's connection sees no card at all.
    conn = open_database(settings.db_path, audience=Audience.AGENT)
    try:
        assert conn.execute("SELECT count(*) FROM curation_items").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM main.curation_items").fetchone()[0] > 0
    finally:
        conn.close()
