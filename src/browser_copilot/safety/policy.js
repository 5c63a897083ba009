// Browser Copilot's destructive-action classifier (F40): one implementation, used in the page (the
// guard and the pre-flight check of an action's targets) and by `main.py policy-check` (in Node).
//
// It decides on what the control DOES first and on its words second (the words are data:
// lexicon.json, injected for __LEXICON__), and says when a model judge should look (`judge: true`):
// the control commits something (a non-GET form, a review step, payment fields, an amount, a warning
// dialog, danger styling) but its words are generic ("Continue", "OK") or unknown.
//
// Input: DOM facts {tag, role, type, name, value, href, form_action, form_method, context, url} and,
// when the page gave them, signals {dialog, danger, payment, amount, review, editable, bulk, confirm,
// haspopup}.
// Output: {destructive, category, reason, judge}.
(() => {
  const LEXICON = __LEXICON__;
  const CATEGORIES = LEXICON.categories;
  // Categories whose link only opens the page where the action would be done ("Buy now" to a product).
  const NAVIGABLE = new Set(['pay', 'order', 'book', 'transfer', 'withdraw', 'donate', 'publish', 'subscribe',
    'accept', 'submit', 'send']);
  // A GET form only asks for a page: these words there are searches and filters ("Book" in a hotel search).
  const GET_SAFE = new Set(['book', 'submit']);
  const UNSPACED = /[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uac00-\ud7af]/;

  const norm = (s) => String(s || '').normalize('NFKC').toLowerCase()
    .replace(/i\u0307/g, 'i').replace(/[’‘ʼʻ`´]/g, "'")
    .replace(/[^\p{L}\p{M}\p{N}\s'\-]+/gu, ' ').replace(/(^|\s)['\-]+|['\-]+(?=\s|$)/g, ' ')
    .replace(/\s+/g, ' ').trim();
  // Words are runs of letters/digits; apostrophes, hyphens and spaces separate them (so "ordine" is
  // found in "l'ordine"). A phrase is an index entry keyed by its first word (exact, or a stem for
  // `word*`); scripts written without spaces are matched as substrings, keyed by their first character.
  const WORD = /[\p{L}\p{M}\p{N}]+/gu;
  const tokens = (text) => [...text.matchAll(WORD)].map((m) => [m[0], m.index, m.index + m[0].length]);
  const wordFits = (pattern, word) => {
    const head = pattern.startsWith('*');
    const tail = pattern.endsWith('*');
    const core = pattern.slice(head ? 1 : 0, tail ? -1 : undefined);
    if (head && tail) return word.includes(core);
    if (head) return word.endsWith(core);
    if (tail) return word.startsWith(core);
    return word === core;
  };
  const compile = (phrases) => {
    const index = { exact: new Map(), stems: new Map(), suffixes: [], unspaced: new Map(), longestStem: 0 };
    const add = (map, key, entry) => { if (!map.has(key)) map.set(key, []); map.get(key).push(entry); };
    for (const raw of new Set(phrases)) {
      // Each word is normalised like the text; `*` marks survive at its ends.
      const words = String(raw).trim().split(/\s+/).flatMap((word) => {
        const parts = norm(word.replace(/^\*|\*$/g, '')).split(/[\s'\-]+/).filter(Boolean);
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
      else add(index.exact, first, words);
    }
    return index;
  };
  // Every occurrence of a phrase of the index in the (normalised) text: [start, end, matched text].
  const spans = (index, text) => {
    if (!index || !text) return [];
    const found = [];
    const toks = tokens(text);
    const fits = (words, i) => {
      if (i + words.length > toks.length) return false;
      for (let j = 0; j < words.length; j += 1) if (!wordFits(words[j], toks[i + j][0])) return false;
      return true;
    };
    for (let i = 0; i < toks.length; i += 1) {
      const word = toks[i][0];
      const candidates = [...(index.exact.get(word) || [])];
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
  const gather = (pick) => Object.values(LEXICON.languages).flatMap((lang) => pick(lang) || []);
  const ACTIONS = CATEGORIES.map((category) => [category, compile(gather((l) => (l.actions || {})[category]))]);
  const SAFE = compile(gather((l) => l.safe));
  const NEGATIVE = compile(gather((l) => l.negative));
  const GENERIC = compile(gather((l) => l.generic));
  const PROGRESS = compile(gather((l) => l.progress));
  const WARNINGS = compile(gather((l) => l.warnings));

  const covers = (outer, inner) => outer[0] <= inner[0] && outer[1] >= inner[1] && outer[1] - outer[0] > inner[1] - inner[0];
  // Every destructive phrase in the text that no longer safe/negative phrase covers; longest first.
  const hits = (text) => {
    const shields = [...spans(SAFE, text), ...spans(NEGATIVE, text)];
    const found = [];
    for (const [category, rx] of ACTIONS) {
      for (const span of spans(rx, text)) {
        if (!shields.some((s) => covers(s, span) || (s[0] === span[0] && s[1] === span[1]))) found.push([category, ...span]);
      }
    }
    return found.sort((a, b) => (b[2] - b[1]) - (a[2] - a[1]) || a[1] - b[1]);
  };
  // The whole text is made of phrases of these lists (and numbers): "OK", "Yes, continue", "Next →".
  const onlyOf = (text, ...lists) => {
    if (!text) return false;
    let rest = text;
    for (const rx of lists) for (const [start, end] of spans(rx, text)) rest = rest.slice(0, start) + ' '.repeat(end - start) + rest.slice(end);
    return rest.replace(/[\p{N}\s'\-]/gu, '') === '';
  };
  const startsWith = (rx, text) => spans(rx, text).some(([start]) => start === 0);

  const MONEY = /(?:[€$£¥₽₴₹₩₺₪₫฿₦₱₸₾₼]|\b(?:usd|eur|gbp|rub|uah|pln|chf|czk|huf|sek|nok|dkk|ron|bgn|try|jpy|cny|inr|brl|mxn|kzt)\b)\s?\d|\d[\d\s.,]*\s?(?:[€$£¥₽₴₹₩₺₪₫฿₦₱₸₾₼]|\b(?:usd|eur|gbp|rub|uah|pln|chf|czk|huf|sek|nok|dkk|ron|bgn|try|jpy|cny|inr|brl|mxn|kzt|zł|kč|ft|kr|lei|лв|грн|руб|тг|din|kn)(?![\p{L}]))/iu;
  const ICONS = [
    ['delete', /\b(trash|bin|delete|remove|garbage|bin-?icon)\b/i], ['send', /\b(send|paper-?plane)\b/i],
    ['pay', /\b(credit-?card|payment)\b/i],
  ];
  const NON_ACTION_ROLES = new Set(['checkbox', 'radio', 'textbox', 'searchbox', 'combobox', 'option', 'tab',
    'slider', 'spinbutton', 'switch', 'listbox', 'menuitemcheckbox', 'menuitemradio', 'treeitem', 'gridcell', 'row']);
  const BUTTON_TYPES = new Set(['submit', 'button', 'reset', 'image']);

  const verdict = (destructive, category, reason, judge = false) => ({ destructive, category, reason, judge });
  const safe = (reason, judge = false) => verdict(false, 'safe', reason, judge);

  // What the signals say the control commits, independent of language (null: nothing).
  const committing = (facts, contextText, contextHit) => {
    if (facts.confirm) return ['the page asks to confirm', contextHit ? contextHit[0] : 'submit'];
    if (facts.payment) return ['its form takes payment details', 'pay'];
    const warns = spans(WARNINGS, contextText).length > 0;
    if (facts.dialog && (warns || contextHit)) return ['a dialog that warns', contextHit ? contextHit[0] : 'delete'];
    if (warns) return ['the text next to it warns', contextHit ? contextHit[0] : 'submit'];
    if (facts.review) return ['it commits a review step', contextHit ? contextHit[0] : 'submit'];
    if (facts.amount || MONEY.test(String(facts.context || ''))) return ['an amount sits in its form', contextHit ? contextHit[0] : 'pay'];
    if (facts.danger) return ['it is styled as dangerous', contextHit ? contextHit[0] : 'delete'];
    return null;
  };

  const classify = (facts) => {
    const role = norm(facts.role);
    const type = norm(facts.type);
    const tag = norm(facts.tag);
    const method = norm(facts.form_method);
    const name = norm(facts.name) || (BUTTON_TYPES.has(type) ? norm(facts.value) : '');
    const contextText = norm(facts.context);
    const href = String(facts.href || '');
    const isLink = (role === 'link' || (tag === 'a' && !role)) && !/^\s*(javascript:|#|$)/i.test(href || (tag === 'a' ? 'x' : ''));
    const submits = type === 'submit' || type === 'image' || tag === 'form';
    const postForm = submits && !!method && method !== 'get';

    if (NON_ACTION_ROLES.has(role) || (tag === 'input' && type && !BUTTON_TYPES.has(type)) || tag === 'select' || tag === 'textarea') {
      const hit = hits(name)[0];
      if (hit && hit[0] === 'accept' && (role === 'checkbox' || type === 'checkbox')) {
        return verdict(true, 'accept', `ticking "${hit[3]}" accepts terms`);
      }
      return safe(`a ${role || type || tag || 'field'} is not an action`);
    }
    // A control that first opens a dialog or menu ("Empty trash…", aria-haspopup) commits nothing yet.
    if (!facts.dialog && (/(…|\.\.\.)\s*$/.test(String(facts.name || '')) || facts.haspopup)) {
      return safe('it opens a dialog or menu first');
    }
    if (facts.bulk) {
      // The effect is the chosen option ("Suspend"), whatever the button says ("Apply", "Go").
      const bulk = hits(norm(facts.bulk))[0];
      if (bulk) return verdict(true, bulk[0], `applies the bulk action "${facts.bulk}"`);
      if (!hits(name).length) return safe(`applies the bulk action "${facts.bulk}"`, true);
    }
    const contextHit = hits(contextText)[0] || null;
    if (!name) {
      for (const [category, rx] of ICONS) {
        if (rx.test(String(facts.context || ''))) return verdict(true, category, `icon-only control (${category} icon)`);
      }
      const signal = committing(facts, contextText, contextHit);
      if (signal && (postForm || facts.dialog || facts.payment || facts.review)) return verdict(true, signal[1], `a control without a name: ${signal[0]}`, true);
      return safe('no name and no telling icon', postForm);
    }
    const found = hits(name);
    const hit = found[0];
    if (hit && !(startsWith(NEGATIVE, name) && hit[1] > 0)) {
      const [category, , , phrase] = hit;
      const inDialog = facts.dialog || facts.payment || facts.confirm;
      if (isLink && NAVIGABLE.has(category) && !inDialog) return safe(`"${phrase}" is a link to the page where it is done`);
      if (submits && method === 'get' && GET_SAFE.has(category)) return safe('a GET form only asks for a page');
      return verdict(true, category, `"${phrase}"`);
    }
    if (onlyOf(name, NEGATIVE) || startsWith(NEGATIVE, name)) return safe(`"${name}" declines or steps back`);
    if (onlyOf(name, SAFE, NEGATIVE, PROGRESS, GENERIC) && spans(SAFE, name).length) return safe(`"${name}" is an ordinary step`);
    const generic = onlyOf(name, GENERIC, PROGRESS);
    const progress = generic && !spans(GENERIC, name).length;
    const signal = committing(facts, contextText, contextHit);
    if (generic) {
      if (submits && method === 'get') return safe('a GET form only asks for a page');
      if (signal) return verdict(true, signal[1], `"${name}" where ${signal[0]}`, true);
      if (!progress && contextHit) return verdict(true, contextHit[0], `"${name}" confirms "${contextHit[3]}"`);
      if (!progress && postForm) return verdict(true, 'submit', `"${name}" submits a form (${method})`, true);
      if (progress && facts.dialog && contextHit) return verdict(true, contextHit[0], `"${name}" confirms "${contextHit[3]}"`);
      return safe(`"${name}" moves on`, postForm);
    }
    // Words the table does not know (another script, another verb).
    if (signal && (postForm || facts.dialog || facts.payment || facts.review || facts.danger || facts.confirm)) {
      return verdict(true, signal[1], `"${name}" where ${signal[0]}`, true);
    }
    if (isLink) return safe('a link');
    return safe('no destructive wording', postForm || (!!signal && !!facts.amount));
  };
  return classify;
})()
