// What each pipeline stage holds. Stage s runs a contiguous range of the model's units (the
// embeddings with the first stage, the head with the last) and owns the parameters that its
// units are the first to read: one contiguous window [begin(s), end(s)) of the flat buffers,
// since the parameter table lists parameters in unit order. It updates them, and keeps their
// gradients and optimizer state.
//
// A parameter read by units of several stages is shared: the tied input / output embedding
// (GPT-2's wte read by lm_head, BERT's word embeddings read by the MLM decoder) and ALBERT's
// layers shared by every block. Its owner is the first stage that reads it; the others borrow
// a copy. Each step a borrower sends the gradient its units added to the owner, which sums it
// into its own before its last backward (so the data-parallel reduction and the optimizer see
// the whole gradient), and after the update the owner sends the new values back: the copies
// stay identical, and only the owner keeps optimizer state for them.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "models/model.h"

namespace strata {

class PipelineStages {
 public:
  // blocks_per_stage: how many transformer blocks each stage runs (each >= 1, summing to
  // the model's blocks).
  PipelineStages(const Model<float>& model, const std::vector<int>& blocks_per_stage);

  int count() const { return static_cast<int>(units_.size()); }
  UnitRange units(int s) const { return units_.at(static_cast<size_t>(s)); }
  int blocks(int s) const;
  size_t begin(int s) const { return windows_.at(static_cast<size_t>(s)).first; }
  size_t end(int s) const { return windows_.at(static_cast<size_t>(s)).second; }

  struct Shared {
    size_t entry;                // index into the parameter table
    int owner;                   // the first stage that reads it
    std::vector<int> borrowers;  // the other stages that read it, in order
  };
  const std::vector<Shared>& shared() const { return shared_; }
  // Table entries stage s reads but another stage owns.
  std::vector<size_t> borrowed(int s) const;
  // What stage s keeps: the entries of its window and those it borrows (the rest of the flat
  // buffers it never reads or writes).
  EntryFilter keeps(const ParamTable& table, int s) const;

  // One line per stage for the start-of-job banner: units, blocks, parameters owned and borrowed.
  std::string describe(const ParamTable& table) const;

 private:
  std::vector<UnitRange> units_;
  std::vector<std::pair<size_t, size_t>> windows_;
  std::vector<Shared> shared_;
};

}  // namespace strata
