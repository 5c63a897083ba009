// Browser Copilot's web page: what its parts share: this tab's id, the page's state (`app`), the DOM and
// text helpers, the REST calls, the banner, and the live view of the agent's tab (live.js).
// Everything from the server is untrusted text (page titles and agent text come from web pages):
// it reaches the DOM only through textContent / createTextNode, never innerHTML.

export const $ = (id) => document.getElementById(id);

// ----- who we are: the session cookie (set by the printed link, once) and this tab's id -----
// The server sends a confirmation card's nonce only to the tab whose message started the run, named
// by this id. It lives in this module; across a reload of this tab it waits in sessionStorage (of
// this tab only) from `pagehide` to the next start, which takes it out again.
const TAB_KEY = 'bc_tab';
export const MAX_MESSAGE = 64 * 1024; // the server's limit for one WebSocket message
export const tabId = (() => {
  const kept = sessionStorage.getItem(TAB_KEY);
  sessionStorage.removeItem(TAB_KEY);
  if (kept && /^[A-Za-z0-9_-]{16,64}$/.test(kept)) return kept;
  const bytes = crypto.getRandomValues(new Uint8Array(18));
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_');
})();
addEventListener('pagehide', () => sessionStorage.setItem(TAB_KEY, tabId));
addEventListener('pageshow', () => sessionStorage.removeItem(TAB_KEY));

export const app = {
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
export function el(tag, attrs, ...children) {
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

export const str = (v) => (v === undefined || v === null ? '' : String(v));

export function safeHref(url) {
  try {
    const parsed = new URL(str(url), location.href);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.href : null;
  } catch {
    return null;
  }
}

// ----- network -----
function headers(extra) {
  return { Accept: 'application/json', ...(extra || {}) };
}

export async function api(method, path, body) {
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

export function banner(text) {
  const node = $('banner');
  node.textContent = text;
  node.hidden = !text;
}

// `text` on one line, cut at a word to at most `limit` characters.
export function cut(text, limit) {
  const clean = str(text).replace(/\s+/g, ' ').trim();
  if (clean.length <= limit) return clean;
  const head = clean.slice(0, limit - 1);
  const space = head.lastIndexOf(' ');
  return `${space > limit / 2 ? head.slice(0, space) : head}…`;
}

export function hostOfUrl(url) {
  try { return new URL(url).host; } catch { return cut(url, 40); }
}

// ----- the live view of the agent's tab (live.js) -----
export const live = window.BCLive.create({ app, tabId, str, cut, hostOfUrl });
