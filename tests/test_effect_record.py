"""The effect gate's record of what left (issue 27): a writing or committing request an input's window
let through is recorded, with how the input was allowed; reads, and requests the gate held, are not."""

from __future__ import annotations

import json

from browser_copilot.sandbox.effects import EffectGate


def gate_with(allowed: str, token: str = "") -> EffectGate:
    gate = EffectGate()
    if token:
        gate.issue(token, "approved")
    payload = {"id": "w1", "kind": "press", "allowed": allowed, "token": token, "name": "Place order"}
    assert gate.opened("tab-1", json.dumps(payload), None) is not None
    return gate


def test_an_approved_order_is_recorded_as_sent_and_drained_once() -> None:
    gate = gate_with("allow", token="t-1")
    assert gate.decide("tab-1", method="POST", url="https://shop.test/orders", body="item=1") is None
    (sent,) = gate.sent()
    assert str(sent) == "POST shop.test/orders" and sent.allowed == "approved" and sent.category == "order"
    assert gate.sent() == []


def test_a_plain_write_in_a_structural_window_is_recorded_without_a_category() -> None:
    gate = gate_with("structure")
    assert gate.decide("tab-1", method="PUT", url="https://shop.test/cart/1", body="qty=2") is None
    (sent,) = gate.sent()
    assert sent.category is None and sent.allowed == "structure"


def test_reads_and_held_requests_are_not_recorded_as_sent() -> None:
    gate = gate_with("structure")
    assert gate.decide("tab-1", method="GET", url="https://shop.test/search?q=mug") is None
    held = gate.decide("tab-1", method="POST", url="https://shop.test/checkout/place-order", body="x=1")
    assert held is not None and held.category == "order"
    assert gate.sent() == []


def test_requests_outside_any_window_are_the_pages_own_and_not_recorded() -> None:
    gate = EffectGate()
    assert gate.decide("tab-1", method="POST", url="https://shop.test/orders", body="item=1") is None
    assert gate.sent() == []
