// The guard (F41, F45): before any input of the model's code reaches the page, the app asks it here,
// in an isolated world of the page's own (world.js), what that input would reach and whether that may
// happen. It finds the element that would receive the input as the browser would: the element under
// the point the pointer will press (through open shadow roots and same-origin frames; a frame of
// another origin is asked in its own turn), the focused element a key goes to, the drop target; then
// the control that input would activate: the button pressed, the form a key submits (its default
// button), the send button of the message field Enter would send, the drop zone. The classifier
// (policy.js) judges that control by what it is (safety/facts.js). A destructive or doubtful one is
// held (stamped `data-bc-held`, its receiving element `data-bc-recv`) unless the call carries a
// one-time permission for it; typing into a secret field is refused; anything else may go, and the
// app's network policy is told that this action's window opens (the `__bcEffect` binding, which only
// this world has), with how it was allowed.
// Called with { op: 'preflight' | 'aim' | 'address' | 'window' | 'allow' | 'secrets' | 'read' | 'banner'
// | 'verdicts', ... }. Evaluated once per document (world.js installs it); the ops are the function it
// returns. __CONTROLS__, __POLICY__, __FACTS__, __SECRETS__, __IS_SECRET__, __BANNER__, __COOKIE_WORDS__ and __TOGGLE_STATES__ are
// filled in (guard.py).
(() => {
  let classifier = null;
  const classify = (facts) => (classifier || (classifier = __POLICY__))(facts);
  const S = (__SECRETS__)(__IS_SECRET__);
  const isSecret = S.isSecret;
  const F = (__FACTS__)(isSecret);
  const { ACTIONABLE, clean, textOf, closestDeep, deepQuery, isField, factsOf, detailsOf, nameOf } = F;
  const used = new Set();  // one-time permissions already spent in this document
  let stamps = 0;
  const stamp = (el, attr) => {
    stamps += 1;
    const id = `${Date.now().toString(36)}-${stamps}`;
    el.setAttribute(attr, id);
    return id;
  };

  // The page's window and its same-origin frames (a frame of another origin has a guard of its own).
  const windows = () => {
    const found = [window];
    for (let i = 0; i < found.length && i < 50; i += 1) {
      for (const frame of found[i].document.querySelectorAll('iframe, frame')) {
        try { if (frame.contentWindow && frame.contentWindow.document) found.push(frame.contentWindow); } catch (e) { /* another origin */ }
      }
    }
    return found;
  };
  const stamped = (attr, value) => {
    for (const win of windows()) {
      const el = deepQuery(win.document, `[${attr}="${value}"]`);
      if (el) return el;
    }
    return null;
  };

  // An element the observation numbered, when it is the only one so numbered in the page and its
  // same-origin frames (a page that copies the number gets its element stamped by the app instead).
  const numbered = (n) => {
    const selector = `[data-bc-id="${n}"]`;
    const count = windows().reduce((sum, win) => sum + win.document.querySelectorAll(selector).length, 0);
    return count <= 1 ? stamped('data-bc-id', n) : null;
  };

  // The element under a point of `doc`'s viewport, as the browser hit-tests it: into open shadow roots
  // and same-origin frames; a frame of another origin answers `descend` (its own guard goes on there).
  const FRAMES = new Set(['IFRAME', 'FRAME']);
  const into = (frame, x, y) => {
    const r = frame.getBoundingClientRect();
    const style = frame.ownerDocument.defaultView.getComputedStyle(frame);
    return [x - r.left - frame.clientLeft - parseFloat(style.paddingLeft || 0),
      y - r.top - frame.clientTop - parseFloat(style.paddingTop || 0)];
  };
  const inner = (frame) => {
    try { return frame.contentDocument; } catch (e) { return null; }
  };
  // A frame drawn scaled, rotated or zoomed (itself or an element around it): a point of the page does
  // not map into it by an offset, so what lies under it there cannot be found as the browser finds it.
  const warped = (frame) => {
    for (let n = frame; n && n.nodeType === 1; n = n.parentElement || (n.getRootNode() && n.getRootNode().host)) {
      const s = n.ownerDocument.defaultView.getComputedStyle(n);
      if (s.scale !== 'none' || s.rotate !== 'none' || (s.zoom && s.zoom !== '1')) return true;
      if (s.transform !== 'none') {
        const m = new DOMMatrixReadOnly(s.transform);
        if (!m.is2D || m.a !== 1 || m.b !== 0 || m.c !== 0 || m.d !== 1) return true;
      }
    }
    return false;
  };
  const atPoint = (start, px, py) => {
    let doc = start;
    let x = px;
    let y = py;
    for (let depth = 0; depth < 12 && doc; depth += 1) {
      let hit = doc.elementFromPoint(x, y);
      for (let n = 0; hit && hit.shadowRoot && n < 12; n += 1) {
        const deeper = hit.shadowRoot.elementFromPoint(x, y);
        if (!deeper || deeper === hit) break;
        hit = deeper;
      }
      if (!hit || !FRAMES.has(hit.tagName)) return { el: hit, local: { x, y } };
      if (warped(hit)) return { lost: true };
      [x, y] = into(hit, x, y);
      doc = inner(hit);
      if (!doc) return { descend: { frame: stamp(hit, 'data-bc-frame-at'), point: { x, y } } };
    }
    return { el: null };
  };
  // The element a key goes to: the focused one, through shadow roots and frames.
  const atFocus = () => {
    let doc = document;
    for (let depth = 0; depth < 12 && doc; depth += 1) {
      let el = doc.activeElement;
      while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
      if (!el || !FRAMES.has(el.tagName)) return { el };
      doc = inner(el);
      if (!doc) return { descend: { frame: stamp(el, 'data-bc-frame-at'), focused: true } };
    }
    return { el: null };
  };
  // ----- what the input would activate (controls.js) ------------------------------------------------
  __CONTROLS__

  // ----- deciding ---------------------------------------------------------------------------------
  const allowedBy = (control, facts, allow) => {
    if (!allow || used.has(allow.token)) return false;
    const mark = control.getAttribute('data-bc-allow');
    const byName = (allow.names || []).includes(clean(facts.name, 120).toLowerCase());
    if ((mark && mark === allow.token) || byName) {
      used.add(allow.token);
      for (const win of windows()) {
        for (const el of win.document.querySelectorAll(`[data-bc-allow="${allow.token}"]`)) el.removeAttribute('data-bc-allow');
      }
      return true;
    }
    return false;
  };
  const tokenOf = (args) => args.token || (args.allow && args.allow.token) || null;
  // The network policy learns that this action's window opens (only this world has the binding).
  // `activates`: the input presses a control (a button, a link, a form's default button); a choice, a
  // text, a tick or a hover only changes a field or the view, and a form it submits was not judged.
  const signal = (args, how, verdict, facts, activates) => {
    if (!args.signal || typeof __bcEffect !== 'function') return;
    __bcEffect(JSON.stringify({ ...args.signal, allowed: how, token: how === 'allow' ? tokenOf(args) : null,
      category: verdict ? verdict.category : null, name: facts ? clean(facts.name, 80) : null, activates }));
  };
  const go = (args, how, verdict, facts, more = {}, activates = false) => {
    signal(args, how, verdict, facts, activates);
    return { ok: true, allowed: how, token: how === 'allow' ? tokenOf(args) : null, category: verdict ? verdict.category : null, activates, ...more };
  };
  const TYPING = new Set(['fill', 'type']);
  const typesInto = (kind, key) => TYPING.has(kind) || (kind === 'key' && (keyName(key).length === 1
    || ['Backspace', 'Delete'].includes(keyName(key))));

  // The receiving element of one input: a locator's element by its stamp (keys, text, a choice, files),
  // the element under a point of the page's viewport (a pointer), or the focused one (the keyboard).
  const receiver = (args) => {
    if (args.point) {
      const found = atPoint(document, args.point.x, args.point.y);
      if (found.descend || !args.stamp) return found;
      // A locator's element: what lies under the point must be it (or inside it), as for a person's click.
      const expected = stamped('data-bc-target', args.stamp);
      if (!expected) return { lost: true };
      expected.removeAttribute('data-bc-target');
      return within(found.el, expected) ? found : { intercepted: described(found.el) };
    }
    if (args.id) {
      const el = numbered(args.id);
      return el ? { el } : args.here ? { elsewhere: true } : { lost: true };
    }
    if (args.stamp) {
      const el = stamped('data-bc-target', args.stamp);
      if (!el) return args.here ? { elsewhere: true } : { lost: true };
      el.removeAttribute('data-bc-target');
      return { el };
    }
    return atFocus();
  };
  const within = (el, box) => {
    for (let n = el; n; n = n.parentNode || n.host) if (n === box) return true;
    return false;
  };
  // How Playwright names an element that takes a click (`<div id="backdrop">…</div>`).
  const described = (el) => {
    if (!el) return 'nothing';
    const tag = el.tagName.toLowerCase();
    const attrs = ['id', 'role', 'class'].filter((a) => el.getAttribute(a))
      .map((a) => ` ${a}="${clean(el.getAttribute(a), 40)}"`).join('');
    return `<${tag}${attrs}>…</${tag}>`;
  };
  const TICKS = new Set(['checkbox', 'radio', 'switch', 'menuitemcheckbox', 'menuitemradio']);
  const CHOOSING_KEYS = new Set(['ArrowUp', 'ArrowDown', 'ArrowLeft', 'ArrowRight', 'Home', 'End', 'PageUp', 'PageDown']);
  const INPUT_TYPE = (el) => (el.tagName === 'INPUT' ? (el.getAttribute('type') || 'text').toLowerCase() : '');
  const TOGGLE_STATES = __TOGGLE_STATES__;
  const stateOf = (name) => {
    const text = String(name || '').toLowerCase();
    const found = text.split(/[^\p{L}\p{N}]+/u).find((w) => TOGGLE_STATES[w])
      || Object.keys(TOGGLE_STATES).find((k) => /[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]/.test(k) && text.includes(k));
    return found ? TOGGLE_STATES[found] : null;
  };
  const judge = (args, at, kind) => {
    const key = args.key || (/[\r\n]/.test(args.text || '') ? 'Enter' : '');
    const control = kind === 'press' || kind === 'drag' ? pressed(at) : kind === 'drop' ? dropped(at)
      : kind === 'key' || kind === 'type' ? keyed(at, key) : kind === 'select' ? choice(at, args.values) : null;
    // A replay after the user's /yes (app code only) opens an approved window even for a plain input.
    const plain = args.approve ? 'allow' : 'structure';
    const unseen = !control && (kind === 'key' || kind === 'type')
      ? composer(at, key) || (kind === 'key' ? shortcut(at, key) : typedOutside(at, args.text)) : null;
    if (unseen) {
      if (allowedBy(unseen.control, unseen.facts, args.allow)) return { how: 'allow', verdict: unseen.verdict, facts: unseen.facts, acts: true };
      return unseen;
    }
    if (!control) return { how: plain };
    const facts = control.tagName === 'OPTION' ? optionFacts(at, control) : factsFor(control);
    if (!facts.name && closedHost(control)) facts.opaque = true;
    // What the input reaches lies inside a closed shadow root: the host's light text is not its name.
    const pointed = kind === 'press' || kind === 'drag';
    if (control === at && (pointed || kind === 'key') && insideClosed(at, pointed ? args.local || { x: -1, y: -1 } : null)) {
      facts.name = '';
      facts.opaque = true;
    }
    facts.input = kind;
    // A box, radio or switch that no form's button sends acts when it changes (a setting saved at once,
    // a post published, a plan cancelled): held when its words name a committing action as a button's
    // would ("Cancel my subscription") or the state it turns on commits ("Published"). Words that only
    // might (a plan's price) leave it a choice.
    const toggle = (TICKS.has(INPUT_TYPE(control)) || TICKS.has(control.getAttribute('role') || '')) && !formState(control);
    // A drop names no action of its own: what it does (files the item, deletes it, moves a task on) is
    // the page's, and the zone's words ("Trash", "Done") say where, not what. It is looked at closer.
    let named = classify(facts);
    const asButton = toggle ? classify({ ...facts, tag: 'button', role: 'button', type: 'button' }) : null;
    const state = toggle && !(asButton.destructive && !asButton.judge) ? stateOf(facts.name) : null;
    if (asButton && asButton.destructive && !asButton.judge) named = asButton;
    else if (state) named = { destructive: true, judge: false, category: state, reason: `a switch that makes it "${clean(facts.name, 60)}" as it changes` };
    const verdict = kind === 'drop' && !named.destructive
      ? { ...named, judge: true, reason: `a drop onto "${String(facts.name || '').slice(0, 60)}": what it does is the page's` } : named;
    // The consent banner's least choice is not the judge's to look at (its words are still the rules':
    // a bait layer's "Delete my account" stays held).
    const least = bannerChoice && bannerChoice.isConnected && (control === bannerChoice || bannerChoice.contains(control));
    const acts = control.tagName === 'OPTION' || !isField(control);
    if (least && !verdict.destructive) return { how: plain, verdict: { ...verdict, judge: false, reason: "the consent banner's least choice" }, facts, acts };
    if (!verdict.destructive && !verdict.judge) return { how: plain, verdict, facts, acts };
    if (allowedBy(control, facts, args.allow)) return { how: 'allow', verdict, facts, acts };
    return { control, verdict, facts };
  };
  // The form an input would send: a submit button's, or the field's for Enter. Sent while a password,
  // one-time code or card field of it is empty, it is not the user's sign-in or payment: the user enters
  // that secret themselves (a hand-over), and nothing is sent.
  const sentForm = (kind, at, key) => {
    if (kind === 'press') {
      const button = closestDeep(at, SUBMITS);
      return button && button.form ? button.form : null;
    }
    const enter = (kind === 'key' || kind === 'type') && KEYS_THAT_ACT.has(keyName(key));
    return enter && at.tagName === 'INPUT' && at.form ? at.form : null;
  };
  // An empty secret the form needs: one it requires, one the page names as the sign-in's or payment's
  // (autocomplete), or the password of a short form (a sign-in: a name and a password). A settings
  // form's optional "new password" left blank is not one.
  const NEEDED = new Set(['current-password', 'one-time-code', 'cc-number', 'cc-csc']);
  const emptySecret = (form) => {
    const shown = Array.from(form.elements).filter((el) => !el.disabled && el.getClientRects().length > 0);
    const short = shown.filter((el) => textField(el) && !isSecret(el)).length <= 2;
    return shown.some((el) => {
      if (!isSecret(el) || String(el.value || '').trim()) return false;
      const auto = (el.getAttribute('autocomplete') || '').toLowerCase().split(/\s+/);
      if (el.required || el.getAttribute('aria-required') === 'true' || auto.some((a) => NEEDED.has(a))) return true;
      return short && (el.getAttribute('type') || '').toLowerCase() === 'password' && !auto.includes('new-password');
    });
  };
  // What the input reached, for the step that reports it ("textbox", "Email"): the control it
  // activates, else the element itself.
  const ROLES = { A: 'link', BUTTON: 'button', SELECT: 'combobox', TEXTAREA: 'textbox' };
  const INPUT_ROLES = { checkbox: 'checkbox', radio: 'radio', submit: 'button', button: 'button', image: 'button',
    file: 'button', range: 'slider', search: 'searchbox', number: 'spinbutton' };
  const whatOf = (facts, at) => {
    if (facts && facts.name) return [clean(facts.role || facts.tag || '', 20), clean(facts.name, 80)];
    const type = (at.getAttribute('type') || 'text').toLowerCase();
    const role = at.getAttribute('role') || (at.tagName === 'INPUT' ? INPUT_ROLES[type] || 'textbox' : ROLES[at.tagName] || '');
    const name = isField(at) ? F.labelOf(at) : nameOf(at);
    return [clean(role, 20), clean(name, 80)];
  };
  const preflight = (args) => {
    const found = receiver(args);
    if (found.lost || found.elsewhere || found.descend || found.intercepted) return found;
    const at = found.el;
    if (!at) return go(args, args.approve ? 'allow' : 'structure');
    // A later step of one press (the pointer moved there, the button went down): the same element is
    // under the point as when the press was judged, so nothing new is reached.
    if (args.still && at.getAttribute('data-bc-recv') === String(args.still)) return { ok: true, same: true };
    if (typesInto(args.kind, args.key) && isSecret(at)) return { secret: true };
    // Keys in a drop-down list choose its options, and a page may act on the choice: a choice is made
    // with selectOption, which the guard judges by the option chosen. Tab and Escape only leave it.
    if ((args.kind === 'key' || args.kind === 'type') && at.tagName === 'SELECT' && !['Tab', 'Escape'].includes(keyName(args.key || ''))) {
      return { refused: "Keys in a drop-down list choose its options: use selectOption('…') on it instead; nothing was done." };
    }
    // So do the arrow keys in a group of radio buttons (or a listbox): each moves the choice.
    if ((args.kind === 'key' || args.kind === 'type') && CHOOSING_KEYS.has(keyName(args.key || ''))
      && (INPUT_TYPE(at) === 'radio' || closestDeep(at, '[role=radio], [role=radiogroup], [role=listbox], [role=option]'))) {
      return { refused: 'Arrow keys in a group of options choose another one: use check() or click() on the option instead; nothing was done.' };
    }
    const form = sentForm(args.kind, at, args.key || (/[\r\n]/.test(args.text || '') ? 'Enter' : ''));
    if (form && emptySecret(form)) return { secret: true, empty: true };
    // The browser's own error page (a site that did not answer): its buttons commit nothing of the
    // user's; what a reload sends again is the effect gate's to hold.
    if (at.ownerDocument.location.protocol === 'chrome-error:') return go(args, args.approve ? 'allow' : 'structure');
    let kind = args.kind;
    let drop = null;
    if (args.kind === 'drag' && args.drop) {
      // A drop into another frame than the drag began in is judged where it lands only when both are in
      // the page's own documents; across a frame of another origin it is refused (nothing was done).
      drop = receiver({ kind: 'drop', point: args.drop.point, stamp: args.drop.stamp });
      if (drop.intercepted) return drop;
      if (drop.lost || drop.descend) return { lost: true };
    }
    const first = judge({ ...args, local: found.local }, at, kind);
    let decided = first;
    if (drop && drop.el && !first.control) {
      kind = 'drop';
      decided = judge(args, drop.el, kind);
    }
    // The receiving element (and the drop target) keep the action's id: a replay finds them by it.
    // A replay (`approve`) finds its elements by the stamps of the input it does again: they stay.
    const id = String(args.recv || `held-${Date.now().toString(36)}-${(stamps += 1)}`);
    if (!args.approve) at.setAttribute('data-bc-recv', id);
    if (drop && drop.el && !args.approve) drop.el.setAttribute('data-bc-drop', id);
    if (!decided.control) {
      const more = args.kind === 'upload' ? uploadInto(at) : {};
      return go(args, decided.how, decided.verdict, decided.facts, { ...more, what: whatOf(decided.facts, at), recv: id }, !!decided.acts);
    }
    decided.control.setAttribute('data-bc-held', id);
    return { held: { id, kind: args.kind, facts: decided.facts, verdict: decided.verdict, ...detailsOf(decided.control, decided.verdict, decided.facts) } };
  };
  // Where a pointer will press a locator's element (the app stamped it), found here in one step as
  // Playwright's actionability checks find it: visible, enabled (for a press), scrolled into view when it
  // is not, and still across an animation frame; the point of its box in the page's viewport. Then judged
  // as any press at that point (and that it is the element). `{ elsewhere }`: the element is in a frame
  // of another origin, where the app aims through Playwright; `{ retry }`: not yet, and why.
  const nextFrame = () => new Promise((done) => { requestAnimationFrame(() => done()); setTimeout(done, 50); });
  const boxOf = (el) => {
    const r = el.getBoundingClientRect();
    let [x, y] = [r.left, r.top];
    for (let w = el.ownerDocument.defaultView; w !== window && w.frameElement; w = w.parent) {
      const [ix, iy] = into(w.frameElement, 0, 0);
      [x, y] = [x - ix, y - iy];
    }
    return { x, y, width: r.width, height: r.height };
  };
  const same = (a, b) => a.x === b.x && a.y === b.y && a.width === b.width && a.height === b.height;
  const aim = async (args) => {
    const el = stamped('data-bc-target', args.stamp);
    if (!el) return { elsewhere: true };
    let box = boxOf(el);
    if (!box.width || !box.height || el.ownerDocument.defaultView.getComputedStyle(el).visibility === 'hidden') {
      return { retry: 'the element is not visible' };
    }
    if (args.kind === 'press' && (el.matches(':disabled') || closestDeep(el, '[aria-disabled="true"]'))) {
      return { retry: 'the element is not enabled' };
    }
    const own = el.getBoundingClientRect();
    const win = el.ownerDocument.defaultView;
    const outside = (r, w, h) => r.x < 0 || r.y < 0 || r.x + r.width > w || r.y + r.height > h;
    if (outside(box, innerWidth, innerHeight) || outside(own, win.innerWidth, win.innerHeight)) {
      el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
      box = boxOf(el);
    }
    await nextFrame();
    const now = boxOf(el);
    if (!same(box, now)) return { retry: 'the element is not stable' };
    const at = args.position || { x: now.width / 2, y: now.height / 2 };
    const point = { x: now.x + at.x, y: now.y + at.y };
    const out = preflight({ ...args, point });
    if (out.descend) return { retry: 'a frame of another origin intercepts pointer events' };
    if (out.intercepted) return { retry: `${out.intercepted} intercepts pointer events` };
    return { ...out, point };
  };
  // An upload goes into the file input itself, the one a button or label stands for, or onto a drop zone.
  const uploadInto = (el) => {
    const isFile = (n) => n && n.tagName === 'INPUT' && (n.getAttribute('type') || '').toLowerCase() === 'file';
    let input = isFile(el) ? el : isFile(el.control) ? el.control : el.querySelector && el.querySelector('input[type=file]');
    for (let up = el.parentElement, n = 0; !input && up && n < 4; up = up.parentElement, n += 1) {
      const found = up.querySelectorAll('input[type=file]');
      if (found.length === 1) input = found[0];
    }
    return input ? { input: stamp(input, 'data-bc-file') } : { drop: true };
  };

  // An address that acts when it is opened (a committing GET): what the guard holds for it, or null.
  const addressHeld = (url) => {
    const facts = { tag: 'a', role: 'link', name: '', href: url, url: location.href, navigation: true,
      lang: document.documentElement.lang || null, title: document.title, context: '' };
    const verdict = classify(facts);
    if (!verdict.destructive && !verdict.judge) return null;
    return { id: `held-goto-${Date.now().toString(36)}`, kind: 'navigate', url,
      facts: { ...facts, name: `the address ${url.slice(0, 100)}` }, verdict, values: [], amount: null, count: null, details: [] };
  };

  // A consent banner that comes up a moment after a load (the page observed before it) would take the
  // next click: in a young document (its first 15 s) the app looks before each action and has its choice
  // (banner.js: by structure, never "accept") clicked, checked like any input. A look that found none
  // leaves a watcher: while nothing is added, removed or restyled, none has come since.
  // The consent banner's least choice this world found last (the element itself, which the page cannot
  // swap for another): a press on it is decided by structure, the app's own and the model's alike.
  let bannerChoice = null;
  const banner = (always) => {
    if (!always && (performance.now() >= 15000 || window.__bcNoBanner)) return null;
    const chosen = (__BANNER__)(__COOKIE_WORDS__, 'element');
    bannerChoice = chosen || bannerChoice;
    if (chosen) return { stamp: stamp(chosen, 'data-bc-banner'), name: clean(nameOf(chosen), 80) || 'close' };
    const ours = (r) => (r.type === 'attributes' ? /^data-bc-/.test(r.attributeName)
      : [...r.addedNodes, ...r.removedNodes].every((n) => n.id === '__bc_marks'));
    const watcher = new MutationObserver((records) => {
      if (records.every(ours)) return;
      window.__bcNoBanner = null;
      watcher.disconnect();
    });
    watcher.observe(document.documentElement, { subtree: true, childList: true, attributes: true });
    window.__bcNoBanner = watcher;
    return null;
  };

  const secretValues = () => S.values(windows());

  const warm = () => { try { classify({ tag: 'button', role: 'button', name: '', lang: document.documentElement.lang || null }); } catch (e) { /* at first use */ } };
  if (typeof requestIdleCallback === 'function') requestIdleCallback(warm, { timeout: 2000 });
  return (args) => {
    switch (args.op) {
      case 'preflight': return preflight(args);
      case 'aim': return aim(args);
      case 'address': {
        const entry = addressHeld(String(args.url));
        if (entry && !(args.allow && (args.allow.names || []).includes(String(args.url).toLowerCase()))) return { held: entry };
        return go(args, entry ? 'allow' : 'structure');
      }
      case 'window': return go(args, args.allowed || 'structure', args.category ? { category: args.category } : null, null, {}, !!args.activates);
      case 'allow': {
        const allow = args.allow;
        for (const n of allow.numbers || []) {
          const el = stamped('data-bc-id', String(n));
          if (el) (closestDeep(el, ACTIONABLE) || el).setAttribute('data-bc-allow', allow.token);
        }
        for (const id of allow.held || []) {
          const el = stamped('data-bc-held', id);
          if (el) el.setAttribute('data-bc-allow', allow.token);
        }
        return { secrets: secretValues() };
      }
      case 'secrets': return { secrets: secretValues() };
      case 'read': {
        const el = stamped('data-bc-target', args.stamp);
        if (!el && args.here) return { elsewhere: true };
        if (el) el.removeAttribute('data-bc-target');
        return { secret: !el || isSecret(el) || isSecret(S.readsFrom(el)) };
      }
      case 'banner': return banner(!!args.always);
      // What a press on each numbered element would be judged (bench/policy.py): no stamps, no window.
      case 'verdicts': return (args.numbers || []).map((n) => {
        const el = stamped('data-bc-id', String(n));
        const control = el && pressed(el);
        const facts = control && factsFor(control);
        return facts ? { n, facts, verdict: classify(facts) } : { n, facts: null, verdict: null };
      });
      default: return null;
    }
  };
})()
