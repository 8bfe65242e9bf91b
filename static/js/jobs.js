// TrainJob pages, progressive enhancement only (every page works without it):
// - "time in state" cells keep counting between live updates;
// - a row repainted by a live update flashes briefly, so a change catches the eye.
(function () {
  "use strict";

  function format(seconds) {
    seconds = Math.max(0, Math.floor(seconds));
    if (seconds < 60) return seconds + "s";
    var minutes = Math.floor(seconds / 60);
    seconds %= 60;
    if (minutes < 60) return minutes < 10 ? minutes + "m " + String(seconds).padStart(2, "0") + "s" : minutes + "m";
    var hours = Math.floor(minutes / 60);
    minutes %= 60;
    if (hours < 24) return hours + "h " + String(minutes).padStart(2, "0") + "m";
    return Math.floor(hours / 24) + "d " + (hours % 24) + "h";
  }

  function tick() {
    var now = Date.now() / 1000;
    document.querySelectorAll("time[data-since]").forEach(function (el) {
      var since = Number(el.getAttribute("data-since"));
      if (since) el.textContent = format(now - since);
    });
  }

  setInterval(tick, 5000);
  document.addEventListener("htmx:oobAfterSwap", function (event) {
    var el = event.detail && event.detail.target;
    if (el && el.classList && el.classList.contains("jobs-row")) {
      el.classList.add("is-changed");
      setTimeout(function () { el.classList.remove("is-changed"); }, 1200);
    }
  });
})();
