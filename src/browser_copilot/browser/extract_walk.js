// The page extractor's (extractor.js) third part: the walk. It goes once through the document, its
// open shadow roots and same-origin frames, places each interactive element (above the viewport, in
// it, below it, to the side) and groups the visible text into the outline's segments. Not a script
// of its own: look.py joins the parts in order into one function body.
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
