// How the app's code (never the model's) talks to the guard: in an isolated world of the page's own,
// through a DevTools session the app keeps on each page object (`__bcWorld`, out of the model's reach:
// the model's code holds only the façade's objects). Page scripts share the DOM with the world but none
// of its globals. The guard runtime (guard.js) is put into a document's world the first time an op
// meets it there. Two bindings live only in this world: `__bcEffect`, added by the app's network policy
// (the window of an action, sandbox/effects.py), and `__bcToNode`, added here, by which the network
// policy tells the running call that it held a request (`listen`).
// Called as (context) => { page(page, args), frame(frame, args), target(page), opener(page), listen(page, fn) }.
(context) => {
  const WORLD = '__bc_guard';
  const worldOf = async (page) => {
    if (page.__bcWorld) return page.__bcWorld;
    const session = await context.newCDPSession(page);
    const { targetInfo } = await session.send('Target.getTargetInfo');
    const world = { session, frameId: targetInfo.targetId, contextId: null, doc: 0, lang: undefined, listeners: new Set() };
    page.__bcWorld = world;
    // A new document in the main frame has a new context of the world: forget the old one at once.
    await session.send('Page.enable');
    session.on('Page.frameNavigated', (event) => {
      if (!event.frame.parentId) { world.contextId = null; world.creating = null; world.doc += 1; }
    });
    // Runtime first: a binding added before it is not put into worlds made later.
    await session.send('Runtime.enable');
    await session.send('Runtime.addBinding', { name: '__bcToNode', executionContextName: WORLD });
    session.on('Runtime.bindingCalled', (event) => {
      if (event.name !== '__bcToNode') return;
      for (const fn of world.listeners) {
        try { fn(event.payload); } catch (e) { /* a listener's failure is its own */ }
      }
    });
    return world;
  };
  const evaluate = async (page, expression) => {
    const world = await worldOf(page);
    for (let attempt = 0; ; attempt += 1) {
      if (!world.contextId) {
        // Ops that meet a new document together share one context of the world there.
        const creating = world.creating
          || world.session.send('Page.createIsolatedWorld', { frameId: world.frameId, worldName: WORLD });
        world.creating = creating;
        const made = await creating.finally(() => { if (world.creating === creating) world.creating = null; });
        world.contextId = world.contextId || made.executionContextId;
      }
      try {
        const out = await world.session.send('Runtime.evaluate', {
          expression, contextId: world.contextId, returnByValue: true, awaitPromise: true,
        });
        if (out.exceptionDetails) {
          const e = out.exceptionDetails;
          throw new Error(`the guard failed: ${(e.exception && e.exception.description) || e.text}`);
        }
        return out.result.value;
      } catch (e) {
        // The document changed (a navigation): its world has a new context.
        if (attempt < 2 && /context|Execution/i.test(String(e.message))) { world.contextId = null; continue; }
        throw e;
      }
    }
  };
  // The guard's ops in one document: a document without the runtime answers with its language, and gets
  // the runtime for it (one install per document: an op that meets it while another op's install is on its
  // way waits for that one). A page's next document most often has the language of its last one: the
  // runtime for it goes ahead of the op in the same round trip, installed only if it fits.
  const missing = (out) => out && typeof out === 'object' && typeof out.__bcMissing === 'string';
  const installText = (lang, guessed) => {
    const body = `window.__bcRuntime = ${context.__bcRuntimeFor(lang)};\n`;
    if (!guessed) return `${body}0`;
    return `if (!window.__bcRuntime && (document.documentElement.lang || '') === ${JSON.stringify(lang)}) {\n${body}}\n0`;
  };
  const ops = (evaluate, worldOfCall) => async (args) => {
    const call = `window.__bcRuntime ? window.__bcRuntime(${JSON.stringify(args)})`
      + ` : { __bcMissing: document.documentElement.lang || '' }`;
    const world = worldOfCall ? worldOfCall() : null;
    const pending = () => (world && world.install && world.install.doc === world.doc ? world.install.done : null);
    if (world && !world.contextId && world.lang !== undefined && !pending()) {
      world.install = { doc: world.doc, done: evaluate(installText(world.lang, true)).catch(() => null) };
    }
    let out = await evaluate(call);
    if (missing(out) && pending()) {
      await pending().catch(() => null);
      out = await evaluate(call);
    }
    if (missing(out)) {
      const lang = out.__bcMissing;
      const done = evaluate(installText(lang, false));
      if (world) { world.install = { doc: world.doc, done }; world.lang = lang; }
      await done;
      out = await evaluate(call);
      if (missing(out)) out = await evaluate(`${installText(out.__bcMissing, false)}; window.__bcRuntime(${JSON.stringify(args)})`);
    }
    return out;
  };
  // A tab's target id (which session's it is) and its opener's (also when it was opened with noopener),
  // asked once per page object.
  const info = async (page) => {
    if (!page.__bcTarget) {
      const session = await context.newCDPSession(page);
      try {
        const { targetInfo } = await session.send('Target.getTargetInfo');
        page.__bcTarget = { id: targetInfo.targetId, opener: targetInfo.openerId || null };
      } finally {
        session.detach().catch(() => null);
      }
    }
    return page.__bcTarget;
  };
  const target = async (page) => (page.__bcWorld ? page.__bcWorld.frameId : (await info(page)).id);
  return {
    target,
    opener: async (page) => (await info(page)).opener,
    page: (page, args) => ops((expression) => evaluate(page, expression), () => page.__bcWorld)(args),
    // A frame of another origin (out of process, too): Playwright's own isolated world in it, where the
    // guard is put when a call first meets the frame.
    frame: (frame, args) => ops((expression) => frame.evaluate(expression, undefined, { world: 'utility' }))(args),
    // What the network policy tells the call through `__bcToNode` in this page's world, while `fn` listens.
    listen: async (page, fn) => {
      const world = await worldOf(page);
      world.listeners.add(fn);
      return () => world.listeners.delete(fn);
    },
  };
}
