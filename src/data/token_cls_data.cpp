#include "data/token_cls_data.h"

#include <algorithm>
#include <set>

#include "data/json_rows.h"
#include "util/error.h"

namespace strata::data {

namespace {

// A file's words and tags as written: tags as text (integers in decimal).
struct TaggedRows {
  std::string path;
  bool has_tags = true;
  bool int_tags = false;
  std::vector<std::vector<std::string>> words, tags;
  std::vector<size_t> lines;
};

// tags_optional: a file whose first row has no tags column is read untagged (prediction).
TaggedRows read_rows(const std::string& path, const TokenClsOptions& o, bool tags_optional) {
  const TokenClsColumns& c = o.columns;
  TaggedRows out;
  out.path = path;
  bool kind_known = false;
  const RowStats stats = for_each_row(path, detect_format(path, o.format, o.delimiter), [&](const nlohmann::json& row,
                                                                                             size_t line) {
    if (out.words.empty()) out.has_tags = !tags_optional || row.contains(c.label);
    const nlohmann::json words = json_cell(row_field(row, c.text, path, line), c.text, path, line, "a list of words");
    if (!words.is_array() || !std::all_of(words.begin(), words.end(), [](const auto& w) { return w.is_string(); }))
      fail(path, ": line ", line, ": column '", c.text, "' is not a list of strings (expected the example's words)");
    std::vector<std::string> w;
    for (const auto& x : words) w.push_back(x.get<std::string>());
    out.words.push_back(std::move(w));
    out.lines.push_back(line);
    if (!out.has_tags) return;
    const nlohmann::json tags = json_cell(row_field(row, c.label, path, line), c.label, path, line, "a list of tags");
    if (!tags.is_array()) fail(path, ": line ", line, ": column '", c.label, "' is a JSON ", tags.type_name(), "; expected a list of tags");
    if (words.size() != tags.size())
      fail(path, ": line ", line, ": ", words.size(), " words in column '", c.text, "' but ", tags.size(),
           " tags in column '", c.label, "'; expected one tag per word");
    std::vector<std::string> t;
    for (const auto& x : tags) {
      const bool is_int = x.is_number_integer();
      if (!is_int && !x.is_string())
        fail(path, ": line ", line, ": column '", c.label, "' has the tag ", x.dump(), "; expected strings or integers");
      if (!kind_known) out.int_tags = is_int;
      kind_known = true;
      if (is_int != out.int_tags)
        fail(path, ": line ", line, ": column '", c.label, "' mixes string and integer tags (", x.dump(),
             "); expected all of one kind");
      t.push_back(is_int ? x.dump() : x.get<std::string>());
    }
    out.tags.push_back(std::move(t));
  });
  if (out.words.empty()) fail(path, ": no examples");
  warn_replaced_utf8(stats, path, o.warn);
  return out;
}

TagSet tag_set(std::vector<std::string> names, bool int_tags) {
  TagSet s;
  s.int_tags = int_tags;
  s.names = std::move(names);
  const auto ids = s.label2id();
  for (size_t i = 0; i < s.names.size(); ++i) {
    const std::string& n = s.names[i];
    std::string inside = n;  // Python's label.replace("B-", "I-"): every occurrence
    for (size_t p = inside.find("B-"); p != std::string::npos; p = inside.find("B-", p + 2)) inside[p] = 'I';
    const auto it = ids.find(inside);
    s.b_to_i.push_back(n.starts_with("B-") && it != ids.end() ? it->second : static_cast<int32_t>(i));
  }
  return s;
}

TagSet from_training(const TaggedRows& train) {
  std::vector<std::string> names;
  if (train.int_tags) {
    std::set<int64_t> seen;
    for (const auto& row : train.tags)
      for (const auto& t : row) seen.insert(std::stoll(t));
    for (int64_t v : seen) names.push_back(std::to_string(v));
  } else {
    std::set<std::string> seen;  // std::string orders by unsigned bytes: code-point order, as Python sorts str
    for (const auto& row : train.tags) seen.insert(row.begin(), row.end());
    names.assign(seen.begin(), seen.end());
  }
  return tag_set(std::move(names), train.int_tags);
}

std::shared_ptr<const TokenClsDataset> map_tags(TaggedRows&& rows, const TagSet& tags, const std::string& tags_from) {
  auto out = std::make_shared<TokenClsDataset>();
  out->path = rows.path;
  out->has_tags = rows.has_tags;
  if (rows.has_tags && rows.int_tags != tags.int_tags)
    fail(rows.path, ": the tags are ", rows.int_tags ? "integers" : "strings", " but those of ", tags_from, " are ",
         tags.int_tags ? "integers" : "strings");
  const auto ids = tags.label2id();
  for (size_t r = 0; r < rows.tags.size(); ++r) {
    std::vector<int32_t> row;
    for (const std::string& t : rows.tags[r]) {
      const auto it = ids.find(t);
      if (it == ids.end())
        fail(rows.path, ": line ", rows.lines[r], ": unknown tag '", t, "' (", tags_from, " has ", tags.names.size(),
             " tags: ", [&] {
               std::string all;
               for (const auto& n : tags.names) all += (all.empty() ? "" : ", ") + n;
               return all;
             }(), ")");
      row.push_back(it->second);
    }
    out->tags.push_back(std::move(row));
  }
  out->words = std::move(rows.words);
  out->lines = std::move(rows.lines);
  return out;
}

}  // namespace

std::map<std::string, int32_t> TagSet::label2id() const {
  std::map<std::string, int32_t> m;
  for (size_t i = 0; i < names.size(); ++i) m.emplace(names[i], static_cast<int32_t>(i));
  return m;
}

TagSet tag_set_from_names(std::vector<std::string> names) {
  const bool ints = !names.empty() && std::all_of(names.begin(), names.end(), [](const std::string& n) {
    const size_t digits = n.starts_with('-') ? 1 : 0;
    return n.size() > digits && n.find_first_not_of("0123456789", digits) == std::string::npos;
  });
  return tag_set(std::move(names), ints);
}

TokenClsData load_token_cls(const TokenClsOptions& opts) {
  TokenClsData out;
  std::string tags_from;
  if (!opts.train_file.empty()) {
    TaggedRows train = read_rows(opts.train_file, opts, false);
    out.tags = from_training(train);
    tags_from = "the training file " + opts.train_file;
    out.train = map_tags(std::move(train), out.tags, tags_from);
  } else {
    if (opts.label_names.empty())
      fail("token classification: no train_file to take the tag set from, and no label names (id2label) given");
    out.tags = tag_set_from_names(opts.label_names);
    tags_from = "the model's id2label";
  }
  if (!opts.validation_file.empty()) out.validation = map_tags(read_rows(opts.validation_file, opts, false), out.tags, tags_from);
  if (!opts.test_file.empty()) out.test = map_tags(read_rows(opts.test_file, opts, true), out.tags, tags_from);
  return out;
}

std::vector<int32_t> align_labels(std::span<const int32_t> word_ids, std::span<const int32_t> word_tags,
                                  const TagSet& tags, bool label_all_tokens) {
  std::vector<int32_t> out;
  out.reserve(word_ids.size());
  int32_t previous = -1;
  for (int32_t w : word_ids) {
    if (w < 0) {
      out.push_back(-100);
    } else if (w != previous) {
      out.push_back(word_tags[static_cast<size_t>(w)]);
    } else {
      out.push_back(label_all_tokens ? tags.b_to_i[static_cast<size_t>(word_tags[static_cast<size_t>(w)])] : -100);
    }
    previous = w;
  }
  return out;
}

}  // namespace strata::data
