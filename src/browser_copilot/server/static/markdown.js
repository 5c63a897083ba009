// Browser Copilot's web page: the agent's text as simple, safe Markdown (paragraphs, lists, headings,
// code, bold, italics, links), built from DOM nodes: never innerHTML.

import { el, safeHref, str } from './page.js';

function inline(text) {
  const out = document.createDocumentFragment();
  // code | **bold** | [text](url) | bare URL | *italic* (not inside a word: `a*b*c` stays as it is)
  const pattern = /(`+)([^`]+?)\1|\*\*([^*]+?)\*\*|\[([^\]\n]+)\]\(([^)\s]+)\)|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])|(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])/g;
  let last = 0;
  for (const m of text.matchAll(pattern)) {
    if (m.index > last) out.append(text.slice(last, m.index));
    if (m[2] !== undefined) out.append(el('code', { text: m[2] }));
    else if (m[3] !== undefined) out.append(el('strong', {}, inline(m[3])));
    else if (m[4] !== undefined) {
      const href = safeHref(m[5]);
      out.append(href ? el('a', { href, target: '_blank', rel: 'noopener noreferrer' }, inline(m[4])) : m[0]);
    } else if (m[6] !== undefined) {
      const href = safeHref(m[6]);
      out.append(href ? el('a', { href, target: '_blank', rel: 'noopener noreferrer', text: m[6] }) : m[6]);
    } else if (m[7] !== undefined) out.append(el('em', {}, inline(m[7])));
    last = m.index + m[0].length;
  }
  if (last < text.length) out.append(text.slice(last));
  return out;
}

function withBreaks(lines) {
  const frag = document.createDocumentFragment();
  lines.forEach((line, i) => {
    if (i) frag.append(el('br'));
    frag.append(inline(line));
  });
  return frag;
}

export function markdown(source) {
  const root = el('div', { class: 'md' });
  const lines = str(source).replace(/\r\n?/g, '\n').split('\n');
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) { i += 1; continue; }
    const fence = line.match(/^\s*```/);
    if (fence) {
      const body = [];
      i += 1;
      while (i < lines.length && !/^\s*```/.test(lines[i])) body.push(lines[i++]);
      i += 1;
      root.append(el('pre', {}, el('code', { text: body.join('\n') })));
      continue;
    }
    const heading = line.match(/^\s{0,3}(#{1,6})\s+(.*)$/);
    if (heading) {
      root.append(el(heading[1].length <= 2 ? 'h3' : 'h4', {}, inline(heading[2])));
      i += 1;
      continue;
    }
    const bullet = /^\s*[-*+]\s+(.*)$/;
    const numbered = /^\s*(\d+)[.)]\s+(.*)$/;
    if (bullet.test(line) || numbered.test(line)) {
      const ordered = numbered.test(line);
      const pattern = ordered ? numbered : bullet;
      const list = el(ordered ? 'ol' : 'ul');
      if (ordered) {
        const start = Number(line.match(numbered)[1]);
        if (start !== 1) list.setAttribute('start', String(start));
      }
      let item = null;
      while (i < lines.length && lines[i].trim()) {
        const m = lines[i].match(pattern);
        if (m) {
          item = el('li', {}, inline(ordered ? m[2] : m[1]));
          list.append(item);
        } else if (item && /^\s+/.test(lines[i])) {
          item.append(' ', inline(lines[i].trim()));
        } else break;
        i += 1;
      }
      root.append(list);
      continue;
    }
    const para = [];
    while (i < lines.length && lines[i].trim() && !/^\s*(```|#{1,6}\s|[-*+]\s|\d+[.)]\s)/.test(lines[i])) {
      para.push(lines[i++]);
    }
    if (!para.length) para.push(lines[i++]);
    root.append(el('p', {}, withBreaks(para)));
  }
  return root;
}
