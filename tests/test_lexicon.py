"""The action-phrase table (`safety/lexicon.json`): its shape, its phrase syntax, the split of
`warnings` (irreversibility, loss, danger) from `totals` (an amount is only shown), and the `views` words
(looking, not doing), read by the classifier (`policy.js`) the way `main.py policy-check` reads them."""

from __future__ import annotations

import json
import unicodedata
from typing import Any

import pytest

from browser_copilot.safety.classifier import classify_lines, lexicon

LISTS = ("safe", "negative", "generic", "progress", "warnings", "totals", "views", "reversible")

# How sites say "permanently / forever / for good / irreversibly": every language must keep them in
# `warnings`, or "Delete permanently" in a trash (the basket's word in several languages) reads as harmless.
PERMANENT = {
    "ar": ["بشكل دائم", "إلى الأبد", "نهائيا"],
    "az": ["həmişəlik", "birdəfəlik", "daimi olaraq"],
    "be": ["назаўсёды", "назаўжды", "беззваротна"],
    "bg": ["завинаги", "безвъзвратно", "за постоянно"],
    "bn": ["স্থায়ীভাবে", "চিরতরে", "চিরকালের জন্য"],
    "ca": ["permanentment", "per sempre", "definitivament"],
    "cs": ["trvale", "navždy", "natrvalo", "nadobro"],
    "da": ["permanent", "for altid", "for evigt"],
    "de": ["dauerhaft", "endgültig", "für immer", "unwiederbringlich"],
    "el": ["μόνιμα", "οριστικά", "για πάντα"],
    "en": ["permanently", "forever", "for good", "irreversibly"],
    "es": ["permanentemente", "para siempre", "definitivamente"],
    "et": ["jäädavalt", "igaveseks", "lõplikult", "püsivalt"],
    "fa": ["برای همیشه", "به طور دائم", "غیرقابل بازگشت"],
    "fi": ["pysyvästi", "lopullisesti", "ikuisesti"],
    "fr": ["définitivement", "pour toujours", "à jamais", "pour de bon"],
    "ga": ["go buan", "go deo", "go brách"],
    "he": ["לצמיתות", "לתמיד", "באופן קבוע"],
    "hi": ["स्थायी रूप से", "हमेशा के लिए", "सदा के लिए"],
    "hr": ["trajno", "zauvijek", "za stalno"],
    "hu": ["véglegesen", "végleg", "örökre", "mindörökre"],
    "hy": ["ընդմիշտ", "մշտապես", "վերջնականապես"],
    "id": ["secara permanen", "selamanya", "untuk selamanya"],
    "is": ["varanlega", "að eilífu", "endanlega", "fyrir fullt og allt"],
    "it": ["definitivamente", "per sempre", "in modo permanente"],
    "ja": ["完全に", "永久に", "完全削除"],
    "ka": ["სამუდამოდ", "მუდმივად", "საბოლოოდ"],
    "kk": ["біржола", "мәңгілікке", "біржолата"],
    "ko": ["영구", "영구적으로", "완전히", "영원히"],
    "ky": ["биротоло", "түбөлүккө", "туруктуу түрдө"],
    "lt": ["visam laikui", "negrįžtamai", "galutinai"],
    "lv": ["neatgriezeniski", "uz visiem laikiem", "pastāvīgi"],
    "ms": ["secara kekal", "selama-lamanya", "selamanya"],
    "mt": ["b'mod permanenti", "għal dejjem", "permanentement"],
    "nb": ["permanent", "for alltid", "for godt"],
    "nl": ["definitief", "voorgoed", "voor altijd"],
    "pl": ["trwale", "na zawsze", "bezpowrotnie", "na dobre"],
    "pt": ["permanentemente", "para sempre", "definitivamente", "de vez"],
    "ro": ["permanent", "definitiv", "pentru totdeauna", "pe vecie"],
    "ru": ["навсегда", "безвозвратно", "окончательно", "насовсем"],
    "sk": ["natrvalo", "navždy", "trvalo", "nadobro"],
    "sl": ["trajno", "za vedno", "za zmeraj"],
    "sr": ["trajno", "zauvek", "трајно", "заувек", "za stalno"],
    "sv": ["permanent", "för alltid", "för gott"],
    "tg": ["барои ҳамеша", "абадан", "ба таври доимӣ"],
    "th": ["ถาวร", "อย่างถาวร", "ตลอดไป"],
    "tr": ["kalıcı olarak", "sonsuza dek", "temelli"],
    "uk": ["назавжди", "безповоротно", "остаточно", "назовсім"],
    "uz": ["butunlay", "abadiy", "бутунлай", "doimiy ravishda"],
    "vi": ["vĩnh viễn", "mãi mãi", "xóa hẳn"],
    "zh-Hans": ["永久", "彻底", "永远"],
    "zh-Hant": ["永久", "徹底", "永遠"],
}

# Amount words that only show a sum: in `totals`, never in `warnings`.
TOTALS = {
    "en": ["total", "grand total", "order total", "amount due", "billed monthly", "charged today"],
    "de": ["gesamt", "summe", "inkl mwst", "zu zahlen"],
    "fr": ["total", "montant à payer", "total ttc"],
    "ru": ["итого", "к оплате"],
    "pl": ["razem", "suma"],
    "ja": ["合計", "税込"],
    "zh-Hans": ["合计", "总计"],
    "ko": ["합계", "총액"],
}

# Words that commit: never a word of looking, whatever the language.
COMMITTING = {
    "confirm",
    "approve",
    "submit",
    "check out",
    "checkout",
    "确认信息",
    "確認",
    "확인",
    "подтвердить",
}


def is_phrase(phrase: str) -> bool:
    """Lower case; words of letters, marks and digits, joined by single spaces; a hyphen or an apostrophe
    only inside a word; `*` only at a word's start or end."""
    if not phrase or phrase != phrase.lower() or phrase != phrase.strip() or "  " in phrase:
        return False
    for word in phrase.split(" "):
        core = word.removeprefix("*").removesuffix("*")
        if not core or core[0] in "-'" or core[-1] in "-'":
            return False
        if not all(unicodedata.category(c)[0] in "LMN" or c in "-'\u02bb\u200c" for c in core):
            return False
    return True


def languages() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = lexicon()["languages"]
    return found


def test_every_language_has_every_list_and_the_about_text_names_them() -> None:
    assert len(languages()) == 52
    for code, language in languages().items():
        missing = [key for key in (*LISTS, "actions") if key not in language]
        assert not missing, (code, missing)
        for key in ("warnings", "totals", "views"):
            assert language[key], (code, key)
    about = lexicon()["about"]
    assert "totals (" in about and "views (" in about


def test_every_phrase_follows_the_phrase_syntax() -> None:
    wrong = [
        (code, key, phrase)
        for code, language in languages().items()
        for key, phrases in [*((k, language[k]) for k in LISTS), *language["actions"].items()]
        for phrase in phrases
        if not is_phrase(phrase)
    ]
    assert not wrong


@pytest.mark.parametrize("code", sorted(PERMANENT))
def test_the_words_for_permanently_are_warnings(code: str) -> None:
    warnings = languages()[code]["warnings"]
    assert [word for word in PERMANENT[code] if word not in warnings] == []


def test_a_phrase_is_a_warning_or_a_total_never_both() -> None:
    for code, language in languages().items():
        assert not set(language["warnings"]) & set(language["totals"]), code
    for code, words in TOTALS.items():
        language = languages()[code]
        assert all(word in language["totals"] and word not in language["warnings"] for word in words), code


def test_no_word_of_looking_is_a_word_that_commits() -> None:
    english = {p for phrases in languages()["en"]["actions"].values() for p in phrases}
    for code, language in languages().items():
        actions = english | {p for phrases in language["actions"].values() for p in phrases}
        views = set(language["views"])
        assert not views & actions, code
        assert not views & COMMITTING, code
        assert not views & {*language["generic"], *language["progress"], *language["negative"]}, code


def classify(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    lines = [json.dumps({"tag": "button", "context": "", **case}, ensure_ascii=False) for case in cases]
    return [json.loads(line) for line in classify_lines(lines)]


# A delete that says it is for good, in a section whose name is the basket's (and, on many sites and
# systems, the trash's): it cannot be undone, so it is held.
FOR_GOOD_IN_A_BASKET = [
    ("ru", "Удалить насовсем", "Корзина"),
    ("uk", "Видалити назовсім", "Кошик"),
    ("ro", "Șterge pe vecie", "Coș"),
    ("cs", "Smazat nadobro", "Košík"),
    ("pl", "Usuń bezpowrotnie", "Koszyk"),
    ("bg", "Изтрий за постоянно", "Кошница"),
    ("hr", "Izbriši za stalno", "Košara"),
    ("da", "Slet for evigt", "Kurv"),
    ("en", "Delete for good", "Basket"),
    ("ko", "완전히 삭제", "장바구니"),
    ("ja", "完全削除", "かご"),
    ("hu", "Törlés mindörökre", "Kosár"),
    ("fr", "Supprimer à jamais", "Panier"),
    ("tr", "Temelli sil", "Sepet"),
    ("pt", "Excluir de vez", "Cesto"),
]


def test_a_delete_for_good_in_a_basket_section_is_held_and_a_plain_remove_is_not() -> None:
    held = classify(
        [
            {"lang": lang, "name": name, "heading": where, "context": where}
            for lang, name, where in FOR_GOOD_IN_A_BASKET
        ]
    )
    assert [
        case[1]
        for case, verdict in zip(FOR_GOOD_IN_A_BASKET, held, strict=True)
        if not verdict["destructive"]
    ] == []
    plain = classify([{"lang": "ru", "name": "Удалить", "heading": "Корзина", "context": "Корзина"}])
    assert plain[0]["destructive"] is False


# "<look at> <action word>" leads to a page where it is looked at; the bare action word still acts, and an
# action phrase that begins with a word of looking ("Открыть доступ": grant access) is still that action.
LOOKING = [
    ("en", "Review transfer", "Transfer"),
    ("en", "Preview post", "Post"),
    ("de", "Vorschau Beitrag", "Beitrag veröffentlichen"),
    ("fr", "Aperçu publication", "Publier"),
    ("es", "Vista previa publicar", "Publicar"),
    ("ru", "Просмотреть перевод", "Перевести"),
    ("ru", "Перевести пост", "Перевести"),
    ("pl", "Podgląd publikacji", "Opublikuj"),
    ("ja", "プレビュー投稿", "投稿"),
    ("zh-Hans", "预览发布", "发布"),
    ("ko", "미리보기 게시", "게시"),
]


def test_an_action_word_after_a_word_of_looking_is_not_done_and_alone_it_is() -> None:
    looked = classify([{"lang": lang, "name": name} for lang, name, _ in LOOKING])
    done = classify([{"lang": lang, "name": name} for lang, _, name in LOOKING])
    assert [case[1] for case, v in zip(LOOKING, looked, strict=True) if v["destructive"]] == []
    assert [case[2] for case, v in zip(LOOKING, done, strict=True) if not v["destructive"]] == []
    kept = classify([{"lang": "ru", "name": "Открыть доступ"}, {"lang": "it", "name": "Apri reclamo"}])
    assert [v["destructive"] for v in kept] == [True, True]
