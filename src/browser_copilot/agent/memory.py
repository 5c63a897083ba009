"""Long-term memory (F63, F67): what the user said about themselves, kept across sessions as their quotes.

The facts live in a LangGraph store — `AsyncSqliteStore` in `DATA_DIR/memory.sqlite` by default,
`AsyncPostgresStore` in the `DATABASE_URL` database (its tables are set up with the checkpointer's, under the
same advisory lock: `storage.ensure_schema`) — in one namespace, `("memories", "user")`: one user per data
dir or database. Writes go through langmem's memory tool (`create_manage_memory_tool`, bound to the store),
so each item is langmem's `{"content": ...}`; every write passes the secret filter first
(`safety.redaction.find_secrets`): passwords, one-time codes, card numbers, CVV, IBANs, keys and tokens
are refused, never stored and never logged.

Each fact records how it is known (`how`): `said` — the user's own words, quoted from one message of theirs
(`quote`, checked by `memory_quotes`); `confirmed` — a note the user approved on a "Remember that …?" card.
Facts written before quotes were checked have neither: they are listed by `/memory` as unverified and never
shown to the model (they may have been planted by a page); the user can `/forget` them or say them again.

A request starts with `recall`: every verified fact when there are few (≤ `MAX_SHOWN`), else the ones
sharing the most words with the request (the store has no embedding index). They go into the state and the
system prompt of that request (`prompt_block`) as dated quotes of the user — information, never
instructions; nothing that decides a confirmation reads them. `/memory` and `/forget N` list and remove them
by number.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib
import json
import re
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, cast

import psycopg
from langgraph.store.base import BaseStore, Item
from langgraph.store.postgres.aio import AsyncPostgresStore
from langgraph.store.sqlite.aio import AsyncSqliteStore
from psycopg.rows import DictRow
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel

from browser_copilot.agent.prompts import load, render
from browser_copilot.agent.state import MemoryNote
from browser_copilot.config import Settings
from browser_copilot.errors import StorageError
from browser_copilot.events import Event, EventSink
from browser_copilot.safety.redaction import WITHHELD, find_secrets

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

MEMORY_DB = "memory.sqlite"
NAMESPACE = ("memories", "user")
MAX_SHOWN = 50
"""Facts shown to the model per request: all of them up to this many, else the best matches."""
MAX_KEPT = 500
"""Facts kept in all; a new one beyond this is refused (the user can /forget old ones)."""
UNVERIFIED = "unverified (kept before quotes were checked; not shown to the agent)"
MAX_FACT = 300
"""Characters of a fact, and of the user's words it quotes."""
STORE_ERRORS = (sqlite3.Error, psycopg.Error, OSError)
"""What a broken store raises: the run goes on without memory, the user is told."""


class MemoryRefused(ValueError):
    """A fact that may not be kept; the message says why (and never repeats a secret)."""


How = Literal["said", "confirmed"]
"""said: quoted from one message of the user's; confirmed: the user approved the note on a card."""


class UserFact(BaseModel):
    """What langmem stores as the item's `content`."""

    text: str
    how: How | None = None
    """None: written before quotes were checked (unverified)."""
    quote: str | None = None
    """The user's words that state it (`how="said"`)."""
    session: str | None = None
    saved: str
    """ISO time (microseconds): the order of the list, and the date `/memory` shows."""


@dataclass(frozen=True, slots=True)
class Memory:
    n: int
    """1-based place in the list, oldest first: what `/memory` shows and `/forget N` takes."""
    key: str
    fact: str
    saved: datetime
    """When it was first saved: its place in the list (a correction keeps the number)."""
    updated: datetime
    """When it was last written: the date `/memory` shows."""
    session: str | None = None
    how: How | None = None
    """None: unverified (written before quotes were checked): never shown to the model."""
    quote: str | None = None

    @property
    def said(self) -> str:
        """What the user said or confirmed, as quoted to the model and in `/memory`."""
        return (self.quote if self.how == "said" and self.quote else self.fact) or ""

    def note(self) -> MemoryNote:
        """As kept in the state (`AgentState.memories`)."""
        note: MemoryNote = {
            "n": self.n,
            "key": self.key,
            "fact": self.fact,
            "saved": self.updated.date().isoformat(),
        }
        if self.how is not None:
            note["how"] = self.how
            note["quote"] = self.said
        return note


def refusal(fact: str) -> str | None:
    """Why `fact` may not be remembered, or None. Names the kind of secret, never its value."""
    # A secret as written, or as the app withheld it (`[card number withheld]`: from the user's message,
    # or from the model's call before it was kept, see `memory_tools.withhold_in_calls`).
    found = [s.kind for s in find_secrets(fact)] + re.findall(rf"\[([^\[\]]+) {re.escape(WITHHELD)}", fact)
    if not found:
        return None
    kinds = ", ".join(dict.fromkeys(found))
    return (
        f"it holds a secret ({kinds}). Passwords, one-time codes, card numbers, CVV, IBANs, keys and "
        "tokens are never remembered"
    )


def fact_problem(text: str) -> str | None:
    """Why `text` (a fact, or the words it quotes) cannot be kept as it is, or None."""
    if not text.strip():
        return "the fact is empty"
    if len(" ".join(text.split())) > MAX_FACT:
        return f"it is over {MAX_FACT} characters: say it in one short sentence"
    return refusal(text)


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w{3,}", text.lower()) if not w.isdigit()}


class MemoryBook:
    """The user's facts in a LangGraph store; writes through langmem's memory tool."""

    def __init__(self, store: BaseStore, *, namespace: tuple[str, ...] = NAMESPACE) -> None:
        self.store = store
        self.namespace = namespace
        self._tool: BaseTool | None = None

    async def _manage(self, arguments: dict[str, Any]) -> Any:
        """langmem's memory tool on the store, made at the first write (langmem takes seconds to import:
        on a thread, and only in a session that writes)."""
        if self._tool is None:
            langmem = await asyncio.to_thread(importlib.import_module, "langmem")
            self._tool = langmem.create_manage_memory_tool(self.namespace, store=self.store, schema=UserFact)
        return await self._tool.ainvoke(arguments)

    async def all(self) -> list[Memory]:
        """Every fact, oldest first, numbered."""
        items = await self.store.asearch(self.namespace, limit=MAX_KEPT + 50)
        facts = [fact for fact in map(_from_item, items) if fact is not None]
        facts.sort(key=lambda m: (m.saved, m.key))
        return [dataclasses.replace(m, n=n) for n, m in enumerate(facts, start=1)]

    async def recall(self, request: str, *, limit: int = MAX_SHOWN) -> tuple[list[Memory], int]:
        """The verified facts to show for `request`, in list order, and how many there are in all."""
        facts = [m for m in await self.all() if m.how is not None]
        if len(facts) <= limit:
            return facts, len(facts)
        wanted = _words(request)
        ranked = sorted(
            facts, key=lambda m: (len(wanted & _words(f"{m.fact} {m.said}")), m.saved), reverse=True
        )
        return sorted(ranked[:limit], key=lambda m: m.n), len(facts)

    async def save(
        self,
        fact: str,
        *,
        how: How,
        quote: str | None = None,
        session: str | None = None,
        replaces: Memory | None = None,
    ) -> Memory:
        """Keep `fact`, known `how` (with the user's `quote` when they said it), or put it in the place of
        `replaces`; raises `MemoryRefused`. The caller has checked the quote (`memory_quotes.check`) or the
        user's /yes."""
        text = " ".join(fact.split())
        quoted = " ".join((quote or "").split()) or None
        why = fact_problem(text) or (fact_problem(quoted) if quoted is not None else None)
        if why is not None:
            raise MemoryRefused(why)
        if how == "said" and quoted is None:
            raise MemoryRefused("a fact the user said needs their words")
        known = await self.all()
        same = next((m for m in known if m.fact.lower() == text.lower()), None)
        if same is not None and replaces is None:
            if same.how is not None:
                return same
            replaces = same  # an unverified fact the user now states: it becomes theirs
        if replaces is None and len(known) >= MAX_KEPT:
            raise MemoryRefused(f"{MAX_KEPT} facts are kept already; the user can /forget old ones")
        saved = replaces.saved if replaces is not None else datetime.now(UTC)
        quoted = quoted if how == "said" else None
        fields = UserFact(text=text, how=how, quote=quoted, session=session, saved=saved.isoformat())
        content = fields.model_dump()
        if replaces is not None:
            await self._manage({"content": content, "action": "update", "id": replaces.key})
            key = replaces.key
        else:
            answer = str(await self._manage({"content": content, "action": "create"}))
            key = answer.rsplit(" ", 1)[-1]
        return next(m for m in await self.all() if m.key == key)

    async def forget(self, memory: Memory) -> None:
        await self._manage({"action": "delete", "id": memory.key})


def _from_item(item: Item) -> Memory | None:
    content = item.value.get("content")
    if isinstance(content, str):  # written by another langmem tool with the default schema
        content = {"text": content}
    if not isinstance(content, dict) or not isinstance(content.get("text"), str):
        return None
    saved = _as_utc(item.created_at)
    with contextlib.suppress(TypeError, ValueError):
        saved = _as_utc(datetime.fromisoformat(str(content["saved"])))
    session = content.get("session")
    updated = _as_utc(item.updated_at)
    how = content.get("how") if content.get("how") in ("said", "confirmed") else None
    quote = content.get("quote") if isinstance(content.get("quote"), str) else None
    if how == "said" and not quote:
        how = None  # a statement without the user's words is not verified
    return Memory(
        0,
        item.key,
        content["text"],
        saved,
        updated,
        session if isinstance(session, str) else None,
        cast("How | None", how),
        quote,
    )


def _as_utc(stamp: datetime) -> datetime:
    return stamp.replace(tzinfo=UTC) if stamp.tzinfo is None else stamp.astimezone(UTC)


# ----- what the model and the user see ---------------------------------------------------


def quoted(note: MemoryNote) -> str | None:
    """One remembered fact as the model reads it: a dated quote of the user (None: unverified)."""
    how, words = note.get("how"), note.get("quote")
    if how is None or not words:
        return None
    verb = "said" if how == "said" else "confirmed this note"
    return f"{note['n']}. On {note['saved']} the user {verb}: {json.dumps(words, ensure_ascii=False)}"


def prompt_block(memories: list[MemoryNote], total: int | None = None) -> str:
    """The system prompt's part on memory: what the user said before (dated quotes), and how to keep more."""
    shown = [line for line in map(quoted, memories) if line is not None]
    lines = "\n".join(shown) or "(nothing yet)"
    total = len(shown) if total is None else total
    if total > len(shown):
        lines += f"\n({len(shown)} of {total} shown: the ones closest to this request.)"
    return render(load("memories"), memories=lines)


def listing(memories: list[Memory]) -> str:
    """`/memory`: the facts, numbered, each with the user's words and the date they were said."""
    if not memories:
        return (
            'Nothing remembered yet. Tell the agent a lasting preference ("my name on bookings is …", '
            '"never use the saved card") and it keeps your words for later sessions.'
        )
    rows = []
    for m in memories:
        day = m.updated.date().isoformat()
        words = json.dumps(m.said, ensure_ascii=False)
        if m.how == "said":
            rows.append(f"{m.n}. {day}, you said: {words}")
        elif m.how == "confirmed":
            rows.append(f"{m.n}. {day}, you confirmed: {words}")
        else:
            rows.append(f"{m.n}. {day}, {UNVERIFIED}: {words}")
    return "\n".join([*rows, "/forget N removes one, /forget all removes every one."])


async def forget_command(book: MemoryBook, argument: str) -> str:
    """`/forget N` or `/forget all`: what was removed, or how to say it."""
    argument = argument.strip().lower()
    facts = await book.all()
    if argument == "all":
        for memory in facts:
            await book.forget(memory)
        return f"Forgot all {len(facts)} remembered facts." if facts else "Nothing was remembered."
    if not argument.isdigit():
        return "Say which: /forget N (the number /memory shows) or /forget all."
    found = next((m for m in facts if m.n == int(argument)), None)
    if found is None:
        span = f"1-{len(facts)}" if facts else "none are kept"
        return f"There is no fact {argument} ({span}); /memory lists them."
    await book.forget(found)
    return f"Forgot {found.n}: {json.dumps(found.said, ensure_ascii=False)}"


# ----- at the start of a request --------------------------------------------------------------


async def request_memories(book: MemoryBook | None, text: str, events: EventSink) -> dict[str, Any]:
    """The state update that shows a new request what is remembered (searched with its text)."""
    if book is None:
        return {"memories": None, "memories_total": 0}
    try:
        found, total = await book.recall(text)
    except STORE_ERRORS as exc:
        events(Event("error", {"kind": "memory", "message": f"long-term memory unavailable: {exc}"}))
        return {"memories": None, "memories_total": 0}
    return {"memories": [m.note() for m in found], "memories_total": total}


# ----- opening the store ----------------------------------------------------------------------


@contextlib.asynccontextmanager
async def open_memory(settings: Settings) -> AsyncIterator[MemoryBook | None]:
    """The memory store for `settings`: None with `MEMORY=off`; SQLite in the data dir; PostgreSQL when
    `DATABASE_URL` is set (the same database as the checkpoints)."""
    if not settings.memory:
        yield None
        return
    url = settings.database
    if url is None:
        path = settings.data_dir / MEMORY_DB
        path.parent.mkdir(parents=True, exist_ok=True)
        async with AsyncSqliteStore.from_conn_string(str(path)) as store:
            await _setup_sqlite(store, path)
            yield MemoryBook(store)
        return
    from browser_copilot.agent.storage import open_pool  # storage imports the runner, which needs us

    # The store's tables and migrations are set up with the checkpointer's (`ensure_schema`).
    async with open_pool(url, 2) as pool:
        yield MemoryBook(
            AsyncPostgresStore(cast("AsyncConnectionPool[psycopg.AsyncConnection[DictRow]]", pool))
        )


async def _setup_sqlite(store: AsyncSqliteStore, path: Any) -> None:
    """The store's migrations; two processes starting on a new file at once may collide: try again."""
    for attempt in range(3):
        try:
            await store.setup()
            return
        except sqlite3.Error as exc:
            if attempt == 2:
                raise StorageError(f"cannot use the memory file {path}: {exc}") from exc
            await asyncio.sleep(0.2 * (attempt + 1))
