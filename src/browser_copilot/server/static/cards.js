// Browser Copilot's web page: what the agent asks in the chat: a confirmation card (Allow once, Refuse,
// a note), a question with its options, and a hand-over (the box with Done).

import { addMessage } from './chat.js';
import { markdown } from './markdown.js';
import { $, app, cut, el, live, str } from './page.js';
import { send } from './socket.js';

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

export function closeCards() {
  for (const box of document.querySelectorAll('.card:not(.answered)')) {
    box.classList.add('answered');
    for (const b of box.querySelectorAll('button')) b.disabled = true;
  }
}

// A question, card or hand-over; `settled` ({decision, note}): one answered earlier (history.js).
export function question(payload, settled) {
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

export function showHandoverWhere() {
  const headless = !!(app.runtime && app.runtime.browser && app.runtime.browser.headless);
  if (headless) {
    $('handover-where').textContent = 'The browser runs without a window here (headless), so do it in the Browser panel: click and type in the picture of the page. Then press Done and I will continue.';
    live.open();
  } else {
    const tab = live.title() ? ` (the tab “${cut(live.title(), 60)}”)` : '';
    $('handover-where').textContent = `Do it in your browser${tab}, or in the Browser panel here: click and type in the picture. Then press Done and I will continue.`;
  }
}
