// The box the model's code runs in, inside the @playwright/mcp server's Node process.
//
// Installed once per server (sandbox/box.py): the install call loads Hardened JavaScript (`ses`) into
// its own VM realm and calls `lockdown()`, so this realm's intrinsics are frozen; then this factory
// builds the box. Each code call hands the box the real page and the model's source: the source is
// evaluated in a fresh `Compartment` whose globals are only what this file endows (the membrane's page,
// `el`, realm-local timers, wrapped helpers, refusals). Nothing of Node's main realm, nor of the code
// tool's own per-call realm, reaches the compartment unwrapped: every value that crosses inwards —
// property values, return values, promises, thrown errors, callback arguments, the exposed globals —
// becomes a realm-local copy (data, errors) or a Proxy of this membrane (objects, functions), whose
// traps cross everything the same way; every value that crosses outwards is a copy made here (model
// objects never reach Playwright, so no getter, Proxy trap or prototype of the model's runs with a
// value of the host realm). So no chain of property reads ends at a host realm's `Function`.
// The refused Playwright APIs (raw CDP, cookies, storage state, routing, init scripts, bindings,
// permissions, the browser object, internals) throw before anything happens.
// Called as (host, policy, harden, Compartment) => box; box.run(page, source, options) -> result.
(host, policy, harden, Compartment) => {
  'use strict';
  const { apply, construct, get, has, ownKeys, getOwnPropertyDescriptor } = Reflect;
  const { defineProperty, keys, getPrototypeOf, freeze } = Object;
  const isArray = Array.isArray;
  const tagOf = (v) => apply(Object.prototype.toString, v, []);
  const sourceOf = (fn) => apply(Function.prototype.toString, fn, []);
  const MAX_DEPTH = 24;
  // The name the model's page code carries (see sourceStandIn); the network policy looks for it.
  const TAG = `\n//# sourceURL=${policy.sourceTag}\n`;
  // A method written as `name() {}` (or `async name() {}`) is made a function expression first, as
  // Playwright does; then the function is wrapped by one named for the page.
  const SHORTHAND = /^(async\s*)?(?!function\b|async\b)[A-Za-z_$][\w$]*\s*\(/;
  const taggedFunction = (text) => {
    let t = String(text).trim();
    if (SHORTHAND.test(t)) t = t.startsWith('async') ? `async function ${t.replace(/^async\s*/, '')}` : `function ${t}`;
    return `(function () { return (${t}\n).apply(this, arguments);${TAG}})`;
  };
  // A string is evaluated as an expression: it is evaluated again, under the name, inside the page.
  const taggedExpression = (text) => `(0, eval)(${JSON.stringify(String(text) + TAG)})`;
  const taggedScript = (options) =>
    options && typeof options === 'object' && typeof options.content === 'string'
      ? { ...options, content: options.content + TAG }
      : options;

  const SIDE_DOOR = 'raw browser access past every check';
  const COOKIES = "it hands over the user's login cookies for every site";
  const PROFILE = "it changes the user's browser profile";
  const EVERY_PAGE = 'it changes how every page the browser loads behaves';
  const NETWORK = "it intercepts the browser's network traffic";
  const BINDING = 'it lets web pages call into the browser automation';
  const WHOLE = 'it controls the whole browser, all profiles and windows';
  const REFUSED = {
    newCDPSession: SIDE_DOOR,
    newBrowserCDPSession: SIDE_DOOR,
    browser: WHOLE,
    newContext: WHOLE,
    contexts: WHOLE,
    cookies: COOKIES,
    storageState: COOKIES,
    setStorageState: PROFILE,
    addCookies: PROFILE,
    clearCookies: PROFILE,
    grantPermissions: PROFILE,
    clearPermissions: PROFILE,
    setGeolocation: PROFILE,
    setHTTPCredentials: PROFILE,
    setOffline: PROFILE,
    addInitScript: EVERY_PAGE,
    exposeBinding: BINDING,
    exposeFunction: BINDING,
    setExtraHTTPHeaders: EVERY_PAGE,
    route: NETWORK,
    routeFromHAR: NETWORK,
    routeWebSocket: NETWORK,
    unroute: NETWORK,
    unrouteAll: NETWORK,
    pause: 'it stops the browser automation',
  };
  // Properties refused when they hold an object (page.request is an API client; response.request() stays).
  const REFUSED_OBJECTS = {
    request: "it sends requests with the user's cookies past the URL policy",
    debugger: SIDE_DOOR,
    tracing: 'it records everything the browser does',
    credentials: "it manages the user's passkeys",
    clock: EVERY_PAGE,
    screencast: 'it records the screen',
  };
  const ACTING = new Set([
    'click', 'dblclick', 'tap', 'press', 'pressSequentially', 'type', 'fill', 'check', 'uncheck',
    'setChecked', 'selectOption', 'dispatchEvent', 'evaluate', 'evaluateHandle', 'evaluateAll', '$eval',
    '$$eval', 'goto', 'insertText', 'down', 'up', 'dragTo', 'submit',
  ]);
  const PACED = new Set([...ACTING, 'reload', 'goBack', 'goForward']);
  // Their function arguments are serialised into the page: they cross as source text, never as callables.
  const EVALUATE = new Set(['evaluate', 'evaluateHandle', 'evaluateAll', '$eval', '$$eval', 'waitForFunction']);
  const LISTEN = new Set(['on', 'once', 'addListener', 'prependListener', 'prependOnceListener']);
  // Methods every object inherits that read or change accessors of the object itself.
  const HOST_MUTATORS = new Set(['__defineGetter__', '__defineSetter__', '__lookupGetter__', '__lookupSetter__']);
  const HEADERS = new Set(['headers', 'allHeaders', 'headersArray', 'headerValue', 'headerValues']);
  const SECRET_HEADER = /^(cookie|set-cookie|authorization|proxy-authorization)$/i;

  // Of Node's main realm, never handed over (see box.py): its standard intrinsics and code evaluators.
  const HOST = host.intrinsics;
  const EVALUATORS = host.evaluators;
  const INTRINSIC = 'it is a part of Node itself, not of the browser automation';
  const refusal = (api, why) => new Error(`Refused by Browser Copilot: ${api} is not available to browser code (${why})`);
  const refuser = (api, why) => {
    const fail = () => { throw refusal(api, why); };
    return new Proxy(function refused() {}, { apply: fail, construct: fail, get: fail, set: fail, has: fail });
  };

  // The message and name of anything thrown (strings; a getter that throws reads as 'error').
  const describe = (e) => {
    if (e === null || (typeof e !== 'object' && typeof e !== 'function')) return { message: String(e), name: 'Error' };
    let message = 'error';
    let name = 'Error';
    try { message = String(get(e, 'message')); } catch (_) { /* unreadable message */ }
    try { const n = get(e, 'name'); if (typeof n === 'string') name = n; } catch (_) { /* no name */ }
    return { message, name };
  };

  // One membrane per code call: its own maps, timers and listeners, ended by finish().
  const makeMembrane = (opts) => {
    const toReal = new WeakMap();
    const toProxy = new WeakMap();
    const callbacks = new WeakMap();
    const listeners = [];
    const timers = new Map();
    let nextTimer = 1;
    let finished = null;

    // A thrown value of the host realm becomes a local Error with its name and message (strings).
    const localError = (e) => {
      if (e === null || (typeof e !== 'object' && typeof e !== 'function')) return e;
      const { message, name } = describe(e);
      const copy = new Error(message);
      if (name !== 'Error') defineProperty(copy, 'name', { value: name, writable: true, configurable: true });
      return copy;
    };
    const guarded = (fn) => {
      try { return fn(); } catch (e) { throw localError(e); }
    };
    const checkHalted = () => {
      if (finished) throw new Error(finished);
      const reason = opts.halted ? guarded(() => opts.halted()) : null;
      if (reason) throw new Error(String(reason));
    };
    // A host promise awaited here; its value stays in this file's hands until it crosses with toLocal.
    const settle = async (v) => {
      try { return await v; } catch (e) { throw localError(e); }
    };
    const thenable = (v) => {
      try { return typeof get(v, 'then') === 'function'; } catch (_) { return false; }
    };
    const isPlainHost = (v) => {
      const proto = getPrototypeOf(v);
      if (proto === null) return true;
      if (getPrototypeOf(proto) !== null) return false;
      const ctor = get(proto, 'constructor');
      return typeof ctor === 'function' && get(ctor, 'name') === 'Object';
    };

    // Host -> compartment. Data is copied once per object (a cyclic or shared structure stays one), up
    // to a bounded number of objects per crossing.
    const MAX_COPIES = 20000;
    const toLocal = (v, depth = 0, copies = null) => {
      if (v === null || (typeof v !== 'object' && typeof v !== 'function')) return v;
      if (toReal.has(v)) return v;
      if (toProxy.has(v)) return toProxy.get(v);
      if (HOST.has(v)) return refuser('this object', INTRINSIC);
      if (typeof v === 'function') return functionProxy(v);
      const made = copies || new Map();
      if (made.has(v)) return made.get(v);
      if (depth > MAX_DEPTH || made.size > MAX_COPIES) return undefined;
      const tag = guarded(() => tagOf(v));
      if (tag === '[object Error]') return localError(v);
      if (isArray(v)) {
        const out = [];
        made.set(v, out);
        const n = Math.min(Number(guarded(() => get(v, 'length'))) || 0, MAX_COPIES);
        for (let i = 0; i < n; i += 1) out.push(toLocal(guarded(() => get(v, i)), depth + 1, made));
        return out;
      }
      if (thenable(v)) {
        return new Promise((resolve, reject) => {
          settle(v).then((x) => resolve(toLocal(x)), (e) => reject(localError(e)));
        });
      }
      if (tag === '[object Date]') return new Date(guarded(() => apply(get(v, 'getTime'), v, [])));
      if (guarded(() => isPlainHost(v))) {
        const out = {};
        made.set(v, out);
        for (const k of guarded(() => keys(v))) out[k] = toLocal(guarded(() => get(v, k)), depth + 1, made);
        return out;
      }
      return objectProxy(v);
    };

    // Compartment -> host: copies made here, so nothing of the model's (getters, proxies, prototypes)
    // is handed to Playwright; functions become callbacks that cross their arguments inwards.
    const toForeign = (v, depth = 0, inEvaluate = false, copies = null) => {
      if (v === null || (typeof v !== 'object' && typeof v !== 'function')) return v;
      if (toReal.has(v)) return toReal.get(v);
      if (typeof v === 'function') {
        if (inEvaluate) throw refusal('a function inside evaluate()\'s argument', BINDING);
        return callbackFor(v);
      }
      const made = copies || new Map();
      if (made.has(v)) return made.get(v);
      if (depth > MAX_DEPTH || made.size > MAX_COPIES) throw new TypeError('Browser Copilot: an argument is too large or nested too deeply');
      const next = (x) => toForeign(x, depth + 1, inEvaluate, made);
      if (isArray(v)) {
        const out = [];
        made.set(v, out);
        for (const x of v) out.push(next(x));
        return out;
      }
      if (v instanceof RegExp) return new RegExp(String(v.source), String(v.flags));
      if (v instanceof Date) return new Date(apply(Date.prototype.getTime, v, []));
      if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength));
      if (v instanceof ArrayBuffer) return v.slice(0);
      if (thenable(v)) return Promise.resolve(v).then((x) => toForeign(x, depth + 1, inEvaluate));
      const out = {};
      made.set(v, out);
      for (const k of keys(v)) out[k] = next(v[k]);
      return out;
    };
    const callbackFor = (fn) => {
      if (!callbacks.has(fn)) {
        callbacks.set(fn, function callback(...args) {
          if (finished) return undefined;
          return toForeign(apply(fn, undefined, args.map((a) => toLocal(a))));
        });
      }
      return callbacks.get(fn);
    };
    // An evaluate()'s function goes to the page as its source text: a stand-in that only says it.
    // The model's own page code is named (`//# sourceURL`, policy.sourceTag): every function it defines
    // in the page carries that name in stack traces, so the network policy knows a request the code
    // made, directly or through the page's functions, timers or promises it set off.
    const sourceStandIn = (fn) => {
      const text = opts.tagged ? taggedFunction(sourceOf(fn)) : sourceOf(fn);
      const stand = function pageFunction() {};
      defineProperty(stand, 'toString', { value: () => text });
      return stand;
    };
    const pageArgs = (name, args) => {
      const at = name.startsWith('$') ? 1 : 0;
      return args.map((a, i) => {
        if (typeof a === 'function') return sourceStandIn(a);
        if (i === at && typeof a === 'string' && opts.tagged) return taggedExpression(a);
        return toForeign(a, 0, true);
      });
    };

    const checkName = (prop) => {
      if (typeof prop !== 'string') return;
      if (prop.startsWith('_')) throw refusal(prop, 'Playwright internals');
      if (Object.hasOwn(REFUSED, prop)) throw refusal(`${prop}()`, REFUSED[prop]);
    };
    const checkArgs = (real, name, args) => {
      if (HEADERS.has(name) && typeof args[0] === 'string' && SECRET_HEADER.test(args[0])) {
        throw refusal(`the ${args[0]} header`, COOKIES);
      }
      if ((name === 'addScriptTag' || name === 'addStyleTag') && args[0] && args[0].path !== undefined) {
        throw refusal(`${name}({ path })`, 'it reads files from this computer');
      }
      if (name === 'addScriptTag' && args[0] && args[0].url !== undefined) {
        throw refusal('addScriptTag({ url })', 'a script loaded by URL is not known as your code: put the code in page.evaluate()');
      }
      if (EVALUATE.has(name) && args.some((a) => a && typeof a === 'object' && a.exposeFunctions)) {
        throw refusal('evaluate() with exposeFunctions', BINDING);
      }
      if (name === 'setInputFiles') {
        const files = isArray(args[0]) ? args[0] : [args[0]];
        for (const f of files) {
          if (typeof f !== 'string') continue;
          const parts = f.split(/[\\/]+/);
          if (parts.includes('..') || !/[\\/]mcp[\\/]tmp[\\/]uploads[\\/]/.test(f)) {
            throw refusal('setInputFiles with a path', 'only files the user named can be uploaded: use the upload_file tool');
          }
        }
      }
      if (name === 'close' && guarded(() => typeof get(real, 'pages') === 'function')) {
        throw refusal('closing the browser context', "it closes the user's window and every tab in it");
      }
    };
    const withoutSecrets = (value) => {
      if (isArray(value)) return value.filter((h) => !(h && SECRET_HEADER.test(String(h.name))));
      if (value && typeof value === 'object') {
        const out = {};
        for (const k of keys(value)) if (!SECRET_HEADER.test(k)) out[k] = value[k];
        return out;
      }
      return value;
    };

    const act = async (real, name, fn, args) => {
      if (ACTING.has(name) && opts.beforeActing) await settle(opts.beforeActing(real, name));
      if (name === 'goto' && opts.beforeGoto) await settle(opts.beforeGoto(real, args[0]));
      let done = null;
      const paced = PACED.has(name) && opts.beforeAction ? guarded(() => opts.beforeAction(name, real, args)) : undefined;
      if (paced) {
        done = await settle(paced);
        checkHalted();
      }
      const value = done ? guarded(() => get(done, 'result')) : await settle(guarded(() => apply(fn, real, args)));
      if (ACTING.has(name) && opts.afterAction) await settle(opts.afterAction(name));
      return value;
    };
    const method = (real, prop, fn) => {
      const name = typeof prop === 'string' ? prop : String(prop);
      if (EVALUATORS.has(fn) || HOST_MUTATORS.has(name)) return refuser(name, INTRINSIC);
      return function wrapped(...args) {
        checkHalted();
        if (opts.hidden && guarded(() => opts.hidden(real))) {
          throw refusal('another task\'s window', 'it belongs to a task that runs at the same time: work in your own tabs');
        }
        checkArgs(real, name, args);
        const realArgs = EVALUATE.has(name)
          ? pageArgs(name, args)
          : name === 'addScriptTag' && opts.tagged
            ? [taggedScript(toForeign(args[0]))]
            : args.map((a) => toForeign(a));
        const post = (v) => (HEADERS.has(name) ? withoutSecrets(toLocal(v)) : toLocal(v));
        if (LISTEN.has(name) && typeof realArgs[1] === 'function') listeners.push([real, realArgs[0], realArgs[1]]);
        if (ACTING.has(name) || (PACED.has(name) && opts.beforeAction)) {
          return act(real, name, fn, realArgs).then(post, (e) => { throw localError(e); });
        }
        let value = guarded(() => apply(fn, real, realArgs));
        // Another run's tabs are not listed (a context's pages()): the app's `hidden`.
        if (name === 'pages' && opts.hidden && isArray(value)) value = value.filter((p) => !guarded(() => opts.hidden(p)));
        if (value !== null && typeof value === 'object' && thenable(value) && !toProxy.has(value)) {
          return settle(value).then(post);
        }
        return post(value);
      };
    };

    const readOnly = (prop) => { throw refusal(`changing ${String(prop)}`, 'objects of the browser automation are read-only here'); };
    const traps = (real) => ({
      get(_, prop) {
        checkName(prop);
        const value = guarded(() => get(real, prop, real));
        if (typeof value === 'function') return method(real, prop, value);
        if (typeof prop === 'string' && Object.hasOwn(REFUSED_OBJECTS, prop) && value && typeof value === 'object') {
          return refuser(prop, REFUSED_OBJECTS[prop]);
        }
        return toLocal(value);
      },
      has(_, prop) { return guarded(() => has(real, prop)); },
      ownKeys(target) {
        const out = [];
        for (const k of guarded(() => ownKeys(real))) if (typeof k !== 'string' || !k.startsWith('_')) out.push(k);
        for (const k of ownKeys(target)) if (!out.includes(k)) out.push(k);
        return out;
      },
      getOwnPropertyDescriptor(target, prop) {
        const own = getOwnPropertyDescriptor(target, prop);
        if (own && !own.configurable) return own;
        const found = guarded(() => getOwnPropertyDescriptor(real, prop));
        if (!found) return undefined;
        return { value: this.get(target, prop), writable: false, enumerable: !!found.enumerable, configurable: true };
      },
      getPrototypeOf() { return null; },
      set(_, prop) { return readOnly(prop); },
      defineProperty(_, prop) { return readOnly(prop); },
      deleteProperty(_, prop) { return readOnly(prop); },
      setPrototypeOf() { return readOnly('the prototype'); },
      preventExtensions() { return readOnly('extensibility'); },
    });
    const remember = (real, proxy) => {
      toReal.set(proxy, real);
      toProxy.set(real, proxy);
      return proxy;
    };
    const objectProxy = (real) => {
      if (guarded(() => typeof get(real, 'mainFrame') === 'function' && typeof get(real, 'context') === 'function')) {
        if (opts.sawPage) guarded(() => opts.sawPage(real));
      }
      return remember(real, new Proxy({}, traps(real)));
    };
    const functionProxy = (real) => {
      const handler = traps(real);
      handler.apply = (_, self, args) => {
        checkHalted();
        if (EVALUATORS.has(real)) throw refusal('this function', INTRINSIC);
        const value = guarded(() => apply(real, toForeign(self), args.map((a) => toForeign(a))));
        return thenable(value) ? settle(value).then((v) => toLocal(v)) : toLocal(value);
      };
      handler.construct = (_, args) => {
        checkHalted();
        if (EVALUATORS.has(real)) throw refusal('this function', INTRINSIC);
        return toLocal(guarded(() => construct(real, args.map((a) => toForeign(a)))));
      };
      return remember(real, new Proxy(function hostFunction() {}, handler));
    };

    // Timers that belong to this call: cleared when it ends, callbacks never see a host value.
    const timer = (start, stop, repeat) => (fn, ms, ...rest) => {
      checkHalted();
      if (typeof fn !== 'function') throw new TypeError('Browser Copilot: timers take a function, not a string');
      const id = nextTimer;
      nextTimer += 1;
      const tick = () => {
        if (!repeat) timers.delete(id);
        if (finished) return;
        try { apply(fn, undefined, rest); } catch (_) { /* a timer's error has nowhere to go */ }
      };
      timers.set(id, [stop, apply(start, undefined, [tick, Number(ms) || 0])]);
      return id;
    };
    const clear = (id) => {
      const entry = timers.get(id);
      if (!entry) return;
      timers.delete(id);
      apply(entry[0], undefined, [entry[1]]);
    };
    const localGlobals = (exposed) => {
      const out = {
        setTimeout: timer(host.setTimeout, host.clearTimeout, false),
        setInterval: timer(host.setInterval, host.clearInterval, true),
        setImmediate: timer(host.setImmediate, host.clearImmediate, false),
        clearTimeout: clear,
        clearInterval: clear,
        clearImmediate: clear,
        queueMicrotask: (fn) => {
          checkHalted();
          Promise.resolve().then(() => { if (!finished) apply(fn, undefined, []); }).catch(() => undefined);
        },
      };
      for (const name of keys(exposed)) {
        if (Object.hasOwn(out, name)) continue;
        if (policy.wrap.includes(name)) out[name] = toLocal(exposed[name]);
        else if (Object.hasOwn(policy.refuse, name)) out[name] = refuser(name, policy.refuse[name]);
        else out[name] = refuser(name, 'it is a part of Node that browser code has no use for');
      }
      return out;
    };

    const finish = (reason) => {
      finished = reason;
      for (const id of [...timers.keys()]) clear(id);
      for (const [real, event, fn] of listeners.splice(0)) {
        try { apply(get(real, 'off'), real, [event, fn]); } catch (_) { /* already gone */ }
      }
    };
    return { toLocal, localGlobals, finish, guarded };
  };

  // Runs the model's `async (page) => {...}` source; returns { json } (the JSON of its value, or null
  // for undefined) or { error, name }. Only strings leave.
  const run = async (realPage, source, opts) => {
    const m = makeMembrane(opts);
    try {
      const page = m.toLocal(realPage);
      const el = (n) => m.toLocal(m.guarded(() => opts.el(Number(n))));
      // Date and Math of this realm's start compartment (frozen): a clock and Math.random that work.
      const globals = { ...m.localGlobals(opts.exposed || {}), Date, Math, page, el: harden(el) };
      const compartment = new Compartment({ globals, __options__: true });
      let fn;
      try {
        // `page.$eval(` looks like a direct eval to ses's heuristic (a compatibility check, not a
        // security one, says ses); import() and HTML comments are rewritten so they cannot load anything.
        fn = compartment.evaluate(`(${source}\n)`, {
          __rejectSomeDirectEvalExpressions__: false,
          __evadeImportExpressionTest__: true,
          __evadeHtmlCommentTest__: true,
        });
      } catch (e) {
        const d = describe(e);
        return { error: `The code does not compile: ${d.message}`, name: d.name };
      }
      if (typeof fn !== 'function') return { error: 'The code must be a function: async (page) => { ... }', name: 'TypeError' };
      const value = await fn(page, el);
      const json = JSON.stringify(value);
      return { json: json === undefined ? null : String(json) };
    } catch (e) {
      const d = describe(e);
      return { error: d.message, name: d.name };
    } finally {
      m.finish('Stopped: this code call has ended; its timers and callbacks do not run any more.');
    }
  };
  return harden({ run, policy: freeze({ ...policy }) });
}
