/* The date picker: jump to the chosen day, or the next day with events (VD_DATES from dates.js). */
(function () {
  "use strict";
  var dates = window.VD_DATES || [];
  var form = document.getElementById("date-picker");
  if (form && dates.length) {
    form.addEventListener("submit", function (event) {
      var wanted = form.elements.date.value;
      if (!wanted) { return; }
      event.preventDefault();
      var target = dates.find(function (d) { return d >= wanted; }) || dates[dates.length - 1];
      var url = form.dataset.root + "days/" + target + ".html";
      if (target !== wanted) { url += "?requested=" + encodeURIComponent(wanted); }
      window.location.href = url;
    });
  }
  var notice = document.getElementById("picker-notice");
  var title = document.getElementById("day-title");
  var requested = new URLSearchParams(window.location.search).get("requested");
  if (notice && title && requested && /^\d{4}-\d{2}-\d{2}$/.test(requested) && requested !== title.dataset.date) {
    notice.textContent = "No events on " + requested + "; showing the nearest day with events.";
    notice.hidden = false;
  }
})();
