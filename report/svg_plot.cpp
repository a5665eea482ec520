#include "report/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace tessel::svg {

std::string escape(const std::string &text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        // Control characters other than tab/newline are not allowed in XML at all.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') out += ' ';
        else out += c;
    }
  }
  return out;
}

std::string palette_color(int i) {
  // Tableau 10: distinct hues of similar weight.
  static const char *const kColors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                        "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  const int n = static_cast<int>(sizeof(kColors) / sizeof(kColors[0]));
  return kColors[((i % n) + n) % n];
}

std::string format_tick(double value) {
  if (value == 0 || std::fabs(value) < 1e-12) return "0";
  char text[32];
  const double magnitude = std::fabs(value);
  if (magnitude >= 1e6 || magnitude < 1e-3) std::snprintf(text, sizeof(text), "%.2g", value);
  else std::snprintf(text, sizeof(text), "%.4g", value);
  return text;
}

namespace {

std::string num(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", v);
  return text;
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
double nice_step(double raw) {
  if (!(raw > 0) || !std::isfinite(raw)) return 1;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  const double fraction = raw / power;
  const double nice = fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10;
  return nice * power;
}

/// Maps data values to pixels along one axis.
struct Scale {
  double lo = 0, hi = 1;
  bool log = false;
  double px0 = 0, px1 = 1;  // pixels of lo and hi
  std::vector<double> ticks;

  double to_px(double v) const {
    double t;
    if (log) t = (std::log10(std::max(v, 1e-300)) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
    else t = (v - lo) / (hi - lo);
    t = std::clamp(t, -0.02, 1.02);  // stray values stay at the edge instead of leaving the chart
    return px0 + t * (px1 - px0);
  }
};

/// The axis's domain and ticks from the data values (non-finite ones ignored; non-positive
/// ones ignored on a log axis).
Scale make_scale(const Axis &axis, std::vector<double> values, double px0, double px1) {
  Scale s;
  s.log = axis.log;
  s.px0 = px0;
  s.px1 = px1;
  values.erase(std::remove_if(values.begin(), values.end(),
                              [&](double v) { return !std::isfinite(v) || (axis.log && v <= 0); }),
               values.end());
  double lo = values.empty() ? (axis.log ? 1 : 0) : *std::min_element(values.begin(), values.end());
  double hi = values.empty() ? (axis.log ? 10 : 1) : *std::max_element(values.begin(), values.end());
  if (axis.min) lo = *axis.min;
  if (axis.max) hi = *axis.max;
  if (axis.log) {
    lo = std::max(lo, 1e-300);
    if (hi <= lo) hi = lo * 10;
    s.lo = lo;
    s.hi = hi;
    s.ticks = log_ticks(lo, hi);
    return s;
  }
  if (hi <= lo) {
    const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.5;
    if (!axis.min) lo -= pad;
    if (!axis.max || hi <= lo) hi = lo + 2 * pad;
  }
  const double step = nice_step((hi - lo) / 5);
  // Round the free ends out to a tick so the data never touches the frame's edge unlabelled.
  if (!axis.min) lo = std::floor(lo / step + 1e-9) * step;
  if (!axis.max) hi = std::ceil(hi / step - 1e-9) * step;
  s.lo = lo;
  s.hi = hi;
  s.ticks = linear_ticks(lo, hi);
  return s;
}

/// Axes, grid, tick labels, axis labels and title of a plot area.
void draw_frame(std::ostringstream &out, const Frame &frame, const Scale &xs, const Scale &ys, const Axis &x,
                const Axis &y) {
  const double left = frame.margin_left, right = frame.width - frame.margin_right;
  const double top = frame.margin_top, bottom = frame.height - frame.margin_bottom;
  const int fs = frame.font_size;
  out << "<rect x='" << num(left) << "' y='" << num(top) << "' width='" << num(right - left) << "' height='"
      << num(bottom - top) << "' fill='#fff' stroke='#bbb'/>";
  for (double t : ys.ticks) {
    const double py = ys.to_px(t);
    out << "<line x1='" << num(left) << "' x2='" << num(right) << "' y1='" << num(py) << "' y2='" << num(py)
        << "' stroke='#e6e6e6'/>";
    out << "<text x='" << num(left - 4) << "' y='" << num(py + fs * 0.35) << "' text-anchor='end' font-size='" << fs
        << "'>" << escape(format_tick(t)) << "</text>";
  }
  for (double t : xs.ticks) {
    const double px = xs.to_px(t);
    out << "<line x1='" << num(px) << "' x2='" << num(px) << "' y1='" << num(top) << "' y2='" << num(bottom)
        << "' stroke='#eee'/>";
    out << "<line x1='" << num(px) << "' x2='" << num(px) << "' y1='" << num(bottom) << "' y2='" << num(bottom + 4)
        << "' stroke='#888'/>";
    out << "<text x='" << num(px) << "' y='" << num(bottom + 4 + fs) << "' text-anchor='middle' font-size='" << fs
        << "'>" << escape(format_tick(t)) << "</text>";
  }
  if (!x.label.empty())
    out << "<text x='" << num((left + right) / 2) << "' y='" << num(bottom + 8 + 2 * fs) << "' text-anchor='middle' font-size='"
        << fs << "'>" << escape(x.label) << "</text>";
  if (!y.label.empty()) {
    const double cx = fs, cy = (top + bottom) / 2;
    out << "<text x='" << num(cx) << "' y='" << num(cy) << "' text-anchor='middle' font-size='" << fs
        << "' transform='rotate(-90 " << num(cx) << " " << num(cy) << ")'>" << escape(y.label) << "</text>";
  }
  if (!frame.title.empty())
    out << "<text x='" << num(left) << "' y='" << num(top - 8) << "' font-size='" << fs + 1 << "' font-weight='bold'>"
        << escape(frame.title) << "</text>";
}

void open_svg(std::ostringstream &out, int width, int height) {
  // No xmlns: inline SVG in HTML needs none, and the page must not name any URL.
  out << "<svg width='" << width << "' height='" << height << "' viewBox='0 0 "
      << width << " " << height << "' font-family='sans-serif' role='img'>";
}

/// Legend entries stacked in a box at (x, y); returns the box height.
double draw_legend(std::ostringstream &out, const std::vector<std::pair<std::string, std::string>> &entries,
                   const std::vector<bool> &dashed, double x, double y, int fs, bool boxed, bool dots = false) {
  if (entries.empty()) return 0;
  size_t longest = 0;
  for (const auto &e : entries) longest = std::max(longest, e.first.size());
  const double line = fs + 4;
  const double width = 30 + longest * fs * 0.56;
  const double height = entries.size() * line + 6;
  if (boxed)
    out << "<rect x='" << num(x) << "' y='" << num(y) << "' width='" << num(width) << "' height='" << num(height)
        << "' fill='#fff' fill-opacity='0.85' stroke='#ccc'/>";
  for (size_t i = 0; i < entries.size(); ++i) {
    const double cy = y + 3 + line * (i + 0.5);
    if (dots)
      out << "<circle cx='" << num(x + 14) << "' cy='" << num(cy) << "' r='4' fill='" << escape(entries[i].second) << "'/>";
    else
      out << "<line x1='" << num(x + 5) << "' x2='" << num(x + 23) << "' y1='" << num(cy) << "' y2='" << num(cy)
          << "' stroke='" << escape(entries[i].second) << "' stroke-width='3'"
          << (i < dashed.size() && dashed[i] ? " stroke-dasharray='5 3'" : "") << "/>";
    out << "<text x='" << num(x + 28) << "' y='" << num(cy + fs * 0.35) << "' font-size='" << fs << "'>"
        << escape(entries[i].first) << "</text>";
  }
  return height;
}

}  // namespace

std::vector<double> linear_ticks(double lo, double hi, int target) {
  std::vector<double> ticks;
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return {lo};
  const double step = nice_step((hi - lo) / std::max(target, 1));
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step)
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
  return ticks;
}

std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> ticks;
  if (!(lo > 0) || !(hi > lo)) return {lo};
  const bool fine = std::log10(hi / lo) < 2;
  for (int e = static_cast<int>(std::floor(std::log10(lo))); e <= static_cast<int>(std::ceil(std::log10(hi))); ++e) {
    const double p = std::pow(10.0, e);
    for (double m : fine ? std::vector<double>{1, 2, 5} : std::vector<double>{1}) {
      const double t = m * p;
      if (t >= lo * (1 - 1e-9) && t <= hi * (1 + 1e-9)) ticks.push_back(t);
    }
  }
  if (ticks.empty()) ticks = {lo, hi};
  return ticks;
}

std::string line_chart(const std::vector<Series> &series, const Axis &x, const Axis &y, const Frame &frame,
                       const LegendOptions &legend) {
  std::vector<double> xv, yv;
  for (const Series &s : series) {
    xv.insert(xv.end(), s.x.begin(), s.x.end());
    yv.insert(yv.end(), s.y.begin(), s.y.end());
  }
  std::vector<std::pair<std::string, std::string>> entries;
  std::vector<bool> dashed;
  for (size_t i = 0; i < series.size(); ++i) {
    if (series[i].label.empty()) continue;
    entries.emplace_back(series[i].label, series[i].color.empty() ? palette_color(static_cast<int>(i)) : series[i].color);
    dashed.push_back(series[i].dashed);
  }
  const bool legend_below = legend.show && !legend.inside && !entries.empty();
  const int legend_height = legend_below ? static_cast<int>(entries.size()) * (frame.font_size + 4) + 10 : 0;
  const int height = frame.height + legend_height;

  std::ostringstream out;
  open_svg(out, frame.width, height);
  const Scale xs = make_scale(x, xv, frame.margin_left, frame.width - frame.margin_right);
  const Scale ys = make_scale(y, yv, frame.height - frame.margin_bottom, frame.margin_top);
  draw_frame(out, frame, xs, ys, x, y);
  for (size_t i = 0; i < series.size(); ++i) {
    const Series &s = series[i];
    const std::string color = s.color.empty() ? palette_color(static_cast<int>(i)) : s.color;
    std::string path;
    bool pen_down = false;
    for (size_t k = 0; k < s.x.size() && k < s.y.size(); ++k) {
      const bool valid = std::isfinite(s.x[k]) && std::isfinite(s.y[k]) && (!x.log || s.x[k] > 0) && (!y.log || s.y[k] > 0);
      if (!valid) {
        pen_down = false;
        continue;
      }
      const double px = xs.to_px(s.x[k]), py = ys.to_px(s.y[k]);
      if (!pen_down) path += "M" + num(px) + " " + num(py);
      else if (s.step) path += "H" + num(px) + "V" + num(py);
      else path += "L" + num(px) + " " + num(py);
      pen_down = true;
    }
    if (path.empty()) continue;
    out << "<path d='" << path << "' fill='none' stroke='" << escape(color) << "' stroke-width='" << num(s.stroke_width)
        << "'" << (s.dashed ? " stroke-dasharray='5 3'" : "") << ">";
    if (!s.label.empty()) out << "<title>" << escape(s.label) << "</title>";
    out << "</path>";
  }
  if (legend.show && !entries.empty()) {
    if (legend.inside) draw_legend(out, entries, dashed, frame.margin_left + 6, frame.margin_top + 6, frame.font_size, true);
    else draw_legend(out, entries, dashed, frame.margin_left, frame.height, frame.font_size, false);
  }
  out << "</svg>";
  return out.str();
}

std::string scatter_chart(const std::vector<ScatterPoint> &points, const Axis &x, const Axis &y, const Frame &frame,
                          const ScatterOptions &options) {
  std::vector<double> xv, yv;
  for (const ScatterPoint &p : points) {
    xv.push_back(p.x);
    yv.push_back(p.y);
  }
  std::ostringstream out;
  open_svg(out, frame.width, frame.height);
  const Scale xs = make_scale(x, xv, frame.margin_left, frame.width - frame.margin_right);
  const Scale ys = make_scale(y, yv, frame.height - frame.margin_bottom, frame.margin_top);
  draw_frame(out, frame, xs, ys, x, y);
  if (options.reference_line && !x.log && !y.log) {
    const auto [slope, intercept] = *options.reference_line;
    out << "<line x1='" << num(xs.to_px(xs.lo)) << "' y1='" << num(ys.to_px(slope * xs.lo + intercept)) << "' x2='"
        << num(xs.to_px(xs.hi)) << "' y2='" << num(ys.to_px(slope * xs.hi + intercept))
        << "' stroke='#333' stroke-dasharray='4 3'/>";
  }
  for (const ScatterPoint &p : points) {
    if (!std::isfinite(p.x) || !std::isfinite(p.y) || (x.log && p.x <= 0) || (y.log && p.y <= 0)) continue;
    out << "<circle cx='" << num(xs.to_px(p.x)) << "' cy='" << num(ys.to_px(p.y)) << "' r='" << num(options.radius)
        << "' fill='" << escape(p.color.empty() ? palette_color(0) : p.color) << "' fill-opacity='" << options.opacity
        << "'>";
    if (!p.title.empty()) out << "<title>" << escape(p.title) << "</title>";
    out << "</circle>";
  }
  std::vector<bool> no_dashes(options.legend.size(), false);
  draw_legend(out, options.legend, no_dashes, frame.margin_left + 6, frame.margin_top + 6, frame.font_size, true, true);
  out << "</svg>";
  return out.str();
}

std::string bar_chart(const std::vector<BarRow> &rows, const Axis &x, const Frame &frame, const BarOptions &options) {
  size_t width_of_values = 0;
  std::vector<double> xv{0};
  for (const BarRow &row : rows) {
    width_of_values = std::max(width_of_values, row.values.size());
    if (options.stacked) {
      double sum = 0;
      for (double v : row.values) sum += std::max(v, 0.0);
      xv.push_back(sum);
    } else {
      for (double v : row.values) xv.push_back(v);
    }
  }
  const int fs = frame.font_size;
  const bool has_legend = !options.series_names.empty();
  // Legend entries flow left to right and wrap at the chart's width.
  std::vector<std::pair<double, int>> legend_at;  // (x, line) per entry
  int legend_lines = 0;
  if (has_legend) {
    double lx = frame.margin_left;
    legend_lines = 1;
    for (const std::string &name : options.series_names) {
      const double w = 30 + name.size() * fs * 0.62;
      if (lx + w > frame.width - frame.margin_right && lx > frame.margin_left) {
        lx = frame.margin_left;
        ++legend_lines;
      }
      legend_at.emplace_back(lx, legend_lines - 1);
      lx += w;
    }
  }
  const int legend_height = legend_lines * (fs + 6) + (has_legend ? 6 : 0);
  const int plot_top = frame.margin_top + legend_height;
  const int height = plot_top + static_cast<int>(rows.size()) * options.row_height + frame.margin_bottom;
  const double left = frame.margin_left + options.label_width;
  const double right = frame.width - frame.margin_right - options.note_width;
  const double bottom = height - frame.margin_bottom;
  auto color = [&](size_t i) {
    return i < options.colors.size() ? options.colors[i] : palette_color(static_cast<int>(i));
  };

  std::ostringstream out;
  open_svg(out, frame.width, height);
  Axis value_axis = x;
  value_axis.log = false;  // bars start at 0
  if (!value_axis.min) value_axis.min = 0.0;
  const Scale xs = make_scale(value_axis, xv, left, right);
  if (!frame.title.empty())
    out << "<text x='" << frame.margin_left << "' y='" << frame.margin_top - 8 << "' font-size='" << fs + 1
        << "' font-weight='bold'>" << escape(frame.title) << "</text>";
  for (size_t i = 0; i < legend_at.size(); ++i) {
    const double lx = legend_at[i].first, ly = frame.margin_top + legend_at[i].second * (fs + 6);
    out << "<rect x='" << num(lx) << "' y='" << num(ly) << "' width='12' height='" << fs << "' fill='" << escape(color(i))
        << "'/>";
    out << "<text x='" << num(lx + 16) << "' y='" << num(ly + fs * 0.85) << "' font-size='" << fs << "'>"
        << escape(options.series_names[i]) << "</text>";
  }
  for (double t : xs.ticks) {
    const double px = xs.to_px(t);
    out << "<line x1='" << num(px) << "' x2='" << num(px) << "' y1='" << plot_top << "' y2='" << num(bottom)
        << "' stroke='#e6e6e6'/>";
    out << "<text x='" << num(px) << "' y='" << num(bottom + 4 + fs) << "' text-anchor='middle' font-size='" << fs << "'>"
        << escape(format_tick(t)) << "</text>";
  }
  out << "<line x1='" << num(left) << "' x2='" << num(left) << "' y1='" << plot_top << "' y2='" << num(bottom)
      << "' stroke='#888'/>";
  if (!x.label.empty())
    out << "<text x='" << num((left + right) / 2) << "' y='" << num(bottom + 8 + 2 * fs) << "' text-anchor='middle' font-size='"
        << fs << "'>" << escape(x.label) << "</text>";

  const size_t max_label_chars = static_cast<size_t>(std::max(4.0, options.label_width / (fs * 0.56)));
  for (size_t r = 0; r < rows.size(); ++r) {
    const BarRow &row = rows[r];
    const double row_top = plot_top + r * options.row_height;
    const double mid = row_top + options.row_height / 2.0;
    std::string label = row.label;
    if (label.size() > max_label_chars) label = label.substr(0, max_label_chars - 1) + "\u2026";
    out << "<text x='" << num(left - 6) << "' y='" << num(mid + fs * 0.35) << "' text-anchor='end' font-size='" << fs
        << "'><title>" << escape(row.label) << "</title>" << escape(label) << "</text>";
    const double inner = options.row_height * 0.78;
    double start = 0;
    for (size_t i = 0; i < row.values.size(); ++i) {
      const double v = std::max(row.values[i], 0.0);
      double x0, x1, y0, h;
      if (options.stacked) {
        x0 = xs.to_px(start);
        x1 = xs.to_px(start + v);
        start += v;
        y0 = mid - inner / 2;
        h = inner;
      } else {
        x0 = xs.to_px(0);
        x1 = xs.to_px(v);
        h = inner / std::max<size_t>(width_of_values, 1);
        y0 = mid - inner / 2 + i * h;
      }
      if (x1 - x0 < 0.05) continue;
      const std::string name = i < options.series_names.size() ? options.series_names[i] + ": " : "";
      out << "<rect x='" << num(x0) << "' y='" << num(y0) << "' width='" << num(x1 - x0) << "' height='" << num(h)
          << "' fill='" << escape(color(i)) << "'" << (options.stacked ? " stroke='#fff' stroke-width='0.5'" : "") << ">"
          << "<title>" << escape(row.label + " — " + name + format_tick(row.values[i])) << "</title></rect>";
    }
    if (!row.note.empty())
      out << "<text x='" << num(right + 6) << "' y='" << num(mid + fs * 0.35) << "' font-size='" << fs << "'>"
          << escape(row.note) << "</text>";
  }
  out << "</svg>";
  return out.str();
}

}  // namespace tessel::svg
