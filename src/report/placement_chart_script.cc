#include "report/scripts.h"

namespace tensormem::report_internal {

// Blocks at least kMinPx wide and tall are drawn as <rect> (at most kMaxRects,
// the largest first); the rest are summed into a grid of kCell-pixel cells via
// a 2-D difference array, so a redraw is O(buffers + cells) whatever the zoom.
const char kPlacementChartScript[] = R"JS(
tm.placementChart = function (root) {
  var W = 960, H = 420, ML = 78, MR = 12, MT = 10, MB = 34;
  var kMinPx = 2, kMaxRects = 4000, kCell = 4, kLevels = 8;
  var data = JSON.parse(root.querySelector('script.tm-data').textContent);
  var n = data.size.length;
  var lower = Float64Array.from(data.lower), upper = Float64Array.from(data.upper);
  var offset = Float64Array.from(data.offset), size = Float64Array.from(data.size);
  var tMin = Infinity, tMax = -Infinity, aMax = 1, sMin = Infinity, sMax = 1;
  for (var i = 0; i < n; i++) {
    if (lower[i] < tMin) tMin = lower[i];
    if (upper[i] > tMax) tMax = upper[i];
    if (offset[i] + size[i] > aMax) aMax = offset[i] + size[i];
    if (size[i] < sMin) sMin = size[i];
    if (size[i] > sMax) sMax = size[i];
  }
  if (n === 0) { tMin = 0; tMax = 1; sMin = 1; }
  var logMin = Math.log(Math.max(sMin, 1)), logMax = Math.log(Math.max(sMax, 1));
  function color(bytes) {
    var f = logMax > logMin ? (Math.log(Math.max(bytes, 1)) - logMin) / (logMax - logMin) : 0.5;
    return 'hsl(' + (220 - 220 * f).toFixed(0) + ',70%,55%)';
  }
  var view = {t0: tMin, t1: tMax, a0: 0, a1: aMax};
  var svg = root.querySelector('svg.tm-placement');
  svg.setAttribute('viewBox', '0 0 ' + (ML + W + MR) + ' ' + (MT + H + MB));
  var clipId = root.id + '-clip';
  var defs = tm.el('defs', {}, svg);
  tm.el('rect', {x: 0, y: 0, width: W, height: H}, tm.el('clipPath', {id: clipId}, defs));
  var axes = tm.el('g', {transform: 'translate(' + ML + ',' + MT + ')'}, svg);
  var plot = tm.el('g', {transform: 'translate(' + ML + ',' + MT + ')',
                         'clip-path': 'url(#' + clipId + ')'}, svg);
  var selection = tm.el('rect', {class: 'tm-selection', fill: 'rgba(0,0,0,0.1)',
                                 stroke: '#333', 'stroke-dasharray': '3', visibility: 'hidden'}, svg);
  var info = root.querySelector('.tm-info'), tooltip = root.querySelector('.tm-tooltip');
  var fromInput = root.querySelector('input.tm-from'), toInput = root.querySelector('input.tm-to');

  function drawAxes(sx, sy) {
    tm.clear(axes);
    tm.ticks(view.t0, view.t1, 10).forEach(function (t) {
      var x = (t - view.t0) * sx;
      tm.el('line', {x1: x, x2: x, y1: 0, y2: H, class: 'tm-grid'}, axes);
      tm.el('text', {x: x, y: H + 14, 'text-anchor': 'middle', class: 'tm-axis'}, axes)
          .textContent = String(Math.round(t * 100) / 100);
    });
    tm.byteTicks(view.a0, view.a1, 8).forEach(function (a) {
      var y = H - (a - view.a0) * sy;
      tm.el('line', {x1: 0, x2: W, y1: y, y2: y, class: 'tm-grid'}, axes);
      tm.el('text', {x: -4, y: y + 4, 'text-anchor': 'end', class: 'tm-axis'}, axes)
          .textContent = tm.bytes(a);
    });
    tm.el('text', {x: W / 2, y: H + 30, 'text-anchor': 'middle', class: 'tm-axis'}, axes)
        .textContent = data.time_label;
    tm.el('rect', {x: 0, y: 0, width: W, height: H, fill: 'none', stroke: '#999'}, axes);
  }

  function draw() {
    var started = performance.now();
    var sx = W / (view.t1 - view.t0), sy = H / (view.a1 - view.a0);
    drawAxes(sx, sy);
    tm.clear(plot);
    var gw = Math.ceil(W / kCell), gh = Math.ceil(H / kCell);
    var diff = new Float32Array((gw + 1) * (gh + 1));
    var rects = [], visible = 0, aggregated = 0;
    var x0s = new Float32Array(n), y0s = new Float32Array(n);
    var ws = new Float32Array(n), hs = new Float32Array(n);
    function aggregate(i) {
      var x0 = x0s[i], y0 = y0s[i], w = ws[i], h = hs[i];
      var cx0 = Math.min(gw - 1, Math.floor(x0 / kCell));
      var cx1 = Math.min(gw - 1, Math.floor(Math.max(x0, x0 + w - 1e-6) / kCell));
      var cy0 = Math.min(gh - 1, Math.floor(y0 / kCell));
      var cy1 = Math.min(gh - 1, Math.floor(Math.max(y0, y0 + h - 1e-6) / kCell));
      var d = (cx1 > cx0 ? 1 : w / kCell) * (cy1 > cy0 ? 1 : h / kCell);
      diff[cy0 * (gw + 1) + cx0] += d;
      diff[cy0 * (gw + 1) + cx1 + 1] -= d;
      diff[(cy1 + 1) * (gw + 1) + cx0] -= d;
      diff[(cy1 + 1) * (gw + 1) + cx1 + 1] += d;
      aggregated++;
    }
    for (var i = 0; i < n; i++) {
      if (upper[i] <= view.t0 || lower[i] >= view.t1 ||
          offset[i] + size[i] <= view.a0 || offset[i] >= view.a1) continue;
      visible++;
      var x0 = (Math.max(lower[i], view.t0) - view.t0) * sx;
      var x1 = (Math.min(upper[i], view.t1) - view.t0) * sx;
      var y0 = H - (Math.min(offset[i] + size[i], view.a1) - view.a0) * sy;
      var y1 = H - (Math.max(offset[i], view.a0) - view.a0) * sy;
      x0s[i] = x0; y0s[i] = y0; ws[i] = x1 - x0; hs[i] = y1 - y0;
      if (ws[i] >= kMinPx && hs[i] >= kMinPx) rects.push(i); else aggregate(i);
    }
    if (rects.length > kMaxRects) {
      rects.sort(function (p, q) { return ws[q] * hs[q] - ws[p] * hs[p]; });
      rects.splice(kMaxRects).forEach(aggregate);
    }
    // Prefix sums turn the difference array into per-cell coverage.
    var paths = [];
    for (var l = 0; l < kLevels; l++) paths.push([]);
    var cells = 0;
    for (var cy = 0; cy <= gh; cy++) {
      for (var cx = 0; cx <= gw; cx++) {
        var k = cy * (gw + 1) + cx;
        if (cx > 0) diff[k] += diff[k - 1];
        if (cy > 0) diff[k] += diff[k - gw - 1];
        if (cx > 0 && cy > 0) diff[k] -= diff[k - gw - 2];
      }
    }
    for (var cy = 0; cy < gh; cy++) {
      for (var cx = 0; cx < gw; cx++) {
        var coverage = diff[cy * (gw + 1) + cx];
        if (coverage <= 1e-4) continue;
        var level = Math.min(kLevels - 1, Math.floor(Math.min(1, coverage) * kLevels));
        paths[level].push('M' + cx * kCell + ' ' + cy * kCell + 'h' + kCell + 'v' + kCell +
                          'h-' + kCell + 'z');
        cells++;
      }
    }
    paths.forEach(function (parts, level) {
      if (parts.length === 0) return;
      tm.el('path', {d: parts.join(''), fill: '#555', 'fill-opacity': (level + 1) / kLevels,
                     class: 'tm-aggregate'}, plot);
    });
    rects.forEach(function (i) {
      tm.el('rect', {x: x0s[i], y: y0s[i], width: ws[i], height: hs[i], fill: color(size[i]),
                     stroke: '#0003', 'stroke-width': 0.5, class: 'tm-block'}, plot);
    });
    if (data.peak_live > view.a0 && data.peak_live < view.a1) {
      var py = H - (data.peak_live - view.a0) * sy;
      tm.el('line', {x1: 0, x2: W, y1: py, y2: py, stroke: '#c00', 'stroke-dasharray': '6 3',
                     class: 'tm-peak-line'}, plot);
      tm.el('text', {x: W - 4, y: py - 3, 'text-anchor': 'end', fill: '#c00', class: 'tm-axis'},
            plot).textContent = 'peak live ' + tm.bytes(data.peak_live);
    }
    fromInput.value = view.t0; toInput.value = view.t1;
    info.textContent = visible + ' of ' + n + ' buffers in view: ' + rects.length + ' drawn, ' +
        aggregated + ' aggregated into ' + cells + ' cells; time [' + view.t0 + ', ' + view.t1 +
        '), addresses [' + tm.bytes(view.a0) + ', ' + tm.bytes(view.a1) + ')';
    root.dataset.visible = visible; root.dataset.drawn = rects.length;
    root.dataset.aggregated = aggregated;
    root.dataset.renderMs = Math.round(performance.now() - started);
  }

  function toData(p) {
    return {t: view.t0 + (p.x - ML) / W * (view.t1 - view.t0),
            a: view.a0 + (H - (p.y - MT)) / H * (view.a1 - view.a0)};
  }
  var pending = null;
  function hover() {
    var e = pending; pending = null;
    var p = tm.svgPoint(svg, e), d = toData(p);
    var hit = -1;
    for (var i = 0; i < n; i++) {
      if (lower[i] <= d.t && d.t < upper[i] && offset[i] <= d.a && d.a < offset[i] + size[i]) {
        hit = i; break;
      }
    }
    if (hit < 0 || p.x < ML || p.x > ML + W) { tooltip.style.display = 'none'; return; }
    tooltip.textContent = 'id ' + data.id[hit] + '\nsize ' + tm.bytes(size[hit]) + ' (' +
        size[hit] + ' B)\nlifetime [' + lower[hit] + ', ' + upper[hit] + ')\noffset ' +
        offset[hit] + ' (' + tm.bytes(offset[hit]) + ')';
    var box = root.querySelector('.tm-chart-box').getBoundingClientRect();
    tooltip.style.left = (e.clientX - box.left + 14) + 'px';
    tooltip.style.top = (e.clientY - box.top + 14) + 'px';
    tooltip.style.display = 'block';
  }
  var dragStart = null;
  svg.addEventListener('mousemove', function (e) {
    if (dragStart) {
      var p = tm.svgPoint(svg, e);
      selection.setAttribute('x', Math.min(p.x, dragStart.x));
      selection.setAttribute('y', Math.min(p.y, dragStart.y));
      selection.setAttribute('width', Math.abs(p.x - dragStart.x));
      selection.setAttribute('height', Math.abs(p.y - dragStart.y));
      selection.setAttribute('visibility', 'visible');
      return;
    }
    if (pending === null) requestAnimationFrame(hover);
    pending = e;
  });
  svg.addEventListener('mouseleave', function () { tooltip.style.display = 'none'; });
  svg.addEventListener('mousedown', function (e) { dragStart = tm.svgPoint(svg, e); });
  window.addEventListener('mouseup', function (e) {
    if (!dragStart) return;
    var p = tm.svgPoint(svg, e), start = dragStart;
    dragStart = null;
    selection.setAttribute('visibility', 'hidden');
    if (Math.abs(p.x - start.x) < 5 || Math.abs(p.y - start.y) < 5) return;
    var a = toData(start), b = toData(p);
    view = {t0: Math.max(tMin, Math.min(a.t, b.t)), t1: Math.min(tMax, Math.max(a.t, b.t)),
            a0: Math.max(0, Math.min(a.a, b.a)), a1: Math.min(aMax, Math.max(a.a, b.a))};
    draw();
  });
  svg.addEventListener('wheel', function (e) {
    e.preventDefault();
    var d = toData(tm.svgPoint(svg, e)), factor = e.deltaY < 0 ? 0.8 : 1.25;
    view.t0 = Math.max(tMin, d.t - (d.t - view.t0) * factor);
    view.t1 = Math.min(tMax, d.t + (view.t1 - d.t) * factor);
    if (view.t1 - view.t0 < 1e-9) view.t1 = view.t0 + 1;
    draw();
  }, {passive: false});
  root.querySelector('button.tm-apply').addEventListener('click', function () {
    var from = Number(fromInput.value), to = Number(toInput.value);
    if (!(to > from)) { info.textContent = 'time range: "to" must be greater than "from"'; return; }
    view.t0 = from; view.t1 = to;
    draw();
  });
  root.querySelector('button.tm-reset').addEventListener('click', function () {
    view = {t0: tMin, t1: tMax, a0: 0, a1: aMax};
    draw();
  });
  draw();
};
)JS";

}  // namespace tensormem::report_internal
