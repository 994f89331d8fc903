#include "report/scripts.h"

namespace tensormem::report_internal {

// The C++ side already decimates series to a few thousand points (keeping
// each bucket's maximum), so one <polyline> per series stays cheap.
const char kTimelineChartScript[] = R"JS(
tm.timelineChart = function (root) {
  var W = 960, H = 260, ML = 78, MR = 12, MT = 10, MB = 34;
  var colors = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd'];
  var data = JSON.parse(root.querySelector('script.tm-data').textContent);
  var svg = root.querySelector('svg.tm-timeline');
  svg.setAttribute('viewBox', '0 0 ' + (ML + W + MR) + ' ' + (MT + H + MB));
  var g = tm.el('g', {transform: 'translate(' + ML + ',' + MT + ')'}, svg);
  var xs = data.x, n = xs.length;
  var x0 = n ? xs[0] : 0, x1 = n > 1 ? xs[n - 1] : x0 + 1, yMax = 1;
  data.series.forEach(function (s) { s.values.forEach(function (v) { if (v > yMax) yMax = v; }); });
  yMax *= 1.05;
  var sx = W / (x1 - x0), sy = H / yMax;
  tm.ticks(x0, x1, 10).forEach(function (t) {
    var x = (t - x0) * sx;
    tm.el('line', {x1: x, x2: x, y1: 0, y2: H, class: 'tm-grid'}, g);
    tm.el('text', {x: x, y: H + 14, 'text-anchor': 'middle', class: 'tm-axis'}, g).textContent =
        String(t);
  });
  tm.byteTicks(0, yMax, 6).forEach(function (v) {
    var y = H - v * sy;
    tm.el('line', {x1: 0, x2: W, y1: y, y2: y, class: 'tm-grid'}, g);
    tm.el('text', {x: -4, y: y + 4, 'text-anchor': 'end', class: 'tm-axis'}, g).textContent =
        tm.bytes(v);
  });
  tm.el('text', {x: W / 2, y: H + 30, 'text-anchor': 'middle', class: 'tm-axis'}, g).textContent =
      data.x_label;
  tm.el('rect', {x: 0, y: 0, width: W, height: H, fill: 'none', stroke: '#999'}, g);
  var legend = root.querySelector('.tm-legend');
  data.series.forEach(function (s, k) {
    var points = [];
    for (var i = 0; i < n; i++) {
      points.push(((xs[i] - x0) * sx).toFixed(1) + ',' + (H - s.values[i] * sy).toFixed(1));
    }
    tm.el('polyline', {points: points.join(' '), fill: 'none', stroke: colors[k % colors.length],
                       'stroke-width': 1.5, class: 'tm-series', 'data-name': s.name}, g);
    var item = document.createElement('span');
    item.style.color = colors[k % colors.length];
    item.textContent = '\u25a0 ' + s.name + '   ';
    legend.appendChild(item);
  });
  if (data.peak_x !== null && data.peak_x !== undefined) {
    var px = (data.peak_x - x0) * sx, py = H - data.peak_value * sy;
    tm.el('line', {x1: px, x2: px, y1: 0, y2: H, stroke: '#c00', 'stroke-dasharray': '4 3',
                   class: 'tm-peak'}, g);
    tm.el('circle', {cx: px, cy: py, r: 4, fill: '#c00'}, g);
    tm.el('text', {x: Math.min(px + 6, W - 150), y: 14, fill: '#c00', class: 'tm-axis tm-peak-label'},
          g).textContent = 'peak ' + data.series[0].name + ' ' + tm.bytes(data.peak_value) +
        ' at ' + data.x_label + ' ' + data.peak_x;
  }
  var tooltip = root.querySelector('.tm-tooltip');
  svg.addEventListener('mousemove', function (e) {
    var p = tm.svgPoint(svg, e), x = x0 + (p.x - ML) / sx;
    if (n === 0 || p.x < ML || p.x > ML + W) { tooltip.style.display = 'none'; return; }
    var lo = 0, hi = n - 1;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (xs[mid] < x) lo = mid + 1; else hi = mid; }
    var lines = [data.x_label + ' ' + xs[lo]];
    data.series.forEach(function (s) { lines.push(s.name + ' ' + tm.bytes(s.values[lo])); });
    tooltip.textContent = lines.join('\n');
    var box = root.querySelector('.tm-chart-box').getBoundingClientRect();
    tooltip.style.left = (e.clientX - box.left + 14) + 'px';
    tooltip.style.top = (e.clientY - box.top + 14) + 'px';
    tooltip.style.display = 'block';
  });
  svg.addEventListener('mouseleave', function () { tooltip.style.display = 'none'; });
  root.dataset.points = n;
};
)JS";

}  // namespace tensormem::report_internal
