#include "data/qa_features.h"

#include <algorithm>

#include "data/py_text.h"
#include "data/special_layout.h"
#include "data/tokenizer_encoder.h"
#include "util/error.h"

namespace strata::data {

namespace {

constexpr int8_t kQuestion = 0, kContext = 1, kSpecial = -1;

// One window: the question, a slice of the context, the special tokens around them, and
// which sequence each token is from (HF's sequence_ids).
struct Window {
  Encoded enc;
  std::vector<std::pair<size_t, size_t>> offsets;
  std::vector<int8_t> seq;
};

// A sequence's own tokens (no special tokens, padding dropped) and their offsets.
struct Tokens {
  std::vector<int32_t> ids;
  std::vector<std::pair<size_t, size_t>> offsets;
};

Tokens tokens_of(const tok::Tokenizer& tok, const std::string& text) {
  const tok::Encoding e = tok.encode(text, /*add_special_tokens=*/false);
  Tokens t;
  for (size_t i = 0; i < e.ids.size(); ++i) {
    if (!e.attention_mask.empty() && e.attention_mask[i] == 0) continue;
    t.ids.push_back(e.ids[i]);
    t.offsets.push_back(e.offsets[i]);
  }
  return t;
}

void add(Window& w, const Encoded& specials) {
  append_special(w.enc, specials);
  w.offsets.insert(w.offsets.end(), specials.ids.size(), {0, 0});
  w.seq.insert(w.seq.end(), specials.ids.size(), kSpecial);
}

void add(Window& w, const Tokens& t, size_t b, size_t e, int32_t type, int8_t seq) {
  w.enc.ids.insert(w.enc.ids.end(), t.ids.begin() + static_cast<std::ptrdiff_t>(b),
                   t.ids.begin() + static_cast<std::ptrdiff_t>(e));
  w.enc.type_ids.insert(w.enc.type_ids.end(), e - b, type);
  w.enc.special_mask.insert(w.enc.special_mask.end(), e - b, 0);
  w.offsets.insert(w.offsets.end(), t.offsets.begin() + static_cast<std::ptrdiff_t>(b),
                   t.offsets.begin() + static_cast<std::ptrdiff_t>(e));
  w.seq.insert(w.seq.end(), e - b, seq);
}

size_t code_points(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

// run_qa's prepare_train_features for one window, step for step.
void label_window(const Window& w, const QaExample& ex, std::optional<int32_t> cls_id, const QaFeatureOptions& opts,
                  QaFeature& f) {
  const std::vector<int32_t>& ids = w.enc.ids;
  const auto cls_it = cls_id ? std::find(ids.begin(), ids.end(), *cls_id) : ids.end();
  const int32_t cls_index = cls_it == ids.end() ? 0 : static_cast<int32_t>(cls_it - ids.begin());
  f.start_position = f.end_position = cls_index;
  if (ex.answers.empty()) return;
  const auto first_ctx = std::find(w.seq.begin(), w.seq.end(), kContext);
  if (first_ctx == w.seq.end()) return;  // no context token in this window
  const size_t start_char = ex.answers[0].start, end_char = start_char + code_points(ex.answers[0].text);
  size_t ts = static_cast<size_t>(first_ctx - w.seq.begin());
  size_t te = w.seq.size() - 1 - static_cast<size_t>(std::find(w.seq.rbegin(), w.seq.rend(), kContext) - w.seq.rbegin());
  if (!(w.offsets[ts].first <= start_char && w.offsets[te].second >= end_char)) return;
  // HF scans on while a token starts at or before the answer. Special tokens and padding have
  // offsets (0, 0), so when the answer starts in the window's last context token the scan runs
  // on through [SEP] and any padding, and start_position lands on the last position of the
  // (padded) row, not on that token. Kept, so that features equal run_qa's.
  const size_t n = opts.pad_to_max_length ? std::max(ids.size(), opts.max_seq_length) : ids.size();
  auto begin_at = [&](size_t k) { return k < ids.size() ? w.offsets[k].first : 0; };
  while (ts < n && begin_at(ts) <= start_char) ++ts;
  f.start_position = static_cast<int32_t>(ts) - 1;
  while (w.offsets[te].second >= end_char) --te;  // stops at the [SEP] before the context at the latest
  f.end_position = static_cast<int32_t>(te) + 1;
}

}  // namespace

QaFeatures make_qa_features(tok::Tokenizer& tok, const QaExamples& examples, const QaFeatureOptions& opts,
                            bool train) {
  if (train && !examples.has_answers)
    fail(examples.path, ": no answers column; training features need the answer of every example");
  tok.set_truncation(std::nullopt);  // sequences are encoded whole, then windowed here
  const SpecialLayout specials = special_layout(tok, /*pair=*/true);
  const std::optional<int32_t> cls_id = first_known_token(tok, {"[CLS]", "<s>", "<cls>"});

  QaFeatures out;
  out.train = train;
  out.first.push_back(0);
  for (size_t e = 0; e < examples.examples.size(); ++e) {
    const QaExample& ex = examples.examples[e];
    const Tokens q = tokens_of(tok, py::lstrip(ex.question)), c = tokens_of(tok, ex.context);
    // HF's truncate_encodings (only_second) then Encoding::truncate (right): windows of
    // `room` context tokens, each starting room - doc_stride after the previous one.
    const size_t fixed = specials.size() + q.ids.size(), n = c.ids.size();
    size_t room = n;
    if (fixed + n > opts.max_seq_length) {
      if (fixed >= opts.max_seq_length)
        fail(examples.path, ": line ", ex.line, ": the question's ", q.ids.size(), " tokens and ", specials.size(),
             " special tokens leave no room for the context within max_seq_length ", opts.max_seq_length);
      room = opts.max_seq_length - fixed;
      if (opts.doc_stride >= room)
        fail(examples.path, ": line ", ex.line, ": doc_stride ", opts.doc_stride,
             " must be smaller than the context tokens that fit beside the question (", room, " of max_seq_length ",
             opts.max_seq_length, ")");
    }
    for (size_t b = 0;; b += room - opts.doc_stride) {
      const size_t end = std::min(b + room, n);
      Window w;
      add(w, specials.before);
      add(w, q, 0, q.ids.size(), specials.first_type, kQuestion);
      add(w, specials.between);
      add(w, c, b, end, specials.second_type, kContext);
      add(w, specials.after);
      QaFeature f;
      f.example = e;
      if (train) {
        label_window(w, ex, cls_id, opts, f);
      } else {
        f.offsets.resize(w.seq.size());
        for (size_t k = 0; k < w.seq.size(); ++k)
          if (w.seq[k] == kContext)
            f.offsets[k] = {static_cast<int32_t>(w.offsets[k].first), static_cast<int32_t>(w.offsets[k].second)};
      }
      f.enc = std::move(w.enc);
      out.features.push_back(std::move(f));
      if (end == n) break;
    }
    out.first.push_back(out.features.size());
  }
  return out;
}

}  // namespace strata::data
