// The in-page half of an observation: put once per document into Playwright's utility world (observe.js),
// where page scripts share the DOM but none of the globals, so a page can neither see nor replace it.
// It keeps what one document's observations share: the compiled extractor and banner chooser, and the
// element stamps of the last observation (the extractor's `__bcMarked`). __VERSION__, __EXTRACT__,
// __BANNER__ and __COOKIE_WORDS__ are filled in by look.py.
globalThis.__bcObserver = {
  version: __VERSION__,
  extract: __EXTRACT__,
  banner: __BANNER__,
  words: __COOKIE_WORDS__,
  loadingWords: new Set(__LOADING_WORDS__),

  // A list or region still on its way: a visible busy region (aria-busy), an indeterminate progress
  // bar or spinner, or a short text that says it is loading (loading_words.json, many languages).
  loading() {
    const shown = (n) => n.getClientRects().length > 0 && (!n.checkVisibility || n.checkVisibility({ visibilityProperty: true }));
    for (const n of document.querySelectorAll('[aria-busy=true], [role=progressbar]:not([aria-valuenow])')) {
      if (shown(n)) return true;
    }
    const walker = document.createTreeWalker(document.body || document.documentElement, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(), seen = 0; node && seen < 3000; node = walker.nextNode(), seen += 1) {
      const text = node.data.trim();
      if (!text || text.length > 40) continue;
      const said = text.toLowerCase().replace(/[.…\s]+$/u, '');
      if (this.loadingWords.has(said) && node.parentElement && shown(node.parentElement)
        && !node.parentElement.closest('button, a, label, option, script, style, [aria-hidden=true]')) return true;
    }
    return false;
  },
  // Wait, bounded, while the page says it is loading (polled: no blanket sleep).
  async loaded(maxMs) {
    const start = performance.now();
    while (this.loading() && performance.now() - start < maxMs) await new Promise((r) => setTimeout(r, 50));
  },

  // Wait until the DOM is quiet or `maxMs` passed: no blanket sleep. Quiet is 10 ms with no change, or
  // 30 ms after the last change. The 10 ms count from `sinceMs` before this call (the time since the
  // app's last code call ended, so after the action), and the tracker below says whether the page changed
  // in that time; without its knowledge (a document met for the first time) they count from now.
  settle(maxMs, sinceMs = 0) {
    return new Promise((resolve) => {
      const start = performance.now();
      const from = this.changedAt === null ? start : start - Math.max(0, Math.min(sinceMs, 200));
      let last = this.changedAt !== null && this.changedAt > from ? this.changedAt : start;
      let changed = last !== start;
      const observer = new MutationObserver(() => { last = performance.now(); changed = true; });
      observer.observe(document.documentElement, { subtree: true, childList: true, attributes: true, characterData: true });
      const check = () => {
        const now = performance.now();
        const quiet = document.readyState !== 'loading' && (changed ? now - last >= 30 : now - from >= 10);
        if (quiet || now - start >= maxMs) { observer.disconnect(); resolve(changed); return; }
        setTimeout(check, changed || document.readyState === 'loading' ? 15 : Math.max(1, from + 10 - now));
      };
      check();
    });
  },

  // No banner at the last look, and no element added, removed or restyled since: none now either. The
  // watcher is on only while that holds (the first change turns it off); the app's own stamps and
  // screenshot marks are not changes.
  quiet: false,
  watcher: null,
  watch() {
    this.watcher = this.watcher || new MutationObserver((records) => {
      const ours = (r) => (r.type === 'attributes' ? /^data-bc-/.test(r.attributeName)
        : [...r.addedNodes, ...r.removedNodes].every((n) => n.id === '__bc_marks'));
      if (records.every(ours)) return;
      this.quiet = false;
      this.watcher.disconnect();
    });
    this.quiet = true;
    this.watcher.observe(document.documentElement, { subtree: true, childList: true, attributes: true });
  },

  // What the last extraction knew, reused while nothing it depends on changed: `gen` counts every change
  // since (an element added, removed or restyled, text edited, typing, focus, scrolling, pointer moves,
  // a resource or font loaded, a transition or animation); the reuse also checks the URL, the viewport,
  // the scroll position, the focused element, the listed fields' values (a script can set them without
  // an event) and that no animation runs. Pages whose frames or shadow roots were walked are always
  // extracted again (their changes are not seen from here). The app's own stamps and marks are not changes.
  // `changedAt`: when the last of those changes happened (null until the tracker runs); the tracker
  // starts when the observer is put into the document (while a new document loads).
  gen: 0,
  changedAt: null,
  tracker: null,
  last: null,
  track() {
    if (this.tracker) return;
    const ours = (r) => (r.type === 'attributes' ? /^data-bc-/.test(r.attributeName)
      : [...r.addedNodes, ...r.removedNodes].every((n) => n.id === '__bc_marks'));
    const bump = () => { this.gen += 1; this.changedAt = performance.now(); };
    this.changedAt = performance.now();
    this.tracker = new MutationObserver((records) => { if (!records.every(ours)) bump(); });
    this.tracker.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
    for (const type of ['input', 'change', 'focusin', 'focusout', 'scroll', 'resize', 'pointerover', 'pointerout',
      'load', 'error', 'toggle', 'transitionrun', 'transitionend', 'animationstart', 'animationend', 'popstate', 'hashchange']) {
      addEventListener(type, bump, { capture: true, passive: true });
    }
    if (document.fonts) document.fonts.addEventListener('loadingdone', bump);
  },
  // The state a reuse must find unchanged, besides `gen`.
  state(opts) {
    const fields = [];
    for (const el of (window.__bcMarked || [])) {
      if (!el.isConnected) return null;
      if (el.tagName === 'SELECT') fields.push(el.selectedIndex);
      else if (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA') fields.push(el.value, el.checked);
    }
    return JSON.stringify([{ ...opts, since: 0 }, location.href, innerWidth, innerHeight, scrollX, scrollY, fields]);
  },
  reusable(opts) {
    const last = this.last;
    return !!last && last.gen === this.gen && last.active === document.activeElement
      && !(document.getAnimations && document.getAnimations().length) && last.state === this.state(opts);
  },

  // Settle (after actions), find a consent banner in the way and the option that rejects it (banner.js:
  // it looks for a candidate first, cheaply, and chooses only when there is one), then extract (or
  // reuse the last extraction: see `gen`); one call. Returned as JSON text: Playwright's own serializer walks a large
  // object several times slower.
  async observe(opts) {
    const started = performance.now();
    this.track();
    if (opts.settle) await this.settle(800, opts.since);
    if (opts.settle || !this.last) await this.loaded(3000);
    // A banner is found here, not clicked: the app has the guard close it, armed (observing.py).
    let banner = null;
    if (opts.banners && !this.quiet) {
      banner = this.banner(this.words, 'name');
      if (!banner) this.watch();
    }
    let data;
    if (!banner && this.reusable(opts)) data = { ...this.last.data, reused: true };
    else {
      data = this.extract(opts);
      this.last = window.__bcDeep ? null
        : { data, gen: this.gen, active: document.activeElement, state: this.state(opts) };
    }
    data.banner_found = banner;
    data.page_ms = Math.round((performance.now() - started) * 10) / 10;
    for (const v of data.secretValues || []) if (v.length >= 4) this.secrets.add(v);
    // Whether a secret field holds a value (what a reused extraction knew is kept with it).
    const holding = data.reused ? !!this.last.holding : (data.secretValues || []).some((v) => v.length > 0);
    if (this.last && !data.reused) this.last.holding = holding;
    delete data.secretValues;
    data.secretDigests = opts.salt ? [...this.secrets].filter((v) => v.length >= 6).map((v) => this.digestOf(opts.salt, v)) : [];
    const text = JSON.stringify(data);
    const out = this.masked(text);
    // No screenshot (observe.js) of a page that shows a value it held in a secret field, or holds one:
    // its own code may draw the value where no mask reaches.
    return out === text && !holding ? out : `${out.slice(0, -1)},"secretShown":true}`;
  },
  // What leaves the page of a secret value: FNV-1a 64 of salt, NUL and value, in hex (the session masks
  // every prompt with these: safety/seen_secrets.py, the same function).
  digestOf(salt, value) {
    let h = 0xcbf29ce484222325n;
    for (const b of new TextEncoder().encode(`${salt}\0${value}`)) h = BigInt.asUintN(64, (h ^ BigInt(b)) * 0x100000001b3n);
    return h.toString(16).padStart(16, '0');
  },

  // A secret value this document's observations saw in a field (a password, a code, a card number) stays
  // masked wherever the page puts it later (its text, its title, its address), also after the field is
  // gone. The values never leave the page: the observation's text is masked here.
  secrets: new Set(),
  masked(text) {
    for (const v of this.secrets) {
      for (const form of new Set([JSON.stringify(v).slice(1, -1), JSON.stringify(encodeURIComponent(v)).slice(1, -1)])) {
        text = text.split(form).join('<masked>');
      }
    }
    return text;
  },

  // The numbers of the last observation drawn over the page for a screenshot (`on`), or removed.
  marks(on) {
    document.getElementById('__bc_marks')?.remove();
    if (!on) return;
    const layer = document.createElement('div');
    layer.id = '__bc_marks';
    layer.style.cssText = 'position:fixed;inset:0;pointer-events:none;z-index:2147483647';
    const behind = window.__bcBehind || new Set();  // the page behind a modal: not drawn over it
    for (const el of (window.__bcMarked || [])) {
      const n = el.getAttribute('data-bc-id');
      if (!n || el.ownerDocument !== document || behind.has(el)) continue;
      const r = el.getBoundingClientRect();
      if (r.bottom < 0 || r.top > innerHeight) continue;
      const box = document.createElement('div');
      box.style.cssText = `position:fixed;left:${r.left}px;top:${r.top}px;width:${r.width}px;`
        + `height:${r.height}px;outline:2px solid #e11d48;font:bold 11px sans-serif;color:#fff`;
      const tag = document.createElement('span');
      tag.textContent = n;
      tag.style.cssText = 'position:absolute;left:-2px;top:-14px;background:#e11d48;padding:0 3px';
      box.appendChild(tag);
      layer.appendChild(box);
    }
    document.documentElement.appendChild(layer);
  },
};
globalThis.__bcObserver.track();
