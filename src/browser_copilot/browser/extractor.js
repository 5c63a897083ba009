// Browser Copilot's page extractor: evaluated in the page by the framework (never by the model), in
// Playwright's utility world (observer.js), where page scripts cannot see or replace it.
// Returns the page's interactive elements, numbered, and an outline of its visible text.
// Elements are stamped `data-bc-id="N"` (and same-origin iframes `data-bc-frame="K"`) so that the
// model's code can reach element N through `el(N)`; the previous observation's other stamps are
// removed, so a number is valid for one observation only. Same-origin iframes and open shadow roots are
// walked; cross-origin frames are counted. Secret values (passwords, OTPs, card data) are masked.
// The default view lists the elements of the viewport and of one more screen below it, and the whole of
// the focused form and of an open modal, then up to MAX_FAR more of the next screens; elements are
// numbered region by region (above the viewport, in it, below it), so the observation marks each region
// once. In full-page mode every element is listed. Long runs of links outside that window are folded
// into one line per list (`folds`), and each element in a table row, list item or card says which
// (`row`), so that rows alike are one line each (observation.py).
// The outline keeps the page's words: text is grouped by the block that lays it out (links and
// buttons stay inside their sentence), repeated items (cards, list items, table rows) are one line
// each, and every cut says how much it left out. Elements that something covers are marked by
// hit-testing (those behind an open modal as `behind`, counted in one line); an open modal and error
// texts next to form fields are reported.
// One function in five files, which look.py joins in this order: this one (the options, budgets and
// numbers), extract_element.js (what one element is), extract_walk.js (the walk: elements placed, text
// grouped), extract_covers.js (what covers what) and extract_list.js (the result; it closes the body).
(opts) => {
  const full = !!opts.full;
  const MAX_NAME = 80;
  const MAX_VALUE = 60;
  const TEXT_BUDGET = full ? opts.fullTextBudget || 20000 : opts.textBudget || 900;
  const LINE_MAX = full ? TEXT_BUDGET : opts.lineMax || 450;
  const ITEM_MAX = 300;
  const MAX_ELEMENTS = full ? 6000 : opts.maxElements || 150;
  // Past the default window, the default view lists this many more, up to FAR_BOTTOM (compactly: see
  // `folds` and `row`).
  const MAX_FAR = full ? 0 : opts.maxFar === undefined ? 150 : opts.maxFar;
  // A select's options: the first few (all of them up to a point in full-page mode), with the count.
  const MAX_OPTIONS = full ? 40 : opts.maxOptions || 6;
  // Full-page mode folds a run of at least this many links of one list outside the default window.
  const FOLD_MIN = opts.foldMin || 12;
  const top = window;
  const vw = top.innerWidth;
  const vh = top.innerHeight;
  // The default window: the viewport and one more screen below it.
  const WINDOW_BOTTOM = vh * 2;
  // Past it, the default view lists up to MAX_FAR elements down to this far (and as far up).
  const FAR_BOTTOM = vh * (opts.farScreens || 4);
  const FAR_ABOVE = FAR_BOTTOM - vh;

  // Numbers: a node that keeps its number keeps its stamp (no DOM write, nothing for the page's own
  // observers to react to); the previous observation's other stamps are removed at the end (unstamp).
  const previous = top.__bcMarked || [];
  const marked = [];
  top.__bcMarked = marked;
  const stamps = new Map();
  const stamp = (node, attr, value) => {
    if (node.getAttribute(attr) !== value) node.setAttribute(attr, value);
    if (!stamps.has(node)) { stamps.set(node, new Set()); marked.push(node); }
    stamps.get(node).add(attr);
  };
  const unstamp = () => {
    for (const old of previous) {
      for (const attr of ['data-bc-id', 'data-bc-frame']) {
        if (!(stamps.get(old) || new Set()).has(attr)) old.removeAttribute(attr);
      }
    }
  };
