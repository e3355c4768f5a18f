// report_to: csv — every logged value as one flat CSV table: columns step, epoch, then every
// other key in the order it was first logged (alphabetical within one entry); a row per log
// entry, an empty cell where an entry has no value for a column. A key first seen after rows were written (eval_* at the
// first evaluation, train_runtime at the end) adds a column: the file is rewritten from the
// run's log history with the wider header, through a temporary file and a rename, so the file
// always parses as one table. Otherwise each entry appends one row.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata {

class CsvLog {
 public:
  explicit CsvLog(std::string path) : path_(std::move(path)) {}
  // `entry` was just appended to `history` (the whole log, the checkpoint's first after a resume).
  void write(const nlohmann::json& entry, const std::vector<nlohmann::json>& history);

 private:
  bool add_columns(const nlohmann::json& entry);  // true when `entry` brought a new key
  std::string row(const nlohmann::json& entry) const;
  std::string path_;
  std::vector<std::string> columns_ = {"step", "epoch"};
  bool written_ = false;  // the file holds this process's header and rows
};

}  // namespace strata
