// A consent banner in the way (F63): the app chooses the option that is neither "accept" nor "settings"
// (reject, necessary only, continue without...), decided by structure in any language; never accept.
// Found by the observation (observer.js) or by the guard (guard.js), before each action of a code call in
// a young document: a banner that appears a moment after the load does not take the model's click.
// A banner is a dialog or a fixed/sticky layer that speaks of cookies (the lexicon's cookie words in
// many languages), is marked as consent by its attributes, or links to a privacy/cookie policy.
// Its buttons: "settings" opens more UI (aria-haspopup/expanded/controls); "accept" is the visually
// primary one or says so; what is left, if it is one button, is the choice. The word lists below
// only break ties (several left, none primary). Returns the chosen button's name, or null (`as`
// 'element': the button itself, for the guard). It never clicks: the app's own click is an input the
// guard checks like any other (guard.js, call.js).
(cookieWords, as = 'name') => {
  const shown = (n) => n.getClientRects().length > 0 && (!n.checkVisibility || n.checkVisibility({ visibilityProperty: true }));
  const isLayer = (n) => {
    const role = n.getAttribute('role');
    if (n.tagName === 'DIALOG' || role === 'dialog' || role === 'alertdialog' || n.getAttribute('aria-modal') === 'true') return true;
    const pos = getComputedStyle(n).position;
    return pos === 'fixed' || pos === 'sticky';
  };
  // The cheap look first: where banners are, marked by attributes or roles, or the layer under the
  // viewport's edges and middle. Nothing shown there: no banner, and nothing more is built or read.
  const boxes = new Set(document.querySelectorAll(
    '[id*=cookie i],[class*=cookie i],[id*=consent i],[class*=consent i],[id*=gdpr i],[class*=gdpr i],'
    + '[id*=cmp i],[class*=cmp i],[aria-label*=cookie i],[aria-label*=consent i],[role=dialog],[role=alertdialog],'
    + 'dialog[open],[aria-modal=true]'));
  const w = innerWidth;
  const h = innerHeight;
  // A layer that holds the site's navigation or search is its header, not a banner.
  const SITE = 'nav, [role=navigation], [role=search], input[type=search]';
  for (const [x, y] of [[w / 2, h - 8], [w / 2, 8], [w / 2, h / 2], [24, h - 24], [w - 24, h - 24], [w / 2, h * 0.8]]) {
    for (let n = document.elementFromPoint(x, y); n && n !== document.body && n !== document.documentElement; n = n.parentElement) {
      if (isLayer(n)) { if (!n.querySelector(SITE)) boxes.add(n); break; }
    }
  }
  for (const box of boxes) if (!shown(box)) boxes.delete(box);
  if (!boxes.size) return null;

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
    // Declining a pop-up's offer (a newsletter, a promotion) without taking it.
    decline: ['no thanks', 'no, thanks', 'not now', 'maybe later', 'later', 'nein danke', 'nein, danke', 'später',
      'non merci', 'plus tard', 'no gracias', 'no, gracias', 'más tarde', 'no grazie', 'no, grazie', 'più tardi',
      'não, obrigado', 'não obrigado', 'nee bedankt', 'nie, dziękuję', 'нет, спасибо', 'нет спасибо', 'позже',
      'ні, дякую', 'hayır, teşekkürler', '不用了', '稍后', 'いいえ', '後で', '괜찮습니다'],
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
  for (const box of boxes) {
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
    if (pick && as === 'element') return pick.b;
    if (pick) return pick.name || 'close';
  }
  // No consent banner: a pop-up that blocks the page to offer a newsletter or a promotion (a modal or a
  // layer over the middle of the page, an e-mail field and no password) is declined or closed, never
  // subscribed to. One whose only way out is to take the offer is left alone.
  const DECLINE = new RegExp(`^(?:${WORDS.decline.map(escape).join('|')})[.!]?$`, 'iu');
  const middle = document.elementFromPoint(w / 2, h / 2);
  for (const box of boxes) {
    const modal = box.tagName === 'DIALOG' || box.getAttribute('aria-modal') === 'true' || (!!middle && box.contains(middle));
    if (!modal || !isLayer(box) || box.querySelector('input[type=password]')) continue;
    const email = box.querySelector('input[type=email], input[autocomplete=email], input[name*=mail i], input[placeholder*=mail i]');
    if (!email || box.querySelectorAll('input:not([type=hidden]):not([type=checkbox])').length > 2) continue;
    const buttons = Array.from(box.querySelectorAll('button, [role=button], a:not([href]), a[href^="#"], input[type=button]'))
      .filter((b) => shown(b) && !b.disabled && b.getAttribute('type') !== 'submit' && !(b.form && !b.getAttribute('type') && b.tagName === 'BUTTON'));
    const pick = buttons.find((b) => DECLINE.test(label(b))) || buttons.find((b) => SAYS.close.test(label(b)));
    if (pick) return as === 'element' ? pick : label(pick) || 'close';
  }
  return null;
}
