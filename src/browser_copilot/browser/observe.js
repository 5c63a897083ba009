// One observation, run by the framework through the code tool. __OPTS__, __COOKIE_WORDS__ and __EXTRACT__ are filled
// in by observation.py. Order: let the page settle (after actions), close a blocking consent banner
// by rejecting (never by accepting), extract, then tabs, downloads and the optional screenshot.
async (page) => {
  const opts = __OPTS__;
  const extract = __EXTRACT__;
  const context = page.context();

  // Downloads go where the browser saves them; the browser's CDP events say where that was.
  if (!context.__bcDownloads) {
    context.__bcDownloads = [];
    try {
      const cdp = await context.browser().newBrowserCDPSession();
      await cdp.send('Browser.setDownloadBehavior', { behavior: 'default', eventsEnabled: true });
      cdp.on('Browser.downloadWillBegin', (e) => context.__bcDownloads.push(
        { guid: e.guid, url: e.url, name: e.suggestedFilename, state: 'started' }));
      cdp.on('Browser.downloadProgress', (e) => {
        const d = context.__bcDownloads.find((x) => x.guid === e.guid);
        if (d) { d.state = e.state; if (e.filePath) d.path = e.filePath; }
      });
    } catch (e) { /* no browser-level CDP (e.g. a restricted endpoint): downloads are not reported */ }
  }

  // Wait until the DOM is quiet (30 ms without mutations) or `max` ms passed: no blanket sleep.
  const settle = (max) => page.evaluate((maxMs) => new Promise((resolve) => {
    const start = performance.now();
    let last = start;
    let changed = false;
    const observer = new MutationObserver(() => { last = performance.now(); changed = true; });
    observer.observe(document.documentElement, { subtree: true, childList: true, attributes: true, characterData: true });
    const check = () => {
      const now = performance.now();
      const quiet = document.readyState !== 'loading' && (changed ? now - last >= 30 : now - start >= 10);
      if (quiet || now - start >= maxMs) { observer.disconnect(); resolve(changed); } else setTimeout(check, 15);
    };
    setTimeout(check, 10);
  }), max).catch(() => false);

  // A consent banner in the way: choose the option that is neither "accept" nor "settings" (reject,
  // necessary only, continue without...), decided by structure in any language; never accept.
  // A banner is a dialog or a fixed/sticky layer that speaks of cookies (the lexicon's cookie words in
  // many languages), is marked as consent by its attributes, or links to a privacy/cookie policy.
  // Its buttons: "settings" opens more UI (aria-haspopup/expanded/controls); "accept" is the visually
  // primary one or says so; what is left, if it is one button, is the choice. The word lists below
  // only break ties (several left, none primary).
  const closeBanner = () => page.evaluate((cookieWords) => {
    const WORDS = {
      accept: ['accept', 'agree', 'allow', 'ok', 'okay', 'got it', 'yes', 'akzeptier', 'zustimm', 'einverstanden',
        'erlaub', 'accepter', "j'accepte", 'autoriser', 'acept', 'permitir', 'accett', 'consent', 'acconsent',
        'accepteer', 'akkoord', 'toestaan', 'aceit', 'concordo', 'zaakceptuj', 'akceptuj', 'zgadzam', 'godkänn',
        'acceptera', 'tillåt', 'godkend', 'tillad', 'hyväksy', 'přijmout', 'souhlas', 'elfogad', 'принять',
        'принимаю', 'согла', 'разреш', 'прийняти', 'погоджу', 'kabul', '同意', '接受', '允许', '許可', '수락', '동의'],
      necessary: ['necessary', 'essential', 'required', 'strictly', 'notwendig', 'erforderlich', 'essenziell',
        'nécessaire', 'essentiel', 'necesari', 'esencial', 'necessari', 'essenzial', 'noodzakelijk', 'necessári',
        'essenci', 'niezbędn', 'nødvendig', 'nödvändig', 'välttämät', 'nezbytn', 'szükséges', 'необходим',
        'обязательн', 'необхідн', 'gerekli', '必要', '필수'],
      reject: ['reject', 'decline', 'deny', 'refuse', 'disagree', 'no thanks', 'continue without', 'without accept',
        'ablehnen', 'verweiger', 'ohne zu', 'refuser', 'continuer sans', 'rechaz', 'rifiut', 'weiger', 'rejeit',
        'recus', 'odrzu', 'odmów', 'avvis', 'avböj', 'neka', 'afvis', 'hylkää', 'odmítn', 'elutasít', 'отклон',
        'отказ', 'не принимать', 'відхил', 'reddet', '拒绝', '拒否', '거부'],
      settings: ['settings', 'preferences', 'customi', 'manage', 'options', 'choices', 'details', 'configure',
        'einstellung', 'anpassen', 'verwalten', 'paramètr', 'personnalis', 'gérer', 'configur', 'personaliz',
        'gestion', 'impostazion', 'gestisci', 'instelling', 'aanpassen', 'beheren', 'definiç', 'gerir', 'ustawieni',
        'dostosuj', 'zarządzaj', 'inställning', 'anpassa', 'indstilling', 'asetukse', 'nastavení', 'beállítás',
        'настро', 'параметр', 'управл', 'налашт', 'ayarlar', '设置', '設定', '설정'],
      close: ['close', 'dismiss', '×', '✕', '✖', 'x', 'закрыть', 'schließen', 'fermer', 'cerrar', 'chiudi', 'zamknij',
        'sluiten', 'fechar', 'закрити'],
    };
    const escape = (w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const has = (list) => new RegExp(`(?:^|[^\\p{L}])(?:${list.map(escape).join('|')})`, 'iu');
    const SAYS = Object.fromEntries(Object.entries(WORDS).map(([k, list]) => [k, has(list)]));
    SAYS.close = new RegExp(`^(?:${WORDS.close.map(escape).join('|')})$`, 'iu');
    const stem = (w) => (w.endsWith('*') ? `${escape(w.slice(0, -1))}[\\p{L}\\p{N}-]*` : escape(w));
    const spaced = cookieWords.filter((w) => /[a-zа-яё\u00c0-\u024f\u0370-\u03ff\u0590-\u06ff]/i.test(w));
    const unspaced = cookieWords.filter((w) => !spaced.includes(w));
    const COOKIES = new RegExp(`(?:^|[^\\p{L}])(?:${spaced.map(stem).join('|')})(?![\\p{L}])`
      + (unspaced.length ? `|${unspaced.map(stem).join('|')}` : ''), 'iu');
    const CONSENT_ATTR = /cookie|consent|gdpr|\bcmp|onetrust|didomi|cookiebot|usercentrics|quantcast|privacy/i;
    const POLICY_LINK = /cookie|privacy|datenschutz|gdpr|consent|privacidad|confidentialit|privacit|rgpd|dsgvo|politi/i;

    const shown = (n) => n.getClientRects().length > 0 && (!n.checkVisibility || n.checkVisibility({ visibilityProperty: true }));
    const isLayer = (n) => {
      const role = n.getAttribute('role');
      if (n.tagName === 'DIALOG' || role === 'dialog' || role === 'alertdialog' || n.getAttribute('aria-modal') === 'true') return true;
      const pos = getComputedStyle(n).position;
      return pos === 'fixed' || pos === 'sticky';
    };
    // Where banners are: marked by attributes or roles, or the layer under the viewport's edges and middle.
    const boxes = new Set(document.querySelectorAll(
      '[id*=cookie i],[class*=cookie i],[id*=consent i],[class*=consent i],[id*=gdpr i],[class*=gdpr i],'
      + '[id*=cmp i],[class*=cmp i],[aria-label*=cookie i],[aria-label*=consent i],[role=dialog],[role=alertdialog],'
      + 'dialog[open],[aria-modal=true]'));
    const w = innerWidth;
    const h = innerHeight;
    for (const [x, y] of [[w / 2, h - 8], [w / 2, 8], [w / 2, h / 2], [24, h - 24], [w - 24, h - 24], [w / 2, h * 0.8]]) {
      for (let n = document.elementFromPoint(x, y); n && n !== document.body && n !== document.documentElement; n = n.parentElement) {
        if (isLayer(n)) { boxes.add(n); break; }
      }
    }
    const label = (b) => (b.getAttribute('aria-label') || b.innerText || b.value || b.title || '').replace(/\s+/g, ' ').trim();
    // How much a button stands out from its banner: filled, saturated, contrasting (0 = plain).
    const rgb = (c) => (c.match(/[\d.]+/g) || []).map(Number);
    const luminance = ([r, g, b]) => (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
    const backgroundOf = (n) => {
      for (let e = n; e; e = e.parentElement) {
        const c = rgb(getComputedStyle(e).backgroundColor);
        if (c.length >= 3 && (c.length < 4 || c[3] > 0.5)) return c;
      }
      return [255, 255, 255];
    };
    const emphasis = (b, base) => {
      const c = rgb(getComputedStyle(b).backgroundColor);
      if (c.length < 3 || (c.length === 4 && c[3] < 0.3)) return 0;
      const chroma = (Math.max(c[0], c[1], c[2]) - Math.min(c[0], c[1], c[2])) / 255;
      return Math.abs(luminance(c) - luminance(base)) + chroma;
    };
    const tried = new Set();
    for (const box of boxes) {
      if (tried.has(box) || !shown(box)) continue;
      tried.add(box);
      const text = (box.innerText || '').replace(/\s+/g, ' ');
      if (!text || text.length > 5000) continue;
      const attrs = `${box.id} ${typeof box.className === 'string' ? box.className : ''} ${box.getAttribute('aria-label') || ''}`;
      const layer = isLayer(box);
      const policy = Array.from(box.querySelectorAll('a[href]')).some((a) => POLICY_LINK.test(a.getAttribute('href')));
      const fields = box.querySelector('input[type=email], input[type=text], input:not([type]), textarea, input[type=password]');
      const consent = COOKIES.test(text) || CONSENT_ATTR.test(attrs) || (layer && policy && !fields);
      if (!consent || (!layer && !CONSENT_ATTR.test(attrs))) continue;
      const buttons = Array.from(box.querySelectorAll(
        'button, [role=button], input[type=button], input[type=submit], a:not([href]), a[href^="#"], a[href^="javascript:" i]'))
        .filter((b) => shown(b) && !b.disabled && b.getAttribute('aria-disabled') !== 'true');
      if (!buttons.length) continue;
      const base = backgroundOf(box);
      const info = buttons.map((b) => {
        const name = label(b);
        const settings = b.hasAttribute('aria-haspopup') || b.hasAttribute('aria-expanded') || b.hasAttribute('aria-controls')
          || SAYS.settings.test(name);
        const reject = SAYS.reject.test(name) || SAYS.necessary.test(name);
        const close = !reject && SAYS.close.test(name);
        const accept = !reject && !close && SAYS.accept.test(name);
        return { b, name, settings: settings && !reject, reject, close, accept, emphasis: emphasis(b, base) };
      });
      const choices = info.filter((i) => !i.settings);
      // The visually primary button (it stands out clearly from the others) is the accept-all.
      const ranked = choices.slice().sort((a, b) => b.emphasis - a.emphasis);
      const primary = ranked.length >= 2 && ranked[0].emphasis - ranked[1].emphasis >= 0.25 && !ranked[0].reject ? ranked[0] : null;
      const left = choices.filter((i) => i !== primary && !i.accept && !i.close);
      let pick = null;
      const acceptSeen = choices.some((i) => i.accept) || primary;
      if (left.length === 1 && (acceptSeen || left[0].reject)) pick = left[0];
      else if (left.length > 1) pick = left.find((i) => i.reject) || null;
      if (!pick && !left.length) pick = choices.find((i) => i.close) || null;
      if (pick) { const name = pick.name || 'close'; pick.b.click(); return name; }
    }
    return null;
  }, __COOKIE_WORDS__).catch(() => null);

  if (opts.settle) await settle(800);
  let banner = null;
  if (opts.banners) {
    banner = await closeBanner();
    if (banner) await settle(500);
  }
  let data = null;
  for (let attempt = 0; attempt < 3 && data === null; attempt += 1) {
    try {
      data = await page.evaluate(extract, opts);
    } catch (e) {
      if (attempt === 2 || !/context was destroyed|navigat|Target closed/i.test(String(e))) throw e;
      await page.waitForLoadState('domcontentloaded', { timeout: 10000 }).catch(() => {});
    }
  }
  data.banner = banner;
  data.downloads = context.__bcDownloads.filter((d) => !d.reported && d.state !== 'inProgress' && d.state !== 'started');
  for (const d of data.downloads) d.reported = true;

  // Other tabs' titles: asked once per URL (background tabs can be slow to answer), then remembered.
  const title = async (p) => {
    const url = p.url();
    if (p.__bcTitle && p.__bcTitle.url === url) return p.__bcTitle.title;
    const found = await Promise.race([p.title(), new Promise((r) => setTimeout(() => r(null), 150))]).catch(() => null);
    if (found !== null) p.__bcTitle = { url, title: found };
    return found || '';
  };
  data.tabs = await Promise.all(context.pages().map(async (p, i) => [i, p === page, p.url(), p === page ? data.title : await title(p)]));

  if (opts.screenshot) {
    if (await page.evaluate(() => document.hidden).catch(() => false)) await page.bringToFront();
    await page.evaluate(() => {
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
    });
    try {
      data.screenshot = (await page.screenshot({ type: 'jpeg', quality: 60 })).toString('base64');
    } finally {
      await page.evaluate(() => document.getElementById('__bc_marks')?.remove());
    }
  }
  return data;
}
