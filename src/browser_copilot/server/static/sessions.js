// Browser Copilot's web page: the Sessions list (polled), a new session, deleting one, and selecting one:
// its state, its chat as the server kept it, its WebSocket, its steps (SSE) and its live view.

import { question } from './cards.js';
import { addMessage, answer, markUnverified } from './chat.js';
import { STATE_LABELS, showCost } from './header.js';
import { markdown } from './markdown.js';
import { $, api, app, el, live, str } from './page.js';
import { connectSocket } from './socket.js';
import { refreshState, renderState } from './state.js';
import { connectEvents } from './steps.js';

function shortTime(value) {
  if (value === undefined || value === null || value === '') return '';
  const date = typeof value === 'number' ? new Date(value < 1e12 ? value * 1000 : value) : new Date(value);
  if (Number.isNaN(date.getTime())) return str(value);
  const today = new Date().toDateString() === date.toDateString();
  return today ? date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }) : date.toLocaleDateString();
}

export async function loadSessions() {
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
export function pollSessions() {
  clearInterval(app.sessionsTimer);
  app.sessionsTimer = setInterval(() => {
    if (document.visibilityState === 'visible') loadSessions().catch(() => {});
  }, 4000);
}

export async function deleteSession() {
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

export async function newSession() {
  const data = await api('POST', '/api/sessions', {});
  const selecting = select(data.id); // sets app.session at once, then loads the state
  await loadSessions();
  await selecting;
  $('input').focus();
}

export async function select(id) {
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
