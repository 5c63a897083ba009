// Browser Copilot's web page: sessions, chat (WebSocket), steps (SSE), working state (REST).
// Everything from the server is untrusted text (page titles and agent text come from web pages):
// it reaches the DOM only through textContent / createTextNode, never innerHTML.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);

  // ----- who we are: the session cookie (set by the printed link, once) and this tab's id -----
  // The server sends a confirmation card's nonce only to the tab whose message started the run, named
  // by this id. It lives in this closure; across a reload of this tab it waits in sessionStorage (of
  // this tab only) from `pagehide` to the next start, which takes it out again.
  const TAB_KEY = 'bc_tab';
  const MAX_MESSAGE = 64 * 1024; // the server's limit for one WebSocket message
  const tabId = (() => {
    const kept = sessionStorage.getItem(TAB_KEY);
    sessionStorage.removeItem(TAB_KEY);
    if (kept && /^[A-Za-z0-9_-]{16,64}$/.test(kept)) return kept;
    const bytes = crypto.getRandomValues(new Uint8Array(18));
    return btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_');
  })();
  addEventListener('pagehide', () => sessionStorage.setItem(TAB_KEY, tabId));
  addEventListener('pageshow', () => sessionStorage.removeItem(TAB_KEY));

  const app = {
    session: null, // current session id
    ws: null,
    wsRetry: 0,
    events: null, // EventSource
    state: 'idle',
    queued: 0,
    steps: 0,
    seen: new Set(), // SSE event ids already shown (a reconnect must not repeat a step)
    replayUpTo: 0, // the last SSE id when the session's chat was loaded (see showHistory)
    historyTexts: new Set(), // the answers the loaded chat shows
    historyItems: new Map(), // their bubbles, by text (a replayed `final` marks one unverified)
    lastItem: null, // the bubble of the last answer
    streaming: null, // the bubble of the reply being written (SSE answer_stream)
  };

  // ----- DOM helpers (text only) -----
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'class') node.className = value;
      else if (key === 'text') node.textContent = String(value);
      else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? '' : String(value));
    }
    for (const child of children) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  const str = (v) => (v === undefined || v === null ? '' : String(v));

  function safeHref(url) {
    try {
      const parsed = new URL(str(url), location.href);
      return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.href : null;
    } catch {
      return null;
    }
  }

  // ----- simple, safe Markdown: paragraphs, lists, headings, code, bold, italics, links -----
  function inline(text) {
    const out = document.createDocumentFragment();
    // code | **bold** | [text](url) | bare URL | *italic* (not inside a word: `a*b*c` stays as it is)
    const pattern = /(`+)([^`]+?)\1|\*\*([^*]+?)\*\*|\[([^\]\n]+)\]\(([^)\s]+)\)|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])|(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])/g;
    let last = 0;
    for (const m of text.matchAll(pattern)) {
      if (m.index > last) out.append(text.slice(last, m.index));
      if (m[2] !== undefined) out.append(el('code', { text: m[2] }));
      else if (m[3] !== undefined) out.append(el('strong', {}, inline(m[3])));
      else if (m[4] !== undefined) {
        const href = safeHref(m[5]);
        out.append(href ? el('a', { href, target: '_blank', rel: 'noopener noreferrer' }, inline(m[4])) : m[0]);
      } else if (m[6] !== undefined) {
        const href = safeHref(m[6]);
        out.append(href ? el('a', { href, target: '_blank', rel: 'noopener noreferrer', text: m[6] }) : m[6]);
      } else if (m[7] !== undefined) out.append(el('em', {}, inline(m[7])));
      last = m.index + m[0].length;
    }
    if (last < text.length) out.append(text.slice(last));
    return out;
  }

  function withBreaks(lines) {
    const frag = document.createDocumentFragment();
    lines.forEach((line, i) => {
      if (i) frag.append(el('br'));
      frag.append(inline(line));
    });
    return frag;
  }

  function markdown(source) {
    const root = el('div', { class: 'md' });
    const lines = str(source).replace(/\r\n?/g, '\n').split('\n');
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      if (!line.trim()) { i += 1; continue; }
      const fence = line.match(/^\s*```/);
      if (fence) {
        const body = [];
        i += 1;
        while (i < lines.length && !/^\s*```/.test(lines[i])) body.push(lines[i++]);
        i += 1;
        root.append(el('pre', {}, el('code', { text: body.join('\n') })));
        continue;
      }
      const heading = line.match(/^\s{0,3}(#{1,6})\s+(.*)$/);
      if (heading) {
        root.append(el(heading[1].length <= 2 ? 'h3' : 'h4', {}, inline(heading[2])));
        i += 1;
        continue;
      }
      const bullet = /^\s*[-*+]\s+(.*)$/;
      const numbered = /^\s*(\d+)[.)]\s+(.*)$/;
      if (bullet.test(line) || numbered.test(line)) {
        const ordered = numbered.test(line);
        const pattern = ordered ? numbered : bullet;
        const list = el(ordered ? 'ol' : 'ul');
        if (ordered) {
          const start = Number(line.match(numbered)[1]);
          if (start !== 1) list.setAttribute('start', String(start));
        }
        let item = null;
        while (i < lines.length && lines[i].trim()) {
          const m = lines[i].match(pattern);
          if (m) {
            item = el('li', {}, inline(ordered ? m[2] : m[1]));
            list.append(item);
          } else if (item && /^\s+/.test(lines[i])) {
            item.append(' ', inline(lines[i].trim()));
          } else break;
          i += 1;
        }
        root.append(list);
        continue;
      }
      const para = [];
      while (i < lines.length && lines[i].trim() && !/^\s*(```|#{1,6}\s|[-*+]\s|\d+[.)]\s)/.test(lines[i])) {
        para.push(lines[i++]);
      }
      if (!para.length) para.push(lines[i++]);
      root.append(el('p', {}, withBreaks(para)));
    }
    return root;
  }

  // ----- network -----
  function headers(extra) {
    return { Accept: 'application/json', ...(extra || {}) };
  }

  async function api(method, path, body) {
    const init = { method, headers: headers(body ? { 'Content-Type': 'application/json' } : {}), credentials: 'same-origin' };
    if (body) init.body = JSON.stringify(body);
    const response = await fetch(path, init);
    if (response.status === 401) {
      banner('Not signed in. Open the link that `main.py serve` printed; a link signs in once (opened again, it makes the terminal print a new one).');
      throw new Error('401');
    }
    if (!response.ok) throw new Error(`${method} ${path}: HTTP ${response.status}`);
    return response.json();
  }

  function banner(text) {
    const node = $('banner');
    node.textContent = text;
    node.hidden = !text;
  }

  // ----- status line and Stop -----
  const STATE_LABELS = {
    running: 'Running',
    idle: 'Idle',
    waiting_user: 'Waiting for you',
    error: 'Error',
    offline: 'Disconnected, reconnecting…',
  };

  function setStatus(state, queued) {
    app.state = state;
    app.queued = Number(queued) || 0;
    const label = STATE_LABELS[state] || str(state);
    $('status').dataset.state = state;
    $('status-text').textContent = app.queued > 0 ? `${label} · queued ${app.queued}` : label;
    $('stop').hidden = !(state === 'running' && app.session);
    if (state !== 'waiting_user') {
      $('handover').hidden = true;
      closeCards();
    }
  }

  // ----- sessions -----
  function shortTime(value) {
    if (value === undefined || value === null || value === '') return '';
    const date = typeof value === 'number' ? new Date(value < 1e12 ? value * 1000 : value) : new Date(value);
    if (Number.isNaN(date.getTime())) return str(value);
    const today = new Date().toDateString() === date.toDateString();
    return today ? date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }) : date.toLocaleDateString();
  }

  async function loadSessions() {
    const data = await api('GET', '/api/sessions');
    const list = $('session-list');
    list.replaceChildren();
    for (const s of data.sessions || []) {
      const current = s.id === app.session;
      const button = el(
        'button',
        { type: 'button', class: 'session', 'aria-current': current ? 'true' : null, 'data-id': s.id, onclick: () => select(s.id) },
        el('span', { class: 'session-goal', text: s.goal || 'New session' }),
        el('span', { class: 'session-meta' },
          el('span', { class: `badge state-${str(s.state).replace(/[^a-z_]/g, '')}`, text: STATE_LABELS[s.state] || str(s.state) }),
          ' ',
          el('span', { class: 'muted', text: shortTime(s.updated) })),
      );
      list.append(el('li', {}, button));
    }
    return data.sessions || [];
  }

  async function newSession() {
    const data = await api('POST', '/api/sessions', {});
    const selecting = select(data.id); // sets app.session at once, then loads the state
    await loadSessions();
    await selecting;
    $('input').focus();
  }

  async function select(id) {
    if (!id) return;
    if (app.ws) { app.ws.onclose = null; app.ws.close(); app.ws = null; }
    if (app.events) { app.events.close(); app.events = null; }
    app.session = id;
    app.seen = new Set();
    app.steps = 0;
    app.lastAnswer = null;
    history.replaceState(null, '', `#${encodeURIComponent(id)}`);
    $('messages').replaceChildren(el('li', { class: 'message note hint', text: 'Ask for something to do in your browser: the steps, the plan and any confirmation appear here.' }));
    $('steps').replaceChildren();
    $('steps-count').textContent = '';
    $('handover').hidden = true;
    for (const b of document.querySelectorAll('.session')) {
      if (b.dataset.id === id) b.setAttribute('aria-current', 'true'); else b.removeAttribute('aria-current');
    }
    if (window.matchMedia('(max-width: 760px)').matches) $('sessions-box').open = false;
    app.replayUpTo = 0;
    app.historyTexts = new Set();
    app.historyItems = new Map();
    renderState({});
    const data = await refreshState();
    if (id !== app.session) return;
    if (data) showHistory(data);
    connectSocket();
    connectEvents();
  }

  // A reloaded page (or another session) shows the conversation kept in the checkpoint; the SSE replay
  // of the same answers (`final` up to `last_event_id`) is then not shown again.
  function showHistory(data) {
    const chat = Array.isArray(data.chat) ? data.chat : [];
    app.replayUpTo = Number(data.last_event_id) || 0;
    for (const item of chat) {
      const text = str(item.text).trim();
      if (!text) continue;
      if (item.who === 'user') {
        addMessage('user', el('p', { text }));
      } else {
        const item = addMessage('agent', markdown(text), 'final');
        app.historyTexts.add(text);
        app.historyItems.set(text, item);
        app.lastAnswer = text;
        app.lastItem = item;
      }
    }
    // The last answer, when the checks doubted it: marked from the checkpoint (the server may have
    // restarted since, with no event left to replay).
    const outcome = data.outcome || {};
    if (outcome.stop_reason === 'answered' && outcome.verified === false && app.lastItem && chat.length
      && chat[chat.length - 1].who === 'agent') markUnverified(app.lastItem, outcome.doubts);
  }

  // ----- working state -----
  // The WebSocket tells the status and re-sends a pending question on connect; REST gives the state.
  async function refreshState() {
    const id = app.session;
    if (!id) return;
    let data;
    try {
      data = await api('GET', `/api/sessions/${encodeURIComponent(id)}`);
    } catch {
      return; // a session that has not run yet is not known to the server: nothing to show
    }
    if (id === app.session) renderState(data);
    return data;
  }

  function renderState(data) {
    const goal = $('goal');
    goal.textContent = data.goal || '(none yet)';
    goal.classList.toggle('muted', !data.goal);
    const plan = $('plan');
    plan.replaceChildren();
    const progress = data.progress || { current: 1, done: [], blocked: [] };
    const done = new Set(progress.done || []);
    const blocked = new Set(progress.blocked || []);
    (data.plan || []).forEach((step, index) => {
      const n = index + 1;
      const [mark, word, cls] = done.has(n)
        ? ['✓', 'done', 'done']
        : blocked.has(n)
          ? ['✗', 'blocked', 'blocked']
          : n === progress.current
            ? ['▸', 'current', 'current']
            : ['·', 'to do', 'todo'];
      plan.append(el('li', { class: `plan-step ${cls}` },
        el('span', { class: 'mark', 'aria-hidden': 'true', text: mark }),
        el('span', { class: 'visually-hidden', text: `${word}: ` }),
        el('span', { text: step })));
    });
    if (!plan.children.length) plan.append(el('li', { class: 'muted empty', text: '(no plan yet)' }));
    const facts = $('facts');
    facts.replaceChildren();
    for (const f of data.facts || []) {
      const href = safeHref(f.source);
      facts.append(el('li', {},
        el('span', { text: f.fact }), ' ',
        href
          ? el('a', { class: 'source', href, target: '_blank', rel: 'noopener noreferrer', text: hostOf(href) })
          : (f.source ? el('span', { class: 'source muted', text: `(${f.source})` }) : null)));
    }
    if (!facts.children.length) facts.append(el('li', { class: 'muted empty', text: '(none yet)' }));
  }

  function hostOf(href) {
    try { return new URL(href).host; } catch { return href; }
  }

  // ----- chat -----
  function addMessage(who, body, extraClass) {
    for (const hint of document.querySelectorAll('.message.hint')) hint.remove();
    const item = el('li', { class: `message ${who} ${extraClass || ''}` },
      el('p', { class: 'who', text: who === 'user' ? 'You' : who === 'agent' ? 'Agent' : 'Note' }),
      body);
    $('messages').append(item);
    item.scrollIntoView({ block: 'end' });
    return item;
  }

  // An answer comes twice: as the SSE `final` event (also replayed after a reload) and as the
  // WebSocket `agent_message`. The chat shows it once.
  // An answer the app's checks still doubt (`verified: false` with `doubts`) is marked, never shown as a
  // plain success.
  function answer(text, stopReason, verified, doubts) {
    const body = str(text).trim() || '(no answer)';
    const reason = str(stopReason || 'answered').replace(/[^a-z_]/g, '');
    const doubted = reason === 'answered' && verified === false;
    dropStream();
    if (app.lastAnswer === body) {
      if (doubted && app.lastItem) markUnverified(app.lastItem, doubts);
      return;
    }
    app.lastAnswer = body;
    const item = addMessage('agent', markdown(body), reason === 'answered' ? 'final' : `final stop-${reason}`);
    app.lastItem = item;
    if (reason !== 'answered') item.querySelector('.who').textContent = `Agent · ${reason.replace(/_/g, ' ')}`;
    if (doubted) markUnverified(item, doubts);
  }

  function markUnverified(item, doubts) {
    if (!item || item.querySelector('.unverified-mark')) return;
    const reasons = (Array.isArray(doubts) ? doubts : []).map(str).filter((r) => r.trim());
    if (!reasons.length) reasons.push("the app's checks could not confirm it");
    item.classList.add('unverified');
    item.querySelector('.who').textContent = 'Agent · unverified';
    item.querySelector('.who').after(el('div', { class: 'unverified-mark', role: 'note' },
      el('strong', { text: 'Unverified:' }), ' the app’s checks doubt this answer',
      el('ul', {}, ...reasons.map((r) => el('li', { text: r })))));
  }

  // The reply as the model writes it (SSE `answer_stream`: the whole text so far). One bubble, replaced
  // by the answer; a note on the way to a tool call becomes a step.
  function streamAnswer(d) {
    const text = str(d.text);
    if (d.done && d.tool_calls) {
      dropStream();
      if (text.trim()) addStep('answer_stream', 'note', '…', text.replace(/\s+/g, ' ').slice(0, 240));
      return;
    }
    if (!text.trim()) return;
    if (!app.streaming || !app.streaming.isConnected) {
      app.streaming = addMessage('agent', el('div', { class: 'stream-body' }), 'streaming');
    }
    const body = app.streaming.querySelector('.stream-body');
    body.replaceChildren(markdown(text));
    app.streaming.scrollIntoView({ block: 'end' });
  }

  function dropStream() {
    if (app.streaming) app.streaming.remove();
    app.streaming = null;
  }

  function send(text, extra) {
    const message = str(text).trim();
    if (!message) return false;
    if (!app.session) return false;
    const data = JSON.stringify({ kind: 'user_message', text: message, ...(extra || {}) });
    if (new Blob([data]).size > MAX_MESSAGE) {
      addMessage('note', el('p', { text: `The message is too long: at most ${MAX_MESSAGE / 1024} KiB.` }), 'error');
      return false;
    }
    const ws = app.ws;
    if (ws && ws.readyState === WebSocket.CONNECTING) {
      // Typed while the page is still connecting (just loaded, or reconnecting): sent once it opens.
      const opened = () => { ws.removeEventListener('close', failed); if (app.ws === ws) ws.send(data); };
      const failed = () => {
        ws.removeEventListener('open', opened);
        addMessage('note', el('p', { text: `Not sent (the connection failed): ${message.slice(0, 80)}` }), 'error');
      };
      ws.addEventListener('open', opened, { once: true });
      ws.addEventListener('close', failed, { once: true });
      app.lastAnswer = null;
      return true;
    }
    if (!ws || ws.readyState !== WebSocket.OPEN) {
      addMessage('note', el('p', { text: 'Not connected; the page reconnects by itself: try again in a moment.' }), 'error');
      return false;
    }
    ws.send(data);
    app.lastAnswer = null;
    return true;
  }

  const CARD_ROWS = [
    ['does', 'happens'],
    ['action', 'what'],
    ['site', 'site'],
    ['page', 'page'],
    ['amount', 'amount'],
    ['items', 'count'],
    ['arguments', 'arguments'],
    ['why', 'reason'],
  ];

  function confirmationCard(payload) {
    const card = payload.card || {};
    const rows = el('dl', { class: 'card-facts' });
    const row = (label, value) => rows.append(el('div', { class: 'row' }, el('dt', { text: label }), el('dd', { text: value })));
    for (const [label, key] of CARD_ROWS) {
      if (card[key] !== undefined && card[key] !== null && card[key] !== '') row(label, str(card[key]));
    }
    if (card.by === 'judge' || card.by === 'cache') {
      row('checked', 'the safety judge (a separate model call that saw only the page\'s facts)');
    } else if (card.by === 'fail-closed') {
      row('checked', 'the safety judge could not decide, so you are asked');
    }
    for (const pair of card.values || []) {
      const [name, value] = Array.isArray(pair) ? pair : [pair && pair.label, pair && pair.value];
      row('typed', `${str(name)}: ${str(value)}`);
    }
    if (card.code) row('code', str(card.code).replace(/\s+/g, ' ').slice(0, 300));
    const titleId = `card-${Date.now()}-${Math.random().toString(36).slice(2, 7)}`;
    // The proof that a person saw this card: its nonce, kept in this closure only (never in the DOM).
    const nonce = typeof payload.nonce === 'string' && payload.nonce ? payload.nonce : null;
    const allow = el('button', { type: 'button', class: 'allow primary', disabled: !nonce }, 'Allow once');
    const refuse = el('button', { type: 'button', class: 'refuse danger' }, 'Refuse');
    const result = el('p', { class: 'card-result', role: 'status' });
    if (!nonce) {
      result.textContent = 'Only the tab you asked from can allow this (or, after a restart of the server, nobody: refuse it and ask again).';
    }
    const box = el('section', { class: 'card', 'aria-labelledby': titleId },
      el('h3', { id: titleId, text: `Confirm: ${str(card.category || 'action')}` }),
      el('p', { class: 'question', text: payload.question }),
      rows,
      el('div', { class: 'actions' }, allow, refuse),
      result);
    const answer = (word, label, extra) => {
      if (send(word, extra)) {
        allow.disabled = true;
        refuse.disabled = true;
        box.classList.add('answered');
        result.textContent = label;
      }
    };
    box.reopen = () => {
      box.classList.remove('answered');
      allow.disabled = !nonce;
      refuse.disabled = false;
      result.textContent = '';
    };
    // Only a person's click (or key) allows: a click a script makes in this page is not trusted.
    allow.addEventListener('click', (e) => { if (e.isTrusted && nonce) answer('/yes', 'Allowed once.', { nonce }); });
    refuse.addEventListener('click', () => answer('/no', 'Refused.'));
    return box;
  }

  function closeCards() {
    for (const box of document.querySelectorAll('.card:not(.answered)')) {
      box.classList.add('answered');
      for (const b of box.querySelectorAll('button')) b.disabled = true;
    }
  }

  function question(payload) {
    const kind = payload.pending_kind || payload.kind;
    if (kind === 'confirm') {
      closeCards();
      addMessage('agent', confirmationCard(payload), 'has-card');
      return;
    }
    if (kind === 'manual') {
      $('handover-question').textContent = str(payload.question);
      $('handover').hidden = false;
      $('handover-done').focus({ preventScroll: true });
      return;
    }
    const body = el('div', {}, markdown(payload.question));
    const options = payload.options || [];
    if (options.length) {
      const row = el('div', { class: 'actions options' });
      for (const option of options) {
        row.append(el('button', { type: 'button', class: 'option', onclick: (e) => { if (send(str(option))) { addMessage('user', el('p', { text: str(option) })); e.target.disabled = true; } } }, str(option)));
      }
      body.append(row);
    }
    addMessage('agent', body, 'question');
  }

  // ----- WebSocket: chat -----
  function socketUrl(id) {
    const url = new URL(`/ws/${encodeURIComponent(id)}`, location.href);
    url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
    url.searchParams.set('client', tabId);
    return url.href;
  }

  function connectSocket() {
    const id = app.session;
    const ws = new WebSocket(socketUrl(id));
    app.ws = ws;
    ws.onopen = () => {
      app.wsRetry = 0;
      banner('');
      if (app.state === 'offline') setStatus('idle', 0);
    };
    ws.onmessage = (e) => {
      let message;
      try { message = JSON.parse(e.data); } catch { return; }
      if (id !== app.session) return;
      onSocketMessage(message);
    };
    ws.onclose = () => {
      if (app.ws !== ws) return;
      setStatus('offline', 0);
      const delay = Math.min(10000, 500 * 2 ** app.wsRetry++);
      setTimeout(() => { if (app.ws === ws) connectSocket(); }, delay);
    };
  }

  function onSocketMessage(m) {
    switch (m.kind) {
      case 'status':
        setStatus(m.state, m.queued);
        if (m.state === 'idle' || m.state === 'waiting_user') {
          refreshState();
          loadSessions().catch(() => {});
        }
        break;
      case 'agent_message':
        loadSessions().catch(() => {});
        answer(m.text, m.stop_reason, m.verified, m.doubts);
        break;
      case 'agent_question':
        loadSessions().catch(() => {});
        question(m);
        break;
      case 'error': {
        addMessage('note', el('p', { text: `${str(m.message)}${m.code ? ` (${m.code})` : ''}` }), 'error');
        const cards = document.querySelectorAll('.card');
        const last = cards[cards.length - 1];
        if (m.code === 'not_approved' && last && last.reopen) last.reopen(); // the card still waits
        break;
      }
      default:
        break;
    }
  }

  // ----- SSE: the steps -----
  const STEP_KINDS = ['observation', 'tool_call', 'tool_result', 'policy_request', 'policy_result', 'error', 'final', 'answer_stream', 'plan', 'status', 'notice'];

  function preview(args) {
    if (!args || typeof args !== 'object') return str(args);
    let text;
    if ('code' in args) {
      text = str(args.code);
      if (text.includes('=>')) text = text.split('=>').slice(1).join('=>');
    } else {
      text = Object.entries(args).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join(', ');
    }
    text = text.replace(/\s+/g, ' ').trim().replace(/^\{\s*|\s*\}$/g, '');
    return text.length > 160 ? `${text.slice(0, 159)}…` : text;
  }

  function addStep(kind, cls, mark, main, detail) {
    const item = el('li', { class: `step ${cls}`, 'data-kind': kind },
      el('span', { class: 'mark', 'aria-hidden': 'true', text: mark }),
      el('span', { class: 'step-main', text: main }),
      detail ? el('span', { class: 'step-detail', text: detail }) : null);
    const list = $('steps');
    const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
    list.append(item);
    app.steps += 1;
    $('steps-count').textContent = `(${app.steps})`;
    if (atBottom) list.scrollTop = list.scrollHeight;
  }

  function onStep(kind, envelope) {
    const d = (envelope && envelope.data) || {};
    switch (kind) {
      case 'tool_call':
        addStep(kind, 'call', '→', `${d.step ? `${d.step}. ` : ''}${str(d.tool)}`, preview(d.args || d.preview));
        break;
      case 'tool_result':
        if (d.tool === 'update_working_state') refreshState();
        addStep(kind, d.ok === false ? 'fail' : 'ok', d.ok === false ? '✗' : '✓', str(d.summary).replace(/\s+/g, ' ').slice(0, 240) || str(d.tool));
        break;
      case 'observation':
        addStep(kind, 'page', '·', str(d.title || d.url || 'page'), d.elements !== undefined ? `${d.elements} elements${d.url ? ` · ${d.url}` : ''}` : str(d.url));
        break;
      case 'policy_request': {
        const card = d.card || {};
        addStep(kind, 'warn', '⚠', 'Needs your confirmation', str(card.what || d.question));
        break;
      }
      case 'policy_result':
        addStep(kind, d.approved ? 'ok' : 'fail', d.approved ? '✓' : '✗', d.approved ? 'Allowed once' : 'Refused', str((d.card && d.card.what) || d.action || ''));
        break;
      case 'error':
        addStep(kind, 'fail', '!', str(d.message || d.kind || 'error'));
        break;
      case 'final': {
        const shown = str(d.text).trim();
        const doubted = str(d.stop_reason || 'answered') === 'answered' && d.verified === false;
        if (envelope && envelope.id <= app.replayUpTo && app.historyTexts.has(shown)) {
          dropStream();
          if (doubted) markUnverified(app.historyItems.get(shown), d.doubts);
        } else answer(d.text, d.stop_reason, d.verified, d.doubts);
        addStep(kind, doubted ? 'warn' : 'final', '■',
          `Finished: ${str(d.stop_reason || 'answered').replace(/_/g, ' ')}${doubted ? ' (unverified)' : ''}`);
        refreshState();
        loadSessions().catch(() => {});
        break;
      }
      case 'answer_stream':
        if (!(envelope && envelope.id <= app.replayUpTo)) streamAnswer(d);
        break;
      case 'plan':
        refreshState();
        break;
      case 'notice':
        // The app's notes on the run go with the steps; one about the user's own message (a secret
        // withheld) is also said in the chat, once.
        if (d.to_user && !(envelope && envelope.id <= app.replayUpTo)) addMessage('note', el('p', { text: str(d.text) }), 'notice');
        addStep(kind, 'note', 'i', str(d.text).replace(/\s+/g, ' ').slice(0, 240));
        break;
      default:
        break;
    }
  }

  function connectEvents() {
    const id = app.session;
    const source = new EventSource(`/sessions/${encodeURIComponent(id)}/events`, { withCredentials: true });
    app.events = source;
    for (const kind of STEP_KINDS) {
      source.addEventListener(kind, (e) => {
        if (app.events !== source) return;
        if (e.lastEventId) {
          if (app.seen.has(e.lastEventId)) return;
          app.seen.add(e.lastEventId);
        }
        let envelope;
        try { envelope = JSON.parse(e.data); } catch { return; }
        onStep(kind, envelope);
      });
    }
  }

  // ----- wiring -----
  function wire() {
    $('composer').addEventListener('submit', (e) => {
      e.preventDefault();
      const input = $('input');
      const text = input.value;
      if (!text.trim()) return;
      if (send(text)) {
        addMessage('user', el('p', { text: text.trim() }));
        input.value = '';
      }
    });
    $('input').addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        $('composer').requestSubmit();
      }
    });
    $('new-session').addEventListener('click', () => newSession().catch((err) => banner(String(err.message || err))));
    $('stop').addEventListener('click', async () => {
      if (!app.session) return;
      $('stop').disabled = true;
      try {
        await api('POST', `/api/sessions/${encodeURIComponent(app.session)}/cancel`, {});
      } catch (err) {
        banner(`Could not stop: ${err.message || err}`);
      } finally {
        $('stop').disabled = false;
      }
    });
    $('handover-done').addEventListener('click', () => {
      if (send('done')) {
        addMessage('user', el('p', { text: 'done' }));
        $('handover').hidden = true;
      }
    });
  }

  async function start() {
    wire();
    if (window.matchMedia('(max-width: 760px)').matches) $('sessions-box').open = false;
    setStatus('idle', 0);
    let sessions = [];
    try {
      sessions = await loadSessions();
    } catch {
      return;
    }
    const wanted = decodeURIComponent(location.hash.slice(1));
    if (wanted && sessions.some((s) => s.id === wanted)) await select(wanted);
    else if (sessions.length) await select(sessions[0].id);
    else await newSession();
  }

  start();
})();
