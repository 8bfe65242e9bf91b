/* Placement preview glue.
 * 1. Mounts the preview panel into the policy page's <section id="preview-panel" data-runtime="NAME"> by
 *    fetching /preview/panel/NAME/ (URL template from this script tag's data-panel-url) and letting htmx wire
 *    the form (as-you-type updates are plain hx-* attributes on the form).
 * 2. Copy buttons ([data-preview-copy="#id"]) copy the generated YAML, also in content htmx swaps in later.
 * Without JavaScript the standalone page works through a normal form submit.
 */
(function () {
  "use strict";
  var script = document.currentScript;

  function mountPanel() {
    var section = document.getElementById("preview-panel");
    if (!section || !section.dataset.runtime || section.dataset.mounted) return;
    var template = (script && script.dataset.panelUrl) || "/preview/panel/__name__/";
    var url = template.replace("__name__", encodeURIComponent(section.dataset.runtime));
    section.dataset.mounted = "1";
    section.setAttribute("aria-busy", "true");
    fetch(url, { credentials: "same-origin", headers: { "HX-Request": "true" } })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.text();
      })
      .then(function (html) {
        section.innerHTML = html;
        if (window.htmx) window.htmx.process(section);
      })
      .catch(function (error) {
        section.textContent = "The placement preview could not be loaded (" + error.message + ").";
      })
      .finally(function () { section.removeAttribute("aria-busy"); });
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-preview-copy]");
    if (!button) return;
    var source = document.querySelector(button.dataset.previewCopy);
    if (!source || !navigator.clipboard) return;
    navigator.clipboard.writeText(source.textContent).then(function () {
      var label = button.textContent;
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = label; }, 1500);
    });
  });

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", mountPanel);
  } else {
    mountPanel();
  }
})();
