"""Actions and tool results in words: the phrases a step's sentence is made of."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from browser_copilot.plain_steps.actions import _QUIET, ROLE_WORDS, Action, Target, code_actions
from browser_copilot.plain_steps.tokens import one_line, quoted, shorten

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
