// What an input of the model's code would activate (guard.js judges it): the control a pointer press
// reaches (a label's control, a button), what a key does (a form's default button by the browser's
// implicit submission, a message field's send button, a page's shortcut), the drop zone of a drag, the
// option of a select that acts when it changes. Not a script of its own: guard.py puts it into guard.js
// at `__CONTROLS__`, inside its one function, whose names it shares.
  const KEYS_THAT_ACT = new Set(['Enter', 'NumpadEnter']);
  const textField = (el) => !!el && (el.isContentEditable || el.tagName === 'TEXTAREA' || (isField(el) && el.tagName !== 'SELECT'
    && !['checkbox', 'radio', 'file', 'range', 'color'].includes((el.getAttribute('type') || '').toLowerCase()))
    || el.getAttribute('role') === 'textbox' || el.getAttribute('role') === 'searchbox');
  // The key a press names, as Playwright reads it: the last of `Shift+Enter`, `+` itself, and "\n" or
  // "\r" for Enter.
  const keyName = (key) => {
    const k = String(key || '');
    const last = k.length > 1 && k.endsWith('++') ? '+' : k.split('+').pop();
    return last === '\n' || last === '\r' ? 'Enter' : last;
  };
  const SUBMITS = 'button[type=submit], button:not([type]), input[type=submit], input[type=image]';
  // A pointer press on `el`: the control it activates, or null (the page's background, a container).
  const pressed = (el) => {
    const target = isField(el) ? el : closestDeep(el, ACTIONABLE) || el;
    // A label activates the control it labels (a field, a button): that control is what is pressed.
    if (target.tagName === 'LABEL' && target.control) return target.control;
    const doc = target.ownerDocument;
    if (target === el && !target.matches(ACTIONABLE) && (target === doc.documentElement || target === doc.body
      || target.querySelector(`${ACTIONABLE}, form, input, select, textarea`))) return null;
    return target;
  };
  // The button a message field's Enter stands for: its form's submit button, else the first button after
  // it in its form, dialog or section (a chat composer's "Send").
  const sendControl = (field) => {
    const form = field.form || field.closest('form');
    const submit = form && defaultButton(form);
    if (submit) return submit;
    let box = form || closestDeep(field, 'dialog, [role=dialog], section, article, [role=region], footer, aside');
    for (let up = field.parentElement, n = 0; !box && up && n < 4; up = up.parentElement, n += 1) {
      if (up.querySelector('button, [role=button], input[type=button]') !== null) box = up;
    }
    if (!box) return null;
    const buttons = [...box.querySelectorAll('button, [role=button], input[type=button], input[type=submit]')];
    return buttons.find((b) => field.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING) || null;
  };
  // A key pressed in `el`: Enter in any field of a form but a text area submits it (the browser's
  // implicit submission: a one-line field, a checkbox, a radio, a date... press its default button) or
  // sends a message field; Enter or Space activates a focused button, link or box; other keys only type.
  const keyed = (el, key) => {
    const name = keyName(key);
    // Focus inside a closed shadow root shows only its host: what the key reaches there is unseen.
    if ((KEYS_THAT_ACT.has(name) || name === ' ' || name === 'Space') && (closedHost(el) || insideClosed(el, null))) return el;
    if (KEYS_THAT_ACT.has(name)) {
      const form = el.tagName === 'INPUT' && isField(el) ? el.form : null;
      if (form) return defaultButton(form) || implicitSubmit(form);
      if (textField(el)) {
        const multiline = el.isContentEditable || el.tagName === 'TEXTAREA';
        const around = el.form || el.closest('form');
        if (around && !multiline) return defaultButton(around) || implicitSubmit(around);
        return sendControl(el);
      }
      return closestDeep(el, ACTIONABLE) || (isField(el) ? el : null);
    }
    if ((name === ' ' || name === 'Space') && !textField(el)) return closestDeep(el, ACTIONABLE) || (isField(el) ? el : null);
    return null;
  };
  // A form's default button: its first submit button in tree order, wherever it is (`form=` puts one
  // outside the form's element).
  const defaultButton = (form) => (form.elements ? Array.from(form.elements).find((e) => e.matches(SUBMITS)) : form.querySelector(SUBMITS)) || null;
  // A form without a submit button is submitted by Enter when no more than one of its fields is a text
  // field (the browser's rule).
  const implicitSubmit = (form) => {
    const fields = [...(form.elements || form.querySelectorAll('input'))].filter((i) => i.tagName === 'INPUT' && textField(i));
    return fields.length <= 1 ? form : null;
  };
  // A key the page may take as a shortcut: one that neither types (the focus is not a text field) nor
  // moves the focus, the caret or the view, or one with a modifier (Alt: access keys). What a page's own
  // shortcut does is not in its structure: the judge looks.
  const MOVES = new Set(['Tab', 'Escape', 'ArrowUp', 'ArrowDown', 'ArrowLeft', 'ArrowRight', 'PageUp', 'PageDown',
    'Home', 'End', 'Shift', 'Control', 'Alt', 'Meta', ' ', 'Space', 'Enter', 'NumpadEnter']);
  const EDITING = new Set(['a', 'c', 'x', 'v', 'z', 'y', 'b', 'i', 'u', 'Backspace', 'Delete']);  // with Ctrl, in a field
  const shortcut = (at, key) => {
    const parts = String(key || '').split('+');
    const name = parts.pop();
    const mods = parts.filter((m) => m !== 'Shift');
    if (!name || (MOVES.has(name) && !mods.length)) return null;
    const control = mods.length === 1 && ['Control', 'ControlOrMeta', 'Meta'].includes(mods[0]);
    if (textField(at) ? !mods.length || (control && (EDITING.has(name.length === 1 ? name.toLowerCase() : name) || MOVES.has(name)))
      : control && ['a', 'c', 'f'].includes(name.toLowerCase())) return null;
    const where = isField(at) ? F.labelOf(at) || nameOf(at) : '';
    const facts = { ...factsOf(at), tag: 'button', role: 'button', name: clean(`the key ${key}${where ? ` in "${where}"` : ''}`, 80) };
    return { control: at, facts, verdict: { destructive: false, judge: true, category: 'submit', reason: 'a key the page may take as a shortcut' } };
  };
  // Text typed where the focus is not a text field: each of its keys may be a page's shortcut.
  const typedOutside = (at, text) => {
    if (!text || textField(at) || !/[^\s]/.test(text)) return null;
    const found = shortcut(at, text.trim()[0]);
    if (found) found.facts.name = clean(`typing "${text.slice(0, 30)}" outside a text field`, 80);
    return found;
  };
  // A drop's target: the nearest control, else the nearest element with a short name of its own.
  const dropped = (el) => {
    const control = closestDeep(el, ACTIONABLE);
    if (control) return control;
    for (let n = el, up = 0; n && up < 6; n = n.parentElement, up += 1) {
      const own = n.getAttribute('aria-label') || n.getAttribute('title') || textOf(n, 80);
      if (own && own.length <= 60) return n;
    }
    return el;
  };
  // Facts of a form submitted without a button (Enter in its one field): named by its heading.
  const factsFor = (control) => {
    if (control.tagName !== 'FORM') return factsOf(control);
    const facts = factsOf(control);
    return { ...facts, tag: 'button', role: 'button', type: 'submit', name: F.headingOf(control) || clean(control.getAttribute('aria-label'), 80) };
  };

  // A field whose form a button sends: what it holds is the form's, sent by that button. A choice, a box
  // or a radio with none (a settings page that saves at once, a bulk menu that acts when it changes,
  // whatever buttons stand beside it) acts by itself.
  const formState = (el) => {
    const form = el.form || el.closest('form');
    return !!(form && defaultButton(form));
  };
  // A choice in a select that acts by itself: the option chosen is the control (a bulk-action menu).
  // Matched as Playwright matches: a string is a value or a label; else { value | label | index }.
  const choice = (select, values) => {
    if (!select || select.tagName !== 'SELECT' || !Array.isArray(values) || formState(select)) return null;
    const options = [...select.options];
    const match = (v) => options.find((o, i) => (typeof v === 'string' ? o.value === v || o.label === v || o.text.trim() === v
      : !!v && ((v.value !== undefined && o.value === v.value) || (v.label !== undefined && o.label === v.label)
        || (v.index !== undefined && i === v.index))));
    const found = values.map(match).filter(Boolean);
    if (found.length <= 1) return found[0] || null;  // judged once, by the caller
    const ranked = found.map((o) => [o, classify(optionFacts(select, o))]);
    ranked.sort((a, b) => (b[1].destructive ? 2 : b[1].judge ? 1 : 0) - (a[1].destructive ? 2 : a[1].judge ? 1 : 0));
    return ranked.length ? ranked[0][0] : null;
  };
  // A select that acts when it changes is a menu: its option is judged as the menu item it stands for.
  const optionFacts = (select, option) => ({ ...factsOf(select), tag: 'option', role: 'menuitem', type: null, text: null, value: null,
    name: clean(option.label || option.text, 120), field: clean(F.labelOf(select) || nameOf(select), 80) });

  // Enter in a message field of no form, with no send button beside it (a chat that sends over its own
  // socket, where no request can be held): what it holds may be sent. Not judged by its words (a field's
  // label names the field): the judge looks, with the field and its surroundings.
  const composer = (at, key) => {
    if (!KEYS_THAT_ACT.has(keyName(key)) || !textField(at) || at.form || at.closest('form')) return null;
    const text = at.isContentEditable ? at.innerText : at.value;
    if (!text || !text.trim() || at.getAttribute('type') === 'search' || at.getAttribute('role') === 'searchbox') return null;
    const facts = { ...factsOf(at), tag: 'button', role: 'button', name: clean(`Enter in "${F.labelOf(at) || nameOf(at)}"`, 80), message: true };
    return { control: at, facts, verdict: { destructive: false, judge: true, category: 'send', reason: 'Enter in a message field may send what it holds' } };
  };
  // An element whose closed shadow root holds what an input reaches: the focus is on it although it
  // cannot take the focus itself, or a point on it lies on none of its own (light) children. Custom
  // elements only (a closed root on a plain element is not told from its padding).
  const insideClosed = (el, point) => {
    if (!el || el.shadowRoot || !el.tagName.includes('-')) return false;
    if (!point) return el.tabIndex < 0 && !el.hasAttribute('tabindex') && !el.isContentEditable;
    const range = el.ownerDocument.createRange();
    return ![...el.childNodes].some((n) => {
      range.selectNode(n);
      return [...range.getClientRects()].some((b) => point.x >= b.left && point.x <= b.right && point.y >= b.top && point.y <= b.bottom);
    });
  };
  const closedHost = (el) => el.tagName.includes('-') && !el.shadowRoot && !el.childElementCount
    && !(el.textContent || '').trim() && el.getClientRects().length > 0;
