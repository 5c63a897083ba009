// Is this field a secret (F47)? Recognised by what it IS, never by a substring of its label: a
// password input; a field drawn masked; an autocomplete token for passwords, one-time codes or card data; a name/id whose
// tokens are exactly such a thing (`otp`, `cvv`, `card_number`...: secret_names.json); a short numeric code field
// (inputmode numeric or type tel/number with a maxlength of 4-8, or one of a row of 1-character boxes)
// of a form that asks for nothing else, or that form's one short field named or labelled as a code; one of
// a row of 3-5 short boxes that together hold a card number; a field holding a card number (Luhn).
// Shared by the observation extractor and the in-page guard.
(el) => {
  if (!el || (el.tagName !== 'INPUT' && el.tagName !== 'TEXTAREA')) return false;
  const type = (el.getAttribute('type') || 'text').toLowerCase();
  if (type === 'password') return true;
  // The guard marks a field it knows is secret although it no longer looks it (a password the page's
  // "show" toggle revealed, or a text field put in its place): every reader takes its word.
  if (el.hasAttribute('data-bc-secret')) return true;
  // A text field the page draws masked (-webkit-text-security), as some banks' PIN and password fields.
  const view = el.ownerDocument && el.ownerDocument.defaultView;
  const style = view && view.getComputedStyle ? view.getComputedStyle(el) : null;
  if (style && ['disc', 'circle', 'square'].includes(style.webkitTextSecurity)) return true;
  const split = (text) => String(text || '').replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean);
  const own = [el.getAttribute('name'), el.id, el.getAttribute('data-testid')];
  const tokens = own.flatMap(split);
  const names = /*SECRET_NAMES*/null; // secret_names.json, shared with the download reader
  const has = (words) => words.some((w) => tokens.includes(w));
  const named = has(names.words) || own.some((n) => names.joined.includes(split(n).join('')))
    || names.pairs.some(([a, b]) => has(a) && has(b));
  // A hidden field a step of a form carries the secret in (`<input type=hidden name=password>`).
  if (type === 'hidden') return named;
  if (['submit', 'button', 'reset', 'image', 'checkbox', 'radio', 'file', 'range', 'color', 'date',
    'datetime-local', 'month', 'week', 'time', 'email', 'url', 'search'].includes(type)) return false;
  const auto = (el.getAttribute('autocomplete') || '').toLowerCase().split(/\s+/);
  if (named || auto.some((t) => ['one-time-code', 'current-password', 'new-password', 'cc-number', 'cc-csc', 'cc-exp',
    'cc-exp-month', 'cc-exp-year'].includes(t))) return true;
  // A card number by what it holds, whatever the field is called: 13-19 digits (spaced or dashed) that
  // pass the card check (Luhn).
  const digits = /^[\d \-]{13,23}$/.test(el.value || '') ? el.value.replace(/\D/g, '') : '';
  if (digits.length >= 13 && digits.length <= 19) {
    let sum = 0;
    for (let i = 0; i < digits.length; i += 1) {
      let d = Number(digits[digits.length - 1 - i]);
      if (i % 2) { d *= 2; if (d > 9) d -= 9; }
      sum += d;
    }
    if (sum % 10 === 0 && !/^(\d)\1+$/.test(digits)) return true;
  }
  const max = Number(el.getAttribute('maxlength') || 0);
  const form = el.form || el.closest('form, [role=dialog], [role=alertdialog], dialog');
  const open = (i) => !['hidden', 'submit', 'button', 'checkbox', 'radio'].includes((i.getAttribute('type') || 'text').toLowerCase());
  const inputs = form ? [...form.querySelectorAll('input')].filter(open) : [el];
  // The one short field (4-8) of a form, named or labelled as a code and not as an ordinary one (a
  // promo, ZIP or order code): a one-time code, also as a plain text field.
  if (max >= 4 && max <= 8 && inputs.length === 1) {
    const said = [...own, el.getAttribute('aria-label'), el.getAttribute('placeholder'),
      ...[...(el.labels || [])].map((l) => l.textContent)].flatMap(split);
    // Compounds too (`Bestätigungscode`, `Einmalcode`; `Postcode`, `Gutscheincode` are ordinary).
    const codeWord = (w) => names.code_words.some((c) => w === c || (c.length >= 4 && w.endsWith(c)));
    const ordinary = (w) => names.ordinary_codes.some((o) => w === o || (o.length >= 4 && w.startsWith(o)));
    if (said.some(codeWord) && !said.some(ordinary)) return true;
  }
  const numeric = ['numeric', 'decimal'].includes((el.getAttribute('inputmode') || '').toLowerCase()) || ['tel', 'number'].includes(type)
    || /^\[?0-9\]?|\\d/.test(el.getAttribute('pattern') || '');
  if (!numeric) return false;
  // One code field (4-8 digits), or a row of 4-8 one-character boxes, and nothing else to fill.
  if (max >= 4 && max <= 8 && inputs.length === 1) return true;
  // A card number split over 3-5 boxes of 4-6 digits, one after another (other fields may stand around
  // them), whose lengths add up to a card's (13-19).
  const length = (i) => Number(i.getAttribute('maxlength') || 0);
  const short = (i) => length(i) >= 4 && length(i) <= 6;  // a card's groups: 4-4-4-4, 4-6-5 (not 3-3-4, 2-2-4)
  for (let a = el.parentElement, n = 0; max >= 4 && max <= 6 && a && n < 3; a = a.parentElement, n++) {
    const fields = [...a.querySelectorAll('input')].filter(open);
    if (fields.length < 2) continue;
    let first = fields.indexOf(el);
    let last = first;
    while (first > 0 && short(fields[first - 1])) first -= 1;
    while (last < fields.length - 1 && short(fields[last + 1])) last += 1;
    const at = fields.indexOf(el);
    for (let from = first; from <= at; from += 1) {
      for (let to = Math.max(at, from + 2); to <= Math.min(last, from + 4); to += 1) {
        const sum = fields.slice(from, to + 1).reduce((t, i) => t + length(i), 0);
        if (sum >= 13 && sum <= 19) return true;
      }
    }
    break;
  }
  if (max !== 1) return false;
  // Outside a form the row is the nearest group that holds more than one field (boxes in wrappers).
  let row = inputs;
  for (let a = el.parentElement, n = 0; !form && a && n < 3 && row.length < 2; a = a.parentElement, n++) {
    row = [...a.querySelectorAll('input')].filter(open);
  }
  return row.length >= 4 && row.length <= 8 && row.every((i) => Number(i.getAttribute('maxlength') || 0) === 1);
}
