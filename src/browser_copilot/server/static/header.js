// Browser Copilot's web page: the header: the session's status and Stop, the tokens its model calls
// used, the model and the browser (GET /api/status).

import { closeCards, showHandoverWhere } from './cards.js';
import { $, api, app, cut, live, str } from './page.js';

// ----- status line and Stop -----
export const STATE_LABELS = {
  running: 'Running',
  idle: 'Idle',
  waiting_user: 'Waiting for you',
  queued: 'Waiting its turn',
  error: 'Error',
  offline: 'Disconnected, reconnecting…',
};

export function setStatus(state, queued) {
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

export function showCost() {
  const total = app.usage.prompt + app.usage.completion;
  $('cost').textContent = total ? `${total.toLocaleString()} tokens` : '';
  $('cost').title = total
    ? `This session's model calls: ${app.usage.prompt.toLocaleString()} prompt + ${app.usage.completion.toLocaleString()} completion tokens`
    : "Tokens this session's model calls used";
}

// ----- the model and the browser (GET /api/status) -----
export async function loadRuntime() {
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
