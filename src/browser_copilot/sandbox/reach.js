// What one code call may reach (F45, F47), for call.js: the session's own tabs (the target ids it was
// told it owns, and the tabs those open: a popup, a target=_blank link, also with noopener), never a tab
// of the app's own server or the DevTools endpoint; the events that stop the call in them (a dialog, a
// file chooser, a request the network policy held); the frames whose guard is their own; `el(N)`; and
// the secret values of every tab it reached, masked in whatever goes back.
// Called as (page, config, guard, stopWith) => { owned, opened, forbidden, openedByOwned, adopt, apart,
// el, mask, masked, seeSecrets, heldRequests, release }.
async (page, config, guard, stopWith) => {
  const context = page.context();
  const allow = config.allow;

  // ----- the session's tabs ----------------------------------------------------------------------
  // This machine itself, however it is named (urls.py `is_loopback`): localhost and any name under it,
  // 127/8, ::1 (IPv4-mapped too), the unspecified address.
  const loopback = (h) => h === 'localhost' || h.endsWith('.localhost') || /^127\.\d+\.\d+\.\d+$/.test(h)
    || h === '::1' || h === '0.0.0.0' || h === '::' || /^::ffff:(7f[0-9a-f]{2}:|127\.)/.test(h);
  // A tab of the app's own server (or the browser's DevTools endpoint) is the user's, never the code's.
  const forbidden = (p) => {
    let u;
    try { u = new URL(p.url()); } catch (e) { return false; }
    const host = u.hostname.replace(/^\[|\]$/g, '').toLowerCase();
    const port = u.port || (u.protocol === 'https:' ? '443' : '80');
    return (config.forbidden || []).some((origin) => {
      const at = origin.lastIndexOf(':');
      const h = origin.slice(0, at);
      return origin.slice(at + 1) === port && (h === host || (loopback(h) && loopback(host)));
    });
  };
  const owned = new Set([page]);
  const ownedIds = new Set(config.owned || []);
  const opened = [];
  if (ownedIds.size) {
    for (const p of context.pages()) {
      if (p !== page && ownedIds.has(await guard.target(p).catch(() => null))) owned.add(p);
    }
  }
  const watching = [];
  const onChooser = () => stopWith('Stopped: a file chooser opened. Upload with the upload_file tool instead.');
  const onDialog = (dialog) => {
    if (!owned.has(dialog.page())) return;
    stopWith(`Stopped: the page opened a ${dialog.type()} dialog ("${dialog.message().slice(0, 160)}"); `
      + 'answer it with handle_dialog.');
  };
  const heldRequests = [];
  const onNetwork = (payload) => {
    let message = null;
    try { message = JSON.parse(payload); } catch (e) { return; }
    if (message && message.held) {
      heldRequests.push(message.held);
      stopWith("Stopped: a request this code's action sent is held for the user's confirmation; the rest of the code did not run.");
    }
  };
  const adopt = async (p) => {
    if (!owned.has(p)) {
      owned.add(p);
      opened.push(await guard.target(p).catch(() => null));
    }
    p.on('filechooser', onChooser);
    watching.push(() => p.off('filechooser', onChooser));
    const unlisten = await guard.listen(p, onNetwork).catch(() => null);
    if (unlisten) watching.push(unlisten);
    return p;
  };
  // A tab an owned tab opened (a popup, a link with target=_blank, also with noopener) is the session's.
  const openedByOwned = async (p) => {
    const opener = await guard.opener(p).catch(() => null);
    if (!opener) return false;
    if (ownedIds.has(opener)) return true;
    for (const o of owned) if ((await guard.target(o).catch(() => null)) === opener) return true;
    return false;
  };
  const onPage = async (p) => {
    if (!forbidden(p) && (await openedByOwned(p))) await adopt(p);
  };
  context.on('page', onPage);
  context.on('dialog', onDialog);
  for (const p of [...owned]) await adopt(p);

  // ----- el(N), secrets ----------------------------------------------------------------------------
  // `numberOf`: the number of an `el(N)` of the page itself (not in a frame), for the guard to find it by.
  const numbers = new WeakMap();
  const el = (n) => {
    const chain = (config.frames || {})[n] || [];
    let scope = page;
    for (const f of chain) scope = scope.frameLocator(`[data-bc-frame="${f}"]`);
    const found = scope.locator(`[data-bc-id="${n}"]`);
    if (!chain.length) numbers.set(found, n);
    return found;
  };
  const numberOf = (locator) => numbers.get(locator);
  const secrets = new Set();
  const note = (report) => {
    for (const v of (report && report.secrets) || []) if (String(v).length >= 3) secrets.add(String(v));
  };
  const variants = (v) => {
    const utf8 = Buffer.from(v, 'utf8');
    const b64 = utf8.toString('base64');
    // JSON's escapes, and a JavaScript literal's (a quote escaped: Playwright quotes names in its errors).
    return [v, JSON.stringify(v).slice(1, -1), v.replace(/[\\'"`]/g, '\\$&'), encodeURIComponent(v), b64, b64.replace(/=+$/, ''),
      utf8.toString('hex'), [...v].reverse().join(''), [...v].join(' '), [...v].join(',')].filter((x) => x.length >= 3);
  };
  // A number (a card's, a code's) also with other separators between its digits, as pages copy it.
  const SEP = '[\\s./\\-\\u00a0\\u2009\\u200b]?';
  const digitsOf = (v) => {
    const d = v.replace(/\D/g, '');
    return d.length >= 6 && d.length * 5 >= v.length * 4 ? new RegExp(d.split('').join(SEP), 'g') : null;
  };
  const mask = (text) => {
    let out = String(text);
    for (const v of secrets) {
      for (const form of variants(v)) out = out.split(form).join('<masked>');
      const digits = digitsOf(v);
      if (digits) out = out.replace(digits, '<masked>');
    }
    return out;
  };
  const masked = (value) => {
    if (value === undefined || !secrets.size) return value;
    const text = mask(JSON.stringify(value));
    try { return JSON.parse(text); } catch (e) { return text; }
  };
  // The secret values of every document the code may read: each page's (with its same-origin frames)
  // and each frame of another origin's, whose guard answers for it. Returns the pages that hold one.
  const seeSecrets = async () => {
    const asked = [];
    for (const p of owned) {
      if (p.isClosed()) continue;
      asked.push([p, guard.page(p, { op: 'secrets' })]);
      for (const f of p.frames()) if (apart(p, f)) asked.push([p, guard.frame(f, { op: 'secrets' })]);
    }
    const reports = await Promise.all(asked.map(([, a]) => a.catch(() => null)));
    reports.forEach(note);
    return new Set(asked.filter((_, i) => reports[i] && (reports[i].secrets || []).length).map(([p]) => p));
  };
  // Frames the page's own world cannot reach (another origin, or below one) have a guard of their own.
  const origin = (url) => {
    try { const o = new URL(url).origin; return o === 'null' ? null : o; } catch (e) { return null; }
  };
  const originOf = (frame) => {
    for (let f = frame; f; f = f.parentFrame()) { const o = origin(f.url()); if (o) return o; }
    return null;
  };
  const apart = (p, frame) => {
    for (let x = frame; x && x !== p.mainFrame(); x = x.parentFrame()) {
      if (!x.parentFrame() || originOf(x) !== originOf(x.parentFrame())) return true;
    }
    return false;
  };
  // A one-time permission marks its targets in every document the call may reach (frames of another
  // origin have a guard of their own).
  if (allow) {
    for (const p of owned) {
      note(await guard.page(p, { op: 'allow', allow }).catch(() => null));
      for (const f of p.frames()) if (apart(p, f)) await guard.frame(f, { op: 'allow', allow }).catch(() => null);
    }
  }
  await seeSecrets();
  const release = () => {
    context.off('page', onPage);
    context.off('dialog', onDialog);
    for (const undo of watching) undo();
  };
  return { owned, opened, forbidden, openedByOwned, adopt, apart, el, numberOf, mask, masked, seeSecrets, heldRequests,
    release };
}
