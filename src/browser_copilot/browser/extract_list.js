// The page extractor's (extractor.js) last part: the result. Which elements are listed and their
// numbers, the page behind a modal, folded link lists, error texts, the outline within its budget,
// the row of each element named alike, and the answer. Not a script of its own: look.py joins the
// parts in order into one function body, and this part closes it.
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
    secretValues,
  };
}
