// Browser Copilot's web page: the chat's messages: the user's, the agent's answers (once each, marked
// when unverified), the reply as it is written, and the answers to the page's own commands.

import { markdown } from './markdown.js';
import { $, app, el, str } from './page.js';
import { addStep } from './steps.js';

export function addMessage(who, body, extraClass) {
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
export function answer(text, stopReason, verified, doubts) {
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
export function commandReply(command, text) {
  const item = addMessage('agent', markdown(text), 'command-reply');
  item.querySelector('.who').textContent = command ? `Browser Copilot · ${command}` : 'Browser Copilot';
  if (command === '/plan') $('state-box').open = true;
  return item;
}

export function markUnverified(item, doubts) {
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
export function streamAnswer(d) {
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

export function dropStream() {
  if (app.streaming) app.streaming.remove();
  app.streaming = null;
}
