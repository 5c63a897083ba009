// Browser Copilot's web page: the live view of the agent's tab (WebSocket /live: pictures, the outline
// of what is acted on, and the user's clicks and keys while the agent waits for them or has finished).
// Pictures come only while the panel is open and the page visible (the server streams a tab only while
// someone watches). The user's clicks, wheel and keys go to the tab only when the server allows them:
// from the tab that gave the session its task, while the agent waits for them in the browser (a
// hand-over) or has finished, never while it acts.
// The picture opens large (Enlarge, Take over, or a click on it while only watching); Escape, Close or a
// click beside it closes it. The outline of what was acted on goes when the page changes (another
// address or title, a new observation, another viewport), or after a few seconds.
// Everything from the server is untrusted text: it reaches the DOM only through textContent.
'use strict';

window.BCLive = Object.freeze({
  // `page`: what the live view needs of the page (page.js): `app` (session, state, pendingKind), this
  // tab's id, and its text helpers `str`, `cut`, `hostOfUrl`.
  create(page) {
    const $ = (id) => document.getElementById(id);
    const { app, tabId, str, cut, hostOfUrl } = page;
    const KEYS = new Set(['Enter', 'Tab', 'Backspace', 'Delete', 'Escape', 'ArrowLeft', 'ArrowUp', 'ArrowRight', 'ArrowDown', 'Home', 'End', 'PageUp', 'PageDown']);
    const MARK_MS = 6000; // the outline's longest life when nothing changes
    const live = {
      ws: null, retry: 0, timer: null, owner: false, acting: false, meta: null, shown: null,
      url: '', title: '', picture: null, typed: '', typing: null, wheel: 0, wheelAt: null, wheelTimer: null, markTimer: null,
    };

    function wanted() {
      return !!app.session && $('live-box').open && document.visibilityState === 'visible';
    }

    function liveUrl(id) {
      const url = new URL(`/live/${encodeURIComponent(id)}`, location.href);
      url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
      url.searchParams.set('client', tabId);
      return url.href;
    }

    function empty(text) {
      const node = $('live-empty');
      node.textContent = text;
      node.hidden = !text;
    }

    function connect() {
      disconnect();
      if (!wanted()) {
        if (!live.picture) empty('Paused while this panel is closed or the page is hidden.');
        return;
      }
      const ws = new WebSocket(liveUrl(app.session));
      ws.binaryType = 'blob';
      live.ws = ws;
      ws.onopen = () => { live.retry = 0; };
      ws.onmessage = (e) => {
        if (live.ws !== ws) return;
        if (typeof e.data === 'string') {
          let message;
          try { message = JSON.parse(e.data); } catch { return; }
          onMessage(message);
        } else showPicture(e.data);
      };
      ws.onclose = () => {
        if (live.ws !== ws) return;
        live.ws = null;
        if (wanted()) live.timer = setTimeout(connect, Math.min(10000, 500 * 2 ** live.retry++));
      };
    }

    function disconnect() {
      clearTimeout(live.timer);
      const ws = live.ws;
      live.ws = null;
      if (ws) { ws.onclose = null; ws.close(); }
    }

    function reset() {
      disconnect();
      shrink();
      if (live.picture) URL.revokeObjectURL(live.picture);
      Object.assign(live, { picture: null, meta: null, shown: null, url: '', title: '', owner: false, acting: false, retry: 0 });
      $('live-img').hidden = true;
      $('live-img').removeAttribute('src');
      clearMark('session');
      $('live-enlarge').disabled = true;
      $('live-step').textContent = '';
      $('live-where').textContent = '';
      empty('Connecting to the browser…');
      control();
    }

    function onMessage(m) {
      switch (m.kind) {
        case 'control':
          live.owner = !!m.owner;
          live.acting = !!m.acting;
          control();
          break;
        case 'live':
          if (m.state === 'watching') {
            where(m.url, m.title);
            if (!live.picture) empty(str(m.message) || 'Waiting for the first picture…');
          } else if (m.state === 'no_tab') {
            empty('No tab yet: the agent’s tab shows here as soon as it starts working.');
          } else {
            empty(str(m.message) || 'The live view is not available.');
            $('live-img').hidden = true;
          }
          break;
        case 'frame':
          if (live.meta && (live.meta.width !== m.width || live.meta.height !== m.height)) clearMark('viewport');
          live.meta = m;
          break;
        case 'highlight':
          showMark(m);
          break;
        case 'page':
          where(m.url, m.title);
          break;
        case 'error':
          $('live-control').textContent = str(m.message);
          break;
        default:
          break;
      }
    }

    // The tab's address and title; another one is another page, where the old outline means nothing.
    function where(url, title) {
      if (str(url) !== live.url || str(title) !== live.title) clearMark('page');
      live.url = str(url);
      live.title = str(title);
      const shown = live.title || (live.url ? hostOfUrl(live.url) : '');
      $('live-where').textContent = shown ? `· ${cut(shown, 60)}` : '';
      $('live-where').title = live.url;
      $('live-large-where').textContent = cut(shown, 90);
    }

    function showPicture(blob) {
      const img = $('live-img');
      const url = URL.createObjectURL(new Blob([blob], { type: 'image/jpeg' }));
      const old = live.picture;
      live.picture = url;
      live.shown = live.meta;
      img.onload = () => {
        if (old) URL.revokeObjectURL(old);
        if ($('live-large').open) fitLarge();
      };
      img.src = url;
      img.hidden = false;
      $('live-enlarge').disabled = false;
      empty('');
    }

    // The element the agent (or the user) just acted on, outlined until the page changes.
    function showMark(m) {
      const [x, y, w, h] = (m.box || []).map(Number);
      const [vw, vh] = (m.viewport || []).map(Number);
      if (!(vw > 0 && vh > 0) || [x, y, w, h].some((n) => !Number.isFinite(n))) return;
      const mark = $('live-mark');
      const pad = 3;
      mark.style.left = `${((x - pad) / vw) * 100}%`;
      mark.style.top = `${((y - pad) / vh) * 100}%`;
      mark.style.width = `${((w + 2 * pad) / vw) * 100}%`;
      mark.style.height = `${((h + 2 * pad) / vh) * 100}%`;
      mark.dataset.action = str(m.action);
      mark.dataset.seen = String((Number(mark.dataset.seen) || 0) + 1);
      mark.dataset.actions = `${mark.dataset.actions || ''} ${str(m.action)}`.trim().split(' ').slice(-10).join(' ');
      delete mark.dataset.cleared;
      mark.hidden = false;
      clearTimeout(live.markTimer);
      live.markTimer = setTimeout(() => clearMark('time'), MARK_MS);
    }

    // `reason` (page, observation, viewport, time, session) stays on the element for whoever looks.
    function clearMark(reason) {
      const mark = $('live-mark');
      clearTimeout(live.markTimer);
      if (mark.hidden) return;
      mark.hidden = true;
      mark.dataset.cleared = reason;
    }

    function canDrive() {
      if (!live.owner || app.state === 'running' || app.state === 'offline') return false;
      return app.state !== 'waiting_user' || app.pendingKind === 'manual';
    }

    function control() {
      const on = canDrive();
      $('live-screen').dataset.drive = on ? 'on' : 'off';
      const take = $('live-take');
      take.disabled = !on;
      take.classList.toggle('primary', on && app.state === 'waiting_user');
      let text;
      if (on && app.state === 'waiting_user') text = 'Your turn: click, scroll and type in the picture (Take over shows it large) to act in this page.';
      else if (on) text = 'You can click, scroll and type in the picture to act in this page yourself.';
      else if (!live.owner && app.session) text = 'Watching. Only the browser tab that gave this session its task can act in its page.';
      else if (app.state === 'running') text = 'Watching the agent work.';
      else if (app.state === 'waiting_user') text = 'Answer the question in the chat first; then you can act in the page here.';
      else text = '';
      $('live-control').textContent = text;
      take.title = on ? 'Show the page large and act in it yourself' : text || 'Not now';
    }

    function sendLive(message) {
      const ws = live.ws;
      if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(message));
    }

    function flushTyped() {
      clearTimeout(live.typing);
      live.typing = null;
      if (live.typed) sendLive({ kind: 'text', text: live.typed });
      live.typed = '';
    }

    function pointAt(e) {
      const r = $('live-img').getBoundingClientRect();
      if (!r.width || !r.height) return null;
      const x = (e.clientX - r.left) / r.width;
      const y = (e.clientY - r.top) / r.height;
      return x >= 0 && x <= 1 && y >= 0 && y <= 1 ? { x, y } : null;
    }

    // ----- the large view: the same picture (and its handlers) moved into a modal dialog -----
    function enlarge(focus) {
      const dialog = $('live-large');
      if ($('live-img').hidden) return false;
      if (!dialog.open) {
        $('live-large-slot').append($('live-screen'));
        dialog.showModal();
        fitLarge();
      }
      if (focus) $('live-screen').focus({ preventScroll: true });
      return true;
    }

    // The picture as large as the window allows, at its own shape (the outline is placed in shares of it).
    function fitLarge() {
      const img = $('live-img');
      const ratio = img.naturalWidth && img.naturalHeight ? img.naturalWidth / img.naturalHeight : 16 / 10;
      const slot = $('live-large-slot').getBoundingClientRect();
      const room = innerHeight * 0.96 - $('live-large-bar').getBoundingClientRect().height - 24;
      const width = Math.max(120, Math.min(slot.width || innerWidth * 0.9, room * ratio));
      $('live-screen').style.width = `${Math.floor(width)}px`;
    }

    function shrink() {
      const dialog = $('live-large');
      if (dialog.open) dialog.close();
    }

    function putBack() {
      const screen = $('live-screen');
      screen.style.width = '';
      $('live-tools').before(screen);
    }

    function wire() {
      const screen = $('live-screen');
      screen.addEventListener('click', (e) => {
        if (!e.isTrusted || $('live-img').hidden) return;
        if (!canDrive()) {
          if (!$('live-large').open) enlarge(false);
          control();
          return;
        }
        const at = pointAt(e);
        if (!at) return;
        flushTyped();
        screen.focus({ preventScroll: true });
        sendLive({ kind: 'click', ...at });
      });
      screen.addEventListener('keydown', (e) => {
        if (!e.isTrusted || !canDrive() || e.isComposing) return;
        if (e.key === 'Escape' && $('live-large').open) return; // closes the large view
        if (KEYS.has(e.key)) {
          flushTyped();
          sendLive({ kind: 'key', key: e.key, shift: e.shiftKey, ctrl: e.ctrlKey, alt: e.altKey, meta: e.metaKey });
          e.preventDefault();
        } else if (e.key.length === 1 && !e.ctrlKey && !e.metaKey && !e.altKey) {
          live.typed += e.key;
          clearTimeout(live.typing);
          live.typing = setTimeout(flushTyped, 80);
          e.preventDefault();
        }
      });
      screen.addEventListener('paste', (e) => {
        if (!e.isTrusted || !canDrive()) return;
        const text = e.clipboardData ? e.clipboardData.getData('text') : '';
        if (text) { flushTyped(); sendLive({ kind: 'text', text: text.slice(0, 2000) }); e.preventDefault(); }
      });
      screen.addEventListener('wheel', (e) => {
        if (!e.isTrusted || !canDrive()) return;
        const at = pointAt(e);
        if (!at) return;
        e.preventDefault();
        live.wheel += e.deltaY;
        live.wheelAt = at;
        if (!live.wheelTimer) {
          live.wheelTimer = setTimeout(() => {
            live.wheelTimer = null;
            const dy = Math.max(-5000, Math.min(5000, live.wheel));
            live.wheel = 0;
            if (dy) sendLive({ kind: 'wheel', ...live.wheelAt, dy });
          }, 100);
        }
      }, { passive: false });
      const dialog = $('live-large');
      dialog.addEventListener('close', putBack);
      dialog.addEventListener('click', (e) => { if (e.target === dialog) shrink(); }); // beside the picture
      $('live-close').addEventListener('click', shrink);
      $('live-enlarge').addEventListener('click', () => enlarge(false));
      $('live-take').addEventListener('click', () => { if (canDrive()) enlarge(true); });
      addEventListener('resize', () => { if (dialog.open) fitLarge(); });
      $('live-box').addEventListener('toggle', () => connect());
      document.addEventListener('visibilitychange', () => {
        if (wanted() === !!live.ws) return;
        connect();
      });
    }

    // The panel opened (and brought into view), e.g. for a hand-over in a browser without a window.
    function open() {
      const box = $('live-box');
      if (!box.open) box.open = true; // its toggle event connects
      box.scrollIntoView({ block: 'nearest' });
    }

    return Object.freeze({
      connect,
      disconnect,
      reset,
      control,
      open,
      enlarge,
      wire,
      // A new observation of the page (SSE): the outline belonged to the page before it.
      pageChanged: () => clearMark('observation'),
      title: () => live.title,
    });
  },
});
