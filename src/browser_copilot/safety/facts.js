// What a control IS, read from the page's structure (F40, F41): its role, name, form, dialog, row,
// the amount and the order it commits, its icon, the message its form holds. These facts are what the
// classifier (policy.js) decides on, and what a confirmation card shows. Used by the guard (guard.js)
// in its isolated world. Called as (isSecret) => helpers.
(isSecret) => {
  const ACTIONABLE = 'button, a[href], input[type=submit], input[type=button], input[type=image], input[type=reset],'
    + ' [role=button], [role=link], [role=menuitem], [role=tab], [role=option], summary, label, [onclick]';
  const DIALOG = 'dialog[open], [role=dialog], [role=alertdialog], [aria-modal=true], .modal.show, .modal.open, .modal.is-open';
  const BUTTON_TYPES = new Set(['submit', 'button', 'reset', 'image']);  // an <input> that is a button
  const SKIP = new Set(['SELECT', 'OPTION', 'SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'DATALIST', 'svg']);
  const MONEY_CATEGORIES = new Set(['pay', 'order', 'book', 'transfer', 'withdraw', 'donate', 'subscribe']);
  const MONEY = /(?:[€$£¥₽₴₹₩₺₪₫฿₦₱₸₾₼]|\b(?:USD|EUR|GBP|RUB|UAH|PLN|CHF|CZK|HUF|SEK|NOK|DKK|RON|BGN|TRY|JPY|CNY|INR|BRL|KZT)\b)\s?\d[\d\s.,']*\d|\d[\d\s.,']*\s?(?:[€$£¥₽₴₹₩₺₪₫฿₦₱₸₾₼]|\b(?:USD|EUR|GBP|RUB|UAH|PLN|CHF|CZK|HUF|SEK|NOK|DKK|RON|BGN|TRY|JPY|CNY|INR|BRL|KZT|zł|Kč|Ft|kr|lei|лв|грн|руб)(?![\p{L}]))/u;
  const DANGER = /(^|[\s_-])(danger|destructive|warning|critical|negative|btn-red|is-red|delete|remove)([\s_-]|$)/i;
  const clean = (s, n) => (s || '').replace(/\s+/g, ' ').trim().slice(0, n);

  // Visible text of a node without what a select lists (its options are choices, not what it says).
  const textOf = (root, n) => {
    if (!root) return '';
    const out = [];
    let size = 0;
    const walk = (node) => {
      if (size > n * 2) return;
      if (node.nodeType === 3) { out.push(node.data); size += node.data.length; return; }
      if (node.nodeType !== 1 || SKIP.has(node.tagName) || node.hidden || node.getAttribute('aria-hidden') === 'true') return;
      if (node.checkVisibility && !node.checkVisibility({ visibilityProperty: true })) return;
      const block = /^(P|DIV|LI|TR|H[1-6]|DT|DD|SECTION|LABEL|BR|TD|TH)$/.test(node.tagName);
      if (block) out.push(' ');
      for (const child of node.childNodes) walk(child);
      if (node.shadowRoot) for (const child of node.shadowRoot.childNodes) walk(child);
      if (block) out.push(' ');
    };
    walk(root);
    return clean(out.join(''), n);
  };

  const nameOf = (el) => {
    const aria = el.getAttribute('aria-label') || '';
    const ids = el.getAttribute('aria-labelledby');
    const labelled = ids ? ids.split(/\s+/).map((id) => el.ownerDocument.getElementById(id)?.textContent || '').join(' ') : '';
    if (el.tagName === 'INPUT') {
      const type = (el.getAttribute('type') || '').toLowerCase();
      if (BUTTON_TYPES.has(type)) return clean(aria || el.value || el.alt || type, 120);
      return clean(aria || labelled || (el.labels && el.labels[0] && el.labels[0].innerText) || el.placeholder || el.name, 120);
    }
    return clean(aria || labelled || textOf(el, 120) || el.title || el.getAttribute('title'), 120);
  };
  const labelOf = (field) => clean((field.labels && field.labels[0] && textOf(field.labels[0], 60))
    || field.getAttribute('aria-label') || field.placeholder || field.name || field.id, 60);

  // `closest` that goes on past a shadow root to its host (a control inside a web component sits in
  // the host's dialog, form section or row).
  const closestDeep = (el, selector) => {
    for (let node = el; node; node = node.getRootNode && node.getRootNode().host) {
      const found = node.closest(selector);
      if (found) return found;
    }
    return null;
  };
  // `querySelector` that also looks into open shadow roots (the observation numbers elements there).
  const deepQuery = (root, selector) => {
    const direct = root.querySelector(selector);
    if (direct) return direct;
    for (const el of root.querySelectorAll('*')) {
      if (!el.shadowRoot) continue;
      const inner = deepQuery(el.shadowRoot, selector);
      if (inner) return inner;
    }
    return null;
  };
  const isField = (el) => !!el && (el.tagName === 'SELECT' || el.tagName === 'TEXTAREA' || (el.tagName === 'INPUT'
    && !BUTTON_TYPES.has((el.getAttribute('type') || '').toLowerCase())));
  const dialogOf = (el) => closestDeep(el, DIALOG);
  const containerOf = (el) => dialogOf(el) || el.form || el.closest('form') || closestDeep(el, 'section, article, fieldset, [role=region], main');
  const headingOf = (box) => {
    if (!box) return '';
    const labelled = box.getAttribute('aria-labelledby');
    const byId = labelled && box.ownerDocument.getElementById(labelled.split(/\s+/)[0]);
    const heading = byId || box.querySelector('h1, h2, h3, h4, legend, caption, [role=heading]');
    return clean((heading && textOf(heading, 120)) || box.getAttribute('aria-label') || '', 120);
  };
  const describedBy = (el) => (el.getAttribute('aria-describedby') || '').split(/\s+/).filter(Boolean)
    .map((id) => el.ownerDocument.getElementById(id)).filter(Boolean);

  // Text around the target that says what it does: the dialog it sits in, else its form/section
  // heading, what aria-describedby points at, and the row it sits in (icon class names, for buttons
  // without a name). Option lists of selects are left out.
  const contextOf = (el) => {
    const box = dialogOf(el);
    if (box) return clean(`${headingOf(box)} · ${textOf(box, 300)}`, 300);
    const parts = [];
    const section = closestDeep(el, 'form, section, article, fieldset, [role=region], tr, li');
    parts.push(headingOf(section));
    if (section !== el.form && el.form) parts.push(headingOf(el.form));
    for (const note of describedBy(el)) parts.push(textOf(note, 120));
    if (!nameOf(el)) {
      const icons = [el, ...el.querySelectorAll('*')].slice(0, 6)
        .map((n) => (typeof n.className === 'string' ? n.className : n.getAttribute('class') || '') + ' ' + (n.getAttribute('data-icon') || ''))
        .join(' ');
      if (icons.trim()) parts.push('class: ' + icons);
    }
    const row = closestDeep(el, 'tr, li, [role=row]');
    if (row) parts.push(textOf(row, 200));
    return clean(parts.filter(Boolean).join(' · '), 300);
  };

  const editableFields = (form) => [...form.querySelectorAll('input, textarea, select')].filter((f) => {
    const type = (f.getAttribute('type') || '').toLowerCase();
    if (type === 'hidden' || BUTTON_TYPES.has(type) || f.disabled || f.readOnly) return false;
    return !f.checkVisibility || f.checkVisibility({ visibilityProperty: true }) || ['checkbox', 'radio'].includes(type);
  });
  const filled = (f) => {
    const type = (f.getAttribute('type') || '').toLowerCase();
    if (type === 'checkbox' || type === 'radio') return f.checked;
    if (f.tagName === 'SELECT') return f.selectedIndex > 0 || (f.selectedIndex === 0 && !!f.value && !!f.options[0] && !/^\s*$/.test(f.options[0].value));
    return !!f.value;
  };

  // A bulk action: a select beside the button (the same toolbar) with a real option chosen, acting on
  // the items ticked in the list or table it governs.
  const bulkOf = (el) => {
    const bar = el.parentElement;
    if (!bar) return null;
    for (const select of bar.querySelectorAll(':scope > select, :scope > label > select, :scope > * > select')) {
      const option = select.selectedOptions && select.selectedOptions[0];
      if (!option || select.selectedIndex <= 0 || !option.value) continue;
      const scope = el.form || el.closest('form') || el.ownerDocument;
      const boxes = [...scope.querySelectorAll('table input[type=checkbox], [role=grid] input[type=checkbox], ul input[type=checkbox], ol input[type=checkbox], [role=row] [role=checkbox]')]
        .filter((c) => !c.closest('thead'));
      if (!boxes.length) continue;
      const ticks = boxes.filter((c) => c.checked || c.getAttribute('aria-checked') === 'true').length;
      return { action: clean(option.textContent, 60), count: ticks };
    }
    return null;
  };

  // Where the money is: an amount field of the committing form, else the shortest money text of the
  // form/dialog/section (a total, not a balance inside a select or a sentence of a notice).
  const amountOf = (el) => {
    const form = el.form || el.closest('form');
    const section = el.closest('section, article, fieldset, [role=region]');
    const boxes = [dialogOf(el), form, section];
    // A page without sections: the form's surroundings, when they are small (not a whole portal).
    if (!section && form && form.parentElement && (form.parentElement.innerText || '').length < 1500) boxes.push(form.parentElement);
    for (const box of [...new Set(boxes.filter(Boolean))]) {
      for (const field of box.querySelectorAll('input')) {
        const type = (field.getAttribute('type') || 'text').toLowerCase();
        const mode = (field.getAttribute('inputmode') || '').toLowerCase();
        if (!field.value || !(type === 'number' || mode === 'decimal' || mode === 'numeric' || type === 'text') || isSecret(field)) continue;
        const around = textOf(field.parentElement, 80) + ' ' + labelOf(field);
        const currency = around.match(/[€$£¥₽₴₹₩₺₪₫฿₦₱₸₾₼]|\b(USD|EUR|GBP|RUB|UAH|PLN|CHF|CZK|SEK|NOK|DKK)\b/);
        if (currency && /^\s*\d[\d\s.,']*\s*$/.test(field.value)) return clean(`${currency[0]} ${field.value.trim()}`, 40);
      }
      let best = null;
      const walker = box.ownerDocument.createTreeWalker(box, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(), seen = 0; node && seen < 400; node = walker.nextNode(), seen += 1) {
        const parent = node.parentElement;
        if (!parent || parent.closest('select, option, script, style, [aria-hidden=true], [role=note], [role=status], [aria-live], small')) continue;
        const found = node.data.match(MONEY);
        if (!found) continue;
        // A total or a price ("Order total: $42.00"), not a sentence of a notice ("transfers over $1,000
        // need approval"): the amount's line has at most three words besides it.
        const row = parent.closest('p, li, tr, dd, div, label, span') || parent;
        const line = row.textContent.replace(found[0], ' ');
        const words = line.split(/[^\p{L}]+/u).filter((w) => w.length > 1).length;
        if (words > 3) continue;
        // The total is the line the page sets apart (a heading cell, a table's foot, bold), else the
        // last: an order's parts (items, shipping, tax) come before their sum.
        const weight = Number(getComputedStyle(parent).fontWeight) || 400;
        const marked = !!parent.closest('th, tfoot, strong, b') || weight >= 600 || (row.tagName === 'TR' && !!row.querySelector('th'));
        if (!best || marked || !best[1]) best = [found[0], marked];
      }
      if (best) return clean(best[0], 40);
    }
    return null;
  };

  // What an icon-only control's icon is called: class names, data-icon, an SVG sprite's id, an icon
  // font's ligature ("delete_forever"), on it and its first descendants.
  const iconOf = (el) => {
    const parts = [];
    for (const n of [el, ...el.querySelectorAll('*')].slice(0, 6)) {
      parts.push(typeof n.className === 'string' ? n.className : n.getAttribute('class') || '');
      parts.push(n.getAttribute('data-icon') || '', n.getAttribute('href') || n.getAttribute('xlink:href') || '');
      if (/icon|symbol/i.test(parts[parts.length - 3]) && n.childElementCount === 0) parts.push(clean(n.textContent, 40));
    }
    return clean(parts.filter(Boolean).join(' '), 160) || null;
  };
  const messageOf = (box) => {
    if (!box) return '';
    for (const field of box.querySelectorAll('textarea, [contenteditable=""], [contenteditable=true]')) {
      const text = field.tagName === 'TEXTAREA' ? field.value : field.innerText;
      if (text && text.trim() && !isSecret(field)) return text.trim();
    }
    return '';
  };

  const opensDialog = (el) => {
    const popup = (el.getAttribute('aria-haspopup') || '').toLowerCase();
    if (popup && popup !== 'false') return true;
    if (el.hasAttribute('popovertarget') || /^show-modal$|^toggle-popover$|^show-popover$/i.test(el.getAttribute('command') || '')) return true;
    if (/^(modal|dialog|offcanvas)$/i.test(el.getAttribute('data-bs-toggle') || el.getAttribute('data-toggle') || '')) return true;
    const href = el.tagName === 'A' ? el.getAttribute('href') || '' : '';
    const ids = [...(el.getAttribute('aria-controls') || '').split(/\s+/), href.startsWith('#') ? href.slice(1) : '']
      .concat([el.getAttribute('commandfor') || '', el.getAttribute('data-bs-target') || ''].map((t) => t.replace(/^#/, '')));
    return ids.filter(Boolean).some((id) => {
      const target = el.ownerDocument.getElementById(id);
      return !!target && !target.contains(el) && target.matches('dialog, [role=dialog], [role=alertdialog], [aria-modal=true]');
    });
  };
  // The page's step counter, when it has one (what the page is, in any language): the current item of a
  // list of steps (aria-current="step"), a progress bar of steps, else the nearest short text before the
  // control that counts ("Step 2 of 4", "Paso 2 de 4", "2/4") in a heading or a stepper (an element
  // named for steps or progress), not any "4/5" of a rating. policy.js reads it as "k of n".
  const STEPPER = 'h1, h2, h3, h4, h5, h6, legend, caption, [role=heading], [class*=step i], [id*=step i], [class*=progress i], [class*=wizard i]';
  const COUNT = /\p{Nd}{1,2}\s*(?:\/|[\p{L}\p{M}]{1,4}(?:\s[\p{L}\p{M}]{1,3})?)\s*\p{Nd}{1,2}(?![\p{Nd}.,:])/u;
  const stepCounter = (el) => {
    const doc = el.ownerDocument;
    const current = doc.querySelector('[aria-current="step"]');
    const items = current ? [...(current.closest('ol, ul, [role=list]')?.children || [])] : [];
    const at = items.findIndex((item) => item === current || item.contains(current));
    if (at >= 0 && items.length >= 2) return `${at + 1}/${items.length}`;
    const bar = doc.querySelector('[role=progressbar][aria-valuemax][aria-valuenow]');
    const [now, max] = bar ? [Number(bar.getAttribute('aria-valuenow')), Number(bar.getAttribute('aria-valuemax'))] : [0, 0];
    if (Number.isInteger(now) && Number.isInteger(max) && max >= 2 && max <= 10 && now >= 1) return `${now}/${max}`;
    const walker = doc.createTreeWalker(doc.body || doc.documentElement, NodeFilter.SHOW_TEXT);
    let found = null;
    for (let node = walker.nextNode(), seen = 0; node && seen < 3000; node = walker.nextNode(), seen += 1) {
      if (el.compareDocumentPosition(node) & Node.DOCUMENT_POSITION_FOLLOWING) break;
      const said = node.data.trim();
      if (said.length <= 40 && COUNT.test(said) && node.parentElement?.closest(STEPPER)) found = said;
    }
    return found;
  };
  const factsOf = (el) => {
    const form = el.form || el.closest('form');
    const tag = el.tagName.toLowerCase();
    const fields = form ? editableFields(form) : [];
    const box = containerOf(el);
    const danger = DANGER.test(typeof el.className === 'string' ? el.className : '')
      || describedBy(el).some((n) => n.getAttribute('role') === 'alert' || DANGER.test(n.className || ''));
    const payment = !!box && [...box.querySelectorAll('input')].some((i) => /(^|\s)cc-/.test(i.getAttribute('autocomplete') || '')
      || (isSecret(i) && /card|cc|cvv|cvc|csc|pan|iban/i.test(`${i.name} ${i.id} ${i.getAttribute('autocomplete')}`)));
    const bulk = bulkOf(el);
    // What the control shows, when its accessible name says another thing (a "Send" labelled "Save
    // draft"): both are judged, and the more committing decides.
    const shown = tag === 'input' ? '' : textOf(el, 120);
    const named = nameOf(el);
    const text = shown && named && shown.toLowerCase() !== named.toLowerCase() ? shown : null;
    return {
      tag,
      text,
      role: el.getAttribute('role') || (tag === 'a' ? 'link' : tag === 'button' ? 'button' : null),
      type: el.getAttribute('type') || (tag === 'button' && form ? 'submit' : null),
      name: nameOf(el),
      value: el.tagName === 'INPUT' ? (isSecret(el) ? '<masked>' : clean(el.value, 80)) : null,
      href: tag === 'a' ? el.getAttribute('href') : null,
      form_action: form ? form.action || null : null,
      form_method: form ? (form.getAttribute('method') || 'get').toLowerCase() : null,
      context: contextOf(el),
      url: el.ownerDocument.location.href,
      lang: el.closest('[lang]')?.getAttribute('lang') || el.ownerDocument.documentElement.lang || null,
      title: el.ownerDocument.title,
      heading: headingOf(box),
      step: stepCounter(el),
      dialog: !!dialogOf(el),
      // It opens the site's own dialog or menu first (declared by the page's structure: aria-haspopup,
      // a popover or command target, a dialog it controls or links to): the card belongs to that
      // dialog's confirming control. A request it sends itself is the effect gate's to hold.
      haspopup: opensDialog(el),
      // Shows or hides part of the page (a disclosure: aria-expanded, <summary>, a leading triangle).
      disclosure: el.hasAttribute('aria-expanded') || tag === 'summary' || /^\s*[▸▹►▶▾▿▼⏵⏷]/.test(el.textContent || ''),
      // In the site's navigation (a menu, a sidebar, the header or footer): a link there opens a page.
      in_nav: !!closestDeep(el, 'nav, aside, [role=navigation]')
        || (!!closestDeep(el, 'header, footer, [role=banner], [role=contentinfo]') && !closestDeep(el, 'article, main, section, form, dialog')),
      danger,
      payment,
      amount: amountOf(el),
      review: !!form && (form.getAttribute('method') || 'get').toLowerCase() !== 'get' && fields.length === 0,
      editable: fields.length,
      fields: fields.slice(0, 12).map((f) => ({ label: labelOf(f), type: (f.getAttribute('type') || f.tagName).toLowerCase(), filled: filled(f), secret: isSecret(f) })),
      bulk: bulk ? bulk.action : null,
      count: bulk ? bulk.count : null,
      icon: nameOf(el) ? null : iconOf(el),
      // Its form or dialog holds a message the user typed (a reply, a post): submitting it sends that.
      message: !!messageOf(form || dialogOf(el)),
      // Its form has a ticked box that links to terms, or a required one: submitting it agrees.
      consent: !!form && [...form.querySelectorAll('input[type=checkbox]')].some((c) => c.checked
        && (c.required || !!(c.labels && [...c.labels].some((l) => l.querySelector('a[href]'))))),
    };
  };

  // What the action commits, as a person checks it on the card, read from the page's structure, not
  // its words: the dialog that asks (its whole question), the row the control acts on (which of two
  // "George Adams"), the first lines of a rich-text message; for money actions the order's lines (rows
  // with a price, with their quantity) and the page's short labelled parts (an <address>, a <dl>, a
  // section or fieldset under its own heading: delivery, payment). At most 8 lines.
  const SUMMARY_SKIP = 'nav, header, footer, aside, select, script, style, [aria-hidden=true], [role=navigation]';
  const commitmentOf = (el, verdict) => {
    const out = [];
    const seen = new Set();
    const add = (label, text) => {
      const line = clean(text, 160);
      if (!line || out.length >= 8 || [...seen].some((s) => s.includes(line))) return;
      seen.add(line);
      out.push([clean(label, 40), line]);
    };
    const dialog = dialogOf(el);
    if (dialog) add('dialog', textOf(dialog, 160).replace(textOf(el, 60), ' '));
    const row = closestDeep(el, 'tr, li, [role=row]');
    if (row) add('row', textOf(row, 160).replace(textOf(el, 60), ' '));
    const box = dialog || el.form || el.closest('form') || closestDeep(el, 'section, article, [role=region]');
    const editor = box && box.querySelector('[contenteditable=""], [contenteditable=true], [role=textbox][contenteditable]');
    if (editor && (editor.innerText || '').trim()) add('message', editor.innerText);
    if (!MONEY_CATEGORIES.has(verdict.category)) return out;
    const root = dialog || el.ownerDocument.body;
    const lines = [...root.querySelectorAll('tr, li, [role=row]')].filter((r) => !r.closest(SUMMARY_SKIP)
      && !r.querySelector('tr, li, [role=row]') && !r.contains(el) && MONEY.test(r.textContent || ''));
    for (const line of lines.slice(0, 6)) {
      const quantity = line.querySelector('input[type=number], input[inputmode=numeric], select');
      const count = quantity && quantity.tagName === 'SELECT' ? quantity.selectedOptions[0]?.textContent : quantity?.value;
      add('order', (count ? `${clean(count, 8)} × ` : '') + textOf(line, 150));
    }
    if (lines.length > 6) add('order', `and ${lines.length - 6} more lines`);
    for (const part of root.querySelectorAll('address, dl, section, fieldset, [role=region], [role=group]')) {
      if (part.closest(SUMMARY_SKIP) || part.contains(el) || part.querySelector('section, fieldset, table, ul, ol')) continue;
      const heading = part.tagName === 'ADDRESS' ? 'address' : headingOf(part);
      // A group of choices says the one chosen (as the form will send it), not every option it offers.
      const choices = [...part.querySelectorAll('input[type=radio], input[type=checkbox], [role=radio], [role=checkbox]')];
      const chosen = choices.filter((c) => c.checked || c.getAttribute('aria-checked') === 'true')
        .map((c) => (c.labels && c.labels[0] ? textOf(c.labels[0], 80) : nameOf(c)));
      const text = choices.length ? `${heading || ''} ${chosen.join('; ') || '(nothing chosen)'}`.trim() : textOf(part, 260);
      if (!text || text.length > 240 || (part.tagName !== 'ADDRESS' && part.tagName !== 'DL' && !heading)) continue;
      add(heading || 'details', heading && text.startsWith(heading) ? text.slice(heading.length) : text);
    }
    return out;
  };

  // What the user would want to see on the card, read when the action is held (after the code typed):
  // the values of its form (secrets masked, placeholder choices left out) and, for money actions, the
  // amount of the committing form or its section.
  const detailsOf = (el, verdict, facts) => {
    const form = el.form || el.closest('form');
    const values = [];
    for (const field of form ? editableFields(form) : []) {
      if (!filled(field)) continue;
      const type = (field.getAttribute('type') || '').toLowerCase();
      const label = labelOf(field);
      let value = field.tagName === 'SELECT' ? textOf(field.selectedOptions[0], 80) || field.selectedOptions[0]?.textContent : field.value;
      if (type === 'checkbox' || type === 'radio') value = type === 'radio' ? (labelOf(field) || field.value) : 'ticked';
      if (isSecret(field)) value = '<masked>';
      if (clean(value, 80)) values.push([type === 'radio' ? field.name || label : label, clean(value, 80)]);
    }
    const amount = MONEY_CATEGORIES.has(verdict.category) ? facts.amount : null;
    // Only a target that may become a card has its commitment read (the pre-flight checks every target).
    const details = verdict.destructive || verdict.judge ? commitmentOf(el, verdict) : [];
    return { values: values.slice(0, 12), amount, count: facts.count, details };
  };
  return {
    ACTIONABLE, DIALOG, BUTTON_TYPES, clean, textOf, nameOf, labelOf, closestDeep, deepQuery, isField, dialogOf,
    headingOf, factsOf, detailsOf,
  };
}
