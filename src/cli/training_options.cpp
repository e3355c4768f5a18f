#include "cli/training_options.h"

#include <CLI/CLI.hpp>

#include "train/hf_other_args.h"
#include "util/error.h"

namespace strata::cli {

namespace {
constexpr const char* kGroup = "TrainingArguments (docs/training.md)";
constexpr const char* kOtherGroup = "HF arguments without an option here (docs/hf_compat.md)";
constexpr auto kTakeAll = CLI::MultiOptionPolicy::TakeAll;
}  // namespace

TrainingOptions::TrainingOptions(CLI::App& cmd) : cmd_(&cmd) {
  for (const TrainingOptionDoc& d : training_option_docs()) {
    std::string names = "--" + d.name;
    for (const std::string& alias : d.aliases) names += ",--" + alias;
    CLI::Option* o = cmd.add_option(names, d.help)->type_name(d.type)->group(kGroup)->multi_option_policy(kTakeAll);
    if (d.type == "BOOL") {  // --do_eval, --do_eval false
      // CLI11 gives a bare option its default_str as the value, so a bool's default is shown
      // through its type name instead.
      o->expected(0, 1)->type_name("BOOL=" + d.default_value);
    } else if (!d.default_value.empty()) {
      o->default_str(d.default_value);
    }
    if (d.type == "LIST") o->expected(1, CLI::detail::expected_max_vector_size)->allow_extra_args();  // a b c
    entries_[o] = {d.name, d.type == "LIST", d.type == "BOOL"};
  }
  for (const HfOtherArg& arg : hf_other_args()) {
    const std::string help = arg.kind == HfOtherArg::Kind::Refused ? cat("refused unless at HF's default: ", arg.refusal)
                             : arg.kind == HfOtherArg::Kind::Ignored ? "accepted; has no effect here (one warning names it)"
                                                                     : "accepted; strata always behaves so";
    CLI::Option* o = cmd.add_option(cat("--", arg.name), help)->group(kOtherGroup)->expected(0, 1)->multi_option_policy(kTakeAll);
    entries_[o] = {arg.name, false, true};
  }
  set_ = cmd.add_option("--set", "an option as key=value, the value read as YAML (e.g. --set 'report_to=[csv]')")
             ->type_name("KEY=VALUE")
             ->multi_option_policy(kTakeAll);
}

std::vector<ArgumentOverride> TrainingOptions::overrides() const {
  std::vector<ArgumentOverride> out;
  std::map<const CLI::Option*, size_t> used;  // results taken so far, per option
  for (const CLI::Option* o : cmd_->parse_order()) {
    const std::vector<std::string>& results = o->results();
    size_t& next = used[o];
    if (next >= results.size()) continue;  // a list option's later words, taken with its first
    if (o == set_) {
      out.push_back(parse_set_override(results[next++]));
      continue;
    }
    const auto it = entries_.find(o);
    if (it == entries_.end()) continue;  // the positional CONFIG
    const Entry& e = it->second;
    if (e.list) {  // every word given, as one list
      YAML::Node list(YAML::NodeType::Sequence);
      for (; next < results.size(); ++next) list.push_back(results[next]);
      out.push_back({e.key, list, "--" + e.key});
      continue;
    }
    const std::string& v = results[next++];
    out.push_back({e.key, YAML::Node(v.empty() && e.bare_is_true ? std::string("true") : v), "--" + e.key});
  }
  return out;
}

}  // namespace strata::cli
