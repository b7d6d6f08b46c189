/* the page's app: renders the feed, the carousel, lazy content; uses the libraries */
(function () {
  var cfg = window.__SITE__, req = self.__require || function () {};
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text) e.textContent = text;
    return e;
  }
  function work() {
    // Run every bundled module that is loaded, as an app's imports do.
    var n = 0;
    Object.keys(self.__modules || {}).sort().forEach(function (id) {
      try { req(id); n++; } catch (e) {}
    });
    try {
      var chunk = req('lodash/chunk'), uniq = req('lodash/uniq');
      if (chunk && uniq) n += chunk(uniq([3, 1, 3, 2, 5, 8, 1]), 2).length;
    } catch (e) {}
    document.documentElement.setAttribute('data-modules', n);
  }
  function feed(d) {
    // Client-side rendering after first paint: the hero (on script-hero pages), the promo.
    var media = document.getElementById('hero-media');
    if (d.hero && media) {
      media.appendChild(el('img', {src: d.hero.src, width: d.hero.width,
                                   height: d.hero.height, alt: ''}));
    }
    var promo = document.getElementById('promo');
    if (d.promo && promo) promo.appendChild(el('div', {'class': 'promo'}, d.promo));
    var ul = document.getElementById('feed');
    d.items.forEach(function (it) {
      var li = el('li', {'class': 'feed-item'});
      li.appendChild(el('strong', {}, it.title));
      li.appendChild(el('span', {}, ' ' + it.summary));
      ul.appendChild(li);
    });
    var wrap = document.getElementById('slides');
    d.slides.forEach(function (s, i) {
      var slide = el('div', {'class': 'swiper-slide', 'style': i ? 'display:none' : ''});
      slide.appendChild(el('img', {src: s.src, width: s.width, height: s.height,
                                   style: 'width:100%;height:auto', alt: s.title}));
      wrap.appendChild(slide);
    });
    var cur = 0, slides = wrap.children;
    function show(k) {
      if (!slides.length) return;
      slides[cur].style.display = 'none';
      cur = (k + slides.length) % slides.length;
      slides[cur].style.display = '';
    }
    document.getElementById('prev').onclick = function () { show(cur - 1); };
    document.getElementById('next').onclick = function () { show(cur + 1); };
    if (window.Swiper) { try { new Swiper('#carousel', {}); } catch (e) {} }
    window.__more = d.more;
  }
  function libraries() {
    try { if (window.jQuery) jQuery('body').addClass('js-ready'); } catch (e) {}
    try { if (window.dayjs) document.title += ' ' + dayjs('2024-06-01').format('YYYY'); } catch (e) {}
    try {
      if (window.React && window.ReactDOM && document.getElementById('react-root')) {
        var h = React.createElement;
        ReactDOM.createRoot(document.getElementById('react-root')).render(
          h('ul', null, ['one', 'two', 'three'].map(function (t) { return h('li', {key: t}, t); })));
      }
    } catch (e) {}
    try { if (window.Vue && document.getElementById('vue-app'))
      Vue.createApp({data: function () { return {message: 'Vue rendered this'}; }}).mount('#vue-app');
    } catch (e) {}
    try { if (window.Chart && document.getElementById('chart'))
      new Chart(document.getElementById('chart'), {type: 'bar', options: {animation: false},
        data: {labels: ['a', 'b', 'c', 'd'], datasets: [{label: 'n', data: [3, 7, 4, 9]}]}});
    } catch (e) {}
    try { if (window.d3 && document.getElementById('d3-chart'))
      d3.select('#d3-chart').append('svg').attr('width', 300).attr('height', 100)
        .selectAll('rect').data([4, 8, 15, 16, 23, 42]).enter().append('rect')
        .attr('x', function (d, i) { return i * 50; }).attr('y', function (d) { return 100 - d * 2; })
        .attr('width', 40).attr('height', function (d) { return d * 2; });
    } catch (e) {}
    try { if (window.AOS) AOS.init(); } catch (e) {}
  }
  function more() {
    var box = document.getElementById('more');
    (window.__more || []).forEach(function (m) {
      var fig = el('figure');
      fig.appendChild(el('img', {src: m.src, width: m.width, height: m.height, alt: ''}));
      fig.appendChild(el('figcaption', {}, m.caption));
      box.appendChild(fig);
    });
    var s = el('script', {src: cfg.lazyChunk});
    document.head.appendChild(s);
  }
  var loaded = new Promise(function (ok) {
    if (document.readyState === 'complete') ok(); else window.addEventListener('load', ok);
  });
  var api = cfg.api.map(function (u) {
    return fetch(u).then(function (r) { return r.json(); });
  });
  work();
  libraries();
  Promise.all([api[0].then(feed)].concat(api.slice(1))).catch(function () {})
    .then(function () { return loaded; }).then(more);
})();
