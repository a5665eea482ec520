#pragma once
// The tuning report as one self-contained HTML page: inline CSS and inline SVG charts, no
// script and no URL of any kind, so it opens the same offline, in a mail attachment or in
// a CI artifact viewer. Every string that came from the database or the model is escaped.
#include <string>

#include "report/report_data.h"

namespace tessel {

/// The page: header (database, target, machine, date, totals), then (1) tuning curves,
/// (2) the time split before and after tuning, (3) the cost model's held-out predictions,
/// (4) the tasks with their best schedules as loop nests.
std::string render_report_html(const ReportData &data);

}  // namespace tessel
