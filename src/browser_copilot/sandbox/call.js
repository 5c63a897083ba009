// The app's side of one code call (F41, F45, F46, F47). It runs in the code tool's per-call realm with
// the real page; the model's code runs in the box (facade.js), which gets its source as a string and
// reaches the browser only through `io` below. Every input goes through `act`: first the guard judges
// what the input would reach (guard.js, in the page's isolated world: the element under the point, the
// focused field, the form a key submits, the drop target), then the input is sent exactly as judged.
// The call sees only the session's own tabs (reach.js); it ends when a dialog or file chooser opens,
// when the network policy holds a request, or when its time is up; secret fields' values are masked in
// whatever comes back. Called as (page, config), config = { version, source, allow, frames, owned, forbidden,
// uploads, deadline, actionTimeout, appCode, closeBanner, beforeAction, callId, guard, reach }. It answers
// { __bcActed, value, opened, images } (see `answer`). How one input is judged before it is sent is in
// preflight.js, which guarded.py puts in at `__PREFLIGHT__`.
async (page, config) => {
  const context = page.context();
  const box = context.__bcBox;
  if (context.__bcRuntimeV !== config.version || !box) return { __bcNeedsRuntime: true };
  box.revokeAll('Stopped: a new code call began.');
  const guard = config.guard;
  const allow = config.allow;

  let stop = () => undefined;
  let halted = null;
  let secretBlocked = 0;
  const stopWith = (why) => { halted = halted || why; stop(why); };
  const { owned, opened, forbidden, openedByOwned, adopt, apart, el, numberOf, mask, masked, seeSecrets,
    heldRequests, release } = await config.reach(page, config, guard, stopWith);

  // ----- one input, judged first -------------------------------------------------------------------
  const HOLD = "Stopped: an action of this code is held for the user's confirmation; the rest of the code did not run.";
  const timeoutOf = (o) => Math.max(1, Math.min(o && o.timeout !== undefined ? o.timeout : config.actionTimeout,
    config.deadline - Date.now() - 250));
  let acted = 0;
  let actedAt = null;
  let windows = 0;
  const held = [];
  const images = [];
  // Where each tab's pointer is: it stays where a call left it, so this outlives the call (the next
  // call's bare mouse.down()/up() is judged where it really lands). A button is never left down (`finish`).
  const mice = context.__bcMice || (context.__bcMice = new WeakMap());  // page -> { x, y, down }
  const mouseOf = (p) => mice.get(p) || mice.set(p, { x: 0, y: 0, down: false }).get(p);
  // The call is over (`over`): no input it began is made after it; `live` is asked before each input
  // and on every wait for an element. A `delay` never lets an input run past the call's time.
  const ENDED = 'Stopped: this code call has ended; its inputs are not made after it.';
  let over = false;
  const live = () => { if (over) throw new Error(ENDED); };
  const slow = (d, n = 1) => (d === undefined ? undefined : Math.max(0, Math.min(Number(d) || 0, 1000,
    Math.floor((config.deadline - Date.now() - 500) / Math.max(1, n)))));
  // One input judged first: signal, preflight, decided, aim, aimHere, stampOf and mark (preflight.js,
  // put here by guarded.py).
  __PREFLIGHT__
  // An option's label as the observation shortened it ("High-Yield Savings •••• 5678 —…") stands for
  // the one option whose label begins so: the model passes back what it was shown.
  const wholeLabels = async (target, want) => {
    const cut = (x) => typeof x === 'string' ? x.endsWith('…') : !!x && typeof x.label === 'string' && x.label.endsWith('…');
    const list = Array.isArray(want) ? want : [want];
    if (!list.some(cut)) return want;
    const labels = await target.evaluate((el) => Array.from(el.options || [], (o) => (o.label || o.textContent || '').replace(/\s+/g, ' ').trim()));
    const whole = (x) => {
      if (!cut(x)) return x;
      const start = (typeof x === 'string' ? x : x.label).slice(0, -1).replace(/\s+/g, ' ').trim();
      const found = labels.filter((l) => l.startsWith(start));
      return found.length === 1 ? { label: found[0] } : x;
    };
    return Array.isArray(want) ? list.map(whole) : whole(want);
  };
  // Human pacing (PACING=human) before an input; it may type a text itself (`{ result }`).
  const paced = async (name, target, args) => {
    const pacing = config.beforeAction ? config.beforeAction(name, target, args) : undefined;
    return pacing ? (await pacing) || null : null;
  };
  // `acted` counts the inputs that running the code again would repeat (a click, keys typed, a drag);
  // a fill, a choice, a tick, a focus, a scroll or a navigation leaves the page as it was asked to.
  const AGAIN = new Set(['fill', 'select', 'check', 'uncheck', 'focus', 'scroll', 'hover', 'upload', 'goto',
    'goBack', 'goForward', 'reload', 'mouse.move', 'mouse.wheel']);
  let current = null;
  // What the inputs that were made reached, in order: [input, role, name] (the step is told from these,
  // not from the code's text). `reached` is the last judged input's element.
  const made = [];
  let reached = null;
  // Going on after an input the judge checked, the app runs the code again (`config.skip`): the inputs
  // the first run made that a rerun would repeat are not made again; each must be the same input of the
  // same target as the first time, else the code stops there. `sigs`: this run's, for such a rerun.
  const skip = [...(config.skip || [])];
  const sigs = [];
  let sig = null;
  // Going on after an input the user allowed (`config.resume`): that input was made once by its replay;
  // the code runs again and every input up to it (`trail`: all of them, in order) is passed over.
  const resume = [...(config.resume || [])];
  const trail = [];
  const sigOf = (a) => [a.name, a.target ? String(a.target) : '', a.to ? String(a.to) : '',
    JSON.stringify(a.args.filter((x) => x === null || typeof x !== 'object' || Array.isArray(x)))].join(' ');
  const done = (value) => {
    if (!AGAIN.has(current)) { acted += 1; if (sig) sigs.push(sig); }
    actedAt = Date.now();
    if (reached && made.length < 40) made.push([current, ...reached]);
    reached = null;
    return value;
  };
  const withModifiers = async (p, modifiers, fn) => {
    const keys = (modifiers || []).filter((m) => ['Alt', 'Control', 'ControlOrMeta', 'Meta', 'Shift'].includes(m));
    for (const k of keys) await p.keyboard.down(k);
    try { return await fn(); } finally { for (const k of keys.reverse()) await p.keyboard.up(k); }
  };
  // The app's own click on a consent banner's least choice: checked like any input, and left alone when
  // the guard would hold it (a page's bait layer).
  let bannerClosed = null;
  let bannerHeld = null;
  const clickBanner = async (p, found) => {
    const box = await p.locator(`[data-bc-banner="${found.stamp}"]`).boundingBox({ timeout: 2000 }).catch(() => null);
    if (!box) return;
    const point = { x: box.x + box.width / 2, y: box.y + box.height / 2 };
    const out = await guard.page(p, { op: 'preflight', kind: 'press', point, signal: signal(p, 'banner', null) })
      .catch(() => null);
    if (out && out.held) bannerHeld = found.name;
    if (!out || !out.ok) return false;
    await p.mouse.click(point.x, point.y);
    bannerClosed = found.name;
    return true;
  };
  // In a young document a consent banner that came up after the last look would take a pointer's input:
  // the guard looks first (cheaply: only while the document is young, or changed since it found none),
  // and the app clicks its least choice.
  const lateBanner = async (p) => {
    if (config.appCode) return false;
    const found = await guard.page(p, { op: 'banner' }).catch(() => null);
    return !!(found && found.stamp) && !!(await clickBanner(p, found).catch(() => false));
  };
  const GOTO_SCHEMES = new Set(['http:', 'https:']);
  const navTimeout = (o) => timeoutOf({ timeout: o.timeout !== undefined ? o.timeout : config.navTimeout });
  // One input of the code (or of a replay): `a` = { name, page, target, to, args }. The action as it can
  // be done again (`done` then `replay`) is its name and arguments.
  const actOne = async (a) => {
    const p = a.page;
    if (halted) throw new Error(halted);
    live();
    if (!owned.has(p) || p.isClosed() || forbidden(p)) throw new Error("That tab is not this task's (or it has closed).");
    const last = a.args[a.args.length - 1];
    const o = last && typeof last === 'object' && !Array.isArray(last) ? last : {};
    const name = a.name;
    current = name;
    const action = { name, args: a.args };
    sig = AGAIN.has(name) || config.replay ? null : sigOf(a);
    if (!config.replay) trail.push(sigOf(a));
    if (resume.length) {
      if (resume.shift() !== trail[trail.length - 1]) {
        stopWith('Stopped: going on after the action the user allowed, the code took another way than the '
          + 'first time; nothing more was done. Look at the page.');
        throw new Error(halted);
      }
      return undefined;  // made before the user's /yes, or the allowed input itself (made by its replay)
    }
    if (sig && skip.length) {
      if (skip[0] !== sig) {
        stopWith('Stopped: going on after the checked input, the code took another way than the first time; '
          + 'nothing more was done. Look at the page.');
        throw new Error(halted);
      }
      skip.shift();
      return done(undefined);  // made by the first run
    }
    if (name === 'goto') {
      const url = String(a.args[0]);
      let scheme = null;
      try { scheme = new URL(url).protocol; } catch (e) { scheme = null; }
      if (url !== 'about:blank' && !GOTO_SCHEMES.has(scheme)) throw new Error(`Only http(s) addresses can be opened, not ${url.slice(0, 60)}`);
      if (/^[a-z]+:\/\/[^/?#]*@/i.test(url)) throw new Error('An address with a user name or password in it is not opened: open it without them.');
      decided(await guard.page(p, { op: 'address', url, allow, signal: signal(p, 'navigate', action) }), action);
      await paced('goto', p, [url]);
      const response = await p.goto(url, { timeout: navTimeout(o), waitUntil: o.waitUntil });
      return done({ url: p.url(), status: response ? response.status() : null });
    }
    if (name === 'goBack' || name === 'goForward' || name === 'reload') {
      decided(await guard.page(p, { op: 'window', allowed: config.replay ? 'allow' : 'structure',
        token: config.replay && allow ? allow.token : null, signal: signal(p, 'navigate', action) }), action);
      await paced(name, p, []);
      const response = await p[name]({ timeout: navTimeout(o), waitUntil: o.waitUntil });
      return done({ url: p.url(), status: response ? response.status() : null });
    }
    if (['click', 'dblclick', 'check', 'uncheck', 'hover'].includes(name)) {
      const target = a.target;
      const want = name === 'check' ? true : name === 'uncheck' ? false : null;
      if (want !== null && (await target.isChecked({ timeout: timeoutOf(o) })) === want) return done(undefined);
      // The banner the app just closed took the element the code meant (its own choice in it): done.
      if ((await lateBanner(p)) && !(await target.isVisible().catch(() => false))) return done(undefined);
      const kind = name === 'hover' ? 'hover' : 'press';
      const spot = await aim(p, target, o, kind, action);
      if (name === 'hover') {
        await p.mouse.move(spot.x, spot.y);
        Object.assign(mouseOf(p), { x: spot.x, y: spot.y });
        return done(undefined);
      }
      await paced(name, target, []);
      const clicks = name === 'dblclick' ? 2 : o.clickCount;
      await withModifiers(p, o.modifiers, () => pressAt(p, spot.x, spot.y, o, clicks, action, spot.recv));
      Object.assign(mouseOf(p), { x: spot.x, y: spot.y });
      if (want !== null && (await target.isChecked({ timeout: timeoutOf(o) }).catch(() => want)) !== want) {
        throw new Error(`Clicking the checkbox did not ${want ? 'check' : 'uncheck'} it`);
      }
      return done(undefined);
    }
    if (name === 'drag') {
      await lateBanner(p);
      const from = await aim(p, a.target, { position: o.sourcePosition, timeout: o.timeout }, 'drag', action,
        { target: a.to, o: { position: o.targetPosition, timeout: o.timeout } });
      const to = from.drop;
      await paced('dragTo', a.target, []);
      await p.mouse.move(from.x, from.y);
      await p.mouse.down();
      await p.mouse.move(to.x, to.y, { steps: 5 });
      await p.mouse.up();
      Object.assign(mouseOf(p), { x: to.x, y: to.y, down: false });
      return done(undefined);
    }
    if (name.startsWith('mouse.')) {
      if (name === 'mouse.click' || name === 'mouse.down') await lateBanner(p);
      const mouse = mouseOf(p);
      if (name === 'mouse.click' || name === 'mouse.move') [mouse.x, mouse.y] = [a.args[0], a.args[1]];
      // A press where the pointer already is: its held action says where, so /yes presses that point.
      if (name === 'mouse.down') action.args = [mouse.x, mouse.y, o];
      const kind = name === 'mouse.move' ? 'hover' : name === 'mouse.wheel' ? 'wheel'
        : name === 'mouse.up' && mouse.down ? 'drop' : 'press';
      const judged = await preflight(p, null, { op: 'preflight', kind, point: { x: mouse.x, y: mouse.y } }, action);
      decided(judged, action);
      if (name === 'mouse.click') {
        await paced('click', p, []);
        await pressAt(p, mouse.x, mouse.y, o, o.clickCount, action, judged.recv);
      } else if (name === 'mouse.move') {
        await p.mouse.move(mouse.x, mouse.y, o);
      } else if (name === 'mouse.down') {
        await p.mouse.move(mouse.x, mouse.y);  // pressed where it was judged, wherever it was left
        await p.mouse.down(o);
        Object.assign(mouse, { down: true, downX: mouse.x, downY: mouse.y });
      } else if (name === 'mouse.up') {
        await p.mouse.move(mouse.x, mouse.y);
        await p.mouse.up(o);
        mouse.down = false;
      } else {
        await p.mouse.wheel(a.args[0], a.args[1]);
      }
      return done(undefined);
    }
    if (name === 'key' || name === 'keys') {
      const typed = name === 'keys' ? String(a.args[0]) : null;
      decided(await preflight(p, null, { op: 'preflight', kind: typed === null ? 'key' : 'type', focused: true,
        key: typed === null ? String(a.args[0]) : undefined, text: typed || undefined }, action), action);
      if (typed === null) {
        await paced('press', p.keyboard, []);
        await p.keyboard.press(String(a.args[0]), { ...o, delay: slow(o.delay) });
      } else if (!(await paced('type', p.keyboard, [typed, o]))) {
        await p.keyboard.type(typed, { ...o, delay: slow(o.delay, typed.length) });
      }
      return done(undefined);
    }
    // An input into a locator's element itself: keys, text, a choice, files, focus, a scroll.
    const KINDS = { fill: 'fill', type: 'type', press: 'key', select: 'select', upload: 'upload', focus: 'focus', scroll: 'scroll' };
    const kind = KINDS[name];
    if (!kind) throw new Error(`unknown action ${name}`);
    const target = a.target;
    const key = name === 'press' ? String(a.args[0]) : undefined;
    const text = name === 'fill' || name === 'type' ? String(a.args[0]) : undefined;
    const files = name === 'upload' ? a.args[0].map(String) : [];
    if (name === 'upload' && (!files.length || files.some((f) => !(config.uploads || []).includes(f)))) {
      throw new Error('Only files the user named can be uploaded: use the upload_file tool.');
    }
    const ask = { op: 'preflight', kind, key, text: name === 'type' ? text : undefined, values: name === 'select' ? a.args[0] : undefined };
    let out = await preflight(p, null, { ...ask, ...(await refOf(target, Date.now() + timeoutOf(o))), here: true }, action);
    if (out.elsewhere) {
      const spot = await mark(target, o);
      out = await preflight(p, spot.frame, { ...ask, stamp: spot.stamp }, action);
    }
    decided(out, action);
    const options = { timeout: timeoutOf(o) };
    // A text the field did not keep (the page cleared it) was not typed: the step says so.
    const kept = async () => {
      const now = await target.inputValue({ timeout: 1000 }).catch(() => null);
      if (now !== null && text.trim() && !now.trim()) throw new Error('The field is empty after typing into it: the page cleared it. Look at the page before going on.');
    };
    if (name === 'fill') {
      if (!(await paced('fill', target, [text, options]))) await target.fill(text, options);
      await kept();
    } else if (name === 'type') {
      if (!(await paced('pressSequentially', target, [text, o]))) await target.pressSequentially(text, { ...options, delay: slow(o.delay, text.length) });
      await kept();
    } else if (name === 'press') {
      await paced('press', target, []);
      await target.press(key, { ...options, delay: slow(o.delay) });
    } else if (name === 'select') {
      await paced('selectOption', target, []);
      return done(await target.selectOption(await wholeLabels(target, a.args[0]), options));
    } else if (name === 'upload') {
      if (out.input) await out.frame.locator(`[data-bc-file="${out.input}"]`).setInputFiles(files, options);
      else await target.drop({ files }, options);
    } else if (name === 'focus') {
      await target.focus(options);
    } else {
      await target.scrollIntoViewIfNeeded(options);
    }
    return done(undefined);
  };

  // The code's inputs one at a time, each judged and made before the next is judged (two at once would
  // make one where the other's judgement no longer holds: the focus moved, the page scrolled), and
  // every one of them over before the call is (`finish`).
  let queue = Promise.resolve();
  const inflight = new Set();
  const serial = (fn) => (...args) => {
    if (over) return Promise.reject(new Error(ENDED));
    const run = queue.then(() => { live(); return fn(...args); });
    queue = run.catch(() => undefined);
    inflight.add(run);
    run.catch(() => undefined).finally(() => inflight.delete(run));
    return run;
  };
  const finish = async () => {
    over = true;
    while (inflight.size) await Promise.allSettled([...inflight]);
    // A button the code left down is let go where it was pressed (a drag dropped back on its source,
    // a press released on what was judged): the next call's up is then no drop that was never judged.
    for (const p of owned) {
      const mouse = mice.get(p);
      if (!mouse || !mouse.down || p.isClosed()) continue;
      mouse.down = false;
      await p.mouse.move(mouse.downX, mouse.downY).then(() => p.mouse.up()).catch(() => null);
      Object.assign(mouse, { x: mouse.downX, y: mouse.downY });
    }
  };
  const act = serial(actOne);
  // A look or a tab that sets off the page's own code with no input (a screenshot resizes or scrolls, a
  // new tab hides the others, a tab closes): a window of its own for each tab it touches, so the effect
  // gate judges what the page sends then as it judges an input's requests.
  const touched = async (pages, kind) => {
    for (const q of pages) {
      if (q.isClosed()) continue;
      await guard.page(q, { op: 'window', allowed: 'structure', token: null, signal: signal(q, kind, null) })
        .catch(() => null);
    }
  };

  // A replay: the held input once more, on the element that received it (the guard stamped it with the
  // action's id); its window is an approved one, by the one-time permission of the user's /yes.
  const AS_LOCATOR = { 'mouse.click': 'click', 'mouse.down': 'click', key: 'press', keys: 'type' };
  const replay = async (r) => {
    const action = r.action || {};
    const find = async (attr) => {
      for (const p of owned) {
        for (const f of p.frames()) {
          const l = f.locator(`[${attr}="${r.id}"]`);
          if (await l.count().catch(() => 0)) return { p, l: l.first() };
        }
      }
      return null;
    };
    const args = action.args || [];
    if (['goto', 'goBack', 'goForward', 'reload'].includes(action.name)) {
      await act({ name: action.name, page, args });
      return 'done';
    }
    const recv = await find('data-bc-recv');
    if (!recv) throw new Error('the element that action reached is no longer on the page');
    if (action.name === 'drag') {
      const drop = await find('data-bc-drop');
      if (!drop) throw new Error('the place it was dropped on is no longer on the page');
      await act({ name: 'drag', page: recv.p, target: recv.l, to: drop.l, args });
      return 'done';
    }
    if (['mouse.up', 'mouse.move', 'mouse.wheel'].includes(action.name)) throw new Error('that mouse input cannot be made again on its own');
    // A press at a point: at the same point (the guard checks again what lies under it).
    if (action.name === 'mouse.click' || action.name === 'mouse.down') {
      await act({ name: 'mouse.click', page: recv.p, args: [Number(args[0]) || 0, Number(args[1]) || 0, {}] });
      return 'done';
    }
    const name = AS_LOCATOR[action.name] || action.name;
    const again = name === 'press' || name === 'type' ? [String(args[0]), {}] : name === action.name ? args : [{}];
    await act({ name, page: recv.p, target: recv.l, args: again });
    return 'done';
  };

  // ----- reads and tabs the façade asks for --------------------------------------------------------
  const io = {
    deadline: config.deadline,
    masked,
    watch: (fn) => { stop = fn; if (halted) fn(halted); },
    el,
    act,
    async read(target, what, name, o) {
      if (what === 'attribute' && String(name).toLowerCase() !== 'value') return target.getAttribute(name, { timeout: timeoutOf(o) });
      // Finding the field stamps it from the page's own world, which the page can watch: what the page
      // sends meanwhile is judged in a window of its own, as for a look.
      await touched([target.page()], 'view');
      const here = { op: 'read', stamp: await stampOf(target, Date.now() + timeoutOf(o)), here: true };
      let out = await guard.page(target.page(), here).catch(() => null);
      if (out && out.elsewhere) {
        const spot = await mark(target, o);
        const read = { op: 'read', stamp: spot.stamp };
        out = await (apart(target.page(), spot.frame) ? guard.frame(spot.frame, read) : guard.page(target.page(), read))
          .catch(() => null);
      }
      if (!out || out.secret) throw new Error('That field holds a password, one-time code or card number; its value is not readable.');
      return what === 'value' ? target.inputValue({ timeout: timeoutOf(o) }) : target.getAttribute(name, { timeout: timeoutOf(o) });
    },
    pages: () => context.pages().filter((p) => owned.has(p) && !p.isClosed() && !forbidden(p)),
    async own(p) {
      if (!owned.has(p) && (forbidden(p) || !(await openedByOwned(p)))) throw new Error("That tab is not this task's.");
      return adopt(p);
    },
    newPage: serial(async () => {
      await touched([...owned], 'view');
      return adopt(await context.newPage());
    }),
    nextPage: (timeout) => context.waitForEvent('page', { timeout }),
    front: serial(async (p) => {
      if (!owned.has(p)) return;
      await touched([...owned], 'view');
      await p.bringToFront();
    }),
    close: serial(async (p) => {
      if (p === page || !owned.has(p)) throw new Error("Only a tab this task opened can be closed, not the task's own tab.");
      await touched([...owned], 'view');
      await p.close();
    }),
    // Every secret field the guard knows (it marks them as it looks now: a revealed password, a field
    // secret by its name) is masked, in every frame. A page holding a secret value gets no picture at all:
    // its own code may draw the value anywhere (a canvas, a copy, a pseudo-element), where no mask reaches.
    screenshot: serial(async (target, o) => {
      const p = typeof target.mainFrame === 'function' ? target : target.page();
      await touched([p], 'view');
      if ((await seeSecrets()).has(p)) {
        throw new Error('This page holds a password, one-time code or card number: no picture of it is taken (read its text instead).');
      }
      const secret = p.frames().map((f) => f.locator('input[type=password], input[autocomplete~="one-time-code"], input[autocomplete^="cc-"], [data-bc-secret], [data-bc-opaque]'));
      const shot = await target.screenshot({ type: 'jpeg', quality: 70, fullPage: !!o.fullPage, mask: secret, timeout: timeoutOf(o) });
      images.push(shot.toString('base64'));
      return { screenshot: images.length, bytes: shot.length };
    }),
  };
  let out;
  try {
    if (config.closeBanner) {
      const found = await guard.page(page, { op: 'banner', always: true }).catch(() => null);
      if (found && found.stamp) await clickBanner(page, found).catch(() => null);
    }
    if (config.replay) {
      try {
        out = { json: JSON.stringify(await replay(config.replay)) };
      } catch (e) {
        out = { error: String(e && e.message), name: 'Error' };
      }
    } else {
      out = await box.run(page, config.source, io);
    }
    await finish();
  } finally {
    over = true;  // however the call ends, none of its inputs is made after it
    release();
  }
  await seeSecrets();
  const result = out.json === undefined || out.json === null ? undefined : JSON.parse(out.json);
  const error = out.error === undefined ? null : new Error(mask(out.error));
  if (error && out.name !== 'Error') error.name = out.name;
  const answer = (value) => ({ __bcActed: actedAt, value, opened: opened.filter(Boolean), images,
    banner: bannerClosed, bannerHeld, made: masked(made), ...(config.resume ? { resuming: resume.length } : {}) });
  if (held.length || secretBlocked || heldRequests.length) {
    return answer(masked({ __bcGuard: { held, secretBlocked, acted, sigs, trail, requests: heldRequests },
      result: result === undefined ? null : result, error: error ? error.message : null }));
  }
  // An error with news of the app's own part (a banner it left, a tab the code opened) keeps that news.
  if (error && (bannerClosed || bannerHeld || opened.length || images.length || made.length || config.resume)) {
    return { ...answer(undefined), error: `${error.name}: ${error.message}` };
  }
  if (error) throw error;
  return answer(masked(result));
}
