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

# Bump when tokenizing or stemming changes: the importer then re-indexes every note.
ANALYZER_VERSION = 1
LANGUAGES = {"de": "german", "en": "english"}
_WORD = re.compile(r"[^\W_]+", re.UNICODE)

_GERMAN_HINTS = frozenset(
    "der die das und ist nicht ein eine einen mit für auf den dem des zu sich auch es wird werden "
    "im von als wie bei oder aber wenn man noch nur dass kann sind über nach aus".split()
)
_ENGLISH_HINTS = frozenset(
    "the and is of to in that it for with as on are be this by or from an can you not was "
    "which have has at your but what when how".split()
)

_local = threading.local()  # PyStemmer objects are not thread-safe: one set per thread


def _stemmer(lang: str) -> Stemmer.Stemmer:
    cache = getattr(_local, "stemmers", None)
    if cache is None:
        cache = _local.stemmers = {code: Stemmer.Stemmer(name) for code, name in LANGUAGES.items()}
    return cache[lang]


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def detect_language(text: str, default: str = "de") -> str:
    """'de' or 'en' by counting common function words; ties keep the default."""
    german = english = 0
    for word in words(text[:20000]):
        if word in _GERMAN_HINTS:
            german += 1
        elif word in _ENGLISH_HINTS:
            english += 1
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
