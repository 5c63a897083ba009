// The guard's first lines in a document (F41): run by the browser at document start, in the guard's
// isolated world, before any script of the page. They register the capture listeners (and the
// Navigation API's `navigate`) that the guard (guard.js, loaded later in the same world) hooks into,
// so a page can neither remove them nor get its own listeners in first. Nothing of this is visible to
// the page's scripts: the world's globals are its own. A page's `document.open()` erases every
// listener of its window, ours too: `check()` (at each arming) finds that out and puts them back.
(() => {
  if (window.__bcEarly) return;
  const hooks = Object.create(null);
  const seen = new WeakSet();
  const PROBE = 'bc-guard-probe';
  let heard = false;
  const relay = (type) => (event) => {
    if (seen.has(event)) return;
    seen.add(event);
    const hook = hooks[type];
    if (hook) hook(event);
  };
  const attach = () => {
    for (const type of ['click', 'submit', 'beforeinput', 'keydown']) window.addEventListener(type, relay(type), true);
    if (window.navigation) window.navigation.addEventListener('navigate', relay('navigate'));
    window.addEventListener(PROBE, () => { heard = true; }, true);
  };
  attach();
  window.__bcEarly = Object.freeze({
    listen(type, hook) { hooks[type] = hook; },
    check() {
      heard = false;
      window.dispatchEvent(new Event(PROBE));
      if (!heard) attach();
      return heard;
    },
  });
})();
