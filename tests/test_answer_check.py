"""The answer check (`quality_evaluator`, `agent.figures`): figures in an answer must come from the
session's evidence or one step of arithmetic on it, however they are written or escaped.

The recorded set in `tests/data/answer_check/` measures it: no false alarm, every planted wrong figure
caught (both printed)."""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any, cast

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.runtime import Runtime

from browser_copilot.agent.figures import (
    NEAR_PAGES,
    NEAR_RESULTS,
    SESSION_SOURCES,
    SOURCE_FIGURES,
    Evidence,
    remembered,
)
from browser_copilot.agent.nodes.quality_evaluator import quality_evaluator, unsupported_figures
from browser_copilot.agent.state import AgentState, ObservationState, new_request
from browser_copilot.agent.written_figures import Figure, claims, from_keys, read
from browser_copilot.browser.session import BrowserSession
from tests.support.agent import make_runner
from tests.support.pages import PageServer
from tests.support.scripted_model import code, say

CASES = Path(__file__).parent / "data" / "answer_check" / "cases.jsonl"


# --- replaying a recorded session ---------------------------------------------------------------------


def observation(text: str) -> ObservationState:
    """A page as the extractor renders it, element numbers 1-25 and the scroll line included."""
    elements = "\n".join(f'[{n}] button "Add to cart"' for n in range(1, 26))
    rendered = (
        "Page: Test page — https://site.test/page\nViewport shows 0-720 of 2400px.\n"
        f"Elements:\n{elements}\nText:\n{text}"
    )
    return {
        "url": "https://site.test/page",
        "title": "Test page",
        "text": rendered,
        "fingerprint": str(hash(text)),
        "elements": [],
        "frames": {},
        "tabs": [],
        "dialog": None,
        "screenshot": None,
        "full": False,
    }


def replay(case: dict[str, Any]) -> AgentState:
    """The session's state when the answer is checked: each request started as the runner starts it,
    each page observed through `remembered` as `observe` does, each tool result a ToolMessage."""
    state: dict[str, Any] = {"messages": []}
    requests = case["requests"]
    for index, request in enumerate(requests):
        update = new_request(request["user"], state)
        state = {**state, **update, "messages": [*state["messages"], *update["messages"]]}
        for number, step in enumerate(request["steps"]):
            if "page" in step:
                page = observation(step["page"])
                state |= {**remembered(cast(AgentState, state), page), "observation": page}
            else:
                call_id = f"call_{index}_{number}"
                asked = AIMessage("", tool_calls=[{"name": "browser_run_code", "args": {}, "id": call_id}])
                state["messages"] += [asked, ToolMessage(step["tool"], tool_call_id=call_id)]
            state["tool_steps"] = state.get("tool_steps", 0) + 1
        state["facts"] = [{"fact": f, "source": "https://site.test/"} for f in request.get("facts", [])]
        if index < len(requests) - 1:
            state["messages"].append(AIMessage("Done."))
    if case.get("summarised"):  # memory_manager removed what came before the current request
        last = max(i for i, m in enumerate(state["messages"]) if isinstance(m, HumanMessage))
        state["messages"] = state["messages"][last:]
        state["summary"] = "The user asked about a repository earlier."
    state["memories"] = case.get("memories")
    return cast(AgentState, state)


def flagged(case: dict[str, Any]) -> list[str]:
    return [c.written for c in unsupported_figures(replay(case), case["answer"])]


def recorded() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CASES.read_text("utf-8").splitlines() if line.strip()]


def test_the_recorded_set_has_no_false_alarm_and_catches_every_planted_figure(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cases = recorded()
    false_alarms: dict[str, list[str]] = {}
    missed: dict[str, list[str]] = {}
    planted = caught = 0
    for case in cases:
        found, expected = set(flagged(case)), set(case["unsupported"])
        if found - expected:
            false_alarms[case["id"]] = sorted(found - expected)
        if expected - found:
            missed[case["id"]] = sorted(expected - found)
        planted += len(expected)
        caught += len(expected & found)
    rate, recall = len(false_alarms) / len(cases), caught / planted
    languages = Counter(c["lang"] for c in cases)
    with capsys.disabled():
        print(  # noqa: T201  (the measurement is the point of this test)
            f"\nanswer check on {len(cases)} recorded answers ({len(languages)} languages, {planted} planted "
            f"wrong figures): false-alarm rate {rate:.3f}, recall {recall:.3f}"
        )
    assert len(cases) >= 40
    assert planted >= 20
    assert len(languages) >= 8
    assert not false_alarms, false_alarms
    assert not missed, missed


def test_each_recorded_case_names_figures_that_are_in_its_answer() -> None:
    for case in recorded():
        written = {c.written for c in claims(case["answer"])}
        assert set(case["unsupported"]) <= written, case["id"]


# --- reading figures ----------------------------------------------------------------------------------


def value(text: str) -> float:
    """The value of the one figure of an answer (its first reading)."""
    (claim,) = claims(text)
    return claim.readings[0][0].value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$1,234.50", 1234.5),
        ("1.234,50 €", 1234.5),
        ("1 234,50 €", 1234.5),
        ("1\u202f234,50\u00a0€", 1234.5),
        ("1\u00a0234,50", 1234.5),
        ("1'234.50", 1234.5),
        ("CHF 1’234.50", 1234.5),
        ("€12", 12),
        ("12,5 %", 12.5),
        ("−€5.00", -5),
        ("-5.00", -5),
        ("₹1,23,456", 123456),
        ("1,234,567", 1234567),
        ("€1.2M", 1_200_000),
        ("12k", 12_000),
        ("3 млн", 3_000_000),
    ],
)
def test_figures_are_read_however_they_are_grouped_and_marked(text: str, expected: float) -> None:
    assert value(text) == pytest.approx(expected)


def test_money_and_percent_marks_are_read_from_either_side() -> None:
    marks = {f.key for f in read("$12.50, 12,50 €, 350 ₽, EUR 40, 20%, 512руб, 30 percent")}
    assert {"$12.50", "$350", "$40", "20%", "$512", "30%"} <= marks


@pytest.mark.parametrize("escaped", ["\\t512", "\\n512", "\\u00a0512", "\\\\t512", "&nbsp;512", "&#160;512"])
def test_escaped_separators_in_json_or_repr_text_do_not_hide_a_figure(escaped: str) -> None:
    assert 512 in {f.value for f in read(f'"count":"{escaped}"')}


def test_escaped_no_break_spaces_group_thousands() -> None:
    assert 1234.5 in {f.value for f in read('{"total": "1\\u00a0234,50\\u00a0€"}')}


def test_an_ambiguous_grouping_is_read_both_ways() -> None:
    assert {r[0].value for r in claims("1,234")[0].readings} == {1234, 1.234}
    assert [[f.value for f in r] for r in claims("30 123")[0].readings] == [[30123], [30, 123]]


def test_an_answer_is_read_strictly_and_evidence_loosely() -> None:
    answer = "1. Model A320, see https://x.test/item/48213\n2. v2.15 costs 45"
    assert [c.written for c in claims(answer)] == ["45"]
    assert {320, 48213, 45} <= {f.value for f in read(answer)}


@pytest.mark.parametrize(
    ("evidence", "answer"),
    [
        ("26.11.2026", "2026-11-26"),
        ("2026-11-26", "26.11.2026"),
        ("Nov 26, 2026", "11/26/2026"),
        ("2026-11-26T14:30:00Z", "26 Nov 2026 at 14:30"),
        ("30 September 2028", "30.09.28"),
        ("3:30 PM", "15:30"),
        ("15:30", "3:30 pm"),
        ("2026-10-28", "on 28.10"),
        ("Oct 28, 2026", "until 28,10"),
        ("٢٠٢٦-١٠-٢٨", "2026-10-28"),
        ("Total: 1.234,50 €", "€1,234.50"),
    ],
)
def test_a_date_or_time_seen_in_another_format_is_supported(evidence: str, answer: str) -> None:
    assert Evidence([read(evidence)], []).unsupported(claims(answer)) == []


def test_a_date_is_one_figure_of_the_answer_and_a_wrong_part_flags_it() -> None:
    (date,) = claims("on 2026-11-27")
    assert date.written == "2026-11-27"
    assert Evidence([read("26.11.2026")], []).unsupported([date]) == [date]


def test_a_day_and_month_the_page_does_not_show_is_still_flagged() -> None:
    (date,) = claims("on 29.10")
    assert Evidence([read("2026-10-28")], []).unsupported([date]) == [date]


def test_kept_keys_read_back_as_the_same_figures() -> None:
    figures = read("Total −€1.234,50, 20 %, 30 123 and 2026-11-26")
    assert from_keys([f.key for f in figures]) == figures
    assert 1234.5 in {f.value for f in from_keys(["1 234,50", "26.11.2026"])}  # kept by an older version


# --- matching ----------------------------------------------------------------------------------------


def check(answer: str, *near: str, far: tuple[str, ...] = (), counts: tuple[int, ...] = ()) -> list[str]:
    evidence = Evidence([read(t) for t in near], [read(t) for t in far], counts)
    return [c.written for c in evidence.unsupported(claims(answer))]


def test_small_figures_are_not_checked() -> None:
    assert check("Add 3 items, step 12 of 12.", "nothing") == []


def test_an_observed_figure_may_be_rounded_to_the_places_written() -> None:
    assert check("about €45", "€44.99") == []
    assert check("€44.90", "€44.99") == ["€44.90"]


@pytest.mark.parametrize(
    ("answer", "page"),
    [
        ("The three cost $45.25.", "$12.00 $24.50 $8.75"),
        ("$12.00 and $24.50 make $36.50.", "$12.00 $24.50 $8.75 $99.99"),
        ("It is €44 cheaper.", "€89 €45"),
        ("You pay €56.25 after the coupon.", "Subtotal €61.25 Coupon −€5.00"),
        ("3 mugs cost $36.00.", "Mug $12.00"),
        ("Average: €81.50.", "€89 €45 €52 €140"),
        ("A 25% reduction.", "Old €80.00 New €60.00"),
        ("Gross 119,00 €.", "Net 100,00 € VAT 19 %"),
        ("20% off makes €36.00.", "Was €45.00, now 20% off"),
    ],
)
def test_one_step_of_arithmetic_on_figures_of_one_source_is_supported(answer: str, page: str) -> None:
    assert check(answer, page) == []


def test_a_count_in_the_users_request_may_multiply_a_price() -> None:
    assert check("That is €70.00.", "Ticket €17.50") == ["€70.00"]
    assert check("That is €70.00.", "Ticket €17.50", counts=(4,)) == []


def test_figures_from_different_sources_add_up_only_when_the_answer_cites_them() -> None:
    assert check("That makes €165.00.", "Hotel €120.00", "Flight €45.00") == ["€165.00"]
    assert check("Hotel €120.00 plus flight €45.00: €165.00.", "Hotel €120.00", "Flight €45.00") == []


@pytest.mark.parametrize(
    "token", ["about:blank#bc-run=482add276b42c81a", "order 9f3c81e2a42b", "SKU12AB34", "sid=a1b2c3d4e5"]
)
def test_the_digits_of_a_token_or_code_are_no_evidence(token: str) -> None:
    """A random id read as figures would "support" invented ones (`81 - 42` made the CI's €39 pass)."""
    for answer in ("It costs €39.", "It costs €81.", "It costs €34."):
        assert check(answer, token) == [answer.split()[-1].rstrip(".")], (answer, token)
    assert check("The screen is 1920x1080, 10kg.", "1920x1080 10kg") == []


def test_far_sources_support_figures_directly_not_by_arithmetic() -> None:
    assert check("It is 10115.", "today's page", far=("10115 Berlin",)) == []
    assert check("It is €44 cheaper.", "today's page", far=("€89 €45",)) == ["€44"]


def test_sums_are_exact_to_the_cent_not_rounded_to_whole_units() -> None:
    assert check("The three cost $45.25.", "$12.00 $24.50 $8.75") == []
    assert check("The three cost $45.", "$12.00 $24.50 $8.75") == ["$45"]


def test_invented_figures_rarely_match_by_coincidence_on_a_busy_session(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A session at the near-source limits: six pages of twelve prices, eight tool results of eight
    whole numbers, an answer citing twelve prices. The share of random invented figures in the same
    range that pass (whole numbers are easy to hit: sums of whole numbers are whole)."""
    rng = random.Random(16)
    pages = [" ".join(f"${rng.uniform(5, 150):.2f}" for _ in range(12)) for _ in range(NEAR_PAGES)]
    results = [" ".join(str(rng.randint(13, 400)) for _ in range(8)) for _ in range(NEAR_RESULTS)]
    evidence = Evidence([read(t) for t in pages + results], [])
    cited = " ".join(pages[0].split()[:6] + pages[1].split()[:6])
    cents = [f"${rng.uniform(20, 600):.2f}" for _ in range(400)]
    whole = [str(rng.randint(13, 600)) for _ in range(400)]
    passed_cents = sum(not evidence.unsupported(claims(f"{cited} so {x}"))[-1:] for x in cents) / 400
    passed_whole = sum(not evidence.unsupported(claims(f"{cited} so {x}"))[-1:] for x in whole) / 400
    with capsys.disabled():
        print(  # noqa: T201  (the measurement is the point of this test)
            f"\nanswer check, coincidence on a busy session: {passed_cents:.3f} of invented amounts with "
            f"cents pass, {passed_whole:.3f} of invented whole numbers"
        )
    assert passed_cents <= 0.05
    assert passed_whole <= 0.25


def test_the_check_stays_fast_at_its_bounds() -> None:
    rng = random.Random(6)
    prices = [[Figure(round(rng.uniform(1, 999), 2), 2, money=True) for _ in range(12)] for _ in range(60)]
    evidence = Evidence(prices[:20], prices[20:], counts=range(2, 100))
    cited = " ".join(f"${f.value:.2f}" for f in prices[0])
    answer = claims(f"{cited}, 20%, " + " ".join(f"${rng.uniform(1000, 2000):.2f}" for _ in range(30)))
    start = time.perf_counter()
    assert len(evidence.unsupported(answer)) >= 25
    assert time.perf_counter() - start < 1.0


# --- the session's evidence ---------------------------------------------------------------------------


def session(*requests: dict[str, Any], summarised: bool = False) -> AgentState:
    return replay({"requests": list(requests), "summarised": summarised})


def test_a_figure_seen_in_an_earlier_request_is_evidence() -> None:
    state = session(
        {"user": "Where do they deliver?", "steps": [{"page": "Invalidenstraße 117, 10115 Berlin"}]},
        {"user": "And when?", "steps": [{"page": "Delivery on Friday"}]},
    )
    assert "10115" not in state["observation"]["text"]
    assert unsupported_figures(state, "To 10115 Berlin, on Friday.") == []
    assert [c.written for c in unsupported_figures(state, "To 10151 Berlin.")] == ["10151"]


def test_the_users_own_words_in_earlier_requests_are_evidence() -> None:
    state = session(
        {"user": "My phone is +1 415 555 0134.", "steps": [{"page": "Welcome"}]},
        {"user": "Fill in the form.", "steps": [{"page": "Contact form"}]},
    )
    assert unsupported_figures(state, "I entered +1 415 555 0134.") == []


def test_figures_of_summarised_requests_stay_evidence_and_element_numbers_never_are() -> None:
    state = session(
        {"user": "Stars?", "steps": [{"page": "Repo, 1,205 forks"}, {"tool": "Returned: 7340"}]},
        {"user": "Maintainers?", "steps": [{"page": "Maintainers: alice"}]},
        summarised=True,
    )
    assert not any("7340" in str(m.content) for m in state["messages"])
    kept = {f.value for group in state["session_figures"] for f in from_keys(group)}
    assert {7340, 1205} <= kept
    assert 13 not in kept
    assert unsupported_figures(state, "It has 7340 stars and 1,205 forks.") == []


def test_session_figures_are_bounded() -> None:
    state: dict[str, Any] = {"messages": [HumanMessage("go")]}
    for page in range(SESSION_SOURCES + 15):
        text = " ".join(str(1000 * page + n) for n in range(SOURCE_FIGURES + 50))
        state |= remembered(cast(AgentState, state), observation(text))
    assert len(state["session_figures"]) == SESSION_SOURCES
    assert max(len(g) for g in state["session_figures"]) == SOURCE_FIGURES
    assert len(state["seen_numbers"]) <= 400


def test_a_new_request_keeps_the_session_figures_and_the_checkpoint_round_trips_them() -> None:
    state: dict[str, Any] = {"messages": [HumanMessage("go")]}
    state |= remembered(cast(AgentState, state), observation("Total 1 234,50 €"))
    update = new_request("next", state)
    assert "session_figures" not in update
    assert update["seen_numbers"] == []
    serde = JsonPlusSerializer()
    kept = serde.loads_typed(serde.dumps_typed(state["session_figures"]))
    assert kept == state["session_figures"]
    assert 1234.5 in {f.value for f in from_keys(kept[-1])}


# --- the node -----------------------------------------------------------------------------------------


async def test_the_node_sends_an_unsupported_answer_back_once_naming_figures_as_written() -> None:
    page = observation("Ryanair €45, Wizz Air €52")
    state: dict[str, Any] = {
        "messages": [HumanMessage("Cheapest?"), AIMessage("Ryanair at €39, or 1.243,50 € for two.")],
        "observation": page,
        "tool_steps": 1,
        **remembered(cast(AgentState, {"messages": []}), page),
    }
    runtime = cast(Runtime[Any], None)
    first = await quality_evaluator(cast(AgentState, state), runtime)
    assert first.goto == "agent"
    note = str(cast(dict[str, Any], first.update)["messages"][0].content)
    assert "These figures in your answer do not appear" in note
    assert "€39, 1.243,50 €" in note
    again = await quality_evaluator(cast(AgentState, {**state, "checks": {"quality": 1}}), runtime)
    assert again.goto == "progress_reporter"


async def test_an_answer_citing_a_figure_of_an_earlier_request_is_not_sent_back(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    runner, _ = make_runner(
        browser_session,
        code(f"async (page) => {{ await page.goto('{pages.url('shop.html')}') }}"),
        say("The tea sampler costs $24.50."),
        code(f"async (page) => {{ await page.goto('{pages.url('results.html')}') }}"),
        say(
            "The cheapest flight is Ryanair at €45. With the tea sampler you looked at ($24.50), "
            "all three shop items together cost $45.25."
        ),
        say("(sent back)"),
    )
    first = await runner.send("What does the tea sampler cost?")
    assert first.text == "The tea sampler costs $24.50."
    outcome = await runner.send("Now find the cheapest flight.")
    assert outcome.stop_reason == "answered"
    assert outcome.text.startswith("The cheapest flight is Ryanair at €45.")
    notes = [m for m in outcome.values["messages"] if str(m.content).startswith("[Browser Copilot] These")]
    assert notes == []
    assert outcome.values["observation"]["title"] == "Flight results"  # the shop page is gone from state


def test_the_list_of_other_tabs_is_not_evidence() -> None:
    """Other tabs' indices, hosts and titles are not what this page says: with them, €39 would pass as
    12 + 27 (measured: a shared browser's tab "Order 27" let an invented price through)."""
    state = session({"user": "What does the blue mug cost?", "steps": [{"page": "Blue mug — $12.00"}]})
    page = state["observation"]["text"]
    with_tabs = page.replace(
        "Elements:", 'Tabs: 0 "Order 27" site.test · 1 "Test page" site.test (yours)\nElements:'
    )
    state = {**state, "observation": {**state["observation"], "text": with_tabs}}
    assert [c.written for c in unsupported_figures(state, "The blue mug costs €39.")] == ["€39"]
    assert unsupported_figures(state, "The blue mug costs $12.00.") == []
