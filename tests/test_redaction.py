"""One redaction function for every sink: each kind of secret and personal data is masked."""

from __future__ import annotations

import io
import logging
import re
from pathlib import Path
from typing import Literal

import pytest

from browser_copilot.config import load_settings
from browser_copilot.events import Event
from browser_copilot.logs import setup_logging
from browser_copilot.safety.redaction import asked_for, luhn_ok, mask_secrets, redact, redact_data
from browser_copilot.server.hub import for_owner, outgoing
from browser_copilot.ui.render import EventPrinter
from browser_copilot.ui.theme import make_console

SAMPLES = {
    "card": ("Card 4242 4242 4242 4242 exp 12/29", "4242 4242 4242 4242", "<card>"),
    "iban": ("IBAN DE89 3704 0044 0532 0130 00 please", "DE89 3704 0044 0532 0130 00", "<iban>"),
    "otp": ("Your verification code is 482913", "482913", "<code>"),
    "api key": ("key=sk-proj-a1b2c3d4e5f6g7h8i9j0 used", "sk-proj-a1b2c3d4e5f6g7h8i9j0", "<"),
    "jwt": (
        "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_X",
        "eyJhbGciOiJIUzI1NiJ9",
        "<",
    ),
    "email": ("Write to ann.lee@example.com today", "ann.lee@example.com", "<email>"),
    "phone": ("Call +44 20 7946 0958 now", "+44 20 7946 0958", "<phone>"),
    "password": ("password: hunter2-secret", "hunter2-secret", "<secret>"),
}


@pytest.mark.parametrize("kind", list(SAMPLES))
def test_every_kind_is_masked(kind: str) -> None:
    text, secret, mask = SAMPLES[kind]
    masked = redact(text)
    assert secret not in masked
    assert mask in masked


def test_typed_secret_values_are_masked_wherever_they_appear() -> None:
    assert (
        redact("typed Tr0ub4dor&3 into the form", secrets=["Tr0ub4dor&3"]) == "typed <secret> into the form"
    )


def test_numbers_that_are_not_secrets_survive() -> None:
    text = "Order 1234 5678 9012 3456 on 2026-11-26 costs 1299.00 EUR, 3 items"
    assert redact(text) == text
    assert not luhn_ok("1234567890123456")
    assert luhn_ok("4242424242424242")


def test_event_payloads_are_redacted_deeply() -> None:
    data = {"args": {"code": "await el(3).fill('ann.lee@example.com')"}, "list": ["4242 4242 4242 4242"]}
    assert redact_data(data) == {"args": {"code": "await el(3).fill('<email>')"}, "list": ["<card>"]}


def test_the_apps_own_names_in_a_payload_are_not_taken_for_data() -> None:
    """A session id is twelve hex digits; one in about 280 has no letter, and the Sessions list showed it
    as `<phone>`: the web page never marked that session current and could not select it again."""
    listing = {
        "sessions": [{"id": "526152590525", "goal": "Call +1 555 123 4567"}, {"id": "+1 555 123 4567"}]
    }
    assert outgoing(listing) == {
        "sessions": [{"id": "526152590525", "goal": "Call <phone>"}, {"id": "<phone>"}]
    }
    card = {"step": {"session": "4242424242424242", "text": "pay with 4242 4242 4242 4242"}}
    assert for_owner(card) == {"step": {"session": "<card>", "text": "pay with <card>"}}
    assert outgoing(
        {"data": {"id": "0a1b2c3d4e5f", "note": "x", "items": [{"id": "ann.lee@example.com"}]}}
    ) == {"data": {"id": "0a1b2c3d4e5f", "note": "x", "items": [{"id": "<email>"}]}}


def test_the_console_event_stream_is_redacted() -> None:
    out = io.StringIO()
    printer = EventPrinter(make_console(out, width=160), show_code=True)  # the code too, as /code shows it
    printer(Event("tool_call", {"tool": "browser_run_code", "args": {"code": "fill('ann.lee@example.com')"}}))
    printer(Event("tool_result", {"tool": "browser_run_code", "ok": True, "result": "Done."}))
    printer(Event("error", {"message": "card 4242 4242 4242 4242 declined"}))
    text = out.getvalue()
    assert "ann.lee@example.com" not in text
    assert "<email>" in text
    assert "<card>" in text


def test_the_log_file_is_redacted(tmp_path: Path) -> None:
    settings = load_settings(None, data_dir=tmp_path)
    path = setup_logging(settings)
    logging.getLogger("browser_copilot.test").warning(
        "token=%s for %s", "abc123secret", "ann.lee@example.com"
    )
    for handler in logging.getLogger().handlers:
        handler.flush()
    text = path.read_text()
    assert "abc123secret" not in text
    assert "ann.lee@example.com" not in text
    assert "token=<secret> for <email>" in text


# A password said in the chat, in the languages of secret_words.json: each must be withheld whole.
PASSWORDS_SAID = {
    "Mon mot de passe est soleil": "soleil",
    "Mein Passwort lautet Sommer2024": "Sommer2024",
    "la mia password è gattino": "gattino",
    "mi contraseña es perro123": "perro123",
    "minha senha é abacaxi9": "abacaxi9",
    "mijn wachtwoord is tulp": "tulp",
    "moje hasło to tajne123": "tajne123",
    "mitt lösenord är älg": "älg",
    "salasanani on kissa123": "kissa123",
    "şifrem: gizli": "gizli",
    "мій пароль це котик": "котик",
    "我的密码是abc123": "abc123",
    "パスワードはhunter2です": "hunter2",
    "비밀번호는 qwerty12": "qwerty12",
    "mật khẩu là matkhau99": "matkhau99",
    "كلمة المرور هي sesame": "sesame",
    "סיסמה: abc123": "abc123",
    "รหัสผ่านคือ abc123": "abc123",
    "kata sandi saya: rahasia": "rahasia",
    "Passwort für Gmail abc123!": "abc123",
}
# The same words where nothing secret follows.
PASSWORD_TALK = [
    "I use a password manager",
    "Mon mot de passe est trop long",
    "Ich habe mein Passwort vergessen",
    "la parola è bella",
    "где сбросить пароль?",
    "我的密码是什么",
    "the password to gmail",
    "pin the tab to the left",
]


@pytest.mark.parametrize(("text", "value"), list(PASSWORDS_SAID.items()))
def test_a_password_said_in_any_language_is_withheld(text: str, value: str) -> None:
    masked, kinds = mask_secrets(text)
    assert kinds == ["password"], masked
    assert value not in masked and "[password withheld]" in masked


@pytest.mark.parametrize("text", PASSWORD_TALK)
def test_talk_about_passwords_is_not_taken_for_one(text: str) -> None:
    assert mask_secrets(text) == (text, [])


CODES_SAID = [
    "el código es 482913",
    "mein Bestätigungscode ist 482913",
    "验证码是482913",
    "인증번호는 482913",
    "il codice è 482913",
    "код: 482913",
    "Your verification code is 482913",
]
ORDINARY_NUMBERS = [
    "código postal 28001",
    "kod pocztowy 00-950",
    "My zip code is 10115.",
    "the promo code is 20251",
    "order 482913 ships today",
]


@pytest.mark.parametrize("text", CODES_SAID)
def test_a_one_time_code_said_with_its_word_in_any_language_is_withheld(text: str) -> None:
    masked, kinds = mask_secrets(text)
    assert kinds == ["one-time code"] and "482913" not in masked, masked


@pytest.mark.parametrize("text", ORDINARY_NUMBERS)
def test_ordinary_numbers_next_to_code_words_stay(text: str) -> None:
    assert mask_secrets(text) == (text, [])


# ----- credentials in the usual shapes, in the languages of secret_words.json -----------------------
# (text, the secret, what must stay): only the secret is withheld; the user name is an ordinary detail.
CREDENTIALS = [
    ("en", "my bank login is alice / Tr0ub4dor-BRAVO-99", "Tr0ub4dor-BRAVO-99", "alice"),
    ("en", "Tr0ub4dor-ECHO-77 is the password", "Tr0ub4dor-ECHO-77", "is the password"),
    ("en", "the password: Tr0ub4dor-DELTA-55", "Tr0ub4dor-DELTA-55", "the password"),
    ("en", "sign in as alice with Tr0ub4dor-CHARLIE-11", "Tr0ub4dor-CHARLIE-11", "alice"),
    ("en", "user: alice pass: sunshine", "sunshine", "alice"),
    ("en", "username alice password sunshine", "sunshine", "alice"),
    ("de", "mein Benutzername ist alice / Sommer-2024", "Sommer-2024", "alice"),
    ("de", "Sommer2024! ist mein Passwort", "Sommer2024", "ist mein Passwort"),
    ("de", "melde dich als alice mit Sommer2024 an", "Sommer2024", "alice"),
    ("fr", "mon identifiant est alice / Soleil-2024", "Soleil-2024", "alice"),
    ("fr", "Soleil-2024 est mon mot de passe", "Soleil-2024", "mot de passe"),
    ("fr", "connecte-toi en tant que alice avec Soleil-2024", "Soleil-2024", "alice"),
    ("es", "Perro-123 es la contraseña", "Perro-123", "contraseña"),
    ("es", "inicia sesión como alice con Perro-123", "Perro-123", "alice"),
    ("es", "usuario alice clave sol", "sol", "alice"),
    ("it", "Gatto-77 è la password", "Gatto-77", "password"),
    ("it", "accedi come alice con Gatto-77", "Gatto-77", "alice"),
    ("pt", "entre como alice com Abacaxi-9", "Abacaxi-9", "alice"),
    ("pt", "usuário: alice / Abacaxi-9", "Abacaxi-9", "alice"),
    ("ru", "войди как alice с Tr0ub4dor-99", "Tr0ub4dor-99", "alice"),
    ("ru", "Tr0ub4dor-99 — мой пароль", "Tr0ub4dor-99", "мой пароль"),
    ("ru", "логин alice / Kot-2024", "Kot-2024", "alice"),
    ("uk", "увійди як alice з Kvitka-2024", "Kvitka-2024", "alice"),
    ("pl", "zaloguj się jako alice z Tajne-123", "Tajne-123", "alice"),
    ("pl", "nazwa użytkownika: alice / Tajne-123", "Tajne-123", "alice"),
    ("nl", "log in als alice met Tulp-2024", "Tulp-2024", "alice"),
    ("nl", "Tulp-2024 is mijn wachtwoord", "Tulp-2024", "wachtwoord"),
    ("sv", "användarnamn alice lösen hemligt", "hemligt", "alice"),
    ("tr", "kullanıcı adı alice şifre gizli", "gizli", "alice"),
    ("zh", "用户名alice密码sunshine", "sunshine", "alice"),
    ("zh", "abc-123是我的密码", "abc-123", "我的密码"),
    ("ja", "Tr0ub4dorが私のパスワードです", "Tr0ub4dor", "パスワード"),
    ("ja", "ユーザー名 alice / Tr0ub4dor-99", "Tr0ub4dor-99", "alice"),
    ("ko", "아이디 alice 비번 sunshine", "sunshine", "alice"),
    ("ko", "Tr0ub4dor-99가 비밀번호야", "Tr0ub4dor-99", "비밀번호"),
    ("vi", "tên đăng nhập alice mk bimat", "bimat", "alice"),
    ("id", "masuk sebagai alice dengan Rahasia-99", "Rahasia-99", "alice"),
]
# Sentences about passwords, with no password in them: they reach the agent as written.
ABOUT_PASSWORDS = [
    ("en", "I forgot my password, help me reset it"),
    ("en", "change the password policy page title"),
    ("en", "where is the password field?"),
    ("en", "the password must be 12 characters long"),
    ("en", "open the user settings password tab"),
    ("en", "sign in as alice with Google"),
    ("en", "the login is email / password"),
    ("de", "Ich habe mein Passwort vergessen, hilf mir, es zurückzusetzen"),
    ("de", "Das Passwort muss 12 Zeichen lang sein"),
    ("fr", "J'ai oublié mon mot de passe, aide-moi à le réinitialiser"),
    ("fr", "le mot de passe doit contenir 12 caractères"),
    ("es", "¿dónde está el campo de contraseña?"),
    ("es", "la contraseña debe tener 12 caracteres"),
    ("it", "la password deve essere di 12 caratteri"),
    ("pt", "Esqueci minha senha, me ajude a redefini-la"),
    ("ru", "Я забыл пароль, помоги его сбросить"),
    ("ru", "пароль должен быть длиной 12 символов"),
    ("pl", "gdzie jest pole hasła?"),
    ("nl", "het wachtwoord moet 12 tekens lang zijn"),
    ("tr", "Şifremi unuttum, sıfırlamama yardım et"),
    ("zh", "我忘记密码了，帮我重置"),
    ("zh", "密码字段在哪里？"),
    ("zh", "密码必须是12个字符"),
    ("ja", "パスワードを忘れました。リセットを手伝って"),
    ("ja", "パスワードは12文字以上必要です"),
    ("ko", "비밀번호는 12자 이상이어야 합니다"),
    ("vi", "mật khẩu phải dài 12 ký tự"),
    # Not credentials either: an account number with its bank code, a path of pages.
    ("cs", "Na účet 123456789/0100"),
    ("en", "the login page links home / settings2"),
]


def test_the_tables_cover_at_least_ten_languages() -> None:
    assert len({lang for lang, *_ in CREDENTIALS}) >= 10
    assert len({lang for lang, _ in ABOUT_PASSWORDS}) >= 10


@pytest.mark.parametrize(("lang", "text", "secret", "kept"), CREDENTIALS)
def test_credentials_in_the_usual_shapes_lose_only_their_secret(
    lang: str, text: str, secret: str, kept: str
) -> None:
    masked, kinds = mask_secrets(text)
    assert kinds == ["password"], masked
    assert secret not in masked and "[password withheld]" in masked
    assert kept in masked


@pytest.mark.parametrize(("lang", "text"), ABOUT_PASSWORDS)
def test_sentences_about_passwords_stay_as_written(lang: str, text: str) -> None:
    assert mask_secrets(text) == (text, [])


# ----- an answer to the agent's own question, or to the page in front -----------------------------
# (question, the page's secret field, answer, withheld): the agent's last words to the user, what the page
# in front has a field for (by what the field is), and whether the bare answer is taken for a secret.
ANSWERS = [
    ("en", "What is the code from the SMS?", None, "482977", True),
    ("en", "What is your PIN?", None, "4821", True),
    ("en", "Please type the SMS code into the page and tell me when you are done.", None, "done", False),
    ("en", "What is the order number?", None, "482977", False),
    ("en", "What is your zip code?", None, "10115", False),
    ("en", "What is the code?", None, "it's 482977, thanks", True),
    ("en", "What is the code?", None, "the order number is 482977", False),
    ("en", "The page is open. What next?", "one-time code", "482977", True),
    ("en", "The page is open. What next?", "password", "Tr0ub4dor-ECHO-77", True),
    ("en", "The page is open. What next?", "one-time code", "order 482977", False),
    ("en", "Which username should I use?", "password", "alice_99", False),
    ("en", "What is the order number?", "one-time code", "482977", False),
    ("en", "The page is open. What next?", None, "482977", False),
    (
        "en",
        "Signed in; your password manager kept it. Anything else?",
        None,
        "fly to Riga on 2025-06-01",
        False,
    ),
    ("de", "Wie lautet der Code aus der SMS?", None, "482977", True),
    ("de", "Wie lautet die Bestellnummer?", None, "482977", False),
    ("de", "Wie lautet dein Passwort?", None, "Sommer-2024!", True),
    ("fr", "Quel est le code reçu par SMS ?", None, "482977", True),
    ("fr", "Quel est votre code postal ?", None, "75001", False),
    ("es", "¿Cuál es el código que recibiste?", None, "482977", True),
    ("es", "¿Cuál es el número de pedido?", None, "482977", False),
    ("it", "Qual è il codice che hai ricevuto?", None, "482977", True),
    ("pt", "Qual é o código de verificação?", None, "482977", True),
    ("ru", "Какой код пришёл в СМС?", None, "482977", True),
    ("ru", "Какой номер заказа?", None, "482977", False),
    ("pl", "Jaki kod przyszedł SMS-em?", None, "482977", True),
    ("nl", "Wat is de code uit de sms?", None, "482977", True),
    ("tr", "SMS ile gelen kod nedir?", None, "482977", True),
    ("zh", "短信验证码是多少？", None, "482977", True),
    ("ja", "SMSで届いた確認コードは何ですか？", None, "482977", True),
    ("ko", "인증번호가 뭐예요?", None, "482977", True),
    ("ko", "비밀번호가 뭐예요?", None, "Tr0ub4dor-99", True),
]


def test_the_answer_table_covers_at_least_ten_languages() -> None:
    assert len({lang for lang, *_ in ANSWERS}) >= 10


@pytest.mark.parametrize(("lang", "question", "page", "answer", "withheld"), ANSWERS)
def test_an_answer_is_a_secret_when_the_question_or_the_page_asks_for_one(
    lang: str,
    question: str,
    page: Literal["password", "one-time code"] | None,
    answer: str,
    withheld: bool,
) -> None:
    masked, kinds = mask_secrets(answer, asked_for(question, page))
    if withheld:
        assert kinds and "withheld]" in masked, masked
        assert not re.search(r"\d{4}", masked), masked
    else:
        assert (masked, kinds) == (answer, [])
    assert mask_secrets(answer) == (answer, [])  # without the context, nothing in it is a secret


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-26 12:35:43,364 INFO browser_copilot.cli: started",
        "opened at 2026-01-05 23:59:59",
        "26-11-2026 09:05 the order shipped",
        "on 2026-11-26 it costs 1299.00 EUR",
    ],
)
def test_dates_and_times_are_not_phone_numbers(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "phone"),
    [
        ("Call +44 20 7946 0958 now", "+44 20 7946 0958"),
        ("Call +44 20 7946 0958: ask for Ann", "+44 20 7946 0958"),
        ("tel 8 912 345-67-89 at 12:30", "8 912 345-67-89"),
        ("+7 (912) 345-67-89", "+7 (912) 345-67-89"),
        ("ref 2026-13-40 12:35", "2026-13-40 12"),  # no such date: its digits stay masked
    ],
)
def test_phone_numbers_next_to_times_are_still_masked(text: str, phone: str) -> None:
    masked = redact(text)
    assert phone not in masked and "<phone>" in masked


def test_the_log_files_own_timestamps_are_never_masked(tmp_path: Path) -> None:
    settings = load_settings(None, data_dir=tmp_path)
    path = setup_logging(settings)
    logging.getLogger("browser_copilot.test").warning("call +44 20 7946 0958 at 2026-11-26 12:35:43")
    for handler in logging.getLogger().handlers:
        handler.flush()
    (line,) = [row for row in path.read_text(encoding="utf-8").splitlines() if "browser_copilot.test" in row]
    assert re.match(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3} WARNING browser_copilot\.test: ", line), line
    assert line.endswith("call <phone> at 2026-11-26 12:35:43")


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("connect to postgres://app:hunter22@db:5432/shop", "hunter22"),
        (
            "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0B\n-----END PRIVATE KEY-----",
            "MIIEvQIBADANBgkqhkiG9w0B",
        ),
        ("stripe key sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
        ("the user wrote pw: hunter22", "hunter22"),
    ],
)
def test_every_sink_masks_secrets_found_by_their_shape(text: str, secret: str) -> None:
    assert secret not in redact(text)


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("Bank: Your verification code is 482913. Do not share it.", "482913"),
        ("Ваш код подтверждения: 482913", "482913"),
        ("Dein Bestätigungscode lautet 482913", "482913"),
        ("Tu código de verificación es 482 913.", "482 913"),
        ("Votre code de vérification est 482913", "482913"),
        ("Il codice di verifica è 482913", "482913"),
        ("Your one-time password: 7730", "7730"),
    ],
)
def test_a_one_time_code_in_page_text_is_masked_for_the_model(text: str, code: str) -> None:
    from browser_copilot.safety.redaction import mask_for_model

    masked = mask_for_model(text)
    assert code not in masked and ("<code>" in masked or "<secret>" in masked), masked


@pytest.mark.parametrize(
    "text",
    [
        "Your order number is 482913",
        "Tracking code: 48291734",
        "Postal code is 28001",
        "Call 555-0100 today",
        "Price 1299.00 EUR, item 4829-13",
        "Use promo code 4821 at checkout",
        "El código postal de Madrid es 28001",
        "Tu código de descuento es 48291",
        "Votre code de réduction est 4829",
    ],
)
def test_ordinary_numbers_and_codes_stay_for_the_model(text: str) -> None:
    from browser_copilot.safety.redaction import mask_for_model

    assert mask_for_model(text) == text


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("482913 is your Acme code", "482913"),
        ("G-482913 is your Google verification code.", "482913"),
        ("Your code is G-482913", "482913"),
        ("482913 es tu código de verificación", "482913"),
        # More words between the code word and its link, an owner suffix, the link last.
        ("Doğrulama kodunuz: 482913", "482913"),
        ("رمز التحقق الخاص بك هو 482913", "482913"),
        ("Mã xác minh của bạn là 482913", "482913"),
        ("आपका सत्यापन कोड 482913 है।", "482913"),
        ("482913 est votre code de vérification.", "482913"),
        ("482913 ist Ihr Bestätigungscode", "482913"),
        ("482913 是您的验证码", "482913"),
        ("Use 482913 to verify your account", "482913"),
        ("Enter G-4829 to sign in", "4829"),
        ("Geben Sie 482913 ein, um sich anzumelden", "482913"),
        ("Utilisez 482 913 pour vous connecter", "482 913"),
        ("Введите 482913 для входа", "482913"),
        ("[Acme] 482913 is your code", "482913"),
        ("Verification code 482913", "482913"),
        ("验证码：482913", "482913"),
        ("【淘宝】验证码482913，5分钟内有效", "482913"),
        ("인증번호 [482913]", "482913"),
        ("Ihr Sicherheitscode: 482913", "482913"),
        ("Uw verificatiecode is 482913", "482913"),
        ("Ihre TAN lautet 482913", "482913"),
        ("Use code 482913 to sign in", "482913"),
    ],
)
def test_a_code_written_before_its_word_or_purpose_or_with_letters_is_masked(text: str, code: str) -> None:
    from browser_copilot.safety.redaction import mask_for_model

    masked = mask_for_model(text)
    assert code not in masked and "<code>" in masked, masked


@pytest.mark.parametrize(
    "text",
    [
        "28001 is your postal code",
        "Order 482913 is your order code",
        "4821 is the area code for the city",
        "A-1234 is the product code",
        "Use 2024 to find the report",
        "Enter 1234 items per page",
        "Use promo code 4821 to sign in for a discount",
        "2024-11-05 is the date",
        "ab482913 is your code",
        # A label before "code", a word after it, or a number that does not open its clause.
        "Item code: 4829",
        "SKU code: 48291",
        "Order confirmation code: 4829",
        "Код заказа: 4829",
        "1200 is the code name.",
        "75001 est le code postal.",
        "1000 — код ошибки.",
        "Room 1204 is the code room.",
        "2024 is the year of verification.",
        # Before a purpose: not six digits, no letters, no code word in its clause, or an ordinary one.
        "Enter 94105 to verify your billing ZIP code",
        "Geben Sie 10115 ein, um Ihre Postleitzahl zu bestätigen",
        "Enter 1985 to verify your birth year",
        "Use 1500 points to sign in",
        "Type 2048 in the box to verify you are human",
        # The hidden phone the code went to: its last digits pick the right phone.
        "We sent a verification code to ******0132",
        "OTP sent to XXXXXX4829",
        "商品コード：4829",
        "SMS 1500 per month",
        "The tan 4821 sofa",
    ],
)
def test_numbers_before_ordinary_code_words_stay(text: str) -> None:
    from browser_copilot.safety.redaction import mask_for_model

    assert mask_for_model(text) == text
