/* analytics tag: reports the page view once the page has loaded */
(function () {
  var beacons = BEACONS;
  function send() {
    beacons.forEach(function (u) { var i = new Image(1, 1); i.src = u; });
  }
  if (document.readyState === 'complete') send(); else window.addEventListener('load', send);
})();
