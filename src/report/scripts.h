// Inline CSS and JavaScript shared by every tensormem HTML report.
#ifndef TENSORMEM_REPORT_SCRIPTS_H_
#define TENSORMEM_REPORT_SCRIPTS_H_

namespace tensormem::report_internal {

extern const char kPageStyle[];
// Helpers every chart script uses (SVG element creation, byte formatting,
// ticks).
extern const char kCommonScript[];
// Defines tmPlacementChart(root): draws one `.tm-placement-chart` element.
extern const char kPlacementChartScript[];
// Defines tmTimelineChart(root): draws one `.tm-timeline-chart` element.
extern const char kTimelineChartScript[];

}  // namespace tensormem::report_internal

#endif  // TENSORMEM_REPORT_SCRIPTS_H_
