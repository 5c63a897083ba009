// Browser Copilot's page extractor: evaluated in the page by the framework (never by the model), in
// Playwright's utility world (observer.js), where page scripts cannot see or replace it.
// Returns the page's interactive elements, numbered, and an outline of its visible text.
// Elements are stamped `data-bc-id="N"` (and same-origin iframes `data-bc-frame="K"`) so that the
// model's code can reach element N through `el(N)`; the previous observation's other stamps are
// removed, so a number is valid for one observation only. Same-origin iframes and open shadow roots are
// walked; cross-origin frames are counted. Secret values (passwords, OTPs, card data) are masked.
// The default view lists the elements of the viewport and of one more screen below it, and the whole of
// the focused form and of an open modal, then up to MAX_FAR more of the next screens; elements are
// numbered region by region (above the viewport, in it, below it), so the observation marks each region
// once. In full-page mode every element is listed. Long runs of links outside that window are folded
// into one line per list (`folds`), and each element in a table row, list item or card says which
// (`row`), so that rows alike are one line each (observation.py).
// The outline keeps the page's words: text is grouped by the block that lays it out (links and
// buttons stay inside their sentence), repeated items (cards, list items, table rows) are one line
// each, and every cut says how much it left out. Elements that something covers are marked by
// hit-testing (those behind an open modal as `behind`, counted in one line); an open modal and error
// texts next to form fields are reported.
(opts) => {
  const full = !!opts.full;
  const MAX_NAME = 80;
  const MAX_VALUE = 60;
  const TEXT_BUDGET = full ? opts.fullTextBudget || 20000 : opts.textBudget || 900;
  const LINE_MAX = full ? TEXT_BUDGET : opts.lineMax || 450;
  const ITEM_MAX = 300;
  const MAX_ELEMENTS = full ? 6000 : opts.maxElements || 150;
  // Past the default window, the default view lists this many more, up to FAR_BOTTOM (compactly: see
  // `folds` and `row`).
  const MAX_FAR = full ? 0 : opts.maxFar === undefined ? 150 : opts.maxFar;
  // A select's options: the first few (all of them up to a point in full-page mode), with the count.
  const MAX_OPTIONS = full ? 40 : opts.maxOptions || 6;
  // Full-page mode folds a run of at least this many links of one list outside the default window.
  const FOLD_MIN = opts.foldMin || 12;
  const top = window;
  const vw = top.innerWidth;
  const vh = top.innerHeight;
  // The default window: the viewport and one more screen below it.
  const WINDOW_BOTTOM = vh * 2;
  // Past it, the default view lists up to MAX_FAR elements down to this far (and as far up).
  const FAR_BOTTOM = vh * (opts.farScreens || 4);
  const FAR_ABOVE = FAR_BOTTOM - vh;

  // Numbers: a node that keeps its number keeps its stamp (no DOM write, nothing for the page's own
  // observers to react to); the previous observation's other stamps are removed at the end (unstamp).
  const previous = top.__bcMarked || [];
  const marked = [];
  top.__bcMarked = marked;
  const stamps = new Map();
  const stamp = (node, attr, value) => {
    if (node.getAttribute(attr) !== value) node.setAttribute(attr, value);
    if (!stamps.has(node)) { stamps.set(node, new Set()); marked.push(node); }
    stamps.get(node).add(attr);
  };
  const unstamp = () => {
    for (const old of previous) {
      for (const attr of ['data-bc-id', 'data-bc-frame']) {
        if (!(stamps.get(old) || new Set()).has(attr)) old.removeAttribute(attr);
      }
    }
  };

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

  const counts = { above: 0, below: 0, side: 0, hidden_frames: 0 };
  let frameSeq = 0;
  const seen = new Set();
  const candidates = [];

  // Where an element is: above the viewport, in it, below it, or off to the side; `near` when the
  // default window (the viewport and one more screen below) holds it.
  const consider = (el, chain, dx, dy) => {
    const role = roleOf(el);
    if (!role || seen.has(el)) return;
    seen.add(el);
    // A link hidden from assistive technology (a decorative thumbnail) is a duplicate of a visible one.
    if (role === 'link' && el.closest('[aria-hidden="true"]')) return;
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
    let region = 'view';
    if (x + r.width <= 0 || x >= vw) region = 'side';
    else if (y + r.height <= 0) region = 'above';
    else if (y >= vh) region = 'below';
    const near = region === 'view' || (region === 'below' && y < WINDOW_BOTTOM);
    const reach = near || (region === 'below' && y < FAR_BOTTOM) || (region === 'above' && y + r.height > -FAR_ABOVE);
    candidates.push({ el, target, role, chain: chain.slice(), inView: region === 'view', region, near, reach, r });
  };

  // ---- Outline: text grouped by the block that lays it out ----------------------------------------
  // Per element (cached): the block that owns its text, whether the text is hidden, and whether it
  // is the text of an interactive element (already named in the element list).
  const infoCache = new Map();
  const info = (el) => {
    let found = infoCache.get(el);
    if (found) return found;
    const parent = parentOf(el);
    const up = parent ? info(parent) : { owner: el, skip: false, inter: false, inline: false };
    const tag = el.tagName;
    if (up.skip || SKIP.has(tag) || NO_TEXT.has(tag) || el.getAttribute('aria-hidden') === 'true') {
      found = { owner: up.owner, skip: true, inter: true };
    } else {
      const style = styleOf(el);
      const display = style.display;
      if (display === 'none') found = { owner: up.owner, skip: true, inter: true };
      else {
        const inline = display.startsWith('inline') || display === 'contents';
        const inter = up.inter || names(el, tag);
        found = { owner: inline && parent ? up.owner : el, skip: style.visibility === 'hidden', inter, tag };
      }
    }
    infoCache.set(el, found);
    return found;
  };
  // Is `el` one of several alike siblings (cards in a grid, rows of a list)?
  const repeated = (el) => {
    const parent = el.parentElement;
    if (!parent || parent.childElementCount < 2) return false;
    let alike = 0;
    let looked = 0;
    for (let sib = parent.firstElementChild; sib && looked < 24; sib = sib.nextElementSibling, looked += 1) {
      if (sib.tagName === el.tagName && sib.className === el.className) alike += 1;
      if (alike >= 2) return true;
    }
    return false;
  };
  const itemCache = new Map();
  // The item (row, list item, card) a block belongs to: its blocks share one line.
  const itemOf = (block) => {
    if (itemCache.has(block)) return itemCache.get(block);
    let item = block;
    let node = block;
    for (let depth = 0; node && depth < 5; depth += 1, node = node.parentElement) {
      const tag = node.tagName;
      if (tag === 'BODY' || tag === 'MAIN' || tag === 'HTML' || tag === 'TABLE' || tag === 'UL' || tag === 'OL') break;
      if (tag === 'TR' || node.getAttribute('role') === 'row') { item = node; break; }
      const len = node.textContent.length;
      if (len > ITEM_MAX) break;
      if (node !== block && (node.matches(ITEM_SELECTOR) || repeated(node))) { item = node; break; }
      if (node === block && node.matches(ITEM_SELECTOR)) { item = node; break; }
    }
    itemCache.set(block, item);
    return item;
  };
  const inViewCache = new Map();
  // A block's text counts when the block is rendered (not in a closed <details>) and, in viewport
  // mode, when the block is on screen.
  const blockInView = (block, dy) => {
    let ok = inViewCache.get(block);
    if (ok === undefined) {
      if (!full) {
        const r = block.getBoundingClientRect();
        ok = r.height > 0 && r.top + dy + r.height > 0 && r.top + dy < vh;
      } else ok = true;
      if (ok) ok = !block.checkVisibility || block.checkVisibility();
      inViewCache.set(block, ok);
    }
    return ok;
  };
  const HEADING = /^H([1-6])$/;
  const segments = [];
  let seg = null;
  const addTextNode = (node, dy) => {
    const value = node.nodeValue;
    if (!value || !/\S/.test(value)) {
      if (seg && value) seg.text += ' ';
      return;
    }
    const parent = node.parentElement || (node.parentNode && node.parentNode.host);
    if (!parent) return;
    const inf = info(parent);
    if (inf.skip) return;
    const block = inf.owner;
    if (!blockInView(block, dy)) return;
    const item = itemOf(block);
    if (!seg || seg.item !== item) {
      seg = { item, block, text: '', plain: false, blocks: 1 };
      const level = HEADING.exec(block.tagName);
      if (level && item === block) seg.text = '#'.repeat(Number(level[1])) + ' ';
      else if (block.getAttribute('role') === 'heading' && item === block) {
        seg.text = '#'.repeat(Number(block.getAttribute('aria-level')) || 2) + ' ';
      }
      segments.push(seg);
    } else if (seg.block !== block) {
      // A new block in the same item: `name | price | button`; a term and its definition: `term: definition`.
      const term = seg.block.tagName === 'DT' && block.tagName === 'DD';
      seg.text = seg.text.replace(/\s+$/, '') + (term ? ': ' : ' | ');
      seg.block = block;
      seg.blocks += 1;
    }
    seg.text += value;
    if (!inf.inter) seg.plain = true;
  };
  const addBreak = (el) => {
    if (!seg || !seg.text) return;
    const inf = info(el);
    if (!inf.skip && inf.owner === seg.block) seg.text = /[.,;:!?]\s*$/.test(seg.text) ? seg.text + ' ' : seg.text.replace(/\s+$/, '') + ', ';
  };
  // Terms and their definitions read as one line: the term's segment is continued by its definition.
  const joinDefinitions = () => {
    for (let i = 1; i < segments.length; i += 1) {
      const prev = segments[i - 1];
      const cur = segments[i];
      if (prev && cur && prev.block.tagName === 'DT' && cur.block.tagName === 'DD' && prev.item === prev.block
        && cur.item === cur.block && prev.block.parentElement === cur.block.parentElement) {
        prev.text = prev.text.replace(/\s+$/, '') + ': ' + cur.text;
        prev.plain = prev.plain || cur.plain;
        prev.block = cur.block;
        segments.splice(i, 1);
        i -= 1;
      }
    }
  };

  const walk = (root, chain, dx, dy) => {
    const doc = root.ownerDocument || root;
    // No filter callback (a call per node costs more than the walk): skipped subtrees are stepped over.
    const walker = doc.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
    const past = () => {
      while (!walker.nextSibling()) if (!walker.parentNode()) return null;
      return walker.currentNode;
    };
    let node = walker.currentNode.nodeType === 1 ? walker.currentNode : walker.nextNode();
    // Default view: a table row or list item wholly above or below the viewport has no text for the
    // outline (its elements are still considered); one measurement instead of one per cell.
    let off = null;
    while (node) {
      if (node.nodeType === 3) {
        if (off && !off.contains(node)) off = null;
        if (!off) addTextNode(node, dy);
        node = walker.nextNode();
        continue;
      }
      const el = node;
      if (SKIP.has(el.tagName)) { node = past(); continue; }
      if (!full && !off && (el.tagName === 'TR' || el.tagName === 'LI')) {
        const r = el.getBoundingClientRect();
        if (r.top + dy >= vh || r.bottom + dy <= 0) off = el;
      }
      consider(el, chain, dx, dy);
      const tag = el.tagName;
      if (tag === 'BR') addBreak(el);
      else if (tag === 'IMG' && seg && el.alt && el.closest('a[href]')) {
        // An image link's words (alt text) stay in their sentence like a text link's.
        const inf = info(el);
        if (!inf.skip && inf.owner === seg.block) seg.text += ' ' + el.alt + ' ';
      }
      if (el.shadowRoot) { deep = true; walk(el.shadowRoot, chain, dx, dy); }
      if (tag === 'IFRAME' || tag === 'FRAME') {
        let inner = null;
        try { inner = el.contentDocument; } catch (e) { inner = null; }
        const r = el.getBoundingClientRect();
        const onScreen = full || (r.top + dy + r.height > 0 && r.top + dy < WINDOW_BOTTOM);
        if (inner && inner.documentElement && onScreen && visible(el)) {
          frameSeq += 1;
          deep = true;
          stamp(el, 'data-bc-frame', String(frameSeq));
          seg = null;
          walk(inner.documentElement, chain.concat([frameSeq]), dx + r.left + el.clientLeft, dy + r.top + el.clientTop);
          seg = null;
        } else if (!inner && visible(el)) {
          counts.hidden_frames += 1;
        }
      }
      node = walker.nextNode();
    }
  };

  // Whether a shadow root or a frame was walked (observer.js does not reuse such a page's extraction).
  let deep = false;
  walk(document.documentElement, [], 0, 0);
  top.__bcDeep = deep;
  joinDefinitions();

  // ---- What covers what: overlays, the open modal -------------------------------------------------
  const labelText = (box) => {
    const ids = box.getAttribute('aria-labelledby');
    if (ids) {
      const text = squash(ids.split(/\s+/).map((id) => box.ownerDocument.getElementById(id)).filter(Boolean)
        .map((n) => n.textContent).join(' '));
      if (text) return text;
    }
    const aria = squash(box.getAttribute('aria-label'));
    if (aria) return aria;
    const heading = box.querySelector('h1, h2, h3, h4, h5, h6, [role=heading], legend, strong, b');
    if (heading && squash(heading.innerText)) return squash(heading.innerText);
    return '';
  };
  const isDialog = (n) => {
    const role = n.getAttribute('role');
    return n.tagName === 'DIALOG' || role === 'dialog' || role === 'alertdialog' || n.getAttribute('aria-modal') === 'true';
  };
  const boxCache = new Map();
  // The overlay a point lands in: the nearest dialog, or fixed/sticky/absolute layer, named.
  const describe = (hit) => {
    let layer = null;
    let dialog = null;
    for (let n = hit; n && n.tagName !== 'BODY' && n.tagName !== 'HTML'; n = parentOf(n)) {
      if (isDialog(n)) { dialog = n; break; }
      if (!layer) {
        const pos = styleOf(n).position;
        if (pos === 'fixed' || pos === 'sticky' || pos === 'absolute') layer = n;
      } else if (styleOf(n).position === 'fixed') layer = n;
    }
    const box = dialog || layer;
    if (!box) return null;
    if (boxCache.has(box)) return boxCache.get(box);
    let name = labelText(box);
    let kind = 'dialog';
    if (!dialog) {
      const inner = box.querySelector('dialog, [role=dialog], [role=alertdialog], [aria-modal=true]');
      if (!name && inner) name = labelText(inner);
      else if (!inner) {
        const r = box.getBoundingClientRect();
        const pos = styleOf(box).position;
        kind = pos === 'absolute' ? (box.getAttribute('role') || 'layer') : r.height * r.width > vw * vh * 0.5 ? 'overlay' : 'banner';
      }
    }
    const found = { kind, name: clean(name, 60), box };
    boxCache.set(box, found);
    return found;
  };
  const coverOf = (c) => {
    const target = c.target;
    const root = target.getRootNode();
    if (!root.elementFromPoint) return null;
    const win = target.ownerDocument.defaultView;
    const r = c.r;  // measured when it was considered: nothing has moved since
    const left = Math.max(r.left, 0);
    const right = Math.min(r.right, win.innerWidth);
    const topY = Math.max(r.top, 0);
    const bottom = Math.min(r.bottom, win.innerHeight);
    if (right - left < 1 || bottom - topY < 1) return null;
    const hit = root.elementFromPoint((left + right) / 2, (topY + bottom) / 2);
    if (!hit || hit === target || target.contains(hit)) return null;
    for (let n = target; n; n = parentOf(n)) if (n === hit) return null;  // the point lands on an ancestor
    const label = hit.closest('label');
    if (label && (label.control === c.el || label.contains(c.el))) return null;
    if (c.el.labels && Array.from(c.el.labels).some((l) => l.contains(hit))) return null;
    const cover = describe(hit);
    if (!cover || cover.box.contains(target)) return null;
    return cover;
  };
  // An open modal: a modal dialog, or a fixed layer over the middle of the viewport.
  let modal = null;
  let modalBox = document.querySelector('dialog:modal') || Array.from(
    document.querySelectorAll('[aria-modal=true], [role=alertdialog]')).find((n) => visible(n)) || null;
  if (modalBox) modal = clean(labelText(modalBox), 80) || (modalBox.getAttribute('role') || 'dialog');
  else {
    // A fixed layer over a quarter of the viewport or more, at its middle, blocks the page.
    const middle = document.elementFromPoint(vw / 2, vh / 2);
    for (let n = middle; n && n.tagName !== 'BODY' && n.tagName !== 'HTML'; n = parentOf(n)) {
      if (styleOf(n).position !== 'fixed') continue;
      const r = n.getBoundingClientRect();
      if (r.width * r.height >= vw * vh * 0.25) {
        const cover = describe(middle);
        modal = (cover && cover.name) || clean(labelText(n), 80) || (cover ? cover.kind : 'overlay');
        modalBox = n;
      }
      break;
    }
  }
  // The form being filled in (the focused field's), listed whole wherever its fields are.
  let focused = document.activeElement;
  while (focused && focused.shadowRoot && focused.shadowRoot.activeElement) focused = focused.shadowRoot.activeElement;
  const focusForm = focused && focused !== document.body && focused.closest ? focused.closest('form, [role=form]') : null;

  // ---- Elements: which ones, in which order, names, numbers ---------------------------------------
  // Listed: the default window, the focused form and the open modal (everything in full-page mode).
  // Numbered region by region (above the viewport, in it, below it, to the side), so that the
  // observation names each region once; within a region in document order.
  const RANK = { above: 0, view: 1, below: 2, side: 3 };
  const kept = [];
  let far = 0;
  for (const c of candidates) {
    if (full || c.near || (modalBox && modalBox.contains(c.el)) || (focusForm && focusForm.contains(c.el))) kept.push(c);
    else if (c.reach && far < MAX_FAR) { far += 1; c.far = true; kept.push(c); }
    else if (c.region === 'side') counts.side += 1;
    else counts[c.region === 'above' ? 'above' : 'below'] += 1;
  }
  kept.sort((a, b) => RANK[a.region] - RANK[b.region]);  // stable: document order within a region
  for (const c of kept) {
    c.name = clean(labelOf(c.el), MAX_NAME);
    if (c.el.tagName === 'A') c.href = c.el.href || c.el.getAttribute('href') || '';
  }
  const namedHrefs = new Set(kept.filter((c) => c.href && c.name).map((c) => c.href));
  const elements = [];
  const nodes = [];
  for (const c of kept) {
    if (c.href !== undefined) {
      // A thumbnail or icon link to where a named link goes: that link is listed, not this one.
      if (!c.name && namedHrefs.has(c.href)) continue;
    }
    if (elements.length >= MAX_ELEMENTS) { counts[c.region === 'above' ? 'above' : 'below'] += 1; continue; }
    const n = elements.length + 1;
    stamp(c.target, 'data-bc-id', String(n));
    const item = { n, role: c.role, name: c.name, state: stateOf(c.el, c.role) };
    if (c.chain.length) item.frame = c.chain;
    if (c.href !== undefined && !c.name) item.name = clean(c.el.getAttribute('href') || '', MAX_NAME);
    if (c.region !== 'view') item.region = c.region;
    elements.push(item);
    nodes.push(c);
  }

  // Elements the modal covers are the page behind it: marked `behind` (the observation counts them in
  // one line instead of listing each); what something else covers is marked one by one. Outside the
  // viewport nothing can be hit-tested: there every element of the page outside the modal is behind it.
  const behindModal = (box) => !!modalBox && (box === modalBox || box.contains(modalBox) || modalBox.contains(box));
  const behind = new Set();
  top.__bcBehind = behind;
  let covered = 0;
  let modalCover = null;
  const outside = [];
  for (let i = 0; i < elements.length; i += 1) {
    if (!nodes[i].inView) {
      if (modalBox && !modalBox.contains(nodes[i].el)) outside.push(i);
      continue;
    }
    const cover = coverOf(nodes[i]);
    if (!cover) continue;
    elements[i].covered = cover.name ? `${cover.kind} «${cover.name}»` : cover.kind;
    if (behindModal(cover.box)) {
      elements[i].behind = true;
      behind.add(nodes[i].target);
      modalCover = modalCover || elements[i].covered;
    } else covered += 1;
  }
  if (outside.length) {
    if (!modalCover) {
      const own = describe(modalBox);
      modalCover = own && own.name ? `${own.kind} «${own.name}»` : (own ? own.kind : 'dialog');
    }
    for (const i of outside) {
      elements[i].covered = modalCover;
      elements[i].behind = true;
      behind.add(nodes[i].target);
    }
  }

  // A long run of links of one list (a table of contents, a footer, "see also") outside the default
  // window (in the default view: past it) is one line: its numbers (each still works as el(N)), count,
  // list and names. Not a run of links all named alike ("Details" in each row): those are rows.
  const folds = [];
  {
    const LISTS = 'ul, ol, nav, menu, dl, table, aside, footer, [role=list], [role=navigation], [role=menu], [role=tree]';
    const listOf = (el) => {
      let found = null;
      for (let n = el.closest(LISTS); n; n = n.parentElement && n.parentElement.closest(LISTS)) found = n;
      return found;
    };
    const foldable = (i) => elements[i].role === 'link' && (full ? !nodes[i].near : !!nodes[i].far) && !elements[i].behind;
    let i = 0;
    while (i < elements.length) {
      if (!foldable(i)) { i += 1; continue; }
      const list = listOf(nodes[i].el);
      let j = i + 1;
      while (list && j < elements.length && foldable(j) && elements[j].region === elements[i].region
        && listOf(nodes[j].el) === list) j += 1;
      if (list && j - i >= FOLD_MIN && elements.slice(i + 1, j).some((e) => e.name !== elements[i].name)) {
        const id = folds.length + 1;
        for (let k = i; k < j; k += 1) elements[k].fold = id;
        const WORDS = { NAV: 'navigation', ASIDE: 'sidebar', FOOTER: 'footer', TABLE: 'table' };
        const before = list.previousElementSibling;
        const heading = before && /^H[1-6]$/.test(before.tagName) ? squash(before.textContent) : '';
        folds.push({ id, label: clean(labelText(list) || heading, 40) || WORDS[list.tagName] || 'list', first: i + 1, last: j });
      }
      i = j;
    }
  }

  // Error texts next to form fields.
  const errors = [];
  const addError = (n) => {
    if (!n || !visible(n)) return;
    const text = clean(n.innerText, 160);
    if (text && !errors.includes(text) && errors.length < 6) errors.push(text);
  };
  for (const field of document.querySelectorAll('[aria-invalid=true]')) {
    const ids = `${field.getAttribute('aria-errormessage') || ''} ${field.getAttribute('aria-describedby') || ''}`;
    for (const id of ids.split(/\s+/).filter(Boolean)) addError(document.getElementById(id));
  }
  for (const n of document.querySelectorAll('form [role=alert], form [aria-live=assertive]')) addError(n);

  // ---- The outline, within its budget; every cut says how much it left out ------------------------
  const outline = [];
  let textUsed = 0;
  let left = 0;
  let cutSomething = false;
  for (const s of segments) {
    // Separators standing alone at a line's ends or in runs ("| | |", "» ›") say nothing; those inside
    // words ("https://", "-5 °C", "/usr/bin") are words.
    let line = squash(s.text).replace(/(^|\s)[|·•»«>›‹\/-](?:\s+[|·•»«>›‹\/-])+(?=\s|$)/g, '$1|')
      .replace(/^(?:[|·•»«>›‹\/-](?:\s+|$))+|(?:(?:^|\s+)[|·•»«>›‹\/-])+$/g, '');
    if (!/[\p{L}\p{N}]/u.test(line)) continue;
    // Only the words of links and buttons, already listed as elements: not repeated.
    if (!s.plain && line.length <= MAX_NAME) continue;
    if (textUsed >= TEXT_BUDGET) { left += line.length + 1; continue; }
    if (line.length > LINE_MAX) {
      const kept = cutWords(line, LINE_MAX);
      const hint = cutSomething || full ? '' : '; observe with full_page=true';
      line = `${kept} [cut: ${grouped(line.length - kept.length + 1)} more characters${hint}]`;
      cutSomething = true;
    }
    const room = TEXT_BUDGET - textUsed;
    if (line.length > room + 40) {
      const kept = cutWords(line, Math.max(room, 40));
      left += line.length - kept.length + 1;
      line = kept;
    }
    outline.push(line);
    textUsed += line.length + 1;
  }
  if (left > 0) {
    cutSomething = true;
    outline.push(`… [cut: ${grouped(left)} more characters; ${full ? 'read the rest with page.innerText() in code' : 'observe with full_page=true'}]`);
  }

  // Same name twice ("Details", "Add to cart"): say which row or item each one belongs to, by the row's
  // first cell, and when that is not enough, its first cell that no other such row has ("Edit" in
  // «Carlos Garcia · carlos.garcia2@example.test»); rows alike in every cell get their place (#2).
  // The row itself is in the outline: it is not repeated here.
  const cellCache = new Map();
  const CONTROL = 'a[href], button, summary, label, select, textarea, [role=button], [role=link]';
  // The row or item an element belongs to: a table row, list item, article, fieldset, or a repeated
  // item such as a product card (not merely the paragraph around it).
  const rowOf = (node) => {
    const row = node.closest('tr, li, article, [role=row], [role=listitem], fieldset');
    if (row) return row;
    const owner = info(node).owner;
    if (!owner || owner === node) return null;
    const item = itemOf(owner);
    return item !== owner || repeated(owner) ? item : null;
  };
  // Its cells: the text of each block, and of each link or button, in order.
  const cellsOf = (box) => {
    if (box.textContent.length > 600) return [];
    if (cellCache.has(box)) return cellCache.get(box);
    const cells = [];
    let key = null;
    const texts = box.ownerDocument.createTreeWalker(box, NodeFilter.SHOW_TEXT);
    for (let t = texts.nextNode(); t; t = texts.nextNode()) {
      if (!/\S/.test(t.nodeValue)) continue;
      const parent = t.parentElement;
      const inf = parent && info(parent);
      if (!inf || inf.skip) continue;
      const control = inf.inter ? parent.closest(CONTROL) : null;
      if (!cells.length || key !== (control || inf.owner)) cells.push('');
      key = control || inf.owner;
      cells[cells.length - 1] += t.nodeValue;
    }
    const found = cells.map((c) => clean(c, 40)).filter((c) => /[\p{L}\p{N}]/u.test(c));
    cellCache.set(box, found);
    return found;
  };
  const byName = new Map();
  for (let i = 0; i < elements.length; i += 1) {
    if (elements[i].behind || elements[i].fold) continue;
    const list = byName.get(elements[i].name) || [];
    list.push(i);
    byName.set(elements[i].name, list);
  }
  for (const group of byName.values()) {
    if (group.length < 2) continue;
    const name = elements[group[0]].name;
    // A row with nothing but the element ("Syntax" under "SELECT" in a table of contents): the row
    // around it tells it apart.
    const rowCells = (node) => {
      for (let box = rowOf(node), depth = 0; box && depth < 3; box = box.parentElement && rowOf(box.parentElement), depth += 1) {
        const cells = cellsOf(box).filter((c) => c !== name && !(c.endsWith('…') && name.startsWith(c.slice(0, -1))));
        if (cells.length) return cells;
      }
      return [];
    };
    const rows = group.map((i) => rowCells(nodes[i].target));
    const firsts = new Map();
    for (const cells of rows) if (cells.length) firsts.set(cells[0], (firsts.get(cells[0]) || 0) + 1);
    const place = new Map();
    for (let g = 0; g < group.length; g += 1) {
      const cells = rows[g];
      if (!cells.length) continue;
      let context = cells[0];
      if (firsts.get(context) > 1) {
        const others = rows.filter((r, k) => k !== g);
        const unique = cells.slice(1).find((c) => !others.some((r) => r.includes(c)));
        if (unique) context += ` · ${unique}`;
        else {
          place.set(context, (place.get(context) || 0) + 1);
          context += ` #${place.get(context)}`;
        }
      }
      elements[group[g]].context = context;
    }
  }
  // The row (table row, list item, card) of each element whose row some element names by `context`:
  // the observation writes rows alike as one line each.
  const rowIds = new Map();
  const named = new Set();
  for (let i = 0; i < elements.length; i += 1) {
    if (elements[i].behind || elements[i].fold) continue;
    const row = rowOf(nodes[i].target);
    if (!row) continue;
    if (!rowIds.has(row)) rowIds.set(row, rowIds.size + 1);
    nodes[i].row = rowIds.get(row);
    if (elements[i].context) named.add(nodes[i].row);
  }
  for (let i = 0; i < elements.length; i += 1) if (named.has(nodes[i].row)) elements[i].row = nodes[i].row;
  const CAPTCHA_FRAME = 'iframe[src*="recaptcha" i], iframe[src*="hcaptcha" i], iframe[src*="challenges.cloudflare.com" i],'
    + ' iframe[title*="captcha" i], iframe[title*="challenge" i], .g-recaptcha, .h-captcha, .cf-turnstile, [data-sitekey]';
  const captcha = !!document.querySelector(CAPTCHA_FRAME)
    || /i'?m not a robot|verify (that )?you are (a )?human|я не робот|ich bin kein roboter|je ne suis pas un robot|no soy un robot/i
      .test(outline.join(' ') + ' ' + elements.map((e) => e.name).join(' '));
  unstamp();
  const scroller = document.scrollingElement || document.documentElement;
  return {
    url: location.href,
    title: document.title,
    viewport: { width: vw, height: vh, scrollY: Math.round(scroller.scrollTop), height_total: Math.round(scroller.scrollHeight) },
    elements,
    folds,
    counts: { ...counts, covered, behind: behind.size },
    outline,
    truncated: cutSomething,
    modal,
    errors,
    signals: { captcha },
  };
}
