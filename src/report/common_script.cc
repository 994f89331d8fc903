#include "report/scripts.h"

namespace tensormem::report_internal {

const char kPageStyle[] = R"CSS(
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; max-width: 1100px; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f0f0f0; } td:first-child, th:first-child { text-align: left; }
pre { background: #f7f7f7; padding: 0.6em; overflow-x: auto; font-size: 0.85em; }
.tm-controls { margin: 0.4em 0; font-size: 0.9em; }
.tm-controls input { width: 8em; }
.tm-info { font-size: 0.85em; color: #555; margin-left: 1em; }
.tm-chart-box { position: relative; }
.tm-chart-box svg { width: 100%; height: auto; border: 1px solid #ddd; user-select: none; }
.tm-tooltip { position: absolute; pointer-events: none; background: rgba(255,255,255,0.95);
  border: 1px solid #999; padding: 3px 6px; font-size: 0.8em; display: none; white-space: pre; }
.tm-axis { font-size: 11px; fill: #444; } .tm-grid { stroke: #eee; }
.tm-legend { font-size: 0.8em; color: #555; }
)CSS";

const char kCommonScript[] = R"JS(
var tm = window.tm || {};
window.tm = tm;
tm.SVGNS = 'http://www.w3.org/2000/svg';
tm.el = function (tag, attrs, parent) {
  var e = document.createElementNS(tm.SVGNS, tag);
  for (var k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
};
tm.bytes = function (b) {
  var units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0;
  var v = b;
  while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return i === 0 ? Math.round(v) + 'B' : v.toFixed(2) + units[i];
};
// About `count` round tick values covering [lo, hi].
tm.ticks = function (lo, hi, count) {
  var span = hi - lo;
  if (!(span > 0)) return [lo];
  var step = Math.pow(10, Math.floor(Math.log10(span / count)));
  var err = count / span * step;
  if (err <= 0.15) step *= 10; else if (err <= 0.35) step *= 5; else if (err <= 0.75) step *= 2;
  var out = [];
  for (var v = Math.ceil(lo / step) * step; v <= hi + 1e-9 * span; v += step) out.push(v);
  return out;
};
// Ticks on a byte axis: steps are powers of two, so labels read 512.00MiB, 1.00GiB.
tm.byteTicks = function (lo, hi, count) {
  var span = hi - lo;
  if (!(span > 0)) return [lo];
  var step = Math.pow(2, Math.ceil(Math.log2(span / count)));
  var out = [];
  for (var v = Math.ceil(lo / step) * step; v <= hi; v += step) out.push(v);
  return out;
};
tm.clear = function (node) { while (node.firstChild) node.removeChild(node.firstChild); };
tm.svgPoint = function (svg, event) {
  var pt = svg.createSVGPoint();
  pt.x = event.clientX; pt.y = event.clientY;
  return pt.matrixTransform(svg.getScreenCTM().inverse());
};
)JS";

}  // namespace tensormem::report_internal
