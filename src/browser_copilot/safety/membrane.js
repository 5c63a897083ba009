// The membrane around Playwright's page (the code tool's side doors). The model's code gets a Proxy
// instead of the real page; everything it reaches from there (context, frames, locators, handles,
// requests, dialogs, popups, event arguments) is wrapped the same way. Refused APIs (raw CDP, cookies,
// storage state, routing, init scripts, bindings, permissions, the browser object, Playwright internals)
// throw before anything happens. Wrapped arguments are unwrapped on the way in, so Playwright's own
// checks keep working. options.halted() (a reason string or null) is checked before every call;
// options.beforeAction(name, target, args) (pacing) is called before each acting or navigating method
// with the real target and arguments: undefined lets the call go on at once, a promise delays it and
// may resolve to { result } when the hook did the call itself; options.afterAction(name) is awaited
// after each acting method resolves. options.wrap is set to the wrapping function, for helpers built
// on the real page (el(N)).
(page, options) => {
  const opts = options || {};
  const SIDE_DOOR = 'raw browser access past every check';
  const COOKIES = "it hands over the user's login cookies for every site";
  const PROFILE = "it changes the user's browser profile";
  const EVERY_PAGE = 'it changes how every page the browser loads behaves';
  const NETWORK = "it intercepts the browser's network traffic";
  const REFUSED = {
    newCDPSession: SIDE_DOOR,
    newBrowserCDPSession: SIDE_DOOR,
    browser: 'it controls the whole browser, all profiles and windows',
    newContext: 'it controls the whole browser, all profiles and windows',
    contexts: 'it controls the whole browser, all profiles and windows',
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
    exposeBinding: 'it lets web pages call into the browser automation',
    exposeFunction: 'it lets web pages call into the browser automation',
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
    '$$eval', 'goto', 'insertText', 'down', 'up', 'dragTo',
  ]);
  const PACED = new Set([...ACTING, 'reload', 'goBack', 'goForward']);
  // Their function argument is serialised into the page: it must stay the model's own function.
  const EVALUATE = new Set(['evaluate', 'evaluateHandle', 'evaluateAll', '$eval', '$$eval', 'waitForFunction']);
  const HEADERS = new Set(['headers', 'allHeaders', 'headersArray', 'headerValue', 'headerValues']);
  const SECRET_HEADER = /^(cookie|set-cookie|authorization|proxy-authorization)$/i;
  const BUILTIN = new Set([
    'Object', 'Array', 'Promise', 'Date', 'RegExp', 'Map', 'Set', 'WeakMap', 'WeakSet', 'URL',
    'URLSearchParams', 'Buffer', 'ArrayBuffer', 'SharedArrayBuffer', 'DataView', 'Blob', 'Headers',
    'FormData', 'TextEncoder', 'TextDecoder', 'AbortController', 'AbortSignal', 'Boolean', 'Number', 'String',
  ]);
  const toReal = new WeakMap();
  const toProxy = new WeakMap();
  const callbacks = new WeakMap();

  const refusal = (api, why) => new Error(`Refused by Browser Copilot: ${api} is not available to browser code (${why})`);
  const refuser = (api, why) => new Proxy(() => {}, {
    apply() { throw refusal(api, why); },
    construct() { throw refusal(api, why); },
    get() { throw refusal(api, why); },
  });
  const checkHalted = () => {
    const reason = opts.halted ? opts.halted() : null;
    if (reason) throw new Error(reason);
  };
  const isPlain = (v) => {
    const proto = Object.getPrototypeOf(v);
    return proto === null || (typeof proto.constructor === 'function' && proto.constructor.name === 'Object'
      && Object.getPrototypeOf(proto) === null);
  };
  const isPlaywright = (v) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v) || ArrayBuffer.isView(v) || isPlain(v)) return false;
    const ctor = Object.getPrototypeOf(v).constructor;
    if (typeof ctor !== 'function') return false;
    const name = ctor.name || '';
    return !BUILTIN.has(name) && !/Error$/.test(name) && typeof v.then !== 'function';
  };

  const wrap = (v) => {
    if (typeof v !== 'object' || v === null || toReal.has(v)) return v;
    if (Array.isArray(v)) return v.some((x) => isPlaywright(x) || Array.isArray(x)) ? v.map(wrap) : v;
    return isPlaywright(v) ? wrapObject(v) : v;
  };
  const unwrap = (v, withCallbacks, depth = 0) => {
    if (typeof v === 'function') return withCallbacks ? wrapCallback(v) : v;
    if (typeof v !== 'object' || v === null) return v;
    if (toReal.has(v)) return toReal.get(v);
    if (depth > 4) return v;
    if (Array.isArray(v)) return v.map((x) => unwrap(x, withCallbacks, depth + 1));
    if (!isPlain(v)) return v;
    const copy = {};
    for (const [k, x] of Object.entries(v)) copy[k] = unwrap(x, withCallbacks, depth + 1);
    return copy;
  };
  const wrapCallback = (fn) => {
    if (!callbacks.has(fn)) callbacks.set(fn, function (...args) { return unwrap(fn.apply(this, args.map(wrap)), false); });
    return callbacks.get(fn);
  };

  const withoutSecrets = (value) => {
    if (Array.isArray(value)) return value.filter((h) => !(h && SECRET_HEADER.test(String(h.name))));
    if (value && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).filter(([k]) => !SECRET_HEADER.test(k)));
    }
    return value;
  };
  const checkArgs = (real, name, args) => {
    if (HEADERS.has(name) && typeof args[0] === 'string' && SECRET_HEADER.test(args[0])) {
      throw refusal(`the ${args[0]} header`, COOKIES);
    }
    if ((name === 'addScriptTag' || name === 'addStyleTag') && args[0] && args[0].path !== undefined) {
      throw refusal(`${name}({ path })`, 'it reads files from this computer');
    }
    if (name === 'setInputFiles') {
      const files = Array.isArray(args[0]) ? args[0] : [args[0]];
      for (const f of files) {
        if (typeof f !== 'string') continue;
        const parts = f.split(/[\\/]+/);
        if (parts.includes('..') || !/[\\/]mcp[\\/]tmp[\\/]uploads[\\/]/.test(f)) {
          throw refusal('setInputFiles with a path', 'only files the user named can be uploaded: use the upload_file tool');
        }
      }
    }
    if (name === 'close' && typeof real.pages === 'function') {
      throw refusal('closing the browser context', "it closes the user's window and every tab in it");
    }
  };

  const method = (real, name, fn) => {
    const called = typeof name === 'string' ? name : String(name);
    return function (...args) {
      checkHalted();
      checkArgs(real, called, args);
      const realArgs = EVALUATE.has(called)
        ? [args[0], ...args.slice(1).map((a) => unwrap(a, false))]
        : args.map((a) => unwrap(a, true));
      const post = (v) => (HEADERS.has(called) && typeof real.allHeaders === 'function' ? withoutSecrets(v) : wrap(v));
      const paced = PACED.has(called) && opts.beforeAction ? opts.beforeAction(called, real, realArgs) : undefined;
      if (paced) {
        return Promise.resolve(paced).then((done) => {
          checkHalted();
          return done ? done.result : Reflect.apply(fn, real, realArgs);
        }).then(async (v) => {
          if (ACTING.has(called) && opts.afterAction) await opts.afterAction(called);
          return post(v);
        });
      }
      const result = Reflect.apply(fn, real, realArgs);
      if (result && typeof result.then === 'function' && !isPlaywright(result)) {
        return Promise.resolve(result).then(async (v) => {
          if (ACTING.has(called) && opts.afterAction) await opts.afterAction(called);
          return post(v);
        });
      }
      return post(result);
    };
  };

  const wrapObject = (real) => {
    if (toProxy.has(real)) return toProxy.get(real);
    const proxy = new Proxy({}, {
      get(_, prop) {
        if (typeof prop === 'string') {
          if (prop.startsWith('_')) return refuser(prop, 'Playwright internals');
          if (Object.hasOwn(REFUSED, prop)) return refuser(`${prop}()`, REFUSED[prop]);
        }
        const value = Reflect.get(real, prop, real);
        if (typeof value === 'function') return method(real, prop, value);
        if (typeof prop === 'string' && Object.hasOwn(REFUSED_OBJECTS, prop) && value && typeof value === 'object') {
          return refuser(prop, REFUSED_OBJECTS[prop]);
        }
        return wrap(value);
      },
      has(_, prop) { return prop in real; },
      set(_, prop) { throw refusal(`setting ${String(prop)}`, 'Playwright objects are read-only here'); },
      defineProperty(_, prop) { throw refusal(`defining ${String(prop)}`, 'Playwright objects are read-only here'); },
      deleteProperty(_, prop) { throw refusal(`deleting ${String(prop)}`, 'Playwright objects are read-only here'); },
    });
    toReal.set(proxy, real);
    toProxy.set(real, proxy);
    return proxy;
  };

  opts.wrap = wrap;
  return wrap(page);
}
