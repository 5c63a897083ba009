"""Each event in one short sentence for a person: "Clicked “Place order”", "Typed the address into
5 fields", "Opened Checkout (shop.test)", "Asked you to confirm “Place order” on shop.test".

The sentence goes into the event's data as `summary` at the source (`narrate`, wrapped around the
agent's event sink by `AgentContext`), so the terminal, the logs, the SSE stream and the web page all show
the same words. It is derived from what the event really carries: the Playwright calls of the model's
code (getByRole / getByText / getByLabel / locator / `el(N)` + click / fill / press / selectOption /
check / goto ...), the names of the numbered elements it aims at (`targets`, from the observation), the
observation's title and address, the tool result's `ok` and text, the policy's verdicts. Code it cannot
read gets a generic, honest sentence, never a dump of the code.

Typed values are shown only after the step ran, only when short, and never when the field or the value
looks secret (a password, a code, a card number): the downstream redaction masks e-mails, phones and
cards in whatever is left.

`summary` per kind: `tool_call` says what the step is doing now ("Clicking “Next”"), `tool_result` what
it did ("Clicked “Next”", "Could not click “Next”: it did not appear in time"); `tool_result` also gets
`outcome` (done | failed | held | refused) and `policy_result` gets `outcome` (allowed | declined |
refused | judged_safe | judged_risky), so every consumer shows the same true status. `node` says what the
agent is doing now ("checking the action"), for status lines. `answer_stream` and `usage` get none.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from browser_copilot.events import Event, EventSink

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


# ----- what the code aims at -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Target:
    name: str | None = None
    """The element's own words (its accessible name, label, text): shown in quotes."""
    desc: str | None = None
    """What it is when it has no words: "a button", "the page"."""
    secret: bool = False
    within: str | None = None
    """The words of the container it was found in (a row "Ann")."""

    def text(self) -> str:
        if self.name:
            inner = quoted(self.name)
            if self.within and self.within.casefold() != self.name.casefold():
                inner += f" in {quoted(self.within, 40)}"
            return inner
        if self.desc and self.within:
            return f"{self.desc} in {quoted(self.within, 40)}"
        return self.desc or "an element"

    def key(self) -> str:
        return (self.name or self.desc or "").casefold()


ROLE_WORDS = {
    "button": "a button", "link": "a link", "textbox": "a text field", "searchbox": "the search field",
    "checkbox": "a checkbox", "radio": "an option", "combobox": "a list", "listbox": "a list",
    "option": "an option", "menuitem": "a menu item", "tab": "a tab", "row": "a row", "cell": "a cell",
    "heading": "a heading", "img": "an image", "dialog": "the dialog", "switch": "a switch",
    "password": "the password field", "slider": "a slider", "spinbutton": "a number field",
    "main": "the page", "navigation": "the menu", "table": "the table", "list": "the list",
}  # fmt: skip
TAG_WORDS = {
    "button": "a button", "a": "a link", "input": "a field", "textarea": "a text field",
    "select": "a list", "option": "an option", "form": "the form", "tr": "the table rows",
    "td": "the table", "th": "the table", "table": "the table", "tbody": "the table", "li": "the list",
    "ul": "the list", "ol": "the list", "img": "an image", "h1": "the heading", "h2": "a heading",
    "h3": "a heading", "body": "the page", "html": "the page", "main": "the page", "article": "the article",
    "nav": "the menu", "dialog": "the dialog", "label": "a label", "p": "the text", "span": "some text",
    "div": "a part of the page", "section": "a part of the page", "iframe": "a frame",
}  # fmt: skip
_SELECTOR_TEXT = re.compile(
    r"""(?:^text=|:has-text\(|:text\(|:text-is\(|:text-matches\()\s*['"]?([^'")\]]{1,80})"""
)
_SELECTOR_ATTR = re.compile(
    r"""\[(aria-label|placeholder|title|alt|name|value|data-testid|id|for|href)\s*[*^$~|]?=\s*['"]?([^'"\]]{1,80})"""
)
_SELECTOR_ID = re.compile(r"#([\w-]{1,60})")
_SELECTOR_CLASS = re.compile(r"\.([A-Za-z][\w-]{1,60})")
_SELECTOR_TAG = re.compile(r"(?:^|[\s>+~])([a-z][a-z0-9]*)(?=[\s.#\[:>+~,]|$)")
_SELECTOR_TYPE = re.compile(r"""\[type\s*=\s*['"]?(\w+)""")


def humanise(identifier: str) -> str:
    """'place-order' / 'placeOrder' / 'place_order' -> 'place order'."""
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", identifier)
    return " ".join(re.split(r"[-_\s]+", spaced)).strip().lower()


def selector_target(selector: str) -> Target:
    """What a CSS / Playwright selector names, in words."""
    found = _SELECTOR_TEXT.search(selector.strip())
    if found:
        return Target(name=found.group(1).strip())
    if selector.startswith(("xpath=", "//")):
        return Target(desc="an element")
    last = re.split(r"\s*>>\s*|\s+(?![^\[]*\])", selector.strip())[-1]
    attr = _SELECTOR_ATTR.search(last)
    if attr and attr.group(1) not in ("id", "href"):
        words = attr.group(2)
        return Target(name=humanise(words) if attr.group(1) in ("name", "data-testid", "for") else words)
    ident = _SELECTOR_ID.search(last) or (attr if attr and attr.group(1) == "id" else None)
    if ident:
        return Target(name=humanise(ident.group(ident.lastindex or 1)))
    kind = _SELECTOR_TYPE.search(last)
    tag = _SELECTOR_TAG.search(last)
    if kind and kind.group(1) in ("submit", "email", "password", "search", "tel", "checkbox", "radio"):
        noun = {"submit": "the submit button", "email": "the e-mail field", "password": "the password field",
                "search": "the search field", "tel": "the phone field", "checkbox": "a checkbox",
                "radio": "an option"}[kind.group(1)]  # fmt: skip
        return Target(desc=noun, secret=kind.group(1) == "password")
    cls = _SELECTOR_CLASS.search(last)
    if cls and not (tag and tag.group(1) in ("body", "html", "main")):
        return Target(name=humanise(cls.group(1)))
    if tag:
        return Target(desc=TAG_WORDS.get(tag.group(1), "an element"))
    return Target(desc="an element")


_BY_SELECTOR = {"locator", "querySelector", "querySelectorAll", "$", "$$", "frameLocator", "getElementById"}


def _narrowed(current: Target | None, method: str, args: list[list[Tok]]) -> Target:
    """The target after a locator method (`getByRole('button', { name: 'Buy' })`, `.filter(...)`)."""
    first = args[0] if args else None
    within = (current.name or current.within) if current else None
    if method == "getByRole":
        role = _literal(first) or ""
        name = _option(args[1] if len(args) > 1 else None, "name")
        if name:
            return Target(name=name, within=within, secret=role == "password")
        return Target(desc=ROLE_WORDS.get(role, f"a {role}" if role else "an element"), within=within)
    if method in ("getByText", "getByLabel", "getByPlaceholder", "getByTitle", "getByAltText"):
        text = _literal(first)
        return Target(name=text, within=within) if text else Target(desc="an element", within=within)
    if method == "getByTestId":
        test_id = _literal(first)
        return Target(name=humanise(test_id), within=within) if test_id else Target(desc="an element")
    if method == "filter" and current is not None:
        text = _option(first, "hasText")
        if text and not current.name:
            return Target(name=text, desc=current.desc, within=current.within)
        if text:
            return replace(current, within=text)
        return current
    if method in _BY_SELECTOR:
        selector = _literal(first)
        if selector is None:
            return current or Target(desc="an element")
        if method == "getElementById":
            selector = f"#{selector}"
        found = selector_target(selector)
        if current is not None and current.desc == "the page":
            return found
        return replace(found, within=within) if found.within is None and within else found
    return current or Target(desc="an element")


# ----- actions -------------------------------------------------------------------------------------


@dataclass(slots=True)
class Action:
    verb: str
    target: Target | None = None
    value: str | None = None
    other: Target | None = None
    count: int = 1
    fields: list[Target] = field(default_factory=list)


LOCATOR_BUILDERS = {
    "locator", "getByRole", "getByText", "getByLabel", "getByPlaceholder", "getByTitle", "getByAltText",
    "getByTestId", "filter", "querySelector", "querySelectorAll", "$", "$$", "frameLocator",
    "getElementById",
}  # fmt: skip
PASS_THROUGH = {
    "first", "last", "nth", "contentFrame", "owner", "and", "or", "describe", "[]", "mainFrame", "frame",
}  # fmt: skip
READS = {
    "innerText", "textContent", "innerHTML", "inputValue", "allInnerTexts", "allTextContents",
    "getAttribute", "ariaSnapshot", "evaluate", "evaluateAll", "$eval", "$$eval", "title", "url",
    "content", "textContents", "selectedOptions", "cookies", "pages",
}  # fmt: skip
LOOKS = {
    "isVisible", "isHidden", "isEnabled", "isDisabled", "isChecked", "isEditable", "count", "all",
    "boundingBox",
}  # fmt: skip
_QUIET = {"focus", "look", "wait", "move", "listen", "resize"}
SELECTOR_FIRST = {
    "click", "dblclick", "tap", "fill", "type", "press", "check", "uncheck", "selectOption", "hover", "focus",
    "setInputFiles", "textContent", "innerText", "innerHTML", "inputValue", "getAttribute", "$eval",
    "$$eval", "waitForSelector", "isVisible", "isChecked", "dispatchEvent",
}  # fmt: skip
"""The page methods whose first argument is a selector (`page.click('#buy')`)."""


def _file_name(value: str | None) -> str | None:
    return value.replace("\\", "/").rsplit("/", 1)[-1] if value else None


def _locator_action(method: str, target: Target | None, args: list[list[Tok]]) -> Action | None:
    """An action on a locator (or element); None when the method only narrows or reads nothing."""
    first = args[0] if args else None
    if method in ("click", "tap"):
        return Action("click", target)
    if method == "dblclick":
        return Action("dblclick", target)
    if method in ("fill", "type", "pressSequentially", "insertText"):
        return Action("type", target, _literal(first))
    if method == "press":
        return Action("press", target, _literal(first))
    if method == "clear":
        return Action("clear", target)
    if method in ("check", "uncheck", "setChecked"):
        off = method == "uncheck" or (
            method == "setChecked" and first is not None and first[0].value == "false"
        )
        return Action("untick" if off else "tick", target)
    if method == "selectOption":
        value = _literal(first) or _option(first, "label") or _option(first, "value")
        if value is None and first and first[0].value == "[":
            value = _literal(first[1:2])
        return Action("choose", target, value)
    if method == "setInputFiles":
        value = _literal(first) or (_literal(first[1:2]) if first and first[0].value == "[" else None)
        return Action("attach", target, _file_name(value))
    if method == "hover":
        return Action("hover", target)
    if method in ("focus", "blur", "selectText"):
        return Action("focus", target)
    if method in ("scrollIntoViewIfNeeded", "scrollIntoView"):
        return Action("scroll", target)
    if method == "dispatchEvent":
        return Action("click", target) if _literal(first) == "click" else Action("focus", target)
    if method in ("submit", "requestSubmit"):
        return Action("submit", target)
    if method == "waitFor":
        return Action("wait", target)
    if method == "screenshot":
        return Action("shot", target)
    if method in READS:
        return Action("read", target)
    if method in LOOKS:
        return Action("look", target)
    return None


def _each(target: Target) -> Target:
    """The target of an action in a loop over matches: 'each “Remove”', 'each checkbox'."""
    if target.name:
        return Target(desc=f"each {quoted(target.name)}", within=target.within)
    bare = re.sub(r"^(an?|the) ", "", target.desc or "element")
    return Target(desc=f"each {bare}", within=target.within)


_READ_HINTS = {
    "innerText", "textContent", "innerHTML", "value", "querySelectorAll", "querySelector", "getAttribute",
    "title", "href", "outerHTML", "getElementsByTagName", "getElementById", "scrollHeight", "location",
}  # fmt: skip


@dataclass(slots=True)
class _Reader:
    """Walks the code's tokens and collects its actions in order."""

    elements: Mapping[str, Mapping[str, Any]]
    variables: dict[str, list[Seg]] = field(default_factory=dict)
    pages: set[str] = field(default_factory=lambda: {"page"})
    loops: set[str] = field(default_factory=set)
    actions: list[Action] = field(default_factory=list)
    last_target: Target | None = None
    """What the chain read last aims at: the subject of `(a ? b : c).innerText()`."""

    def read(self, toks: Sequence[Tok], implicit: Target | None = None) -> None:
        i = 0
        while i < len(toks):
            tok = toks[i]
            previous = toks[i - 1] if i else None
            after_paren = previous is not None and previous.value == ")" and tok.value in (".", "?.")
            if after_paren and i + 1 < len(toks) and toks[i + 1].kind == "name":  # `( ... ).method()`
                segs, after = _chain_at(toks, i + 1)
                self._chain([Seg("()"), *segs], self.last_target)
                i = after
                continue
            if (
                tok.kind != "name"
                or tok.value in _NOT_ROOTS
                or (previous is not None and previous.value in (".", "?."))
            ):
                i += 1
                continue
            bind = self._binding(toks, i)
            segs, after = _chain_at(toks, i)
            self._chain(segs, implicit)
            if bind is not None:
                name, loop = bind
                resolved = self._resolve(segs)
                if (
                    resolved
                    and resolved[-1].name in ("newPage", "waitForEvent")
                    and resolved[-1].args is not None
                ):
                    self.pages.add(name)
                elif resolved and (loop or resolved[-1].name != "all"):
                    self.variables[name] = resolved[:-1] if resolved[-1].name == "all" else resolved
                    if loop:
                        self.loops.add(name)
            i = max(after, i + 1)

    @staticmethod
    def _binding(toks: Sequence[Tok], i: int) -> tuple[str, bool] | None:
        """The variable the chain at `i` is assigned to: `const x = [await] CHAIN`, or a loop's
        `for (const x of CHAIN)`."""
        j = i - 1
        if j >= 0 and toks[j].value == "await":
            j -= 1
        declared = j >= 2 and toks[j - 2].value in ("const", "let", "var")
        if declared and toks[j].value in ("=", "of") and toks[j - 1].kind == "name":
            return str(toks[j - 1].value), toks[j].value == "of"
        return None

    def _resolve(self, segs: list[Seg]) -> list[Seg]:
        root = segs[0]
        if root.args is None and root.name in self.variables:
            return [*self.variables[root.name], *segs[1:]]
        return segs

    def _element(self, args: list[list[Tok]] | None) -> Target:
        number = _literal(args[0]) if args else None
        known = self.elements.get(str(number)) if number is not None else None
        if known is None:
            return Target(desc=f"element {number}" if number else "an element")
        name = one_line(known.get("name") or "")
        role = str(known.get("role") or "")
        secret = bool(known.get("secret")) or role == "password"
        if name:
            return Target(name=name, secret=secret)
        return Target(desc=ROLE_WORDS.get(role, f"a {role}" if role else "an element"), secret=secret)

    def _chain(self, segs: list[Seg], implicit: Target | None) -> None:
        before = len(self.actions)
        for seg in segs:  # what the arguments do runs first (Promise.all([...]), callbacks)
            for arg in seg.args or []:
                self.read(arg, implicit=self._callback_target(segs, seg, implicit))
        nested = len(self.actions) > before
        root_loop = segs[0].args is None and segs[0].name in self.loops
        segs = self._resolve(segs)
        for action in self._interpret(segs, implicit, nested):
            if root_loop and action.target is not None:
                action.target = _each(action.target)
            self.actions.append(action)

    def _callback_target(self, segs: list[Seg], seg: Seg, implicit: Target | None) -> Target | None:
        """Inside `locator.evaluate(e => e.click())` the element is the locator's target."""
        if seg.name not in ("evaluate", "evaluateAll", "$eval", "$$eval"):
            return implicit
        index = segs.index(seg)
        actions = self._interpret([*self._resolve(segs[:index]), Seg("textContent", [])], implicit, False)
        return actions[-1].target if actions else implicit

    def _interpret(self, segs: list[Seg], implicit: Target | None, nested: bool) -> list[Action]:
        root = segs[0]
        target: Target | None = None
        kind = "other"
        if root.name == "el" and root.args is not None:
            kind, target = "locator", self._element(root.args)
        elif root.name in self.pages and root.args is None:
            kind = "page"
        elif root.name == "document":
            kind = "document"
        elif root.name == "window":
            kind = "window"
        elif root.args is None and root.name not in ("Promise", "JSON", "Math", "console", "Object", "Array"):
            kind, target = "unknown", implicit
        actions: list[Action] = []
        for seg in segs[1:]:
            method, args = seg.name, seg.args
            if args is None:
                kind = (
                    {"keyboard": "keyboard", "mouse": "mouse"}.get(method, kind) if kind == "page" else kind
                )
                if kind == "document" and method in ("body", "documentElement"):
                    kind, target = "locator", Target(desc="the page")
                continue
            if method in PASS_THROUGH:
                continue
            if method in LOCATOR_BUILDERS and kind in ("page", "locator", "document", "unknown"):
                target = _narrowed(target, method, args)
                kind = "locator"
                continue
            action = self._step(kind, method, args, target, nested)
            if method in ("context", "mainFrame"):
                kind = "context" if method == "context" else kind
            elif method == "newPage" and kind == "context":
                kind = "page"
            if action is not None:
                actions.append(action)
        self.last_target = target or self.last_target
        return actions

    def _step(
        self, kind: str, method: str, args: list[list[Tok]], target: Target | None, nested: bool
    ) -> Action | None:
        first = args[0] if args else None
        if kind == "page":
            return self._page_step(method, args, nested)
        if kind == "keyboard":
            if method == "press":
                return Action("press", None, _literal(first))
            if method in ("type", "insertText"):
                return Action("type", None, _literal(first))
            return None
        if kind == "mouse":
            if method in ("click", "dblclick"):
                return Action("pointclick")
            if method == "wheel":
                return Action("scroll")
            return Action("move")
        if kind == "context":
            if method == "newPage":
                return Action("newtab")
            return Action("read", Target(desc="the open tabs")) if method == "pages" else None
        if kind == "window":
            return Action("scroll") if method in ("scrollBy", "scrollTo", "scroll") else None
        if kind in ("locator", "unknown", "document"):
            if method in ("evaluate", "evaluateAll") and nested:
                return None
            return _locator_action(method, target, args)
        return None

    def _page_step(self, method: str, args: list[list[Tok]], nested: bool) -> Action | None:
        first = args[0] if args else None
        if method == "goto":
            return Action("open", None, _literal(first))
        simple = {"goBack": "back", "goForward": "forward", "reload": "reload", "bringToFront": "switch",
                  "close": "close", "screenshot": "shot", "pdf": "pdf", "setContent": "content",
                  "waitForLoadState": "wait", "waitForURL": "wait", "waitForFunction": "wait",
                  "waitForResponse": "wait", "waitForRequest": "wait", "on": "listen", "once": "listen",
                  "setViewportSize": "resize", "title": "read", "url": "read", "content": "read"}  # fmt: skip
        if method == "waitForTimeout":
            return Action("wait", None, _literal(first))
        if method == "waitForEvent":
            event = _literal(first)
            return (
                Action("download") if event == "download" else Action("newtab") if event == "popup" else None
            )
        if method in ("evaluate", "evaluateHandle", "addScriptTag"):
            if nested:
                return None
            reads = any(t.kind == "name" and t.value in _READ_HINTS for arg in args for t in arg)
            return Action("read", Target(desc="the page")) if reads else Action("script")
        if method in SELECTOR_FIRST and first is not None:
            selector = _literal(first)
            target = selector_target(selector) if selector else Target(desc="an element")
            return _locator_action(
                {"tap": "click", "waitForSelector": "waitFor", "$eval": "evaluate", "$$eval": "evaluate"}.get(
                    method, method
                ),
                target,
                args[1:],
            )
        if method in ("title", "url", "content"):
            return Action("read", Target(desc="the page"))
        verb = simple.get(method)
        return Action(verb) if verb else None


def code_actions(code: str, elements: Mapping[str, Mapping[str, Any]] | None = None) -> list[Action]:
    """The actions of the model's Playwright code, in order (`elements`: the `targets` of the call)."""
    reader = _Reader(elements or {})
    reader.read(tokens(code))
    return reader.actions


# ----- actions as words ----------------------------------------------------------------------------

ADDRESS_WORDS = re.compile(
    r"address|street|city|town|zip|post ?code|postal|country|region|province|county|house|apartment|flat\b|"
    r"building|line ?[12]|adresse|stra(ss|ß)e|stadt|plz|\bort\b|hausnummer|\brue\b|ville|code postal|pays|"
    r"calle|ciudad|direcci|c[oó]digo postal|pa[ií]s|indirizzo|citt[aà]|cap\b|адрес|улица|город|индекс|дом|"
    r"квартира|страна|область|ulica|miasto|kod pocztowy",
    re.IGNORECASE,
)
CONTACT_WORDS = re.compile(
    r"name|e-?mail|phone|mobile|telephone|\btel\b|surname|company|имя|фамилия|телефон|почта|\bnom\b|prénom|"
    r"nombre|apellido|vorname|nachname|telefon|correo|courriel|cognome|nazwisko|imię",
    re.IGNORECASE,
)
SECRET_WORDS = re.compile(
    r"pass|\bpw\b|pwd|pin\b|otp|one[- ]time|\bcode\b|cvv|cvc|csc|security|card|iban|token|secret|\bkey\b|"
    r"пароль|код|passwort|mot de passe|contraseña|senha|password|parola|hasło|密码|パスワード|비밀번호",
    re.IGNORECASE,
)


def _secret_value(value: str) -> bool:
    """A value that may be a password or a code: one word mixing letters with digits or symbols, or
    4-8 digits alone."""
    if re.fullmatch(r"\d{4,8}", value):
        return True
    if " " in value.strip() or len(value) < 6:
        return False
    mixed = bool(re.search(r"\d", value)) and bool(re.search(r"[^\W\d_]", value))
    symbols = bool(re.search(r"[^\w@.'’-]", value))
    return mixed or symbols


def _shown_value(action: Action) -> str | None:
    """The typed value to show, or None (secret-looking, long, or not known)."""
    value = action.value
    target = action.target
    if value is None or not value.strip() or len(value) > 40 or "\n" in value:
        return None
    if target is not None and (
        target.secret or SECRET_WORDS.search(f"{target.name or ''} {target.desc or ''}")
    ):
        return None
    return None if _secret_value(value) else value


KEY_NAMES = {
    "Control": "Ctrl",
    "Meta": "Cmd",
    "ArrowDown": "↓",
    "ArrowUp": "↑",
    "ArrowLeft": "←",
    "ArrowRight": "→",
}


def _key(value: str | None) -> str:
    if not value:
        return "a key"
    return "+".join(KEY_NAMES.get(part, part) for part in value.split("+"))


def _place(url: str | None) -> str:
    """An address in short: host and path, no query."""
    if not url:
        return "another page"
    parts = urlsplit(url)
    if not parts.netloc:
        return shorten(url, 50)
    path = parts.path.rstrip("/")
    return shorten(parts.netloc + path, 50)


def _seconds(ms: str | None) -> str:
    try:
        value = float(ms or "")
    except ValueError:
        return ""
    return f" {value / 1000:.1f} s".replace(".0 s", " s")


def _fields(targets: list[Target]) -> str:
    names = [t.name or t.desc or "" for t in targets]
    if all(ADDRESS_WORDS.search(n) for n in names if n) and any(names):
        return f"the address into {len(targets)} fields"
    if all(CONTACT_WORDS.search(n) or ADDRESS_WORDS.search(n) for n in names if n) and any(names):
        both = any(ADDRESS_WORDS.search(n) for n in names)
        what = "the contact details and address" if both else "the contact details"
        return f"{what} into {len(targets)} fields"
    listed = ", ".join(quoted(n, 30) for n in names[:3] if n)
    more = "…" if len(names) > 3 else ""
    return f"into {len(targets)} fields ({listed}{more})" if listed else f"into {len(targets)} fields"


_VERBS: dict[str, tuple[str, str, str]] = {
    "tick": ("tick", "ticked", "ticking"),
    "untick": ("untick", "unticked", "unticking"),
    "clear": ("clear", "cleared", "clearing"),
    "hover": ("point at", "pointed at", "pointing at"),
    "focus": ("move to", "moved to", "moving to"),
    "look": ("look for", "looked for", "looking for"),
    "submit": ("submit the form", "submitted the form", "submitting the form"),
    "back": ("go back", "went back", "going back"),
    "forward": ("go forward", "went forward", "going forward"),
    "reload": ("reload the page", "reloaded the page", "reloading the page"),
    "newtab": ("open a new tab", "opened a new tab", "opening a new tab"),
    "switch": ("switch to that tab", "switched to that tab", "switching to that tab"),
    "close": ("close the tab", "closed the tab", "closing the tab"),
    "pdf": ("save the page as a PDF", "saved the page as a PDF", "saving the page as a PDF"),
    "content": ("fill the page", "filled the page", "filling the page"),
    "download": ("download a file", "downloaded a file", "downloading a file"),
    "script": ("run a script on the page", "ran a script on the page", "running a script on the page"),
    "pointclick": ("click a spot", "clicked a spot", "clicking a spot"),
    "move": ("move the mouse", "moved the mouse", "moving the mouse"),
    "listen": ("watch the page", "watched the page", "watching the page"),
    "resize": ("resize the page", "resized the page", "resizing the page"),
}
"""(base, past, progressive) of the verbs that need no more words."""
_TAKES_OBJECT = {"tick", "untick", "clear", "hover", "focus", "look"}


def forms(action: Action, *, show_values: bool = True) -> tuple[str, str, str]:
    t = action.target.text() if action.target else None
    verb = action.verb
    times = f" {action.count} times" if action.count > 1 else ""
    if verb in ("click", "dblclick"):
        word = "click" if verb == "click" else "double-click"
        obj = f" {t}" if t else ""
        return f"{word}{obj}{times}", f"{word}ed{obj}{times}", f"{word}ing{obj}{times}"
    if verb == "type":
        if action.fields:
            rest = _fields(action.fields)
            return f"type {rest}", f"typed {rest}", f"typing {rest}"
        value = _shown_value(action) if show_values else None
        what = f" {quoted(value, 40)}" if value else ""
        where = f" into {t}" if t else ("" if what else " some text")
        tail = f" and pressed {_key(action.other.name if action.other else None)}" if action.other else ""
        tail_base = tail.replace(" pressed", " press")
        tail_ing = tail.replace(" pressed", " pressing")
        return f"type{what}{where}{tail_base}", f"typed{what}{where}{tail}", f"typing{what}{where}{tail_ing}"
    if verb == "press":
        where = f" in {t}" if t else ""
        key = _key(action.value)
        return f"press {key}{where}", f"pressed {key}{where}", f"pressing {key}{where}"
    if verb == "choose":
        value = action.value
        what = quoted(value, 40) if value else "an option"
        where = f" in {t}" if t else ""
        return f"choose {what}{where}", f"chose {what}{where}", f"choosing {what}{where}"
    if verb in _VERBS:
        base, past, ing = _VERBS[verb]
        obj = f" {t}" if verb in _TAKES_OBJECT and t else ""
        return base + obj + times, past + obj + times, ing + obj + times
    if verb == "attach":
        what = quoted(action.value, 40) if action.value else "a file"
        where = f" to {t}" if t else ""
        return f"attach {what}{where}", f"attached {what}{where}", f"attaching {what}{where}"
    if verb == "drag":
        onto = f" onto {action.other.text()}" if action.other else ""
        obj = t or "an element"
        return f"drag {obj}{onto}", f"dragged {obj}{onto}", f"dragging {obj}{onto}"
    if verb == "scroll":
        obj = f" to {t}" if t else " down the page"
        return f"scroll{obj}", f"scrolled{obj}", f"scrolling{obj}"
    if verb == "open":
        place = _place(action.value)
        tab = " in a new tab" if action.other is not None else ""
        return f"open {place}{tab}", f"opened {place}{tab}", f"opening {place}{tab}"
    if verb == "wait":
        if action.value:
            span = _seconds(action.value)
            return f"wait{span}", f"waited{span}", f"waiting{span}"
        obj = f" for {t}" if t else " for the page"
        return f"wait{obj}", f"waited{obj}", f"waiting{obj}"
    if verb == "read":
        obj = t or "the page"
        return f"read {obj}", f"read {obj}", f"reading {obj}"
    if verb == "shot":
        obj = f" of {t}" if t else ""
        return f"take a screenshot{obj}", f"took a screenshot{obj}", f"taking a screenshot{obj}"
    return "run code in the page", "ran code in the page", "running code in the page"


def merged(actions: list[Action]) -> list[Action]:
    """The actions a person would name: typing into several fields as one, Enter after typing with it,
    repeats counted, waits and focus left out when something else happened, reads of the page as one."""
    loud = [a for a in actions if a.verb not in _QUIET]
    actions = loud or actions[:1]
    out: list[Action] = []
    for action in actions:
        last = out[-1] if out else None
        typing_on = last is not None and action.verb == "type" and last.verb == "type" and last.other is None
        if typing_on and last is not None and action.target is not None and (last.fields or last.target):
            fields = last.fields or ([last.target] if last.target else [])
            if action.target.key() not in {f.key() for f in fields}:
                out[-1] = Action("type", fields=[*fields, action.target])
                continue
        if (
            last is not None
            and action.verb == "press"
            and last.verb == "type"
            and not last.fields
            and last.other is None
            and (action.target is None or last.target is None or action.target.key() == last.target.key())
        ):
            last.other = Target(name=action.value or "")
            continue
        if last is not None and last.verb == "download" and action.verb in ("click", "dblclick"):
            out[-1:] = [action, last]  # Promise.all([waitForEvent('download'), click]): the click comes first
            continue
        if last is not None and action.verb == "newtab" and last.verb == "newtab":
            continue
        if last is not None and action.verb == "open" and last.verb == "newtab":
            out[-1] = Action("open", value=action.value, other=Target(desc="tab"))
            continue
        if last is not None and action.verb == last.verb == "read":
            if (last.target and last.target.key()) != (action.target and action.target.key()):
                last.target = Target(desc="the page")
            continue
        same = last is not None and action.verb == last.verb and action.value == last.value
        if (
            same
            and last is not None
            and (last.target and last.target.key()) == (action.target and action.target.key())
        ):
            last.count += 1
            continue
        out.append(action)
    return out


def _join(parts: list[str]) -> str:
    if len(parts) > 4:
        parts = [*parts[:3], f"{len(parts) - 3} more actions"]
        return ", ".join(parts[:-1]) + " and " + parts[-1]
    if len(parts) == 1:
        return parts[0]
    return ", ".join(parts[:-1]) + ", then " + parts[-1]


def code_phrases(
    code: str, targets: Mapping[str, Mapping[str, Any]] | None = None
) -> tuple[str, str, str] | None:
    """The code's actions as (base, past, progressive) phrases; None when the code names no action
    this module can read."""
    actions = merged(code_actions(code, targets))
    if not actions:
        return None
    done = [forms(a) for a in actions]
    hidden = [forms(a, show_values=False) for a in actions]
    return _join([f[0] for f in hidden]), _join([f[1] for f in done]), _join([f[2] for f in hidden])


def element_targets(
    args: Mapping[str, Any], elements: Iterable[Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """What the numbered elements a call aims at are (`el(N)` in its code, or its `element`), from the
    observation the model acted on: the `targets` of a `tool_call` event."""
    numbers = {int(n) for n in re.findall(r"\bel\(\s*(\d+)\s*\)", str(args.get("code") or ""))}
    if isinstance(args.get("element"), int):
        numbers.add(int(args["element"]))
    found: dict[str, dict[str, Any]] = {}
    for element in elements:
        if element.get("n") not in numbers:
            continue
        state = re.sub(r'"[^"]*"', "", str(element.get("state") or ""))
        entry: dict[str, Any] = {
            "role": str(element.get("role") or ""),
            "name": shorten(element.get("name") or "", 80),
        }
        if "secret" in state.split() or entry["role"] == "password":
            entry["secret"] = True
        found[str(element["n"])] = entry
    return found


# ----- result texts ---------------------------------------------------------------------------------

_WHAT = re.compile(r'^(?P<role>[\w-]+) "(?P<name>.*)"$', re.DOTALL)


def thing(what: object) -> str:
    """'button "Place order"' (the app's description of an element) -> 'the button “Place order”'."""
    text = one_line(what)
    found = _WHAT.match(text)
    if found is None:
        return shorten(text, 80) or "the action"
    role, name = found.group("role"), found.group("name")
    if name == "(no name)":
        return ROLE_WORDS.get(role, f"a {role}").replace("a ", "the ", 1)
    role_word = {"link": "the link", "button": "the button", "a": "the link", "input": "the field"}.get(
        role, ""
    )
    return f"{role_word} {quoted(name)}".strip()


def error_reason(text: str) -> str:
    """Why a step failed, in plain words, from the error text."""
    low = text.lower()
    checks = (
        ("intercepts pointer events", "something lay on top of it"),
        ("strict mode violation", "several elements matched"),
        ("err_name_not_resolved", "that site was not found"),
        ("err_connection_refused", "the site did not answer"),
        ("err_internet_disconnected", "there is no network"),
        ("err_blocked_by_client", "the app does not allow that address"),
        ("refused by browser copilot", "the app refused it"),
        ("has been closed", "the tab was closed"),
        ("execution context was destroyed", "the page changed while it ran"),
        ("not attached to the dom", "the page changed under it"),
        ("element is detached", "the page changed under it"),
        ("element is not visible", "it was not visible"),
        ("not enabled", "it was disabled"),
        ("is disabled", "it was disabled"),
        ("is not a function", "the code had a mistake"),
        ("syntaxerror", "the code had a mistake"),
        ("referenceerror", "the code had a mistake"),
        ("typeerror", "the code had a mistake"),
    )
    for needle, words in checks:
        if needle in low:
            return words
    if "timeout" in low or "timed out" in low:
        return "it did not appear in time" if "waiting for" in low else "it took too long"
    detail = re.sub(r"^(error:?\s*)+", "", one_line(text), flags=re.IGNORECASE)
    detail = re.sub(r"\x1b\[[0-9;]*m", "", detail)
    return shorten(detail, 90) or "it failed"


def _returned(text: str) -> str | None:
    """A short value the code returned (one line, no cut), to show after "Read …"."""
    found = re.match(r"Returned:\s*(.*)$", text, re.DOTALL)
    if found is None:
        return None
    value = found.group(1).strip()
    if value.startswith("an empty string"):
        return None
    if (
        not value
        or len(value) > 60
        or "[cut" in value
        or value.endswith("…")
        or value in ("null", "true", "false")
    ):
        return None
    return value.strip('"')


def _blocked_requests(text: str) -> int:
    """How many addresses the network policy refused during the step (its note in the result)."""
    _, found, note = text.partition("Refused by Browser Copilot (nothing was sent):")
    if not found:
        return 0
    more = re.search(r"- and (\d+) more", note)
    return len(re.findall(r"- (?!and \d+ more)\S+(?: \(\d+×\))?: ", note)) + (
        int(more.group(1)) if more else 0
    )


def outcome_of(ok: bool, text: str) -> str:
    """done | failed | held | refused, from a tool result (a replay's may also be unsure)."""
    if text.startswith("Held for the user's confirmation"):
        return "held"
    if text.startswith("Refused"):
        return "refused"
    return "done" if ok else "failed"


# ----- the narrator ----------------------------------------------------------------------------------

NODE_WORDS = {
    "agent": "checking the next step",
    "critical_action_validator": "acting in the browser",
    "tools": "reading the page",
    "observe": "thinking",
    "human_in_loop": "going on with your answer",
    "goal_validator": "checking the answer",
    "quality_evaluator": "checking the answer",
    "progress_analyzer": "reviewing the progress",
    "strategy_adapter": "trying another way",
    "self_corrector": "recovering from an error",
    "memory_manager": "thinking",
    "progress_reporter": "finishing",
}
"""What the agent does once a node has finished (`node` events come at a node's end), for status lines."""

STOP_WORDS = {
    "answered": "Answered",
    "step_limit": "Stopped at the step limit",
    "loop_detected": "Stopped: it was going in circles",
    "waiting_confirmation": "Waiting for your /yes or /no",
    "waiting_user": "Waiting for you",
    "blocked": "Blocked",
    "error": "Stopped by an error",
    "cancelled": "Cancelled",
}


_NOT_DONE = re.compile(r"^(Refused|Not done)[,:]?\s*")


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _extra_tool(name: str) -> tuple[str, str] | None:
    if "__" not in name:
        return None
    server, _, tool = name.partition("__")
    return server, tool


@dataclass(slots=True)
class Narrator:
    """Turns events into sentences, remembering what a sentence needs from earlier events: the call a
    result answers, the page before this one."""

    call: dict[str, Any] | None = None
    url: str | None = None

    def __call__(self, kind: str, data: Mapping[str, Any]) -> dict[str, Any]:
        """The fields to add to the event's data (`summary`, and `outcome` for results)."""
        methods: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
            "tool_call": self._tool_call,
            "tool_result": self._tool_result,
            "observation": self._observation,
            "plan": self._plan,
            "progress": self._progress,
            "policy_request": self._policy_request,
            "policy_result": self._policy_result,
            "node": self._node,
            "status": self._status,
            "error": self._error,
            "notice": self._notice,
            "final": self._final,
        }
        method = methods.get(kind)
        if method is None:
            return {}
        added = method(data)
        if "summary" in added:
            added["summary"] = shorten(added["summary"], SUMMARY_LIMIT)
        return added

    # -- steps --

    def _tool_call(self, data: Mapping[str, Any]) -> dict[str, Any]:
        self.call = dict(data)
        tool = str(data.get("tool") or "")
        return {
            "summary": _capital(self._doing(tool, _mapping(data.get("args")), _mapping(data.get("targets"))))
        }

    def _doing(self, tool: str, args: Mapping[str, Any], targets: Mapping[str, Any]) -> str:
        if tool in ("browser_run_code", "browser_run_code_unsafe"):
            phrases = code_phrases(str(args.get("code") or ""), targets)
            return phrases[2] if phrases else "running code in the page"
        if tool == "observe_page":
            return "looking at the whole page" if args.get("full_page") else "looking at the page"
        if tool == "update_working_state":
            plan = args.get("plan")
            if isinstance(plan, list) and plan:
                return f"making a plan of {plural(len(plan), 'step')}"
            facts = args.get("add_facts")
            if isinstance(facts, list) and facts:
                return f"noting {plural(len(facts), 'fact')}"
            return "updating the plan"
        if tool == "request_user_confirmation":
            return f"asking you: {one_line(args.get('question') or '')}"
        if tool == "hand_over":
            return f"handing over to you: {one_line(args.get('what') or '')}"
        if tool == "handle_dialog":
            return "accepting the site's dialog" if args.get("accept") else "dismissing the site's dialog"
        if tool == "switch_tab":
            return f"switching to tab {args.get('index')}"
        if tool == "upload_file":
            where = self._element_text(targets, args.get("element"))
            return f"attaching {quoted(_file_name(str(args.get('path') or '')) or 'a file', 40)}{where}"
        if tool == "remember_about_user":
            if "withheld" in args:
                return "not remembering something secret"
            return f"remembering {quoted(str(args.get('fact') or ''), 80)}"
        if tool == "forget_about_user":
            return f"forgetting memory {args.get('number')}"
        extra = _extra_tool(tool)
        if extra is not None:
            return f"using {extra[1]} from {quoted(extra[0], 30)}"
        return f"using {tool or 'a tool'}"

    @staticmethod
    def _element_text(targets: Mapping[str, Any], number: object) -> str:
        known = targets.get(str(number)) if number is not None else None
        return f" to {quoted(str(known['name']))}" if isinstance(known, Mapping) and known.get("name") else ""

    def _tool_result(self, data: Mapping[str, Any]) -> dict[str, Any]:
        tool = str(data.get("tool") or "")
        ok = bool(data.get("ok", True))
        text = one_line(data.get("result") or "")
        call, self.call = (self.call if self.call and self.call.get("tool") == tool else None), None
        outcome = outcome_of(ok, text)
        if tool == "replay":
            what = re.search(
                r"The user allowed (.+?)"
                r"(?: and it ran| and the input was made| but it could not|, but it could not)",
                text,
            )
            thing_text = thing(what.group(1)) if what else "the action"
            sent = re.search(r"The browser sent (.+?)\.(?:\s|$)", text)
            if ok and outcome == "done" and sent:
                went = f"Went ahead with {thing_text}, as you allowed: sent {sent.group(1)}"
                return {"summary": went, "outcome": "done"}
            if ok and outcome == "done" and "No request to the site was seen" in text:
                return {
                    "summary": f"Made the input for {thing_text}, as you allowed; no request to the site "
                    "was seen",
                    "outcome": "unsure",
                }
            if ok and outcome == "done":
                return {"summary": f"Went ahead with {thing_text}, as you allowed", "outcome": "done"}
            return {
                "summary": f"Could not go ahead with {thing_text}: {error_reason(text)}",
                "outcome": "failed",
            }
        args = _mapping(call.get("args") if call else None)
        targets = _mapping(call.get("targets") if call else None)
        if tool in ("browser_run_code", "browser_run_code_unsafe"):
            return {
                "summary": self._code_result(str(args.get("code") or ""), targets, outcome, text),
                "outcome": outcome,
            }
        return {"summary": self._tool_done(tool, args, targets, outcome, text), "outcome": outcome}

    def _code_result(self, code: str, targets: Mapping[str, Any], outcome: str, text: str) -> str:
        phrases = code_phrases(code, targets) if code else None
        base, past = phrases[:2] if phrases else ("run code in the page", "ran code in the page")
        if outcome == "held":
            what = re.search(r"tried to activate (.+?) \(", text)
            return (
                f"Stopped before {thing(what.group(1)) if what else 'an action'}: it needs your confirmation"
            )
        if outcome == "refused":
            if "passwords" in text:
                return "Did not type a password, code or card number: you enter those yourself"
            uses = re.search(r"the code uses (.+?)\. Browser code", text)
            return "The app refused to run the code" + (f": it uses {uses.group(1)}" if uses else "")
        released = re.match(
            r"(.+?) was checked by the safety judge .*The rest of your code did not run", text
        )
        if outcome == "done" and released:
            return (
                f"Went ahead with {thing(released.group(1))} after the safety judge checked it; "
                "the rest of the step did not run"
            )
        if outcome == "failed":
            reason = error_reason(re.sub(r"^.*?Error:", "", text, count=1) if "Error:" in text else text)
            if not phrases:
                return f"The code in the page failed: {reason}"
            if ", then " not in base and " more actions" not in base:
                return f"Could not {base}: {reason}"
            return f"Tried to {base}, but it failed: {reason}"
        sentence = _capital(past)
        value = _returned(text)
        if value and phrases and past.startswith("read ") and ", then " not in past:
            sentence += f": {quoted(value, 60)}"
        judged = re.search(r"(\S.*?) was checked by the safety judge", text)
        if judged:
            sentence += " (the safety judge checked it first)"
        if "allowed" in text and text.startswith("The user allowed"):
            sentence += ", as you allowed"
        blocked = _blocked_requests(text)
        if blocked:
            sentence += f"; the app blocked {plural(blocked, 'request')} to sites outside the task"
        return sentence

    def _tool_done(
        self, tool: str, args: Mapping[str, Any], targets: Mapping[str, Any], outcome: str, text: str
    ) -> str:
        failed = outcome in ("failed", "refused")
        reason = error_reason(text) if failed else ""
        if tool == "observe_page":
            return f"Could not look at the page: {reason}" if failed else "Looked at the page"
        if tool == "update_working_state":
            return f"Could not update the plan: {shorten(text, 90)}" if failed else "Updated the plan"
        if tool == "switch_tab":
            index = args.get("index")
            return f"Could not switch to tab {index}: {reason}" if failed else f"Switched to tab {index}"
        if tool == "handle_dialog":
            verb = "accept" if args.get("accept") else "dismiss"
            return (
                f"Could not {verb} the site's dialog: {reason}"
                if failed
                else f"{_capital(verb)}ed the site's dialog"
            )
        if tool == "upload_file":
            name = quoted(_file_name(str(args.get("path") or "")) or "a file", 40)
            where = self._element_text(targets, args.get("element"))
            return f"Could not attach {name}: {reason}" if failed else f"Attached {name}{where}"
        if tool == "remember_about_user":
            if failed:
                return f"Did not remember it: {shorten(_NOT_DONE.sub('', text), 90)}"
            return f"Remembered {quoted(str(args.get('fact') or ''), 80)} for later sessions"
        if tool == "forget_about_user":
            return (
                f"Did not forget it: {shorten(text, 90)}" if failed else f"Forgot memory {args.get('number')}"
            )
        if tool in ("request_user_confirmation", "hand_over"):
            said = re.match(r"The user answered: (.*)", text)
            return f"You answered: {quoted(said.group(1), 80)}" if said else "You answered"
        extra = _extra_tool(tool)
        if extra is not None:
            server, name = extra
            if failed:
                return f"{name} from {quoted(server, 30)} failed: {reason}"
            return f"Used {name} from {quoted(server, 30)}"
        return f"{tool} failed: {reason}" if failed else f"Used {tool or 'a tool'}"

    # -- pages, plans, checks --

    def _observation(self, data: Mapping[str, Any]) -> dict[str, Any]:
        url = str(data.get("url") or "")
        title = one_line(data.get("title") or "")
        host = urlsplit(url).netloc
        where = f"{shorten(title, 70)} ({host})" if title and host else shorten(title or _place(url), 70)
        if self.url is None:
            sentence = f"Looked at {where}"
        elif url != self.url:
            sentence = f"Opened {where}"
        else:
            sentence = "Looked at the page again"
        self.url = url
        if data.get("dialog"):
            sentence += "; the site shows a dialog"
        return {"summary": sentence}

    @staticmethod
    def _plan(data: Mapping[str, Any]) -> dict[str, Any]:
        plan = [one_line(p) for p in data.get("plan") or []]
        progress = _mapping(data.get("progress"))
        done = len(progress.get("done") or [])
        current = int(progress.get("current") or 1)
        if not plan:
            return {"summary": "No plan yet"}
        if not done and current <= 1:
            return {"summary": f"Planned {plural(len(plan), 'step')}: " + "; ".join(plan)}
        now = plan[current - 1] if 0 < current <= len(plan) else ""
        sentence = f"Plan: {done} of {len(plan)} done"
        return {"summary": sentence + (f"; now {current}. {now}" if now and done < len(plan) else "")}

    @staticmethod
    def _progress(data: Mapping[str, Any]) -> dict[str, Any]:
        done, total = int(data.get("done") or 0), int(data.get("total") or 0)
        steps, limit = int(data.get("steps") or 0), data.get("limit")
        used = (
            f"{steps} of {plural(int(limit), 'browser step')} used"
            if limit
            else plural(steps, "browser step")
        )
        return {"summary": f"{done} of {plural(total, 'plan step')} done, {used}"}

    @staticmethod
    def _policy_request(data: Mapping[str, Any]) -> dict[str, Any]:
        card = _mapping(data.get("card"))
        if not card.get("what"):
            return {"summary": f"Asked you: {one_line(data.get('question') or 'to confirm an action')}"}
        site = f" on {card['site']}" if card.get("site") else ""
        kind = f" ({card['category']})" if card.get("category") else ""
        return {"summary": f"Asked you to confirm {thing(card.get('what'))}{site}{kind}"}

    @staticmethod
    def _policy_result(data: Mapping[str, Any]) -> dict[str, Any]:
        if "judge" in data:
            what = thing(data["what"]) if data.get("what") else "the action"
            reason = shorten(data.get("reason") or "", 80)
            if data.get("destructive"):
                return {
                    "summary": f"The safety judge thinks {what} commits to something ({reason}): you decide",
                    "outcome": "judged_risky",
                }
            return {"summary": f"The safety judge let {what} go ahead ({reason})", "outcome": "judged_safe"}
        card = _mapping(data.get("card"))
        if "refused" in data:
            refused = one_line(data.get("refused") or "")
            left = re.match(r"left (\S+): (.*)", refused)
            if left:
                why = shorten(left.group(2), 60)
                return {
                    "summary": f"Took the tab back from {_place(left.group(1))}: {why}",
                    "outcome": "refused",
                }
            uses = re.search(r"the code uses (.+?)\. Browser code", refused)
            why = (
                f"it uses {uses.group(1)}"
                if uses
                else shorten(re.sub(r"^Refused[^:]*:\s*", "", refused), 100)
            )
            return {"summary": f"The app refused it: {why}", "outcome": "refused"}
        what = thing(card.get("what")) if card.get("what") else "the action"
        if data.get("approved"):
            return {"summary": f"You allowed {what} (once)", "outcome": "allowed"}
        return {"summary": f"You declined {what}: it did not happen", "outcome": "declined"}

    # -- the run --

    @staticmethod
    def _node(data: Mapping[str, Any]) -> dict[str, Any]:
        return {"summary": NODE_WORDS.get(str(data.get("node") or ""), "working")}

    @staticmethod
    def _status(data: Mapping[str, Any]) -> dict[str, Any]:
        state = str(data.get("state") or "")
        words = {
            "running": "Going on with your answer" if data.get("resumed") else "Working on it",
            "idle": "Done",
            "waiting_user": "Waiting for you",
            "error": "Stopped by an error",
        }
        return {"summary": words.get(state, _capital(state))}

    @staticmethod
    def _error(data: Mapping[str, Any]) -> dict[str, Any]:
        kind = str(data.get("kind") or "")
        message = one_line(data.get("message") or "")
        prefix = {
            "browser": "The browser could not be used",
            "llm": "The model could not be reached",
            "memory": "Long-term memory failed",
            "mcp_server": "An extra tool server failed",
        }.get(kind, "Something went wrong")
        return {"summary": f"{prefix}: {message}" if message else prefix}

    @staticmethod
    def _notice(data: Mapping[str, Any]) -> dict[str, Any]:
        return {"summary": _capital(one_line(data.get("text") or ""))}

    @staticmethod
    def _final(data: Mapping[str, Any]) -> dict[str, Any]:
        reason = str(data.get("stop_reason") or "")
        steps = int(data.get("steps") or 0)
        sentence = STOP_WORDS.get(reason, _capital(reason.replace("_", " ")))
        if reason == "answered" and data.get("verified") is False:
            sentence += " (unverified: the app's checks doubt it)"
        return {"summary": f"{sentence} after {plural(steps, 'step')}"}


def narrate(sink: EventSink) -> EventSink:
    """`sink`, with each event's data given its `summary` (and `outcome`) first. Idempotent: wrapping a
    narrated sink again returns it."""
    if isinstance(sink, NarratedSink):
        return sink
    return NarratedSink(sink)


class NarratedSink:
    """An event sink that adds the plain sentences, then forwards (see `narrate`)."""

    __slots__ = ("narrator", "sink")

    def __init__(self, sink: EventSink) -> None:
        self.sink = sink
        self.narrator = Narrator()

    def __call__(self, event: Event) -> None:
        if "summary" not in event.data:
            try:
                added = self.narrator(event.kind, event.data)
            except (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError):
                # Sinks never raise (events.py): the event goes on without its sentence.
                logging.getLogger(__name__).warning(
                    "no plain sentence for a %s event", event.kind, exc_info=True
                )
                added = {}
            if added:
                event = Event(event.kind, {**event.data, **added}, event.at)
        self.sink(event)
