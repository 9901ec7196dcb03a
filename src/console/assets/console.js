// mnemo console: the as_of slider and confirmations. Pages work without this file.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("input[type=range][data-target]").forEach(function (slider) {
    var target = document.getElementById(slider.dataset.target);
    if (!target) return;
    var iso = function () {
      return new Date(Number(slider.value) * 1000).toISOString().replace(".000Z", "Z");
    };
    slider.addEventListener("input", function () { target.value = iso(); });
    slider.addEventListener("change", function () {
      target.value = iso();
      if (slider.form && slider.form.reportValidity()) slider.form.submit();
    });
  });
  document.querySelectorAll("form[data-confirm]").forEach(function (form) {
    form.addEventListener("submit", function (e) {
      if (!window.confirm(form.dataset.confirm)) e.preventDefault();
    });
  });
});
