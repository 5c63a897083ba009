// Browser Copilot's web page: the Steps panel, from the session's numbered events (SSE): a sentence for
// each step, the code it ran, the policy's decisions, the caption under the live view, and what the
// events change elsewhere (the answer, the working state, the tokens used).

import { addMessage, answer, dropStream, markUnverified, streamAnswer } from './chat.js';
import { showCost } from './header.js';
import { $, app, cut, el, hostOfUrl, live, str } from './page.js';
import { loadSessions } from './sessions.js';
import { refreshState, renderState } from './state.js';

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

export function addStep(kind, cls, mark, main, detail, code) {
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

export function connectEvents() {
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
