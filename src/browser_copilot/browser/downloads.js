// What a download brought, as text, for the code's `download.text()` (the façade): a CSV, TXT, JSON or
// other text file as it is; a PDF's text read from its pages' content streams (compressed with Flate or
// not; a font's ToUnicode map where it has one, else the bytes as Latin-1). Anything else is refused.
// Installed once per MCP server with the guard runtime (browser/calls.py), in the app's trusted code:
// called as (Buffer) => (path, name, maxChars) => Promise<string>.
(Buffer) => {
  const host = Buffer.constructor('return process')();
  const fs = host.getBuiltinModule('fs');
  const zlib = host.getBuiltinModule('zlib');

  const inflate = (bytes) => {
    for (const fn of [zlib.inflateSync, zlib.inflateRawSync, zlib.unzipSync]) {
      try { return fn(bytes); } catch (e) { /* the next way */ }
    }
    return null;
  };
  // Every `N 0 obj ... endobj`: its dictionary text and its stream (decoded when it is Flate).
  const objects = (pdf) => {
    const text = pdf.toString('latin1');
    const found = new Map();
    const OBJ = /(\d+)\s+\d+\s+obj\b/g;
    for (let m = OBJ.exec(text); m; m = OBJ.exec(text)) {
      const end = text.indexOf('endobj', m.index);
      if (end < 0) break;
      const body = text.slice(m.index + m[0].length, end);
      const at = body.search(/\bstream\r?\n/);
      let stream = null;
      if (at >= 0) {
        const start = m.index + m[0].length + body.indexOf('\n', at) + 1;
        const stop = text.lastIndexOf('endstream', end);
        const raw = pdf.subarray(start, stop);
        stream = /\/FlateDecode/.test(body.slice(0, at)) ? inflate(raw) : raw;
      }
      found.set(m[1], { dict: at >= 0 ? body.slice(0, at) : body, stream });
      OBJ.lastIndex = end;
    }
    return found;
  };
  const hex = (s) => Buffer.from(s.replace(/\s+/g, '').padEnd(2 * Math.ceil(s.replace(/\s+/g, '').length / 2), '0'), 'hex');
  // A ToUnicode CMap: code (as hex) -> text, and the code length in bytes.
  const cmapOf = (stream) => {
    const text = stream.toString('latin1');
    const map = new Map();
    let size = 1;
    const range = /<([0-9a-fA-F]+)>\s*<[0-9a-fA-F]+>/.exec(text.slice(text.indexOf('begincodespacerange')));
    if (range) size = Math.max(1, range[1].length / 2);
    const unicode = (h) => {
      const b = hex(h);
      let out = '';
      for (let i = 0; i + 1 < b.length; i += 2) out += String.fromCharCode(b.readUInt16BE(i));
      return out;
    };
    for (const block of text.split('beginbfchar').slice(1)) {
      for (const m of block.split('endbfchar')[0].matchAll(/<([0-9a-fA-F]+)>\s*<([0-9a-fA-F]+)>/g)) map.set(m[1].toLowerCase(), unicode(m[2]));
    }
    for (const block of text.split('beginbfrange').slice(1)) {
      for (const m of block.split('endbfrange')[0].matchAll(/<([0-9a-fA-F]+)>\s*<([0-9a-fA-F]+)>\s*<([0-9a-fA-F]+)>/g)) {
        const from = parseInt(m[1], 16);
        const to = parseInt(m[2], 16);
        const first = unicode(m[3]);
        for (let c = from; c <= to && c - from < 65536; c += 1) {
          const code = c.toString(16).padStart(m[1].length, '0');
          map.set(code, first.slice(0, -1) + String.fromCharCode(first.charCodeAt(first.length - 1) + (c - from)));
        }
      }
    }
    return { map, size };
  };
  // Font resource names (/F1) -> their ToUnicode maps, from every resource dictionary of the file.
  const fontsOf = (objs) => {
    const fonts = new Map();
    for (const { dict } of objs.values()) {
      const block = /\/Font\s*<<([^>]*)>>/.exec(dict);
      if (!block) continue;
      for (const m of block[1].matchAll(/\/([^\s/<>[\]()]+)\s+(\d+)\s+\d+\s+R/g)) {
        const font = objs.get(m[2]);
        const ref = font && /\/ToUnicode\s+(\d+)\s+\d+\s+R/.exec(font.dict);
        const cmap = ref && objs.get(ref[1]);
        if (cmap && cmap.stream) fonts.set(m[1], cmapOf(cmap.stream));
      }
    }
    return fonts;
  };
  // A literal string's bytes, escapes resolved.
  const literal = (s) => {
    const out = [];
    for (let i = 0; i < s.length; i += 1) {
      const c = s[i];
      if (c !== '\\') { out.push(c.charCodeAt(0) & 255); continue; }
      const n = s[(i += 1)];
      const simple = { n: 10, r: 13, t: 9, b: 8, f: 12, '(': 40, ')': 41, '\\': 92 };
      if (n in simple) out.push(simple[n]);
      else if (/[0-7]/.test(n)) {
        const oct = /^[0-7]{1,3}/.exec(s.slice(i))[0];
        out.push(parseInt(oct, 8) & 255);
        i += oct.length - 1;
      }
    }
    return Buffer.from(out);
  };
  const decode = (bytes, font) => {
    if (!font) return bytes.toString('latin1');
    let out = '';
    for (let i = 0; i < bytes.length; i += font.size) {
      const code = bytes.subarray(i, i + font.size).toString('hex');
      out += font.map.get(code) ?? '';
    }
    return out;
  };
  const TOKEN = /\((?:\\[\s\S]|[^\\)])*\)|<[0-9a-fA-F\s]*>|\[|\]|\/[^\s/<>[\]()]+|-?\d*\.?\d+|[A-Za-z'"*]+/g;
  const textOf = (stream, fonts) => {
    const src = stream.toString('latin1');
    let out = '';
    let font = null;
    const stack = [];
    let array = null;
    const show = (token) => {
      if (token.startsWith('(')) return decode(literal(token.slice(1, -1)), font);
      if (token.startsWith('<')) return decode(hex(token.slice(1, -1)), font);
      return '';
    };
    for (const m of src.matchAll(TOKEN)) {
      const t = m[0];
      if (t === '[') { array = []; continue; }
      if (t === ']') { stack.push(array || []); array = null; continue; }
      if (array) { array.push(t); continue; }
      if (/^[A-Za-z'"*]+$/.test(t)) {
        if (t === 'Tf') font = fonts.get(String(stack[stack.length - 2] || '').slice(1)) || null;
        else if (t === 'Tj') out += show(String(stack[stack.length - 1] || ''));
        else if (t === "'" || t === '"') out += `\n${show(String(stack[stack.length - 1] || ''))}`;
        else if (t === 'TJ') {
          for (const part of stack[stack.length - 1] || []) out += /^-?\d/.test(part) ? (Number(part) < -200 ? ' ' : '') : show(part);
        } else if (t === 'T*' || t === 'ET') out += '\n';
        else if ((t === 'Td' || t === 'TD') && Number(stack[stack.length - 1]) !== 0) out += '\n';
        else if (t === 'Tm') out += '\n';
        stack.length = 0;
        continue;
      }
      stack.push(t);
    }
    return out;
  };
  const pdfText = (pdf) => {
    const objs = objects(pdf);
    const fonts = fontsOf(objs);
    const parts = [];
    for (const { dict, stream } of objs.values()) {
      if (!stream || /\/(Type\s*\/(XObject|FontDescriptor|Metadata|XRef|ObjStm)|Subtype\s*\/Image|Length1|ToUnicode)/.test(dict)) continue;
      const text = stream.toString('latin1');
      if (!/\b(Tj|TJ)\b/.test(text) || text.includes('begincmap')) continue;
      parts.push(textOf(stream, fonts));
    }
    return parts.join('\n').replace(/[ \t]+\n/g, '\n').replace(/\n{3,}/g, '\n\n').trim();
  };

  return async (path, name, max) => {
    const data = await fs.promises.readFile(String(path));
    let text;
    if (data.subarray(0, 5).toString('latin1') === '%PDF-') {
      text = pdfText(data);
      if (!text) return `(${name} is a PDF without text that can be read: scanned pages, or an unusual encoding)`;
    } else if (data.subarray(0, 8192).includes(0)) {
      throw new Error(`${name} is not a text file (only text, CSV, JSON and PDF downloads can be read)`);
    } else {
      text = data.toString('utf8').replace(/^\uFEFF/, '');
    }
    return text.length > max ? `${text.slice(0, max)}\n… (${text.length - max} more characters)` : text;
  };
}
