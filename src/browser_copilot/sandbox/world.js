// How the app's code (never the model's) talks to the guard: in an isolated world of the page's own,
// through a DevTools session the app keeps on each page object (`__bcWorld`, out of the model's reach:
// the membrane refuses `_` names and raw CDP). The early script (early.js) is registered for every
// new document of the page, in that world, before the page's scripts run; the guard runtime is put
// into a document's world the first time a call meets it there. Page scripts share the DOM with the
// world but none of its globals. Called as (context, earlySource) => { page(page, args), frame(frame, args),
// target(page) }.
(context, earlySource) => {
  const WORLD = '__bc_guard';
  const worldOf = async (page) => {
    if (page.__bcWorld) return page.__bcWorld;
    const session = await context.newCDPSession(page);
    const { targetInfo } = await session.send('Target.getTargetInfo');
    await session.send('Page.enable');  // scripts for new documents run only with the Page domain on
    await session.send('Page.addScriptToEvaluateOnNewDocument', { source: earlySource, worldName: WORLD, runImmediately: true });
    const world = { session, frameId: targetInfo.targetId, contextId: null, doc: 0, lang: undefined };
    // A new document in the main frame has a new context of the world: forget the old one at once.
    session.on('Page.frameNavigated', (event) => {
      if (!event.frame.parentId) { world.contextId = null; world.creating = null; world.doc += 1; }
    });
    page.__bcWorld = world;
    return world;
  };
  const evaluate = async (page, expression) => {
    const world = await worldOf(page);
    for (let attempt = 0; ; attempt += 1) {
      if (!world.contextId) {
        // Ops that meet a new document together (the re-arm at its load, the count after the action)
        // share one context of the world there.
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
  // The guard's ops in one document: `evaluate(expression)` runs in the guard's world there.
  // A document without the runtime answers with its language, and gets the runtime for it.
  // One install per document of a page: an op that meets the document while another op's install is on
  // its way there (the re-arm at domcontentloaded and the count after the action that loaded it) waits
  // for that one, then asks again, instead of sending the runtime (tens of kB) a second time.
  // A page's next document most often has the language of its last one: when an op meets a new
  // document, the runtime for that language goes ahead of the op in the same round trip, installed only
  // if the document has that language and no runtime yet (else the op answers "missing" as before).
  const missing = (out) => out && typeof out === 'object' && typeof out.__bcMissing === 'string';
  const installText = (lang, guessed) => {
    const body = `if (!window.__bcEarly) { ${earlySource} }\nwindow.__bcRuntime = ${context.__bcRuntimeFor(lang)};\n`;
    // The same text in every document of a language, so the browser compiles it once and then reuses
    // its code; the op is asked apart.
    if (!guessed) return `${body}0`;
    return `if (!window.__bcRuntime && (document.documentElement.lang || '') === ${JSON.stringify(lang)}) {\n${body}}\n0`;
  };
  const ops = (evaluate, worldOfCall) => async (args) => {
    const call = `window.__bcRuntime ? window.__bcRuntime(${JSON.stringify(args)})`
      + ` : { __bcMissing: document.documentElement.lang || '' }`;
    const world = worldOfCall ? worldOfCall() : null;
    const pending = () => (world && world.install && world.install.doc === world.doc ? world.install.done : null);
    if (world && !world.contextId && world.lang !== undefined && !pending()) {
      // Not awaited here (the op follows it on the same session); a failure is the op's to meet.
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
      // Another document came in between: the runtime and the op in one go there.
      if (missing(out)) out = await evaluate(`${installText(out.__bcMissing, false)}; window.__bcRuntime(${JSON.stringify(args)})`);
    }
    return out;
  };
  // A tab's target id (which run's it is: `TabOwners`), asked once per page object.
  const target = async (page) => {
    if (page.__bcWorld) return page.__bcWorld.frameId;
    if (!page.__bcTarget) {
      const session = await context.newCDPSession(page);
      try {
        page.__bcTarget = (await session.send('Target.getTargetInfo')).targetInfo.targetId;
      } finally {
        session.detach().catch(() => null);
      }
    }
    return page.__bcTarget;
  };
  return {
    target,
    page: (page, args) => ops((expression) => evaluate(page, expression), () => page.__bcWorld)(args),
    // A frame of another origin (out of process, too): Playwright's own isolated world in it, where
    // the guard is put when a call first meets the frame (after the frame's scripts, unlike in pages).
    frame: (frame, args) => ops((expression) => frame.evaluate(expression, undefined, { world: 'utility' }))(args),
  };
}
