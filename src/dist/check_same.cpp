// check_same_on_all_ranks(): built on all_gather_bytes so every rank sees every fingerprint
// and reaches the same verdict; all ranks throw together instead of one rank failing while
// the others wait for it in the next collective.
#include <string>
#include <vector>

#include "dist/communicator.h"
#include "util/error.h"

namespace strata::dist {

void check_same_on_all_ranks(Communicator& comm, const std::string& fingerprint, const std::string& what) {
  const std::string label = "check " + what;
  const std::vector<std::string> all = comm.all_gather_bytes(fingerprint, label.c_str());
  std::vector<int> differ;
  for (int r = 1; r < comm.size(); ++r)
    if (all[static_cast<size_t>(r)] != all[0]) differ.push_back(r);
  if (differ.empty()) return;
  std::string list;
  for (int r : differ) list += (list.empty() ? "" : ", ") + std::to_string(r);
  fail("configuration differs across ranks: rank", differ.size() > 1 ? "s " : " ", list,
       differ.size() > 1 ? " have" : " has", " a different ", what, " than rank 0");
}

}  // namespace strata::dist
