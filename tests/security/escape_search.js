// The attacker's search (tests/security/test_membrane.py): breadth-first over property chains from
// `root`; every function met under `constructor` (and any value named eval/Function) is called with
// 'return process'. Returns the chain that reached Node's process, or how many objects it visited.
async (root, limit) => {
  const looksLikeProcess = (p) => {
    try { return !!p && typeof p === 'object' && typeof p.pid === 'number' && typeof p.cwd === 'function'; }
    catch (e) { return false; }
  };
  const seen = new Set();
  const queue = [[root, 'root']];
  let visited = 0;
  const tryCall = (f, path) => {
    for (const body of ['return process', 'return globalThis.process']) {
      try { const p = f(body)(); if (looksLikeProcess(p)) return path + '(' + JSON.stringify(body) + ')()'; }
      catch (e) { /* refused or not an evaluator */ }
      try { const p = new f(body)(); if (looksLikeProcess(p)) return 'new ' + path; } catch (e) { /* no */ }
    }
    return null;
  };
  while (queue.length && visited < limit) {
    const [v, path] = queue.shift();
    if ((typeof v !== 'object' && typeof v !== 'function') || v === null) continue;
    try { if (seen.has(v)) continue; seen.add(v); } catch (e) { continue; }
    visited += 1;
    if (looksLikeProcess(v)) return { escaped: path };
    const next = [];
    const read = (name, f) => { try { next.push([f(), path + name]); } catch (e) { /* refused */ } };
    for (const key of ['constructor', '__proto__', 'prototype', 'caller', 'arguments', 'callee', 'then']) {
      read('.' + key, () => Reflect.get(v, key));
    }
    read('.getPrototypeOf()', () => Object.getPrototypeOf(v));
    read(".__lookupGetter__('__proto__')", () => v.__lookupGetter__('__proto__'));
    let keys = [];
    try { keys = Reflect.ownKeys(v).slice(0, 40); } catch (e) { /* refused */ }
    for (const key of keys) {
      read('[' + String(key) + ']', () => Reflect.get(v, key));
      try {
        const d = Object.getOwnPropertyDescriptor(v, key);
        for (const part of ['get', 'set', 'value']) {
          if (d && d[part]) next.push([d[part], path + '{' + String(key) + '}.' + part]);
        }
      } catch (e) { /* refused */ }
    }
    const named = /constructor|\.eval|\.Function|\[Function\]|\[eval\]/;
    if (typeof v === 'function' && named.test(path.slice(-14))) {
      const found = tryCall(v, path);
      if (found) return { escaped: found };
    }
    for (const [n, p] of next) {
      if (typeof n === 'function' && /constructor$/.test(p)) {
        const found = tryCall(n, p);
        if (found) return { escaped: found };
      }
      queue.push([n, p]);
    }
  }
  return { escaped: null, visited };
}
