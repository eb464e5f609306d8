// The Pareto chart of `lowp search`.
#include "sweep/report_pareto.hpp"

#include <ostream>

#include "report/svg.hpp"
#include "report/text.hpp"

namespace lowp::accuracy {

void write_pareto_svg(std::ostream& out, const std::vector<ParetoPoint>& pts, std::string_view model) {
  using report::fixed;
  using Marker = report::XySeries::Marker;
  report::XyChart c;
  c.title = "lowp search: " + report::model_title(model) + ", KLD against bits per weight";
  c.x = {"bits per weight (scales included)", false};
  c.note = "Filled: measured on the held-out text, with +-1 standard error bars; hollow: predicted from the calibration "
           "text (the sum of each tensor's KLD alone). Lower left is better.";
  report::XyPanel p;
  p.y = {"mean KLD from fp32 (nats/token, log scale)", true};
  const std::string blue(report::series_colour(0)), orange(report::series_colour(1)), green(report::series_colour(2));
  // Series: searched measured, searched predicted, uniform measured, uniform predicted, llama.cpp.
  p.series = {{"searched, measured (held-out)", blue, {}, true, false, Marker::filled, {}, {}, {}},
              {"searched, predicted (calibration)", blue, {}, false, false, Marker::hollow, {}, {}, {}},
              {"uniform, measured", orange, {}, false, false, Marker::filled, {}, {}, {}},
              {"uniform, predicted", orange, {}, false, false, Marker::hollow, {}, {}, {}},
              {"llama.cpp type, measured", green, {}, false, false, Marker::filled, {}, {}, {}}};
  // llama.cpp's files are named <model>-<type>.gguf: their labels drop the common "<model>-".
  std::string common;
  std::size_t llama_files = 0;
  for (const auto& q : pts)
    if (q.llama_cpp) {
      if (llama_files++ == 0) common = q.name;
      std::size_t n = 0;
      while (n < common.size() && n < q.name.size() && common[n] == q.name[n]) ++n;
      common.resize(n);
    }
  const std::size_t dash = common.rfind('-');  // one file alone keeps its name (no common part to tell)
  common.resize(dash == std::string::npos || llama_files < 2 ? 0 : dash + 1);
  for (const auto& q : pts) {
    const std::string tip = q.name + ": " + fixed("%.4g", q.bpw) + " bits/w, predicted " + fixed("%.4g", q.predicted) +
                            ", measured " + fixed("%.4g", q.measured) + " +- " + fixed("%.2g", q.measured_se);
    // A uniform recipe is labelled by its spec ("uniform e4m3" -> "e4m3": the legend says uniform).
    const std::string label = q.searched                      ? ""
                              : q.name.starts_with("uniform ") ? q.name.substr(8)
                              : q.llama_cpp                    ? q.name.substr(common.size())
                                                               : q.name;
    auto& measured = p.series[q.llama_cpp ? 4 : q.searched ? 0 : 2];
    measured.points.push_back({q.bpw, q.measured});
    measured.tips.push_back(tip);
    measured.labels.push_back(label);
    measured.err.push_back(q.measured_se);
    if (q.llama_cpp) continue;  // measured only
    auto& predicted = p.series[q.searched ? 1 : 3];
    predicted.points.push_back({q.bpw, q.predicted});
    predicted.tips.push_back(tip);
    // Without a measurement the predicted point carries the name.
    predicted.labels.push_back(std::isfinite(q.measured) ? "" : label);
  }
  if (p.series[4].points.empty()) p.series[4].label.clear();  // no legend entry without --base-logits
  c.panels.push_back(std::move(p));
  out << report::xy_chart(c);
}

}  // namespace lowp::accuracy
