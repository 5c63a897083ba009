"""Bounded polling: tests wait for conditions, never for a fixed time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(condition: Callable[[], T], *, timeout: float = 15.0, what: str = "condition") -> T:
    """Poll `condition` until it returns a truthy value; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


async def async_wait_until(
    condition: Callable[[], T], *, timeout: float = 15.0, what: str = "condition"
) -> T:
    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.2)


async def eventually(
    condition: Callable[[], Awaitable[T]], *, timeout: float = 15.0, what: str = "condition"
) -> T:
    """Poll an async `condition` (a page read, say) until it returns a truthy value (bounded)."""
    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        value = await condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.2)


async def quiet_for(seconds: float, bad: Callable[[], list[str]]) -> list[str]:
    """What `bad` finds within `seconds`, polled every 0.1 s (it stops at the first find): for what must
    not happen later (a request sent after its call or its window ended), where no event says "never"."""
    for _ in range(int(seconds * 10)):
        found = bad()
        if found:
            return found
        await asyncio.sleep(0.1)
    return bad()
