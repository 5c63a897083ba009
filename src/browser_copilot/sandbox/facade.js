// The browser API the model's code gets (F45): seed 001's Playwright API, each method mediated, and
// nothing else. Evaluated once per MCP server in a realm of its own that `ses` has locked down
// (sandbox/box.py); each code call then runs the model's *source* in a fresh `Compartment` whose only
// globals are `page`, `el`, the call's own timers, Date and Math.
//
// What the code holds are plain objects of this realm, made here and frozen, whose methods close over
// the real Playwright objects: nothing of Node's realm is ever handed over. What comes back is data
// (copied through this realm's JSON) or another such object; what goes out is copied into fresh
// objects of known keys and types. A name that is not here is absent (`undefined`); calling it fails
// with one sentence that names what to use instead (`explain`). Every effect (input, navigation, a new
// tab, a screenshot) goes through `io`, the app's side of the call (call.js), which checks it first.
//
// Revocation: each call is a record; a new call ends every earlier one, and a call ends when its code
// returns or throws, when `io` stops it (a dialog or file chooser opened, an action was held, its time
// ran out) or when the app begins another call. After that its objects do nothing: what was in flight
// and every later call never settles (the code sleeps: no rejection reaches Node's unhandled-rejection
// handler, which would end the tool call with it), its timers are cleared and never fire.
// Called as (host, harden, Compartment) => { run(page, source, io), revokeAll(reason) }.
(host, harden, Compartment) => {
  'use strict';
  const { freeze, keys } = Object;
  const isArray = Array.isArray;
  const live = new Set();
  const NEVER = () => new Promise(() => {});

  // ----- what crosses ------------------------------------------------------------------------------
  // Anything thrown, as strings (a getter that throws reads as 'error').
  const describe = (e) => {
    if (e === null || (typeof e !== 'object' && typeof e !== 'function')) return { message: String(e), name: 'Error' };
    let message = 'error';
    let name = 'Error';
    try { message = String(e.message); } catch (_) { /* unreadable */ }
    try { if (typeof e.name === 'string') name = e.name; } catch (_) { /* no name */ }
    return { message, name };
  };
  const localError = (e) => {
    const { message, name } = describe(e);
    const error = new Error(message);
    if (name !== 'Error') Object.defineProperty(error, 'name', { value: name });
    return error;
  };
  // A value of Node's realm as data of this one (functions and undefined are dropped).
  const data = (v) => {
    if (v === undefined || typeof v === 'function') return undefined;
    if (v === null || typeof v !== 'object') return v;
    const text = JSON.stringify(v);
    return text === undefined ? undefined : JSON.parse(text);
  };
  const readText = (v) => typeof v === 'string' || (isArray(v) && v.every((x) => typeof x === 'string'));
  const settle = async (p) => {
    try { return await p; } catch (e) { throw localError(e); }
  };

  // What the model's code passes, as fresh values of known types.
  const text = (v, what) => {
    if (typeof v === 'number' || typeof v === 'boolean') return String(v);
    if (typeof v !== 'string') throw new TypeError(`${what} must be a string`);
    return v;
  };
  const number = (v, what) => {
    const n = Number(v);
    if (!Number.isFinite(n)) throw new TypeError(`${what} must be a number`);
    return n;
  };
  const pattern = (v, what) => (v instanceof RegExp ? new RegExp(String(v.source), String(v.flags)) : text(v, what));
  const KINDS = {
    string: text,
    number,
    boolean: (v) => !!v,
    pattern,
    point: (v, what) => ({ x: number(v && v.x, `${what}.x`), y: number(v && v.y, `${what}.y`) }),
    strings: (v, what) => (isArray(v) ? v.map((x, i) => text(x, `${what}[${i}]`)) : [text(v, what)]),
  };
  // An options object with only the keys of `spec`, each of its kind; other keys are left out.
  const options = (o, spec, extra = {}) => {
    const out = {};
    if (o !== undefined && o !== null && typeof o !== 'object') {
      if (spec.timeout && typeof o === 'number') return { timeout: o };
      throw new TypeError('options must be an object');
    }
    for (const key of keys(spec)) {
      const v = o ? o[key] : undefined;
      if (v === undefined) continue;
      out[key] = spec[key] === 'locator' ? extra.real(v, key) : KINDS[spec[key]](v, key);
    }
    return out;
  };
  const ROLE = { name: 'pattern', exact: 'boolean', checked: 'boolean', disabled: 'boolean', expanded: 'boolean',
    includeHidden: 'boolean', level: 'number', pressed: 'boolean', selected: 'boolean' };
  const EXACT = { exact: 'boolean' };
  const FILTER = { hasText: 'pattern', hasNotText: 'pattern', has: 'locator', hasNot: 'locator', visible: 'boolean' };
  const TIMEOUT = { timeout: 'number' };
  const CLICK = { button: 'string', clickCount: 'number', delay: 'number', modifiers: 'strings', position: 'point', timeout: 'number' };
  const NAVIGATE = { timeout: 'number', waitUntil: 'string' };

  // ----- one call ----------------------------------------------------------------------------------
  const makeCall = (io) => {
    let state = 'running';
    let reason = '';
    let wake = null;
    const stopped = new Promise((_, reject) => { wake = reject; });
    stopped.catch(() => undefined);
    const timers = new Map();
    let nextTimer = 1;
    let deadline = null;
    const call = {
      // Stop the code: what is in flight rejects with `why`, nothing new starts.
      stop(why) {
        if (state !== 'running') return;
        state = 'stopped';
        reason = String(why);
        wake(new Error(reason));
        for (const [id] of timers) call.clear(id);
        if (deadline !== null) host.clearTimeout(deadline);
      },
      // The call is over: from now on its objects do nothing at all.
      end(why) {
        call.stop(why || 'Stopped: this code call has ended.');
        state = 'ended';
        live.delete(call);
      },
      ended: () => state === 'ended',
      remaining() { return Math.max(0, io.deadline - Date.now()); },
      check() {
        if (state === 'running' && call.remaining() <= 0) call.stop('Stopped: this code call ran out of time.');
        if (state !== 'running') throw new Error(reason);
      },
        // A host promise: its value or error, while the call runs; once it stopped, neither ever comes.
        // Text read from a page comes with every secret value the call knows masked, before the code can
        // change it (an encoding the code makes itself would pass any later mask).
      wait: (p) => new Promise((resolve, reject) => {
        settle(p).then(
          (v) => { if (state === 'running') resolve(io.masked && readText(v) ? io.masked(v) : v); },
          (e) => {
            if (state !== 'running') return;
            if (io.masked) e.message = io.masked(e.message);
            reject(e);
          },
        );
      }),
      stopped,
      timeout(t) {
        const left = Math.max(1, call.remaining() - 250);
        return t === undefined ? left : Math.max(0, Math.min(t, left));
      },
      timer(start, stop, repeat) {
        return (fn, ms, ...rest) => {
          call.check();
          if (typeof fn !== 'function') throw new TypeError('timers take a function, not a string');
          const id = nextTimer;
          nextTimer += 1;
          const tick = () => {
            if (!repeat) timers.delete(id);
            if (state !== 'running') return;
            try { fn(...rest); } catch (_) { /* a timer's error has nowhere to go */ }
          };
          timers.set(id, [stop, start(tick, Number(ms) || 0)]);
          return id;
        };
      },
      clear(id) {
        const entry = timers.get(id);
        if (!entry) return;
        timers.delete(id);
        entry[0](entry[1]);
      },
    };
    // A method of the API: checked first; after the call it does nothing (an async one never settles).
    call.method = (fn, async = true) => (...args) => {
      if (state !== 'running' || call.remaining() <= 0) {
        if (state === 'running') call.stop('Stopped: this code call ran out of time.');
        if (async) return NEVER();
        throw new Error(reason);
      }
      if (async) return call.wait(Promise.resolve().then(() => fn(...args)));
      try { return fn(...args); } catch (e) { throw localError(e); }
    };
    // The call's time: what is in flight then rejects, however long Playwright would have waited.
    deadline = host.setTimeout(() => call.stop('Stopped: this code call ran out of time.'), call.remaining());
    return call;
  };

  // ----- the objects the code holds ----------------------------------------------------------------
  const makeApi = (call, io) => {
    const reals = new WeakMap();
    const real = (v, what) => {
      if (!reals.has(v)) throw new TypeError(`${what} must be a locator`);
      return reals.get(v);
    };
    const sync = (fn) => call.method(fn, false);
    const later = (fn) => call.method(fn, true);
    const made = (obj, realObject) => {
      const frozen = harden(obj);
      reals.set(frozen, realObject);
      return frozen;
    };
    const act = (name, tab, target, args = [], more = {}) => io.act({ name, page: tab, target, args, ...more });

    // Locator builders shared by pages, frames and locators.
    const builders = (scope, tab) => ({
      locator: sync((selector, o) => locatorOf(scope.locator(text(selector, 'selector'), options(o, FILTER, { real })), tab)),
      getByRole: sync((role, o) => locatorOf(scope.getByRole(text(role, 'role'), options(o, ROLE)), tab)),
      getByText: sync((t, o) => locatorOf(scope.getByText(pattern(t, 'text'), options(o, EXACT)), tab)),
      getByLabel: sync((t, o) => locatorOf(scope.getByLabel(pattern(t, 'label'), options(o, EXACT)), tab)),
      getByPlaceholder: sync((t, o) => locatorOf(scope.getByPlaceholder(pattern(t, 'placeholder'), options(o, EXACT)), tab)),
      getByAltText: sync((t, o) => locatorOf(scope.getByAltText(pattern(t, 'alt text'), options(o, EXACT)), tab)),
      getByTitle: sync((t, o) => locatorOf(scope.getByTitle(pattern(t, 'title'), options(o, EXACT)), tab)),
      getByTestId: sync((t) => locatorOf(scope.getByTestId(pattern(t, 'test id')), tab)),
      frameLocator: sync((selector) => frameOf(scope.frameLocator(text(selector, 'selector')), tab)),
    });
    const frameOf = (frame, tab) => made({
      ...builders(frame, tab),
      first: sync(() => frameOf(frame.first(), tab)),
      last: sync(() => frameOf(frame.last(), tab)),
      nth: sync((i) => frameOf(frame.nth(number(i, 'index')), tab)),
    }, frame);

    const locatorOf = (loc, tab) => made({
      ...builders(loc, tab),
      first: sync(() => locatorOf(loc.first(), tab)),
      last: sync(() => locatorOf(loc.last(), tab)),
      nth: sync((i) => locatorOf(loc.nth(number(i, 'index')), tab)),
      filter: sync((o) => locatorOf(loc.filter(options(o, FILTER, { real })), tab)),
      and: sync((other) => locatorOf(loc.and(real(other, 'and()')), tab)),
      or: sync((other) => locatorOf(loc.or(real(other, 'or()')), tab)),
      all: later(async () => Array.from(await call.wait(loc.all()), (l) => locatorOf(l, tab))),
      // Reads.
      count: later(async () => data(await call.wait(loc.count()))),
      textContent: later(async (o) => data(await call.wait(loc.textContent(options(o, TIMEOUT))))),
      innerText: later(async (o) => data(await call.wait(loc.innerText(options(o, TIMEOUT))))),
      allInnerTexts: later(async () => data(await call.wait(loc.allInnerTexts()))),
      allTextContents: later(async () => data(await call.wait(loc.allTextContents()))),
      getAttribute: later(async (name, o) => data(await call.wait(io.read(loc, 'attribute', text(name, 'name'), options(o, TIMEOUT))))),
      inputValue: later(async (o) => data(await call.wait(io.read(loc, 'value', null, options(o, TIMEOUT))))),
      isVisible: later(async () => data(await call.wait(loc.isVisible()))),
      isHidden: later(async () => data(await call.wait(loc.isHidden()))),
      isEnabled: later(async (o) => data(await call.wait(loc.isEnabled(options(o, TIMEOUT))))),
      isDisabled: later(async (o) => data(await call.wait(loc.isDisabled(options(o, TIMEOUT))))),
      isEditable: later(async (o) => data(await call.wait(loc.isEditable(options(o, TIMEOUT))))),
      isChecked: later(async (o) => data(await call.wait(loc.isChecked(options(o, TIMEOUT))))),
      boundingBox: later(async (o) => data(await call.wait(loc.boundingBox(options(o, TIMEOUT))))),
      waitFor: later(async (o) => { await call.wait(loc.waitFor({ ...options(o, { state: 'string', timeout: 'number' }) })); }),
      screenshot: later(async () => data(await call.wait(io.screenshot(loc, {})))),
      // Actions: each is one input the app checks first.
      click: later(async (o) => data(await call.wait(act('click', tab, loc, [options(o, CLICK)])))),
      dblclick: later(async (o) => data(await call.wait(act('dblclick', tab, loc, [options(o, CLICK)])))),
      hover: later(async (o) => data(await call.wait(act('hover', tab, loc, [options(o, { position: 'point', timeout: 'number' })])))),
      check: later(async (o) => data(await call.wait(act('check', tab, loc, [options(o, { position: 'point', timeout: 'number' })])))),
      uncheck: later(async (o) => data(await call.wait(act('uncheck', tab, loc, [options(o, { position: 'point', timeout: 'number' })])))),
      setChecked: later(async (on, o) => data(await call.wait(act(on ? 'check' : 'uncheck', tab, loc, [options(o, { position: 'point', timeout: 'number' })])))),
      focus: later(async (o) => data(await call.wait(act('focus', tab, loc, [options(o, TIMEOUT)])))),
      fill: later(async (value, o) => data(await call.wait(act('fill', tab, loc, [text(value, 'value'), options(o, TIMEOUT)])))),
      clear: later(async (o) => data(await call.wait(act('fill', tab, loc, ['', options(o, TIMEOUT)])))),
      press: later(async (key, o) => data(await call.wait(act('press', tab, loc, [text(key, 'key'), options(o, { delay: 'number', timeout: 'number' })])))),
      pressSequentially: later(async (t, o) => data(await call.wait(act('type', tab, loc, [text(t, 'text'), options(o, { delay: 'number', timeout: 'number' })])))),
      type: later(async (t, o) => data(await call.wait(act('type', tab, loc, [text(t, 'text'), options(o, { delay: 'number', timeout: 'number' })])))),
      selectOption: later(async (values, o) => data(await call.wait(act('select', tab, loc, [choices(values), options(o, TIMEOUT)])))),
      setInputFiles: later(async (files, o) => data(await call.wait(act('upload', tab, loc, [KINDS.strings(files, 'files'), options(o, TIMEOUT)])))),
      dragTo: later(async (target, o) => data(await call.wait(act('drag', tab, loc, [options(o, { sourcePosition: 'point', targetPosition: 'point', timeout: 'number' })], { to: real(target, 'dragTo()') })))),
      scrollIntoViewIfNeeded: later(async (o) => data(await call.wait(act('scroll', tab, loc, [options(o, TIMEOUT)])))),
    }, loc);
    // selectOption's values: strings, or { value | label | index } each.
    const choices = (v) => (isArray(v) ? v : [v]).map((c, i) => {
      if (typeof c === 'string' || typeof c === 'number') return String(c);
      if (c && typeof c === 'object') return options(c, { value: 'string', label: 'string', index: 'number' });
      throw new TypeError(`option ${i} must be a string or { value | label | index }`);
    });

    const pages = new WeakMap();
    const pageOf = (tab) => {
      if (pages.has(tab)) return pages.get(tab);
      const nav = (name) => later(async (o) => data(await call.wait(act(name, tab, null, [options(o, NAVIGATE)]))));
      // Playwright's page-level shortcuts, `page.click(selector)`...: the first element the selector finds.
      const first = (selector) => locatorOf(tab.locator(text(selector, 'selector')).first(), tab);
      const SHORTCUTS = ['click', 'dblclick', 'hover', 'fill', 'press', 'type', 'check', 'uncheck', 'selectOption',
        'focus', 'setInputFiles', 'textContent', 'innerText', 'getAttribute', 'inputValue', 'isVisible', 'isHidden',
        'isChecked', 'isEnabled', 'isEditable'];
      const shortcuts = Object.fromEntries(SHORTCUTS.map((name) => [name, sync((selector, ...rest) => first(selector)[name](...rest))]));
      const facade = made({
        ...builders(tab, tab),
        ...shortcuts,
        waitForSelector: later(async (selector, o) => {
          await call.wait(tab.locator(text(selector, 'selector')).first()
            .waitFor({ ...options(o, { state: 'string' }), timeout: call.timeout(o && o.timeout) }));
        }),
        goto: later(async (url, o) => data(await call.wait(act('goto', tab, null, [text(url, 'url'), options(o, NAVIGATE)])))),
        goBack: nav('goBack'),
        goForward: nav('goForward'),
        reload: nav('reload'),
        url: sync(() => data(tab.url())),
        title: later(async () => data(await call.wait(tab.title()))),
        isClosed: sync(() => data(tab.isClosed())),
        viewportSize: sync(() => data(tab.viewportSize())),
        bringToFront: later(async () => { await call.wait(io.front(tab)); }),
        close: later(async () => { await call.wait(io.close(tab)); }),
        screenshot: later(async (o) => data(await call.wait(io.screenshot(tab, options(o, { fullPage: 'boolean' }))))),
        context: sync(() => contextFacade),
        keyboard: harden({
          press: later(async (key, o) => data(await call.wait(act('key', tab, null, [text(key, 'key'), options(o, { delay: 'number' })])))),
          type: later(async (t, o) => data(await call.wait(act('keys', tab, null, [text(t, 'text'), options(o, { delay: 'number' })])))),
        }),
        mouse: harden({
          click: later(async (x, y, o) => data(await call.wait(act('mouse.click', tab, null, [number(x, 'x'), number(y, 'y'), options(o, { button: 'string', clickCount: 'number', delay: 'number' })])))),
          dblclick: later(async (x, y, o) => data(await call.wait(act('mouse.click', tab, null, [number(x, 'x'), number(y, 'y'), { ...options(o, { button: 'string', delay: 'number' }), clickCount: 2 }])))),
          move: later(async (x, y, o) => data(await call.wait(act('mouse.move', tab, null, [number(x, 'x'), number(y, 'y'), options(o, { steps: 'number' })])))),
          down: later(async (o) => data(await call.wait(act('mouse.down', tab, null, [options(o, { button: 'string' })])))),
          up: later(async (o) => data(await call.wait(act('mouse.up', tab, null, [options(o, { button: 'string' })])))),
          wheel: later(async (dx, dy) => data(await call.wait(act('mouse.wheel', tab, null, [number(dx, 'deltaX'), number(dy, 'deltaY')])))),
        }),
        waitForURL: later(async (url, o) => { await call.wait(tab.waitForURL(pattern(url, 'url'), { ...options(o, NAVIGATE), timeout: call.timeout(o && o.timeout) })); }),
        waitForLoadState: later(async (s, o) => { await call.wait(tab.waitForLoadState(s === undefined ? undefined : text(s, 'state'), { timeout: call.timeout(o && o.timeout) })); }),
        // A wait past the call's time never ends: the call's own end comes first.
        waitForTimeout: later(async (ms) => {
          const wait = number(ms, 'ms');
          await call.wait(wait < call.remaining() ? new Promise((r) => host.setTimeout(r, wait)) : NEVER());
        }),
        waitForEvent: later(async (name, o) => {
          const event = text(name, 'event');
          if (event !== 'popup') {
            const instead = event === 'download' ? "; a download is reported by the next observation: read it with read_download" : '';
            throw new TypeError(`page.waitForEvent('${event}') is not available: only 'popup' is${instead}`);
          }
          const timeout = call.timeout(typeof o === 'number' ? o : o && o.timeout);
          return pageOf(await call.wait(io.own(await call.wait(tab.waitForEvent('popup', { timeout })))));
        }),
      }, tab);
      pages.set(tab, facade);
      return facade;
    };
    const contextFacade = harden({
      pages: sync(() => Array.from(io.pages(), pageOf)),
      newPage: later(async () => pageOf(await call.wait(io.newPage()))),
      // A tab an input of the code opens (a link with target=_blank, window.open).
      waitForEvent: later(async (name, o) => {
        if (text(name, 'event') !== 'page') throw new TypeError("context().waitForEvent() waits only for 'page'");
        const timeout = call.timeout(typeof o === 'number' ? o : o && o.timeout);
        return pageOf(await call.wait(io.own(await call.wait(io.nextPage(timeout)))));
      }),
    });
    return { pageOf, locatorOf };
  };

  // ----- a mistake outside the API: one sentence back --------------------------------------------------
  const PAGE_API = 'page: goto, goBack, goForward, reload, url, title, locator, getByRole, getByText, getByLabel, '
    + 'getByPlaceholder, getByAltText, getByTitle, getByTestId, frameLocator, keyboard.press/type, '
    + 'mouse.click/dblclick/move/down/up/wheel, waitForURL, waitForLoadState, waitForTimeout, '
    + "waitForEvent('popup'), screenshot, context().pages() / newPage() / waitForEvent('page'), "
    + 'bringToFront, close';
  const LOCATOR_API = 'locators: click, dblclick, hover, fill, clear, press, pressSequentially, check, uncheck, '
    + 'setChecked, selectOption, dragTo, focus, setInputFiles, scrollIntoViewIfNeeded, textContent, innerText, '
    + 'allInnerTexts, allTextContents, getAttribute, inputValue, count, isVisible, isHidden, isEnabled, isChecked, '
    + 'isEditable, boundingBox, waitFor, first, last, nth, filter, all, and, or, screenshot';
  const READS = 'your code does not run in the page: read with locators (innerText(), allInnerTexts(), '
    + 'textContent(), getAttribute(), inputValue(), count(), isVisible()) and scroll with '
    + 'page.mouse.wheel(0, 600) or locator.scrollIntoViewIfNeeded()';
  const INSTEAD = {
    evaluate: READS, evaluateAll: READS, evaluateHandle: READS, $eval: READS, $$eval: READS, $: READS, $$: READS,
    waitForFunction: READS, addScriptTag: READS, content: READS, innerHTML: READS, document: READS, window: READS,
    elementHandle: READS, dispatchEvent: 'act with click(), press() or fill() on a locator',
    tap: 'use click()', fetch: "requests go out only through the page's own controls: act with locators",
    XMLHttpRequest: "requests go out only through the page's own controls: act with locators",
    request: "requests go out only through the page's own controls: act with locators",
    setContent: 'open pages with page.goto(url)',
    waitForNavigation: 'use page.waitForURL(url) or page.waitForLoadState()',
    require: 'modules are not available', __import__: 'modules are not available',
    process: 'Node is not available', Buffer: 'Node is not available', navigator: READS, location: READS,
    localStorage: READS, sessionStorage: READS, WebSocket: "messages go out only through the page's own controls",
  };
  const GLOBAL_HINTS = ['document', 'window', 'fetch', 'XMLHttpRequest', 'require', 'process', 'Buffer', 'navigator',
    'location', 'localStorage', 'sessionStorage', 'WebSocket'];
  // A compartment reads a global it lacks as `undefined`: `process.env` fails as "Cannot read properties
  // of undefined (reading 'env')". The names models reach for most are looked for in the source then.
  const USED = new RegExp(`(?<![\\w$.'"\`])(${GLOBAL_HINTS.join('|')})\\s*[.([]`);
  const explain = (message, source) => {
    const hint = (name) => `${message}: \`${name}\` is not part of the browser API here; `
      + `${INSTEAD[name] || `the API is ${PAGE_API}; ${LOCATOR_API}`}.`;
    const undeclared = /^([\w$]+) is not defined$/.exec(message);
    if (undeclared) {
      return INSTEAD[undeclared[1]] ? hint(undeclared[1])
        : `${message}: declare it with const or let (the browser API is \`page\` and \`el(N)\`).`;
    }
    const call = /(?:^|[\s.(])([\w$]+) is not (?:a function|a constructor)/.exec(message);
    if (call && !GLOBAL_HINTS.includes(call[1])) return hint(call[1]);
    const used = (call || /Cannot read properties of undefined/.test(message)) && USED.exec(source);
    if (used) return hint(used[1]);
    const read = /Cannot read properties of undefined \(reading '([\w$]+)'\)/.exec(message);
    return read ? hint(read[1]) : message;
  };

  // ----- running the model's code -----------------------------------------------------------------
  const console = harden({ log() {}, info() {}, warn() {}, error() {}, debug() {} });
  // Runs `async (page) => {...}`; answers { json } (null for undefined) or { error, name }, strings only.
  const run = async (realPage, source, io) => {
    for (const earlier of [...live]) earlier.end('Stopped: a new code call began.');
    const call = makeCall(io);
    live.add(call);
    io.watch(harden((why) => call.stop(why)));
    try {
      const api = makeApi(call, io);
      const page = api.pageOf(realPage);
      const el = call.method((n) => api.locatorOf(io.el(number(n, 'element number')), realPage), false);
      const globals = {
        page, el: harden(el), console, Date, Math,
        setTimeout: call.timer(host.setTimeout, host.clearTimeout, false),
        setInterval: call.timer(host.setInterval, host.clearInterval, true),
        clearTimeout: (id) => call.clear(id),
        clearInterval: (id) => call.clear(id),
      };
      const compartment = new Compartment({ globals: harden(globals), __options__: true });
      let fn;
      try {
        // import() and HTML comments are rewritten so that they cannot load anything.
        // Strict: a name the box does not give is a ReferenceError, not a silent undefined.
        fn = compartment.evaluate(`'use strict';\n(${source}\n)`, {
          __rejectSomeDirectEvalExpressions__: false,
          __evadeImportExpressionTest__: true,
          __evadeHtmlCommentTest__: true,
        });
      } catch (e) {
        const d = describe(e);
        return { error: `The code does not compile: ${d.message}`, name: d.name };
      }
      if (typeof fn !== 'function') return { error: 'The code must be a function: async (page) => { ... }', name: 'TypeError' };
      // The code's own promise, raced against the call's stop (the race handles both).
      const value = await Promise.race([Promise.resolve().then(() => fn(page, el)), call.stopped]);
      const json = JSON.stringify(value);
      return { json: json === undefined ? null : String(json) };
    } catch (e) {
      const d = describe(e);
      return { error: explain(d.message, String(source)), name: d.name };
    } finally {
      call.end('Stopped: this code call has ended; its objects do nothing any more.');
    }
  };
  const revokeAll = (why) => {
    for (const call of [...live]) call.end(String(why || 'Stopped: the app began another call.'));
  };
  return harden({ run, revokeAll, live: () => live.size });
}
