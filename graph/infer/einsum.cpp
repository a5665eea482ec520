// Einsum equation parsing, shared by inference and the compute rule.
#include "graph/infer/einsum.h"

#include <algorithm>
#include <map>

#include "base/result.h"

namespace tessel {

namespace {

/// One term of an equation ("ij", "...ii"): letters in order, and where "..." sits.
struct EinsumTerm {
  std::string letters;
  int ellipsis_at = -1;  // position among the letters, -1 when absent
};

EinsumTerm parse_term(const std::string &text) {
  EinsumTerm term;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.') {
      if (text.compare(i, 3, "...") != 0) throw TesselException("'.' outside an ellipsis in term '" + text + "'");
      if (term.ellipsis_at >= 0) throw TesselException("term '" + text + "' has more than one ellipsis");
      term.ellipsis_at = static_cast<int>(term.letters.size());
      i += 2;
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      term.letters += c;
    } else {
      throw TesselException(std::string("invalid character '") + c + "' in term '" + text + "'");
    }
  }
  return term;
}

std::vector<std::string> split(const std::string &s, char separator) {
  std::vector<std::string> parts(1);
  for (char c : s) {
    if (c == separator) parts.emplace_back();
    else parts.back() += c;
  }
  return parts;
}

}  // namespace

std::vector<std::vector<int>> parse_einsum_equation(const std::string &equation,
                                                    const std::vector<Shape> &input_shapes,
                                                    std::vector<int64_t> &label_extents) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  const std::vector<std::string> term_texts = split(lhs, ',');
  if (term_texts.size() != input_shapes.size())
    throw TesselException("equation '" + equation + "' has " + std::to_string(term_texts.size()) +
                          " operand term(s) but the node has " + std::to_string(input_shapes.size()) + " input(s)");

  std::vector<EinsumTerm> terms;
  int ellipsis_rank = 0;  // broadcast rank of all ellipses
  std::vector<int> term_ellipsis_rank;
  for (size_t t = 0; t < term_texts.size(); ++t) {
    terms.push_back(parse_term(term_texts[t]));
    const int rank = static_cast<int>(input_shapes[t].size());
    const int letters = static_cast<int>(terms[t].letters.size());
    const int extra = rank - letters;
    if (terms[t].ellipsis_at < 0 ? extra != 0 : extra < 0)
      throw TesselException("term '" + term_texts[t] + "' has " + std::to_string(letters) + " subscript(s) but input " +
                            std::to_string(t) + " has rank " + std::to_string(rank));
    term_ellipsis_rank.push_back(terms[t].ellipsis_at < 0 ? 0 : extra);
    ellipsis_rank = std::max(ellipsis_rank, term_ellipsis_rank.back());
  }

  std::map<char, int> letter_ids;
  std::map<char, int> letter_uses;
  auto letter_id = [&](char c) {
    auto it = letter_ids.find(c);
    if (it != letter_ids.end()) return it->second;
    const int id = ellipsis_rank + static_cast<int>(letter_ids.size());
    letter_ids[c] = id;
    return id;
  };
  const int64_t kUnset = -2;
  label_extents.assign(static_cast<size_t>(ellipsis_rank), kUnset);
  std::vector<std::vector<int>> labels;
  for (size_t t = 0; t < terms.size(); ++t) {
    std::vector<int> term_labels;
    const EinsumTerm &term = terms[t];
    for (int i = 0; i <= static_cast<int>(term.letters.size()); ++i) {
      if (i == term.ellipsis_at)
        for (int e = ellipsis_rank - term_ellipsis_rank[t]; e < ellipsis_rank; ++e) term_labels.push_back(e);
      if (i == static_cast<int>(term.letters.size())) break;
      const char c = term.letters[i];
      ++letter_uses[c];
      term_labels.push_back(letter_id(c));
    }
    label_extents.resize(ellipsis_rank + letter_ids.size(), kUnset);
    for (size_t d = 0; d < term_labels.size(); ++d) {
      const int64_t size = input_shapes[t][d];
      int64_t &extent = label_extents[term_labels[d]];
      if (size == kUnknownDim || size == 1) {
        if (extent == kUnset) extent = size;
      } else if (extent == kUnset || extent == kUnknownDim || extent == 1) {
        extent = size;
      } else if (extent != size) {
        std::string name = term_labels[d] < ellipsis_rank ? std::string("an ellipsis dimension") : "subscript '";
        if (term_labels[d] >= ellipsis_rank)
          for (const auto &[c, id] : letter_ids)
            if (id == term_labels[d]) name += std::string(1, c) + "'";
        throw TesselException(name + " has sizes " + std::to_string(extent) + " and " + std::to_string(size) +
                              " in equation '" + equation + "'");
      }
    }
    labels.push_back(term_labels);
  }

  std::vector<int> output;
  if (arrow == std::string::npos) {
    // Implicit output: the ellipsis dimensions, then letters used once, in ASCII order.
    for (int e = 0; e < ellipsis_rank; ++e) output.push_back(e);
    for (const auto &[c, uses] : letter_uses)
      if (uses == 1) output.push_back(letter_ids[c]);
  } else {
    const std::string rhs_text = eq.substr(arrow + 2);
    const EinsumTerm rhs = parse_term(rhs_text);
    if (rhs.ellipsis_at < 0 && ellipsis_rank > 0)
      throw TesselException("output '" + rhs_text + "' needs '...' for the inputs' ellipsis dimensions");
    for (int i = 0; i <= static_cast<int>(rhs.letters.size()); ++i) {
      if (i == rhs.ellipsis_at)
        for (int e = 0; e < ellipsis_rank; ++e) output.push_back(e);
      if (i == static_cast<int>(rhs.letters.size())) break;
      const char c = rhs.letters[i];
      if (!letter_ids.count(c))
        throw TesselException(std::string("output subscript '") + c + "' does not appear in any input");
      if (rhs.letters.find(c) != static_cast<size_t>(i))
        throw TesselException(std::string("output subscript '") + c + "' appears more than once");
      output.push_back(letter_ids[c]);
    }
  }
  for (int64_t &extent : label_extents)
    if (extent == kUnset) extent = 1;  // an ellipsis dimension only size-1 inputs have
  labels.push_back(output);
  return labels;
}

}  // namespace tessel
