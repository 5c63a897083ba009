// Browser Copilot's web page: the chat of a session rebuilt from what the server kept of it
// (`GET /api/sessions/{id}?history=1`, `history`: the chat's own messages in order, see server/history.py).
// Each entry is drawn by the page's own functions for a live message (`view`), so a reloaded page shows
// what the live one did: each card with its decision ("Allowed once", refused), each hand-over with the
// user's answer, each run's answer with its Unverified mark and reasons.
'use strict';

window.BCHistory = (() => {
  // What became of a question: the decision on a card, the words that answered anything else.
  function settled(reply) {
    if (!reply) return { decision: 'unanswered', text: '', note: '' };
    const decision = reply.answers === 'confirm' ? String(reply.decision || 'declined') : 'answered';
    return { decision, text: String(reply.text || ''), note: String(reply.note || '') };
  }

  return Object.freeze({
    // `entries`: the record, oldest first; `pending`: a question still waits (the WebSocket sends it on
    // connect, as the live card, so it is not drawn here); `view`: { user(text), question(payload,
    // settled), answer(message) } of sessions.js.
    replay(entries, pending, view) {
      const list = (Array.isArray(entries) ? entries : []).filter((e) => e && typeof e === 'object');
      list.forEach((entry, index) => {
        if (entry.kind === 'agent_message') view.answer(entry);
        else if (entry.kind === 'user_message') {
          if (entry.answers !== 'confirm') view.user(String(entry.text || '')); // a card says its decision itself
        } else if (entry.kind === 'agent_question') {
          const later = list.slice(index + 1);
          const reply = later.find((e) => e.kind === 'user_message');
          const answered = reply && reply.answers === (entry.pending_kind || 'question') ? reply : null;
          const last = !later.some((e) => e.kind === 'agent_question' || e.kind === 'agent_message');
          if (!answered && pending && last) return; // still waiting: shown live
          view.question(entry, settled(answered));
        }
      });
    },
  });
})();
