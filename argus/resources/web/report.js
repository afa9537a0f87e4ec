// The frontier report's interactive Pareto plot (optimizers/report.py): draws the Plotly figure of the JSON
// block #pareto-figure with the inlined plotly.js, and on a click on a member's point opens that member's
// prompt diff (the details element #diff-KEY), scrolls to it and marks it and the member's lineage entry
// (#lineage-KEY). KEY is the point's customdata; grey candidates have none.
(function () {
  'use strict';
  var holder = document.getElementById('pareto-plot');
  var block = document.getElementById('pareto-figure');
  if (!holder || !block || !window.Plotly) return;
  var fig = JSON.parse(block.textContent);

  function showMember(key) {
    document.querySelectorAll('.selected').forEach(function (el) { el.classList.remove('selected'); });
    var entry = document.getElementById('lineage-' + key);
    if (entry) entry.classList.add('selected');
    var diff = document.getElementById('diff-' + key);
    if (diff) {
      diff.open = true;
      diff.classList.add('selected');
      diff.scrollIntoView({block: 'start'});
    }
  }

  Plotly.newPlot(holder, fig.data, fig.layout, fig.config).then(function () {
    holder.on('plotly_click', function (ev) {
      var point = ev.points && ev.points[0];
      if (point && typeof point.customdata === 'string') showMember(point.customdata);
    });
    holder.setAttribute('data-ready', 'true');
  });
})();
