"""The knowledge callout parser: which callouts are knowledge, title/about/quote/body, code and nesting."""

from __future__ import annotations

from hypothesis import given, settings as hsettings, strategies as st

from mindtui.knowledge.callouts import TYPES, parse_callouts


def test_a_decision_with_about_quote_and_body():
    text = ("Intro\n> [!Decision]- We use SQLite\n> about: [[Projekt Zweites Gehirn|PZG]]\n"
            "> quote: \"Eine Datei reicht\"\n> One file.\n> WAL.\n\nAfter.")
    (callout,) = parse_callouts(text)
    assert callout.type == "decision"
    assert callout.title == "We use SQLite"
    assert callout.about == "Projekt Zweites Gehirn"
    assert callout.quote == "Eine Datei reicht"
    assert callout.body == "One file.\nWAL."
    assert callout.line == 1
    assert callout.raw.splitlines()[0] == "> [!Decision]- We use SQLite"
    assert callout.proposal() == {"type": "decision", "title": "We use SQLite", "body": "One file.\nWAL.",
                                  "about": "Projekt Zweites Gehirn", "quote": "Eine Datei reicht"}


def test_every_type_is_read_and_other_callouts_are_not():
    text = "\n\n".join(f"> [!{kind}] Statement {kind}" for kind in TYPES + ("note", "edge", "tip", "quote"))
    assert [c.type for c in parse_callouts(text)] == list(TYPES)


def test_the_title_may_be_the_first_body_line_and_empty_callouts_state_nothing():
    callouts = parse_callouts("> [!fact]\n> The sky is blue\n> more\n\n> [!fact]\n> about: X\n")
    assert [(c.title, c.body) for c in callouts] == [("The sky is blue", "more")]


def test_about_as_a_plain_name_or_a_topic():
    first, second = parse_callouts("> [!preference] Kurze Mails\n> about: Mira Schneider\n\n"
                                   "> [!learning] Chunks überlappen\n> about: topic: Suche\n")
    assert first.about == "Mira Schneider"
    assert second.about == "topic:Suche"


def test_code_blocks_and_nested_quotes_are_not_read():
    text = ("```\n> [!fact] in code\n```\n~~~md\n> [!fact] in tilde code\n~~~\n"
            "> quote\n> > [!fact] nested\n\n> [!fact] Real\n> > nested line\n> still in the container\n")
    callouts = parse_callouts(text)
    assert [(c.title, c.body) for c in callouts] == [("Real", "")]


def test_consecutive_callouts_end_each_other():
    callouts = parse_callouts("> [!fact] One\n> body one\n> [!decision] Two\n> body two\nplain")
    assert [(c.type, c.title, c.body) for c in callouts] == [("fact", "One", "body one"),
                                                            ("decision", "Two", "body two")]


def test_the_statement_hash_ignores_whitespace_and_position_but_not_wording():
    a, b, c = parse_callouts("> [!fact] The  sky\n> is blue\n\ntext\n\n> [!fact] The sky\n> is   blue\n\n"
                             "> [!fact] The sky\n> is green\n")
    assert a.text_hash == b.text_hash != c.text_hash
    assert a.line != b.line


@hsettings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("> [!]factdecision\n`~:abouttopic[]| x")), max_size=300))
def test_any_text_parses_without_raising(text):
    for callout in parse_callouts(text):
        assert callout.type in TYPES and callout.title and "\n" not in callout.title
