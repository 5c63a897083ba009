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
  const unname = (field) => {
    const label = field.closest('label');
    if (label && label.control && label.control !== field) nameWithout(label.control, label);
    for (let a = field.parentElement; a; a = a.parentElement) if (a.matches(NAMED_BY_CONTENT)) nameWithout(a);
    // An element named or described by the field, or by anything holding it (its own label, its row),
    // also the field itself: named by those elements' words instead (an input's words are none).
    const root = field.getRootNode();
    if (!root.querySelectorAll) return;
    for (const other of root.querySelectorAll('[aria-labelledby], [aria-describedby]')) {
      for (const attr of ['aria-labelledby', 'aria-describedby']) {
        const refs = (other.getAttribute(attr) || '').split(/\s+/).filter(Boolean).map((id) => root.getElementById
          ? root.getElementById(id) : root.querySelector(`#${CSS.escape(id)}`)).filter(Boolean);
        if (!refs.some((r) => r === field || r.contains(field))) continue;
        if (attr === 'aria-labelledby') other.setAttribute('aria-label', refs.map(words).join(' ').trim());
        other.removeAttribute(attr);
      }
    }
  };
  document.addEventListener('input', (e) => {
    const field = e.composedPath()[0];
    if (field && field.value && isSecret(field)) unname(field);
  }, true);

  // The values of secret fields (open shadow roots included): the app masks them in whatever comes back.
  // Each secret field is marked `data-bc-secret`, which a screenshot masks, whatever made it secret.
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
          if (el.value) { found.push(el.value); unname(el); }
          let row = el.form || el.parentElement;
          while (!el.form && row && row.parentElement && row.querySelectorAll('input').length < 2) row = row.parentElement;
          if (el.maxLength >= 1 && el.maxLength <= 6 && row) rows.set(row, (rows.get(row) || '') + el.value);
          // The page's copy of the value in the attribute goes (a selector could test it a character at a
          // time); the value stays, also where it was the attribute's own (a field the server filled).
          const v = el.value;
          if (v && el.getAttribute('value') === v) { el.removeAttribute('value'); if (el.value !== v) el.value = v; }
        }
        if (el.shadowRoot) walk(el.shadowRoot);
        else if (!el.hasAttribute('data-bc-opaque') && drawsUnseen(el)) el.setAttribute('data-bc-opaque', '');
      }
    };
    for (const win of windows) walk(win.document);
    for (const code of rows.values()) if (code.length >= 3) found.unshift(code);
    return [...found, ...revealed].slice(0, 50);
  };
  // Before a call: every secret field holding a value is kept out of other elements' names (cheap: the
  // fields only, not the walk `values` makes).
  const unnameAll = (windows) => {
    for (const win of windows) {
      for (const el of win.document.querySelectorAll('input, textarea')) if (el.value && isSecret(el)) unname(el);
    }
    return null;
  };
  return { isSecret, readsFrom, values, unnameAll };
}
