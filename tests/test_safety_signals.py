"""What a control DOES, read from the DOM in a real page (F40 layer 1), and the truthful card (F42).

Each page of `tests/pages/signals-*.html` carries one language-independent signal; the names on its
controls are generic ("Continue", "Apply") or words no table knows ("Zorbulate"), so only the
structure can tell. The guard holds the activation, never the reading."""

from __future__ import annotations

from browser_copilot.browser.guarded import GuardReport, guard_report, guarded_code
from browser_copilot.browser.session import BrowserSession
from tests.support.agent import fresh, make_runner, value
from tests.support.pages import PageServer
from tests.support.scripted_model import call, code, say


async def held(session: BrowserSession, pages: PageServer, page: str, code: str) -> GuardReport:
    frames = await fresh(session, pages, page)
    result = await session.run_code(guarded_code(code, frames))
    report = guard_report(result)
    assert report is not None, result
    return report


async def test_a_generic_continue_on_a_review_step_is_held_for_the_judge(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    report = await held(
        browser_session, pages, "signals-review.html", "async (page) => { await page.click('button') }"
    )
    event = report.held[0]
    assert event["facts"]["review"] is True
    assert event["verdict"]["judge"] is True
    assert event["verdict"]["destructive"] is True  # rules alone fail closed: a review step commits
    assert await value(browser_session, "window.__registered ?? 0") == 0


async def test_continue_on_a_first_step_with_fields_to_fill_is_not_called_destructive(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    frames = await fresh(browser_session, pages, "signals-step.html")
    result = await browser_session.run_code(
        guarded_code(
            "async (page) => { await page.fill('[name=passenger_1_full_name]', 'Ana Lima');"
            " await page.fill('[name=email]', 'ana@example.test'); await page.click('button') }",
            frames,
        )
    )
    report = guard_report(result)
    # A POST form: the judge is asked, but the rules do not call it destructive, and the name field
    # ("Passenger 1: full name") is no password: typing into it was not refused.
    assert report is not None
    assert report.secret_blocked == 0
    event = report.held[0]
    assert event["verdict"]["destructive"] is False
    assert event["verdict"]["judge"] is True
    assert event["facts"]["review"] is False
    assert ["Passenger 1: full name", "Ana Lima"] in event["values"]


async def test_payment_fields_make_an_unknown_word_a_payment(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    report = await held(
        browser_session, pages, "signals-payment.html", "async (page) => { await page.click('button') }"
    )
    event = report.held[0]
    assert event["facts"]["payment"] is True
    assert event["verdict"]["destructive"] is True
    assert event["verdict"]["category"] == "pay"
    assert await value(browser_session, "window.__charged ?? 0") == 0


async def test_an_affirmative_in_a_warning_alertdialog_is_a_delete(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    report = await held(
        browser_session,
        pages,
        "signals-dialog.html",
        "async (page) => { await page.click('#open'); await page.click('#yes') }",
    )
    event = report.held[0]
    assert event["facts"]["dialog"] is True
    assert event["facts"]["name"] == "Yes, empty"
    assert event["verdict"]["destructive"] is True
    assert event["verdict"]["category"] == "delete"
    assert await value(browser_session, "window.__emptied ?? 0") == 0


async def test_declining_the_warning_dialog_is_not_held(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    frames = await fresh(browser_session, pages, "signals-dialog.html")
    result = await browser_session.run_code(
        guarded_code(
            "async (page) => { await page.click('#open'); await page.getByText('No, keep them').click();"
            " return await page.isHidden('#ask') }",
            frames,
        )
    )
    assert guard_report(result) is None
    assert result.value is True


async def test_danger_styling_makes_an_unknown_word_destructive(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    report = await held(
        browser_session, pages, "signals-dialog.html", "async (page) => { await page.click('#wipe') }"
    )
    event = report.held[0]
    assert event["facts"]["danger"] is True
    assert event["verdict"]["destructive"] is True
    assert await value(browser_session, "window.__wiped ?? 0") == 0


async def test_a_bulk_suspend_shows_suspend_and_the_ticked_count_not_delete(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    report = await held(
        browser_session,
        pages,
        "signals-bulk.html",
        "async (page) => { for (const v of ['1', '2', '4', '5', '6'])"
        ' await page.check(`input[value="${v}"]`);'
        " await page.selectOption('select', 'suspend'); await page.click('text=Apply') }",
    )
    event = report.held[0]
    assert event["facts"]["bulk"] == "Suspend"
    assert event["verdict"]["category"] == "revoke"
    assert event["count"] == 5
    assert "delete" not in event["facts"]["context"].lower()  # the option list is not the context
    assert await value(browser_session, "window.__applied ?? 0") == 0


async def test_reading_a_selects_options_is_never_held(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    frames = await fresh(browser_session, pages, "signals-bulk.html")
    code = "async (page) => await page.locator('select option').allTextContents()"
    result = await browser_session.run_code(guarded_code(code, frames))
    assert guard_report(result) is None
    assert result.value == ["Bulk actions", "Export", "Suspend", "Delete"]


async def test_the_transfer_card_shows_the_typed_amount_and_the_chosen_payee(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    report = await held(
        browser_session,
        pages,
        "signals-transfer.html",
        "async (page) => { await page.selectOption('[name=payee]', 'p1');"
        " await page.fill('[name=amount]', '1500');"
        " await page.fill('[name=date]', '2026-12-01'); await page.click('button') }",
    )
    event = report.held[0]
    assert event["verdict"]["category"] == "transfer"
    assert event["amount"] == "$ 1500"  # not the balance ($4,812.37), not the notice ($1,000)
    values = dict(event["values"])
    assert values["Saved payee"] == "Jordan Lee"
    assert values["Amount $"] == "1500"
    assert values["Send on"] == "2026-12-01"
    assert await value(browser_session, "window.__transferred ?? 0") == 0


async def test_typing_a_date_into_a_field_labelled_send_on_is_not_an_action(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    frames = await fresh(browser_session, pages, "signals-transfer.html")
    result = await browser_session.run_code(
        guarded_code(
            "async (page) => { await page.fill('[name=date]', '2026-12-01'); return 'typed' }", frames
        )
    )
    assert guard_report(result) is None
    assert result.value == "typed"


async def test_a_lone_short_numeric_code_field_is_a_secret(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    frames = await fresh(browser_session, pages, "signals-otp.html")
    result = await browser_session.run_code(
        guarded_code("async (page) => { await page.locator('input').pressSequentially('123456') }", frames)
    )
    report = guard_report(result)
    assert report is not None
    assert report.secret_blocked > 0
    assert await value(browser_session, "document.querySelector('input').value") == ""


async def test_a_mail_delete_card_has_no_amount_from_a_subject_line(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    report = await held(
        browser_session, pages, "signals-mail.html", "async (page) => { await page.click('button') }"
    )
    assert report.held[0]["verdict"]["category"] == "delete"
    assert report.held[0]["amount"] is None


async def test_the_code_stops_at_a_held_click_and_its_later_steps_do_not_run(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    frames = await fresh(browser_session, pages, "mail.html")
    result = await browser_session.run_code(
        guarded_code(
            "async (page) => { await page.fill('[name=subject]', 'Hi');"
            " await page.click('button[type=submit]');"
            " await page.fill('[name=subject]', 'changed after the hold'); return 'ran to the end' }",
            frames,
        )
    )
    report = guard_report(result)
    assert report is not None
    assert report.held[0]["verdict"]["category"] == "send"
    assert report.result is None
    assert report.error is not None
    assert "held for the user's confirmation" in report.error
    assert await value(browser_session, "document.querySelector('[name=subject]').value") == "Hi"


async def test_a_generic_submit_of_a_post_form_is_held(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    report = await held(
        browser_session,
        pages,
        "signals-post.html",
        "async (page) => { await page.fill('textarea', 'Great service'); await page.click('button') }",
    )
    event = report.held[0]
    assert event["facts"]["form_method"] == "post"
    assert event["verdict"]["destructive"] is True
    assert event["verdict"]["category"] == "send"  # it sends the message typed in its form
    assert ["Your message", "Great service"] in event["values"]
    assert await value(browser_session, "window.__posted ?? 0") == 0


async def test_accepting_a_native_confirm_that_warns_needs_the_user(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    runner, _ = make_runner(
        browser_session,
        code(f"async (page) => {{ await page.goto('{pages.url('signals-dialog.html')}') }}"),
        code("async (page) => { await page.click('#purge') }"),
        call("handle_dialog", accept=True),
        say("Removed."),
    )
    waiting = await runner.send("Tidy up my files")
    assert waiting.stop_reason == "waiting_confirmation"
    assert waiting.interrupt is not None
    card = waiting.interrupt["card"]
    assert card["category"] == "delete"
    assert "Remove all 3 files permanently?" in card["what"]
    assert card["site"].startswith("127.0.0.1:")  # the tab's site, although the dialog blocks the page
    assert card["by"] == "fail-closed"  # no judge model here: the rules' verdict stands and the user is asked
    declined = await runner.send("/no")
    assert declined.stop_reason == "answered"
    assert await value(browser_session, "window.__purged ?? 0") == 0


NOT_ACTIONS = {
    "a link of the site's navigation named like a booking": "#book",
    "a link of the navigation named like a payment": "#pay",
    "a disclosure (aria-expanded)": "#replies",
    "a disclosure (a leading triangle only)": "#more",
    "a disclosure whose words say reply (German)": "#antworten",
    "a <summary>": "#summary",
}


async def test_navigation_links_and_disclosures_are_not_actions(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    """What only opens a page of the site's menu or shows part of this one is never held, whatever it is
    called; a link that acts by its address and the form's
    button still are."""
    for what, selector in NOT_ACTIONS.items():
        frames = await fresh(browser_session, pages, "signals-navigation.html")
        result = await browser_session.run_code(
            guarded_code(f"async (page) => {{ await page.click({selector!r}) }}", frames)
        )
        assert guard_report(result) is None, (what, result)
        assert result.ok, (what, result.error)
    for selector in ("#cancel", "#publish"):
        report = await held(
            browser_session,
            pages,
            "signals-navigation.html",
            f"async (page) => {{ await page.click({selector!r}) }}",
        )
        assert report.held, selector
        assert report.held[0]["verdict"]["destructive"] or report.held[0]["verdict"]["judge"], selector
    assert await value(browser_session, "window.__published ?? 0") == 0


async def test_a_step_counter_is_read_from_what_the_page_is(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    """ "Continue" before the last step is decided by structure (issue 29: no judge); the counter is read
    from a list of steps, a progress bar or a stepper in any language; on the last step, or beside a
    rating that only looks like a count, the judge still looks."""
    expect = {"aria": "2/3", "bar": "2/4", "stepper": "Шаг 1 из 3", "last": "Paso 3 de 3", "rating": None}
    for kind, step in expect.items():
        frames = await fresh(browser_session, pages, f"signals-counter.html?kind={kind}")
        result = await browser_session.run_code(
            guarded_code("async (page) => { await page.click('button') }", frames)
        )
        report = guard_report(result)
        if kind in ("aria", "bar", "stepper"):
            assert report is None and result.ok, (kind, result)
            assert await value(browser_session, "window.__next ?? 0") == 1, kind
            continue
        assert report is not None, kind
        event = report.held[0]
        assert event["facts"]["step"] == step, kind
        assert event["verdict"]["judge"] is True, kind
        assert await value(browser_session, "window.__next ?? 0") == 0, kind
