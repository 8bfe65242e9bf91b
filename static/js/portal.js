/* Trainer Portal progressive enhancement. Everything here is optional: pages work without it.
   - copy buttons for code blocks,
   - YAML editor gutter (line numbers, scroll sync, error line),
   - inline validation messages refreshed after htmx swaps. */
(function () {
  "use strict";

  function copyText(text, button) {
    var done = function () {
      var old = button.textContent;
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = old; }, 1500);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { fallbackCopy(text); done(); });
    } else {
      fallbackCopy(text);
      done();
    }
  }

  function fallbackCopy(text) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    try { document.execCommand("copy"); } catch (e) { /* nothing else to try */ }
    document.body.removeChild(area);
  }

  function initCopyButtons(root) {
    root.querySelectorAll("[data-copy-target]").forEach(function (button) {
      if (button.dataset.ready) { return; }
      button.dataset.ready = "1";
      button.hidden = false;
      button.addEventListener("click", function () {
        var target = document.querySelector(button.dataset.copyTarget);
        if (target) { copyText(target.textContent, button); }
      });
    });
  }

  /* ------------------------------------------------------------------ YAML editor gutter */
  function errorLine() {
    var status = document.getElementById("sync-status");
    return status && status.dataset.errorLine ? parseInt(status.dataset.errorLine, 10) : 0;
  }

  function renderGutter(textarea) {
    var gutter = textarea.parentElement.querySelector(".yaml-editor__gutter");
    if (!gutter) { return; }
    var count = textarea.value.split("\n").length;
    if (textarea.value.endsWith("\n")) { count -= 1; }
    var bad = errorLine();
    count = Math.max(count, bad, 1);
    var parts = [];
    for (var i = 1; i <= count; i++) {
      parts.push(i === bad ? '<span class="is-error" title="YAML error on this line">' + i + "</span>" : String(i));
    }
    gutter.innerHTML = parts.join("\n");
    gutter.scrollTop = textarea.scrollTop;
    textarea.parentElement.classList.toggle("is-invalid", bad > 0);
  }

  function initYamlEditor(root) {
    root.querySelectorAll(".yaml-editor textarea").forEach(function (textarea) {
      if (textarea.dataset.ready) { return; }
      textarea.dataset.ready = "1";
      textarea.addEventListener("input", function () { renderGutter(textarea); });
      textarea.addEventListener("scroll", function () {
        var gutter = textarea.parentElement.querySelector(".yaml-editor__gutter");
        if (gutter) { gutter.scrollTop = textarea.scrollTop; }
      });
      renderGutter(textarea);
    });
  }

  /* ------------------------------------------------------------------ inline problems */
  function cssEscape(value) {
    return window.CSS && CSS.escape ? CSS.escape(value) : value.replace(/["\\]/g, "\\$&");
  }

  function placeProblems() {
    var panel = document.getElementById("problems-panel");
    var fields = document.getElementById("form-fields");
    if (!panel || !fields) { return; }
    fields.querySelectorAll(".field__problem").forEach(function (node) { node.remove(); });
    fields.querySelectorAll(".field--error").forEach(function (node) {
      if (!node.querySelector(".field__error")) { node.classList.remove("field--error"); }
    });
    panel.querySelectorAll("li[data-field]").forEach(function (item) {
      var name = item.dataset.field;
      if (!name) { return; }
      var box = fields.querySelector('.field[data-field="' + cssEscape(name) + '"]');
      if (!box) { return; }
      var note = document.createElement("div");
      var warning = item.dataset.severity === "warning";
      note.className = "field__problem " + (warning ? "field__warning" : "field__error");
      note.textContent = item.dataset.message || "";
      box.appendChild(note);
      if (!warning) { box.classList.add("field--error"); }
    });
  }

  function enhance(root) {
    initCopyButtons(root);
    initYamlEditor(root);
  }

  /* Never replace the pane the user is typing in: a late response for the other side must not eat keystrokes. */
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    var active = document.activeElement;
    if (!target || !active || active === document.body) { return; }
    if (target.contains(active) && (active.tagName === "TEXTAREA" || active.tagName === "INPUT")) {
      event.detail.shouldSwap = false;
    }
  });

  /* Keep the YAML editor's scroll position when the form re-renders it, so the edited part stays in view. */
  var yamlScroll = null;
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    var textarea = document.getElementById("id_yaml");
    if (target && target.id === "yaml-pane" && textarea) {
      yamlScroll = { top: textarea.scrollTop, left: textarea.scrollLeft };
    }
  });
  // htmx:load fires on the new pane (an outerHTML swap detaches the old target, so afterSwap never bubbles here).
  document.addEventListener("htmx:load", function (event) {
    var textarea = document.getElementById("id_yaml");
    if (yamlScroll && textarea && event.target && event.target.id === "yaml-pane") {
      textarea.scrollTop = yamlScroll.top;
      textarea.scrollLeft = yamlScroll.left;
      yamlScroll = null;
    }
  });

  document.addEventListener("DOMContentLoaded", function () { enhance(document); });
  document.addEventListener("htmx:afterSettle", function (event) {
    enhance(document);
    var textarea = document.getElementById("id_yaml");
    if (textarea) { renderGutter(textarea); }
    placeProblems();
  });
  document.addEventListener("htmx:oobAfterSwap", function () {
    var textarea = document.getElementById("id_yaml");
    if (textarea) { renderGutter(textarea); }
  });
})();
