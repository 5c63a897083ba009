"""The classifier decides by what the control is and where it sits, not only by its words (F40): icons,
the trash that shares its word with the basket, a step counter, words of looking, a typed message, a
ticked box that links to terms, and the judge for what stays uncertain (`judge: true`)."""

from __future__ import annotations

from typing import Any

import pytest

from browser_copilot.safety.classifier import classify_many


def verdict(**facts: Any) -> dict[str, Any]:
    base = {"tag": "button", "role": "button", "type": "button", "url": "https://site.example/x"}
    (out,) = classify_many([{**base, **facts}])
    return out


@pytest.mark.parametrize(
    ("icon", "category"),
    [
        ("bi bi-trash3", "delete"),
        ("material-symbols-outlined delete_forever", "delete"),
        ("fa-solid fa-paper-plane", "send"),
        ("svg use #icon-bin", "delete"),
        ("iconCreditCard", "pay"),
    ],
)
def test_an_icon_only_control_is_what_its_icon_shows(icon: str, category: str) -> None:
    out = verdict(name="", icon=icon, context="Invoices · INV-2041 · €120.00")
    assert (out["destructive"], out["category"]) == (True, category)


def test_an_ordinary_icon_passes_and_an_unknown_one_goes_to_the_judge() -> None:
    close = verdict(
        name="", icon="fa-solid fa-xmark", dialog=True, context="Are you sure? · This cannot be undone"
    )
    assert close["destructive"] is False and close["judge"] is False
    unknown = verdict(name="", icon="ph-thin ph-lightning", context="Row 4")
    assert unknown["destructive"] is False and unknown["judge"] is True


@pytest.mark.parametrize(
    ("lang", "heading", "name"),
    [
        ("pl", "Kosz", "Usuń trwale"),
        ("cs", "Koš", "Smazat navždy"),
        ("tr", "Çöp kutusu", "Kalıcı olarak sil"),
    ],
)
def test_deleting_for_good_in_a_trash_is_held_though_the_word_also_means_basket(
    lang: str, heading: str, name: str
) -> None:
    out = verdict(lang=lang, name=name, heading=heading, context=f"{heading} · raport.pdf")
    assert (out["destructive"], out["category"]) == (True, "delete")


def test_in_a_dialog_that_warns_emptying_a_basket_word_is_permanent() -> None:
    out = verdict(
        lang="uk",
        name="Очистити кошик",
        dialog=True,
        context="Очистити кошик? · Усі листи буде видалено назавжди",
    )
    assert out["destructive"] is True


def test_removing_from_a_list_without_prices_goes_to_the_judge_and_from_a_cart_does_not() -> None:
    # "Корзина" is both the shopping cart and the recycle bin: a cart shows prices, a bin does not.
    listed = verdict(lang="ru", name="Удалить", heading="Корзина", context="Корзина · отчёт.pdf")
    assert listed["destructive"] is False and listed["judge"] is True
    cart = verdict(lang="ru", name="Удалить", heading="Корзина", context="Корзина · Кроссовки 4 990 ₽")
    assert cart["destructive"] is False and cart["judge"] is False


@pytest.mark.parametrize(("step", "held"), [("Paso 2 de 4", False), ("Paso 4 de 4", True)])
def test_continue_beside_a_price_is_held_only_on_the_last_step(step: str, held: bool) -> None:
    out = verdict(
        lang="es",
        type="submit",
        form_method="post",
        name="Continuar",
        amount="64,90 €",
        context=f"{step} · Envío estándar 3,95 € · Total 64,90 €",
    )
    assert out["destructive"] is held
    # A counter saying it is not the last step decides by structure (issue 29: no judge call; the effect
    # gate holds a request that commits anyway); on the last step the judge may look.
    assert out["judge"] is held


@pytest.mark.parametrize(
    ("lang", "name", "context"),
    [
        ("en", "Review transfer", "New transfer · Amount €500.00"),
        ("en", "Translate post", "Ana · 2 h"),
        ("es", "Revisar transferencia", "Nueva transferencia · Importe 65,00 €"),
    ],
)
def test_a_word_of_looking_before_an_action_word_only_shows_it(lang: str, name: str, context: str) -> None:
    out = verdict(lang=lang, name=name, type="submit", form_method="post", context=context)
    assert out["destructive"] is False


def test_submitting_a_typed_message_sends_it_whatever_the_button_says() -> None:
    out = verdict(
        lang="nl", name="Plaats reactie", type="submit", form_method="post", message=True, editable=1
    )
    assert (out["destructive"], out["category"]) == (True, "send")


@pytest.mark.parametrize(
    ("facts"),
    [
        {"lang": "en", "name": "Agree and sign up"},
        {"lang": "es", "name": "Aceptar y crear cuenta"},
        {"lang": "en", "name": "Sign up", "consent": True},
    ],
)
def test_agreeing_in_a_form_that_commits_is_held_without_the_judge(facts: dict[str, Any]) -> None:
    out = verdict(type="submit", form_method="post", editable=3, **facts)
    assert (out["destructive"], out["category"], out["judge"]) == (True, "accept", False)


def test_uncertain_controls_go_to_the_judge_even_when_the_rules_lean_safe() -> None:
    update = verdict(
        lang="it",
        name="Aggiorna",
        type="submit",
        form_method="post",
        editable=2,
        fields=[{"label": "Prezzo", "type": "text", "filled": True, "secret": False}],
    )
    assert update["destructive"] is False and update["judge"] is True
    sign_in = verdict(
        name="Sign in",
        type="submit",
        form_method="post",
        editable=2,
        fields=[{"label": "Password", "type": "password", "filled": True, "secret": True}],
    )
    assert sign_in["judge"] is False
    finish = verdict(name="Finish", context="Step 3")
    assert finish["destructive"] is False and finish["judge"] is True
    foreign = verdict(lang="am", name="አሁን ይግዙ", type="submit", form_method="post")
    assert foreign["judge"] is True


@pytest.mark.parametrize("name", ["Dezember", "›", "15", "Mars", "Následující měsíc"])
def test_a_plain_button_of_a_search_form_changes_the_page_and_needs_no_judge(name: str) -> None:
    picker = {
        "tag": "button",
        "role": "button",
        "type": "button",
        "name": name,
        "form_method": "get",
        "lang": "de",
    }
    (verdict,) = classify_many([picker])
    assert verdict["destructive"] is False and not verdict.get("judge"), verdict


def test_the_same_unknown_word_on_a_button_that_sends_a_form_still_gets_a_closer_look() -> None:
    sends = {"tag": "button", "role": "button", "type": "submit", "name": "Dezember", "form_method": "post"}
    (verdict,) = classify_many([{**sends, "lang": "de"}])
    assert verdict.get("judge") or verdict["destructive"], verdict
