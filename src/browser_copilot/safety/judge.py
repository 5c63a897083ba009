"""The isolated judge (F40, third layer): a separate, short model call for ambiguous targets.

The rules (policy.js) say `judge: true` when a control commits something by what it *is* (a non-GET
form, a review step, payment fields, an amount, a warning dialog, danger styling) but its words are
generic ("Continue", "OK") or unknown. Then the configured model is asked, in a call of its own that
sees only DOM facts — the element, its form's field names and which are filled (never their values),
the section/dialog heading, the page title and URL. The agent's conversation never reaches it; page
text is marked untrusted. It answers `{destructive, category, reason}`. A timeout, an error or an
unreadable answer fails closed: the user is asked. Verdicts are cached per origin and element
fingerprint for the life of the judge (one app session).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

import httpx
import openai
from langchain_core.exceptions import LangChainException
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from browser_copilot.safety.classifier import lexicon

JUDGE_TIMEOUT = 20.0
_JSON = re.compile(r"\{.*\}", re.DOTALL)


@cache
def judge_prompt() -> str:
    return resources.files("browser_copilot.safety").joinpath("judge.md").read_text("utf-8").strip()


def categories() -> list[str]:
    return [str(c) for c in lexicon()["categories"]]


_ITEM = re.compile(r"[^/]*\d[^/]*|[^/]{25,}")
"""A path segment that names one item (`/product/1234`, `/p/blue-ceramic-mug-with-a-long-name`)."""


def _kind_of_page(path: str) -> str:
    """The page's kind from its path: `/product/1234` and `/product/98` are one kind."""
    return "/".join(":item" if _ITEM.fullmatch(seg) else seg for seg in path.split("/"))


def fingerprint(facts: dict[str, Any]) -> str:
    """What a verdict holds for: the site and the kind of control (its role, accessible name, form and
    where the form goes, on a page of the same kind), not the item it is next to, its position or the
    values typed. The same "Add to cart" on every product page is judged once."""
    parts = urlsplit(str(facts.get("url") or ""))
    origin = f"{parts.scheme}://{parts.netloc}"
    ident = [facts.get(k) for k in ("tag", "role", "type", "name", "text", "form_method", "bulk", "dialog")]
    ident.append(_kind_of_page(parts.path))
    ident.append(_kind_of_page(urlsplit(str(facts.get("form_action") or "")).path))
    ident.append([f.get("label") for f in facts.get("fields") or [] if isinstance(f, dict)])
    digest = hashlib.sha256(json.dumps(ident, ensure_ascii=False, default=str).encode()).hexdigest()
    return f"{origin}#{digest[:16]}"


def _page_text(text: object, limit: int = 300) -> str:
    cleaned = str(text or "").replace("</page_text>", "").replace("<page_text>", "")[:limit]
    return f"<page_text>{cleaned}</page_text>"


def judge_request(facts: dict[str, Any]) -> str:
    """What the judge sees: DOM facts only, page-written text inside <page_text> delimiters."""
    fields = [
        {
            "label": _page_text(f.get("label"), 60),
            "type": f.get("type"),
            "filled": bool(f.get("filled")),
        }
        for f in facts.get("fields") or []
        if isinstance(f, dict)
    ]
    shown = {
        "control": {
            "tag": facts.get("tag"),
            "role": facts.get("role"),
            "type": facts.get("type"),
            "name": _page_text(facts.get("name") or facts.get("value"), 120),
            "link_target": facts.get("href"),
            "styled_as_dangerous": bool(facts.get("danger")),
        },
        "form": {
            "method": facts.get("form_method"),
            "action": facts.get("form_action"),
            "editable_fields": fields,
            "takes_payment_details": bool(facts.get("payment")),
        }
        if facts.get("form_method") or fields
        else None,
        "in_dialog": bool(facts.get("dialog")),
        "section_or_dialog_heading": _page_text(facts.get("heading"), 120),
        "text_around": _page_text(facts.get("context")),
        "amount_shown_in_its_form": _page_text(facts.get("amount"), 40) if facts.get("amount") else None,
        "bulk_action_chosen": _page_text(facts.get("bulk"), 60) if facts.get("bulk") else None,
        "page_title": _page_text(facts.get("title"), 120),
        "page_url": facts.get("url"),
    }
    return json.dumps(shown, ensure_ascii=False, indent=1)


def parse_verdict(text: str) -> dict[str, Any]:
    """The judge's JSON answer, validated; `ValueError` when it is not one."""
    found = _JSON.search(text)
    if not found:
        raise ValueError("no JSON object in the answer")
    data = json.loads(found.group(0))
    if not isinstance(data, dict) or not isinstance(data.get("destructive"), bool):
        raise ValueError("`destructive` is not a boolean")
    category = str(data.get("category") or "").strip().lower()
    if data["destructive"] and category not in categories():
        category = "unknown"
    if not data["destructive"]:
        category = "safe"
    return {
        "destructive": data["destructive"],
        "category": category,
        "reason": str(data.get("reason") or "")[:200],
    }


@dataclass
class Judge:
    """The judge of one app session; `llm` None means no model: every question fails closed."""

    llm: BaseChatModel | None
    timeout: float = JUDGE_TIMEOUT
    cache: dict[str, dict[str, Any]] = field(default_factory=dict)
    calls: int = 0
    mask: Callable[[str], str] = str
    """What the request goes through before the model reads it (the session's seen secrets)."""

    async def __call__(self, facts: dict[str, Any], rules: dict[str, Any] | None = None) -> dict[str, Any]:
        """A verdict `{destructive, category, reason, by}`; `by` is `judge`, `cache` or `fail-closed`."""
        key = fingerprint(facts)
        if key in self.cache:
            return {**self.cache[key], "by": "cache"}
        fallback = rules or {}
        if self.llm is None:
            return self._closed(fallback, "no model is configured for the judge")
        messages = [SystemMessage(judge_prompt()), HumanMessage(self.mask(judge_request(facts)))]
        self.calls += 1
        try:
            async with asyncio.timeout(self.timeout):
                answer = await self.llm.ainvoke(messages)
            verdict = parse_verdict(str(answer.content))
        except TimeoutError:
            return self._closed(fallback, f"the judge did not answer within {self.timeout:.0f} s")
        except (ValueError, LangChainException, openai.OpenAIError, httpx.HTTPError) as exc:
            return self._closed(fallback, f"the judge's answer could not be used ({exc})")
        self.cache[key] = verdict
        return {**verdict, "by": "judge"}

    @staticmethod
    def _closed(rules: dict[str, Any], why: str) -> dict[str, Any]:
        category = rules.get("category") if rules.get("destructive") else "unknown"
        return {"destructive": True, "category": category or "unknown", "reason": why, "by": "fail-closed"}

    async def many(self, items: Iterable[tuple[dict[str, Any], dict[str, Any]]]) -> list[dict[str, Any]]:
        """Judge several targets, four at a time."""
        gate = asyncio.Semaphore(4)

        async def one(facts: dict[str, Any], rules: dict[str, Any]) -> dict[str, Any]:
            async with gate:
                return await self(facts, rules)

        return list(await asyncio.gather(*(one(f, r) for f, r in items)))
