"""The approved actions about to run, recorded before they run (`agent.context.ActionLedger`).

A worker killed while it performs an action the user allowed leaves the run's last checkpoint before
that step: the worker that takes the job again replays the step. The row written here, committed before
the action starts, is how it knows the action may already have happened: it does not run it again and
tells the model (`agent.nodes.tools.MAYBE_RAN`), which checks the page or asks the user."""

from __future__ import annotations

import psycopg

from browser_copilot.errors import StorageError
from browser_copilot.jobs.queue import APPROVED_TABLE

_CLAIM = (
    f"INSERT INTO {APPROVED_TABLE} (session_id, token) VALUES (%s, %s) "
    "ON CONFLICT (session_id, token) DO NOTHING RETURNING token"
)


class PostgresLedger:
    """The ledger of one session's approved actions, keyed by each card's one-time token."""

    def __init__(self, url: str, session: str) -> None:
        self.url = url
        self.session = session

    async def claim(self, token: str) -> bool:
        try:
            async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
                row = await (await conn.execute(_CLAIM, (self.session, token))).fetchone()
        except psycopg.Error as exc:
            raise StorageError(f"cannot record the approved action in the job queue: {exc}") from exc
        return row is not None
