// Browser Copilot's web page: the Working state panel: the goal, the plan with each step's progress,
// and the facts with their sources (REST, then SSE `plan` events).

import { showCost } from './header.js';
import { $, api, app, el, safeHref } from './page.js';

// The WebSocket tells the status and re-sends a pending question on connect; REST gives the state.
export async function refreshState(withHistory) {
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

export function renderState(data) {
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
