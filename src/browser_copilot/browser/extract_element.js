// The page extractor's (extractor.js) second part: what one element is. Its role, its name (the
// accessible name's text, labels), whether it holds a secret, its state (value, options, checked...),
// and whether it is visible. Not a script of its own: look.py joins the parts in order into one
// function body, whose names they share.
  const ROLE_BY_INPUT = {
    checkbox: 'checkbox', radio: 'radio', button: 'button', submit: 'button', reset: 'button',
    image: 'button', range: 'slider', number: 'spinbutton', search: 'searchbox', file: 'button',
    color: 'button',
  };
  const ROLES = new Set([
    'button', 'link', 'checkbox', 'radio', 'tab', 'menuitem', 'menuitemcheckbox', 'menuitemradio',
    'option', 'switch', 'combobox', 'textbox', 'searchbox', 'slider', 'spinbutton', 'treeitem',
    'listbox', 'gridcell',
  ]);
  const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'SVG', 'HEAD', 'META', 'LINK', 'svg']);
  // Never part of the outline: a select's options, a textarea's value, datalists.
  const NO_TEXT = new Set(['SELECT', 'OPTION', 'OPTGROUP', 'DATALIST', 'TEXTAREA', 'IFRAME', 'FRAME', 'OBJECT']);
  // One repeated thing per line: a row, a list item, a card (see itemOf).
  const ITEM_SELECTOR = 'li, tr, article, [role=row], [role=listitem], [role=article]';
  // Whose words are an element's name in the element list (a link, a button, a field's label).
  const NAMING_ROLES = new Set(['button', 'link', 'tab', 'menuitem', 'option', 'switch', 'checkbox', 'radio']);
  const names = (el, tag) => (tag === 'A' ? el.hasAttribute('href')
    : tag === 'BUTTON' || tag === 'SUMMARY' || (tag === 'LABEL' && !!el.control)) || NAMING_ROLES.has(el.getAttribute('role'));
  const isSecretField = __IS_SECRET__;

  const squash = (s) => (s || '').replace(/\s+/g, ' ').trim();
  // A cut never falls inside a word.
  const cutWords = (t, max) => {
    if (t.length <= max) return t;
    let cut = t.slice(0, max - 1);
    const space = cut.lastIndexOf(' ');
    if (space > max * 0.5) cut = cut.slice(0, space);
    return cut.replace(/[\s,;:|·-]+$/, '') + '…';
  };
  const clean = (s, max) => cutWords(squash(s), max);
  const grouped = (n) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

  const roleOf = (el) => {
    const explicit = (el.getAttribute('role') || '').split(' ')[0];
    if (explicit && ROLES.has(explicit)) return explicit;
    const tag = el.tagName;
    if (tag === 'A') return el.hasAttribute('href') ? 'link' : null;
    if (tag === 'BUTTON' || tag === 'SUMMARY') return 'button';
    if (tag === 'SELECT') return el.multiple || el.size > 1 ? 'listbox' : 'combobox';
    if (tag === 'TEXTAREA') return 'textbox';
    if (tag === 'INPUT') {
      const type = (el.getAttribute('type') || 'text').toLowerCase();
      if (type === 'hidden') return null;
      if (ROLE_BY_INPUT[type]) return ROLE_BY_INPUT[type];
      if (el.hasAttribute('list')) return 'combobox';
      return type === 'password' ? 'password' : 'textbox';
    }
    if (el.hasAttribute('contenteditable') && el.isContentEditable) return 'textbox';
    if (el.hasAttribute('onclick') || (el.hasAttribute('tabindex') && el.tabIndex >= 0 && !explicit)) {
      return explicit || 'clickable';
    }
    return null;
  };

  // Tags whose boxes are blocks in every ordinary style sheet: their text is a word of its own
  // ("OpenAtlas<br>The free atlas" reads "OpenAtlas The free atlas").
  const BLOCK_TAGS = new Set(['BR', 'DIV', 'P', 'LI', 'UL', 'OL', 'DL', 'DT', 'DD', 'TABLE', 'TR', 'TD', 'TH',
    'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'SECTION', 'ARTICLE', 'HEADER', 'FOOTER', 'NAV', 'ASIDE', 'MAIN',
    'BLOCKQUOTE', 'PRE', 'FIGURE', 'FIGCAPTION', 'ADDRESS', 'HR', 'FORM', 'FIELDSET', 'LEGEND', 'DETAILS']);
  const textOf = (el) => {
    // Visible text, with image alt text and nested aria-labels, as an accessible name would use;
    // never a select's options or a text field's contents. Blocks and line breaks separate words.
    let out = '';
    const walk = (node) => {
      if (out.length > MAX_NAME * 2) return;
      if (node.nodeType === 3) { out += node.nodeValue; return; }
      if (node.nodeType !== 1 || SKIP.has(node.tagName) || NO_TEXT.has(node.tagName)) {
        if (node.nodeType === 1 && node.tagName.toUpperCase() === 'SVG') {
          const t = node.querySelector('title');
          if (t) out += ' ' + t.textContent + ' ';
        }
        return;
      }
      const label = node !== el && node.getAttribute('aria-label');
      if (label) { out += ' ' + label + ' '; return; }
      if (node.tagName === 'IMG') { out += ' ' + (node.getAttribute('alt') || '') + ' '; return; }
      if (node.tagName === 'INPUT') return;
      if (node.getAttribute('aria-hidden') === 'true') return;
      const cached = node !== el && infoCache.get(node);
      const block = node !== el && (BLOCK_TAGS.has(node.tagName) || (cached && cached.owner === node));
      if (block) out += ' ';
      for (const child of node.childNodes) walk(child);
      if (node.shadowRoot) for (const child of node.shadowRoot.childNodes) walk(child);
      if (block) out += ' ';
    };
    walk(el);
    return out;
  };

  const labelOf = (el) => {
    const doc = el.ownerDocument;
    const ids = el.getAttribute('aria-labelledby');
    if (ids) {
      const text = ids.split(/\s+/).map((id) => doc.getElementById(id)).filter(Boolean)
        .map((n) => (n === el || NO_TEXT.has(n.tagName) ? '' : textOf(n))).join(' ');
      if (squash(text)) return text;
    }
    const aria = el.getAttribute('aria-label');
    if (aria && aria.trim()) return aria;
    const tag = el.tagName;
    if (tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA') {
      const type = (el.getAttribute('type') || '').toLowerCase();
      if (['submit', 'button', 'reset'].includes(type)) return el.value || type;
      if (type === 'image') return el.getAttribute('alt') || el.value || 'image';
      if (el.labels && el.labels.length) {
        const text = Array.from(el.labels).map((l) => textOf(l)).join(' ');
        if (squash(text)) return text;
      }
      return el.getAttribute('placeholder') || el.getAttribute('title') || el.getAttribute('name') || '';
    }
    const text = textOf(el);
    if (squash(text)) return text;
    return el.getAttribute('title') || el.getAttribute('placeholder') || '';
  };

  // A secret field (what it is), or a value that is a card number (Luhn) or an IBAN wherever it was typed.
  const luhn = (digits) => {
    let sum = 0;
    for (let i = 0; i < digits.length; i += 1) {
      let d = Number(digits[digits.length - 1 - i]);
      if (i % 2 === 1) { d *= 2; if (d > 9) d -= 9; }
      sum += d;
    }
    return sum % 10 === 0;
  };
  const secretValues = [];  // the values of the secret fields listed: the observer keeps them (observer.js)
  const isSecret = (el) => {
    if (isSecretField(el)) return true;
    const value = (el.value || '').replace(/[\s-]/g, '');
    return (/^\d{13,19}$/.test(value) && luhn(value)) || /^[A-Z]{2}\d{2}[A-Z0-9]{11,30}$/.test(value.toUpperCase());
  };

  const stateOf = (el, role) => {
    const parts = [];
    const tag = el.tagName;
    if (tag === 'SELECT') {
      const picked = Array.from(el.selectedOptions || []).map((o) => clean(o.textContent, 40));
      if (picked.length) parts.push(`value="${picked.join(', ')}"`);
      // The data that lives only in options (payees, accounts): the first few besides the chosen one.
      const listed = [];
      let more = false;
      for (const o of el.options) {
        if (o.selected) continue;
        const t = clean(o.label || o.textContent, 40);
        if (!t) continue;
        if (listed.length >= MAX_OPTIONS) { more = true; break; }
        listed.push(`"${t}"`);
      }
      parts.push(`options=${el.options.length}` + (listed.length ? `: ${listed.join(', ')}${more ? ', …' : ''}` : ''));
    } else if (role === 'checkbox' || role === 'radio' || role === 'switch') {
      const checked = el.tagName === 'INPUT' ? el.checked : el.getAttribute('aria-checked') === 'true';
      if (checked) parts.push('checked');
    } else if (tag === 'INPUT' || tag === 'TEXTAREA') {
      const type = (el.getAttribute('type') || 'text').toLowerCase();
      if (!['submit', 'button', 'reset', 'image', 'file'].includes(type)) {
        if (el.value && isSecret(el)) secretValues.push(el.value);
        if (el.value) parts.push(isSecret(el) ? 'value=<masked>' : `value="${clean(el.value, MAX_VALUE)}"`);
        if (type !== 'text' && type !== 'password' && !ROLE_BY_INPUT[type]) parts.push(`type=${type}`);
      }
      if (type === 'file' && el.files && el.files.length) parts.push(`files=${el.files.length}`);
    } else if (el.isContentEditable && el.textContent) {
      parts.push(`value="${clean(el.textContent, MAX_VALUE)}"`);
    }
    if (isSecret(el)) parts.push('secret');
    for (const [attr, word] of [['aria-expanded', 'expanded'], ['aria-pressed', 'pressed'], ['aria-selected', 'selected']]) {
      const v = el.getAttribute(attr);
      if (v === 'true') parts.push(word);
      else if (v === 'false' && attr === 'aria-expanded') parts.push('collapsed');
    }
    if (el.disabled || el.getAttribute('aria-disabled') === 'true') parts.push('disabled');
    if (el.required || el.getAttribute('aria-required') === 'true') parts.push('required');
    if (el.getAttribute('aria-invalid') === 'true' || (el.validity && el.willValidate && !el.validity.valid && el.value)) parts.push('invalid');
    if (el.readOnly) parts.push('readonly');
    return parts.join(' ');
  };

  const visible = (el) => (el.checkVisibility ? el.checkVisibility({ visibilityProperty: true })
    : el.getClientRects().length > 0);
  const styleOf = (el) => el.ownerDocument.defaultView.getComputedStyle(el);
  const parentOf = (el) => el.parentElement || (el.parentNode && el.parentNode.host) || null;

  // A hidden checkbox/radio styled through its label: act on the label, which Playwright retargets.
  const proxyOf = (el) => {
    if (el.tagName !== 'INPUT' || !el.labels) return null;
    for (const label of el.labels) if (visible(label)) return label;
    return null;
  };
