"""The search text's indexed word tests give exactly what a plain `str` gives."""

from __future__ import annotations

import random

from configbags.migrate.aliases import bare_mentions, mention_lines
from configbags.migrate.searchtext import SearchText, occurrences, whole_word_starts

SOURCE = (
    "import os\nfrom pkg import server_args as sa\n\n"
    "def f(x):\n    return getattr(x, 'a')  # case  of\tos.environ\n"
    "class C:\n    case = os\n    y = sa.tp_size;_os=os\n\x0cz = [os][0]\u2028w = ｏs\n"
)
WORDS = [
    "os", "import", "getattr", "case ", "case  of", "of\tos", "\tos", "environ", "][", "[0]", "_os", "sa",
    "server_args", "absent", "\x0cz", "z", "ｏs", "w = ", "", "s.e", "os.environ\n", "tp_size;_os",
]


def test_membership_matches_str() -> None:
    rng = random.Random(7)
    words = WORDS + [SOURCE[i : i + rng.randint(1, 6)] for i in (rng.randrange(len(SOURCE)) for _ in range(300))]
    text = SearchText(SOURCE)
    for word in words + words:  # the second time from the memo
        assert (word in text) == (word in SOURCE), repr(word)
    assert text == SOURCE and hash(text) == hash(SOURCE)


def test_searches_match_str() -> None:
    for word in WORDS:
        if word:
            assert occurrences(SearchText(SOURCE), word) == occurrences(SOURCE, word), repr(word)
            assert whole_word_starts(SearchText(SOURCE), word) == whole_word_starts(SOURCE, word), repr(word)
    names = ["os", "sa", "absent", "environ"]
    assert mention_lines(SearchText(SOURCE), names) == mention_lines(SOURCE, names) == [1, 2, 5, 7, 8, 9]
    assert bare_mentions(SearchText(SOURCE), ["os"]) == bare_mentions(SOURCE, ["os"])
    assert len(bare_mentions(SOURCE, ["os"])) == 3  # `case = os`, `_os=os`, `[os]`
