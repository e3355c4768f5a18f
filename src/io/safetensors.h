// The safetensors format (https://huggingface.co/docs/safetensors): 8-byte little-endian
// header length N, N bytes of JSON {name: {dtype, shape, data_offsets:[begin,end]}, "__metadata__":
// {str: str}}, then the data section. Files are memory-mapped read-only; every tensor is a view.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/mapped_file.h"
#include "tensor/dtype.h"

namespace strata::io {

struct TensorView {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const std::byte* data;  // into the mapping; valid while the owning file lives
  size_t nbytes;
  int64_t numel() const;
};

// The tensor named `name` among a weight file's tensors, or nullptr.
const TensorView* find_tensor(const std::vector<TensorView>& tensors, std::string_view name);

// A read-only, memory-mapped .safetensors file. The whole header is validated on open
// (header length inside the file, valid JSON, known dtypes, shape x dtype size == byte span,
// offsets inside the data section, no overlaps); any violation throws strata::Error naming
// the file and the tensor.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(SafetensorsFile&&) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<TensorView>& tensors() const { return tensors_; }  // in data-offset order
  const TensorView* find(std::string_view name) const { return find_tensor(tensors_, name); }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::string path_;
  MappedFile map_;
  std::vector<TensorView> tensors_;
  std::map<std::string, std::string> metadata_;
};

class TorchBinFile;

// The weight files from_pretrained looks for in a model directory, in its order of preference.
inline constexpr std::string_view kWeightFiles[] = {"model.safetensors", "model.safetensors.index.json",
                                                    "pytorch_model.bin", "pytorch_model.bin.index.json"};
// Whether the HF model of DIR (io::hf_model_dir) has any of them.
bool has_weight_files(const std::string& dir);

// The tensors of a model directory, as from_pretrained finds them: DIR/model.safetensors, or
// the shards listed in DIR/model.safetensors.index.json ("weight_map": name -> shard file), or,
// where a model has no safetensors, PyTorch's DIR/pytorch_model.bin or the shards of
// DIR/pytorch_model.bin.index.json (io/torch_bin.h). Errors name the file.
class SafetensorsSet {
 public:
  explicit SafetensorsSet(const std::string& dir);
  ~SafetensorsSet();
  const TensorView* find(std::string_view name) const;
  std::vector<std::string> names() const;  // sorted
  const std::vector<std::string>& files() const { return file_paths_; }

 private:
  std::vector<std::string> file_paths_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::vector<std::unique_ptr<TorchBinFile>> bins_;
  std::map<std::string, const TensorView*, std::less<>> index_;
};

// Copies a floating tensor (F64, F32, F16, BF16) into dst (numel elements), converting to T.
// Integer or bool tensors throw strata::Error naming the tensor.
template <typename T>
void convert_to(const TensorView& t, T* dst);

struct TensorToWrite {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const void* data;  // numel * dtype_size bytes
};

// The bytes of t's data: numel x dtype size.
size_t byte_size(const TensorToWrite& t);

// Writes PATH atomically: to a temporary file beside it, fsync, then rename. The header is
// padded with spaces to 8 bytes; tensors are laid out in the order given.
void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace strata::io
