"""The Python reading of a committing address (`safety/addresses.py`, used by the network policy for the
model's own requests) agrees with the page's classifier (`policy.js`) on every address here, the words
being data of the same table."""

from __future__ import annotations

import json

import pytest

from browser_copilot.safety.addresses import squash, url_commits
from browser_copilot.safety.classifier import classify_lines, lexicon

ADDRESSES = [
    "https://shop.example/orders/7/cancel",
    "https://shop.example/checkout/complete",
    "https://shop.example/checkout/complete/",
    "/transfer?confirm=1",
    "/transfer?confirm=yes&amount=5",
    "/transfer?confirm=0",
    "/transfer?confirm",
    "/transfer?Confirmed=TRUE",
    "/list?action=delete&id=3",
    "/list?do=unsubscribe",
    "/list?action=view",
    "/newsletter/unsubscribe",
    "/newsletter/un-subscribe",
    "/NEWSLETTER/UNSUBSCRIBE",
    "/account/close-account",
    "/orders/8f14e45fceea167a5a36dedd4bea2543/cancel",
    "/orders/cancel/12345",
    "/orders/cancel/ab12345",
    "/posts/123",
    "/posts/delete-me-not",
    "/blog/how-to-delete",
    "/delete",
    "/d%65lete",
    "/%E2%82%AC/pay",
    "/%ZZ/pay",
    "/%C3%28/pay",
    "/ｄｅｌｅｔｅ",
    "/pay?x=1#confirm",
    "#/orders/7/cancel",
    "javascript:delete()",
    "mailto:someone@example.com?subject=confirm",
    "ftp://example.com/delete",
    "HTTPS://EXAMPLE.COM/Pay",
    "/search?q=delete",
    "/search?q=confirm&confirm=on",
    "/a+b?action=place+order",
    "/list?action=place%20order",
    "",
    "/",
    "?confirm=1",
]


def test_it_decides_as_the_pages_classifier_does() -> None:
    lines = [
        json.dumps({"tag": "a", "role": "link", "name": "", "href": address, "url": "https://shop.example/"})
        for address in ADDRESSES
    ]
    verdicts = [json.loads(line) for line in classify_lines(lines)]
    assert len(verdicts) == len(ADDRESSES)
    for address, verdict in zip(ADDRESSES, verdicts, strict=True):
        mine = url_commits(address)
        by_url = "its address commits" in verdict["reason"]
        assert (mine is not None) == by_url, (address, mine, verdict)
        if mine is not None:
            assert verdict["category"] == mine[0], (address, mine, verdict)


@pytest.mark.parametrize(
    ("address", "category"),
    [
        ("https://shop.example/orders/7/cancel", "cancel"),
        ("/checkout/complete", "order"),
        ("/transfer?confirm=1", "submit"),
        ("/list?action=delete&id=3", "delete"),
        ("/d%65lete", "delete"),
        ("/posts/123", None),
        ("/search?q=delete", None),
        ("mailto:x@example.com?confirm=1", None),
    ],
)
def test_committing_addresses(address: str, category: str | None) -> None:
    found = url_commits(address)
    assert (found[0] if found else None) == category


def test_every_word_of_the_table_is_found_as_a_path() -> None:
    table = lexicon()["url_commits"]
    assert table
    for word, category in table.items():
        assert squash(word) == word
        assert url_commits(f"https://x.example/items/9/{word}") == (category, word)


def test_an_approved_category_covers_its_family_and_nothing_else() -> None:
    """What a /yes to a card of one category lets through in its window (lexicon.json `together`)."""
    from browser_copilot.safety.addresses import together

    assert together("order", "order") and together("order", "pay") and together("pay", "book")
    assert not together("order", "delete") and not together("send", "publish") and not together("pay", "send")
    assert together(None, "delete")  # a card that named no category covers what it sets off, as before
    assert together("unknown", "delete")  # nor does one the tables do not know narrow it
