"""Reading the model's code, the second half: what each call aims at, and the actions it makes."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from browser_copilot.plain_steps.tokens import (
    _NOT_ROOTS,
    Seg,
    Tok,
    _chain_at,
    _literal,
    _option,
    one_line,
    quoted,
    tokens,
)

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
