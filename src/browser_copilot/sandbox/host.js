// Node's main realm, as seen from the install call (trusted code, before lockdown): its code
// evaluators (Function, AsyncFunction, GeneratorFunction, AsyncGeneratorFunction, eval) and every object
// reachable from its standard intrinsics (constructors, prototypes, their methods and accessors), plus
// its global object and `process`. The membrane hands none of them to the model's code and calls none
// of the evaluators. Called with any function of the main realm.
(hostFunction) => {
  const HostFunction = Object.getPrototypeOf(hostFunction).constructor;
  const hostGlobal = HostFunction('return globalThis')();
  const hidden = HostFunction('return [async function () {}, function* () {}, async function* () {},'
    + ' (function* () {})(), (async function* () {})(), [][Symbol.iterator](), new Map().entries(),'
    + ' new Set().values(), ""[Symbol.iterator](), /x/[Symbol.matchAll](""), eval]')();
  const evaluators = new Set([HostFunction, hostGlobal.eval,
    ...hidden.slice(0, 3).map((f) => Object.getPrototypeOf(f).constructor)]);
  const own = new Set(Object.getOwnPropertyNames(globalThis).filter((k) => {
    const v = globalThis[k];
    return (typeof v !== 'object' && typeof v !== 'function') || v === null || v instanceof Object;
  }));
  const roots = [hostGlobal, hostGlobal.process, ...hidden, ...evaluators];
  for (const name of Object.getOwnPropertyNames(hostGlobal)) {
    if (own.has(name) || name === 'global' || name === 'process') {
      const d = Object.getOwnPropertyDescriptor(hostGlobal, name);
      if (d && 'value' in d) roots.push(d.value);
    }
  }
  const intrinsics = new WeakSet();
  const queue = roots.filter((v) => (typeof v === 'object' || typeof v === 'function') && v !== null);
  while (queue.length) {
    const v = queue.pop();
    if (intrinsics.has(v)) continue;
    intrinsics.add(v);
    if (v === hostGlobal || v === hostGlobal.process) continue;
    const next = [Object.getPrototypeOf(v)];
    for (const key of Reflect.ownKeys(v)) {
      const d = Object.getOwnPropertyDescriptor(v, key);
      if (d) next.push(d.value, d.get, d.set);
    }
    for (const n of next) {
      if ((typeof n === 'object' || typeof n === 'function') && n !== null && !intrinsics.has(n)) queue.push(n);
    }
  }
  return { intrinsics, evaluators };
  }
