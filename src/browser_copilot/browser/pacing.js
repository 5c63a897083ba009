// Human pacing of the model's browser actions (PACING=human), as the membrane's beforeAction hook:
// typing key by key with log-normal gaps and now and then a longer pause, a short pause before clicks
// and key presses, a minimum gap between navigations to the same site, and at most N actions per
// window per site (the origin of the page). The hook returns undefined, synchronously, for calls it
// leaves alone (dialog.type(), evaluate...), else a promise of undefined (go on with the real call) or of
// { result } (it did the call itself: fill and type become per-key typing). The per-site counts and
// the last navigations outlive one code call: they live on the browser context object, which the
// MCP server keeps between calls. Secret fields are never paced (the guard refuses typing into them).
(page, config, isSecretSource) => {
  const context = page.context();
  if (!context.__bcPacing) context.__bcPacing = { actions: {}, navigations: {} };
  const state = context.__bcPacing;
  const CLICKS = new Set(['click', 'dblclick', 'tap', 'check', 'uncheck', 'setChecked', 'selectOption', 'dragTo', 'press']);
  const TYPING = new Set(['fill', 'type', 'pressSequentially', 'insertText']);
  const NAVIGATIONS = new Set(['goto', 'reload', 'goBack', 'goForward']);
  // What typing into an element would be: 'secret' (never paced), 'type' (a text field: key by key) or
  // 'fill' (date, select, file...: filled at once, after the pause).
  const probe = `(el) => { const isSecret = ${isSecretSource};
    if (!el || el.nodeType !== 1) return 'fill';
    if (isSecret(el)) return 'secret';
    if (el.disabled || el.readOnly) return 'fill';
    if (el.isContentEditable || el.tagName === 'TEXTAREA') return 'type';
    if (el.tagName !== 'INPUT') return 'fill';
    const type = (el.getAttribute('type') || 'text').toLowerCase();
    return ['text', 'search', 'email', 'url', 'tel', 'number'].includes(type) ? 'type' : 'fill'; }`;

  const sleep = (ms) => (ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve());
  const uniform = ([lo, hi]) => lo + Math.random() * (hi - lo);
  const gaussian = () => {
    let u = 0;
    while (!u) u = Math.random();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * Math.random());
  };
  // The gap before the next key: log-normal around the median, clamped; after a space or punctuation,
  // and rarely elsewhere, a longer pause (the end of a word, a glance at the screen).
  const keyGap = (previous) => {
    let ms = Math.exp(Math.log(config.keyMedianMs) + config.keySigma * gaussian());
    ms = Math.min(Math.max(ms, config.keyMinMs), config.keyMaxMs);
    if (Math.random() < (/[\s.,;:!?]/.test(previous) ? config.wordPauseChance : config.pauseChance)) {
      ms += uniform(config.pauseMs);
    }
    return Math.round(ms);
  };
  const siteOf = (url) => {
    try {
      const u = new URL(String(url));
      return /^https?:$/.test(u.protocol) ? u.origin : null;
    } catch (e) {
      return null;
    }
  };
  const currentSite = () => siteOf(page.url());

  // At most config.perWindow actions per config.windowMs on a site, in call order (a sliding window
  // of reserved start times, so that actions run in parallel are spaced too).
  const reserve = async (site) => {
    if (!site) return;
    const times = state.actions[site] || (state.actions[site] = []);
    const now = Date.now();
    while (times.length && times[0] <= now - config.windowMs) times.shift();
    let at = Math.max(now, times.length ? times[times.length - 1] : 0);
    if (times.length >= config.perWindow) at = Math.max(at, times[times.length - config.perWindow] + config.windowMs);
    times.push(at);
    await sleep(at - now);
  };
  const navigationGap = async (site) => {
    if (!site) return;
    const now = Date.now();
    const at = Math.max(now, (state.navigations[site] || 0) + config.sameSiteGapMs);
    state.navigations[site] = at;
    await sleep(at - now);
  };

  const isKeyboard = (t) => typeof t.insertText === 'function' && typeof t.down === 'function';
  const isPageLike = (t) => typeof t.goto === 'function' && typeof t.locator === 'function';
  const isElement = (t) => typeof t.evaluate === 'function' && (typeof t.fill === 'function') && !isPageLike(t);
  // Playwright sends a function to the page as its source text (String(fn)): this one's is the probe's.
  const probeFn = Object.assign(() => 'fill', { toString: () => probe });
  const kindOf = async (element) => {
    if (element === null) {
      return page.evaluate(`(${probe})(document.activeElement)`).catch(() => 'fill');
    }
    return element.evaluate(probeFn, undefined, { timeout: config.probeTimeoutMs }).catch(() => 'fill');
  };
  // Type `text` one key at a time: `key(ch)` sends one character.
  const typeKeys = async (text, key) => {
    let previous = '';
    for (const ch of Array.from(text)) {
      if (previous) await sleep(keyGap(previous));
      await key(ch);
      previous = ch;
    }
  };
  const typeable = (text) => typeof text === 'string' && !/[\u0000-\u001f\u007f]/.test(text)
    && Array.from(text).length <= config.maxTypedChars;

  // fill / type / pressSequentially: the element, the text and the options, whatever the target.
  const typing = (name, target, args) => {
    if (name === 'insertText') return null;
    if (isKeyboard(target)) {
      return name === 'type' ? { element: null, text: args[0], options: args[1], keyboard: target } : null;
    }
    if (isPageLike(target)) {
      if ((name !== 'fill' && name !== 'type') || typeof args[0] !== 'string') return null;
      return { element: target.locator(args[0]), text: args[1], options: args[2] };
    }
    if (isElement(target)) return { element: target, text: args[0], options: args[1] };
    return null;
  };
  const humanTyping = async (name, target, args) => {
    const job = typing(name, target, args);
    const kind = job ? await kindOf(job.element) : 'fill';
    if (kind === 'secret') return undefined;
    await reserve(currentSite());
    if (!job || kind !== 'type' || !typeable(job.text) || (job.options && job.options.delay !== undefined)) {
      return undefined;
    }
    await sleep(uniform(config.clickPauseMs) / 2);
    if (job.keyboard) {
      await typeKeys(job.text, (ch) => job.keyboard.type(ch));
      return { result: undefined };
    }
    const options = job.options && job.options.timeout !== undefined ? { timeout: job.options.timeout } : undefined;
    const element = job.element;
    if (name === 'fill') await element.fill('', options);
    const one = typeof element.pressSequentially === 'function'
      ? (ch) => element.pressSequentially(ch, options)
      : (ch) => element.type(ch, options);
    await typeKeys(job.text, one);
    return { result: undefined };
  };

  return (name, target, args) => {
    if (!target || typeof target !== 'object') return undefined;
    if (NAVIGATIONS.has(name)) {
      if (!(typeof target.goto === 'function')) return undefined;
      const site = name === 'goto' ? siteOf(args[0]) : currentSite();
      return (async () => {
        await navigationGap(site);
        await reserve(site);
        if (site) state.navigations[site] = Math.max(state.navigations[site], Date.now());
        return undefined;
      })();
    }
    if (CLICKS.has(name)) {
      if (name === 'press' && !(isKeyboard(target) || isElement(target) || isPageLike(target))) return undefined;
      return (async () => {
        await reserve(currentSite());
        await sleep(uniform(config.clickPauseMs));
        return undefined;
      })();
    }
    if (TYPING.has(name)) {
      if (!(isKeyboard(target) || isElement(target) || isPageLike(target))) return undefined;
      return humanTyping(name, target, args);
    }
    return undefined;
  };
}
