"""Whether a note states what the user said (F67): the check behind `remember_about_user`.

A note is the user's statement only when the model's `user_words` are a verbatim quote of ONE message the
user typed in this session (or one answer of theirs to the agent's question), at least `MIN_WORDS` words
long (`MIN_UNSPACED` characters in scripts written without spaces), and the note's content comes from that
quote:
- every number and every capitalised word of the note (names, streets, towns) is in the quote;
- the note and the quote hold the same words that turn a statement around ("never", "always", "without",
  "nicht", "не", "不", ...): a note cannot add "without asking", nor drop a "not";
- of the note's other content words, at most one in four is new (a paraphrase: "prefers" for "like"; a
  word of five letters or more counts as said when the quote holds another form of it, "бронирования"
  for "бронируй").

Words that carry no fact (articles, pronouns, "the user") are listed per language in `memory_words.json`,
with the words that turn a statement around. Text is compared as Unicode letters and digits (NFKC, case
folded), so spacing, punctuation and case never matter, in any script; scripts written without spaces
(Chinese, Japanese, Thai, ...) are compared by neighbouring pairs of characters.

Anything else is not the user's statement: the user is asked ("Remember that …?") before it is kept.
"""

from __future__ import annotations

import itertools
import json
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources

MIN_WORDS = 4
"""Words a quote needs (single letters do not count)."""
MIN_UNSPACED = 8
"""Characters a quote needs in scripts written without spaces (two count as one word)."""
_UNSPACED: tuple[str, ...] = ("CJK ", "HIRAGANA", "KATAKANA", "HALFWIDTH KATAKANA", "IDEOGRAPHIC", "THAI")
_UNSPACED += ("LAO", "KHMER", "MYANMAR", "TIBETAN")
"""Unicode character names of scripts written without spaces between words."""


@dataclass(frozen=True, slots=True)
class Token:
    text: str
    """NFKC, case-folded."""
    start: int
    end: int
    unspaced: bool
    """One character of a script written without spaces (its marks included)."""
    capital: bool


@dataclass(frozen=True, slots=True)
class Stated:
    quote: str
    """The user's own text that the quote matched, as they typed it."""


@dataclass(frozen=True, slots=True)
class NotStated:
    reason: str
    """Why not, for the model and the user's card."""


@dataclass(frozen=True, slots=True)
class _Words:
    stop: frozenset[str]
    policy: frozenset[str]
    policy_unspaced: tuple[str, ...]


@cache
def _words() -> _Words:
    data = json.loads(resources.files(__package__).joinpath("memory_words.json").read_text("utf-8"))
    policy = frozenset(data["policy"])
    stop = frozenset(w for words in data["stop"].values() for w in words) - policy
    return _Words(stop, policy, tuple(data["policy_unspaced"]))


def _is_unspaced(char: str) -> bool:
    return unicodedata.name(char, "").startswith(_UNSPACED)


def _spans(text: str) -> Iterable[tuple[int, int, bool]]:
    """Runs of letters and digits (with their marks); each character of an unspaced script alone."""
    start = -1
    for i, char in enumerate(text):
        kind = unicodedata.category(char)[0]
        if kind == "M":
            continue  # belongs to the letter before it
        if kind in "LN" and not _is_unspaced(char):
            start = i if start < 0 else start
            continue
        if start >= 0:
            yield start, i, False
            start = -1
        if kind in "LN":
            end = i + 1
            while end < len(text) and unicodedata.category(text[end])[0] == "M":
                end += 1
            yield i, end, True
    if start >= 0:
        yield start, len(text), False


def tokens(text: str) -> list[Token]:
    return [
        Token(unicodedata.normalize("NFKC", text[s:e]).casefold(), s, e, unspaced, text[s].isupper())
        for s, e, unspaced in _spans(text)
    ]


def _is_letter(token: Token) -> bool:
    """A single letter of a spaced script ("s" of "user's", "l" of "l'adresse"): no word."""
    return not token.unspaced and len(token.text) == 1 and token.text.isalpha()


def _length(found: Sequence[Token]) -> float:
    words = sum(1 for t in found if not t.unspaced and not _is_letter(t))
    return words + sum(1 for t in found if t.unspaced) * MIN_WORDS / MIN_UNSPACED


def _pairs(found: Sequence[Token]) -> list[tuple[str, bool]]:
    """The comparable terms: (text, required). Words as they are; runs of an unspaced script as pairs of
    neighbouring characters (a run of one as itself)."""
    terms: list[tuple[str, bool]] = []
    run: list[Token] = []
    for index, token in enumerate([*found, None]):
        if token is not None and token.unspaced and (not run or run[-1].end == token.start):
            run.append(token)
            continue
        if len(run) == 1:
            terms.append((run[0].text, False))
        terms.extend((a.text + b.text, False) for a, b in itertools.pairwise(run))
        run = [token] if token is not None and token.unspaced else []
        if token is not None and not token.unspaced:
            required = any(c.isdigit() for c in token.text) or (token.capital and index > 0)
            terms.append((token.text, required))
    return terms


def _content(terms: Iterable[tuple[str, bool]]) -> dict[str, bool]:
    """The terms that carry the fact (not stop-words, policy words, single letters or kana particles),
    each with whether it must be in the quote."""
    words = _words()
    content: dict[str, bool] = {}
    for text, required in terms:
        if (
            text in words.stop
            or text in words.policy
            or (len(text) == 1 and text.isalpha() and not _is_unspaced(text))
            or all(unicodedata.name(c, "").startswith("HIRAGANA") for c in text)
        ):
            continue
        content[text] = content.get(text, False) or required
    return content


def _policy(text: str, found: Sequence[Token]) -> set[str]:
    words = _words()
    folded = unicodedata.normalize("NFKC", text).casefold()
    return {t.text for t in found if t.text in words.policy} | {
        p for p in words.policy_unspaced if p in folded
    }


def find_quote(words: str, messages: Sequence[str]) -> str | None:
    """The user's text that `words` quote (the latest message holding them all, in order, without a
    gap), or None."""
    wanted = [t.text for t in tokens(words)]
    if not wanted:
        return None
    for message in reversed(messages):
        found = tokens(message)
        texts = [t.text for t in found]
        for i in range(len(texts) - len(wanted) + 1):
            if texts[i : i + len(wanted)] == wanted:
                return message[found[i].start : found[i + len(wanted) - 1].end]
    return None


def _said_as(word: str, said: set[str]) -> bool:
    """`word` or another form of it is in `said`: both begin with the same five letters or more, all but
    the last two of the shorter word (an inflection, not another word)."""
    if word in said:
        return True
    if len(word) < 5 or not word.isalpha():
        return False
    for other in said:
        shared = next((i for i, (a, b) in enumerate(zip(word, other, strict=False)) if a != b), None)
        shared = min(len(word), len(other)) if shared is None else shared
        if shared >= max(5, min(len(word), len(other)) - 2):
            return True
    return False


def _listed(words: Iterable[str], shown: dict[str, str] | None = None) -> str:
    """The words as the note writes them (`shown`: folded to written)."""
    return ", ".join(f'"{(shown or {}).get(w, w)}"' for w in sorted(words))


def unsupported(note: str, quote: str) -> str | None:
    """What of `note` the quote does not say, or None when the quote states it."""
    note_tokens, quote_tokens = tokens(note), tokens(quote)
    content = _content(_pairs(note_tokens))
    if not content:
        return "the note states nothing of the quote"
    said = {text for text, _ in _pairs(quote_tokens)}
    shown = {t.text: note[t.start : t.end] for t in note_tokens} | {
        t.text: quote[t.start : t.end] for t in quote_tokens
    }
    added = [text for text, required in content.items() if required and text not in said]
    if added:
        return f"the note adds what the user did not say: {_listed(added, shown)}"
    turned = _policy(note, note_tokens) ^ _policy(quote, quote_tokens)
    if turned:
        return f"the note and the user's words differ in {_listed(turned, shown)}"
    new = [text for text in content if not _said_as(text, said)]
    if len(new) > (len(content) + 1) // 4:
        return f"most of the note is not in the user's words: {_listed(new, shown)}"
    return None


def check(note: str, words: str, messages: Sequence[str]) -> Stated | NotStated:
    """Whether `note` is stated by the user in `words`, a quote of one of their `messages`."""
    if _length(tokens(words)) < MIN_WORDS:
        return NotStated(
            f"the quote is too short: at least {MIN_WORDS} words of one message of the user's "
            f"({MIN_UNSPACED} characters in Chinese, Japanese or Thai)"
        )
    quote = find_quote(words, messages)
    if quote is None:
        return NotStated("the quoted words are not in any one message the user wrote in this session")
    why = unsupported(note, quote)
    return NotStated(why) if why is not None else Stated(" ".join(quote.split()))


# ----- forgetting: the same rule as remembering --------------------------------------------------------

FORGET_MAX_WORDS = 40
"""A request to forget is the user's own short instruction: words inside a longer message (a page's text
the user pasted, an e-mail they forwarded) could be anyone's, so the user is asked."""
_PASTED = ('"', "“", "”", "«", "»", "„", "'''", "```")


@dataclass(frozen=True, slots=True)
class _ForgetWords:
    words: tuple[str, ...]
    refer: frozenset[str]


@cache
def _forget_words() -> _ForgetWords:
    table = resources.files("browser_copilot.safety").joinpath("forget_words.json")  # with the safety tables
    data = json.loads(table.read_text("utf-8"))
    words = tuple(w for ws in data["words"].values() for w in ws)
    return _ForgetWords(words, frozenset(w for ws in data["refer"].values() for w in ws))


def _forget_at(texts: Sequence[str], folded: str) -> int | None:
    """Where in the quote's words (`texts`) the first word asking to forget is (`folded`: the quote)."""
    for word in _forget_words().words:
        if any(_is_unspaced(c) for c in word):
            if word in folded:
                return 0
            continue
        parts = [t.text for t in tokens(word.rstrip("*"))]
        stem = word.endswith("*")
        for i in range(len(texts) - len(parts) + 1):
            head, last = texts[i : i + len(parts) - 1], texts[i + len(parts) - 1]
            if head == parts[:-1] and (last.startswith(parts[-1]) if stem else last == parts[-1]):
                return i
    return None


def _pasted(message: str, quote: str) -> bool:
    """The quote lies in a long message, or inside quotation marks or a quoted line of it."""
    if _length(tokens(message)) > FORGET_MAX_WORDS:
        return True
    at = message.find(quote)
    line = message[message.rfind("\n", 0, at) + 1 : at]
    return line.lstrip().startswith(">") or any(message[:at].count(mark) % 2 for mark in _PASTED)


def forget_check(note: str, words: str, messages: Sequence[str], *, number: int) -> Stated | NotStated:
    """Whether the user asked, in their own words, to forget `note` (shown as `number`): `words` quote one
    short message of theirs, hold a word asking to forget (`safety/forget_words.json`, not turned around:
    "don't forget"), and name the note: its content words, most of the quote's others, or its number."""
    quote = find_quote(words, messages)
    if quote is None:
        return NotStated("the quoted words are not in any one message the user wrote in this session")
    message = next(m for m in reversed(messages) if quote in m)
    found = tokens(quote)
    texts = [t.text for t in found]
    at = _forget_at(texts, unicodedata.normalize("NFKC", quote).casefold())
    if at is None:
        return NotStated("the user's words do not ask to forget anything")
    before = [t.text for t in tokens(message[: message.find(quote)])][-2:]  # "don't" just before the quote
    if _words().policy & set([*before, *texts][max(0, at + len(before) - 2) : at + len(before) + 1]):
        return NotStated("the user's words do not ask to forget it")
    if _pasted(message, quote):
        return NotStated("the words are part of a longer or quoted text, not the user's own request")
    refer = _forget_words().refer
    asked = {t for t in _content(_pairs(found)) if not _forget_word(t)} - refer
    named = str(number) in asked
    said = {text for text, _ in _pairs(tokens(note))}
    shared = [t for t in asked if _said_as(t, said)]
    other = [t for t in asked if t not in shared and t != str(number)]
    if not (named or shared) or len(other) > len(asked) // 3:
        return NotStated("the user's words do not name this note")
    return Stated(" ".join(quote.split()))


def _forget_word(text: str) -> bool:
    return _forget_at([text], text) is not None
