// The in-page guard (F41). While the model's code runs, clicks, form submissions (events, submit(),
// requestSubmit(), Enter) and typing into secret fields are checked in the capture phase, in the page
// and its same-origin frames, whatever way the code reached them (locator, coordinates, evaluate,
// keyboard). A destructive one is held: prevented, stamped `data-bc-held`, and reported with the DOM
// facts of its target. The guard is armed only while the agent acts: the user's own clicks pass.
// __POLICY__ is replaced by policy.js. Call with {op: 'arm'|'disarm'|'facts'|'classify', ...}.
(args) => {
  const classify = __POLICY__;
  const ACTIONABLE = 'button, a[href], input[type=submit], input[type=button], input[type=image], input[type=reset],'
    + ' [role=button], [role=link], [role=menuitem], [role=tab], [role=option], summary, label, [onclick]';
  const SECRET_AUTOCOMPLETE = /one-time-code|cc-number|cc-csc|cc-exp|current-password|new-password/;
  const SECRET_HINT = /pass(word|code)?|otp|one.?time|2fa|mfa|totp|verification.?code|security.?code|cvv|cvc|csc|card.?(number|no)|cc-?(num|csc|exp)|\bpin\b/i;
  const clean = (s, n) => (s || '').replace(/\s+/g, ' ').trim().slice(0, n);

  const isSecret = (el) => {
    if (!el || (el.tagName !== 'INPUT' && el.tagName !== 'TEXTAREA')) return false;
    if ((el.getAttribute('type') || '').toLowerCase() === 'password') return true;
    if (SECRET_AUTOCOMPLETE.test(el.getAttribute('autocomplete') || '')) return true;
    return SECRET_HINT.test([el.name, el.id, el.getAttribute('aria-label'), el.getAttribute('placeholder')].join(' '));
  };

  const nameOf = (el) => {
    const aria = el.getAttribute('aria-label') || '';
    const ids = el.getAttribute('aria-labelledby');
    const labelled = ids ? ids.split(/\s+/).map((id) => el.ownerDocument.getElementById(id)?.textContent || '').join(' ') : '';
    if (el.tagName === 'INPUT') {
      const type = (el.getAttribute('type') || '').toLowerCase();
      if (['submit', 'button', 'reset', 'image'].includes(type)) return clean(aria || el.value || el.alt || type, 120);
      return clean(aria || labelled || (el.labels && el.labels[0] && el.labels[0].innerText) || el.placeholder || el.name, 120);
    }
    return clean(aria || labelled || el.innerText || el.textContent || el.title || el.getAttribute('title'), 120);
  };

  // Text around the target that says what it does: the dialog it sits in, else its form/section heading
  // (plus icon class names, for buttons without a name).
  const contextOf = (el) => {
    const box = el.closest('dialog, [role=dialog], [role=alertdialog], [aria-modal=true], .modal, .dialog');
    if (box) return clean(box.innerText, 300);
    const parts = [];
    const form = el.closest('form');
    const section = el.closest('form, section, article, fieldset, [role=region], tr, li');
    const heading = section && section.querySelector('h1, h2, h3, h4, legend, caption, th');
    if (heading) parts.push(heading.innerText);
    if (form && form.getAttribute('aria-label')) parts.push(form.getAttribute('aria-label'));
    const icons = [el, ...el.querySelectorAll('*')].slice(0, 6)
      .map((n) => (typeof n.className === 'string' ? n.className : n.getAttribute('class') || '') + ' ' + (n.getAttribute('data-icon') || ''))
      .join(' ');
    if (!nameOf(el) && icons.trim()) parts.push('class: ' + icons);
    const row = el.closest('tr, li');
    if (row) parts.push(row.innerText);
    return clean(parts.join(' · '), 300);
  };

  const factsOf = (el) => {
    const form = el.form || el.closest('form');
    return {
      tag: el.tagName.toLowerCase(),
      role: el.getAttribute('role') || (el.tagName === 'A' ? 'link' : el.tagName === 'BUTTON' ? 'button' : null),
      type: el.getAttribute('type') || (el.tagName === 'BUTTON' && form ? 'submit' : null),
      name: nameOf(el),
      value: el.tagName === 'INPUT' ? clean(el.value, 80) : null,
      form_action: form ? form.action || null : null,
      form_method: form ? (form.getAttribute('method') || 'get').toLowerCase() : null,
      context: contextOf(el),
      url: el.ownerDocument.location.href,
    };
  };

  // What the user would want to see on the card: values typed into the form (secrets masked), and
  // an amount if one is visible near the target.
  const detailsOf = (el) => {
    const form = el.form || el.closest('form');
    const values = [];
    if (form) {
      for (const field of form.querySelectorAll('input, textarea, select')) {
        const type = (field.getAttribute('type') || '').toLowerCase();
        if (['hidden', 'submit', 'button', 'image', 'reset'].includes(type)) continue;
        if ((type === 'checkbox' || type === 'radio') && !field.checked) continue;
        const label = clean((field.labels && field.labels[0] && field.labels[0].innerText) || field.name || field.id, 40);
        const value = isSecret(field) ? '<masked>' : clean(field.tagName === 'SELECT' ? field.selectedOptions[0]?.text : field.value, 80);
        if (value) values.push([label, value]);
      }
    }
    const MONEY = /(?:[€$£¥₽₴]|usd|eur|gbp|rub|pln|chf)\s?\d[\d\s.,]*\d|\d[\d\s.,]*\d?\s?(?:[€$£¥₽₴]|usd|eur|gbp|rub|pln|chf|zł|kr)/i;
    const near = [el.closest('form, dialog, [role=dialog]'), el.closest('section, article, main'), el.ownerDocument.body];
    let amount = null;
    for (const box of near) {
      const found = box && (box.innerText || '').match(MONEY);
      if (found) { amount = found[0]; break; }
    }
    return { values, amount: amount ? clean(amount, 40) : null };
  };

  const windows = () => {
    const found = [window];
    for (let i = 0; i < found.length && i < 50; i += 1) {
      for (const frame of found[i].document.querySelectorAll('iframe, frame')) {
        try { if (frame.contentWindow && frame.contentWindow.document) found.push(frame.contentWindow); } catch (e) { /* cross-origin */ }
      }
    }
    return found;
  };

  const install = (win) => {
    if (win.__bcGuard) return win.__bcGuard;
    const guard = { armed: false, held: [], allow: null, secretBlocked: 0, passed: null };
    win.__bcGuard = guard;
    const allowed = (target, facts) => {
      const allow = guard.allow;
      if (!allow) return false;
      const token = target.getAttribute('data-bc-allow');
      const byName = allow.names && allow.names.includes(clean(facts.name, 120).toLowerCase());
      if ((token && token === allow.token) || byName) {
        target.removeAttribute('data-bc-allow');
        guard.allow = null;  // exactly once
        guard.passed = target;
        return true;
      }
      return false;
    };
    // The approved click's own consequences (the form it submits) belong to the same action.
    const sameAction = (target, kind) => {
      const passed = guard.passed;
      if (!passed || kind === 'click') return false;
      const form = target.tagName === 'FORM' ? target : target.form || target.closest('form');
      return target === passed || (form !== null && (passed.form === form || passed.closest('form') === form));
    };
    const check = (node, kind, event) => {
      if (!guard.armed || !node || !node.closest) return;
      const target = node.closest(ACTIONABLE) || node;
      if (sameAction(target, kind)) return;
      const facts = factsOf(target);
      const verdict = classify(facts);
      if (!verdict.destructive || allowed(target, facts)) return;
      event.preventDefault();
      event.stopImmediatePropagation();
      if (guard.held.length >= 5) return;
      const id = `held-${Date.now()}-${guard.held.length}`;
      target.setAttribute('data-bc-held', id);
      guard.held.push({ id, kind, facts, verdict, ...detailsOf(target) });
    };
    win.addEventListener('click', (e) => check(e.target, 'click', e), true);
    win.addEventListener('submit', (e) => check(e.submitter || e.target, 'submit', e), true);
    win.addEventListener('beforeinput', (e) => {
      if (guard.armed && isSecret(e.target)) { e.preventDefault(); guard.secretBlocked += 1; }
    }, true);
    const proto = win.HTMLFormElement.prototype;
    for (const method of ['submit', 'requestSubmit']) {
      const original = proto[method];
      proto[method] = function patched(...rest) {
        const submitter = rest[0] || this.querySelector('button[type=submit], button:not([type]), input[type=submit]') || this;
        let blocked = false;
        check(submitter, `${method}()`, { preventDefault() { blocked = true; }, stopImmediatePropagation() {} });
        if (!blocked) return original.apply(this, rest);
        return undefined;
      };
    }
    return guard;
  };

  const all = windows();
  if (args.op === 'arm') {
    const allow = args.allow || null;
    for (const win of all) {
      const guard = install(win);
      guard.armed = true;
      guard.held = [];
      guard.allow = allow;
      guard.passed = null;
      guard.secretBlocked = 0;
      // An approved action's targets carry the one-time token.
      for (const n of (allow && allow.numbers) || []) {
        const el = win.document.querySelector(`[data-bc-id="${n}"]`);
        if (el) (el.closest(ACTIONABLE) || el).setAttribute('data-bc-allow', allow.token);
      }
      for (const id of (allow && allow.held) || []) {
        const el = win.document.querySelector(`[data-bc-held="${id}"]`);
        if (el) el.setAttribute('data-bc-allow', allow.token);
      }
    }
    return true;
  }
  if (args.op === 'disarm') {
    const held = [];
    let secretBlocked = 0;
    for (const win of all) {
      const guard = win.__bcGuard;
      if (!guard) continue;
      guard.armed = false;
      guard.allow = null;
      held.push(...guard.held);
      secretBlocked += guard.secretBlocked;
    }
    return { held, secretBlocked };
  }
  if (args.op === 'facts') {
    // Pre-flight: verdicts for numbered targets (`el(N)`) and for names used in locators.
    const out = [];
    for (const n of args.numbers || []) {
      let el = null;
      for (const win of all) { el = win.document.querySelector(`[data-bc-id="${n}"]`); if (el) break; }
      if (!el) continue;
      const target = el.closest(ACTIONABLE) || el;
      const facts = factsOf(target);
      out.push({ ref: `el(${n})`, facts, verdict: classify(facts), secret: isSecret(el), ...detailsOf(target) });
    }
    for (const name of args.names || []) {
      const facts = { tag: 'button', role: 'button', name, context: '', url: location.href };
      out.push({ ref: name, facts, verdict: classify(facts), secret: false, values: [], amount: null });
    }
    return out;
  }
  if (args.op === 'classify') return classify(args.facts || {});
  return null;
}
