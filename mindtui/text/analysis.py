"""Words, language and Snowball stems: the same analysis at index and query time.

FTS5 stores already-analyzed text (lower-case Snowball stems separated by spaces) in a
contentless table, so its own unicode61 tokenizer only splits on spaces. Queries stem every
word with each language's stemmer (`stem_all_languages`): the index holds one language per note.
"""

from __future__ import annotations

import re
import threading

import Stemmer

from mindtui.text import stopwords
from mindtui.text.names import composed

# Bump when tokenizing or stemming changes: the importer then re-indexes every note.
ANALYZER_VERSION = 2  # 2: text composed (NFC) first: a Mac's decomposed 'Übung' was the words 'u' and 'bung'
LANGUAGES = {"de": "german", "en": "english"}
# The shortest stem a query asks for as a prefix (search.query.german_prefix; store.fts_champions
# lists the prefixes a query can ask for).
MIN_PREFIX = 5
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# A word as written, with the combining marks of decomposed text (NFD: 'U' + U+0308 for 'Ü'): the
# spans a front end highlights in a chunk's own text (search/snippets.py).
WRITTEN_WORD = re.compile(r"[^\W_](?:[^\W_]|[\u0300-\u036f])*")

_GERMAN_HINTS = frozenset(
    "der die das und ist nicht ein eine einen mit für auf den dem des zu sich auch es wird werden "
    "im von als wie bei oder aber wenn man noch nur dass kann sind über nach aus".split()
)
_ENGLISH_HINTS = frozenset(
    "the and is of to in that it for with as on are be this by or from an can you not was "
    "which have has at your but what when how".split()
)

assert not _GERMAN_HINTS & _ENGLISH_HINTS  # detect_language counts each set on its own

_local = threading.local()  # PyStemmer objects are not thread-safe: one set per thread


def _stemmer(lang: str) -> Stemmer.Stemmer:
    cache = getattr(_local, "stemmers", None)
    if cache is None:
        cache = _local.stemmers = {code: Stemmer.Stemmer(name) for code, name in LANGUAGES.items()}
    return cache[lang]


class _WordChars(dict):
    """str.translate table: a character of _WORD stays, any other becomes a space (computed
    with _WORD itself the first time a character is seen)."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        self[code] = out = char if _WORD.match(char) else " "
        return out


_WORD_CHARS = _WordChars()


def words(text: str) -> list[str]:
    """The lower-cased _WORD matches of `text`, i.e. [w.lower() for w in _WORD.findall(text)],
    without a Python step per word: every other character becomes a space, then the whole
    text is lower-cased and split. Lower-casing is per character except for the final sigma,
    which looks at its neighbours; a space neither is cased nor is skipped there, so it acts
    like the end of the word alone. Text is composed (NFC) first: a combining mark is no word
    character, so decomposed text (a file name or text from a Mac) would fall apart at each one."""
    return composed(text).translate(_WORD_CHARS).lower().split()


def word_count(text: str) -> int:
    """len(words(text))"""
    return len(composed(text).translate(_WORD_CHARS).split())


def detect_language(text: str, default: str = "de") -> str:
    """'de' or 'en' by counting common function words; ties keep the default."""
    found = words(text[:20000])
    german = sum(map(_GERMAN_HINTS.__contains__, found))  # the two sets share no word
    english = sum(map(_ENGLISH_HINTS.__contains__, found))
    if english > german:
        return "en"
    if german > english:
        return "de"
    return default


def analyze(text: str, lang: str) -> str:
    """The indexed form of `text`: its words, lower-cased and stemmed in `lang`."""
    return " ".join(_stemmer(lang).stemWords(words(text)))


def is_stop_word(word: str) -> bool:
    return word in stopwords.GERMAN or word in stopwords.ENGLISH or word in _GERMAN_HINTS or word in _ENGLISH_HINTS


def stem_all_languages(word: str) -> set[str]:
    """A query word's stems in every language the index uses."""
    return {_stemmer(lang).stemWord(word) for lang in LANGUAGES}


def stem_word(word: str, lang: str) -> str:
    return _stemmer(lang).stemWord(word)
