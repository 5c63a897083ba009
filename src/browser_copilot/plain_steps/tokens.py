"""Reading the model's code, the first half: cutting text for a line, the code's tokens, its call
chains."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

SUMMARY_LIMIT = 220
"""The longest summary put into an event (consumers cut further to fit their lines)."""


# ----- cutting ------------------------------------------------------------------------------------


def one_line(text: object) -> str:
    return " ".join(str(text).split())


def shorten(text: object, limit: int) -> str:
    """`text` on one line within `limit` characters, cut at a word boundary and marked with '…'."""
    flat = one_line(text)
    if len(flat) <= limit:
        return flat
    if limit <= 1:
        return "…"[:limit]
    cut = flat[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:—-") + "…"


def plural(count: int, word: str, many: str | None = None) -> str:
    """'1 step', '3 steps' ('1 entry', '2 entries' with `many`)."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


def quoted(name: str, limit: int = 60) -> str:
    return f"“{shorten(name, limit)}”"


# ----- reading the model's code: tokens -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Tok:
    kind: str  # name | str | num | regex | punct
    value: str | None  # a string's text (None: a template with ${...}); the name, number or mark


_REGEX_AFTER = set("(,=:[!&|?{};+-*%<>~^") | {"=>", "&&", "||", "??", "==", "===", "!=", "!=="}
_REGEX_KEYWORDS = {"return", "typeof", "await", "case", "in", "of", "new", "delete", "void", "throw", "yield"}
_PUNCT = ("===", "!==", "...", "=>", "?.", "&&", "||", "??", "==", "!=", "<=", ">=", "++", "--", "+=", "-=")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}
MAX_CODE = 20_000
"""Longer code is read up to here (a summary needs its first actions, not all of them)."""


def _string(code: str, i: int, quote: str) -> tuple[str | None, int]:
    """The string literal starting at `code[i]` (a quote): its value and the index after it."""
    out: list[str] = []
    dynamic = False
    i += 1
    depth = 0
    while i < len(code):
        ch = code[i]
        if ch == "\\" and i + 1 < len(code):
            nxt = code[i + 1]
            if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", code[i + 2 : i + 6]):
                out.append(chr(int(code[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        if quote == "`":
            if ch == "$" and code[i + 1 : i + 2] == "{":
                dynamic, depth = True, depth + 1
                i += 2
                continue
            if depth and ch == "}":
                depth -= 1
                i += 1
                continue
            if depth:
                i += 1
                continue
        elif ch == "\n":
            break
        if ch == quote:
            return (None if dynamic else "".join(out)), i + 1
        out.append(ch)
        i += 1
    return (None if dynamic else "".join(out)), i


def _regex(code: str, i: int) -> tuple[str, int]:
    """A regular-expression literal at `code[i]` ('/'): its source and the index after its flags."""
    j, in_class = i + 1, False
    while j < len(code) and code[j] != "\n":
        ch = code[j]
        if ch == "\\":
            j += 2
            continue
        if ch == "[":
            in_class = True
        elif ch == "]":
            in_class = False
        elif ch == "/" and not in_class:
            break
        j += 1
    source = code[i + 1 : j]
    j += 1
    while j < len(code) and code[j].isalpha():
        j += 1
    return source, j


def tokens(code: str) -> list[Tok]:
    """JavaScript as tokens: enough to follow call chains (comments dropped, strings decoded)."""
    code = code[:MAX_CODE]
    out: list[Tok] = []
    i = 0
    while i < len(code):
        ch = code[i]
        if ch.isspace():
            i += 1
        elif code.startswith("//", i):
            end = code.find("\n", i)
            i = len(code) if end < 0 else end
        elif code.startswith("/*", i):
            end = code.find("*/", i + 2)
            i = len(code) if end < 0 else end + 2
        elif ch in "'\"`":
            value, i = _string(code, i, ch)
            out.append(Tok("str", value))
        elif ch == "/" and (not out or out[-1].value in _REGEX_AFTER or out[-1].value in _REGEX_KEYWORDS):
            source, i = _regex(code, i)
            out.append(Tok("regex", source))
        elif ch.isdigit():
            j = i
            while j < len(code) and (code[j].isalnum() or code[j] in "._"):
                j += 1
            out.append(Tok("num", code[i:j]))
            i = j
        elif ch.isalpha() or ch in "_$":
            j = i
            while j < len(code) and (code[j].isalnum() or code[j] in "_$"):
                j += 1
            out.append(Tok("name", code[i:j]))
            i = j
        else:
            mark = next((p for p in _PUNCT if code.startswith(p, i)), ch)
            out.append(Tok("punct", mark))
            i += len(mark)
    return out


# ----- call chains -------------------------------------------------------------------------------


@dataclass(slots=True)
class Seg:
    """One link of a chain: `name` and its call's arguments (None: a property, not a call)."""

    name: str
    args: list[list[Tok]] | None = None


_OPEN = {"(": ")", "[": "]", "{": "}"}
_NOT_ROOTS = {
    "await", "const", "let", "var", "return", "async", "function", "new", "if", "else", "for", "of",
    "in", "while", "do", "typeof", "throw", "try", "catch", "finally", "true", "false", "null",
    "undefined", "this", "break", "continue", "switch", "case", "default", "void", "delete", "yield",
}  # fmt: skip


def _closing(toks: Sequence[Tok], i: int) -> int:
    """The index of the bracket closing the one at `toks[i]` (len(toks) when unbalanced)."""
    stack: list[str] = []
    for j in range(i, len(toks)):
        value = toks[j].value if toks[j].kind == "punct" else None
        if value in _OPEN:
            stack.append(_OPEN[value])
        elif stack and value == stack[-1]:
            stack.pop()
            if not stack:
                return j
    return len(toks)


def _split_args(toks: Sequence[Tok]) -> list[list[Tok]]:
    """Tokens between a call's parentheses, split at its top-level commas."""
    args: list[list[Tok]] = [[]]
    depth = 0
    for tok in toks:
        value = tok.value if tok.kind == "punct" else None
        if value in ("(", "[", "{"):
            depth += 1
        elif value in (")", "]", "}"):
            depth -= 1
        if value == "," and depth == 0:
            args.append([])
        else:
            args[-1].append(tok)
    return [a for a in args if a]


def _chain_at(toks: Sequence[Tok], i: int) -> tuple[list[Seg], int]:
    """The chain `a(...).b.c(...)[...]` starting at the name `toks[i]`, and the index after it."""
    segs = [Seg(str(toks[i].value))]
    j = i + 1
    if j < len(toks) and toks[j].value == "(" and toks[j].kind == "punct":
        end = _closing(toks, j)
        segs[0].args = _split_args(toks[j + 1 : end])
        j = end + 1
    while j < len(toks):
        tok = toks[j]
        if (
            tok.kind == "punct"
            and tok.value in (".", "?.")
            and j + 1 < len(toks)
            and toks[j + 1].kind == "name"
        ):
            seg = Seg(str(toks[j + 1].value))
            j += 2
            if j < len(toks) and toks[j].kind == "punct" and toks[j].value == "(":
                end = _closing(toks, j)
                seg.args = _split_args(toks[j + 1 : end])
                j = end + 1
            segs.append(seg)
        elif tok.kind == "punct" and tok.value == "[" and segs:
            j = _closing(toks, j) + 1
            segs.append(Seg("[]"))
        else:
            break
    return segs, j


def _literal(arg: Sequence[Tok] | None) -> str | None:
    """The value of an argument that is one string (or regex, or number) literal."""
    if not arg or len(arg) != 1:
        return None
    tok = arg[0]
    if tok.kind == "regex" and tok.value is not None:
        return _regex_text(tok.value)
    return tok.value if tok.kind in ("str", "num") else None


def _regex_text(source: str) -> str | None:
    """The words a simple pattern matches (/Place order/i -> 'Place order'); None for real patterns."""
    text = source.strip("^$")
    text = re.sub(r"\\([.\\/()\[\]?*+$^|{}-])", r"\1", text)
    text = text.replace("\\s+", " ").replace("\\s*", " ").replace("\\s", " ")
    return text if text and not re.search(r"[\\()\[\]|*+?{}]", text) else None


def _option(arg: Sequence[Tok] | None, key: str) -> str | None:
    """`{ key: 'value' }` in an options argument."""
    if not arg:
        return None
    for n in range(len(arg) - 2):
        if arg[n].kind in ("name", "str") and arg[n].value == key and arg[n + 1].value == ":":
            return _literal(arg[n + 2 : n + 3])
    return None
