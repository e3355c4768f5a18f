#include "data/labels.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "util/error.h"

namespace strata::data {

namespace {

using Kind = RawLabel::Kind;

// Integer class ids make num_labels = max + 1; beyond this a label is surely not a class id
// (a year, a user id) and the user should write names instead.
constexpr int64_t kMaxClassId = 100000;

bool integral(const RawLabel& r) {
  return r.kind == Kind::Int || (r.kind == Kind::Float && std::floor(r.f) == r.f && std::fabs(r.f) < 1e15);
}

std::string training_labels(const LabelInfo& info) {
  std::string out;
  size_t shown = 0;
  for (int i = 0; i < info.num_labels; ++i) {
    if (!info.in_training[i]) continue;
    if (shown == 10) return out + ", ...";
    out += (shown++ ? ", " : "") + info.id2label[i];
  }
  return out;
}

void set_names(LabelInfo& info, std::vector<std::string> names) {
  info.num_labels = static_cast<int>(names.size());
  info.id2label = std::move(names);
  info.in_training.assign(info.id2label.size(), 1);
}

std::vector<std::string> numbered(size_t n, const char* prefix) {
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

void infer_lists(LabelInfo& info, const std::vector<RawLabel>& train, const std::vector<uint64_t>& lines,
                 const std::string& path, ProblemType requested) {
  if (requested == ProblemType::SingleLabel)
    fail(path, ": line ", lines[0], ": label ", train[0].display(),
         " is a list, but problem_type single_label_classification needs one label per row");
  size_t first_name = SIZE_MAX, first_number = SIZE_MAX;
  for (size_t k = 0; k < train.size(); ++k)
    for (const auto& e : train[k].items) {
      if (e.kind == Kind::String && first_name == SIZE_MAX) first_name = k;
      if (e.is_number() && first_number == SIZE_MAX) first_number = k;
    }
  if (first_name != SIZE_MAX && first_number != SIZE_MAX)
    fail(path, ": line ", lines[first_number], ": label list ", train[first_number].display(),
         " holds numbers, but line ", lines[first_name], "'s holds names; use one kind throughout");
  if (first_number == SIZE_MAX) {  // lists of names (or all empty)
    if (requested == ProblemType::Regression)
      fail(path, ": line ", lines[first_name == SIZE_MAX ? 0 : first_name],
           ": lists of label names are multi-label data, but problem_type is regression");
    std::set<std::string> names;
    for (const auto& r : train)
      for (const auto& e : r.items) names.insert(e.s);
    if (names.empty()) fail(path, ": every label list is empty; multi-label data needs at least one label name");
    info.source = LabelInfo::Source::NameLists;
    info.problem = ProblemType::MultiLabel;
    set_names(info, {names.begin(), names.end()});
    return;
  }
  const size_t width = train[0].items.size();
  bool binary = true;
  for (size_t k = 0; k < train.size(); ++k) {
    if (train[k].items.size() != width || width == 0)
      fail(path, ": line ", lines[k], ": label list has ", train[k].items.size(), " values, expected ",
           width == 0 ? "at least one" : std::to_string(width), width == 0 ? "" : " (as on the first row)");
    for (const auto& e : train[k].items) binary = binary && (e.f == 0 || e.f == 1);
  }
  if (requested == ProblemType::MultiLabel || (requested == ProblemType::Unset && binary)) {
    if (!binary) {
      for (size_t k = 0; k < train.size(); ++k)
        for (const auto& e : train[k].items)
          if (e.f != 0 && e.f != 1)
            fail(path, ": line ", lines[k], ": multi-label targets must be 0 or 1, got ", e.display());
    }
    info.source = LabelInfo::Source::MultiHot;
    info.problem = ProblemType::MultiLabel;
    set_names(info, numbered(width, ""));
  } else {
    info.source = LabelInfo::Source::NumberLists;
    info.problem = ProblemType::Regression;
    set_names(info, numbered(width, "LABEL_"));
  }
}

void infer_scalars(LabelInfo& info, const std::vector<RawLabel>& train, const std::vector<uint64_t>& lines,
                   const std::string& path, ProblemType requested) {
  if (requested == ProblemType::MultiLabel)
    fail(path, ": line ", lines[0], ": label ", train[0].display(),
         " is not a list, but multi-label classification needs one per row ([0, 1, 0] or [\"a\", \"b\"])");
  size_t first_string = SIZE_MAX, first_json_number = SIZE_MAX, first_nonint = SIZE_MAX;
  for (size_t k = 0; k < train.size(); ++k) {
    const RawLabel& r = train[k];
    if (r.kind == Kind::String && first_string == SIZE_MAX) first_string = k;
    if (r.is_number() && !r.from_text && first_json_number == SIZE_MAX) first_json_number = k;
    if (r.is_number() && !integral(r) && first_nonint == SIZE_MAX) first_nonint = k;
  }
  // A CSV column mixing "3" and "spam" is a column of names (pandas reads it as strings);
  // JSON that mixes 3 and "spam" is a mistake.
  if (first_string != SIZE_MAX && first_json_number != SIZE_MAX)
    fail(path, ": line ", lines[first_json_number], ": label ", train[first_json_number].display(),
         " is a number, but line ", lines[first_string], "'s label ", train[first_string].display(),
         " is a string; use one kind throughout");
  if (first_string != SIZE_MAX) {
    if (requested == ProblemType::Regression)
      fail(path, ": line ", lines[first_string], ": label ", train[first_string].display(),
           " is not a number, but problem_type is regression");
    std::set<std::string> names;
    for (const auto& r : train) names.insert(r.s);
    info.source = LabelInfo::Source::Names;
    info.problem = ProblemType::SingleLabel;
    set_names(info, {names.begin(), names.end()});
    return;
  }
  // HF's rule: a float column is regression, an integer column classification. A JSON 1.0
  // is a float, as pyarrow reads it.
  const bool all_int_typed =
      std::all_of(train.begin(), train.end(), [](const RawLabel& r) { return r.kind == Kind::Int; });
  const bool classify = requested == ProblemType::SingleLabel || (requested == ProblemType::Unset && all_int_typed);
  if (!classify) {
    info.source = LabelInfo::Source::Numbers;
    info.problem = ProblemType::Regression;
    set_names(info, {"LABEL_0"});
    return;
  }
  if (first_nonint != SIZE_MAX)
    fail(path, ": line ", lines[first_nonint], ": label ", train[first_nonint].display(),
         " is not an integer class id (problem_type single_label_classification)");
  int64_t max_id = 0;
  for (size_t k = 0; k < train.size(); ++k) {
    const int64_t id = static_cast<int64_t>(train[k].f);
    if (id < 0) fail(path, ": line ", lines[k], ": label ", id, " is negative; integer labels are class ids 0, 1, ...");
    if (id > kMaxClassId)
      fail(path, ": line ", lines[k], ": label ", id,
           " is too large for a class id (integer labels are class ids "
           "0..num_labels-1); write labels as names (strings) instead");
    max_id = std::max(max_id, id);
  }
  info.source = LabelInfo::Source::Ints;
  info.problem = ProblemType::SingleLabel;
  set_names(info, numbered(static_cast<size_t>(max_id) + 1, ""));
  std::fill(info.in_training.begin(), info.in_training.end(), 0);
  for (const auto& r : train) info.in_training[static_cast<size_t>(r.f)] = 1;
}

[[noreturn]] void unseen(const LabelInfo& info, const std::string& path, uint64_t line, const std::string& label) {
  fail(path, ": line ", line, ": label ", label,
       " does not occur in the training data (training labels: ", training_labels(info), ")");
}

}  // namespace

std::map<std::string, int> LabelInfo::label2id() const {
  std::map<std::string, int> m;
  for (int i = 0; i < num_labels; ++i) m[id2label[i]] = i;
  return m;
}

LabelInfo infer_labels(const std::vector<RawLabel>& train, const std::vector<uint64_t>& lines, const std::string& path,
                       ProblemType requested) {
  LabelInfo info;
  if (train.empty()) fail(path, ": no examples to take the labels from");
  size_t first_list = SIZE_MAX, first_scalar = SIZE_MAX;
  for (size_t k = 0; k < train.size(); ++k) {
    if (train[k].kind == Kind::Missing)
      fail(path, ": line ", lines[k], ": no label (the label field is empty or null)");
    size_t& first = train[k].kind == Kind::List ? first_list : first_scalar;
    if (first == SIZE_MAX) first = k;
  }
  if (first_list != SIZE_MAX && first_scalar != SIZE_MAX)
    fail(path, ": line ", lines[first_scalar], ": label ", train[first_scalar].display(), " is not a list, but line ",
         lines[first_list], "'s label is; a label column holds either lists (multi-label) or single labels");
  if (first_list != SIZE_MAX)
    infer_lists(info, train, lines, path, requested);
  else
    infer_scalars(info, train, lines, path, requested);
  return info;
}

MappedLabels map_labels(const LabelInfo& info, const std::vector<RawLabel>& labels, const std::vector<uint64_t>& lines,
                        const std::string& path) {
  using S = LabelInfo::Source;
  MappedLabels out;
  const std::map<std::string, int> by_name = info.label2id();
  const size_t width = static_cast<size_t>(info.num_labels);
  for (size_t k = 0; k < labels.size(); ++k) {
    const RawLabel& r = labels[k];
    const uint64_t line = lines[k];
    if (r.kind == Kind::Missing) fail(path, ": line ", line, ": no label (the label field is empty or null)");
    auto name_id = [&](const RawLabel& v) {
      if (v.kind != Kind::String && !v.from_text)
        fail(path, ": line ", line, ": label ", v.display(), " is a number, but the training labels are names");
      const auto it = by_name.find(v.s);
      if (it == by_name.end()) unseen(info, path, line, "'" + v.s + "'");
      return it->second;
    };
    auto number = [&](const RawLabel& v) {
      if (!v.is_number())
        fail(path, ": line ", line, ": label ", v.display(), " is not a number (the training labels are)");
      return v.f;
    };
    auto list = [&](const RawLabel& v) -> const std::vector<RawLabel>& {
      if (v.kind != Kind::List)
        fail(path, ": line ", line, ": label ", v.display(), " is not a list (the training labels are)");
      return v.items;
    };
    switch (info.source) {
      case S::None:
        break;
      case S::Ints: {
        if (!integral(r))
          fail(path, ": line ", line, ": label ", r.display(), " is not an integer class id (the training labels are)");
        const int64_t id = static_cast<int64_t>(r.f);
        if (id < 0 || id >= info.num_labels || !info.in_training[static_cast<size_t>(id)])
          unseen(info, path, line, std::to_string(id));
        out.ids.push_back(static_cast<int32_t>(id));
        break;
      }
      case S::Names:
        out.ids.push_back(name_id(r));
        break;
      case S::Numbers:
        out.targets.push_back(number(r));
        break;
      case S::MultiHot:
      case S::NumberLists: {
        const auto& items = list(r);
        if (items.size() != width)
          fail(path, ": line ", line, ": label list has ", items.size(), " values, expected ", width,
               " (as in the training data)");
        for (const auto& e : items) {
          const double v = number(e);
          if (info.source == S::MultiHot && v != 0 && v != 1)
            fail(path, ": line ", line, ": multi-label targets must be 0 or 1, got ", e.display());
          out.targets.push_back(v);
        }
        break;
      }
      case S::NameLists: {
        const size_t base = out.targets.size();
        out.targets.resize(base + width, 0.0);
        for (const auto& e : list(r)) out.targets[base + static_cast<size_t>(name_id(e))] = 1.0;
        break;
      }
    }
  }
  return out;
}

LabelInfo label_info_from_names(ProblemType problem, const std::vector<std::string>& id2label) {
  LabelInfo info;
  info.problem = problem;
  set_names(info, id2label);
  bool numbered_names = true;
  for (size_t i = 0; i < id2label.size(); ++i) numbered_names = numbered_names && id2label[i] == std::to_string(i);
  switch (problem) {
    case ProblemType::SingleLabel:
      info.source = numbered_names ? LabelInfo::Source::Ints : LabelInfo::Source::Names;
      break;
    case ProblemType::MultiLabel:
      info.source = numbered_names ? LabelInfo::Source::MultiHot : LabelInfo::Source::NameLists;
      break;
    case ProblemType::Regression:
      info.source = id2label.size() == 1 ? LabelInfo::Source::Numbers : LabelInfo::Source::NumberLists;
      break;
    case ProblemType::Unset:
      info = LabelInfo();
      break;
  }
  return info;
}

}  // namespace strata::data
