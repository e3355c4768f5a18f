// Where strata finds the data files of its checkout: the instance catalog, the links'
// all-reduce measurements and the network-namespace cluster script. CMake writes their
// definitions into one generated file (build/data_paths.cpp): no other compile line names a
// path of the checkout, so ccache reuses those objects in a clone elsewhere (CI's).
#pragma once

namespace strata::cli {

const char* default_catalog();  // catalog/instances.yaml: `strata job run` unless a spec names another
const char* default_links();    // catalog/links.yaml: what studies and `strata plan` project with
const char* default_gpus();     // catalog/gpus.yaml: the GPU models of those projections
const char* netns_script();     // scripts/netns_cluster.sh: the hosts `strata study` runs netns cells on

}  // namespace strata::cli
