"""What a user typed, analysed once per search: a ParsedQuery every stage reads.

User text never reaches FTS5 syntax: it is cut into words with the same tokenizer the index
uses, each word becomes the set of its German and English Snowball stems (the index holds
one language's stems per note, the query cannot know which), and every stem is a quoted
string. Quotes, `*`, `NEAR`, `-`, `:` or brackets in the input are just characters.

The search builds one ParsedQuery (`parse_query`) and passes it down: the full-text lists of
notes and items, the name mentions, the exact title match, the knowledge items' word coverage,
snippets and highlights all read the same words, cut at the same limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from mindtui.text import analysis
from mindtui.text.names import exact_key

MAX_QUERY_WORDS = 200  # words past this are not searched for (a pasted page is not a query)


@dataclass(frozen=True)
class ParsedQuery:
    text: str  # as typed (what the embedder, the reranker and the search log get)
    words: tuple[str, ...]  # its lower-cased words, at most MAX_QUERY_WORDS
    terms: tuple[str, ...]  # the words searched for: stop words dropped if others remain
    stems: tuple[frozenset[str], ...]  # per distinct term, its stems in every indexed language
    fts: str | None  # the FTS5 MATCH expression (None: nothing to search for)
    exact: str  # exact_key of the text: how it is compared with titles and aliases

    @property
    def stem_set(self) -> frozenset[str]:
        """Every stem of every term (a text word matches when one of its stems is in here)."""
        return frozenset().union(*self.stems)


# A query of stop words alone ("this", "in", "by is a": what a query typed word by word starts
# with) looks for them in names only: in text they are in most rows, so every row ranks by next to
# nothing (BM25 weighs a word in half the rows or more by its floor), and at a million chunks
# ranking them all took 0.3-0.4 s a keystroke. In a title they were written on purpose.
STOP_WORDS_ONLY_IN = "{title} : "


def parse_query(text: str) -> ParsedQuery:
    words = tuple(analysis.words(text)[:MAX_QUERY_WORDS])
    content = tuple(w for w in words if not analysis.is_stop_word(w))
    terms = content or words
    groups: list[frozenset[str]] = []
    fts_terms: set[str] = set()
    for word in terms:
        stems = frozenset(analysis.stem_all_languages(word))
        if stems and stems not in groups:
            groups.append(stems)
        fts_terms.update(_fts_terms(word, stems))
    column = "" if content else STOP_WORDS_ONLY_IN  # each term its own filter: callers split on " OR "
    return ParsedQuery(text, words, terms, tuple(groups),
                       " OR ".join(column + term for term in sorted(fts_terms)) if fts_terms else None,
                       exact_key(text))


MIN_PREFIX = analysis.MIN_PREFIX
_GERMAN_DERIVATIONS = ("ungen", "ung", "heit", "keit")


def german_prefix(word: str) -> str | None:
    """A prefix that also reaches a German word's other forms.

    Snowball keeps derivations apart (Verknüpfungen -> verknupfung, verknüpft -> verknupft),
    so the query also asks for the German stem without its nominal suffix as a prefix
    ("verknupf"*), which matches verknüpft, verknüpfen, Verknüpfung and compounds alike.
    """
    stem = analysis.stem_word(word, "de")
    for suffix in _GERMAN_DERIVATIONS:
        if stem.endswith(suffix) and len(stem) - len(suffix) >= MIN_PREFIX:
            stem = stem[: -len(suffix)]
            break
    return stem if len(stem) >= MIN_PREFIX else None


def _fts_terms(word: str, stems: frozenset[str]) -> set[str]:
    """The quoted FTS5 strings one word asks for (any may match; BM25 ranks notes with more higher)."""
    wanted = set(stems)
    prefix = german_prefix(word)
    terms = set()
    if prefix:
        # The prefix replaces the German stem it covers: both at once would count the
        # word twice (measured -0.026 nDCG@10 on SciFact).
        wanted.discard(analysis.stem_word(word, "de"))
        terms.add(f'"{prefix}"*')
    terms.update(f'"{stem}"' for stem in wanted if stem)
    return terms
