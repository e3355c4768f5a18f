// checkpoint_uri: where a job's checkpoints outlive its hosts, as an S3 prefix does for
// SageMaker. A directory here (a path or a file:// URI) on storage every attempt can reach.
// The ranks write to checkpoint_local_path; the runner copies each complete checkpoint-<N>
// there into the store under a temporary name and renames it, so a checkpoint half copied
// (a crash, a kill mid-copy) never carries the name a resume looks for.
#pragma once
#include <string>
#include <vector>

namespace strata::jobs {

class CheckpointStore {
 public:
  // `uri`: a path or file://PATH. Other schemes (s3://, gs://, ...) are refused: strata has
  // no client for them. `where` names the spec line in errors.
  static std::string resolve(const std::string& uri, const std::string& where);

  explicit CheckpointStore(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }

  // Writes, reads back and removes a probe file in the directory, or in its nearest existing
  // ancestor when it does not exist yet; errors say it is unreachable or not writable.
  void check_writable(const std::string& where) const;

  // The complete checkpoint-<N> directories here (as the Trainer lists them), oldest first.
  std::vector<std::string> checkpoints() const;

  // Copies every checkpoint-<N> of local_dir the store lacks (each atomically), then removes
  // those the store has but local_dir no longer does, older than local_dir's newest (what
  // save_total_limit rotated away). Returns the names copied. A checkpoint that disappears
  // while it is copied (rotated by the trainer) is skipped, its partial copy removed.
  std::vector<std::string> upload(const std::string& local_dir) const;

  // Makes local_dir's checkpoints those of the store (a fresh host downloads them before it
  // starts); returns the newest one's path in local_dir, or "" when there is none.
  std::string download(const std::string& local_dir) const;

 private:
  std::string dir_;
};

}  // namespace strata::jobs
