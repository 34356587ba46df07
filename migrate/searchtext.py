"""One module's search text, which answers the analyses' word tests from a small index.

Every analysis of a module gates its work on the words the text shows (a name of interest,
a trigger word, a door's word): a few hundred substring tests per file, most of them for
words it does not contain, each of which scans the whole text. A SearchText answers a
test for a word without whitespace from the text's distinct whitespace-separated chunks
(a word without whitespace occurs in the text exactly when it occurs in one of them),
which in ordinary code are about a third of the text and in repetitive code a tenth, and
remembers each answer: a word that several analyses ask about is searched for once.

It is a `str`, equal to the text, so the analyses take it wherever they take the text; a
plain `str` (a test's, or a text an analysis builds) gives the same answers, unindexed.
"""

from __future__ import annotations

# What `\b` counts as a word character in ASCII
WORD_CHARS = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz")


class SearchText(str):
    """A text whose `in` tests and whole-word searches (word_starts) are indexed."""

    _chunks: str | None
    _has: dict[str, bool]
    _starts: dict[str, list[int]]

    def __init__(self, text: str = "") -> None:
        super().__init__()
        self._chunks = None
        self._has = {}
        self._starts = {}

    def __contains__(self, word: object) -> bool:
        if not isinstance(word, str):
            return str.__contains__(self, word)  # type: ignore[operator]  # raises str's own TypeError
        known = self._has.get(word)
        if known is None:
            if word.isidentifier() or word.split() == [word]:  # no whitespace in it: it lies inside one chunk
                if self._chunks is None:
                    self._chunks = "\n".join(set(self.split()))
                known = str.__contains__(self._chunks, word)
            else:
                known = str.__contains__(self, word)
            self._has[word] = known
        return known

    def word_starts(self, word: str) -> list[int]:
        """Where the identifier `word` occurs as a whole word (see whole_word_starts)."""
        found = self._starts.get(word)
        if found is None:
            found = self._starts[word] = _whole_word_starts(self, word) if word in self else []
        return found


def occurrences(text: str, word: str) -> list[int]:
    """Every offset where `word` starts in `text`, overlapping ones too."""
    found: list[int] = []
    if word in text:  # indexed in a search text: most words asked for are absent
        at = text.find(word)
        while at != -1:
            found.append(at)
            at = text.find(word, at + 1)
    return found


def whole_word_starts(text: str, word: str) -> list[int]:
    """The offsets where the identifier `word` occurs in `text` as a whole word: not next
    to an ASCII letter, digit or underscore (what `\\b` counts as a word character in
    ASCII). A non-ASCII letter next to it counts as a boundary: that may find a mention
    that is none, never miss one."""
    if isinstance(text, SearchText):
        return text.word_starts(word)
    return _whole_word_starts(text, word)


def _whole_word_starts(text: str, word: str) -> list[int]:
    # one `str.find` scan per word runs at memchr speed: several times faster than a
    # regex tried at every offset
    starts: list[int] = []
    size = len(text)
    at = text.find(word)
    while at >= 0:
        end = at + len(word)
        if (at == 0 or text[at - 1] not in WORD_CHARS) and (end == size or text[end] not in WORD_CHARS):
            starts.append(at)
        # an identifier cannot occur as a whole word inside another occurrence of it
        at = text.find(word, end)
    return starts
