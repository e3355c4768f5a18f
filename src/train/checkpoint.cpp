#include "train/checkpoint.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "io/files.h"
#include "models/pretrained.h"
#include "train/optimizer_files.h"
#include "util/error.h"

namespace strata {

namespace fs = std::filesystem;

nlohmann::json TrainerState::to_json() const {
  return {{"global_step", global_step},
          {"epoch", epoch_float},
          {"data_position", {{"epoch", epoch}, {"batch_in_epoch", batch_in_epoch}}},
          {"max_steps", max_steps},
          {"global_batch_size", global_batch_size},
          {"seed", seed},
          {"best_metric", has_best ? nlohmann::json(best_metric) : nlohmann::json(nullptr)},
          {"best_model_checkpoint", has_best ? nlohmann::json(best_model_checkpoint) : nlohmann::json(nullptr)},
          {"early_stopping_patience_counter", early_stopping_counter},
          {"total_flos", total_flos},
          {"running_loss", {{"since_log", loss_since_log}, {"steps_since_log", steps_since_log}, {"total", loss_total}}},
          {"log_history", log_history}};
}

TrainerState TrainerState::from_json(const nlohmann::json& j, const std::string& src) {
  TrainerState s;
  try {
    s.global_step = j.at("global_step").get<int64_t>();
    s.epoch_float = j.at("epoch").get<double>();
    s.epoch = j.at("data_position").at("epoch").get<int64_t>();
    s.batch_in_epoch = j.at("data_position").at("batch_in_epoch").get<int64_t>();
    s.max_steps = j.at("max_steps").get<int64_t>();
    s.global_batch_size = j.at("global_batch_size").get<int64_t>();
    s.seed = j.at("seed").get<uint64_t>();
    s.has_best = !j.at("best_metric").is_null();
    if (s.has_best) {
      s.best_metric = j.at("best_metric").get<double>();
      s.best_model_checkpoint = j.at("best_model_checkpoint").get<std::string>();
    }
    s.early_stopping_counter = j.at("early_stopping_patience_counter").get<int>();
    s.total_flos = j.value("total_flos", 0.0);
    s.loss_since_log = j.at("running_loss").at("since_log").get<double>();
    s.steps_since_log = j.at("running_loss").at("steps_since_log").get<int64_t>();
    s.loss_total = j.at("running_loss").at("total").get<double>();
    s.log_history = j.at("log_history");
  } catch (const nlohmann::json::exception& e) {
    fail(src, ": not a strata trainer_state.json (", e.what(), ")");
  }
  return s;
}

void copy_tokenizer_files(const std::string& src_dir, const std::string& dst_dir) {
  for (const char* name : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt",
                           "vocab.json", "merges.txt", "spiece.model", "added_tokens.json"}) {
    const fs::path src = fs::path(src_dir) / name;
    if (fs::exists(src)) fs::copy_file(src, fs::path(dst_dir) / name, fs::copy_options::overwrite_existing);
  }
}

std::string save_checkpoint(const std::string& output_dir, const Model<float>& model,
                            const std::function<void(const std::string&)>& write_optimizer,
                            const TrainerState& state, const std::string& tokenizer_dir,
                            const std::string& training_args_json) {
  const fs::path final_dir = fs::path(output_dir) / ("checkpoint-" + std::to_string(state.global_step));
  const fs::path tmp = fs::path(output_dir) / (".tmp-checkpoint-" + std::to_string(state.global_step) + "-" +
                                               std::to_string(getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  try {
    save_pretrained(model, tmp.string());
    copy_tokenizer_files(tokenizer_dir, tmp.string());
    write_optimizer(tmp.string());
    io::write_file_atomic((tmp / "trainer_state.json").string(), state.to_json().dump(2) + "\n");
    io::write_file_atomic((tmp / "training_args.json").string(), training_args_json);
    fs::remove_all(final_dir);  // a checkpoint of this step from an earlier, interrupted run
    fs::rename(tmp, final_dir);
  } catch (...) {
    fs::remove_all(tmp);
    throw;
  }
  return final_dir.string();
}

TrainerState load_checkpoint_state(const std::string& dir, const Model<float>& model, Optimizer<float>& opt) {
  read_optimizer_state(dir, model.table(), opt);
  return TrainerState::from_json(io::read_json_file((fs::path(dir) / "trainer_state.json").string()),
                                 (fs::path(dir) / "trainer_state.json").string());
}

std::vector<std::string> list_checkpoints(const std::string& output_dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  if (!fs::exists(output_dir)) return {};
  for (const auto& e : fs::directory_iterator(output_dir)) {
    const std::string n = e.path().filename().string();
    if (!e.is_directory() || !n.starts_with("checkpoint-")) continue;
    const std::string digits = n.substr(11);
    if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit)) continue;
    if (!fs::exists(e.path() / "trainer_state.json")) continue;
    found.push_back({std::stoll(digits), e.path().string()});
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
    fs::remove_all(all[i]);
    --excess;
  }
}

}  // namespace strata
