// PyTorch's checkpoint format, what `torch.save(model.state_dict())` writes and many Hub models
// ship as pytorch_model.bin: a zip archive holding <archive>/data.pkl, a pickle of the state
// dict, and one uncompressed file <archive>/data/<key> per storage.
//
// Read without Python. The pickle runs on a restricted machine that knows the opcodes a state
// dict uses and calls nothing but OrderedDict, torch._utils._rebuild_tensor_v2 /
// _rebuild_parameter and the typed storage classes: a pickle naming any other callable (one
// that would run code when loaded) is refused before anything is called, with an error naming
// the file and the callable. Tensors are views into the mapped file, as safetensors ones are.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "io/mapped_file.h"
#include "io/safetensors.h"

namespace strata::io {

class TorchBinFile {
 public:
  // Errors name the file and say what is wrong: not a zip (or truncated), the pre-1.6 format,
  // a compressed entry, a refused callable, an unknown opcode, a non-contiguous tensor, a
  // storage shorter than its tensors.
  explicit TorchBinFile(const std::string& path);

  const std::string& path() const { return path_; }
  const std::vector<TensorView>& tensors() const { return tensors_; }  // in the state dict's order
  const TensorView* find(std::string_view name) const { return find_tensor(tensors_, name); }

 private:
  std::string path_;
  MappedFile map_;
  std::vector<TensorView> tensors_;
};

}  // namespace strata::io
