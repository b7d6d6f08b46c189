// The pinned script: testbed/record/pinned_script.py fills in TIME_MS and SEED and puts
// it first in every recorded and replayed HTML document, so the page's own scripts see
// the same random numbers and the same clock in every load and make the same requests.
// Math.random and crypto.getRandomValues/randomUUID draw from one seeded generator;
// Date (new Date(), Date(), Date.now) starts at TIME_MS and advances 1 ms per reading,
// not with the wall clock. performance.now is left alone (docs/deterministic-replay.md).
(function () {
  'use strict';
  if (window.__testbedDeterministic) return;
  window.__testbedDeterministic = true;
  var state = SEED >>> 0;
  // mulberry32, a small 32-bit generator
  function random() {
    state = (state + 0x6D2B79F5) >>> 0;
    var t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  Math.random = random;
  var c = window.crypto;
  if (c && c.getRandomValues) {
    c.getRandomValues = function getRandomValues(array) {
      var b = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
      for (var i = 0; i < b.length; i++) b[i] = Math.floor(random() * 256);
      return array;
    };
  }
  if (c && c.randomUUID) {
    c.randomUUID = function randomUUID() {
      var b = c.getRandomValues(new Uint8Array(16)), h = [];
      b[6] = (b[6] & 0x0f) | 0x40;
      b[8] = (b[8] & 0x3f) | 0x80;
      for (var i = 0; i < 16; i++) h.push((b[i] + 0x100).toString(16).slice(1));
      return h.slice(0, 4).join('') + '-' + h.slice(4, 6).join('') + '-' +
        h.slice(6, 8).join('') + '-' + h.slice(8, 10).join('') + '-' + h.slice(10).join('');
    };
  }
  var RealDate = Date, clock = TIME_MS;
  function read() { return clock++; }
  // eslint-disable-next-line no-unused-vars
  var Pinned = function Date(year, month, day, hours, minutes, seconds, ms) {
    if (!new.target) return new RealDate(read()).toString();
    var args = arguments.length ? Array.prototype.slice.call(arguments) : [read()];
    return Reflect.construct(RealDate, args, new.target);
  };
  Object.setPrototypeOf(Pinned, RealDate);
  Pinned.prototype = RealDate.prototype;
  Pinned.now = function now() { return read(); };
  Object.defineProperty(RealDate.prototype, 'constructor',
                        {value: Pinned, writable: true, configurable: true});
  window.Date = Pinned;
})();
