// One observation through the code tool (when the app's own look, browser/look.py, leaves it to the
// code tool: a dialog, a download, a tab opened or closed, a screenshot). __OPTS__, __VERSION__ and
// __INSTALL__ (the page's half, or null when the browser context should have kept it) are filled in by
// observing.py. The page's half (observer.js: settle, find a blocking consent banner's rejecting
// option, never accepting, for the guard to click; extract) lives in Playwright's utility world of the document, put there by the
// document's first observation here. Then tabs (with their target ids), downloads and the optional
// screenshot.
async (page) => {
  const opts = __OPTS__;
  const context = page.context();

  // Downloads go where the browser saves them; the browser's CDP events say where that was.
  if (!context.__bcDownloads) {
    context.__bcDownloads = [];
    try {
      const cdp = await context.browser().newBrowserCDPSession();
      await cdp.send('Browser.setDownloadBehavior', { behavior: 'default', eventsEnabled: true });
      cdp.on('Browser.downloadWillBegin', (e) => context.__bcDownloads.push(
        { guid: e.guid, url: e.url, name: e.suggestedFilename, state: 'started' }));
      cdp.on('Browser.downloadProgress', (e) => {
        const d = context.__bcDownloads.find((x) => x.guid === e.guid);
        if (d) { d.state = e.state; if (e.filePath) d.path = e.filePath; }
      });
    } catch (e) { /* no browser-level CDP (e.g. a restricted endpoint): downloads are not reported */ }
  }

  // The page's half, called in the utility world; a document that lacks it gets it with the call.
  // Its source (~50 kB) comes with the code only when this browser context has not kept it yet.
  // (Most observations do not come here: the app looks over its own DevTools connection, browser/look.py.)
  const version = __VERSION__;
  let source = __INSTALL__;
  if (source === null) {
    if (!context.__bcSource || context.__bcSource.version !== version) return '__bcSendSource';
    source = context.__bcSource.source;
  } else context.__bcSource = { version, source };
  const inWorld = (expression) => page.evaluate(expression, undefined, { world: 'utility' });
  const have = `globalThis.__bcObserver && __bcObserver.version === ${JSON.stringify(version)}`;
  const call = async (method) => {
    const run = `__bcObserver.${method}`;
    const out = await inWorld(`${have} ? ${run} : '__bcMissing'`);
    return out === '__bcMissing' ? inWorld(`if (!(${have})) {\n${source}\n}\n${run}`) : out;
  };

  let data = null;
  for (let attempt = 0; attempt < 3 && data === null; attempt += 1) {
    try {
      data = JSON.parse(await call(`observe(${JSON.stringify(opts)})`));
    } catch (e) {
      if (attempt === 2 || !/context was destroyed|navigat|Target closed/i.test(String(e))) throw e;
      await page.waitForLoadState('domcontentloaded', { timeout: 10000 }).catch(() => {});
    }
  }
  data.downloads = context.__bcDownloads.filter((d) => !d.reported && d.state !== 'inProgress' && d.state !== 'started');
  for (const d of data.downloads) d.reported = true;
  data.pending = context.__bcDownloads.filter((d) => !d.reported).length;

  // Other tabs' titles: asked once per URL (background tabs can be slow to answer), then remembered.
  const title = async (p) => {
    const url = p.url();
    if (p.__bcTitle && p.__bcTitle.url === url) return p.__bcTitle.title;
    const found = await Promise.race([p.title(), new Promise((r) => setTimeout(() => r(null), 150))]).catch(() => null);
    if (found !== null) p.__bcTitle = { url, title: found };
    return found || '';
  };
  data.tabs = await Promise.all(context.pages().map(async (p, i) => [i, p === page, p.url(), p === page ? data.title : await title(p)]));
  // The tabs' target ids, in this list's order: the app's own look (browser/look.py) keeps the order,
  // whose indexes switch_tab takes. Asked once per page object (as world.js's target()).
  const targetId = async (p) => {
    if (p.__bcWorld) return p.__bcWorld.frameId;
    if (!p.__bcTarget) {
      const session = await context.newCDPSession(p);
      try {
        p.__bcTarget = (await session.send('Target.getTargetInfo')).targetInfo.targetId;
      } finally {
        session.detach().catch(() => null);
      }
    }
    return p.__bcTarget;
  };
  data.ids = await Promise.all(context.pages().map((p) => targetId(p).catch(() => null)));

  // No picture of a page showing a secret value it once held in a field (pixels cannot be masked as
  // text is); secret fields themselves are masked, in every frame.
  if (opts.screenshot && !data.secretShown) {
    if (await page.evaluate(() => document.hidden).catch(() => false)) await page.bringToFront();
    await call('marks(true)');
    try {
      const mask = page.frames().map((f) => f.locator('input[type=password], input[autocomplete~="one-time-code"], input[autocomplete^="cc-"], [data-bc-secret], [data-bc-opaque]'));
      data.screenshot = (await page.screenshot({ type: 'jpeg', quality: 60, mask })).toString('base64');
    } finally {
      await call('marks(false)');
    }
  }
  return data;
}
