#include "io/safetensors.h"

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "io/files.h"
#include "io/mapped_file.h"
#include "io/model_files.h"
#include "io/torch_bin.h"
#include "util/error.h"
#include "util/shape_str.h"

namespace strata::io {

namespace {

using nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 100ull << 20;  // real headers are kilobytes; more is corruption
constexpr std::string_view kMetadataKey = "__metadata__";

std::string known_dtype_names() {
  std::string names;
  for (DType t : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32,
                  DType::I16, DType::I8, DType::U8, DType::BOOL})
    names += cat(names.empty() ? "" : ", ", dtype_name(t));
  return names;
}

// The little-endian length prefix, read byte by byte so the host's byte order does not matter.
uint64_t read_le64(const std::byte* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | std::to_integer<uint64_t>(p[i]);
  return v;
}

// A JSON value that must be a non-negative integer; `what` names it in the error.
uint64_t non_negative_int(const json& v, const std::string& what) {
  if (!v.is_number_unsigned()) fail(what, ": expected non-negative integers, found ", v.dump());
  return v.get<uint64_t>();
}

// Bytes a shape needs, or nullopt past 2^64: a hostile shape must not wrap around to a
// product that happens to match the byte span.
std::optional<uint64_t> checked_nbytes(const std::vector<int64_t>& shape, size_t elem) {
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  uint64_t n = elem;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return std::nullopt;
  return n;
}

// nlohmann's what() starts with "[json.exception.parse_error.N] "; the rest is the message.
std::string without_exception_id(const json::exception& e) {
  const std::string_view what = e.what();
  const size_t close = what.find("] ");
  return std::string(close == std::string_view::npos ? what : what.substr(close + 2));
}

// nlohmann keeps only the last of repeated keys; a file naming one tensor twice is corrupt,
// so reject duplicates among the top-level keys while parsing.
json parse_header_json(const std::string& path, std::string_view text) {
  std::set<std::string> keys;
  const json::parser_callback_t reject_duplicates = [&](int depth, json::parse_event_t event,
                                                        json& parsed) {
    if (depth == 1 && event == json::parse_event_t::key && !keys.insert(parsed.get<std::string>()).second)
      fail(path, ": header names '", parsed.get<std::string>(), "' twice");
    return true;
  };
  try {
    return json::parse(text, reject_duplicates);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e400
    fail(path, ": header is not valid JSON: ", without_exception_id(e));
  }
}

std::map<std::string, std::string> parse_metadata(const std::string& path, const json& v) {
  if (!v.is_object())
    fail(path, ": \"__metadata__\" must be a JSON object of strings, found ", v.type_name());
  std::map<std::string, std::string> metadata;
  for (const auto& [key, value] : v.items()) {
    if (!value.is_string())
      fail(path, ": \"__metadata__\" entry '", key, "' must be a string, found ", value.type_name(),
           " ", value.dump());
    metadata.emplace(key, value.get<std::string>());
  }
  return metadata;
}

struct Entry {
  TensorView view;
  uint64_t begin = 0, end = 0;  // within the data section
};

// Validates one tensor entry against the data section of `data_size` bytes.
Entry parse_entry(const std::string& path, const std::string& name, const json& v,
                  const std::byte* data, uint64_t data_size) {
  const std::string where = cat(path, ": tensor '", name, "'");
  if (!v.is_object()) fail(where, ": expected a JSON object, found ", v.type_name());
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!v.contains(key)) fail(where, ": missing \"", key, "\"");

  const json& dt = v["dtype"];
  if (!dt.is_string()) fail(where, ": \"dtype\" must be a string, found ", dt.dump());
  const std::optional<DType> dtype = dtype_from_name(dt.get<std::string>());
  if (!dtype)
    fail(where, ": unknown dtype '", dt.get<std::string>(), "' (expected one of ", known_dtype_names(), ")");

  const json& sh = v["shape"];
  if (!sh.is_array()) fail(where, ": \"shape\" must be an array, found ", sh.dump());
  std::vector<int64_t> shape;
  for (const json& d : sh) {
    const uint64_t dim = non_negative_int(d, cat(where, ": \"shape\" ", sh.dump()));
    if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(where, ": \"shape\" ", sh.dump(), " has a dimension too large");
    shape.push_back(static_cast<int64_t>(dim));
  }

  const json& off = v["data_offsets"];
  if (!off.is_array() || off.size() != 2)
    fail(where, ": \"data_offsets\" must be [begin,end], found ", off.dump());
  const uint64_t begin = non_negative_int(off[0], cat(where, ": \"data_offsets\" ", off.dump()));
  const uint64_t end = non_negative_int(off[1], cat(where, ": \"data_offsets\" ", off.dump()));
  if (begin > end) fail(where, ": data_offsets [", begin, ",", end, "] has begin after end");
  if (end > data_size)
    fail(where, ": data_offsets [", begin, ",", end, "] run past the end of the ", data_size,
         "-byte data section");
  const std::optional<uint64_t> need = checked_nbytes(shape, dtype_size(*dtype));
  if (need != end - begin)
    fail(where, ": shape ", shape_str(shape), " of ", dtype_name(*dtype), " needs ",
         need ? cat(*need) : std::string("more than 2^64"), " bytes, but data_offsets [", begin, ",",
         end, "] span ", end - begin);

  return {TensorView{name, *dtype, std::move(shape), data + begin, static_cast<size_t>(end - begin)},
          begin, end};
}

// Sorted by begin, any overlap shows against the earlier tensor reaching furthest. Empty
// tensors occupy no bytes, so they overlap nothing wherever their offsets point.
void check_no_overlap(const std::string& path, const std::vector<Entry>& sorted) {
  const Entry* reach = nullptr;
  for (const Entry& e : sorted) {
    if (e.begin == e.end) continue;
    if (reach && e.begin < reach->end)
      fail(path, ": tensor '", e.view.name, "': data_offsets [", e.begin, ",", e.end,
           "] overlap tensor '", reach->view.name, "' [", reach->begin, ",", reach->end, "]");
    if (!reach || e.end > reach->end) reach = &e;
  }
}

struct Header {
  std::vector<TensorView> tensors;
  std::map<std::string, std::string> metadata;
};

Header parse_file(const std::string& path, const std::byte* base, size_t size) {
  const uint64_t n = read_le64(base);
  if (n > size - 8)
    fail(path, ": header length ", n, " runs past the end of the file (", size - 8,
         " bytes follow the length prefix)");
  if (n > kMaxHeaderBytes)
    fail(path, ": header length ", n, " exceeds the ", kMaxHeaderBytes, "-byte limit");
  const std::string_view text(reinterpret_cast<const char*>(base + 8), n);
  const json header = parse_header_json(path, text);
  if (!header.is_object()) fail(path, ": header must be a JSON object, found ", header.type_name());

  const std::byte* data = base + 8 + n;
  const uint64_t data_size = size - 8 - n;
  Header out;
  std::vector<Entry> entries;
  for (const auto& [key, value] : header.items()) {
    if (key == kMetadataKey)
      out.metadata = parse_metadata(path, value);
    else
      entries.push_back(parse_entry(path, key, value, data, data_size));
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::pair(a.begin, a.end) < std::pair(b.begin, b.end);
  });
  check_no_overlap(path, entries);
  for (Entry& e : entries) out.tensors.push_back(std::move(e.view));
  return out;
}

bool is_file(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec);
}

}  // namespace

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path), map_(path) {
  if (map_.size() < 8) fail(path, ": file is ", map_.size(), " bytes, shorter than the 8-byte header length prefix");
  Header h = parse_file(path, map_.data(), map_.size());
  tensors_ = std::move(h.tensors);
  metadata_ = std::move(h.metadata);
}

SafetensorsFile::~SafetensorsFile() = default;
SafetensorsFile::SafetensorsFile(SafetensorsFile&&) noexcept = default;
SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&&) noexcept = default;

const TensorView* find_tensor(const std::vector<TensorView>& tensors, std::string_view name) {
  for (const TensorView& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

bool has_weight_files(const std::string& dir) {
  const std::filesystem::path root(hf_model_dir(dir));
  return std::any_of(std::begin(kWeightFiles), std::end(kWeightFiles),
                     [&](std::string_view f) { return is_file(root / f); });
}

namespace {

// The shards an index (model.safetensors.index.json or pytorch_model.bin.index.json) lists,
// each opened once as a File; fills `index` with every tensor's view.
template <typename File>
void read_index(const std::filesystem::path& root, const std::filesystem::path& index_path,
                std::vector<std::unique_ptr<File>>& owners, std::vector<std::string>& paths,
                std::map<std::string, const TensorView*, std::less<>>& out) {
  const std::string ipath = index_path.string();
  const json index = read_json_file(ipath);
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    fail(ipath, ": expected an object with a \"weight_map\" object");

  std::map<std::string, const File*> shards;  // shard name -> opened once
  for (const auto& [name, shard_json] : index["weight_map"].items()) {
    if (!shard_json.is_string())
      fail(ipath, ": weight_map entry '", name, "' must name a shard file, found ", shard_json.dump());
    const std::string shard = shard_json.template get<std::string>();
    // A shard lives in the model's directory: an index from the Hub must not make strata read
    // (or, on save, reason about) files elsewhere.
    if (shard.empty() || !stays_inside(shard))
      fail(ipath, ": weight_map entry '", name, "' names shard '", shard,
           "'; a shard must be a file inside the model directory (e.g. model-00001-of-00002.safetensors)");
    auto it = shards.find(shard);
    if (it == shards.end()) {
      const std::filesystem::path shard_path = root / shard;
      if (!is_file(shard_path))
        fail(ipath, ": shard '", shard, "' (listed for tensor '", name, "') is missing: ",
             shard_path.string(), " does not exist");
      owners.push_back(std::make_unique<File>(shard_path.string()));
      paths.push_back(shard_path.string());
      it = shards.emplace(shard, owners.back().get()).first;
    }
    const TensorView* t = it->second->find(name);
    if (!t) fail(ipath, ": weight_map puts tensor '", name, "' in ", it->second->path(), ", which has no such tensor");
    out.emplace(name, t);
  }
}

// One weight file: every tensor of it.
template <typename File>
void read_single(const std::filesystem::path& path, std::vector<std::unique_ptr<File>>& owners,
                 std::vector<std::string>& paths, std::map<std::string, const TensorView*, std::less<>>& out) {
  owners.push_back(std::make_unique<File>(path.string()));
  paths.push_back(path.string());
  for (const TensorView& t : owners.back()->tensors()) out.emplace(t.name, &t);
}

}  // namespace

SafetensorsSet::SafetensorsSet(const std::string& dir) {
  const std::filesystem::path root(hf_model_dir(dir));
  // In from_pretrained's order of preference: safetensors first, PyTorch's pickles last.
  if (is_file(root / "model.safetensors")) {
    read_single(root / "model.safetensors", files_, file_paths_, index_);
  } else if (is_file(root / "model.safetensors.index.json")) {
    read_index(root, root / "model.safetensors.index.json", files_, file_paths_, index_);
  } else if (is_file(root / "pytorch_model.bin")) {
    read_single(root / "pytorch_model.bin", bins_, file_paths_, index_);
  } else if (is_file(root / "pytorch_model.bin.index.json")) {
    read_index(root, root / "pytorch_model.bin.index.json", bins_, file_paths_, index_);
  } else {
    fail(dir, ": no model.safetensors, model.safetensors.index.json, pytorch_model.bin or pytorch_model.bin.index.json "
            "in this directory");
  }
}

SafetensorsSet::~SafetensorsSet() = default;

const TensorView* SafetensorsSet::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second;
}

std::vector<std::string> SafetensorsSet::names() const {
  std::vector<std::string> out;
  out.reserve(index_.size());
  for (const auto& [name, view] : index_) out.push_back(name);
  return out;
}

namespace {

// Reads element i of a floating tensor; memcpy because the data section has no alignment.
template <typename Stored>
Stored load(const std::byte* p, int64_t i) {
  Stored v;
  std::memcpy(&v, p + i * static_cast<int64_t>(sizeof(Stored)), sizeof(Stored));
  return v;
}

}  // namespace

template <typename T>
void convert_to(const TensorView& t, T* dst) {
  const int64_t n = t.numel();
  assert(static_cast<size_t>(n) * dtype_size(t.dtype) == t.nbytes);
  switch (t.dtype) {
    case DType::F64:
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(load<double>(t.data, i));
      return;
    case DType::F32:
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(load<float>(t.data, i));
      return;
    case DType::F16:
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(half_to_float(load<uint16_t>(t.data, i)));
      return;
    case DType::BF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(bf16_to_float(load<uint16_t>(t.data, i)));
      return;
    default:
      fail("tensor '", t.name, "': dtype ", dtype_name(t.dtype),
           " is not a floating type; expected F64, F32, F16 or BF16");
  }
}

template void convert_to<float>(const TensorView&, float*);
template void convert_to<double>(const TensorView&, double*);

size_t byte_size(const TensorToWrite& t) {
  size_t n = dtype_size(t.dtype);
  for (int64_t d : t.shape) n *= static_cast<size_t>(d);
  return n;
}

namespace {

void check_writable(const std::string& path, const std::vector<TensorToWrite>& tensors) {
  std::set<std::string_view> seen;
  for (const TensorToWrite& t : tensors) {
    if (t.name == kMetadataKey) fail(path, ": '", kMetadataKey, "' is reserved and cannot name a tensor");
    if (!seen.insert(t.name).second) fail(path, ": tensor '", t.name, "' is given twice");
    for (int64_t d : t.shape)
      if (d < 0) fail(path, ": tensor '", t.name, "': shape ", shape_str(t.shape), " has a negative dimension");
    if (!t.data && byte_size(t) > 0) fail(path, ": tensor '", t.name, "' has no data");
  }
}

std::string header_json(const std::string& path, const std::vector<TensorToWrite>& tensors,
                        const std::map<std::string, std::string>& metadata) {
  // ordered_json keeps the tensors in the caller's order, matching their data layout.
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  if (!metadata.empty()) h[std::string(kMetadataKey)] = metadata;
  uint64_t offset = 0;
  for (const TensorToWrite& t : tensors) {
    const uint64_t end = offset + byte_size(t);
    h[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, end}}};
    offset = end;
  }
  try {
    return h.dump();
  } catch (const nlohmann::json::type_error& e) {  // names or metadata that are not UTF-8
    fail(path, ": cannot encode the header: ", without_exception_id(e));
  }
}

std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (char& c : s) {
    c = static_cast<char>(v & 0xff);
    v >>= 8;
  }
  return s;
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  check_writable(path, tensors);
  std::string header = header_json(path, tensors, metadata);
  // Padding keeps the data section 8-byte aligned in the file (and in any mapping of it).
  header.append((8 - header.size() % 8) % 8, ' ');
  const std::string prefix = le64(header.size());

  std::vector<std::string_view> parts = {prefix, header};
  for (const TensorToWrite& t : tensors)
    parts.emplace_back(static_cast<const char*>(t.data), byte_size(t));
  write_file_atomic(path, parts);
}

}  // namespace strata::io
