"""The session's memory of the secret values its pages held (F47), without the values.

An observation sees a password, a one-time code or a card number in its field (extractor.js) and keeps
the value in the page, where it masks it in every later observation of that document (observer.js).
What leaves the page is only a salted digest of it. Here the session keeps those digests, and every
prompt to the model is masked with them (`mask`): a word of the prompt whose digest is one of them
becomes `<masked>`, wherever the value went since. Another document's text, the next page's address
(a sign-in form sent by GET), a tab's title, a dialog, a code call's result: one check at the one place
where everything meets before the model.

The digest is FNV-1a (64 bits) of the UTF-8 bytes of salt, NUL and value, written in hexadecimal, the same
in observer.js (`digestOf`). It is no cipher: it only keeps the value itself out of the app's memory,
its checkpoints and its logs; the salt is new in every session. A value is one word here (no space, no
`&`, `=`, `/`, quote or bracket inside), as passwords and codes almost always are; shorter than
`SHORTEST` it is not remembered (a word that short would be masked too often by chance).
"""

from __future__ import annotations

import re
import secrets
import unicodedata
from collections.abc import Iterable
from urllib.parse import unquote

from browser_copilot.safety.redaction import mask_for_model

SHORTEST = 6
"""Characters: shorter values are not remembered."""
MASK = "<masked>"
REMEMBERED_WORDS = 100_000
"""Words whose outcome is kept between prompts (then forgotten all at once)."""
_OFFSET = 0xCBF29CE484222325
_PRIME = 0x100000001B3
_MASK64 = (1 << 64) - 1
_WORD = re.compile(r"[^\s?&=/#,;|\"'<>()\[\]{}«»“”‘’\\]+")
_EDGES = ".:!?*`"
_JOINS = re.compile(r"([:@_\-.…~+*`!|])")
_INVISIBLE = re.compile("[\u00ad\u200b-\u200f\u2060-\u2064\ufeff]")
MAX_PARTS = 25
"""Separators and parts a word may have for its runs to be tried (longer words are tried whole)."""


def digest(salt: str, value: str) -> str:
    """FNV-1a 64 of salt, NUL and value (UTF-8), 16 hex digits (observer.js `digestOf`)."""
    h = _OFFSET
    for byte in f"{salt}\0{value}".encode():
        h = ((h ^ byte) * _PRIME) & _MASK64
    return f"{h:016x}"


class SeenSecrets:
    """Digests of the secret values one session's pages held, and the salt its pages use for them."""

    def __init__(self) -> None:
        self.salt = secrets.token_hex(8)
        self._digests: set[str] = set()
        self._words: dict[str, str] = {}
        """A word of a prompt -> what it becomes (a prompt is mostly the last one again)."""

    def __len__(self) -> int:
        return len(self._digests)

    def learn(self, digests: Iterable[object]) -> None:
        """What an observation reported (`secretDigests`): only well-formed digests are kept."""
        for d in digests:
            if isinstance(d, str) and re.fullmatch(r"[0-9a-f]{16}", d) and d not in self._digests:
                self._digests.add(d)
                self._words.clear()

    def mask(self, text: str) -> str:
        """`text` with every word whose digest the session saw replaced by `<masked>`."""
        if not self._digests or not text:
            return text
        return _WORD.sub(self._word, text)

    def mask_all(self, text: str) -> str:
        """`text` as the model may read it: secrets by their shape or words (`mask_for_model`), then the
        values the session saw."""
        return self.mask(mask_for_model(text))

    def _word(self, match: re.Match[str]) -> str:
        word = match.group(0)
        if len(word) < SHORTEST:
            return word
        known = self._words.get(word)
        if known is None:
            if len(self._words) >= REMEMBERED_WORDS:
                self._words.clear()
            known = self._words[word] = self._masked(word)
        return known

    def _masked(self, word: str) -> str:
        if self._seen(word):
            return MASK
        core = word.strip(_EDGES)  # a sentence's full stop, a markdown emphasis around it
        if core and core != word and self._seen(core):
            start = word.index(core)
            return word[:start] + MASK + word[start + len(core) :]
        # Joined to other characters ("id:value", "user@value", "value…") or written with invisible or
        # full-width characters: every run of its parts, as it is and as NFKC writes it.
        plain = _INVISIBLE.sub("", unicodedata.normalize("NFKC", word))
        for form in dict.fromkeys((word, plain, unquote(word))):
            parts = _JOINS.split(form)
            if len(parts) > MAX_PARTS:
                continue
            ends = range(0, len(parts), 2)
            if any(self._seen("".join(parts[i : j + 1])) for i in ends for j in ends if j >= i):
                return MASK
        return word

    def _seen(self, text: str) -> bool:
        forms = {text, unquote(text)}  # also as an address writes it
        return any(len(form) >= SHORTEST and digest(self.salt, form) in self._digests for form in forms)
