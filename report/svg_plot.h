#pragma once
// A small SVG chart writer for the tuning report: line charts (several series, legend,
// linear or log x), scatter plots and horizontal bar charts (stacked or grouped), with
// axes, ticks and labels. The output is an inline <svg> element: no script, no external
// resources. Every text that reaches the SVG is escaped; hover titles (<title>) stand in
// for tooltips.
#include <optional>
#include <string>
#include <vector>

namespace tessel::svg {

/// &, <, >, " and ' as entities: safe in SVG/HTML text and attribute values.
std::string escape(const std::string &text);

/// The i-th colour of a palette that stays distinguishable for about ten series.
std::string palette_color(int i);

/// A short tick label: "0", "2.5", "1000", "1.2e+06", "0.004".
std::string format_tick(double value);

/// Tick positions between lo and hi: about `target` round numbers (1, 2, 5 x 10^k steps).
std::vector<double> linear_ticks(double lo, double hi, int target = 5);
/// Powers of ten inside [lo, hi] (lo > 0), with 2 and 5 between them when the range spans
/// less than two decades.
std::vector<double> log_ticks(double lo, double hi);

struct Axis {
  std::string label;
  bool log = false;
  std::optional<double> min, max;  // fixed limits; default: the data's range (0 included on linear y)
};

struct Frame {
  int width = 640;
  int height = 360;
  std::string title;  // drawn above the plot area; empty: none
  int margin_left = 64;
  int margin_right = 16;
  int margin_top = 28;
  int margin_bottom = 44;
  int font_size = 12;
};

struct Series {
  std::string label;
  std::vector<double> x, y;  // same length
  std::string color;         // empty: palette_color(index)
  bool dashed = false;
  bool step = false;         // draw as a step function (value holds until the next x)
  double stroke_width = 1.6;
};

struct LegendOptions {
  bool show = true;
  bool inside = true;  // top-left corner of the plot area; false: below the x label (grows the chart)
};

/// Lines over a shared pair of axes.
std::string line_chart(const std::vector<Series> &series, const Axis &x, const Axis &y, const Frame &frame,
                       const LegendOptions &legend = {});

struct ScatterPoint {
  double x = 0, y = 0;
  std::string color;  // empty: palette_color(0)
  std::string title;  // hover text; empty: none
};

struct ScatterOptions {
  double radius = 2.5;
  double opacity = 0.55;
  /// Optional reference line y = slope * x + intercept (e.g. a fitted trend).
  std::optional<std::pair<double, double>> reference_line;
  std::vector<std::pair<std::string, std::string>> legend;  // (label, colour)
};

std::string scatter_chart(const std::vector<ScatterPoint> &points, const Axis &x, const Axis &y, const Frame &frame,
                          const ScatterOptions &options = {});

struct BarRow {
  std::string label;           // left of the bars
  std::vector<double> values;  // one per series (grouped) or per segment (stacked)
  std::string note;            // right of the bars (e.g. "2.1x"); empty: none
};

struct BarOptions {
  bool stacked = false;                   // stacked: one bar per row; grouped: one bar per value
  std::vector<std::string> series_names;  // legend, and each value's hover title
  std::vector<std::string> colors;        // per series; empty: the palette
  int row_height = 22;                    // grouped rows split it between their bars
  int label_width = 180;                  // room for the row labels
  int note_width = 56;
};

/// Horizontal bars, one row per BarRow, values along a linear x axis from 0. The chart's
/// height follows from the row count (frame.height is ignored).
std::string bar_chart(const std::vector<BarRow> &rows, const Axis &x, const Frame &frame, const BarOptions &options);

}  // namespace tessel::svg
