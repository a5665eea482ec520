#include "report/report_html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "report/svg_plot.h"

namespace tessel {

namespace {

using svg::escape;

constexpr const char *kBuiltinColor = "#999999";
constexpr const char *kTunedColor = "#4e79a7";

std::string format(const char *pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof(text), pattern, value);
  return text;
}

/// Milliseconds with about four significant digits.
std::string ms_text(double seconds) {
  const double ms = seconds * 1e3;
  if (ms >= 100) return format("%.1f", ms);
  if (ms >= 1) return format("%.3f", ms);
  if (ms >= 0.01) return format("%.4f", ms);
  return format("%.3g", ms);
}

std::string gflops_text(double gflops) { return gflops >= 100 ? format("%.0f", gflops) : format("%.3g", gflops); }

std::string duration_text(double seconds) {
  const int64_t s = static_cast<int64_t>(std::llround(seconds));
  if (s < 120) return std::to_string(s) + " s";
  if (s < 7200) return std::to_string(s / 60) + " min " + std::to_string(s % 60) + " s";
  return std::to_string(s / 3600) + " h " + std::to_string((s % 3600) / 60) + " min";
}

std::string task_label(const ReportTask &t) {
  return "#" + std::to_string(t.index) + " " + (t.ops.empty() ? t.workload_key : t.ops);
}

/// The deployed time of a task: its best record (never slower than the built-in one, which
/// is a candidate too), else the built-in time.
std::optional<double> tuned_seconds(const ReportTask &t) {
  if (t.best && t.best->median_seconds) return *t.best->median_seconds;
  return t.builtin_seconds;
}

std::string status_breakdown(const std::map<RecordStatus, int64_t> &by_status, bool failures_only) {
  std::string text;
  for (const auto &[status, count] : by_status) {
    if (count == 0 || (failures_only && status == RecordStatus::Ok)) continue;
    text += (text.empty() ? "" : ", ") + std::to_string(count) + " " + to_text(status);
  }
  return text;
}

const char *kStyle = R"css(
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0;color:#222;background:#f6f7f9}
main{max-width:1240px;margin:0 auto;padding:16px 24px 40px}
h1{font-size:22px;margin:8px 0 4px}
h2{font-size:18px;margin:28px 0 6px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:14px;margin:14px 0 4px}
p,li{font-size:13px;line-height:1.45}
.meta{border-collapse:collapse;font-size:13px;margin:6px 0}
.meta th{text-align:left;font-weight:600;padding:2px 14px 2px 0;color:#555;vertical-align:top}
.meta td{padding:2px 0}
.note{background:#fff8e1;border:1px solid #f0d88a;padding:6px 10px;font-size:13px;margin:6px 0;border-radius:3px}
.headline{display:flex;gap:12px;flex-wrap:wrap;margin:10px 0}
.kpi{background:#fff;border:1px solid #ddd;border-radius:4px;padding:8px 12px;min-width:150px}
.kpi b{display:block;font-size:20px}
.kpi span{font-size:12px;color:#666}
.card{background:#fff;border:1px solid #ddd;border-radius:4px;padding:8px;margin:8px 0;overflow-x:auto}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(290px,1fr));gap:8px}
.cell{background:#fff;border:1px solid #ddd;border-radius:4px;padding:4px 6px}
.cell .t{font-size:12px;font-weight:600;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.cell .s{font-size:11px;color:#555}
.caption{font-size:12px;color:#444;max-width:980px}
table.tasks{border-collapse:collapse;font-size:12px;background:#fff;width:100%}
table.tasks th{background:#eef0f3;text-align:right;padding:4px 6px;border-bottom:1px solid #ccc;white-space:nowrap}
table.tasks td{text-align:right;padding:3px 6px;border-top:1px solid #eee;white-space:nowrap}
table.tasks td.l,table.tasks th.l{text-align:left}
table.tasks tr.nest td{border-top:none;padding:0 6px 4px;text-align:left;white-space:normal}
code,pre{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace}
pre{font-size:11.5px;background:#fafafa;border:1px solid #e3e3e3;padding:6px 8px;margin:4px 0;overflow-x:auto;max-height:480px}
details summary{cursor:pointer;font-size:12px;color:#345}
.err{color:#a33}
.muted{color:#888}
)css";

// ---- Header -------------------------------------------------------------------------------

void header(std::ostringstream &out, const ReportData &d) {
  const std::string title = d.model_path.empty() ? "tuning database " + d.db_path : d.model_path;
  out << "<h1>tessel tuning report: " << escape(title) << "</h1>\n";
  out << "<table class='meta'>";
  auto row = [&](const std::string &name, const std::string &value_html) {
    out << "<tr><th>" << name << "</th><td>" << value_html << "</td></tr>";
  };
  row("database", "<code>" + escape(d.db_path) + "</code>");
  if (!d.model_path.empty()) row("model", "<code>" + escape(d.model_path) + "</code>");
  row("target", "<code>" + escape(d.target) + "</code>");
  row("machine", d.machine.empty() ? "<span class='muted'>not recorded</span>" : escape(d.machine));
  row("generated", escape(d.generated_at));
  std::string records = std::to_string(d.records) + " records of " + std::to_string(d.workloads) + " workloads on this target";
  const std::string failures = status_breakdown(d.records_by_status, true);
  records += failures.empty() ? " (none failed)" : " (" + std::to_string(d.records - d.records_by_status.at(RecordStatus::Ok)) +
                                                       " failed: " + failures + ")";
  row("records", escape(records));
  if (!d.first_record_at.empty()) {
    std::string span = d.first_record_at + " to " + d.last_record_at;
    if (d.span_seconds > 0)
      span += " (" + duration_text(d.span_seconds) + "; " + format("%.2f", d.records / d.span_seconds) +
              " records/s over that span, pauses between tuning runs included)";
    row("measured", escape(span));
  }
  out << "</table>\n";
  for (const std::string &note : d.notes) out << "<div class='note'>" << escape(note) << "</div>\n";
}

/// Totals of the model: built-in and tuned latency as the sum of weight x time per task.
struct Totals {
  double before = 0, after = 0;
  int counted = 0, missing = 0;
};

Totals totals(const ReportData &d) {
  Totals t;
  for (const ReportTask &task : d.tasks) {
    const auto tuned = tuned_seconds(task);
    if (!task.builtin_seconds || !tuned) {
      ++t.missing;
      continue;
    }
    t.before += task.weight * *task.builtin_seconds;
    t.after += task.weight * std::min(*tuned, *task.builtin_seconds);
    ++t.counted;
  }
  return t;
}

void headline(std::ostringstream &out, const ReportData &d) {
  const Totals t = totals(d);
  int64_t trials = 0;
  for (const ReportTask &task : d.tasks) trials += task.searched;
  out << "<div class='headline'>";
  auto kpi = [&](const std::string &value, const std::string &label) {
    out << "<div class='kpi'><b>" << escape(value) << "</b><span>" << escape(label) << "</span></div>";
  };
  kpi(std::to_string(d.tasks.size()), d.model_path.empty() ? "workloads" : "tasks in the model");
  kpi(std::to_string(trials), "searched trials of these tasks");
  if (t.counted > 0) {
    kpi(ms_text(t.before) + " ms", "sum of task latencies, built-in schedules");
    kpi(ms_text(t.after) + " ms", "sum of task latencies, best records");
    kpi(format("%.2fx", t.after > 0 ? t.before / t.after : 0.0), "speedup of that sum");
  }
  out << "</div>\n";
}

// ---- 1. Tuning curves ---------------------------------------------------------------------------

std::string task_curve_svg(const ReportTask &t) {
  svg::Frame frame;
  frame.width = 290;
  frame.height = 150;
  frame.margin_left = 44;
  frame.margin_right = 8;
  frame.margin_top = 8;
  frame.margin_bottom = 30;
  frame.font_size = 10;
  const bool gflops = t.flops > 0;
  std::vector<svg::Series> series;
  svg::Series best;
  best.color = kTunedColor;
  best.step = true;
  for (size_t i = 0; i < t.curve.size(); ++i) {
    best.x.push_back(static_cast<double>(i + 1));
    best.y.push_back(t.curve[i]);
  }
  series.push_back(best);
  if (t.builtin_seconds && !t.curve.empty()) {
    const double v = gflops ? t.flops / *t.builtin_seconds / 1e9 : *t.builtin_seconds * 1e3;
    svg::Series builtin;
    builtin.color = kBuiltinColor;
    builtin.dashed = true;
    builtin.stroke_width = 1.2;
    builtin.x = {1, static_cast<double>(std::max<size_t>(t.curve.size(), 2))};
    builtin.y = {v, v};
    series.push_back(builtin);
  }
  // The last trial ends the axis, so the curve fills the width.
  svg::Axis x{"trial", false, 1.0, static_cast<double>(std::max<size_t>(t.curve.size(), 2))};
  svg::Axis y{gflops ? "GFLOP/s" : "ms", false, std::nullopt, std::nullopt};
  if (gflops) y.min = 0.0;
  svg::LegendOptions legend;
  legend.show = false;
  return svg::line_chart(series, x, y, frame, legend);
}

/// The latency a step curve holds after `trials` trials (its last point at or before it).
double curve_value_at(const ModelCurve &curve, double trials) {
  auto after = std::upper_bound(curve.trials.begin(), curve.trials.end(), trials);
  return curve.latency_ms[static_cast<size_t>(after - curve.trials.begin()) - 1];
}

/// This run's model curve and the --compare runs' over it, with their values at round trial
/// counts in a table (the tuning-curve benchmark's checkpoints).
void compared_curves(std::ostringstream &out, const ReportData &d) {
  std::vector<std::pair<std::string, const ModelCurve *>> runs{{d.run_label, &d.model_curve}};
  for (const ComparedCurve &c : d.compared) runs.emplace_back(c.label, &c.curve);
  svg::Frame frame;
  frame.width = 1180;
  frame.height = 300;
  frame.title = "Estimated model latency, run by run";
  std::vector<svg::Series> series;
  double most_trials = 1;
  for (size_t i = 0; i < runs.size(); ++i) {
    svg::Series s;
    s.label = runs[i].first;
    s.color = i == 0 ? kTunedColor : svg::palette_color(static_cast<int>(i));
    s.step = true;
    s.x = runs[i].second->trials;
    s.y = runs[i].second->latency_ms;
    most_trials = std::max(most_trials, s.x.back());
    series.push_back(std::move(s));
  }
  out << "<div class='card'>"
      << svg::line_chart(series, {"searched trials of the model's tasks", false, 0.0, std::nullopt},
                         {"ms", false, 0.0, std::nullopt}, frame)
      << "<table class='tasks'><tr><th class='l'>run</th><th>trials</th><th>start ms</th>";
  std::vector<double> checkpoints;
  for (double c : {50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0})
    if (c <= most_trials) checkpoints.push_back(c);
  for (double c : checkpoints) out << "<th>after " << svg::format_tick(c) << "</th>";
  out << "<th>last ms</th></tr>\n";
  for (const auto &[label, curve] : runs) {
    const double last_trial = curve->trials.back();
    out << "<tr><td class='l'>" << escape(label) << "</td><td>" << svg::format_tick(last_trial) << "</td><td>"
        << format("%.3f", curve->latency_ms.front()) << "</td>";
    for (double c : checkpoints)
      out << "<td>" << (c <= last_trial ? format("%.3f", curve_value_at(*curve, c)) : "") << "</td>";
    out << "<td>" << format("%.3f", curve->latency_ms.back()) << "</td></tr>\n";
  }
  out << "</table><p class='caption'>Each run's sum over the model's tasks of weight &times; best kernel time so far, "
         "from its own database: built-in times as that run measured them, trials in the order it measured them. "
         "Records a database held before the run (another model's tuning of the same task) count as its first trials. "
         "Kernel times only: host-side ops and launch overheads are left out.";
  for (const auto &[label, curve] : runs)
    if (!curve->complete) out << " " << escape(label) << " lacks the built-in time of some tasks: they are missing from its start.";
  out << "</p></div>\n";
}

void curves_section(std::ostringstream &out, const ReportData &d) {
  out << "<h2 id='curves'>1. Tuning curves</h2>\n";
  const ModelCurve &mc = d.model_curve;
  if (!d.compared.empty()) {
    compared_curves(out, d);
  } else if (mc.trials.size() > 1) {
    svg::Frame frame;
    frame.width = 1180;
    frame.height = 250;
    frame.title = d.model_path.empty() ? "Sum of the best latencies of all workloads" : "Estimated model latency";
    svg::Series s;
    s.label = "sum over tasks of weight x best time so far";
    s.color = kTunedColor;
    s.step = true;
    s.x = mc.trials;
    s.y = mc.latency_ms;
    svg::Axis y{"ms", false, 0.0, std::nullopt};
    svg::LegendOptions legend;
    legend.show = false;
    out << "<div class='card'>"
        << svg::line_chart({s}, {"searched trials of these tasks, in the order measured", false, 0.0, std::nullopt}, y,
                           frame, legend)
        << "<p class='caption'>Sum over the " << (d.model_path.empty() ? "workloads" : "model's tasks")
        << " of weight &times; best time so far (the built-in schedule's time until a faster one is found), after each "
           "searched record of these tasks in database order. Kernel times only: it leaves out host-side ops and "
           "launch overheads"
        << (mc.complete ? "" : "; tasks without a built-in record are missing from the start of the curve") << ".</p></div>\n";
  }
  const bool any_gflops =
      std::any_of(d.tasks.begin(), d.tasks.end(), [](const ReportTask &t) { return t.flops > 0; });
  out << "<p class='caption'>Per task: the best " << (any_gflops ? "throughput (GFLOP/s, higher is better)" : "latency (ms, lower is better)")
      << " after each searched trial (solid, a step whenever a faster schedule was measured; failed trials count as "
         "trials) and the built-in schedule (dashed grey).";
  if (any_gflops && !std::all_of(d.tasks.begin(), d.tasks.end(), [](const ReportTask &t) { return t.flops > 0; }))
    out << " Tasks without FLOPs are drawn in ms (lower is better).";
  out << "</p>\n<div class='grid'>\n";
  for (const ReportTask &t : d.tasks) {
    out << "<div class='cell'><div class='t' title='" << escape(t.workload_key + "  " + t.ops) << "'>"
        << escape(task_label(t)) << (t.weight > 1 ? " &times;" + std::to_string(t.weight) : "") << " <span class='muted'>"
        << escape(t.output_type) << "</span></div>";
    if (t.records == 0) {
      out << "<div class='s err'>no records for this target</div></div>\n";
      continue;
    }
    std::string sub = std::to_string(t.searched) + " trials";
    if (t.failed > 0) sub += " (" + std::to_string(t.failed) + " failed)";
    auto value_text = [&](double seconds) {
      return t.flops > 0 ? gflops_text(t.flops / seconds / 1e9) + " GFLOP/s" : ms_text(seconds) + " ms";
    };
    if (t.best && t.best->median_seconds && *t.best->median_seconds > 0) {
      const double best = *t.best->median_seconds;
      if (t.searched == 0) {
        sub += "; built-in " + value_text(best);
      } else if (t.best_is_builtin) {
        sub += "; no searched schedule beat the built-in one (" + value_text(best) + ")";
        if (!t.curve.empty() && std::isfinite(t.curve.back()))
          sub += "; best searched " + (t.flops > 0 ? gflops_text(t.curve.back()) + " GFLOP/s" : ms_text(t.curve.back() / 1e3) + " ms");
      } else {
        sub += "; best " + value_text(best) + " at trial " + std::to_string(t.best_trial);
        if (t.builtin_seconds) sub += ", " + format("%.2fx", *t.builtin_seconds / best) + " vs built-in";
      }
    }
    out << "<div class='s'>" << escape(sub) << "</div>";
    if (t.searched > 0) out << task_curve_svg(t);
    else out << "<div class='s muted'>only the built-in schedule was measured</div>";
    out << "</div>\n";
  }
  out << "</div>\n";
}

// ---- 2. Time split --------------------------------------------------------------------------------

void split_section(std::ostringstream &out, const ReportData &d) {
  out << "<h2 id='split'>2. Where the time goes, before and after tuning</h2>\n";
  const Totals tot = totals(d);
  if (tot.counted == 0) {
    out << "<p class='note'>No task has both a built-in record and a best record: nothing to split.</p>\n";
    return;
  }
  struct Share {
    const ReportTask *task;
    double before, after;
  };
  std::vector<Share> shares;
  for (const ReportTask &t : d.tasks) {
    const auto tuned = tuned_seconds(t);
    if (!t.builtin_seconds || !tuned) continue;
    shares.push_back({&t, t.weight * *t.builtin_seconds * 1e3, t.weight * std::min(*tuned, *t.builtin_seconds) * 1e3});
  }
  std::stable_sort(shares.begin(), shares.end(), [](const Share &a, const Share &b) { return a.before > b.before; });

  // Stacked: the biggest tasks by name, the rest as one segment.
  constexpr size_t kNamed = 9;
  svg::BarOptions stacked;
  stacked.stacked = true;
  stacked.label_width = 110;
  stacked.note_width = 90;
  stacked.row_height = 34;
  svg::BarRow before{"built-in", {}, ms_text(tot.before) + " ms"};
  svg::BarRow after{"tuned", {}, ms_text(tot.after) + " ms"};
  double other_before = 0, other_after = 0;
  for (size_t i = 0; i < shares.size(); ++i) {
    if (i < kNamed) {
      before.values.push_back(shares[i].before);
      after.values.push_back(shares[i].after);
      stacked.series_names.push_back(task_label(*shares[i].task));
      stacked.colors.push_back(svg::palette_color(static_cast<int>(i)));
    } else {
      other_before += shares[i].before;
      other_after += shares[i].after;
    }
  }
  if (shares.size() > kNamed) {
    before.values.push_back(other_before);
    after.values.push_back(other_after);
    stacked.series_names.push_back(std::to_string(shares.size() - kNamed) + " other tasks");
    stacked.colors.push_back("#d0d0d0");
  }
  svg::Frame frame;
  frame.width = 1180;
  frame.margin_left = 8;
  frame.margin_top = 26;
  frame.title = "Sum of weight x task latency";
  out << "<div class='card'>" << svg::bar_chart({before, after}, {"ms", false, 0.0, std::nullopt}, frame, stacked);

  // Grouped: every task's own before/after.
  svg::BarOptions grouped;
  grouped.series_names = {"built-in", "tuned (best record)"};
  grouped.colors = {kBuiltinColor, kTunedColor};
  grouped.row_height = 20;
  grouped.label_width = 230;
  grouped.note_width = 150;
  std::vector<svg::BarRow> rows;
  for (const Share &s : shares) {
    const double share = tot.after > 0 ? 100 * s.after / (tot.after * 1e3) : 0;  // s.after is in ms
    rows.push_back({task_label(*s.task) + (s.task->weight > 1 ? " x" + std::to_string(s.task->weight) : ""),
                    {s.before, s.after},
                    format("%.2fx", s.after > 0 ? s.before / s.after : 0.0) + format(", %.1f%% of tuned", share)});
  }
  frame.title = "Per task: weight x latency";
  out << svg::bar_chart(rows, {"ms", false, 0.0, std::nullopt}, frame, grouped);
  out << "<p class='caption'>Each task's latency (median of the record's timed runs) times its weight (occurrences in "
         "the model), with the built-in schedule and with the best record (the deployed choice; never slower than the "
         "built-in one, which is a candidate too). Sums of kernel times, not a measured end-to-end latency."
      << (tot.missing > 0 ? " " + std::to_string(tot.missing) + " task(s) without a built-in or ok record are left out." : "")
      << "</p></div>\n";
}

// ---- 3. Cost model ----------------------------------------------------------------------------------

void cost_model_section(std::ostringstream &out, const ReportData &d) {
  out << "<h2 id='costmodel'>3. Cost model: predicted vs measured (held out)</h2>\n";
  const PredictionSummary &p = d.prediction;
  if (!p.available) {
    out << "<p class='note'>No held-out evaluation: " << escape(p.note) << ".</p>\n";
    return;
  }
  std::vector<svg::ScatterPoint> points;
  std::set<std::string> report_keys;
  for (const ReportTask &t : d.tasks) report_keys.insert(t.workload_key);
  int tasks_held_out = 0;
  for (const WorkloadPrediction &w : p.workloads) tasks_held_out += report_keys.count(w.workload_key) > 0;
  std::map<std::string, std::string> ops_of;
  for (const WorkloadPrediction &w : p.workloads) ops_of[w.workload_key] = w.ops;
  for (const PredictionPoint &pt : p.points) {
    svg::ScatterPoint s;
    s.x = pt.measured;
    s.y = pt.predicted;
    s.color = pt.seen_in_training ? kTunedColor : "#e15759";
    auto ops = ops_of.find(pt.workload_key);
    s.title = pt.workload_key + (ops != ops_of.end() ? " " + ops->second : "") + ": measured " + format("%.3f", pt.measured) +
              ", score " + format("%.3f", pt.predicted);
    points.push_back(s);
  }
  svg::Frame frame;
  frame.width = 620;
  frame.height = 400;
  frame.title = "Held-out records";
  svg::ScatterOptions options;
  options.legend = {{"workload has training records", kTunedColor}, {"workload unseen in training", "#e15759"}};
  out << "<div class='card'><div style='display:flex;gap:16px;flex-wrap:wrap;align-items:flex-start'>"
      << svg::scatter_chart(points, {"measured throughput / best of its workload", false, 0.0, 1.0},
                            {"predicted score - workload mean", false, std::nullopt, std::nullopt}, frame, options);
  out << "<div style='max-width:540px'><div class='headline'>";
  out << "<div class='kpi'><b>" << format("%.3f", p.pairwise_accuracy) << "</b><span>pairwise ranking accuracy<br>mean of "
      << p.pairwise_workloads << " workloads</span></div>";
  out << "<div class='kpi'><b>" << format("%.3f", p.spearman) << "</b><span>Spearman correlation<br>mean of "
      << p.spearman_workloads << " workloads</span></div></div>";
  out << "<p class='caption'>The target's " << p.feature_records
      << " ok records that carry cost-model features, in the order they were measured: the cost model (the tuner's "
         "objective and settings) is trained on the first "
      << p.train_records << " (" << format("%.0f", 100.0 * p.train_records / p.feature_records) << "%) and scores the last "
      << p.test_records << ". Every record of the target counts, whichever model it was tuned for. x: the record's "
         "throughput divided by the best throughput of its workload among all "
      << p.feature_records
      << " records (1 = that best). y: the predicted score minus the mean score of the workload's held-out records "
         "(rank:pairwise scores only order candidates of one workload). Pairwise ranking accuracy: within each "
         "workload, the fraction of held-out pairs with different measured throughput that the scores order the same "
         "way (0.5 = random), averaged over the "
      << p.pairwise_workloads << " workloads that have such a pair (" << p.pairs
      << " pairs in all). Spearman: rank correlation of score and throughput within each workload with at least 3 "
         "held-out records, averaged over those "
      << p.spearman_workloads << ". " << p.unseen_workloads << " of the " << p.workloads.size()
      << " held-out workloads have no training record; " << tasks_held_out << " of them are tasks of this report. The held-out records are the tuner's own picks (chosen with a "
         "model trained on the records before them), not random schedules. Training took "
      << format("%.1f", p.train_seconds) << " s.</p>";
  out << "</div>";
  out << "<details><summary>per workload</summary><table class='tasks'><tr><th class='l'>workload</th><th class='l'>ops</th>"
         "<th class='l'>task here</th><th>held out</th><th>in training</th><th>pairwise</th><th>Spearman</th></tr>";
  std::map<std::string, int> task_index;
  for (const ReportTask &t : d.tasks) task_index[t.workload_key] = t.index;
  for (const WorkloadPrediction &w : p.workloads) {
    auto index = task_index.find(w.workload_key);
    out << "<tr><td class='l'><code>" << escape(w.workload_key) << "</code></td><td class='l'>" << escape(w.ops)
        << "</td><td class='l'>" << (index != task_index.end() ? "#" + std::to_string(index->second) : "&ndash;")
        << "</td><td>" << w.points << "</td><td>" << (w.seen_in_training ? "yes" : "no") << "</td><td>"
        << (w.pairwise_accuracy ? format("%.3f", *w.pairwise_accuracy) : "&ndash;") << "</td><td>"
        << (w.spearman ? format("%.3f", *w.spearman) : "&ndash;") << "</td></tr>";
  }
  out << "</table></details></div>\n";
}

// ---- 4. Tasks ---------------------------------------------------------------------------------------

void tasks_section(std::ostringstream &out, const ReportData &d) {
  out << "<h2 id='tasks'>4. Tasks and their best schedules</h2>\n";
  const Totals tot = totals(d);
  out << "<div class='card'><table class='tasks'><tr><th>#</th><th class='l'>workload</th><th class='l'>ops</th>"
         "<th class='l'>output</th><th>weight</th><th>MFLOP</th><th>trials</th><th>failed</th><th>built-in ms</th>"
         "<th>best ms</th><th>speedup</th><th>GFLOP/s</th><th>best at</th><th>share</th></tr>\n";
  bool opened_one = false;
  for (const ReportTask &t : d.tasks) {
    const auto tuned = tuned_seconds(t);
    out << "<tr><td>" << t.index << "</td><td class='l'><code>" << escape(t.workload_key) << "</code></td><td class='l'>"
        << escape(t.ops) << "</td><td class='l'>" << escape(t.output_type) << "</td><td>" << t.weight << "</td><td>"
        << (t.flops > 0 ? format(t.flops >= 1e4 ? "%.2f" : "%.3g", t.flops / 1e6) : "&ndash;") << "</td>";
    if (t.records == 0) {
      out << "<td colspan='8' class='l err'>no records for this target</td></tr>\n";
      continue;
    }
    const std::string failures = status_breakdown(t.records_by_status, true);
    out << "<td>" << t.searched << "</td><td title='" << escape(failures) << "'>" << t.failed << "</td><td>"
        << (t.builtin_seconds ? ms_text(*t.builtin_seconds) : "&ndash;") << "</td><td>"
        << (tuned ? ms_text(*tuned) : "&ndash;") << "</td><td>"
        << (t.builtin_seconds && tuned && *tuned > 0 ? format("%.2fx", *t.builtin_seconds / *tuned) : "&ndash;")
        << "</td><td>" << (t.flops > 0 && tuned && *tuned > 0 ? gflops_text(t.flops / *tuned / 1e9) : "&ndash;")
        << "</td><td>" << (t.best_is_builtin ? "built-in" : t.best_trial > 0 ? std::to_string(t.best_trial) : "&ndash;")
        << "</td><td>"
        << (t.builtin_seconds && tuned && tot.after > 0
                ? format("%.1f%%", 100 * t.weight * std::min(*tuned, *t.builtin_seconds) / tot.after)
                : "&ndash;")
        << "</td></tr>\n";
    // The best schedule, as a loop nest.
    out << "<tr class='nest'><td></td><td colspan='13'>";
    if (!t.best) {
      out << "<span class='muted'>no ok record: every measurement failed";
      if (!failures.empty()) out << " (" << escape(failures) << ")";
      out << "</span>";
    } else if (t.best->schedule_text.empty()) {
      out << "<span class='muted'>best: built-in schedule</span>";
    } else if (!t.loop_nest.empty()) {
      const int lines = static_cast<int>(std::count(t.loop_nest.begin(), t.loop_nest.end(), '\n'));
      out << "<details" << (opened_one ? "" : " open") << "><summary>best schedule as a loop nest (" << lines
          << " lines; schedule hash <code>" << escape(t.best->schedule_hash) << "</code>)</summary><pre>"
          << escape(t.loop_nest) << "</pre><details><summary>schedule text</summary><pre>" << escape(t.best->schedule_text)
          << "</pre></details></details>";
      opened_one = true;
    } else {
      out << "<details><summary class='err'>loop nest unavailable: " << escape(t.loop_nest_error)
          << "</summary><pre>" << escape(t.best->schedule_text) << "</pre></details>";
    }
    if (!t.errors.empty()) {
      out << "<details><summary class='err'>" << t.failed << " failed record" << (t.failed == 1 ? "" : "s") << ": "
          << escape(failures) << "</summary><pre>";
      constexpr size_t kShown = 8;
      for (size_t i = 0; i < t.errors.size() && i < kShown; ++i)
        out << t.errors[i].second << " x " << escape(t.errors[i].first) << "\n";
      if (t.errors.size() > kShown) out << "... and " << t.errors.size() - kShown << " other messages\n";
      out << "</pre></details>";
    }
    out << "</td></tr>\n";
  }
  out << "</table><p class='caption'>weight: occurrences in the model. trials: searched records (the built-in "
         "schedule's record not counted). best ms: the fastest ok record (the built-in schedule is a candidate too). "
         "best at: the trial that measured it. share: part of the tuned sum of weight &times; latency.</p></div>\n";
}

}  // namespace

std::string render_report_html(const ReportData &data) {
  std::ostringstream out;
  const std::string title = data.model_path.empty() ? data.db_path : data.model_path;
  out << "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><meta name='viewport' "
         "content='width=device-width,initial-scale=1'><title>tessel report: "
      << escape(title) << "</title><style>" << kStyle << "</style></head>\n<body><main>\n";
  header(out, data);
  headline(out, data);
  out << "<p style='font-size:13px'>Sections: <a href='#curves'>1. tuning curves</a> &middot; <a href='#split'>2. time "
         "split</a> &middot; <a href='#costmodel'>3. cost model</a> &middot; <a href='#tasks'>4. tasks and loop "
         "nests</a></p>\n";
  curves_section(out, data);
  split_section(out, data);
  cost_model_section(out, data);
  tasks_section(out, data);
  out << "</main></body></html>\n";
  return out.str();
}

}  // namespace tessel
