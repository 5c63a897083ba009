// The app's side of one code call (F41, F45, F47). It runs in the code tool's per-call VM realm with
// the real page; the model's code does not run here but in the box (sandbox/membrane.js), which gets
// its source as a string. Around it: the pre-flight check of the targets the code names, the guard
// armed in every page the code acts on and in each frame of another origin in them, the halt after a
// held action, the guard's report, and the values of secret fields masked in whatever comes back.
// Called as (page, config) with config = { version, source, allow, preflight, exposed, el,
// beforeAction, guard, appCode, closeBanner, addresses }: appCode, the app's own code (a replay), whose
// page code is not named as the model's; closeBanner, the consent banner an observation found is closed
// by the guard, armed, as the call begins; addresses, the goto() addresses written out in the code;
// guard, world.js's { page, frame }. It answers { __bcActed, value } (see `acted`).
async (page, config) => {
  const context = page.context();
  if (context.__bcRuntimeV !== config.version || !context.__bcBox) return { __bcNeedsRuntime: true };
  const guard = config.guard;
  const allow = config.allow;

  // Secrets: the values of secret fields seen before and after the code (every guarded document).
  const secrets = new Set();
  const note = (report) => {
    for (const v of (report && report.secrets) || []) if (String(v).length >= 3) secrets.add(String(v));
  };
  const variants = (v) => {
    const utf8 = Buffer.from(v, 'utf8');
    const b64 = utf8.toString('base64');
    return [v, JSON.stringify(v).slice(1, -1), encodeURIComponent(v), b64, b64.replace(/=+$/, ''),
      utf8.toString('hex'), [...v].reverse().join(''), [...v].join(' '), [...v].join(','),
      [...v].map((ch) => ch.codePointAt(0)).join(',')].filter((x) => x.length >= 3);
  };
  const mask = (text) => {
    let out = String(text);
    for (const v of secrets) for (const form of variants(v)) out = out.split(form).join('<masked>');
    return out;
  };
  const masked = (value) => {
    if (value === undefined || !secrets.size) return value;
    const text = mask(JSON.stringify(value));
    try { return JSON.parse(text); } catch (e) { return text; }
  };

  // Where the guard is armed: every page the code acts on (a tab or popup it opened or found
  // included), armed before its first action and again in each new document, and in each of them the
  // frames the page's own world cannot reach (another origin, or below one).
  const origin = (url) => {
    try { const o = new URL(url).origin; return o === 'null' ? null : o; } catch (e) { return null; }
  };
  const originOf = (frame) => {
    for (let f = frame; f; f = f.parentFrame()) { const o = origin(f.url()); if (o) return o; }
    return null;
  };
  const apart = (p) => p.frames().filter((f) => {
    for (let x = f; x !== p.mainFrame(); x = x.parentFrame()) {
      if (!x.parentFrame() || originOf(x) !== originOf(x.parentFrame())) return true;
    }
    return false;
  });
  const targets = new Map();
  // A permission is for the agent's tab, or for the held element (by its stamp) wherever it is.
  const allowFor = (t) => (t === page || (allow && allow.held.length) ? allow : null);
  const op = (t, args) => (targets.get(t).kind === 'page' ? guard.page(t, args) : guard.frame(t, args));
  // A tab of the app's own server (or the browser's DevTools endpoint) is the user's, never the code's:
  // nothing there is acted on, however the code reached it (pages(), a popup).
  const LOOPBACK = new Set(['localhost', '127.0.0.1', '::1', '0.0.0.0']);
  const forbiddenPage = (p) => {
    let u;
    try { u = new URL(p.url()); } catch (e) { return false; }
    const host = u.hostname.replace(/^\[|\]$/g, '').toLowerCase();
    const port = u.port || (u.protocol === 'https:' || u.protocol === 'wss:' ? '443' : '80');
    return (context.__bcForbidden || []).some((origin) => {
      const at = origin.lastIndexOf(':');
      const h = origin.slice(0, at);
      return origin.slice(at + 1) === port && (h === host || (LOOPBACK.has(h) && LOOPBACK.has(host)));
    });
  };
  // `facts`: the pre-flight's targets, checked in the same round trip as the page is armed; `ahead`: the
  // addresses the code writes out for goto(), judged in that round trip too, while the page is still at
  // the address they were judged from.
  let checked = null;
  let ahead = null;
  // Another run's tabs (parallel tasks in one browser) are not this task's: hidden from pages(), and
  // never acted in however the code reached them.
  const foreign = new Set(context.__bcForeign || []);
  const hidden = new Set();
  const foreignPage = async (p) => {
    if (!foreign.size) return false;
    if (!hidden.has(p) && foreign.has(await guard.target(p).catch(() => null))) hidden.add(p);
    return hidden.has(p);
  };
  if (foreign.size) for (const p of context.pages()) await foreignPage(p);
  // `banner`: close a consent banner in the way in the same op (a young document; see clearBanner).
  const arm = async (p, facts, banner = false) => {
    if (forbiddenPage(p)) {
      throw new Error("Refused: that tab shows Browser Copilot's own page (or the browser's DevTools); "
        + 'your code never acts there. Only the user answers its cards.');
    }
    if (await foreignPage(p)) {
      throw new Error("Refused: that window is another task's that runs at the same time; your code "
        + 'works only in its own tabs and the ones the user has open.');
    }
    if (!targets.has(p)) {
      const entry = { kind: 'page', fresh: 0 };
      entry.again = () => {
        entry.fresh = 0;
        guard.page(p, { op: 'arm', allow: allowFor(p) }).catch(() => null);
      };
      entry.moved = (f) => { if (f !== p.mainFrame()) targets.delete(f); };
      targets.set(p, entry);
      p.on('domcontentloaded', entry.again);
      p.on('framenavigated', entry.moved);
      const checkBanner = config.closeBanner && p === page ? 'always' : banner && !config.appCode;
      const addresses = p === page ? config.addresses : undefined;
      const armed = await guard.page(p, { op: 'arm', allow: allowFor(p), facts, banner: checkBanner, addresses })
        .catch(() => null);
      if (addresses && armed && armed.addresses) ahead = armed.addresses;
      entry.fresh = checkBanner ? Date.now() : 0;
      note(armed);
      if (facts) checked = (armed && armed.facts) || [];
    }
    for (const f of apart(p)) {
      if (targets.has(f)) continue;
      targets.set(f, { kind: 'frame' });
      note(await guard.frame(f, { op: 'arm', allow: allowFor(f) }).catch(() => null));
    }
  };
  const pageOf = (t) => {
    try {
      if (typeof t.mainFrame === 'function') return t;
      if (typeof t.page === 'function') return t.page();
      if (typeof t.owner === 'function') return t.owner().page();
      if (t._page && typeof t._page.mainFrame === 'function') return t._page;
      if (t._frame && typeof t._frame.page === 'function') return t._frame.page();
    } catch (e) { /* not a page's */ }
    return page;
  };

  // A consent banner that comes up a moment after a load (the page observed before it, or a page the
  // code just opened) would take the next click: in a young document the guard closes it first
  // (guard.js `banner`: by structure, never "accept") before each action but a goto, which leaves the
  // page. The op that arms a page does it for the first action there when that comes at once (within
  // FRESH_MS, the code's own preamble); any other asks again (the guard searches the page only when
  // something changed since it last found none).
  const FRESH_MS = 50;
  const clearBanner = async (p, name, known) => {
    const entry = targets.get(p);
    if (config.appCode || name === 'goto' || !entry) return;
    const fresh = !known || Date.now() - entry.fresh < FRESH_MS;
    entry.fresh = 0;
    if (!fresh) await guard.page(p, { op: 'banner' }).catch(() => null);
  };

  let halted = null;
  // When the code's last action came back (the wall clock, ms): an observation's settle counts its quiet
  // time from there, not from when the call's answer reached the app (ACTED in guarded.py).
  let acted = null;
  // An address the code opens with goto() that acts when opened (a committing GET) is held like a
  // button, before the browser is asked to load it.
  const held = [];
  const halt = "Stopped: an action of this code is held for the user's confirmation; the rest of the code did not run.";
  const beforeGoto = async (t, url) => {
    const p = pageOf(t);
    await arm(p);
    targets.get(p).fresh = 0;
    const href = String(url);
    const judged = p === page && ahead && p.url() === ahead.href && Object.hasOwn(ahead.held, href);
    const entry = judged ? ahead.held[href]
      : await guard.page(p, { op: 'address', url: href }).catch(() => null);
    if (!entry || (allow && allow.names.includes(href.toLowerCase()))) return;
    held.push({ id: `held-goto-${Date.now()}-${held.length}`, ...entry });
    halted = halt;
    throw new Error(halt);
  };

  // After each action: if the guard now holds something, the rest of the code does not run (its
  // next steps would act on a page that is waiting for the user's decision).
  const options = {
    halted: () => halted,
    beforeAction: config.beforeAction,
    beforeActing: async (t, name) => {
      const p = pageOf(t);
      const known = targets.has(p);
      await arm(p, undefined, name !== 'goto');
      await clearBanner(p, name, known);
    },
    beforeGoto,
    afterAction: async () => {
      acted = Date.now();
      let n = 0;
      for (const t of [...targets.keys()]) n += Number(await op(t, { op: 'count' }).catch(() => 0)) || 0;
      if (n) {
        halted = halt;
        throw new Error(halted);
      }
    },
    el: config.el,
    hidden: (p) => hidden.has(p),
    exposed: config.exposed,
    tagged: !config.appCode,
  };
  const unlisten = () => {
    for (const [t, entry] of targets) {
      if (entry.kind !== 'page') continue;
      t.off('domcontentloaded', entry.again);
      t.off('framenavigated', entry.moved);
    }
  };
  const disarm = async () => {
    const report = { held: [...held], secretBlocked: 0, acted: 0 };
    for (const t of [...targets.keys()]) {
      const r = await op(t, { op: 'disarm' }).catch(() => null);
      if (!r) continue;
      report.held.push(...r.held);
      report.secretBlocked += r.secretBlocked;
      report.acted += Number(r.acted) || 0;
      note(r);
    }
    return report;
  };

  // Pre-flight, before the code runs (its verdicts come with the arming of the agent's tab): a
  // destructive target the code names and activates, not allowed, or typing into a secret field, stops
  // the call, and the guard is disarmed again.
  const preflight = config.preflight;
  await arm(page, preflight ? { numbers: preflight.numbers, names: preflight.names } : undefined, true);
  if (preflight) {
    const ok = (c) => !!allow && ((c.ref.startsWith('el(') && allow.numbers.includes(Number(c.ref.slice(3, -1))))
      || allow.names.includes(c.ref.toLowerCase()));
    const risky = (c) => (c.verdict.destructive || c.verdict.judge) && preflight.acts.includes(c.ref.toLowerCase()) && !ok(c);
    const checks = checked || [];
    if (checks.some((c) => risky(c) || (preflight.typing && c.secret))) {
      unlisten();
      await disarm();
      return { __bcPreflight: checks.filter((c) => risky(c) || c.secret) };
    }
  }
  let out;
  try {
    out = await context.__bcBox.run(page, config.source, options);
  } finally {
    unlisten();
  }
  const report = await disarm();

  const result = out.json === undefined || out.json === null ? undefined : JSON.parse(out.json);
  const error = out.error === undefined ? null : new Error(mask(out.error));
  if (error && out.name !== 'Error') error.name = out.name;
  if (report.held.length || report.secretBlocked) {
    const value = masked({ __bcGuard: report, result: result === undefined ? null : result, error: error ? error.message : null });
    return { __bcActed: acted, value };
  }
  if (error) throw error;
  return { __bcActed: acted, value: masked(result) };
}
