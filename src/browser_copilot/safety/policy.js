// Browser Copilot's destructive-action classifier (F40): one implementation, used in the page (the
// guard and the pre-flight check of an action's targets) and by `main.py policy-check` (in Node).
//
// It decides on what the control DOES first and on its words second (the words are data:
// lexicon.json, injected for __LEXICON__), and says when a model judge should look (`judge: true`):
// the control commits something (a non-GET form, a review step, payment fields, an amount, a warning
// dialog, danger styling) but its words are generic ("Continue", "OK") or unknown.
//
// Input: DOM facts {tag, role, type, name, value, href, form_action, form_method, context, url, lang;
// navigation: true for an address opened without a link; opaque: true for a closed component}
// and, when the page gave them, signals {dialog, haspopup, danger, payment, amount, review, editable,
// bulk, confirm}. Output: {destructive, category, reason, judge}.
(() => {
  const LEXICON = __LEXICON__;
  const CATEGORIES = LEXICON.categories;
  // Categories whose link only opens the page where the action would be done ("Buy now" to a product).
  const NAVIGABLE = new Set(['pay', 'order', 'book', 'transfer', 'withdraw', 'donate', 'publish', 'subscribe',
    'accept', 'submit', 'send']);
  // A GET form only asks for a page: these words there are searches ("Book" in a hotel search form).
  const GET_SAFE = new Set(['book', 'submit']);
  // Removing or clearing these is reversible when the name says what from ("Remove from comparison").
  const REVERSIBLE_CATEGORIES = new Set(['delete', 'cancel']);
  const UNSPACED = /[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uac00-\ud7af]/;

  const norm = (s) => String(s || '').normalize('NFKC').toLowerCase()
    .replace(/i\u0307/g, 'i').replace(/[’‘ʼʻ`´]/g, "'")
    .replace(/[^\p{L}\p{M}\p{N}\s'\-]+/gu, ' ').replace(/(^|\s)['\-]+|['\-]+(?=\s|$)/g, ' ')
    .replace(/\s+/g, ' ').trim();

  // Words are runs of letters/digits, hyphenated ones kept whole ("e-post" is not "post"); apostrophes
  // and spaces separate them (so "ordine" is found in "l'ordine"). A phrase is an index entry keyed by
  // its first word (exact, or a stem for `word*`); scripts written without spaces match as substrings,
  // keyed by their first character.
  const WORD = /[\p{L}\p{M}\p{N}]+(?:-[\p{L}\p{M}\p{N}]+)*/gu;
  const tokens = (text) => [...text.matchAll(WORD)].map((m) => [m[0], m.index, m.index + m[0].length]);
  // `loose`: a word of six letters or more may end differently after its first five (another case or
  // person of the same word: "оплата" / "оплату", "delete" / "deleted"), for inflected languages in
  // running text.
  const wordFits = (pattern, word, loose) => {
    const head = pattern.startsWith('*');
    const tail = pattern.endsWith('*');
    const core = pattern.slice(head ? 1 : 0, tail ? -1 : undefined);
    if (head && tail) return word.includes(core);
    if (head) return word.endsWith(core);
    if (tail) return word.startsWith(core);
    if (word === core) return true;
    if (!loose || core.length < 6 || word.length < 6 || Math.abs(word.length - core.length) > 3) return false;
    const keep = Math.max(5, core.length - 2);
    return word.slice(0, keep) === core.slice(0, keep);
  };
  const CLEAN = /^(?:\*?[\p{Ll}\p{Lo}\p{M}\p{Nd}]+(?:-[\p{Ll}\p{Lo}\p{M}\p{Nd}]+)*\*?)(?: \*?[\p{Ll}\p{Lo}\p{M}\p{Nd}]+(?:-[\p{Ll}\p{Lo}\p{M}\p{Nd}]+)*\*?)*$/u;
  const compile = (phrases) => {
    const index = { exact: new Map(), stems: new Map(), loose: new Map(), suffixes: [], unspaced: new Map(), longestStem: 0 };
    const add = (map, key, entry) => { if (!map.has(key)) map.set(key, []); map.get(key).push(entry); };
    for (const raw of new Set(phrases)) {
      // Each word is normalised like the text; `*` marks survive at its ends. Most phrases of the table
      // are already in that form (lower case, letters, spaces): they skip the normalisation.
      const words = CLEAN.test(raw) && raw.normalize('NFKC') === raw ? raw.split(' ') : String(raw).trim().split(/\s+/).flatMap((word) => {
        const parts = norm(word.replace(/^\*|\*$/g, '')).split(/[\s']+/).filter(Boolean);
        if (!parts.length) return [];
        if (word.startsWith('*')) parts[0] = '*' + parts[0];
        if (word.endsWith('*')) parts[parts.length - 1] += '*';
        return parts;
      });
      if (!words.length) continue;
      const phrase = words.join(' ');
      if (UNSPACED.test(phrase)) { add(index.unspaced, phrase[0], phrase.replace(/\*/g, '')); continue; }
      const first = words[0];
      if (first.startsWith('*')) index.suffixes.push(words);
      else if (first.endsWith('*')) { add(index.stems, first.slice(0, -1), words); index.longestStem = Math.max(index.longestStem, first.length); }
      else {
        add(index.exact, first, words);
        if (first.length >= 6) add(index.loose, first.slice(0, 3), words);
      }
    }
    return index;
  };
  // Every occurrence of a phrase of the index in the (normalised) text: [start, end, matched text].
  const spans = (index, text, loose = false) => {
    if (!index || !text) return [];
    const found = [];
    const toks = tokens(text);
    const fits = (words, i) => {
      if (i + words.length > toks.length) return false;
      for (let j = 0; j < words.length; j += 1) if (!wordFits(words[j], toks[i + j][0], loose)) return false;
      return true;
    };
    for (let i = 0; i < toks.length; i += 1) {
      const word = toks[i][0];
      const candidates = loose && word.length >= 6 ? [...(index.loose.get(word.slice(0, 3)) || [])] : [...(index.exact.get(word) || [])];
      for (let k = 1; k <= Math.min(word.length, index.longestStem); k += 1) candidates.push(...(index.stems.get(word.slice(0, k)) || []));
      for (const words of index.suffixes) candidates.push(words);
      for (const words of candidates) {
        if (fits(words, i)) found.push([toks[i][1], toks[i + words.length - 1][2], text.slice(toks[i][1], toks[i + words.length - 1][2])]);
      }
    }
    if (index.unspaced.size) {
      for (let p = 0; p < text.length; p += 1) {
        for (const phrase of index.unspaced.get(text[p]) || []) {
          if (text.startsWith(phrase, p)) found.push([p, p + phrase.length, phrase]);
        }
      }
    }
    return found;
  };

  // The lists of some languages (all of them, or the page's language with English), compiled once.
  const tables = new Map();
  const tableOf = (codes) => {
    const key = codes.join(',');
    if (tables.has(key)) return tables.get(key);
    const langs = codes.map((c) => LEXICON.languages[c]).filter(Boolean);
    const gather = (pick) => langs.flatMap((lang) => pick(lang) || []);
    const table = {
      actions: CATEGORIES.map((category) => [category, compile(gather((l) => (l.actions || {})[category]))]),
      safe: compile(gather((l) => l.safe)),
      negative: compile(gather((l) => l.negative)),
      generic: compile(gather((l) => l.generic)),
      progress: compile(gather((l) => l.progress)),
      warnings: compile(gather((l) => l.warnings)),
      reversible: compile(gather((l) => l.reversible)),
      views: compile(gather((l) => l.views)),
      totals: compile(gather((l) => l.totals)),
    };
    tables.set(key, table);
    return table;
  };
  const ALL = Object.keys(LEXICON.languages);
  // Language-neutral lists: nouns of one-time login codes ("Send code" is a login step), and of cookies
  // ("Accept all" on a cookie banner grants nothing irreversible).
  const CODES = compile(LEXICON.code_words || []);
  const COOKIES = compile(LEXICON.cookie_words || []);
  // The page's language (<html lang>, "pt-BR" → pt), when the table has it (language.js).
  const languageOf = (lang) => (__LANGUAGE_OF__)(LEXICON, lang);

  const covers = (outer, inner) => outer[0] <= inner[0] && outer[1] >= inner[1] && outer[1] - outer[0] > inner[1] - inner[0];
  // Warning words ("permanently", "cannot be undone", "are you sure"), not those inside a longer words
  // of a total ("최종 결제금액", final amount).
  const warnings = (T, text) => {
    const totals = spans(T.totals, text, true);
    return spans(T.warnings, text, true).filter((w) => !totals.some((t) => covers(t, w)));
  };
  // Words that say it cannot be undone: nothing they qualify is reversible.
  const irreversible = (T, text) => warnings(T, text).length > 0;
  // Every destructive phrase in the text that no safe/negative phrase covers; longest first. A delete
  // or cancel whose text names a reversible thing ("remove from wishlist", "clear filters") is safe,
  // unless the text says it is permanent (in several languages the trash and the basket are one word).
  // An action word right after a word of looking ("Review transfer", "Translate post") is not done yet.
  const hits = (T, text, loose = false, keepReversible = false) => {
    // Shields match exactly: a loose shield ("remover") would hide the very word it resembles ("remove").
    const shields = [...spans(T.safe, text), ...spans(T.negative, text)];
    const views = spans(T.views, text);
    const reversible = !keepReversible && spans(T.reversible, text).length > 0 && !irreversible(T, text);
    const viewed = (span) => views.some((v) => covers(v, span) || (v[1] <= span[1] && !text.slice(v[1], span[1]).trim())
      || (v[1] <= span[0] && !text.slice(v[1], span[0]).trim()));
    const found = [];
    for (const [category, index] of T.actions) {
      if (reversible && REVERSIBLE_CATEGORIES.has(category)) continue;
      for (const span of spans(index, text, loose)) {
        if (shields.some((s) => covers(s, span) || (s[0] === span[0] && s[1] === span[1])) || viewed(span)) continue;
        found.push([category, ...span]);
      }
    }
    return found.sort((a, b) => (b[2] - b[1]) - (a[2] - a[1]) || a[1] - b[1]);
  };
  // The whole text is made of phrases of these lists (and numbers): "OK", "Yes, continue", "Next →".
  const onlyOf = (text, ...lists) => {
    if (!text) return false;
    let rest = text;
    for (const index of lists) for (const [start, end] of spans(index, text)) rest = rest.slice(0, start) + ' '.repeat(end - start) + rest.slice(end);
    return rest.replace(/[\p{N}\s'\-]/gu, '') === '';
  };
  const known = (T, text) => [T.safe, T.negative, T.generic, T.progress, T.reversible, T.views, ...T.actions.map((a) => a[1])]
    .some((index) => spans(index, text).length > 0);
  const startsWith = (index, text) => spans(index, text).some(([start]) => start === 0);

  // An amount of money: a currency sign, an ISO code or a common currency word next to a number (any
  // script's digits).
  const CURRENCY = '[€$£¥₽₴₹₩₺₪₫฿₦₱₸₾₼৳֏]|(?<![\\p{L}])(?:[A-Z]{3}|zł|kč|Kč|Ft|kr|lei|лв|грн|руб|тг|сум|сом|сомони|сомонӣ|драм|лари|ман|din|kn|Rp|RM|Rs|đ|тенге|تومان|ریال|ر\\.س|د\\.إ|ج\\.م|ש"ח|บาท|টাকা|रु|रू|円|元|원|ብር|ரூ|රු|៛|ကျပ်|روپے|KSh|TSh|USh|₵|GH₵|FCFA|CFA|TL|so\\Wm|сўм)(?![\\p{L}])';
  const MONEY = new RegExp(`(?:${CURRENCY})\\s?[\\p{Nd}]|[\\p{Nd}][\\p{Nd}\\s.,٬'’]*\\s?(?:${CURRENCY})`, 'u');
  // Icon names (class names, data-icon, an icon font's ligature) of controls without a name: what the
  // icon shows (lexicon.json `icons`: category → words; `safe`: close, menu, search...).
  const ICONS = Object.entries(LEXICON.icons || {}).map(([category, words]) => [category, compile(words)]);
  const iconOf = (facts) => {
    const raw = `${facts.icon || ''} ${(String(facts.context || '').match(/class: ([^·]*)/) || ['', ''])[1]}`;
    const text = raw.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/(\p{L})(\p{N})/gu, '$1 $2').toLowerCase()
      .replace(/[^\p{L}\p{N}]+/gu, ' ').trim();
    if (!text) return null;
    const found = ICONS.filter(([category, index]) => category !== 'safe' && spans(index, text).length);
    if (found.length) return found[0][0];
    return ICONS.some(([category, index]) => category === 'safe' && spans(index, text).length) ? 'safe' : null;
  };
  // Letters of scripts that no language of the table is written in (Ethiopic, Tamil, Khmer...).
  const OTHER_SCRIPT = /(?![\p{Script=Latin}\p{Script=Cyrillic}\p{Script=Greek}\p{Script=Armenian}\p{Script=Georgian}\p{Script=Hebrew}\p{Script=Arabic}\p{Script=Devanagari}\p{Script=Bengali}\p{Script=Thai}\p{Script=Hangul}\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}])\p{L}/u;
  const NON_ACTION_ROLES = new Set(['checkbox', 'radio', 'textbox', 'searchbox', 'combobox', 'option', 'tab',
    'slider', 'spinbutton', 'switch', 'listbox', 'menuitemcheckbox', 'menuitemradio', 'treeitem', 'gridcell', 'row']);
  const BUTTON_TYPES = new Set(['submit', 'button', 'reset', 'image']);

  const verdict = (destructive, category, reason, judge = false) => ({ destructive, category, reason, judge });

  // An address that commits when it is opened (a GET that acts): its last path segment, or its last
  // two joined, is a committing word ("/orders/7/cancel", "/checkout/complete"), or its query says so
  // ("?confirm=1", "?action=delete"). Words are data (lexicon.json: url_commits, url_commit_keys,
  // url_action_keys); ids and numbers in the path are skipped.
  const URL_COMMITS = LEXICON.url_commits || {};
  const URL_YES_KEYS = new Set(LEXICON.url_commit_keys || []);
  const URL_ACTION_KEYS = new Set(LEXICON.url_action_keys || []);
  const URL_FORMATS = new Set(LEXICON.url_formats || []);
  // A path segment as the server routes it: no `;params`, no format suffix (addresses.py `segment`).
  const segment = (text) => {
    let base = text;
    for (let i = 0; i < 3 && base.includes('%'); i += 1) {
      try { base = decodeURIComponent(base); } catch (e) { break; /* kept as it is, as squash does */ }
    }
    base = base.split(';')[0];
    const dot = base.lastIndexOf('.');
    return dot > 0 && URL_FORMATS.has(base.slice(dot + 1).toLowerCase()) ? base.slice(0, dot) : base;
  };
  const squash = (s) => {
    let text = String(s);
    try { text = decodeURIComponent(text); } catch (e) { /* keep it encoded */ }
    return text.normalize('NFKC').toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '');
  };
  const urlCommits = (href) => {
    // Parsed by hand: the classifier also runs where there is no URL class (policy-check's context).
    const parts = /^(?:([a-z][a-z0-9+.-]*):)?(?:\/\/[^/?#]*)?([^?#]*)(?:\?([^#]*))?/i.exec(String(href || ''));
    if (!parts || (parts[1] && !/^https?$/i.test(parts[1]))) return null;
    const segments = parts[2].split('/').map((x) => squash(segment(x)))
      .filter((x) => x && !/^\d+$/.test(x) && !/^[0-9a-f]{12,}$/.test(x) && !/\d{4,}/.test(x));
    const last = segments[segments.length - 1];
    const pair = segments.slice(-2).join('');
    for (const word of [pair, last]) if (word && Object.hasOwn(URL_COMMITS, word)) return [URL_COMMITS[word], word];
    for (const pairText of String(parts[3] || '').split('&')) {
      if (!pairText) continue;
      const at = pairText.indexOf('=');
      const k = at < 0 ? pairText : pairText.slice(0, at);
      const v = at < 0 ? '' : pairText.slice(at + 1);
      const key = squash(k.replace(/\+/g, ' '));
      const value = squash(v.replace(/\+/g, ' '));
      if (URL_YES_KEYS.has(key) && /^(1|true|yes|y|on|)$/.test(value)) return [URL_COMMITS[key] || 'submit', `${k}=${v}`];
      if (URL_ACTION_KEYS.has(key) && Object.hasOwn(URL_COMMITS, value)) return [URL_COMMITS[value], `${k}=${v}`];
    }
    return null;
  };
  const safe = (reason, judge = false) => verdict(false, 'safe', reason, judge);

  // A dialog's question that the control answers with its own words ("Turn off 2-step verification?" ·
  // "Turn off"): whatever the language, the button does what the question asks.
  const answersQuestion = (name, context) => {
    const question = (context.split(/[?？؟;]/)[0] || '').slice(0, 160);
    if (!/[?？؟;]/.test(context.slice(0, 170))) return false;
    const words = tokens(name).map((t) => t[0]).filter((w) => w.length > 2 || UNSPACED.test(w));
    return words.length > 0 && words.every((w) => question.includes(w));
  };

  // What the signals say the control commits, independent of language (null: nothing).
  const committing = (T, facts, contextText, contextHit) => {
    const category = (fallback) => (contextHit ? contextHit[0] : fallback);
    if (facts.confirm) return ['the page asks to confirm', category('submit')];
    if (facts.payment) return ['its form takes payment details', 'pay'];
    const warns = warnings(T, contextText).length > 0;
    if (facts.dialog && (warns || contextHit)) return ['a dialog that warns', category('delete')];
    if (warns) return ['the text next to it warns', category('submit')];
    if (facts.review) return ['it commits a review step', category('submit')];
    if (facts.consent) return ['its form accepts terms (a ticked box that links to them)', 'accept'];
    if (facts.message) return ['it sends the message typed in its form', category('send')];
    // An amount: the page's amount signal, money in the text, or a total's words beside a number.
    if (facts.amount || MONEY.test(String(facts.context || ''))
        || (/\p{Nd}/u.test(String(facts.context || '')) && spans(T.totals, contextText, true).length)) {
      return ['an amount sits in its form', category('pay'), 'amount'];
    }
    if (facts.danger) return ['it is styled as dangerous', category('delete')];
    return null;
  };

  // "Step 2 of 4", "Paso 2 de 4", "2/4": where a wizard is (language-neutral: two numbers joined by a
  // slash or one or two short words). 'before' the last step, 'last', or null (no counter).
  const STEP = /(\p{Nd}{1,2})\s*(?:\/|[\p{L}\p{M}]{1,4}(?:\s[\p{L}\p{M}]{1,3})?)\s*(\p{Nd}{1,2})(?![\p{Nd}.,:])/u;
  // Where a step counter is: around the control (its context), else the page's (facts.step).
  const stepText = (facts) => [facts.context, facts.step].map((t) => String(t || '')).find((t) => STEP.test(t)) || '';
  const stepOf = (facts) => {
    const found = STEP.exec(stepText(facts));
    if (!found) return null;
    const [at, of] = [Number(found[1]), Number(found[2])];
    if (!(of >= 2 && of <= 10 && at >= 1 && at <= of)) return null;
    return at < of ? 'before' : 'last';
  };
  // "Continue" beside a price is a step of the way (shipping, a seat) unless the page is the last step:
  // a step counter says so, or a summary with a total and nothing left to fill in. A review step, a
  // payment form, a dialog or (without a counter) words of the action around it are not on the way.
  const onTheWay = (T, facts, signal, contextHit, contextText) => {
    if (signal[2] !== 'amount' || facts.dialog) return false;
    const step = stepOf(facts);
    if (step) return step === 'before';
    if (contextHit) return false;
    return !(!Number(facts.editable) && spans(T.totals, contextText, true).length > 0);
  };

  const decide = (T, facts) => {
    const role = norm(facts.role);
    const type = norm(facts.type);
    const tag = norm(facts.tag);
    const method = norm(facts.form_method);
    const name = norm(facts.name) || (BUTTON_TYPES.has(type) ? norm(facts.value) : '');
    const href = String(facts.href || '');
    const isLink = (role === 'link' || (tag === 'a' && !role)) && !/^\s*(javascript:|#|$)/i.test(href || (tag === 'a' ? 'x' : ''));
    const submits = type === 'submit' || type === 'image' || tag === 'form';
    const postForm = submits && !!method && method !== 'get';

    // Ticking, choosing and typing can be undone; the button that sends the form is what commits. What an
    // element does natively goes before the role it claims: a submit button or a link named a checkbox
    // still submits or opens.
    const native = submits || (tag === 'a' && !/^\s*(javascript:|#|$)/i.test(href));
    if ((!native && NON_ACTION_ROLES.has(role)) || (tag === 'input' && type && !BUTTON_TYPES.has(type)) || tag === 'select' || tag === 'textarea'
        || (tag === 'label' && !role)) {
      return safe(`a ${role || type || tag || 'field'} is not an action`);
    }
    // A link or a navigation to an address that acts when opened: held like the button it stands for.
    if (isLink || facts.navigation) {
      const byUrl = urlCommits(href);
      if (byUrl) return verdict(true, byUrl[0], `its address commits ("${byUrl[1]}")`);
      // A link of the site's navigation (menu, sidebar, header, footer) to an address that does not
      // act opens a page, whatever it is called ("Bookings", "Book a room").
      if (isLink && facts.in_nav && /^\s*(https?:|\/|\.|\?|[^:#]+($|[/?#]))/i.test(href)) {
        return safe('a link of the site\'s navigation opens a page');
      }
    }
    // A disclosure shows or hides part of the page ("▸ Show 2 replies", aria-expanded, <summary>).
    if (facts.disclosure && !facts.dialog && !postForm && !submits) return safe('it shows or hides part of the page');
    // A control that first opens a dialog or menu ("Empty trash…", aria-haspopup) commits nothing yet.
    if (!facts.dialog && (/(…|\.\.\.)\s*$/.test(String(facts.name || '')) || facts.haspopup)) {
      return safe('it opens a dialog or menu first');
    }
    // In a dialog that warns it cannot be undone, emptying or removing is permanent, whatever it names.
    const contextText = norm(facts.context);
    const found = hits(T, name, false, !!facts.dialog && irreversible(T, contextText));
    // What removing "from" a reversible-sounding list does depends on the list: a cart shows prices, a
    // trash (the same word in several languages) does not.
    const listRemoval = !found.length && !facts.dialog && hits(T, name, false, true).some((h) => REVERSIBLE_CATEGORIES.has(h[0]))
      && !MONEY.test(String(facts.context || ''));
    if (facts.bulk) {
      // The effect is the chosen option ("Suspend"), whatever the button says ("Apply", "Go").
      const bulk = hits(T, norm(facts.bulk))[0];
      if (bulk) return verdict(true, bulk[0], `applies the bulk action "${facts.bulk}"`);
      if (!found.length) return safe(`applies the bulk action "${facts.bulk}"`, true);
    }
    const contextHit = hits(T, contextText, true)[0] || null;
    if (!name) {
      // Activated inside a closed shadow root: what it was cannot be read, so the judge looks.
      if (facts.opaque) return safe('a control inside a closed component (nothing of it can be read)', true);
      const icon = iconOf(facts);
      if (icon === 'safe') return safe('an icon of an ordinary control (close, menu, search...)');
      if (icon) return verdict(true, icon, `icon-only control (${icon} icon)`);
      const signal = committing(T, facts, contextText, contextHit);
      if (signal && (postForm || facts.dialog || facts.payment || facts.review || (submits && facts.message))) {
        return verdict(true, signal[1], `a control without a name: ${signal[0]}`, true);
      }
      // Nothing says what it does: the judge looks (a plain button of a search form only moves the page).
      return safe('no name and no telling icon', !isLink && !(method === 'get' && !submits));
    }
    const hit = found[0];
    if (hit && !(startsWith(T.negative, name) && hit[1] > 0)) {
      const [category, , , phrase] = hit;
      // In a section about a reversible thing (a cart, a filter list, favourites): removing from it is
      // harmless, and "buy" there leads from the cart to the checkout, where the order is placed.
      const rawHeading = String(facts.heading || String(facts.context || '').split(' · ')[0]);
      const heading = norm(rawHeading);
      if (heading && !/[?？؟]/.test(rawHeading) && spans(T.reversible, heading).length && !facts.payment && !facts.dialog
          && !irreversible(T, name) && (category === 'delete' || category === 'pay' || category === 'order')) {
        const prices = MONEY.test(String(facts.context || ''));
        return safe(`"${phrase}" in a section about "${heading.slice(0, 40)}"`, category === 'delete' && !prices);
      }
      if (isLink && NAVIGABLE.has(category) && !(facts.dialog || facts.payment || facts.confirm)) {
        return safe(`"${phrase}" is a link to the page where it is done`);
      }
      if (submits && method === 'get' && GET_SAFE.has(category)) return safe('a GET form only asks for a page');
      if (category === 'send' && spans(CODES, name).length) return safe(`"${phrase}" sends a one-time login code`);
      if (category === 'accept' && spans(COOKIES, `${name} ${contextText}`).length) return safe(`"${phrase}" answers a cookie banner`);
      return verdict(true, category, `"${phrase}"`);
    }
    if (onlyOf(name, T.negative) || startsWith(T.negative, name)) return safe(`"${name}" declines or steps back`);
    if (listRemoval) return safe(`"${name}" removes from a list`, true);
    // In a dialog, a button that repeats its question's words ("Leave group X?" · "Leave") does it.
    if (facts.dialog && !isLink && answersQuestion(name, String(facts.context || '').normalize('NFKC').toLowerCase())) {
      return verdict(true, contextHit ? contextHit[0] : 'submit', `"${name}" answers the dialog's question`, true);
    }
    // A confirming word beside other words ("Agree and sign up", "Accept and create account"): in a form
    // that commits, it agrees to what the form says. A ticked box that links to terms says the same.
    if (submits && postForm) {
      const safeSpans = spans(T.safe, name);
      const agrees = !onlyOf(name, T.generic, T.progress) && spans(T.generic, name)
        .some((g) => !safeSpans.some((s) => covers(s, g) || (s[0] === g[0] && s[1] === g[1])));
      if (agrees) return verdict(true, 'accept', `"${name}" agrees in a form that commits`);
      if (facts.consent) return verdict(true, 'accept', `"${name}" where its form accepts terms`);
    }
    if (onlyOf(name, T.safe, T.negative, T.progress, T.generic, T.reversible) && (spans(T.safe, name).length || spans(T.reversible, name).length)) {
      // "Update", "Save" of a form the user edited may change a live record (an order's address, a
      // price): the judge looks. Not a sign-in (a secret typed) and not a way to a review.
      const edited = (facts.fields || []).some((f) => f.filled) || Number(facts.editable) > 0;
      const signIn = (facts.fields || []).some((f) => f.secret && f.filled);
      return safe(`"${name}" is an ordinary step`, submits && postForm && edited && !signIn && !spans(T.views, name).length);
    }
    // A price on the button itself ("Renew for 35.00 BYN", "Give 100 kr"): clicking it spends money.
    if (MONEY.test(String(facts.name || facts.value || '')) && !isLink
        && !spans(T.safe, name).length && !spans(T.reversible, name).length) {
      return verdict(true, contextHit && NAVIGABLE.has(contextHit[0]) ? contextHit[0] : 'pay', 'a price on the button', true);
    }
    // "Continue to review", "Check the details", "Review transfer": it shows or leads to a page where the
    // action is looked at, not done (an action word after the word of looking was not counted).
    if (spans(T.views, name).length && (spans(T.progress, name).length || !found.length)) {
      return safe(`"${name}" leads to a review`);
    }
    const generic = onlyOf(name, T.generic, T.progress);
    const progress = generic && !spans(T.generic, name).length;
    const signal = committing(T, facts, contextText, contextHit);
    if (generic) {
      if (submits && method === 'get') return safe('a GET form only asks for a page');
      if (signal && progress && onTheWay(T, facts, signal, contextHit, contextText)) {
        // A step counter that says it is not the last step is what the page is: no judge (a request that
        // commits anyway is held at the effect gate, with a card made from it).
        return safe(`"${name}" moves on (${signal[0]}, not the last step)`, stepOf(facts) !== 'before');
      }
      if (signal) return verdict(true, signal[1], `"${name}" where ${signal[0]}`, true);
      if (!progress && contextHit) return verdict(true, contextHit[0], `"${name}" confirms "${contextHit[3]}"`, true);
      if (!progress && postForm) return verdict(true, 'submit', `"${name}" submits a form (${method})`, true);
      if (progress && facts.dialog && contextHit) return verdict(true, contextHit[0], `"${name}" confirms "${contextHit[3]}"`, true);
      // "Continue" where a step counter says this is not the last step ("step 1 of 3", "2/4"): it moves
      // on, by what the page is (a request that commits anyway is held at the effect gate).
      if (progress && stepOf(facts) === 'before') {
        return safe(`"${name}" moves on (step ${stepText(facts).match(STEP)[0]})`);
      }
      // A confirming word with nothing around it that says what it confirms ("Finish", "OK"): the judge looks.
      return safe(`"${name}" moves on`, postForm || (!progress && !isLink));
    }
    // Words the table does not know (another script, another verb): what the control does decides.
    if (!isLink && answersQuestion(name, String(facts.context || '').normalize('NFKC').toLowerCase())) {
      return verdict(true, contextHit ? contextHit[0] : 'submit', `"${name}" answers the dialog's question`, true);
    }
    if (signal && onTheWay(T, facts, signal, contextHit, contextText) && stepOf(facts) === 'before') {
      return safe(`"${name}" moves on (${signal[0]}, step ${stepText(facts).match(STEP)[0]})`);
    }
    if (signal && (postForm || facts.dialog || facts.payment || facts.review || facts.danger || facts.confirm
        || (submits && (facts.message || facts.consent)))) {
      return verdict(true, signal[1], `"${name}" where ${signal[0]}`, true);
    }
    if (isLink) return safe('a link');
    // Words no language of the table knows: the rules let it pass; the judge looks when the control sits
    // in a form or a dialog, or when its script is one the table lacks.
    const unknown = !known(T, name) && /\p{L}{2}/u.test(name);
    const foreign = unknown && OTHER_SCRIPT.test(name);
    // A plain button of a search (GET) form sends nothing: it changes the page itself (a date picker's
    // month arrows and days), whatever it says.
    const pageOnly = method === 'get' && !submits && !isLink;
    return safe('no destructive wording', postForm || (!!signal && !!facts.amount)
      || (unknown && !pageOnly && (!!method || !!facts.dialog)) || foreign);
  };

  const RANK = (v) => (v.destructive ? 2 : v.judge ? 1 : 0);
  const one = (facts) => {
    // The page's language (with English) first; words it does not know at all are looked up in every
    // language of the table.
    const lang = languageOf(facts.lang);
    if (lang) {
      const T = tableOf(lang === 'en' ? ['en'] : [lang, 'en']);
      const name = norm(facts.name) || norm(facts.value);
      if (!name || known(T, name)) return decide(T, facts);
    }
    return decide(tableOf(ALL), facts);
  };
  // A control whose visible text differs from its accessible name is judged by both: the more committing
  // verdict stands, and says which words it went by.
  return (facts) => {
    const byName = one(facts);
    if (!facts.text || norm(facts.text) === norm(facts.name)) return byName;
    const byText = one({ ...facts, name: facts.text });
    if (RANK(byText) <= RANK(byName)) return byName;
    return { ...byText, reason: `${byText.reason} (it shows "${String(facts.text).slice(0, 60)}", named "${String(facts.name).slice(0, 60)}")` };
  };
})()
