#include "cli/job_data.h"

#include <map>

#include "data/dataset.h"
#include "data/first_examples.h"
#include "data/pretraining.h"
#include "data/qa_batches.h"
#include "data/qa_examples.h"
#include "data/qa_features.h"
#include "data/seq2seq_batches.h"
#include "data/text_batches.h"
#include "data/token_cls_batches.h"
#include "data/token_cls_data.h"
#include "data/tokenizer_encoder.h"
#include "data/word_encoder.h"
#include "models/batch_checks.h"
#include "generate/generation_config.h"
#include "train/qa_eval.h"
#include "train/seq2seq_eval.h"
#include "train/token_cls_eval.h"
#include "util/error.h"

namespace strata::cli {

namespace {

// The files of each split the mode reads: training reads all the arguments name (do_eval /
// do_predict permitting), evaluate reads validation_file (else test_file) as its validation
// split, predict reads test_file.
struct Files {
  std::string train, validation, test;
};

Files files_of(const TrainingArguments& a, Mode mode) {
  switch (mode) {
    case Mode::Train: return {a.train_file, a.do_eval ? a.validation_file : "", a.do_predict ? a.test_file : ""};
    case Mode::Evaluate: {
      const std::string& f = a.validation_file.empty() ? a.test_file : a.validation_file;
      if (f.empty()) fail("strata evaluate: set validation_file (or test_file) to evaluate on");
      return {"", f, ""};
    }
    case Mode::Predict:
      if (a.test_file.empty()) fail("strata predict: set test_file");
      return {"", "", a.test_file};
  }
  return {};
}

// max_train_samples / max_eval_samples / max_predict_samples of the split `s` of `job`.
int64_t max_samples(const TrainingArguments& a, const JobData& job, const Split& s) {
  return &s == &job.train ? a.max_train_samples : &s == &job.validation ? a.max_eval_samples : a.max_predict_samples;
}

// run_glue's task_to_keys: the text columns of each GLUE task (the second: the pair, or none).
void glue_columns(const std::string& task_name, data::Columns& columns) {
  static const std::map<std::string, std::pair<const char*, const char*>> kKeys = {
      {"cola", {"sentence", ""}},        {"mnli", {"premise", "hypothesis"}}, {"mrpc", {"sentence1", "sentence2"}},
      {"qnli", {"question", "sentence"}}, {"qqp", {"question1", "question2"}}, {"rte", {"sentence1", "sentence2"}},
      {"sst2", {"sentence", ""}},        {"stsb", {"sentence1", "sentence2"}}, {"wnli", {"sentence1", "sentence2"}}};
  const auto it = kKeys.find(task_name);
  if (it == kKeys.end())
    fail("task_name '", task_name, "' is not a GLUE task (cola, mnli, mrpc, qnli, qqp, rte, sst2, stsb, wnli)");
  columns.text = it->second.first;
  columns.more_text.clear();
  columns.pair = it->second.second;
}

// text_column as data::Columns: one name, or several joined by text_column_delimiter.
void text_columns(const TrainingArguments& a, data::Columns& columns) {
  columns.more_text.clear();
  for (size_t at = 0, comma; at <= a.text_column.size(); at = comma + 1) {
    comma = std::min(a.text_column.find(',', at), a.text_column.size());
    (at == 0 ? columns.text : columns.more_text.emplace_back()) = a.text_column.substr(at, comma - at);
  }
  columns.text_delimiter = a.text_column_delimiter;
  columns.pair = a.text_pair_column;
}

data::CollatorOptions collator_of(const TrainingArguments& a) {
  data::CollatorOptions c;
  c.max_seq_length = static_cast<size_t>(a.max_seq_length);
  c.pad_to_max_length = a.pad_to_max_length;
  c.pad_to_multiple_of = static_cast<size_t>(a.pad_to_multiple_of);
  return c;
}

void refuse_validation_split(const TrainingArguments& a, const char* task) {
  if (a.validation_split_percentage > 0)
    fail("validation_split_percentage splits text datasets; for ", task, " give a validation_file");
  if (a.streaming) fail("streaming reads text datasets; ", task, " data is read whole");
}

// A tokenizer of the job's own for one encoder (an encoder sets its truncation).
tok::Tokenizer& new_tokenizer(const TrainingArguments& a, JobData& job) {
  job.tokenizers.push_back(std::make_unique<tok::Tokenizer>(tok::Tokenizer::from_dir(a.tokenizer_name)));
  return *job.tokenizers.back();
}

// run_glue and run_mlm / run_clm: text files, labelled for classification, raw for LM.
void load_text(const TrainingArguments& a, Mode mode, ModelConfig& cfg, JobData& job) {
  const bool lm = cfg.task == Task::MaskedLM || cfg.task == Task::CausalLM;
  std::optional<data::PretrainingOptions> lm_opts;
  data::PretrainingPlan plan;  // of classification data: texts truncated to max_seq_length
  plan.encoder_max_length = static_cast<size_t>(a.max_seq_length);
  if (lm) {
    lm_opts = pretraining_options(a, cfg.task == Task::MaskedLM ? data::LmObjective::Masked : data::LmObjective::Causal,
                                  static_cast<size_t>(max_sequence_length(cfg)));
    plan = data::plan_pretraining(*lm_opts);
  }
  auto encoder = std::make_shared<data::TokenizerEncoder>(new_tokenizer(a, job), plan.encoder_max_length,
                                                          plan.pad_token_required);
  const Files files = files_of(a, mode);
  data::DataOptions d;
  d.problem_type = parse_problem_type(a.problem_type, "problem_type");
  d.seed = static_cast<uint64_t>(a.seed);
  d.validation_split_percentage = mode == Mode::Train ? a.validation_split_percentage : 0;
  text_columns(a, d.columns);
  if (!lm && !a.task_name.empty()) {
    // A GLUE task's columns, unless the configuration names its own (run_glue reads the task's).
    data::Columns glue = d.columns;
    glue_columns(a.task_name, glue);
    if (a.text_column == "text" && a.text_pair_column.empty()) d.columns = glue;
    // run_glue: is_regression = task_name == "stsb"
    if (a.task_name == "stsb" && d.problem_type == ProblemType::Unset) d.problem_type = ProblemType::Regression;
  }
  d.columns.label = lm ? "" : a.label_column;
  d.streaming = a.streaming;
  d.keep_blank_lines = plan.keep_blank_lines;
  data::Datasets ds;
  if (mode == Mode::Train) {
    d.train_file = files.train;
    d.validation_file = files.validation;
    d.test_file = files.test;
    ds = data::load_datasets(d);
    if (!lm && ds.labels.num_labels > 0) {
      cfg.set_labels(ds.labels.id2label);
      cfg.problem_type = ds.labels.problem;
    }
  } else {  // labels come from the trained model's config.json
    if (!lm)
      ds.labels = data::label_info_from_names(
          cfg.problem_type == ProblemType::Unset ? ProblemType::SingleLabel : cfg.problem_type, cfg.label_names());
    if (!files.validation.empty()) ds.validation = data::load_dataset(files.validation, d, ds.labels, false);
    if (!files.test.empty()) ds.test = data::load_dataset(files.test, d, ds.labels, true);
  }
  auto split = [&](Split& s, const std::shared_ptr<const data::TextDataset>& set) {
    if (!set) return;
    s.labelled = lm || set->has_labels();
    if (lm) s.batches = data::make_pretraining_batches(set, encoder, *lm_opts);
    else s.batches = std::make_shared<data::TextBatches>(set, encoder, collator_of(a));
    s.batches = data::first_examples(s.batches, max_samples(a, job, s));
  };
  split(job.train, ds.train);
  split(job.validation, ds.validation);
  split(job.test, ds.test);
}

// run_ner: words and their tags; the training split fixes the tag set.
void load_token_cls(const TrainingArguments& a, Mode mode, ModelConfig& cfg,
                    JobData& job) {
  refuse_validation_split(a, "token classification");
  const Files files = files_of(a, mode);
  data::TokenClsOptions o;
  o.train_file = files.train;
  o.validation_file = files.validation;
  o.test_file = files.test;
  // run_ner reads `tokens` and `tags`-like columns; text / label are the defaults of text data.
  o.columns.text = a.text_column == "text" ? "tokens" : a.text_column;
  // run_ner's default label column is "<task_name>_tags" (ner_tags, pos_tags, ...).
  o.columns.label = a.label_column != "label" ? a.label_column : a.task_name.empty() ? "tags" : a.task_name + "_tags";
  if (mode != Mode::Train) o.label_names = cfg.label_names();
  data::TokenClsData d = data::load_token_cls(o);
  if (mode == Mode::Train) cfg.set_labels(d.tags.names);
  // run_ner: byte-level BPE models need a space before each word to tokenize it as in text.
  const bool prefix_space = cfg.model_type == "gpt2" || cfg.model_type == "roberta";
  auto encoder = std::make_shared<const data::WordEncoder>(new_tokenizer(a, job),
                                                           static_cast<size_t>(a.max_seq_length), prefix_space);
  auto split = [&](Split& s, const std::shared_ptr<const data::TokenClsDataset>& set) {
    if (!set) return;
    s.labelled = set->has_tags;
    s.batches = data::first_examples(
        std::make_shared<data::TokenClsBatches>(set, encoder, d.tags, a.label_all_tokens, collator_of(a)),
        max_samples(a, job, s));
    s.eval = token_cls_eval_task(d.tags.names, a.return_entity_level_metrics);
  };
  split(job.train, d.train);
  split(job.validation, d.validation);
  split(job.test, d.test);
}

// run_qa: question / context / answers, cut into overlapping windows (features).
void load_qa(const TrainingArguments& a, Mode mode, JobData& job) {
  refuse_validation_split(a, "question answering");
  if (a.doc_stride >= a.max_seq_length)
    fail("doc_stride (", a.doc_stride, ") must be smaller than max_seq_length (", a.max_seq_length,
         "): a long context's windows overlap by doc_stride tokens");
  const Files files = files_of(a, mode);
  data::QaColumns columns;
  columns.question = a.question_column;
  columns.context = a.context_column;
  columns.answers = a.answer_column;
  data::QaFeatureOptions fo;
  fo.max_seq_length = static_cast<size_t>(a.max_seq_length);
  fo.doc_stride = static_cast<size_t>(a.doc_stride);
  // Always padded to max_seq_length, run_qa's default: the span loss's softmax runs over every
  // position, padding included, so a length that depended on the batch would change the
  // loss (and make 2 ranks differ from 1).
  fo.pad_to_max_length = true;
  data::CollatorOptions collator = collator_of(a);
  collator.pad_to_max_length = true;
  QaPostprocessOptions po;
  po.version_2_with_negative = a.version_2_with_negative;
  po.n_best_size = static_cast<size_t>(a.n_best_size);
  po.max_answer_length = static_cast<size_t>(a.max_answer_length);
  po.null_score_diff_threshold = a.null_score_diff_threshold;
  tok::Tokenizer& tok = new_tokenizer(a, job);
  const int32_t pad = data::pad_token_id(tok);
  auto split = [&](Split& s, const std::string& path, bool train) {
    if (path.empty()) return;
    data::QaExamples read =
        data::read_qa_examples(path, data::detect_format(path, "", 0), columns, /*answers_optional=*/!train && &s == &job.test);
    // run_qa selects the first N examples, makes their windows, then keeps the first N windows
    // (for training; evaluation keeps every window of the N examples, so each has an answer).
    const int64_t max_n = max_samples(a, job, s);
    if (max_n >= 0 && static_cast<size_t>(max_n) < read.examples.size()) read.examples.resize(static_cast<size_t>(max_n));
    auto examples = std::make_shared<const data::QaExamples>(std::move(read));
    if (!a.version_2_with_negative)
      for (const data::QaExample& e : examples->examples)
        if (examples->has_answers && e.answers.empty())
          fail(path, ": line ", e.line, ": the question has no answer; set version_2_with_negative: true for "
               "data with unanswerable questions (SQuAD v2)");
    auto features = std::make_shared<const data::QaFeatures>(data::make_qa_features(tok, *examples, fo, train));
    s.labelled = examples->has_answers;
    s.batches = std::make_shared<data::QaBatches>(features, pad, collator);
    if (train) s.batches = data::first_examples(s.batches, max_n);
    s.eval = qa_eval_task(examples, features, po);
  };
  split(job.train, files.train, true);
  split(job.validation, files.validation, false);
  split(job.test, files.test, false);
}

// run_summarization / run_translation: sources and targets, evaluated by generating.
void load_seq2seq(const TrainingArguments& a, Mode mode, const ModelConfig& cfg,
                  std::function<const Model<float>&()> model, JobData& job) {
  refuse_validation_split(a, "sequence to sequence");
  const Files files = files_of(a, mode);
  data::Seq2SeqColumns columns;
  columns.source = a.text_column;
  columns.target = a.summary_column;
  columns.source_lang = a.source_lang;
  columns.target_lang = a.target_lang;
  tok::Tokenizer& tok = new_tokenizer(a, job);
  const data::TokenizerEncoder encoder(tok, 0);  // each side is cut to its own length
  data::Seq2SeqBatchOptions bo;
  bo.source_prefix = a.source_prefix;
  bo.max_source_length = static_cast<size_t>(a.max_source_length);
  bo.pad_to_max_length = a.pad_to_max_length;
  bo.pad_to_multiple_of = static_cast<size_t>(a.pad_to_multiple_of);
  bo.ignore_pad_token_for_loss = a.ignore_pad_token_for_loss;
  const int val_max_target = a.val_max_target_length > 0 ? a.val_max_target_length : a.max_target_length;

  Seq2SeqEvalOptions eo;
  eo.predict_with_generate = a.predict_with_generate;
  eo.metric = a.source_lang.empty() ? Seq2SeqMetric::Rouge : Seq2SeqMetric::Bleu;
  eo.generation = gen::load_generation_config(a.model_name_or_path, nullptr);
  eo.generation.max_new_tokens.reset();
  eo.generation.max_length = a.generation_max_length > 0 ? a.generation_max_length : val_max_target;
  eo.generation.num_return_sequences = 1;
  if (a.generation_num_beams > 0) eo.generation.num_beams = a.generation_num_beams;
  const std::string where = "the generation settings of " + a.model_name_or_path + ": ";
  eo.generation.validate(where);
  eo.generation.check_forced_ids(cfg.vocab_size, where);
  eo.decoder_start_token_id = cfg.raw.value("decoder_start_token_id", cfg.pad_token_id);
  eo.pad_token_id = cfg.pad_token_id;
  eo.decode = [&tok](const std::vector<int32_t>& ids) { return tok.decode(ids, true); };
  eo.model = std::move(model);
  if (a.predict_with_generate && !eo.model) fail("predict_with_generate: this caller gives no model to generate with");

  auto split = [&](Split& s, const std::string& path, bool train) {
    if (path.empty()) return;
    auto examples = std::make_shared<const data::Seq2SeqExamples>(data::read_seq2seq_examples(
        path, data::detect_format(path, "", 0), columns, /*targets_optional=*/&s == &job.test));
    data::Seq2SeqBatchOptions o = bo;
    o.max_target_length = static_cast<size_t>(train ? a.max_target_length : val_max_target);
    s.labelled = examples->has_targets;
    s.batches = data::first_examples(std::make_shared<data::Seq2SeqBatches>(examples, encoder, o),
                                     max_samples(a, job, s));
    s.eval = seq2seq_eval_task(eo);
  };
  split(job.train, files.train, true);
  split(job.validation, files.validation, false);
  split(job.test, files.test, false);
}

}  // namespace

JobData load_job_data(const TrainingArguments& a, Mode mode, ModelConfig& cfg,
                      std::function<const Model<float>&()> model) {
  JobData job;
  switch (cfg.task) {
    case Task::SequenceClassification:
    case Task::MaskedLM:
    case Task::CausalLM: load_text(a, mode, cfg, job); break;
    case Task::TokenClassification: load_token_cls(a, mode, cfg, job); break;
    case Task::QuestionAnswering: load_qa(a, mode, job); break;
    case Task::Seq2SeqLM: load_seq2seq(a, mode, cfg, std::move(model), job); break;
    case Task::PreTraining:
      fail(cfg.architecture(), " (masked LM + sentence order) has no training data pipeline: pretrain ALBERT with "
           "task: masked-lm, as run_mlm does; strata step runs the pretraining head on a batch");
    case Task::Base: fail("the model has no task head; set task (e.g. sequence-classification)");
  }
  if (mode == Mode::Predict && (cfg.task == Task::MaskedLM || cfg.task == Task::CausalLM))
    fail("strata predict: a ", task_name(cfg.task), " model writes no predictions; strata evaluate reports its "
         "perplexity", cfg.task == Task::CausalLM ? ", and strata generate samples text from it" : "");
  return job;
}

}  // namespace strata::cli
