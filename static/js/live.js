// Live pages over server-sent events (trainer_portal/live), progressive enhancement only.
// A poller with data-live-stream opens /live/stream?page=<its hx-get>&etag=<its data-etag>; while the stream is
// open the poller's own requests are cancelled and the stream's "swap" events are swapped in exactly as a poll's
// answer would be (outerHTML of the poller, out-of-band parts by id). When the stream fails or ends, polling
// resumes at once and the stream is tried again later, from what the page shows then.
(function () {
  "use strict";
  if (!window.EventSource || !window.htmx) return;

  var source = null;
  var open = false;
  var retryMs = 3000;

  function poller() {
    return document.querySelector(".jobs-poller[data-live-stream]");
  }

  function connect() {
    var el = poller();
    if (!el || source) return;
    var url = el.getAttribute("data-live-stream") + "?page=" + encodeURIComponent(el.getAttribute("hx-get")) +
      "&etag=" + encodeURIComponent(el.getAttribute("data-etag") || "");
    source = new EventSource(url);
    source.addEventListener("open", function () {
      open = true;
      retryMs = 3000;
      document.documentElement.setAttribute("data-live", "stream");
    });
    source.addEventListener("swap", function (event) {
      var target = poller();
      if (target) window.htmx.swap(target, event.data, { swapStyle: "outerHTML" });
    });
    source.addEventListener("bye", function () { reopen(0); });
    source.addEventListener("end", function () { reopen(60000); });
    source.addEventListener("error", function () {
      reopen(retryMs);
      retryMs = Math.min(retryMs * 2, 60000);
    });
  }

  function reopen(delayMs) {
    if (source) source.close();
    source = null;
    open = false;
    document.documentElement.setAttribute("data-live", "poll");
    setTimeout(connect, delayMs + Math.random() * 1000);
  }

  // The stream answers for the poller: its own polls would only repeat what the stream sends.
  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail && event.detail.elt;
    if (open && elt && elt.classList && elt.classList.contains("jobs-poller")) event.preventDefault();
  });

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", connect);
  else connect();
})();
