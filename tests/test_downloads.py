"""What a download brought is readable (issue 26): the page downloads a CSV or a PDF in the agent's tab,
the observation says where the browser saved it, and `read_download` gives the model its text (as page
content: untrusted, secrets masked). Only files the browser itself reported saving for a download of
the agent's tabs are read; the tool takes no path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from browser_copilot.browser.downloads import DownloadUnreadable, read_text
from browser_copilot.browser.session import BrowserSession
from browser_copilot.sandbox.download_events import Download
from tests.support.agent import make_runner
from tests.support.scripted_model import call, code, say
from tests.support.sites import Request, Site


def pdf(text: str) -> bytes:
    """A one-page PDF with `text` in Helvetica (what a site's invoice generator writes, at its plainest)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    table = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, table)
    return bytes(out)


def files(request: Request, port: int) -> str:
    return (
        "<!doctype html><title>Invoices</title><h1>Invoices</h1>"
        "<a id=csv href='/report.csv' download>Report (CSV)</a>"
        " <a id=pdf href='/invoice.pdf' download>Invoice</a>"
    )


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    with Site(files) as shop:
        shop.raw["/report.csv"] = ("text/csv", b"month,total\njan,10\nfeb,12\n")
        shop.raw["/invoice.pdf"] = ("application/pdf", pdf("Invoice 2026-11 total 42.00 EUR"))
        yield shop


@pytest.mark.parametrize(
    ("link", "expect"), [("#csv", "feb,12"), ("#pdf", "Invoice 2026-11 total 42.00 EUR")]
)
async def test_the_model_reads_what_a_download_brought(
    browser_session: BrowserSession, site: Site, link: str, expect: str
) -> None:
    runner, _ = make_runner(
        browser_session,
        code(f"async (page) => {{ await page.goto('{site.url('/')}') }}"),
        code(f"async (page) => {{ await page.locator('{link}').click() }}"),
        call("read_download"),
        say("Read it."),
    )
    outcome = await runner.send("Download the file and tell me what it says")
    said = [str(m.content) for m in outcome.values["messages"] if m.type == "tool"]
    assert any(expect in t and "<page_content" in t for t in said), said


def test_a_file_that_is_no_text_or_not_finished_is_not_read(tmp_path: Path) -> None:
    binary = tmp_path / "photo.jpg"
    binary.write_bytes(b"\xff\xd8\xff\x00\x00JFIF")
    with pytest.raises(DownloadUnreadable, match="not a text file"):
        read_text(Download("g1", "photo.jpg", "", "completed", str(binary)))
    with pytest.raises(DownloadUnreadable, match="has not finished"):
        read_text(Download("g2", "big.csv", "", "inProgress", None))
    text = tmp_path / "long.txt"
    text.write_text("x" * 30_000)
    assert read_text(Download("g3", "long.txt", "", "completed", str(text)), limit=100).endswith(
        "(29900 more characters)"
    )
