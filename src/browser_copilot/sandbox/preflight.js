// One input of a code call, judged before it is sent (call.js's `act` uses it): what the network
// policy is told when an input may go, the guard's pre-flight (where the input lands, followed into
// frames of other origins, and what it does), its verdict (held, a secret field), the aiming of pointer
// inputs, and a locator's element stamped for the guard. Not a script of its own: guarded.py puts it
// into call.js at `__PREFLIGHT__`, inside the call's one function, whose names it shares.
  // What the network policy is told when an input may go: its window (sandbox/effects.py), with the input
  // itself, so that a request it holds can be made again, once, by doing the same input after a /yes.
  const signal = (p, kind, action) => {
    windows += 1;
    let site = null;
    try { site = new URL(p.url()).origin; } catch (e) { /* about:blank */ }
    return { call: config.callId, id: `w${config.callId}-${windows}`, kind, site, action: action || null };
  };
  const frameAt = async (frame, stamp) => {
    for (const child of frame.childFrames()) {
      const handle = await child.frameElement().catch(() => null);
      if (!handle) continue;
      const found = await handle.getAttribute('data-bc-frame-at').catch(() => null);
      handle.dispose().catch(() => null);
      if (found === stamp) return child;
    }
    throw new Error('the frame this input would reach could not be checked; nothing was done');
  };
  // Ask the guard where the input lands (following it into frames of other origins), and what it does.
  const preflight = async (p, frame, args, action) => {
    let at = frame || p.mainFrame();
    const sig = signal(p, args.kind, action);
    let ask = { ...args, allow, approve: !!config.replay, recv: sig.id };
    for (let hops = 0; hops < 8; hops += 1) {
      const own = apart(p, at);
      const out = own ? await guard.frame(at, ask) : await guard.page(p, { ...ask, signal: sig });
      if (out && out.elsewhere) return out;
      if (!out || out.lost) throw new Error('the element this input would reach could not be checked (it moved or the page changed); nothing was done');
      if (out.intercepted) return out;
      if (out.descend) {
        const child = await frameAt(at, out.descend.frame);
        // A frame that is apart from the first is entered at the point inside it (or where its focus is).
        ask = { ...ask, point: out.descend.point, focused: out.descend.focused, drop: undefined };
        at = child;
        continue;
      }
      if (own && out.ok && !out.same) await guard.page(p, { op: 'window', signal: sig, allowed: out.allowed, token: out.token, category: out.category, activates: out.activates });
      return { ...out, frame: at };
    }
    throw new Error('the input would reach too deep a nest of frames; nothing was done');
  };
  const decided = (out, action) => {
    live();
    reached = out && Array.isArray(out.what) ? out.what : null;
    if (out.secret) {
      secretBlocked += 1;
      stopWith(out.empty
        ? 'Stopped: that would send a form whose password, one-time code or card field is empty; nothing '
          + 'was sent. The user enters it and sends the form themselves.'
        : 'Stopped: that field is for a password, a one-time code or card details; the app never types '
          + 'into it. The user enters it themselves.');
      throw new Error(halted);
    }
    if (out.refused) throw new Error(out.refused);
    if (out.held) {
      held.push({ ...out.held, action });
      stopWith(HOLD);
      throw new Error(HOLD);
    }
  };
  // A press at a point judged there (`recv`: the element that was under it), made in steps, each of
  // which may change what lies under the point: the pointer's move (a row that shows its actions on
  // hover), each press of a double click (the first makes a new button there), the release after the
  // button went down (a menu opened under the pointer). Before each step the guard looks again; another
  // element there is judged as a press of its own (held: the rest is not sent; a button already down is
  // let go outside the page's view).
  const pressAt = async (p, x, y, o, count, action, recv) => {
    const again = async () => {
      if (config.replay) return;
      const out = await preflight(p, null, { op: 'preflight', kind: 'press', point: { x, y }, still: recv }, action);
      if (out.same) return;
      decided(out, action);
      if (out.recv) recv = out.recv;
    };
    const button = o.button;
    await p.mouse.move(x, y);
    await again();
    for (let n = 1; n <= Math.max(1, Math.min(3, Number(count) || 1)); n += 1) {
      if (n > 1) await again();
      await p.mouse.down({ button, clickCount: n });
      try {
        await again();
      } catch (e) {
        await p.mouse.move(-5, -5);
        await p.mouse.up({ button, clickCount: n });
        throw e;
      }
      const wait = slow(o.delay, count || 1);  // never past the call's time
      if (wait) await new Promise((done) => setTimeout(done, wait));
      await p.mouse.up({ button, clickCount: n });
    }
  };
  // Where a pointer will press a locator's element, found without sending it any input (Playwright's
  // `trial` sends the input and counts on swallowing it in the page, where the page's own listeners
  // see it first: never used): the element scrolled into view once stable (enabled, for a press), then
  // the point of its box, and the element stamped for the guard. `kind`: the guard judges what lies
  // under that point, and that it is the element (else it "intercepts pointer events": asked again
  // until the time-out); null: only aimed. `dropOn`: a drag's drop target, aimed and judged with it.
  const aim = async (p, target, o, kind, action, dropOn) => {
    if (kind && !dropOn) {
      const quick = await aimHere(p, target, o, kind, action);
      if (quick) return quick;
    }
    const started = Date.now();
    const until = started + timeoutOf(o);
    const left = () => Math.max(1, until - Date.now());
    for (let tries = 0; ; tries += 1) {
      await target.scrollIntoViewIfNeeded({ timeout: left() });
      const box = await target.boundingBox({ timeout: left() });
      const enabled = kind !== 'press' || (await target.isEnabled({ timeout: left() }));
      let why = !box ? 'the element is not visible' : 'the element is not enabled';
      if (box && enabled) {
        const at = o && o.position ? o.position : { x: box.width / 2, y: box.height / 2 };
        const spot = { ...(await mark(target, o)), x: box.x + at.x, y: box.y + at.y };
        if (!kind) return spot;
        const drop = dropOn ? await aim(p, dropOn.target, dropOn.o, null, action) : null;
        const out = await preflight(p, null, { op: 'preflight', kind, point: { x: spot.x, y: spot.y }, stamp: spot.stamp,
          drop: drop ? { point: { x: drop.x, y: drop.y }, stamp: drop.stamp } : undefined }, action);
        if (!out.intercepted) {
          decided(out, action);
          return { ...spot, drop, recv: out.recv };
        }
        why = `${out.intercepted} intercepts pointer events`;
      }
      live();
      const pause = tries < 3 ? 50 : 200;
      if (left() <= pause + 50) throw new Error(`Timeout ${Math.round(until - started)}ms exceeded: ${why}`);
      await p.waitForTimeout(pause);
    }
  };
  // The same in one round trip when the element is in the page's own documents (most often): the guard
  // finds it by its stamp, checks and scrolls it as Playwright would, and judges the press at its point.
  // null: the element is in a frame of another origin (aimed above, through Playwright).
  const aimHere = async (p, target, o, kind, action) => {
    const started = Date.now();
    const until = started + timeoutOf(o);
    for (let tries = 0; ; tries += 1) {
      const stamp = await stampOf(target, until);
      const sig = signal(p, kind, action);
      const out = await guard.page(p, { op: 'aim', kind, stamp, position: o && o.position, allow,
        approve: !!config.replay, recv: sig.id, signal: sig });
      if (!out || out.elsewhere) return null;
      if (!out.retry) {
        decided(out, action);
        return { x: out.point.x, y: out.point.y, stamp, recv: out.recv };
      }
      live();
      const pause = tries < 3 ? 50 : 200;
      if (until - Date.now() <= pause + 50) throw new Error(`Timeout ${Math.round(until - started)}ms exceeded: ${out.retry}`);
      await p.waitForTimeout(pause);
    }
  };
  // How the guard finds a locator's element: an element the observation numbered (`el(N)` in the page
  // itself) by its number, with no round trip (the guard takes it only when no other element carries the
  // number, else it is stamped); any other locator's element stamped first.
  const refOf = async (target, until) => {
    const n = numberOf(target);
    return n !== undefined ? { id: String(n) } : { stamp: await stampOf(target, until) };
  };
  // A locator's one element stamped for the guard, waited for as Playwright waits (strict: one element).
  const stampOf = async (target, until) => {
    const stamp = `t${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
    for (let tries = 0; ; tries += 1) {
      const n = await target.evaluateAll((els, s) => {
        if (els.length === 1) els[0].setAttribute('data-bc-target', s);
        return els.length;
      }, stamp).catch(() => 0);
      if (n === 1) return stamp;
      if (n > 1) throw new Error(`strict mode violation: ${target} resolved to ${n} elements`);
      live();
      const pause = tries < 3 ? 50 : 200;
      if (until - Date.now() <= pause + 50) throw new Error(`Timeout exceeded waiting for ${target}`);
      await new Promise((done) => setTimeout(done, pause));
    }
  };
  // A locator's element itself (for keys, text, a choice, files): stamped for the guard in its frame.
  const mark = async (target, o) => {
    const handle = await target.elementHandle({ timeout: timeoutOf(o) });
    try {
      const frame = await handle.ownerFrame();
      const stamp = `t${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
      await handle.evaluate((e, s) => e.setAttribute('data-bc-target', s), stamp);
      return { frame, stamp };
    } finally {
      handle.dispose().catch(() => null);
    }
  };
