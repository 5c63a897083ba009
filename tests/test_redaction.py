"""One redaction function for every sink: each kind of secret and personal data is masked."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pytest

from browser_copilot.config import load_settings
from browser_copilot.events import Event
from browser_copilot.logs import setup_logging
from browser_copilot.safety.redaction import luhn_ok, mask_secrets, redact, redact_data
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


def test_the_console_event_stream_is_redacted() -> None:
    out = io.StringIO()
    printer = EventPrinter(make_console(out, width=160))
    printer(Event("tool_call", {"tool": "browser_run_code", "args": {"code": "fill('ann.lee@example.com')"}}))
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
