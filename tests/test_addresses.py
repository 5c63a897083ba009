"""The Python reading of a committing address (`safety/addresses.py`, used by the network policy for the
model's own requests) agrees with the page's classifier (`policy.js`) on every address here, the words
being data of the same table."""

from __future__ import annotations

import json

import pytest

from browser_copilot.safety.addresses import request_commits, squash, url_commits
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
    "/api/newsletter/abmelden?id=7",
    "/api/compte/supprimer",
    "/api/%E4%BC%9A%E5%93%A1/%E9%80%80%E4%BC%9A",
    "/api/orders/7/cancel%252Ejson",
    "/es/ayuda/como-cancelar-un-pedido",
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


MULTIPART = (
    '--b\r\nContent-Disposition: form-data; name="operations"\r\n\r\n'
    '{"query": "mutation ($f: Upload!) { deleteAccount(f: $f) }"}\r\n--b--\r\n'
)


@pytest.mark.parametrize(
    ("method", "body", "content_type", "category"),
    [
        ("POST", "mutation { deleteAccount }", "application/graphql", "delete"),
        (
            "POST",
            '{"query": "# x\\nfragment F on O { id }\\nmutation { t { ok } a: cancelOrder(id: 1) { ...F } }"}',  # noqa: E501
            "application/json",
            "cancel",
        ),
        (
            "POST",
            '[{"query": "query { me }"}, {"query": "mutation { placeOrder { id } }"}]',
            "application/json",
            "order",
        ),
        ("POST", MULTIPART, "multipart/form-data; boundary=b", "delete"),
        (
            "POST",
            '<?xml version="1.0"?><methodCall><methodName>wp.deletePost</methodName></methodCall>',
            "text/xml",
            "delete",
        ),
        (
            "POST",
            "<s:Envelope><s:Body><CancelOrder><id>7</id></CancelOrder></s:Body></s:Envelope>",
            "text/xml",
            "cancel",
        ),
        (
            "POST",
            "<s:Envelope><s:Body><Get/></s:Body></s:Envelope>",
            'text/xml; action="urn:CancelOrder"',
            "cancel",
        ),
        ("POST", "order[action]=cancel&order[id]=7", "application/x-www-form-urlencoded", "cancel"),
        ("POST", '{"order": {"action": "cancel"}}', "application/json", "cancel"),
        ("PATCH", "order[status]=cancelled", "application/x-www-form-urlencoded", "cancel"),
        ("PATCH", '{"post": {"state": "published"}}', "application/json", "publish"),
        ("POST", '{"method": "orders.cancel", "id": 1}', "text/plain", "cancel"),
        ("POST", '{"query": "query { orders { id } }"}', "application/json", None),
        ("POST", "<s:Envelope><s:Body><GetOrders/></s:Body></s:Envelope>", "text/xml", None),
        ("PATCH", "order[status]=shipped&note=cancelled+later", "application/x-www-form-urlencoded", None),
    ],
)
def test_a_body_names_its_action_however_it_is_written(
    method: str, body: str, content_type: str, category: str | None
) -> None:
    found = request_commits(method, "https://shop.example/api/x", body, content_type)
    assert (found[0] if found else None) == category, found
