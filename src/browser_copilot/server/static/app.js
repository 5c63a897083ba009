// Browser Copilot's web page: sessions, chat (WebSocket), steps (SSE), working state (REST), and the
// live view of the agent's tab (WebSocket /live: pictures, the outline of what is acted on, and the
// user's clicks and keys while the agent waits for them or has finished).
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
    pendingKind: null, // what the session waits for: confirm, manual (a hand-over) or question
    usage: { prompt: 0, completion: 0, upTo: 0 }, // tokens from the state, and SSE usage after `upTo`
    runtime: null, // GET /api/status: the model, the browser (headless or not), the browser tool
    sessionsTimer: null,
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
      banner('This browser is not signed in (or the server was started with a new token). Open the link that `main.py serve` printed in its terminal; a link signs in once, and opened again it makes the terminal print a new one.');
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
    queued: 'Waiting its turn',
    error: 'Error',
    offline: 'Disconnected, reconnecting…',
  };

  function setStatus(state, queued) {
    app.state = state;
    app.queued = Number(queued) || 0;
    const label = STATE_LABELS[state] || str(state);
    $('status').dataset.state = state;
    $('status-text').textContent = app.queued > 0 ? `${label} · waiting for the browser (place ${app.queued})` : label;
    $('stop').hidden = !(state === 'running' && app.session);
    if (state !== 'waiting_user') {
      $('handover').hidden = true;
      app.pendingKind = null;
      closeCards();
    }
    // The session's own card in the list says the same at once (the others are polled).
    const badge = document.querySelector(`.session[aria-current="true"] .badge`);
    if (badge && STATE_LABELS[state] && state !== 'offline' && !badge.classList.contains(`state-${state}`)) {
      app.sessionsKey = null; // the next read of the list draws it again
      badge.className = `badge state-${state}`;
      badge.textContent = STATE_LABELS[state];
    }
    live.control();
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
    const sessions = data.sessions || [];
    // Drawn again only when something changed (a poll must not take the keyboard focus away).
    const key = JSON.stringify([app.session, sessions.map((s) => [s.id, s.goal, s.state, s.updated])]);
    // How many runs act in the browser at once now (MAX_PARALLEL_RUNS), and how many wait their turn.
    const running = Number(data.running) || 0;
    const queued = Number(data.queued) || 0;
    $('sessions-running').textContent = running || queued
      ? `${running} running${queued ? ` · ${queued} waiting` : ''}` : '';
    if (key === app.sessionsKey && $('session-list').children.length) return sessions;
    app.sessionsKey = key;
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

  // Other sessions' cards change too (a queued run starts, a run ends): the list is read again every few
  // seconds while the page is visible.
  function pollSessions() {
    clearInterval(app.sessionsTimer);
    app.sessionsTimer = setInterval(() => {
      if (document.visibilityState === 'visible') loadSessions().catch(() => {});
    }, 4000);
  }

  async function deleteSession() {
    const id = app.session;
    if (!id) return;
    if (!window.confirm('Delete this session? Its conversation and working state are removed, and the tabs the app opened for it are closed (your own tabs are not).')) return;
    if (app.ws) { app.ws.onclose = null; app.ws.close(); app.ws = null; }
    if (app.events) { app.events.close(); app.events = null; }
    live.disconnect();
    await api('DELETE', `/api/sessions/${encodeURIComponent(id)}`);
    app.session = null;
    const sessions = await loadSessions();
    if (sessions.length) await select(sessions[0].id);
    else await newSession();
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
    app.pendingKind = null;
    app.usage = { prompt: 0, completion: 0, upTo: 0 };
    showCost();
    renderState({});
    live.reset();
    const data = await refreshState(true);
    if (id !== app.session) return;
    if (data) showHistory(data);
    connectSocket();
    connectEvents();
    live.connect();
  }

  // A reloaded page (or another session) shows the chat as the server kept it (history.js: cards with
  // their decisions, hand-overs and their answers, answers with their marks), drawn by the functions of
  // a live message; a session without that record shows the conversation kept in the checkpoint. The
  // SSE replay of the same answers (`final` up to `last_event_id`) is then not shown again.
  function showHistory(data) {
    const chat = Array.isArray(data.chat) ? data.chat : [];
    app.replayUpTo = Number(data.last_event_id) || 0;
    if (Array.isArray(data.history) && data.history.length) {
      window.BCHistory.replay(data.history, !!data.pending, {
        user: (text) => { addMessage('user', el('p', { text })); app.lastAnswer = null; },
        question: (payload, settled) => question(payload, settled),
        answer: (m) => {
          const item = answer(m.text, m.stop_reason, m.verified, m.doubts);
          app.historyTexts.add(str(m.text).trim());
          app.historyItems.set(str(m.text).trim(), item);
        },
      });
      return;
    }
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
  async function refreshState(withHistory) {
    const id = app.session;
    if (!id) return;
    let data;
    try {
      data = await api('GET', `/api/sessions/${encodeURIComponent(id)}${withHistory ? '?history=1' : ''}`);
    } catch {
      return; // a session that has not run yet is not known to the server: nothing to show
    }
    if (id === app.session) {
      renderState(data);
      const usage = data.usage || {};
      app.usage = { prompt: Number(usage.prompt_tokens) || 0, completion: Number(usage.completion_tokens) || 0, upTo: Number(data.last_event_id) || 0 };
      showCost();
    }
    return data;
  }

  function showCost() {
    const total = app.usage.prompt + app.usage.completion;
    $('cost').textContent = total ? `${total.toLocaleString()} tokens` : '';
    $('cost').title = total
      ? `This session's model calls: ${app.usage.prompt.toLocaleString()} prompt + ${app.usage.completion.toLocaleString()} completion tokens`
      : "Tokens this session's model calls used";
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
      return app.lastItem;
    }
    app.lastAnswer = body;
    const item = addMessage('agent', markdown(body), reason === 'answered' ? 'final' : `final stop-${reason}`);
    app.lastItem = item;
    if (reason !== 'answered') item.querySelector('.who').textContent = `Agent · ${reason.replace(/_/g, ' ')}`;
    if (doubted) markUnverified(item, doubts);
    return item;
  }

  // The answer to one of the page's own commands (/status, /plan, /tabs, /help, /tools, /memory): a
  // panel in the chat, not an answer of the agent.
  function commandReply(command, text) {
    const item = addMessage('agent', markdown(text), 'command-reply');
    item.querySelector('.who').textContent = command ? `Browser Copilot · ${command}` : 'Browser Copilot';
    if (command === '/plan') $('state-box').open = true;
    return item;
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
    // What the action commits to (items, deliver to, payment, to, subject…), then what was typed.
    for (const pair of card.details || []) {
      const [name, value] = Array.isArray(pair) ? pair : [pair && pair.label, pair && pair.value];
      if (str(name).trim() && str(value).trim()) row(str(name).slice(0, 40), str(value));
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
    // Words for the agent that go with the answer ("but first tell me the total", "use cash instead").
    const note = el('input', { type: 'text', class: 'card-note', maxlength: '500',
      placeholder: 'Add a note for the agent (optional)', 'aria-label': 'A note for the agent with your answer' });
    const result = el('p', { class: 'card-result', role: 'status' });
    if (!nonce) {
      result.textContent = 'Only the tab you asked from can allow this (or, after a restart of the server, nobody: refuse it and ask again).';
    }
    const box = el('section', { class: 'card', 'aria-labelledby': titleId },
      el('h3', { id: titleId, text: `Confirm: ${str(card.category || 'action')}` }),
      el('p', { class: 'question', text: payload.question }),
      rows,
      note,
      el('div', { class: 'actions' }, allow, refuse),
      result);
    // The card answered: now by a click here, or earlier (a reloaded page draws it settled, history.js).
    box.settle = (decision, said) => {
      allow.disabled = true;
      refuse.disabled = true;
      note.disabled = true;
      box.classList.add('answered');
      box.dataset.decision = decision;
      result.textContent = `${DECISIONS[decision] || ''}${said ? ` Your note: “${said}”` : ''}`;
    };
    const answer = (word, decision, extra) => {
      const said = note.value.replace(/\s+/g, ' ').trim();
      if (send(said ? `${word} ${said}` : word, extra)) box.settle(decision, said);
    };
    box.reopen = () => {
      box.classList.remove('answered');
      allow.disabled = !nonce;
      refuse.disabled = false;
      note.disabled = false;
      result.textContent = '';
    };
    // Only a person's click (or key) allows: a click a script makes in this page is not trusted.
    allow.addEventListener('click', (e) => { if (e.isTrusted && nonce) answer('/yes', 'allowed', { nonce }); });
    refuse.addEventListener('click', () => answer('/no', 'declined'));
    return box;
  }

  const DECISIONS = { allowed: 'Allowed once.', declined: 'Refused.', unanswered: 'Not answered.' };

  function closeCards() {
    for (const box of document.querySelectorAll('.card:not(.answered)')) {
      box.classList.add('answered');
      for (const b of box.querySelectorAll('button')) b.disabled = true;
    }
  }

  // A question, card or hand-over; `settled` ({decision, note}): one answered earlier (history.js).
  function question(payload, settled) {
    const kind = payload.pending_kind || payload.kind;
    if (!settled) {
      app.pendingKind = kind;
      live.control();
    }
    if (kind === 'confirm') {
      if (!settled) closeCards();
      const card = confirmationCard(payload);
      addMessage('agent', card, 'has-card');
      if (settled) card.settle(settled.decision, settled.note);
      return;
    }
    if (kind === 'manual') {
      // Said in the chat too (the box below it holds Done), once: a reconnect sends it again.
      const said = $('messages').lastElementChild;
      if (!(said && said.classList.contains('handover-note') && said.dataset.question === str(payload.question))) {
        const note = addMessage('agent', el('p', { text: str(payload.question) }), 'question handover-note');
        note.dataset.question = str(payload.question);
        note.querySelector('.who').textContent = 'Agent · your turn in the browser';
        if (settled) {
          note.classList.add('answered');
          note.dataset.decision = settled.decision;
        }
      }
      if (settled) return; // its answer ("done") follows as the user's message
      $('handover-question').textContent = str(payload.question);
      showHandoverWhere();
      $('handover').hidden = false;
      $('handover-done').focus({ preventScroll: true });
      return;
    }
    const body = el('div', {}, markdown(payload.question));
    const options = payload.options || [];
    if (options.length) {
      const row = el('div', { class: 'actions options' });
      for (const option of options) {
        row.append(el('button', { type: 'button', class: 'option', disabled: !!settled, onclick: (e) => { if (send(str(option))) { addMessage('user', el('p', { text: str(option) })); e.target.disabled = true; } } }, str(option)));
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
        loadSessions().catch(() => {});
        if (m.state !== 'running') {
          refreshState();
          loadRuntime();
        }
        break;
      case 'agent_message':
        if (m.command) {
          commandReply(m.command, m.text);
          break;
        }
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
  const STEP_KINDS = ['observation', 'tool_call', 'tool_result', 'policy_request', 'policy_result', 'error', 'final', 'answer_stream', 'plan', 'usage', 'status', 'notice'];

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

  // A sentence for a person. The server's events carry one (`data.summary`, written where the event is
  // made); these are the page's own, short, for events that come without.
  function cut(text, limit) {
    const clean = str(text).replace(/\s+/g, ' ').trim();
    if (clean.length <= limit) return clean;
    const head = clean.slice(0, limit - 1);
    const space = head.lastIndexOf(' ');
    return `${space > limit / 2 ? head.slice(0, space) : head}…`;
  }

  function hostOfUrl(url) {
    try { return new URL(url).host; } catch { return cut(url, 40); }
  }

  function codeWords(code) {
    const text = str(code);
    const quoted = (m) => (m ? `“${cut(m[2], 40)}”` : '');
    const goto = text.match(/\.goto\(\s*(['"`])([^'"`]+)\1/);
    const named = text.match(/name:\s*(['"`])((?:(?!\1).)+)\1/) || text.match(/getBy(?:Text|Label|Placeholder)\(\s*(['"`])((?:(?!\1).)+)\1/);
    const fills = (text.match(/\.(fill|pressSequentially|type)\(/g) || []).length;
    if (goto) return `Opening ${hostOfUrl(goto[2])}`;
    if (/\.click\(/.test(text) && named) return `Clicking ${quoted(named)}`;
    if (fills > 1) return `Typing into ${fills} fields`;
    if (fills === 1) return named ? `Typing into ${quoted(named)}` : 'Typing into a field';
    if (/\.selectOption\(/.test(text)) return named ? `Choosing in ${quoted(named)}` : 'Choosing an option';
    if (/\.check\(|\.uncheck\(/.test(text)) return named ? `Ticking ${quoted(named)}` : 'Ticking a box';
    if (/\.press\(/.test(text)) return 'Pressing a key';
    if (/goBack\(/.test(text)) return 'Going back';
    if (/\.click\(/.test(text)) return 'Clicking on the page';
    return 'Working in the page';
  }

  const TOOL_WORDS = {
    update_working_state: 'Updating the plan',
    observe_page: 'Reading the page',
    browser_tabs: 'Looking at the tabs',
    handle_dialog: "Answering the site's dialog",
    remember_about_user: 'Remembering something you said',
  };

  function callWords(d) {
    const tool = str(d.tool);
    if (tool === 'browser_run_code' || (d.args && 'code' in d.args)) return codeWords((d.args && d.args.code) || d.preview);
    if (TOOL_WORDS[tool]) return TOOL_WORDS[tool];
    const extra = tool.split('__');
    if (extra.length === 2) return `Using ${extra[1].replace(/_/g, ' ')} (${extra[0]})`;
    return `Using ${tool.replace(/_/g, ' ') || 'a tool'}`;
  }

  // A tool_result's `summary` is the plain sentence when the event also carries the result itself
  // (`result`); before that, `summary` was the result text.
  function resultWords(d) {
    if (d.result !== undefined && str(d.summary).trim()) return str(d.summary);
    if (d.ok === false) return `That did not work: ${cut(str(d.summary).split('\n')[0], 140)}`;
    return d.tool === 'update_working_state' ? 'Plan updated' : 'Done';
  }

  // The true status of a policy decision: `outcome` when the event carries it, else read from its fields.
  const POLICY_OUTCOMES = {
    allowed: ['ok', '✓', 'You allowed it once'],
    declined: ['fail', '✗', 'You declined it: it did not happen'],
    refused: ['fail', '✗', 'Not allowed'],
    judged_safe: ['ok', '✓', 'Checked by the safety judge: safe, going on'],
    judged_risky: ['warn', '⚠', 'The safety judge wants your confirmation'],
  };

  function policyWords(d) {
    const known = POLICY_OUTCOMES[str(d.outcome)];
    if (known) return [...known, d.reason || d.refused || (d.card && d.card.what) || ''];
    if (d.judge !== undefined) {
      return d.destructive
        ? ['warn', '⚠', 'The safety judge wants your confirmation', d.reason]
        : ['ok', '✓', 'Checked by the safety judge: safe, going on', d.reason];
    }
    if (d.approved) return ['ok', '✓', 'You allowed it once', (d.card && d.card.what) || d.action];
    if (d.refused) return ['fail', '✗', 'Not allowed', d.refused];
    return ['fail', '✗', 'You refused it', (d.card && d.card.what) || d.action];
  }

  function caption(text) {
    if (str(text).trim()) $('live-step').textContent = cut(text, 200);
  }

  function addStep(kind, cls, mark, main, detail, code) {
    const item = el('li', { class: `step ${cls}`, 'data-kind': kind },
      el('span', { class: 'mark', 'aria-hidden': 'true', text: mark }),
      el('span', { class: 'step-main', text: main }),
      detail ? el('span', { class: 'step-detail', text: detail }) : null,
      code ? el('code', { class: 'step-code', text: code }) : null);
    const list = $('steps');
    const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
    list.append(item);
    app.steps += 1;
    $('steps-count').textContent = `(${app.steps})`;
    if (atBottom) list.scrollTop = list.scrollHeight;
  }

  function onStep(kind, envelope) {
    const d = (envelope && envelope.data) || {};
    const replayed = !!(envelope && envelope.id <= app.replayUpTo);
    switch (kind) {
      case 'tool_call': {
        const words = str(d.summary).trim() || callWords(d);
        addStep(kind, 'call', '→', `${d.step ? `${d.step}. ` : ''}${words}`, null, preview(d.args || d.preview));
        caption(words);
        break;
      }
      case 'tool_result': {
        const words = resultWords(d);
        const outcome = str(d.outcome) || (d.ok === false ? 'failed' : 'done');
        const [cls, mark] = { done: ['ok', '✓'], held: ['warn', '⚠'], unsure: ['warn', '?'], failed: ['fail', '✗'], refused: ['fail', '✗'] }[outcome] || ['ok', '✓'];
        addStep(kind, cls, mark, cut(words, 240));
        if (outcome !== 'done' || d.result !== undefined) caption(words);
        break;
      }
      case 'observation': {
        const words = str(d.summary).trim() || `Read the page: ${str(d.title || d.url || 'untitled')}`;
        addStep(kind, 'page', '·', words, d.url ? hostOfUrl(d.url) : '');
        caption(words);
        if (!replayed) live.pageChanged(); // the outline belonged to the page before
        break;
      }
      case 'policy_request': {
        const card = d.card || {};
        const words = str(d.summary).trim() || 'Asking you to confirm';
        addStep(kind, 'warn', '⚠', words, str(card.what || d.question));
        caption(`${words}: ${str(card.what || d.question)}`);
        break;
      }
      case 'policy_result': {
        const [cls, mark, words, detail] = policyWords(d);
        addStep(kind, cls, mark, str(d.summary).trim() || words, str(detail || ''));
        break;
      }
      case 'error':
        addStep(kind, 'fail', '!', str(d.summary).trim() || str(d.message || d.kind || 'error'));
        break;
      case 'final': {
        const shown = str(d.text).trim();
        const doubted = str(d.stop_reason || 'answered') === 'answered' && d.verified === false;
        if (replayed && app.historyTexts.has(shown)) {
          dropStream();
          if (doubted) markUnverified(app.historyItems.get(shown), d.doubts);
        } else answer(d.text, d.stop_reason, d.verified, d.doubts);
        const reason = str(d.stop_reason || 'answered').replace(/_/g, ' ');
        addStep(kind, doubted ? 'warn' : 'final', '■', `Finished: ${reason}${doubted ? ' (unverified)' : ''}`);
        caption(`Finished: ${reason}`);
        refreshState();
        loadSessions().catch(() => {});
        break;
      }
      case 'answer_stream':
        if (!replayed) streamAnswer(d);
        if (!replayed && !d.done) caption('Writing the answer…');
        break;
      case 'plan':
        // The working state as it changes (a replayed one is older than what REST gave).
        if (!replayed) renderState({ goal: d.current_goal, plan: d.plan, progress: d.progress, facts: d.facts });
        break;
      case 'usage':
        if (envelope && envelope.id > app.usage.upTo) {
          app.usage.prompt += Number(d.prompt_tokens) || 0;
          app.usage.completion += Number(d.completion_tokens) || 0;
          showCost();
        }
        break;
      case 'notice':
        // The app's notes on the run go with the steps; one about the user's own message (a secret
        // withheld) or the tab the session works in is also said in the chat, once.
        if (d.to_user && !replayed) addMessage('note', el('p', { text: str(d.text) }), 'notice');
        addStep(kind, 'note', 'i', cut(d.text, 240));
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

  // ----- the live view of the agent's tab (live.js) -----
  const live = window.BCLive.create({ app, tabId, str, cut, hostOfUrl });

  // ----- the model and the browser (GET /api/status) -----
  async function loadRuntime() {
    let data;
    try { data = await api('GET', '/api/status'); } catch { return; }
    app.runtime = data;
    const browser = data.browser || {};
    $('runtime-model').textContent = data.model ? `Model: ${cut(data.model, 60)}` : 'Model: not configured';
    const name = str(browser.name).split('/')[0] || 'browser';
    const windowless = browser.headless === true ? ' (no window: see the Browser panel)' : '';
    $('runtime-browser').textContent = `Browser: ${name}${windowless}${browser.connected === false ? ' (not connected)' : ''}`;
    $('runtime-browser').title = str(browser.url);
    if (!$('handover').hidden) showHandoverWhere();
  }

  function showHandoverWhere() {
    const headless = !!(app.runtime && app.runtime.browser && app.runtime.browser.headless);
    if (headless) {
      $('handover-where').textContent = 'The browser runs without a window here (headless), so do it in the Browser panel: click and type in the picture of the page. Then press Done and I will continue.';
      live.open();
    } else {
      const tab = live.title() ? ` (the tab “${cut(live.title(), 60)}”)` : '';
      $('handover-where').textContent = `Do it in your browser${tab}, or in the Browser panel here: click and type in the picture. Then press Done and I will continue.`;
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
    $('handover-show').addEventListener('click', () => {
      live.open();
      if (!live.enlarge(true)) $('live-screen').focus({ preventScroll: true });
    });
    for (const button of document.querySelectorAll('.toolbar [data-command]')) {
      button.addEventListener('click', () => send(button.dataset.command));
    }
    $('delete-session').addEventListener('click', () => deleteSession().catch((err) => banner(String(err.message || err))));
    $('show-code').addEventListener('change', (e) => $('steps').classList.toggle('with-code', e.target.checked));
    live.wire();
  }

  async function start() {
    wire();
    if (window.matchMedia('(max-width: 760px)').matches) $('sessions-box').open = false;
    setStatus('idle', 0);
    loadRuntime();
    pollSessions();
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
