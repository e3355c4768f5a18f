#include "train/checkpoint.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "io/files.h"
#include "io/python_json.h"
#include "models/pretrained.h"
#include "train/optimizer_files.h"
#include "util/error.h"

namespace strata {

namespace fs = std::filesystem;

namespace {

// HF's stateful_callbacks: each ExportableState callback's state() under its class name.
nlohmann::json stateful_callbacks(const TrainerState& s) {
  nlohmann::json out = {{"TrainerControl",
                         {{"args",
                           {{"should_epoch_stop", false},
                            {"should_evaluate", false},
                            {"should_log", false},
                            {"should_save", s.saved_checkpoint},
                            {"should_training_stop", s.training_stopped_at_save}}},
                          {"attributes", nlohmann::json::object()}}}};
  if (s.early_stopping_patience > 0)
    out["EarlyStoppingCallback"] = {
        {"args",
         {{"early_stopping_patience", s.early_stopping_patience},
          {"early_stopping_threshold", s.early_stopping_threshold}}},
        {"attributes", {{"early_stopping_patience_counter", s.early_stopping_counter}}}};
  return out;
}

// The step a checkpoint directory was saved at: N of ".../checkpoint-N".
std::optional<int64_t> checkpoint_step(const std::string& dir) {
  const std::string name = fs::path(dir).filename().string();
  const std::string prefix = "checkpoint-";
  // 18 digits at most: every step fits int64 (a longer name is not a checkpoint of ours).
  if (!name.starts_with(prefix) || name.size() == prefix.size() || name.size() > prefix.size() + 18)
    return std::nullopt;
  int64_t step = 0;
  for (char c : name.substr(prefix.size())) {
    if (c < '0' || c > '9') return std::nullopt;
    step = step * 10 + (c - '0');
  }
  return step;
}

}  // namespace

nlohmann::json TrainerState::hf_json() const {
  const nlohmann::json null;
  // Only rank 0 writes, so the process flags are those of the main process. The fields are
  // those of transformers 5's TrainerState (best_global_step and stateful_callbacks since 4.46).
  return {{"best_global_step", best_global_step ? nlohmann::json(*best_global_step) : null},
          {"best_metric", has_best ? nlohmann::json(best_metric) : null},
          {"best_model_checkpoint", has_best ? nlohmann::json(best_model_checkpoint) : null},
          {"epoch", epoch_float},
          {"eval_steps", eval_steps},
          {"global_step", global_step},
          {"is_hyper_param_search", false},
          {"is_local_process_zero", true},
          {"is_world_process_zero", true},
          {"log_history", log_history},
          {"logging_steps", logging_steps},
          {"max_steps", max_steps},
          {"num_input_tokens_seen", num_input_tokens_seen},
          {"num_train_epochs", num_train_epochs},
          {"save_steps", save_steps},
          {"stateful_callbacks", stateful_callbacks(*this)},
          {"total_flos", total_flos},
          {"train_batch_size", train_batch_size},
          {"trial_name", null},
          {"trial_params", null}};
}

nlohmann::json TrainerState::resume_json() const {
  nlohmann::json j = {
      {"data_position", {{"epoch", epoch}, {"batch_in_epoch", batch_in_epoch}}},
      {"global_batch_size", global_batch_size},
      {"seed", seed},
      {"data_seed", data_seed},
      {"early_stopping_patience_counter", early_stopping_counter},
      {"running_loss", {{"since_log", loss_since_log}, {"steps_since_log", steps_since_log}, {"total", loss_total}}}};
  // GradScaler's state_dict names.
  if (loss_scaler)
    j["loss_scaler"] = {{"scale", loss_scaler->scale},
                        {"_growth_tracker", loss_scaler->growth_tracker},
                        {"skipped_steps", loss_scaler->skipped_steps}};
  return j;
}

TrainerState TrainerState::from_json(const nlohmann::json& hf, const nlohmann::json& resume, const std::string& src) {
  TrainerState s;
  try {
    s.global_step = hf.at("global_step").get<int64_t>();
    s.epoch_float = hf.at("epoch").is_null() ? 0.0 : hf.at("epoch").get<double>();
    s.max_steps = hf.at("max_steps").get<int64_t>();
    s.has_best = !hf.at("best_metric").is_null();
    if (s.has_best) {
      s.best_metric = hf.at("best_metric").get<double>();
      s.best_model_checkpoint = hf.at("best_model_checkpoint").get<std::string>();
    }
    // Checkpoints of transformers < 4.46 and of strata before it wrote the field: the step of
    // the best checkpoint's name.
    if (hf.contains("best_global_step") && !hf.at("best_global_step").is_null())
      s.best_global_step = hf.at("best_global_step").get<int64_t>();
    else if (s.has_best)
      s.best_global_step = checkpoint_step(s.best_model_checkpoint);
    if (hf.contains("stateful_callbacks") && hf.at("stateful_callbacks").contains("TrainerControl")) {
      const nlohmann::json& control = hf.at("stateful_callbacks").at("TrainerControl").at("args");
      s.saved_checkpoint = control.at("should_save").get<bool>();
      s.training_stopped_at_save = control.at("should_training_stop").get<bool>();
    }
    s.total_flos = hf.value("total_flos", 0.0);
    s.num_input_tokens_seen = hf.value("num_input_tokens_seen", int64_t{0});
    s.log_history = hf.at("log_history");
    s.epoch = resume.at("data_position").at("epoch").get<int64_t>();
    s.batch_in_epoch = resume.at("data_position").at("batch_in_epoch").get<int64_t>();
    s.global_batch_size = resume.at("global_batch_size").get<int64_t>();
    s.seed = resume.at("seed").get<uint64_t>();
    s.data_seed = resume.value("data_seed", s.seed);  // before data_seed, the data order followed seed
    s.early_stopping_counter = resume.at("early_stopping_patience_counter").get<int>();
    if (resume.contains("loss_scaler")) {
      const nlohmann::json& l = resume.at("loss_scaler");
      s.loss_scaler = LossScalerState{l.at("scale").get<double>(), l.at("_growth_tracker").get<int64_t>(),
                                      l.at("skipped_steps").get<int64_t>()};
    }
    s.loss_since_log = resume.at("running_loss").at("since_log").get<double>();
    s.steps_since_log = resume.at("running_loss").at("steps_since_log").get<int64_t>();
    s.loss_total = resume.at("running_loss").at("total").get<double>();
  } catch (const nlohmann::json::exception& e) {
    fail(src, ": trainer_state.json / strata_state.json do not hold a strata trainer state (", e.what(), ")");
  }
  return s;
}

void copy_tokenizer_files(const std::string& src_dir, const std::string& dst_dir) {
  for (const char* name : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt",
                           "vocab.json", "merges.txt", "spiece.model", "added_tokens.json"}) {
    const fs::path src = fs::path(src_dir) / name;
    // Through write_file_atomic: flushed like the other files, and a full disk is reported
    // with the path and the bytes needed.
    if (fs::exists(src)) io::write_file_atomic((fs::path(dst_dir) / name).string(), io::read_file(src.string()));
  }
}

namespace {

// A checkpoint-<step> lives under two hidden names outside its life as a checkpoint: while it
// is written and while it is deleted. Neither starts with "checkpoint-": list_checkpoints
// never takes one for a checkpoint. The suffix is the writer's pid.
constexpr std::string_view kWritingPrefix = ".tmp-checkpoint-";
constexpr std::string_view kDeletingPrefix = ".deleting-checkpoint-";

// Bytes of the files under dir: what a checkpoint takes on disk.
uint64_t tree_bytes(const fs::path& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec))
    if (e.is_regular_file(ec)) total += e.file_size(ec);
  return total;
}

}  // namespace

void remove_checkpoint_debris(const std::string& output_dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(output_dir, ec)) {
    const std::string n = e.path().filename().string();
    if (!n.starts_with(kWritingPrefix) && !n.starts_with(kDeletingPrefix)) continue;
    const std::string pid_text = n.substr(n.rfind('-') + 1);
    if (pid_text.empty() || !std::all_of(pid_text.begin(), pid_text.end(), ::isdigit)) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    if (pid == ::getpid() || (::kill(pid, 0) != 0 && errno == ESRCH)) fs::remove_all(e.path(), ec);
  }
}

void remove_checkpoint(const std::string& dir) {
  // Renamed first, deleted after: a kill during the deletion leaves a hidden directory that
  // nothing takes for a checkpoint, never a checkpoint-<step> with files missing.
  const fs::path path(dir);
  const fs::path doomed =
      path.parent_path() / cat(kDeletingPrefix, path.filename().string().substr(11), "-", ::getpid());
  fs::rename(path, doomed);
  fs::remove_all(doomed);
}

std::string save_checkpoint(const std::string& output_dir, const Model<float>& model,
                            const std::function<void(const std::string&)>& write_optimizer,
                            const TrainerState& state, const std::string& tokenizer_dir,
                            const std::string& training_args_json, uint64_t max_shard_bytes) {
  const fs::path final_dir = fs::path(output_dir) / ("checkpoint-" + std::to_string(state.global_step));
  const fs::path tmp = fs::path(output_dir) / cat(kWritingPrefix, state.global_step, "-", ::getpid());
  remove_checkpoint_debris(output_dir);
  try {
    fs::create_directories(tmp);
    save_pretrained(model, tmp.string(), max_shard_bytes);
    copy_tokenizer_files(tokenizer_dir, tmp.string());
    write_optimizer(tmp.string());
    io::write_file_atomic((tmp / "trainer_state.json").string(), io::python_json(state.hf_json()) + "\n");
    io::write_file_atomic((tmp / "strata_state.json").string(), state.resume_json().dump(2) + "\n");
    io::write_file_atomic((tmp / "training_args.json").string(), training_args_json);
    // A checkpoint of this step from an earlier, interrupted run makes way.
    if (fs::exists(final_dir)) remove_checkpoint(final_dir.string());
    // Not followed by an fsync of output_dir: a power loss that forgets this rename leaves the
    // checkpoint under its temporary name, which resuming ignores, as after a kill.
    fs::rename(tmp, final_dir);
  } catch (const std::exception& e) {
    // Nothing of the failed save stays; the earlier checkpoints were not touched.
    std::error_code ec;
    fs::remove_all(tmp, ec);
    const std::vector<std::string> kept = list_checkpoints(output_dir);
    fail("saving checkpoint-", state.global_step, " into ", output_dir, " failed: ", e.what(), ". ",
         kept.empty() ? std::string("No earlier checkpoint exists.")
                      : cat("The last good checkpoint, ", kept.back(), " (", tree_bytes(kept.back()),
                            " bytes), is intact: make room or fix the directory, then resume_from_checkpoint: latest."));
  }
  return final_dir.string();
}

TrainerState load_checkpoint_state(const std::string& dir, const Model<float>& model, Optimizer<float>& opt) {
  read_optimizer_state(dir, model.table(), opt, model.tensor_split());
  const nlohmann::json hf = io::read_json_file((fs::path(dir) / "trainer_state.json").string());
  const fs::path resume = fs::path(dir) / "strata_state.json";
  if (fs::exists(resume)) return TrainerState::from_json(hf, io::read_json_file(resume.string()), dir);
  // Checkpoints of strata before strata_state.json kept its fields in trainer_state.json.
  if (hf.contains("data_position")) return TrainerState::from_json(hf, hf, dir);
  fail(dir, ": no strata_state.json (the data position and running losses a resumed run continues from): this "
       "checkpoint was not written by strata's Trainer. To fine-tune its weights, set model_name_or_path to it");
}

std::vector<std::string> list_checkpoints(const std::string& output_dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  if (!fs::exists(output_dir)) return {};
  for (const auto& e : fs::directory_iterator(output_dir)) {
    const std::optional<int64_t> step = checkpoint_step(e.path().string());
    if (!e.is_directory() || !step || !fs::exists(e.path() / "trainer_state.json")) continue;
    found.push_back({*step, e.path().string()});
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& [step, path] : found) out.push_back(path);
  return out;
}

void rotate_checkpoints(const std::string& output_dir, int limit, const std::string& keep) {
  if (limit <= 0) return;
  std::vector<std::string> all = list_checkpoints(output_dir);
  // HF keeps the best one too: if it would be deleted, it takes one of the kept places' turn.
  int excess = static_cast<int>(all.size()) - limit;
  for (size_t i = 0; i + 1 < all.size() && excess > 0; ++i) {
    if (!keep.empty() && fs::exists(keep) && fs::equivalent(all[i], keep)) continue;
    remove_checkpoint(all[i]);
    --excess;
  }
}

}  // namespace strata
