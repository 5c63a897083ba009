// The guard's knowledge of secret fields (F47), in the page's isolated world: which fields are secret
// (safety/secret.js decides by what a field is; this adds what the guard saw happen to it), their values
// for the app to mask, and the page's other ways of letting a value out through a read. Filled into
// guard.js at `__SECRETS__` (guard.py), called with secret.js's test; `values` takes the windows to walk.
(secretNow) => {
  // A field that was secret once (a password field whose "show" toggle made it type=text) stays secret.
  const wasSecret = new WeakSet();
  const revealed = new Set();
  const revealedIn = (el) => revealed.size > 0 && (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA') && revealed.has(el.value);
  const isSecret = (el) => {
    if (!el || el.nodeType !== 1) return false;
    if (wasSecret.has(el)) return true;
    if (!secretNow(el) && !revealedIn(el)) return false;
    wasSecret.add(el);
    return true;
  };
  // A "show password" toggle makes the field type=text, or puts a text field with its value in its place:
  // the field, or the value, is remembered as it changes, whenever that is (before any look of this
  // world at it). A field holding a remembered value is secret. A text field put in the place of a
  // secret one (one input for another under the same parent, in one batch of changes) is secret too,
  // also while still empty: what is typed into it later is the secret.
  const mark = (el) => { wasSecret.add(el); el.setAttribute('data-bc-secret', ''); };
  new MutationObserver((records) => {
    const lost = new Set();
    for (const r of records) {
      if (r.type === 'attributes') {
        if (String(r.oldValue).toLowerCase() === 'password') mark(r.target);
        continue;
      }
      for (const n of r.removedNodes) {
        if (n.nodeType !== 1) continue;
        for (const i of n.tagName === 'INPUT' ? [n] : n.querySelectorAll('input[type=password i]')) {
          if (!secretNow(i) && !wasSecret.has(i)) continue;
          if (i === n) lost.add(r.target);
          if (i.value) revealed.add(i.value);
        }
      }
    }
    for (const r of records) {
      if (r.type !== 'childList' || !lost.has(r.target)) continue;
      for (const n of r.addedNodes) {
        if (n.tagName === 'INPUT' && ['text', ''].includes((n.getAttribute('type') || '').toLowerCase())) mark(n);
      }
    }
  }).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ['type'], attributeOldValue: true });

  // The element whose value a read of `el` returns: Playwright reads a label, or anything inside one that
  // is not a control itself, as the label's field (its `follow-label` retargeting).
  const readsFrom = (el) => {
    if (el.matches('a, input, textarea, button, select, [role=link], [role=button], [role=checkbox], [role=switch], [role=radio]')
      || el.isContentEditable) return el;
    const label = el.closest('label');
    return (label && label.control) || el;
  };

  // A field's value is part of another element's accessible name when the field sits in that element's
  // label, in its content (a button, a link, a cell...) or is named by its aria-labelledby: a role query
  // matching that name would test the value a character at a time. While the field holds a value, such
  // an element is named without it (its own words as `aria-label`, the field taken out of its
  // aria-labelledby/-describedby).
  const NAMED_BY_CONTENT = 'button, a[href], summary, h1, h2, h3, h4, h5, h6, td, th, tr, option, legend, caption,'
    + ' [role=button], [role=link], [role=tab], [role^=menuitem], [role=option], [role=checkbox], [role=radio],'
    + ' [role=switch], [role=heading], [role=cell], [role=gridcell], [role=columnheader], [role=rowheader],'
    + ' [role=row], [role=treeitem], [role=tooltip]';
  const words = (el) => (el.textContent || '').replace(/\s+/g, ' ').trim().slice(0, 200);
  const nameWithout = (el, from = el) => {
    if (!el.hasAttribute('aria-label') && !el.hasAttribute('aria-labelledby')) el.setAttribute('aria-label', words(from));
  };
  // Across open shadow roots, as an accessible name is computed: a field in a component's shadow root
  // is part of the names of the component's label, row and content too.
  const up = (n) => n.parentElement || (n.parentNode && n.parentNode.host) || null;
  const rootsOf = (field) => {
    const out = [];
    for (let n = field; n;) { const r = n.getRootNode(); out.push(r); n = r.host || null; }
    return out;
  };
  const unname = (field) => {
    const within = rootsOf(field).map((r) => r.host).filter(Boolean).concat([field]);
    let labelled = false;
    for (let a = up(field); a; a = up(a)) {
      if (!labelled && a.tagName === 'LABEL') {
        labelled = true;
        if (a.control && a.control !== field) nameWithout(a.control, a);
      }
      if (a.matches(NAMED_BY_CONTENT)) nameWithout(a);
    }
    // An element named or described by the field, or by anything holding it (its own label, its row, the
    // component it is drawn in), also the field itself: named by those elements' words instead (an
    // input's words are none).
    for (const root of rootsOf(field)) {
      if (!root.querySelectorAll) continue;
      for (const other of root.querySelectorAll('[aria-labelledby], [aria-describedby]')) {
        for (const attr of ['aria-labelledby', 'aria-describedby']) {
          const refs = (other.getAttribute(attr) || '').split(/\s+/).filter(Boolean).map((id) => (root.getElementById
            ? root.getElementById(id) : root.querySelector(`#${CSS.escape(id)}`))).filter(Boolean);
          if (!refs.some((r) => within.some((w) => r === w || r.contains(w)))) continue;
          if (attr === 'aria-labelledby') other.setAttribute('aria-label', refs.map(words).join(' ').trim());
          other.removeAttribute(attr);
        }
      }
    }
  };

  // While a secret field holds a value, the page's copies of it are kept out of the document: in its
  // text (a card drawn as the number is typed, a mirror of what is typed) and its attributes (a `title`
  // tooltip, a `data-` copy, the field's own `value` attribute a render puts back), where a read or a
  // selector (`getByTitle(/^4/)`, `[value^="a"]`, `:has-text()`) would test it a character at a time;
  // and it is kept out of other elements' names again after every render (a "show" box made afresh).
  // The fields that held a value are watched from the first input the guard sees (or the first look that
  // finds one); their shadow roots are watched too. A form control's `value` attribute is its value:
  // only a secret field's own is taken off.
  const held = new Set();
  const watched = new WeakSet();
  const heldValues = () => {
    const out = [];
    for (const f of held) {
      if (!f.isConnected || !f.value) held.delete(f);
      else if (f.value.length >= 4) out.push(f.value);
    }
    return out;
  };
  const SEP = '[\\s./\\-\\u00a0\\u2009\\u200b]?';
  const patternOf = (v) => {
    const digits = v.replace(/\D/g, '');
    const body = digits.length >= 6 && digits.length * 5 >= v.length * 4
      ? digits.split('').join(SEP) : v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    return new RegExp(body, 'g');
  };
  const blank = (text, patterns) => {
    let out = text;
    for (const p of patterns) out = out.replace(p, (m) => '•'.repeat(m.length));
    return out;
  };
  const FORM_VALUE = new Set(['INPUT', 'TEXTAREA', 'SELECT', 'OPTION', 'BUTTON']);
  const FORM_TEXT = new Set(['TEXTAREA', 'OPTION', 'SCRIPT', 'STYLE']);
  const cleanAttributes = (el, patterns, only) => {
    for (const name of only ? [only] : el.getAttributeNames()) {
      if (name === 'value' && FORM_VALUE.has(el.tagName)) continue;
      const v = el.getAttribute(name);
      if (v === null || v.length < 4) continue;
      const out = blank(v, patterns);
      if (out !== v) el.setAttribute(name, out);
    }
  };
  const cleanTree = (node, patterns) => {
    if (node.nodeType === 3) {
      if (node.parentNode && FORM_TEXT.has(node.parentNode.nodeName)) return;  // a form value (a textarea's)
      const out = blank(node.nodeValue, patterns);
      if (out !== node.nodeValue) node.nodeValue = out;
      return;
    }
    if (node.nodeType !== 1 && node.nodeType !== 11) return;
    if (node.nodeType === 1) cleanAttributes(node, patterns);
    const walker = document.createTreeWalker(node, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (n.nodeType === 3) cleanTree(n, patterns);
      else {
        cleanAttributes(n, patterns);
        if (n.shadowRoot) cleanTree(n.shadowRoot, patterns);
      }
    }
  };
  // The page's copy of the value in the attribute goes (a selector could test it a character at a time);
  // the value stays, also where it was the attribute's own (a field the server filled).
  const dropValueAttribute = (el) => {
    const v = el.value;
    if (v && el.type !== 'hidden' && el.getAttribute('value') === v) { el.removeAttribute('value'); if (el.value !== v) el.value = v; }
  };
  const keeper = new MutationObserver((records) => {
    const values = heldValues();
    if (!values.length) return;
    const patterns = values.map(patternOf);
    for (const r of records) {
      if (r.type === 'characterData') cleanTree(r.target, patterns);
      else if (r.type === 'attributes') cleanAttributes(r.target, patterns, r.attributeName);
      else for (const n of r.addedNodes) cleanTree(n, patterns);
    }
    for (const f of held) { dropValueAttribute(f); unname(f); }
  });
  const OBSERVED = { subtree: true, childList: true, characterData: true, attributes: true };
  const hold = (field) => {
    if (!field.value) return;
    if (!held.has(field)) {
      held.add(field);
      const patterns = heldValues().map(patternOf);
      for (const root of rootsOf(field)) {
        if (watched.has(root)) continue;
        watched.add(root);
        keeper.observe(root, OBSERVED);
        cleanTree(root, patterns);  // what the page copied before the guard met it
      }
    }
    dropValueAttribute(field);
    unname(field);
  };
  document.addEventListener('input', (e) => {
    const field = e.composedPath()[0];
    if (field && field.value && isSecret(field)) hold(field);
  }, true);

  // The values of secret fields (open shadow roots included): the app masks them in whatever comes back.
  // Asked at each call's start and end: each field found holding a value is held (above), so its value
  // is out of other elements' names and its copies out of the document before the code runs, also where
  // the user typed it before the guard met the page. Each secret field is marked `data-bc-secret`, which
  // a screenshot masks, whatever made it secret.
  // A secret field's `value` attribute that a page keeps in step with what is typed (React does) would
  // answer a selector's question about it (`[value^="a"]`, one character at a time): it is taken off
  // (the field's value is not changed by it). A component whose closed shadow root draws what none of
  // its own children do cannot be read: it is marked `data-bc-opaque`, which a screenshot masks.
  const drawsUnseen = (el) => el.tagName.includes('-') && !el.shadowRoot && el.getClientRects().length > 0
    && ![...el.childNodes].some((n) => {
      const range = el.ownerDocument.createRange();
      range.selectNode(n);
      return range.getClientRects().length > 0;
    });
  const values = (windows) => {
    const found = [];
    const rows = new Map();  // a row of one-character boxes holds one code: their values joined
    const walk = (root) => {
      for (const el of root.querySelectorAll('*')) {
        if ((el.tagName === 'INPUT' || el.tagName === 'TEXTAREA') && isSecret(el)) {
          if (!el.hasAttribute('data-bc-secret')) el.setAttribute('data-bc-secret', '');
          if (el.value) { found.push(el.value); hold(el); }
          let row = el.form || el.parentElement;
          while (!el.form && row && row.parentElement && row.querySelectorAll('input').length < 2) row = row.parentElement;
          if (el.maxLength >= 1 && el.maxLength <= 6 && row) rows.set(row, (rows.get(row) || '') + el.value);
        }
        if (el.shadowRoot) walk(el.shadowRoot);
        else if (!el.hasAttribute('data-bc-opaque') && drawsUnseen(el)) el.setAttribute('data-bc-opaque', '');
      }
    };
    for (const win of windows) walk(win.document);
    for (const code of rows.values()) if (code.length >= 3) found.unshift(code);
    return [...found, ...revealed].slice(0, 50);
  };
  return { isSecret, readsFrom, values };
}
