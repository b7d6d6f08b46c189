/* bundler runtime: registers chunk modules, resolves require() between them */
(function () {
  var modules = {}, cache = {};
  function resolve(from, id) {
    if (id.charAt(0) !== '.') return id;
    var base = from.split('/').slice(0, -1).join('/');
    return (base + '/' + id.replace(/^\.\//, '')).replace(/\.js$/, '');
  }
  function req(id) {
    if (cache[id]) return cache[id].exports;
    var f = modules[id];
    if (!f) return undefined;
    var module = cache[id] = { exports: {} };
    f.call(module.exports, module, module.exports, function (dep) {
      return req(resolve(id, dep));
    });
    return module.exports;
  }
  function install(chunk) {
    var m = chunk[1];
    for (var k in m) if (Object.prototype.hasOwnProperty.call(m, k)) modules[k] = m[k];
  }
  self.__require = req;
  self.__modules = modules;
  var name = 'webpackChunk_' + ((self.__SITE__ || {}).site || '');
  var q = self[name] = self[name] || [];
  q.forEach(install);
  q.push = function (c) { install(c); return 0; };
})();
