// Browser Copilot's web page: the chat's WebSocket (/ws): what the page sends (the user's messages,
// a card's answer), what comes back (status, answers, questions, errors), reconnecting when it drops.

import { question } from './cards.js';
import { addMessage, answer, commandReply } from './chat.js';
import { loadRuntime, setStatus } from './header.js';
import { MAX_MESSAGE, app, banner, el, str, tabId } from './page.js';
import { loadSessions } from './sessions.js';
import { refreshState } from './state.js';

export function send(text, extra) {
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

// ----- WebSocket: chat -----
function socketUrl(id) {
  const url = new URL(`/ws/${encodeURIComponent(id)}`, location.href);
  url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
  url.searchParams.set('client', tabId);
  return url.href;
}

export function connectSocket() {
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
