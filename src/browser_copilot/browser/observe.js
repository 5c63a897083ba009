// One observation, run by the framework through the code tool. __OPTS__, __COOKIE_WORDS__ and __EXTRACT__ are filled
// in by observation.py. Order: let the page settle (after actions), close a blocking consent banner
// by rejecting (never by accepting), extract, then tabs, downloads and the optional screenshot.
async (page) => {
  const opts = __OPTS__;
  const extract = __EXTRACT__;
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

  // Wait until the DOM is quiet (30 ms without mutations) or `max` ms passed: no blanket sleep.
  const settle = (max) => page.evaluate((maxMs) => new Promise((resolve) => {
    const start = performance.now();
    let last = start;
    let changed = false;
    const observer = new MutationObserver(() => { last = performance.now(); changed = true; });
    observer.observe(document.documentElement, { subtree: true, childList: true, attributes: true, characterData: true });
    const check = () => {
      const now = performance.now();
      const quiet = document.readyState !== 'loading' && (changed ? now - last >= 30 : now - start >= 10);
      if (quiet || now - start >= maxMs) { observer.disconnect(); resolve(changed); } else setTimeout(check, 15);
    };
    setTimeout(check, 10);
  }), max).catch(() => false);

  // A consent banner in the way: sandbox/banner.js chooses, by structure, never "accept".
  const closeBanner = () => page.evaluate(__BANNER__, __COOKIE_WORDS__).catch(() => null);

  if (opts.settle) await settle(800);
  let banner = null;
  if (opts.banners) {
    banner = await closeBanner();
    if (banner) await settle(500);
  }
  let data = null;
  for (let attempt = 0; attempt < 3 && data === null; attempt += 1) {
    try {
      data = await page.evaluate(extract, opts);
    } catch (e) {
      if (attempt === 2 || !/context was destroyed|navigat|Target closed/i.test(String(e))) throw e;
      await page.waitForLoadState('domcontentloaded', { timeout: 10000 }).catch(() => {});
    }
  }
  data.banner = banner;
  data.downloads = context.__bcDownloads.filter((d) => !d.reported && d.state !== 'inProgress' && d.state !== 'started');
  for (const d of data.downloads) d.reported = true;

  // Other tabs' titles: asked once per URL (background tabs can be slow to answer), then remembered.
  const title = async (p) => {
    const url = p.url();
    if (p.__bcTitle && p.__bcTitle.url === url) return p.__bcTitle.title;
    const found = await Promise.race([p.title(), new Promise((r) => setTimeout(() => r(null), 150))]).catch(() => null);
    if (found !== null) p.__bcTitle = { url, title: found };
    return found || '';
  };
  data.tabs = await Promise.all(context.pages().map(async (p, i) => [i, p === page, p.url(), p === page ? data.title : await title(p)]));

  if (opts.screenshot) {
    if (await page.evaluate(() => document.hidden).catch(() => false)) await page.bringToFront();
    await page.evaluate(() => {
      const layer = document.createElement('div');
      layer.id = '__bc_marks';
      layer.style.cssText = 'position:fixed;inset:0;pointer-events:none;z-index:2147483647';
      const behind = window.__bcBehind || new Set();  // the page behind a modal: not drawn over it
      for (const el of (window.__bcMarked || [])) {
        const n = el.getAttribute('data-bc-id');
        if (!n || el.ownerDocument !== document || behind.has(el)) continue;
        const r = el.getBoundingClientRect();
        if (r.bottom < 0 || r.top > innerHeight) continue;
        const box = document.createElement('div');
        box.style.cssText = `position:fixed;left:${r.left}px;top:${r.top}px;width:${r.width}px;`
          + `height:${r.height}px;outline:2px solid #e11d48;font:bold 11px sans-serif;color:#fff`;
        const tag = document.createElement('span');
        tag.textContent = n;
        tag.style.cssText = 'position:absolute;left:-2px;top:-14px;background:#e11d48;padding:0 3px';
        box.appendChild(tag);
        layer.appendChild(box);
      }
      document.documentElement.appendChild(layer);
    });
    try {
      data.screenshot = (await page.screenshot({ type: 'jpeg', quality: 60 })).toString('base64');
    } finally {
      await page.evaluate(() => document.getElementById('__bc_marks')?.remove());
    }
  }
  return data;
}
