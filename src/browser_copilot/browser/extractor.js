// Browser Copilot's page extractor: evaluated in the page by the framework (never by the model).
// Returns the page's interactive elements, numbered, and a short outline of its visible text.
// Elements are stamped `data-bc-id="N"` (and same-origin iframes `data-bc-frame="K"`) so that the
// model's code can reach element N through `el(N)`; the previous observation's stamps are removed
// first, so a number is valid for one observation only. Same-origin iframes and open shadow roots are
// walked; cross-origin frames are counted. Secret values (passwords, OTPs, card data) are masked.
(opts) => {
  const full = !!opts.full;
  const MAX_NAME = 80;
  const MAX_VALUE = 60;
  const TEXT_BUDGET = full ? 6000 : opts.textBudget || 700;
  const MAX_ELEMENTS = full ? 6000 : opts.maxElements || 150;
  const top = window;
  const vw = top.innerWidth;
  const vh = top.innerHeight;

  // Forget the previous observation's numbers.
  for (const old of top.__bcMarked || []) {
    old.removeAttribute('data-bc-id');
    old.removeAttribute('data-bc-frame');
  }
  const marked = [];
  top.__bcMarked = marked;

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
  const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'SVG', 'HEAD', 'META', 'LINK']);
  const BLOCK = new Set([
    'P', 'LI', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'DT', 'DD', 'PRE', 'BLOCKQUOTE',
    'CAPTION', 'FIGCAPTION', 'LEGEND', 'LABEL', 'SUMMARY', 'DIV', 'SECTION', 'ARTICLE', 'MAIN',
    'HEADER', 'FOOTER', 'NAV', 'ASIDE', 'FORM', 'FIELDSET', 'TABLE', 'UL', 'OL', 'DL', 'BODY',
  ]);
  // Table parts: a row is one outline line, `cell | cell | cell`.
  const TABLE_PARTS = new Set(['THEAD', 'TBODY', 'TFOOT', 'TR', 'TD', 'TH', 'COLGROUP']);
  const isSecretField = __IS_SECRET__;

  const clean = (s, max) => {
    const t = (s || '').replace(/\s+/g, ' ').trim();
    return t.length > max ? t.slice(0, max - 1) + '…' : t;
  };

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
    if (el.isContentEditable && el.getAttribute('contenteditable') !== null) return 'textbox';
    if (el.hasAttribute('onclick') || (el.hasAttribute('tabindex') && el.tabIndex >= 0 && !explicit)) {
      return explicit || 'clickable';
    }
    return null;
  };

  const textOf = (el) => {
    // Visible text, with image alt text and nested aria-labels, as an accessible name would use.
    let out = '';
    const walk = (node) => {
      if (out.length > MAX_NAME * 2) return;
      if (node.nodeType === 3) { out += node.nodeValue; return; }
      if (node.nodeType !== 1 || SKIP.has(node.tagName)) {
        if (node.nodeType === 1 && node.tagName === 'SVG') {
          const t = node.querySelector('title');
          if (t) out += ' ' + t.textContent + ' ';
        }
        return;
      }
      const label = node !== el && node.getAttribute('aria-label');
      if (label) { out += ' ' + label + ' '; return; }
      if (node.tagName === 'IMG') { out += ' ' + (node.getAttribute('alt') || '') + ' '; return; }
      if (node.getAttribute('aria-hidden') === 'true') return;
      for (const child of node.childNodes) walk(child);
      if (node.shadowRoot) for (const child of node.shadowRoot.childNodes) walk(child);
    };
    walk(el);
    return out;
  };

  const labelOf = (el) => {
    const doc = el.ownerDocument;
    const ids = el.getAttribute('aria-labelledby');
    if (ids) {
      const text = ids.split(/\s+/).map((id) => doc.getElementById(id)).filter(Boolean)
        .map((n) => n.textContent).join(' ');
      if (clean(text, MAX_NAME)) return text;
    }
    const aria = el.getAttribute('aria-label');
    if (aria && aria.trim()) return aria;
    const tag = el.tagName;
    if (tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA') {
      const type = (el.getAttribute('type') || '').toLowerCase();
      if (['submit', 'button', 'reset'].includes(type)) return el.value || type;
      if (type === 'image') return el.getAttribute('alt') || el.value || 'image';
      if (el.labels && el.labels.length) {
        return Array.from(el.labels).map((l) => textOf(l)).join(' ');
      }
      return el.getAttribute('placeholder') || el.getAttribute('title') || el.getAttribute('name') || '';
    }
    const text = textOf(el);
    if (clean(text, MAX_NAME)) return text;
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
      parts.push(`options=${el.options.length}`);
    } else if (role === 'checkbox' || role === 'radio' || role === 'switch') {
      const checked = el.tagName === 'INPUT' ? el.checked : el.getAttribute('aria-checked') === 'true';
      if (checked) parts.push('checked');
    } else if (tag === 'INPUT' || tag === 'TEXTAREA') {
      const type = (el.getAttribute('type') || 'text').toLowerCase();
      if (!['submit', 'button', 'reset', 'image', 'file'].includes(type)) {
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

  const visible = (el) => {
    if (el.checkVisibility && !el.checkVisibility({ visibilityProperty: true })) return false;
    return el.getClientRects().length > 0;
  };

  // A hidden checkbox/radio styled through its label: act on the label, which Playwright retargets.
  const proxyOf = (el) => {
    if (el.tagName !== 'INPUT' || !el.labels) return null;
    for (const label of el.labels) if (visible(label)) return label;
    return null;
  };

  const elements = [];
  const counts = { above: 0, below: 0, hidden_frames: 0 };
  let frameSeq = 0;
  const seen = new Set();

  const consider = (el, chain, dx, dy) => {
    const role = roleOf(el);
    if (!role || seen.has(el)) return;
    seen.add(el);
    let target = el;
    if (!visible(el)) {
      target = (role === 'checkbox' || role === 'radio') ? proxyOf(el) : null;
      if (!target || seen.has(target)) return;
      seen.add(target);
    }
    const r = target.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) return;
    const y = r.top + dy;
    const x = r.left + dx;
    const inView = y + r.height > 0 && y < vh && x + r.width > 0 && x < vw;
    if (!full && !inView) {
      if (y + r.height <= 0) counts.above += 1; else counts.below += 1;
      return;
    }
    if (elements.length >= MAX_ELEMENTS) { counts.below += 1; return; }
    const n = elements.length + 1;
    target.setAttribute('data-bc-id', String(n));
    marked.push(target);
    const name = clean(labelOf(el), MAX_NAME);
    const item = { n, role, name, state: stateOf(el, role) };
    if (chain.length) item.frame = chain.slice();
    if (el.tagName === 'A') {
      const href = el.getAttribute('href') || '';
      if (!name) item.name = clean(href, MAX_NAME);
    }
    if (full && !inView) item.offscreen = true;
    elements.push(item);
  };

  // Outline: visible text blocks in reading order, headings marked, within a character budget.
  const outline = [];
  let textUsed = 0;
  const addText = (raw) => {
    // Separators left over once link texts are taken out ("| | |", "»") say nothing.
    const line = raw.replace(/(\s*[|·•»«>›‹<\/-]\s*){2,}/g, ' | ').replace(/^[\s|·•»«>›‹<\/-]+|[\s|·•»«>›‹<\/-]+$/g, '');
    if (textUsed >= TEXT_BUDGET || !/[\p{L}\p{N}]/u.test(line)) return;
    const room = TEXT_BUDGET - textUsed;
    const cut = line.length > room ? line.slice(0, Math.max(0, room - 1)) + '…' : line;
    outline.push(cut);
    textUsed += cut.length + 1;
  };
  // Text of interactive elements and of their labels is already in the element list: not repeated.
  const INTERACTIVE_TAGS = new Set(['A', 'BUTTON', 'INPUT', 'SELECT', 'TEXTAREA', 'SUMMARY', 'OPTION']);
  const listedText = (node) => INTERACTIVE_TAGS.has(node.tagName) || seen.has(node)
    || (node.tagName === 'LABEL' && (node.control || node.hasAttribute('for')));
  const blockText = (el) => {
    if (listedText(el)) return '';
    let out = '';
    for (const child of el.childNodes) {
      if (child.nodeType === 3) out += child.nodeValue;
      else if (child.nodeType === 1 && !SKIP.has(child.tagName) && !BLOCK.has(child.tagName)
        && !TABLE_PARTS.has(child.tagName) && !listedText(child) && !child.querySelector('a,button,input,select,textarea')) {
        const style = child.ownerDocument.defaultView.getComputedStyle(child);
        if (style.display === 'block' || style.display === 'flex' || style.display === 'grid') continue;
        out += child.tagName === 'BR' ? ' ' : (child.innerText || child.textContent || '');
      }
    }
    return clean(out, 160);
  };

  const walk = (root, chain, dx, dy) => {
    const doc = root.ownerDocument || root;
    const walker = doc.createTreeWalker(root, NodeFilter.SHOW_ELEMENT, {
      acceptNode: (node) => (SKIP.has(node.tagName) || SKIP.has(node.tagName.toUpperCase())
        ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
    });
    let el = walker.currentNode.nodeType === 1 ? walker.currentNode : walker.nextNode();
    while (el) {
      consider(el, chain, dx, dy);
      const tag = el.tagName;
      if (textUsed < TEXT_BUDGET && tag === 'TR') {
        const r = el.getBoundingClientRect();
        if ((full || (r.top + dy + r.height > 0 && r.top + dy < vh)) && r.height > 0) {
          const cells = Array.from(el.cells).map((c) => clean(c.innerText, 60)).filter(Boolean);
          if (cells.length) addText(cells.join(' | '));
        }
      } else if (textUsed < TEXT_BUDGET && BLOCK.has(tag) && tag !== 'BODY') {
        const r = el.getBoundingClientRect();
        const y = r.top + dy;
        if ((full || (y + r.height > 0 && y < vh)) && r.height > 0) {
          const text = blockText(el);
          if (text && visible(el)) {
            const level = /^H([1-6])$/.exec(tag);
            addText(level ? '#'.repeat(Number(level[1])) + ' ' + text : text);
          }
        }
      }
      if (el.shadowRoot) walk(el.shadowRoot, chain, dx, dy);
      if (tag === 'IFRAME' || tag === 'FRAME') {
        let inner = null;
        try { inner = el.contentDocument; } catch (e) { inner = null; }
        const r = el.getBoundingClientRect();
        const onScreen = full || (r.top + dy + r.height > 0 && r.top + dy < vh);
        if (inner && inner.documentElement && onScreen && visible(el)) {
          frameSeq += 1;
          el.setAttribute('data-bc-frame', String(frameSeq));
          marked.push(el);
          walk(inner.documentElement, chain.concat([frameSeq]), dx + r.left + el.clientLeft, dy + r.top + el.clientTop);
        } else if (!inner && visible(el)) {
          counts.hidden_frames += 1;
        }
      }
      el = walker.nextNode();
    }
  };

  walk(document.documentElement, [], 0, 0);

  // Same name twice ("Details", "Add to cart"): say which row or item each one belongs to.
  const byName = new Map();
  for (const item of elements) byName.set(item.name, (byName.get(item.name) || 0) + 1);
  for (const item of elements) {
    if (byName.get(item.name) < 2) continue;
    const node = marked.find((m) => m.getAttribute('data-bc-id') === String(item.n));
    const box = node && node.closest('tr, li, article, [role=row], [role=listitem], fieldset');
    if (!box || (box.innerText || '').length > 300) continue;
    const own = clean(node.innerText || '', 200);
    const context = clean((box.innerText || '').replace(own, ' '), 50);
    if (context) item.context = context;
  }
  const CAPTCHA_FRAME = 'iframe[src*="recaptcha" i], iframe[src*="hcaptcha" i], iframe[src*="challenges.cloudflare.com" i],'
    + ' iframe[title*="captcha" i], iframe[title*="challenge" i], .g-recaptcha, .h-captcha, .cf-turnstile, [data-sitekey]';
  const captcha = !!document.querySelector(CAPTCHA_FRAME)
    || /i'?m not a robot|verify (that )?you are (a )?human|я не робот|ich bin kein roboter|je ne suis pas un robot|no soy un robot/i
      .test(outline.join(' ') + ' ' + elements.map((e) => e.name).join(' '));
  const scroller = document.scrollingElement || document.documentElement;
  return {
    url: location.href,
    title: document.title,
    viewport: { width: vw, height: vh, scrollY: Math.round(scroller.scrollTop), height_total: Math.round(scroller.scrollHeight) },
    elements,
    counts,
    outline,
    truncated: textUsed >= TEXT_BUDGET,
    signals: { captcha },
  };
}
