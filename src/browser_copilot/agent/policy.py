"""Which browser actions need the user's `/yes` (F40, simple form).

A keyword check over the *targets* of an action: the names of the elements the code reaches by
number (`el(N)` → the observation's role and name), the names in accessible locators
(`getByRole(..., { name })`, `getByText`, `text=...`), other string literals of acting code, and an
accepted dialog's message. English and Russian are covered, with German, French and Spanish basics.
The safety issue replaces this with a classifier over DOM facts and a guard inside the page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from browser_copilot.agent.state import ObservationState

# Category -> phrases. Matched case-insensitively on word boundaries (\b does not work for Cyrillic
# in all cases, so boundaries are spelt out).
LEXICON: dict[str, list[str]] = {
    "pay": [
        "pay",
        "pay now",
        "payment",
        "purchase",
        "buy",
        "buy now",
        "complete purchase",
        "оплатить",
        "оплата",
        "купить",
        "bezahlen",
        "kaufen",
        "payer",
        "acheter",
        "pagar",
        "comprar",
    ],
    "order": [
        "place order",
        "order now",
        "confirm order",
        "submit order",
        "complete order",
        "оформить заказ",
        "заказать",
        "подтвердить заказ",
        "bestellen",
        "commander",
        "realizar pedido",
    ],
    "delete": [
        "delete",
        "remove",
        "erase",
        "destroy",
        "trash",
        "discard",
        "wipe",
        "удалить",
        "стереть",
        "удаление",
        "löschen",
        "supprimer",
        "eliminar",
        "borrar",
    ],
    "send": ["send", "send message", "send email", "отправить", "senden", "envoyer", "enviar"],
    "publish": [
        "publish",
        "post",
        "tweet",
        "share publicly",
        "опубликовать",
        "veröffentlichen",
        "publier",
        "publicar",
    ],
    "transfer": [
        "transfer",
        "wire",
        "send money",
        "перевести",
        "перевод",
        "überweisen",
        "virement",
        "transferir",
    ],
    "subscribe": [
        "subscribe",
        "subscribe now",
        "start subscription",
        "upgrade",
        "подписаться",
        "abonnieren",
        "s'abonner",
        "suscribirse",
    ],
    "cancel": [
        "cancel subscription",
        "cancel order",
        "cancel account",
        "close account",
        "unsubscribe",
        "deactivate",
        "отменить заказ",
        "отменить подписку",
        "отписаться",
        "kündigen",
        "résilier",
        "darse de baja",
    ],
    "accept": [
        "accept terms",
        "i agree",
        "agree and continue",
        "accept and continue",
        "sign contract",
        "принять условия",
        "согласен",
        "подписать",
        "akzeptieren",
        "j'accepte",
        "acepto",
    ],
    "submit": [
        "submit application",
        "submit",
        "apply now",
        "book now",
        "confirm booking",
        "reserve",
        "подать заявку",
        "забронировать",
        "отправить заявку",
        "buchen",
        "réserver",
        "reservar",
    ],
}
_SAFE_OVERRIDES = re.compile(
    r"add to (cart|basket|bag)|proceed to checkout|view cart|go to cart|в корзину|remove filter|"
    r"^(cancel|отмена|отменить|abbrechen|annuler|cancelar|close|закрыть)$|search|найти|поиск",
    re.IGNORECASE,
)
_PATTERNS = [
    (category, re.compile(r"(?<![\w])" + re.escape(phrase) + r"(?![\w])", re.IGNORECASE))
    for category, phrases in LEXICON.items()
    for phrase in sorted(phrases, key=len, reverse=True)
]
_ACTION = re.compile(
    r"\.(click|dblclick|tap|press|check|uncheck|submit|requestSubmit|dispatchEvent|setChecked|"
    r"selectOption|dragTo)\s*\(|mouse\.(click|down|up)|keyboard\.(press|down|type)",
)
_EL = re.compile(r"\bel\(\s*(\d+)\s*\)")
_NAMED = re.compile(
    r"getBy(?:Role|Text|Label|Title|Placeholder|AltText)\s*\((?:\s*['\"`][^'\"`]*['\"`]\s*,)?\s*"
    r"(?:\{[^}]*?name\s*:\s*)?['\"`]([^'\"`]+)['\"`]",
)
_LITERAL = re.compile(r"'([^'\\\n]{1,80})'|\"([^\"\\\n]{1,80})\"|`([^`\\\n$]{1,80})`")


@dataclass(frozen=True, slots=True)
class Target:
    role: str
    name: str
    via: str
    """How the code reaches it: `el(3)`, `getByRole`, `literal`."""

    def describe(self) -> str:
        return f'{self.role} "{self.name}"' if self.role else f'"{self.name}"'


@dataclass(frozen=True, slots=True)
class Verdict:
    destructive: bool
    category: str = "safe"
    reason: str = ""
    target: Target | None = None


def classify_text(text: str) -> tuple[str, str] | None:
    """(category, matched phrase) when `text` names a destructive action."""
    clean = " ".join(text.split())
    if not clean or _SAFE_OVERRIDES.search(clean):
        return None
    for category, pattern in _PATTERNS:
        match = pattern.search(clean)
        if match:
            return category, match.group(0)
    return None


def is_acting(code: str) -> bool:
    """Whether code clicks, presses or submits (reads and typing alone are not)."""
    return bool(_ACTION.search(code))


def targets_of(code: str, observation: ObservationState | None) -> list[Target]:
    """What the code points at: numbered elements, accessible-locator names, string literals."""
    found: list[Target] = []
    elements = {e["n"]: e for e in (observation["elements"] if observation else [])}
    for number in _EL.findall(code):
        element = elements.get(int(number))
        if element is not None:
            found.append(Target(element["role"], element["name"], f"el({number})"))
    for name in _NAMED.findall(code):
        found.append(Target("", name, "locator"))
    return found


def _literals(code: str) -> list[str]:
    return [next(g for g in groups if g) for groups in _LITERAL.findall(code) if any(groups)]


# Roles whose activation does not commit anything by itself (ticking "I agree" is the exception).
_INERT_ROLES = {
    "checkbox",
    "radio",
    "textbox",
    "searchbox",
    "combobox",
    "listbox",
    "option",
    "slider",
    "spinbutton",
    "switch",
    "tab",
    "password",
    "treeitem",
}


def classify_code(code: str, observation: ObservationState | None) -> Verdict:
    if not is_acting(code):
        return Verdict(False)
    for target in targets_of(code, observation):
        hit = classify_text(target.name)
        if hit and target.role in _INERT_ROLES and hit[0] != "accept":
            continue
        if hit:
            return Verdict(True, hit[0], f'it would activate {target.describe()} ("{hit[1]}")', target)
    for literal in _literals(code):
        text = re.sub(r"^(text=|has-text=)", "", literal.strip())
        hit = classify_text(text) if not text.startswith(("#", ".", "//", "[")) else None
        if hit:
            target = Target("", text, "literal")
            return Verdict(True, hit[0], f'it would activate "{text}" ("{hit[1]}")', target)
    return Verdict(False)


def classify_call(name: str, args: dict[str, Any], observation: ObservationState | None) -> Verdict:
    if name == "browser_run_code":
        return classify_code(str(args.get("code", "")), observation)
    if name == "handle_dialog" and args.get("accept"):
        dialog = (observation["dialog"] if observation else None) or {}
        message = str(dialog.get("message", ""))
        hit = classify_text(message) or classify_text(message.replace("?", ""))
        if hit:
            target = Target("dialog", message, "dialog")
            return Verdict(True, hit[0], f'accepting the dialog "{message}" ("{hit[1]}")', target)
    return Verdict(False)


def describe_target(code: str, observation: ObservationState | None) -> str:
    """A stable description of what an action aims at, for loop detection (no element numbers)."""
    targets = targets_of(code, observation)
    if targets:
        return "; ".join(t.describe() for t in targets)
    literals = [lit for lit in _literals(code) if not lit.startswith(("async", "return"))]
    return "; ".join(literals[:2]) or " ".join(code.split())[:80]
