#include "tokenizers/added_tokens.h"

#include <algorithm>

namespace strata::tok {

namespace {

bool last_is_word(std::string_view s) {  // regex \w$
  if (s.empty()) return false;
  size_t start = s.size() - 1;
  while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
  size_t len;
  return uni::is_word_char(uni::decode(s, start, &len));
}

bool first_is_word(std::string_view s) {  // regex ^\w
  size_t len;
  return !s.empty() && uni::is_word_char(uni::decode(s, 0, &len));
}

size_t trailing_space_start(std::string_view s) {  // start of regex \s*$
  size_t start = s.size();
  while (start > 0) {
    size_t b = start - 1, len;
    while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
    if (!uni::is_whitespace(uni::decode(s, b, &len))) break;
    start = b;
  }
  return start;
}

size_t leading_space_len(std::string_view s) {  // end of regex ^\s*
  size_t i = 0, len;
  while (i < s.size() && uni::is_whitespace(uni::decode(s, i, &len))) i += len;
  return i;
}

}  // namespace

void AddedVocabulary::add(const std::vector<AddedToken>& tokens, const Model& model, const Normalizer* normalizer) {
  const auto model_size = static_cast<int32_t>(model.vocab_size());
  int32_t next_id = model_size;
  if (!by_id_.empty()) {
    int32_t max_id = 0;
    for (const auto& [id, e] : by_id_) max_id = std::max(max_id, id);
    if (max_id >= model_size || model_size == 0) next_id = max_id + 1;
  }
  for (const AddedToken& t : tokens) {
    if (t.content.empty()) continue;
    if (auto it = content_ids_.find(t.content); it != content_ids_.end() && by_id_.at(it->second).token == t) continue;
    int32_t id;
    if (auto own = token_to_id(t.content))
      id = *own;
    else if (auto in_model = model.token_to_id(t.content))
      id = *in_model;
    else
      id = next_id++;
    std::string pattern = t.content;
    if (t.normalized && normalizer) {
      NormalizedString s(t.content);
      normalizer->normalize(s);
      pattern = s.get();
    }
    content_ids_[t.content] = id;
    if (t.special) special_.insert(t.content);
    by_id_[id] = {t, std::move(pattern)};
  }
  rebuild_matchers();
}

std::optional<int32_t> AddedVocabulary::token_to_id(std::string_view content) const {
  auto it = content_ids_.find(content);
  return it == content_ids_.end() ? std::nullopt : std::optional<int32_t>(it->second);
}

const std::string* AddedVocabulary::id_to_token(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &it->second.pattern;
}

void AddedVocabulary::rebuild_matchers() {
  raw_.assign(256, {});
  normalized_.assign(256, {});
  std::vector<std::pair<int32_t, const Entry*>> sorted;
  for (const auto& [id, e] : by_id_) sorted.emplace_back(id, &e);
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [id, e] : sorted) {
    const std::string& p = e->token.normalized ? e->pattern : e->token.content;
    if (p.empty()) continue;
    (e->token.normalized ? normalized_ : raw_)[static_cast<unsigned char>(p[0])].emplace_back(p, id);
  }
  for (Matcher* m : {&raw_, &normalized_})
    for (auto& bucket : *m)
      std::stable_sort(bucket.begin(), bucket.end(),
                       [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
}

void AddedVocabulary::find_matches(std::string_view s, const Matcher& m,
                                   std::vector<std::pair<int32_t, Match>>& out) const {
  out.clear();
  if (s.empty()) {
    out.push_back({-1, {0, 0, false}});
    return;
  }
  size_t start_offset = 0;
  for (size_t i = 0; i < s.size();) {
    const auto& bucket = m[static_cast<unsigned char>(s[i])];
    const std::pair<std::string, int32_t>* found = nullptr;
    for (const auto& p : bucket)
      if (s.compare(i, p.first.size(), p.first) == 0) {
        found = &p;
        break;
      }
    if (!found) {
      ++i;
      continue;
    }
    size_t start = i, stop = i + found->first.size();
    i = stop;  // the search goes on after the match, whatever the filters below decide
    const AddedToken& t = by_id_.at(found->second).token;
    if (t.single_word) {
      const bool space_before = start == 0 || !last_is_word(s.substr(0, start));
      const bool space_after = stop == s.size() || !first_is_word(s.substr(stop));
      if (!space_before || !space_after) continue;
    }
    if (t.lstrip) start = std::max(trailing_space_start(s.substr(0, start)), start_offset);
    if (t.rstrip) stop += leading_space_len(s.substr(stop));
    if (start_offset < start) out.push_back({-1, {start_offset, start, false}});
    out.push_back({found->second, {start, stop, true}});
    start_offset = stop;
  }
  if (start_offset != s.size()) out.push_back({-1, {start_offset, s.size(), false}});
}

void AddedVocabulary::split_with(PreTokenized& pt, const Matcher& m, const Normalizer* normalize_first) const {
  std::vector<Split> next;
  std::vector<std::pair<int32_t, Match>> pieces;
  for (Split& split : pt.splits) {
    if (split.tokenized) {
      next.push_back(std::move(split));
      continue;
    }
    if (normalize_first) normalize_first->normalize(split.text);
    find_matches(split.text.get(), m, pieces);
    for (const auto& [id, r] : pieces) {
      NormalizedString piece = split.text.slice(r.b, r.e);
      if (piece.empty()) continue;
      Split s{std::move(piece), {}, id >= 0};
      if (id >= 0) s.tokens.push_back({id, s.text.get(), 0, static_cast<uint32_t>(s.text.get().size())});
      next.push_back(std::move(s));
    }
  }
  pt.splits = std::move(next);
}

void AddedVocabulary::extract_and_normalize(const Normalizer* normalizer, PreTokenized& pt) const {
  split_with(pt, raw_, nullptr);
  split_with(pt, normalized_, normalizer);
}

}  // namespace strata::tok
