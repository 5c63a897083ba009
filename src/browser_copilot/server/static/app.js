// Browser Copilot's web page: sessions, chat (WebSocket), steps (SSE), working state (REST), and the
// live view of the agent's tab (WebSocket /live: pictures, the outline of what is acted on, and the
// user's clicks and keys while the agent waits for them or has finished).
// This module wires the page's controls and starts it; each part is a module of its own: page.js (what
// they share), header.js, sessions.js, state.js, chat.js, markdown.js, cards.js, socket.js, steps.js,
// and the classic scripts live.js (the live view) and history.js (a kept chat, drawn again).
// Everything from the server is untrusted text (page titles and agent text come from web pages):
// it reaches the DOM only through textContent / createTextNode, never innerHTML.

import { addMessage } from './chat.js';
import { loadRuntime, setStatus } from './header.js';
import { $, api, app, banner, el, live } from './page.js';
import { deleteSession, loadSessions, newSession, pollSessions, select } from './sessions.js';
import { send } from './socket.js';

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
