#include "train/seq2seq_eval.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "generate/generator.h"
#include "models/causal_decoder.h"
#include "train/bleu.h"
#include "train/rouge.h"
#include "util/error.h"

namespace strata {

namespace {

struct Generated {
  size_t index;                          // the example's place in its dataset
  std::vector<int32_t> sequence, labels;  // the decoder start token first; labels without -100
};

double round4(double v) { return std::round(v * 1e4) / 1e4; }

class Seq2SeqPass final : public EvalPass {
 public:
  explicit Seq2SeqPass(const Seq2SeqEvalOptions& o) : o_(o) {}

  void add(const Batch& b, const std::vector<HeadOutput<float>>&) override {
    if (!o_.predict_with_generate) return;
    const Model<float>& model = o_.model();
    const ModelConfig& c = model.config();
    for (int r = 0; r < b.B; ++r) {
      Generated g;
      g.index = b.example_ids.empty() ? rows_.size() : b.example_ids[static_cast<size_t>(r)];
      std::vector<int32_t> source;
      for (int t = 0; t < b.T; ++t) {
        const size_t i = static_cast<size_t>(r) * b.T + t;
        if (b.attention_mask[i]) source.push_back(b.input_ids[i]);
      }
      const auto decoder = make_seq2seq_decoder(model, std::move(source), o_.generation.use_cache);
      const std::vector<gen::Generated> out = gen::generate(*decoder, {o_.decoder_start_token_id}, o_.generation,
                                                            c.vocab_size, c.max_position_embeddings, g.index);
      g.sequence.push_back(o_.decoder_start_token_id);
      g.sequence.insert(g.sequence.end(), out.at(0).ids.begin(), out.at(0).ids.end());
      for (int t = 0; t < b.Td && !b.labels.empty(); ++t) {
        const int32_t l = b.labels[static_cast<size_t>(r) * b.Td + t];
        if (l != -100) g.labels.push_back(l);
      }
      has_labels_ = has_labels_ || !b.labels.empty();
      rows_.push_back(std::move(g));
    }
  }

  std::string serialize() const override {
    nlohmann::json j = nlohmann::json::array();
    for (const Generated& g : rows_) j.push_back({g.index, g.sequence, g.labels});
    return pack({has_labels_, j});
  }
  void merge(const std::string& bytes) override {
    const nlohmann::json j = unpack(bytes);
    has_labels_ = has_labels_ || j[0].get<bool>();
    for (const auto& g : j[1])
      rows_.push_back({g[0].get<size_t>(), g[1].get<std::vector<int32_t>>(), g[2].get<std::vector<int32_t>>()});
  }

  void metrics(const std::string& prefix, double loss, nlohmann::json& out) const override {
    if (!std::isnan(loss)) out[prefix + "_loss"] = loss;
    if (!o_.predict_with_generate || rows_.empty()) return;
    const std::vector<Generated> rows = in_dataset_order();
    if (has_labels_) {
      std::vector<std::string> predictions, references;
      for (const Generated& g : rows) {
        predictions.push_back(o_.decode(g.sequence));
        references.push_back(o_.decode(g.labels));
      }
      if (o_.metric == Seq2SeqMetric::Rouge) {
        for (std::vector<std::string>* texts : {&predictions, &references})
          for (std::string& text : *texts) text = sentences_per_line(text);
        const RougeScores r = rouge(predictions, references, /*use_stemmer=*/true);
        out[prefix + "_rouge1"] = round4(r.rouge1 * 100);
        out[prefix + "_rouge2"] = round4(r.rouge2 * 100);
        out[prefix + "_rougeL"] = round4(r.rougeL * 100);
        out[prefix + "_rougeLsum"] = round4(r.rougeLsum * 100);
      } else {
        std::vector<std::vector<std::string>> refs;
        for (std::string& r : references) refs.push_back({strip(r)});
        for (std::string& p : predictions) p = strip(p);
        out[prefix + "_bleu"] = round4(corpus_bleu(predictions, refs).score);
      }
    }
    double tokens = 0;
    for (const Generated& g : rows)
      tokens += static_cast<double>(std::count_if(g.sequence.begin(), g.sequence.end(),
                                                  [&](int32_t id) { return id != o_.pad_token_id; }));
    out[prefix + "_gen_len"] = round4(tokens / static_cast<double>(rows.size()));
  }

  std::string write_predictions(const std::string& dir, const std::string& prefix) const override {
    if (!o_.predict_with_generate)
      fail("a sequence-to-sequence model writes its predictions by generating them: set predict_with_generate: true");
    // run_summarization's name for the test split's; an evaluation's gets its prefix
    const std::string path =
        dir + "/" + (prefix == "predict" ? std::string() : prefix + "_") + "generated_predictions.txt";
    std::ofstream f(path);
    for (const Generated& g : in_dataset_order()) f << strip(o_.decode(g.sequence)) << '\n';
    if (!f) fail(path, ": cannot write the predictions");
    return path;
  }

 private:
  static std::string strip(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  }
  std::vector<Generated> in_dataset_order() const {
    std::vector<Generated> sorted = rows_;
    std::sort(sorted.begin(), sorted.end(), [](const Generated& x, const Generated& y) { return x.index < y.index; });
    return sorted;
  }

  const Seq2SeqEvalOptions& o_;
  std::vector<Generated> rows_;
  bool has_labels_ = false;
};

class Seq2SeqTask final : public EvalTask {
 public:
  explicit Seq2SeqTask(Seq2SeqEvalOptions o) : o_(std::move(o)) {}
  std::unique_ptr<EvalPass> start() const override { return std::make_unique<Seq2SeqPass>(o_); }

 private:
  const Seq2SeqEvalOptions o_;
};

bool closes_sentence(char c) { return c == '.' || c == '!' || c == '?'; }
bool closes_quote(char c) { return c == '"' || c == '\'' || c == ')' || c == ']'; }
bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

std::string sentences_per_line(const std::string& text) {
  std::string out;
  size_t i = 0;
  while (i < text.size() && space(text[i])) ++i;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (space(c)) {
      size_t j = i;
      while (j < text.size() && space(text[j])) ++j;
      if (j == text.size()) break;  // trailing whitespace: stripped
      size_t k = out.size();
      while (k > 0 && closes_quote(out[k - 1])) --k;
      out += k > 0 && closes_sentence(out[k - 1]) ? '\n' : ' ';
      i = j - 1;
      continue;
    }
    out += c;
  }
  return out;
}

std::unique_ptr<EvalTask> seq2seq_eval_task(Seq2SeqEvalOptions o) {
  if (o.predict_with_generate) {
    STRATA_CHECK(o.decode && o.model, "seq2seq_eval_task: generating needs decode and model");
  }
  return std::make_unique<Seq2SeqTask>(std::move(o));
}

}  // namespace strata
