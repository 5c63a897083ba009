// The page extractor's (extractor.js) fourth part: what covers what. The overlay a point lands in,
// what covers an element (hit-tested), the open modal, and the focused form. Not a script of its own:
// look.py joins the parts in order into one function body.
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
