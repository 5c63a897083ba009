"""Secrets said in words, in what the user writes (the chat) and what the agent would remember: a password
or key with its word ("my password is x", "pw: x"), credentials in the usual shapes ("login is alice / x",
"x is the password", "sign in as alice with x", "sign into paypal with alice@example.com and x",
"alice:S3cret!x"), a one-time code or a PIN with its word, also in groups or spelled out ("the code is 482
977", "my PIN is four two nine one"), a CVV. Words per language: `secret_words.json`. The user name next to
a password is an ordinary detail and stays; only the secret is a `Secret`."""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources

from browser_copilot.safety.secret_shapes import EMAIL, Secret, SecretKind, looks_secret

_WORDS = json.loads(
    resources.files("browser_copilot.safety").joinpath("secret_words.json").read_text("utf-8")
)
"""safety/secret_words.json: the words that introduce a password, and link it to its value, and the words of
the shapes credentials come in (login, user, "sign in as", "with"), per language."""
_UNSPACED_CHARS = r"\u0e00-\u0eff\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff"
_UNSPACED = re.compile(f"(?-i:[{_UNSPACED_CHARS}])")
"""A character of a script written without spaces. Classes of these ranges are kept out of `(?i)` (`(?-i:`):
they have no case, and folding their 40,000 characters made compiling this module's patterns take 0.6 s."""


def alternation(by_language: dict[str, list[str]], *, spaced: str, unspaced: str) -> str:
    """The words of every language, longest first; words of scripts written without spaces match inside
    text (`unspaced` around them), others as whole words (`spaced`).

    What goes around the words is written once per kind, `unspaced(?:…)|spaced(?:…)`, not once per word:
    the same pattern, a tenth of the size, compiled in a fraction of the time (it was a tenth of what
    every process of the app did at start). The words written without spaces come first: one of them
    and a word with spaces match at the same place only when it is the longer one (its other script is
    a letter, which a spaced word's end cannot be followed by), as it came first in one list by length."""
    words = sorted({w for ws in by_language.values() for w in ws}, key=len, reverse=True)
    kinds = []
    for around, script in ((unspaced, True), (spaced, False)):
        chosen = [re.escape(w).replace("\\ ", r"\s+") for w in words if bool(_UNSPACED.search(w)) is script]
        if chosen:
            before, after = around.split("{}")
            kinds.append(f"{before}(?:{'|'.join(chosen)}){after}")
    return "|".join(kinds)


PASSWORD_WORD = alternation(_WORDS["password_words"], spaced=r"(?<![\w-]){}(?![\w-])", unspaced="{}")
_TOKEN_WORD = (
    r"(?<![\w-])(?:api[ _-]?key|secret[ _-]?key|access[ _-]?key|client[ _-]?secret|"
    r"(?:access|auth|api|bearer|refresh)?[ _-]?token|bearer)(?![\w-])"
)
# "password IS x", "password: x": whatever follows is the value. A password followed by other words
# ("Passwort für Gmail abc123", "salasanani on abc123") counts only when the value looks like one
# (has a digit or a symbol), so that "password manager" or "password reset" is not taken for a secret.
_LINK = alternation(_WORDS["separators"], spaced=r"\s+{}(?=\s)", unspaced=r"\s*{}")
_SEPARATOR = rf"(?:\s+[^\W\d_]{{1,8}})?\s*(?:[:=]|[—–](?!\w))\s*|(?:{_LINK})\s*(?:[:=]\s*)?"
_LOOSE = rf"(?:\s+[^\W\d_]{{1,8}}){{0,2}}\s+|(?<={_UNSPACED.pattern})\s*"
# A value is written in a script with spaces: in "密码是abc123" or "パスワードは12文字以上" it ends where the
# sentence's own script goes on ("12文字以上" is a length, not a password).
_VALUE_CHAR = rf"(?-i:[^\s\"'«»“”‘’`,;{_UNSPACED_CHARS}])"
_VALUE = (
    r"(?:(?P<q>[\"'«“‘`])(?P<quoted>[^\"'»”’`\n]{1,100})[\"'»”’`]"
    rf"|(?P<value>{_VALUE_CHAR}{{3,}}))"
)
_FOR = r"(?:\s+(?:for|of|on|at|to|für|pour|para|per|voor|för|dla|для|от|на|do|za)\s+[\w.@-]{2,40}(?![\w@-]))?"
_PASSWORD_VALUE = re.compile(
    rf"(?i)(?P<word>{PASSWORD_WORD}|{_TOKEN_WORD}){_FOR}(?:(?P<sep>{_SEPARATOR})|(?P<loose>{_LOOSE})){_VALUE}"
)
_CODE_DIGITS = (
    r"(?P<value>(?<![\d+*•xX])(?:\d{4,8}|\d{2,4}(?:[ -]\d{2,4}){1,3})(?![\d.,/-]\d)(?![ -]\d)(?![\dA-Za-z]))"
)
"""A code's digits: in one piece ("482977") or in groups ("482 977", "482-977"); `code_digits` checks it."""
_DATE_LIKE = re.compile(r"\d{4}-\d{1,2}-\d{1,2}|\d{1,2}-\d{1,2}-\d{2,4}")
_CODE_VALUE = re.compile(
    r"(?i)(?<![\w-])(?:(?P<pre>(?!(?:verification|security|confirmation|login|sign|access|auth\w*|one)\b)"
    r"[^\W\d_]+)[ -])?(?P<word>one[- ]time (?:pass)?code|otp|totp|2fa|mfa|sms|"
    r"(?:verification|security|confirmation|login|sign[- ]in|access|auth(?:entication)?)?[ -]?code|"
    r"код(?: подтверждения| из смс)?|"
    # One word in the languages that join them: "Sicherheitscode", "verificatiecode", "engångskod".
    r"(?:sicherheits|verifizierungs|bestätigungs|anmelde|einmal|zugangs|verificatie|bevestigings|"
    r"beveiligings|inlog|verifierings|engångs|bekræftelses|bekreftelses|verifiointi)(?:code|kode|kod|koodi)|"
    r"(?:m|sms|push|chip)?tan)(?![\w-])(?P<gap>[^\d\n]{0,20})"
    rf"{_CODE_DIGITS}"
)


@cache
def _code_said() -> re.Pattern[str]:
    """A one-time code said with a link word, in any language of the tables: "el código es 482913",
    "验证码是482913", "인증번호는 482913" (the code words are the guard's, lexicon.json `code_words`).
    Without the link ("código postal 28001") it is an ordinary number."""
    from browser_copilot.safety.classifier import lexicon  # the guard's table; loaded when first needed

    words = alternation(
        {"*": list(lexicon().get("code_words", []))}, spaced=r"(?<![\w-]){}(?![\w-])", unspaced="{}"
    )
    # Up to four words may stand between the code word and its link: "tu código de verificación es",
    # "رمز التحقق الخاص بك هو", "mã xác minh của bạn là". Where the link comes last (Hindi: "सत्यापन कोड
    # 482913 है"), the code stands right after its word.
    return re.compile(
        rf"(?i)(?:{words})"
        rf"(?P<mid>(?:\s+[^\W\d_]{{1,14}}){{0,4}}?)"
        rf"(?:\s*[:=：]\s*|(?:{_LINK})\s*(?:[:=：]\s*)?|(?<={_UNSPACED.pattern})\s*|\s+(?=\S+\s+(?:है|हैं|ہے)(?!\w)))"
        rf"(?:[\[【(（「]\s*)?{_LETTERS}" + _CODE_DIGITS
    )


_LETTERS = r"(?:(?-i:[A-Z]{1,4})-)?"
"""A code's letters before its digits ("G-482913"): the digits are what is masked."""
_QUALIFIER = (
    r"(?:v[ée]rifi\w*|confirm\w*|s[ée]curit\w*|segur\w*|sicherheit\w*|подтвержд\w*|проверк\w*|weryfik\w*"
    r"|dost[eę]p\w*|acc[eè]s\w*|acceso|accesso|login|connexion|sesi[oó]n|sess[aã]o|aut[eh]\w*)"
)
"""What kind of code it is, after its word: "código de verificación", "код подтверждения"."""


@cache
def _code_nouns() -> str:
    """The words that name a one-time code by themselves (the guard's code words but "verification", which
    also names other things: "the year of verification")."""
    from browser_copilot.safety.classifier import lexicon  # the guard's table; loaded when first needed

    nouns = [w for w in lexicon().get("code_words", []) if w != "verification"]
    return alternation(
        {"*": [*nouns, "otp", "one-time code", "one-time password", "passcode"]},
        spaced=r"(?<![\w-]){}(?![\w-])",
        unspaced="{}",
    )


@cache
def _code_said_word() -> re.Pattern[str]:
    return re.compile("(?i)" + _code_nouns())


@cache
def _code_before() -> re.Pattern[str]:
    """A one-time code written before its word ("482913 is your Acme code", "482913 是您的验证码") or before
    what it is for ("Use 482913 to verify", "Geben Sie 482913 ein, um sich anzumelden"). Written before
    its word, the code opens its clause ("Room 1204 is the code room" does not) and the code word ends it,
    or only what kind of code it is follows ("482913 es tu código de verificación", not "código postal")."""
    words = _code_nouns()
    use = alternation(_WORDS["use_words"], spaced=r"(?<![\w-]){}(?![\w-])", unspaced="{}")
    purpose = alternation(_WORDS["verify_words"], spaced=r"(?<![\w-]){}(?![\w-])", unspaced="{}")
    code = rf"(?<![\w+.,/*•-]){_LETTERS}(?:(?<![\w+.,/*•-])|(?<=(?-i:[A-Z])-)){_CODE_DIGITS}"
    used = code.replace(_LETTERS, f"(?P<letters>{_LETTERS})", 1).replace("?P<value>", "?P<used>")
    opens = r"(?:(?m:^)|(?<=[.!?:;\]\)】>»\"“])|(?<=[.!?:;\]\)】>»\"“]\s))"
    kind = rf"(?:\s+(?:de|di|da|do|del|du|von|d')?\s*{_QUALIFIER})?"
    return re.compile(
        rf"(?i)(?:{opens}[ \t]*{code}(?:{_LINK_BEFORE})"
        rf"(?P<mid>(?:[^\W\d_]{{1,14}}[\s-]+){{0,3}}?)(?:{_UNSPACED.pattern}{{0,4}}?)(?P<word>{words}){kind}"
        rf"{_CLAUSE_END}"
        rf"|(?<![\w-])(?:{use})\s+(?:(?:{words})\s+)?{used}[^.!?\n\d]{{0,40}}?(?:{purpose}))"
    )


_CVV_VALUE = re.compile(
    r"(?i)\b(?:cvv2?|cvc2?|csc|card (?:security|verification) (?:code|value|number))\b[^\d\n]{0,15}"
    r"(?P<value>(?<!\d)\d{3,4})(?!\d)"
)
# Words beside "code" (before it, or between it and "is") that make it an ordinary number, not a code.
_ORDINARY_CODE_WORDS = """zip postal post postcode area country promo discount coupon voucher gift product
order booking tracking reference error status http tax sort bank iata airport dialling dialing phone colour
color source building qr bar barcode style dress postale pocztowy promocional invoice customer
descuento promoción promocion cupón cupon regalo pedido seguimiento reserva referencia producto
réduction reduction commande suivi réservation reservation produit cadeau facture cliente factura
rabatt gutschein bestellung sendungsverfolgung buchung postleitzahl produkt kunden rechnung
sconto ordine spedizione prenotazione prodotto regalo fattura rabatowy zamówienia zamowienia
item sku course hs cpt naics store branch response reason hotel flight client banque name
заказа товара ошибки клиента отделения produktu ürün posta 상품"""
ORDINARY_CODES = frozenset(_ORDINARY_CODE_WORDS.split())
# Words after "password is" that say something about it, not what it is.
_NOT_VALUE_WORDS = """stored saved kept in the a an not never same different changed wrong correct required
needed expired too very weak strong secret private known set empty blank forgotten lost on at my your there
here below above reset manager field protected hidden managed long short case sensitive ok fine page tab
section settings box button form policy screen menu link rules requirements length hint change update
recovery strength"""
_NOT_VALUES = frozenset(_NOT_VALUE_WORDS.split())


def _passwords(text: str) -> list[Secret]:
    """Passwords (and keys) said with their word, and credentials in the usual shapes; no two overlap."""
    kept: list[Secret] = []
    for secret in sorted(_said(text) + _credentials(text), key=lambda s: (s.start, -s.end)):
        if not kept or secret.start >= kept[-1].end:
            kept.append(secret)
    return kept


def _said(text: str) -> list[Secret]:
    found: list[Secret] = []
    for match in _PASSWORD_VALUE.finditer(text):
        if match.group("quoted") is not None:
            start, end = match.span("quoted")
        else:
            value = match.group("value").rstrip(".!?)]:")
            start = match.start("value")
            end = start + len(value)
            if len(value) < 3 or value.lower() in _NOT_VALUES:
                continue
            plain = not re.search(r"[\d\W_]", value)
            if plain and match.group("sep") is None:
                continue  # "password manager", "token expired": no value, only a word
            direct = re.fullmatch(r"\s*[:=]\s*", match.group("sep") or "")
            if plain and not direct and re.match(r"\s+[^\W\d_]", text[end:]):
                continue  # "mot de passe est trop long": a sentence about it goes on, not a value
        word = match.group("word")
        kind: SecretKind = "password" if re.fullmatch(PASSWORD_WORD, word, re.I) else "API key or token"
        if kind == "API key or token" and end - start < 8:
            continue
        found.append(Secret(kind, start, end))
    return found


# ----- credentials in the usual shapes (words: secret_words.json) -----------------------------------
# "login is alice / Tr0ub4dor", "Tr0ub4dor is the password", "sign in as alice with Tr0ub4dor",
# "user: alice pass: sunshine", "username alice password sunshine". Only the secret part is withheld: the
# user name is an ordinary detail the agent may use, like the user's e-mail.

LOGIN_WORD = alternation(_WORDS["login_words"], spaced=r"(?<![\w-]){}(?![\w-])", unspaced="{}")
_PASS_WORD = alternation(_WORDS["pass_words"], spaced=r"(?<![\w-]){}(?![\w-])", unspaced="{}")
_SIGN_IN_AS = alternation(_WORDS["sign_in_as"], spaced=r"(?<![\w-]){}(?![\w-])", unspaced="{}")
_WITH = alternation(_WORDS["with_words"], spaced=r"(?<![\w-]){}(?![\w-])", unspaced="{}")
_LINK_BEFORE = alternation(_WORDS["separators"], spaced=r"\s+{}\s+", unspaced=r"\s*{}\s*")
_USER = rf"(?P<user>{_VALUE_CHAR.replace(',;', ',;/')}{{1,64}})"
_AFTER_WORD = rf"(?:\s*[:=]\s*|\s+|(?<={_UNSPACED.pattern})\s*)"
_FOR_WORDS = r"for|of|on|at|to|für|pour|para|per|voor|för|dla|для|от|на|do|za"
_CLAUSE_END = rf"(?=\s*$|\s*[.!?,;:)\]…。！？，、]|\s+(?:{_FOR_WORDS})(?!\w)|{_UNSPACED.pattern})"
_PAIR = re.compile(  # login word (for x) (is / :) user / secret
    rf"(?i)(?:{LOGIN_WORD}){_FOR}(?:{_SEPARATOR}|\s+|(?<={_UNSPACED.pattern})\s*){_USER}\s*/\s*{_VALUE}"
)
_REVERSED = re.compile(  # secret, link, "the"/"my", password word, end of the clause
    rf"(?i)(?<![^\s\"'«“‘(\[])(?:(?P<q>[\"'«“‘`])(?P<quoted>[^\"'»”’`\n]{{1,100}})[\"'»”’`]"
    rf"|(?P<value>{_VALUE_CHAR}{{4,}}))"
    rf"(?:\s+[—–-]\s+|{_LINK_BEFORE})(?:[^\W\d_]{{1,8}}\s+){{0,2}}(?:{_UNSPACED.pattern}{{1,3}})?"
    rf"(?:{PASSWORD_WORD}){_CLAUSE_END}"
)
_SIGN_IN = re.compile(  # sign in as user with secret
    rf"(?i)(?:{_SIGN_IN_AS})\s+{_USER}\s+(?:{_WITH})\s+(?:[^\W\d_]{{1,8}}\s+)?{_VALUE}"
)
_USER_PASS = re.compile(  # login word user (and) pass word secret
    rf"(?i)(?:{LOGIN_WORD})(?P<named>{_AFTER_WORD}){_USER}\s*[,;]?\s*(?:[^\W\d_]{{1,4}}\s+)?"
    rf"(?:{_PASS_WORD}|{PASSWORD_WORD})(?P<sep>{_AFTER_WORD}){_VALUE}"
)


def _value_span(match: re.Match[str]) -> tuple[int, int, bool]:
    """(start, end, quoted) of a `_VALUE` group, trailing punctuation left out."""
    if match.group("quoted") is not None:
        return *match.span("quoted"), True
    start = match.start("value")
    return start, start + len(match.group("value").rstrip(".!?)]:")), False


def _credentials(text: str) -> list[Secret]:
    found: list[Secret] = []
    for pattern in (_PAIR, _REVERSED, _SIGN_IN):
        for match in pattern.finditer(text):
            start, end, quoted = _value_span(match)
            if "user" in match.groupdict() and not re.search(r"[^\W\d_]", match.group("user")):
                continue  # a user name has a letter: "účet ••••/0100" is an account number and a bank
            if quoted or looks_secret(text[start:end]):
                found.append(Secret("password", start, end))
    for match in _USER_PASS.finditer(text):
        start, end, quoted = _value_span(match)
        value = text[start:end]
        if quoted or looks_secret(value):
            found.append(Secret("password", start, end))
            continue
        if len(value) < 3 or value.lower() in _NOT_VALUES or value.lower() == match.group("user").lower():
            continue
        named = ":" in match.group("named") or "=" in match.group("named")
        said = ":" in match.group("sep") or "=" in match.group("sep")
        if named or said or re.fullmatch(r"\s*[.!]?\s*", text[end:]):
            found.append(Secret("password", start, end))  # "user alice pass sunshine": a plain word too
    return found


# ----- more shapes: "pw: x", "alice:x", "with alice@example.com and x", digits in pieces ------------------

_PASS_SAID = re.compile(rf"(?i)(?:{_PASS_WORD})[ \t]*[:=][ \t]*{_VALUE}")
_LABEL_WORDS = """http https ftp ftps sftp ssh git mailto tel sms urn data file javascript about blob ws wss
chrome edge id ref no nr re fw fwd note notes tip step item sku isbn issn doi inv order invoice ticket case
error warning info todo fixme eg ex ps nb time date page chapter section"""
_LABELS = frozenset(_LABEL_WORDS.split())
_USER_COLON = re.compile(
    r"(?<![\w@/:.+\\-])(?P<user>[^\W\d_][\w.+-]{1,63}(?:@[\w-]+(?:\.[\w-]+)+)?)"
    r":(?P<value>[^\s:/\\\"'`,;<>()\[\]{}]{6,64})(?![^\s.,;!?)\]])"
)
_AND = alternation(_WORDS["and_words"], spaced=r"(?<![\w-]){}(?![\w-])", unspaced="{}")
_WITH_AND = re.compile(rf"(?i)(?:{_WITH})\s+(?P<user>{_VALUE_CHAR}{{1,64}})\s+(?:{_AND})\s+{_VALUE}")
_SIGN_IN_VERBS = alternation(_WORDS["sign_in_verbs"], spaced=r"(?<![\w-]){}(?![\w-])", unspaced="{}")
_SIGN_IN_VERB = re.compile(rf"(?i)(?:{_SIGN_IN_VERBS})[^.!?\n]{{0,80}}$")
_DIGIT_WORD = alternation(_WORDS["digit_words"], spaced=r"(?<![\w-]){}(?![\w-])", unspaced="{}")
_PIECE = rf"(?:\d{{1,4}}|{_DIGIT_WORD})"
_FOR_NO_DIGIT = _FOR.replace(r"\s+[\w.@-]", rf"\s+(?!{_PIECE}(?![\w-]))[\w.@-]")
"""`_FOR` ("for gmail") whose object is not a piece of the value: "PIN to cztery dwa ..." """
_PIECES = rf"(?P<pieces>{_PIECE}(?:(?:[ \t]*[,\-–][ \t]*|[ \t]+){_PIECE}){{1,11}})(?![\w-])"


@cache
def _pieces_said() -> re.Pattern[str]:
    """A PIN, password or code said in pieces: spaced digits ("4 2 9 1", "482 977") or spelled out ("four
    two nine one", "vier zwei neun eins"), after its word (secret_words.json, the guard's code words)."""
    from browser_copilot.safety.classifier import lexicon  # the guard's table; loaded when first needed

    codes = alternation(
        {"*": [*lexicon().get("code_words", []), "otp", "2fa", "one-time code", "verification code"]},
        spaced=r"(?<![\w-]){}(?![\w-])",
        unspaced="{}",
    )
    return re.compile(
        rf"(?i)(?:(?P<pre>[^\W\d_]+)[ -])?(?P<word>{PASSWORD_WORD}|{codes}){_FOR_NO_DIGIT}"
        rf"(?:{_SEPARATOR}|(?:\s+(?!{_DIGIT_WORD})[^\W\d_]{{1,3}})?\s+|(?<={_UNSPACED.pattern})\s*){_PIECES}"
    )


def _in_pieces(text: str) -> list[Secret]:
    found: list[Secret] = []
    for match in _pieces_said().finditer(text):
        pieces = match.group("pieces")
        digits = sum(len(d) for d in re.findall(r"\d+", pieces)) + len(re.findall(_DIGIT_WORD, pieces, re.I))
        if not 4 <= digits <= 12 or (match.group("pre") or "").lower() in ORDINARY_CODES:
            continue
        if _DATE_LIKE.fullmatch(pieces):
            continue
        kind: SecretKind = (
            "password" if re.fullmatch(PASSWORD_WORD, match.group("word"), re.I) else "one-time code"
        )
        found.append(Secret(kind, *match.span("pieces")))
    return found


def _more_shapes(text: str) -> list[Secret]:
    """ "pw: x"; "alice:x" (a user name and its password joined by a colon); "sign into paypal with
    alice@example.com and x" (after a word for signing in, or with an e-mail address for the user)."""
    found: list[Secret] = []
    for match in _PASS_SAID.finditer(text):
        start, end, quoted = _value_span(match)
        if quoted or looks_secret(text[start:end]):
            found.append(Secret("password", start, end))
    for match in _USER_COLON.finditer(text):
        value, user = match.group("value").rstrip(".!?"), match.group("user")
        if user.lower() in _LABELS or user.lower() in ORDINARY_CODES or not re.search(r"[a-zà-ÿ]", value):
            continue  # "ID:AB12CD", "https://...": a label and a reference, not a user and a password
        if looks_secret(value) and re.search(r"[\d\W_]", value):
            found.append(Secret("password", match.start("value"), match.start("value") + len(value)))
    for match in _WITH_AND.finditer(text):
        start, end, quoted = _value_span(match)
        user = match.group("user")
        signing_in = _SIGN_IN_VERB.search(text, max(0, match.start() - 100), match.start())
        if (EMAIL.fullmatch(user) or signing_in) and (quoted or looks_secret(text[start:end])):
            found.append(Secret("password", start, end))
    return found


def code_digits(value: str) -> bool:
    """Whether the digits of a code said with its word are one: 4 to 8 digits, not a date."""
    return 4 <= sum(c.isdigit() for c in value) <= 8 and not _DATE_LIKE.fullmatch(value)


def said(text: str) -> list[Secret]:
    """Every secret said in words in `text` (possibly overlapping)."""
    found = _passwords(text) + _more_shapes(text) + _in_pieces(text) + codes_said(text)
    return found + [Secret("CVV", *m.span("value")) for m in _CVV_VALUE.finditer(text)]


_BEFORE = re.compile(r"(?:([^\W\d_]+)[ -])?([^\W\d_]+)[ -]$")


def _words_before(text: str, at: int) -> list[str]:
    """The one or two words right before `at` ("Order confirmation| code"), in lower case."""
    found = _BEFORE.search(text, max(0, at - 60), at)
    return [w.lower() for w in found.groups() if w] if found else []


_CLAUSE_STOP = re.compile(r"[.!?\n]")
_OWNERS = frozenset(["your", "my", "the", "this", "a", "an", "ur"])
"""The words before a bare "code" that make it the reader's own ("your code: 4829")."""
_FOUR_DIGITS = re.compile(r"\d(?:\D{0,3}\d){3}")


def codes_said(text: str) -> list[Secret]:
    """One-time codes said with their word ("Your verification code is 482913", "код: 4821"), also in
    page text (a message app, a mail): cheap where no four digits are near each other."""
    if not _FOUR_DIGITS.search(text):
        return []
    found: list[Secret] = []
    for match in _CODE_VALUE.finditer(text):
        word, pre = match.group("word").lower().strip(" -"), (match.group("pre") or "").lower()
        gap = set(re.findall(r"[^\W\d_]+", match.group("gap").lower()))
        if {pre, *gap} & ORDINARY_CODES or (word == "code" and pre and pre not in _OWNERS):
            continue  # "Item code: 4829", "Order confirmation code: 4829"; "Your code: 4829" stays
        bare = word in ("code", "sms") or word.endswith("tan")
        if bare and not re.fullmatch(
            rf"(?i)\s*(?:is|was|ist|lautet|[:=—–])\s*{_LETTERS}", match.group("gap")
        ):
            continue  # "item code 1234" is as likely a product as a code: only "the code is 1234"
        if code_digits(match.group("value")):
            found.append(Secret("one-time code", *match.span("value")))
    found += [
        Secret("one-time code", *m.span("value"))
        for m in _code_said().finditer(text)
        if not {*_words_before(text, m.start()), *m.group("mid").lower().split()} & ORDINARY_CODES
        and code_digits(m.group("value"))
    ]
    for m in _code_before().finditer(text):
        used = m.group("used") is not None
        group = "used" if used else "value"
        end = _CLAUSE_STOP.search(text, m.end())
        clause = text[m.start() : end.start() if end else len(text)].lower()
        if set(re.findall(r"[^\W\d_]+", clause)) & ORDINARY_CODES or not code_digits(m.group(group)):
            continue  # "Enter 94105 to verify your billing ZIP code"
        # Before its purpose alone ("Use 4821 to verify") a number is a code when it looks like one: six
        # digits or more, letters before it, or a code word in its clause ("Type 2048 to verify you are
        # human", "Use 1500 points to sign in" are not).
        if used and not (
            sum(c.isdigit() for c in m.group(group)) >= 6
            or m.group("letters")
            or _code_said_word().search(clause)
        ):
            continue
        found.append(Secret("one-time code", *m.span(group)))
    return found
