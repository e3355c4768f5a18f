#include "train/bleu.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "data/py_text.h"
#include "util/error.h"

// Mirrors sacrebleu/tokenizers/tokenizer_13a.py, tokenizer_re.py and metrics/bleu.py; the
// final arithmetic keeps sacreBLEU's operations and order, so the results are its own to the
// last bit wherever Python's math.exp / math.log and ours are the same libm's.
namespace strata {

namespace {

constexpr size_t kMaxOrder = 4;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// str.replace: every non-overlapping occurrence, left to right.
std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  size_t begin = 0;
  for (size_t at; (at = s.find(from, begin)) != std::string_view::npos; begin = at + from.size())
    out.append(s.substr(begin, at - begin)).append(to);
  return out.append(s.substr(begin));
}

// TokenizerRegexp's first pattern: [\{-\~\[-\` -\&\(-\+\:-\@\/], i.e. the ASCII symbols and
// punctuation other than ' - . , and the space.
bool is_separated_symbol(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (u >= 0x7B && u <= 0x7E) || (u >= 0x5B && u <= 0x60) || (u >= 0x20 && u <= 0x26) || (u >= 0x28 && u <= 0x2B) ||
         (u >= 0x3A && u <= 0x40) || u == '/';
}

// re.sub of a two-character pattern: left to right, a match consumes both characters. The
// patterns only name ASCII characters or "not a digit", so running them over UTF-8 bytes
// instead of code points gives the same text (a multi-byte character is never a digit, and no
// match can start inside one and end outside it differently).
template <typename Match, typename Emit>
std::string sub_pairs(const std::string& s, Match match, Emit emit) {
  std::string out;
  out.reserve(s.size() + s.size() / 4);
  size_t i = 0;
  while (i < s.size()) {
    if (i + 1 < s.size() && match(s[i], s[i + 1])) {
      emit(out, s[i], s[i + 1]);
      i += 2;
    } else {
      out.push_back(s[i++]);
    }
  }
  return out;
}

// TokenizerRegexp()(line)
std::string tokenize_re(const std::string& line) {
  std::string s;
  s.reserve(line.size() * 2);
  for (const char c : line) {  // ([\{-\~\[-\` -\&\(-\+\:-\@\/]) -> ' \1 '
    if (is_separated_symbol(c)) {
      s.push_back(' ');
      s.push_back(c);
      s.push_back(' ');
    } else {
      s.push_back(c);
    }
  }
  const auto period_or_comma = [](char c) { return c == '.' || c == ','; };
  // ([^0-9])([\.,]) -> '\1 \2 '
  s = sub_pairs(
      s, [&](char a, char b) { return !is_digit(a) && period_or_comma(b); },
      [](std::string& out, char a, char b) { out.append({a, ' ', b, ' '}); });
  // ([\.,])([^0-9]) -> ' \1 \2'
  s = sub_pairs(
      s, [&](char a, char b) { return period_or_comma(a) && !is_digit(b); },
      [](std::string& out, char a, char b) { out.append({' ', a, ' ', b}); });
  // ([0-9])(-) -> '\1 \2 '
  s = sub_pairs(
      s, [](char a, char b) { return is_digit(a) && b == '-'; },
      [](std::string& out, char a, char b) { out.append({a, ' ', b, ' '}); });
  std::string joined;
  for (const auto& token : data::py::split(s)) {
    if (!joined.empty()) joined.push_back(' ');
    joined += token;
  }
  return joined;
}

// BLEU._preprocess_segment
std::vector<std::string> segment_tokens(std::string_view segment, bool lowercase) {
  const std::string text = lowercase ? data::py::lower(segment) : std::string(segment);
  return data::py::split(tokenize_13a(data::py::rstrip(text)));
}

using NgramCounts = std::unordered_map<std::string, size_t>;

// extract_all_word_ngrams(line, 1, 4): an n-gram is its tokens joined by ' ' (tokens never
// contain one, and the orders never collide since the count of spaces differs).
NgramCounts all_ngrams(const std::vector<std::string>& tokens) {
  NgramCounts counts;
  for (size_t n = 1; n <= kMaxOrder; ++n) {
    for (size_t i = 0; i + n <= tokens.size(); ++i) {
      std::string key = tokens[i];
      for (size_t k = 1; k < n; ++k) key.append(" ").append(tokens[i + k]);
      ++counts[key];
    }
  }
  return counts;
}

size_t order_of(const std::string& ngram) {
  size_t spaces = 0;
  for (const char c : ngram) spaces += c == ' ';
  return spaces + 1;
}

// _get_closest_ref_len: the reference length nearest the hypothesis', the shorter on a tie.
size_t closest_ref_len(size_t hyp_len, const std::vector<size_t>& ref_lens) {
  size_t best = ref_lens[0];
  for (const size_t len : ref_lens) {
    const auto diff = [&](size_t l) { return l > hyp_len ? l - hyp_len : hyp_len - l; };
    if (diff(len) < diff(best) || (diff(len) == diff(best) && len < best)) best = len;
  }
  return best;
}

// sacrebleu.utils.my_log: log floored at -9999999999 for a zero precision.
double my_log(double x) { return x == 0.0 ? -9999999999.0 : std::log(x); }

// BLEU.compute_bleu on the corpus sums.
void compute_bleu(BleuResult& r, const BleuOptions& options) {
  r.ratio = r.ref_len ? static_cast<double>(r.sys_len) / static_cast<double>(r.ref_len) : 0;
  r.bp = 1.0;
  if (r.sys_len < r.ref_len)
    r.bp = r.sys_len > 0 ? std::exp(1 - static_cast<double>(r.ref_len) / static_cast<double>(r.sys_len)) : 0.0;
  r.precisions.fill(0.0);
  bool any_match = false;
  for (const size_t c : r.counts) any_match = any_match || c > 0;
  if (!any_match) {
    r.score = 0;
    return;
  }
  const double k = options.smooth_value.value_or(options.smooth_method == BleuSmoothing::floor ? 0.1 : 1.0);
  double smooth_mteval = 1.0;
  size_t eff_order = kMaxOrder;
  for (size_t n = 1; n <= kMaxOrder; ++n) {
    double correct = static_cast<double>(r.counts[n - 1]), total = static_cast<double>(r.totals[n - 1]);
    if (options.smooth_method == BleuSmoothing::add_k && n > 1) {
      correct += k;
      total += k;
    }
    if (total == 0) break;
    if (options.use_effective_order) eff_order = n;
    double& p = r.precisions[n - 1];
    if (correct == 0) {
      if (options.smooth_method == BleuSmoothing::exp) {
        smooth_mteval *= 2;
        p = 100. / (smooth_mteval * total);
      } else if (options.smooth_method == BleuSmoothing::floor) {
        p = 100. * k / total;
      }
    } else {
      p = 100. * correct / total;
    }
  }
  double log_sum = 0;
  for (size_t n = 0; n < eff_order; ++n) log_sum += my_log(r.precisions[n]);
  r.score = r.bp * std::exp(log_sum / static_cast<double>(eff_order));
}

}  // namespace

std::string tokenize_13a(std::string_view line) {
  std::string s = replace_all(line, "<skipped>", "");
  s = replace_all(s, "-\n", "");
  s = replace_all(s, "\n", " ");
  if (s.find('&') != std::string::npos) {
    s = replace_all(s, "&quot;", "\"");
    s = replace_all(s, "&amp;", "&");
    s = replace_all(s, "&lt;", "<");
    s = replace_all(s, "&gt;", ">");
  }
  return tokenize_re(" " + s + " ");
}

BleuResult corpus_bleu(const std::vector<std::string>& hypotheses,
                       const std::vector<std::vector<std::string>>& references, const BleuOptions& options) {
  if (hypotheses.empty()) fail("bleu: no hypotheses to score");
  if (hypotheses.size() != references.size())
    fail("bleu: ", hypotheses.size(), " hypotheses but references for ", references.size(),
         "; each hypothesis needs its list of references");
  if (options.smooth_value && *options.smooth_value < 0)
    fail("bleu: smooth_value must not be negative, got ", *options.smooth_value);
  BleuResult r;
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    if (references[i].empty()) fail("bleu: hypothesis ", i, " has no reference");
    // _extract_reference_info: each n-gram's largest count in any one reference.
    NgramCounts ref_max;
    std::vector<size_t> ref_lens;
    for (const auto& ref : references[i]) {
      const auto tokens = segment_tokens(ref, options.lowercase);
      ref_lens.push_back(tokens.size());
      for (const auto& [gram, count] : all_ngrams(tokens)) {
        size_t& m = ref_max[gram];
        m = std::max(m, count);
      }
    }
    // _compute_segment_statistics
    const auto hyp = segment_tokens(hypotheses[i], options.lowercase);
    r.sys_len += hyp.size();
    r.ref_len += closest_ref_len(hyp.size(), ref_lens);
    for (const auto& [gram, count] : all_ngrams(hyp)) {
      const size_t n = order_of(gram);
      r.totals[n - 1] += count;
      if (const auto it = ref_max.find(gram); it != ref_max.end()) r.counts[n - 1] += std::min(count, it->second);
    }
  }
  compute_bleu(r, options);
  return r;
}

}  // namespace strata
