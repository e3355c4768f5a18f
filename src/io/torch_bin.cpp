#include "io/torch_bin.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "util/error.h"

namespace strata::io {

namespace {

uint32_t le(const std::byte* p, int n) {
  uint32_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | std::to_integer<uint32_t>(p[i]);
  return v;
}

struct Entry {
  const std::byte* data;
  size_t size;
};

// The zip's central directory: entry name -> its bytes. torch.save stores every entry
// uncompressed, so each is a span of the mapped file.
std::map<std::string, Entry, std::less<>> zip_entries(const std::string& path, const std::byte* base, size_t size) {
  constexpr size_t kEocd = 22;
  std::optional<size_t> eocd;
  for (size_t back = 0; size >= kEocd + back && back <= 0xFFFF; ++back) {
    if (le(base + size - kEocd - back, 4) == 0x06054b50) {
      eocd = size - kEocd - back;
      break;
    }
  }
  if (!eocd) {
    if (size > 0 && base[0] == std::byte{0x80})
      fail(path, ": PyTorch's legacy format (torch.save before 1.6, a bare pickle), which strata does not read; "
                 "re-save it with a current torch.save, or as model.safetensors");
    fail(path, ": not a zip archive (no end-of-central-directory record): the file is truncated or not a "
               "PyTorch checkpoint");
  }
  const std::byte* e = base + *eocd;
  const uint32_t count = le(e + 10, 2), cd_size = le(e + 12, 4), cd_offset = le(e + 16, 4);
  if (count == 0xFFFF || cd_offset == 0xFFFFFFFF)
    fail(path, ": a zip64 archive (a checkpoint over 4 GiB), which strata does not read; save it as sharded "
               "safetensors");
  if (size_t{cd_offset} + cd_size > *eocd) fail(path, ": the zip's central directory lies outside the file (truncated)");
  std::map<std::string, Entry, std::less<>> out;
  size_t at = cd_offset;
  for (uint32_t i = 0; i < count; ++i) {
    if (at + 46 > *eocd || le(base + at, 4) != 0x02014b50) fail(path, ": zip central directory entry ", i, " is damaged");
    const std::byte* c = base + at;
    const uint32_t method = le(c + 10, 2), stored = le(c + 20, 4), name_len = le(c + 28, 2);
    const uint32_t skip = le(c + 30, 2) + le(c + 32, 2), local = le(c + 42, 4);
    if (at + 46 + name_len > *eocd) fail(path, ": zip central directory entry ", i, " is damaged");
    std::string name(reinterpret_cast<const char*>(c + 46), name_len);
    at += 46 + name_len + skip;
    if (method != 0)
      fail(path, ": zip entry '", name, "' is compressed (method ", method, "); torch.save stores entries as they are");
    if (size_t{local} + 30 > size || le(base + local, 4) != 0x04034b50)
      fail(path, ": zip entry '", name, "' has no local header (truncated file)");
    const size_t data = size_t{local} + 30 + le(base + local + 26, 2) + le(base + local + 28, 2);
    if (data + stored > size) fail(path, ": zip entry '", name, "' runs past the end of the file (truncated)");
    out.emplace(std::move(name), Entry{base + data, stored});
  }
  return out;
}

// A value of the restricted pickle machine: what a state dict is built from.
struct Value;
using ValuePtr = std::shared_ptr<Value>;
struct Value {
  enum class Kind { None, Bool, Int, Float, Str, Tuple, List, Dict, Global, Storage, Tensor, Mark } kind = Kind::None;
  int64_t i = 0;
  double f = 0;
  std::string s;                                    // Str; Global "module.name"; Storage key
  std::vector<ValuePtr> items;                      // Tuple, List
  std::vector<std::pair<ValuePtr, ValuePtr>> dict;  // Dict, in insertion order
  DType dtype = DType::F32;                         // Storage, Tensor
  const std::byte* bytes = nullptr;                 // Storage: its data; Tensor: its first element
  size_t nbytes = 0;
  std::vector<int64_t> shape;                       // Tensor
};

ValuePtr make(Value::Kind k) {
  auto v = std::make_shared<Value>();
  v->kind = k;
  return v;
}

const char* kind_name(Value::Kind k) {
  static const char* names[] = {"None", "bool", "int", "float", "str", "tuple", "list", "dict",
                                "callable", "storage", "tensor", "mark"};
  return names[static_cast<int>(k)];
}

// The storage classes a state dict names, by element type.
std::optional<DType> storage_dtype(std::string_view global) {
  static const std::map<std::string_view, DType> types = {
      {"torch.FloatStorage", DType::F32}, {"torch.DoubleStorage", DType::F64}, {"torch.HalfStorage", DType::F16},
      {"torch.BFloat16Storage", DType::BF16}, {"torch.LongStorage", DType::I64}, {"torch.IntStorage", DType::I32},
      {"torch.ShortStorage", DType::I16}, {"torch.CharStorage", DType::I8}, {"torch.ByteStorage", DType::U8},
      {"torch.BoolStorage", DType::BOOL}};
  const auto it = types.find(global);
  return it == types.end() ? std::nullopt : std::optional<DType>(it->second);
}

constexpr std::string_view kOrderedDict = "collections.OrderedDict";
constexpr std::string_view kRebuildTensor = "torch._utils._rebuild_tensor_v2";
constexpr std::string_view kRebuildParameter = "torch._utils._rebuild_parameter";

class Unpickler {
 public:
  Unpickler(const std::string& path, std::string_view prefix, const std::map<std::string, Entry, std::less<>>& entries)
      : path_(path), prefix_(prefix), entries_(entries) {
    const auto it = entries.find(std::string(prefix) + "data.pkl");
    p_ = it->second.data;
    end_ = p_ + it->second.size;
    begin_ = p_;
  }

  ValuePtr run() {
    while (true) {
      const uint8_t op = u(1);
      switch (op) {
        case 0x80: u(1); break;  // PROTO
        case 0x95: take(8); break;  // FRAME: the bytes follow anyway
        case '}': push(make(Value::Kind::Dict)); break;
        case ']': push(make(Value::Kind::List)); break;
        case ')': push(make(Value::Kind::Tuple)); break;
        case '(': push(make(Value::Kind::Mark)); break;
        case 't': push(tuple(pop_to_mark())); break;
        case 0x85: case 0x86: case 0x87: {  // TUPLE1..3
          std::vector<ValuePtr> v(op - 0x84);
          for (size_t k = v.size(); k-- > 0;) v[k] = pop();
          push(tuple(std::move(v)));
          break;
        }
        case 'q': memo_[u(1)] = top(); break;
        case 'r': memo_[u(4)] = top(); break;
        case 0x94: memo_[static_cast<uint32_t>(memo_.size())] = top(); break;  // MEMOIZE
        case 'h': push(memo(u(1))); break;
        case 'j': push(memo(u(4))); break;
        case 'X': case 0x8c: {  // BINUNICODE, SHORT_BINUNICODE
          const uint32_t n = u(op == 'X' ? 4 : 1);
          push(str(take(n), n));
          break;
        }
        case 'c': {  // GLOBAL module\nname\n
          std::string module = line(), name = line();
          push(global(module + "." + name));
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          const ValuePtr name = pop(), module = pop();
          push(global(as(module, Value::Kind::Str).s + "." + as(name, Value::Kind::Str).s));
          break;
        }
        case 'J': push(integer(static_cast<int32_t>(u(4)))); break;
        case 'K': push(integer(u(1))); break;
        case 'M': push(integer(u(2))); break;
        case 0x8a: push(integer(long1())); break;
        case 'G': push(real()); break;
        case 'N': push(make(Value::Kind::None)); break;
        case 0x88: case 0x89: {
          auto b = make(Value::Kind::Bool);
          b->i = op == 0x88;
          push(b);
          break;
        }
        case 'Q': push(storage(pop())); break;  // BINPERSID
        case 'R': {
          const ValuePtr args = pop();
          push(call(pop(), as(args, Value::Kind::Tuple)));
          break;
        }
        case 'b': {  // BUILD: an OrderedDict's attributes (its _metadata) carry nothing we need
          pop();
          if (top()->kind != Value::Kind::Dict) bad("BUILD on a ", kind_name(top()->kind));
          break;
        }
        case 's': {
          const ValuePtr v = pop(), k = pop();
          as(top(), Value::Kind::Dict).dict.emplace_back(k, v);
          break;
        }
        case 'u': {
          std::vector<ValuePtr> kv = pop_to_mark();
          if (kv.size() % 2) bad("SETITEMS with an odd number of items");
          Value& d = as(top(), Value::Kind::Dict);
          for (size_t k = 0; k < kv.size(); k += 2) d.dict.emplace_back(kv[k], kv[k + 1]);
          break;
        }
        case 'a': {
          const ValuePtr v = pop();
          as(top(), Value::Kind::List).items.push_back(v);
          break;
        }
        case 'e': {
          std::vector<ValuePtr> v = pop_to_mark();
          Value& l = as(top(), Value::Kind::List);
          l.items.insert(l.items.end(), v.begin(), v.end());
          break;
        }
        case '.': return pop();
        default: bad("pickle opcode 0x", hex(op), ", which a state dict does not use");
      }
    }
  }

 private:
  template <typename... A>
  [[noreturn]] void bad(A&&... what) const {
    fail(path_, ": ", prefix_, "data.pkl byte ", (p_ - begin_) - 1, ": ", std::forward<A>(what)...);
  }
  static std::string hex(uint8_t b) {
    const char* d = "0123456789abcdef";
    return {d[b >> 4], d[b & 15]};
  }
  const std::byte* take(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) bad("the pickle ends early (truncated file)");
    const std::byte* at = p_;
    p_ += n;
    return at;
  }
  uint32_t u(int n) { return le(take(n), n); }
  std::string line() {
    std::string s;
    for (char c; (c = static_cast<char>(*take(1))) != '\n';) s += c;
    return s;
  }
  int64_t long1() {
    const uint32_t n = u(1);
    if (n > 8) bad("an integer of ", n, " bytes");
    const std::byte* b = take(n);
    uint64_t v = 0;
    for (uint32_t k = n; k-- > 0;) v = (v << 8) | std::to_integer<uint64_t>(b[k]);
    if (n > 0 && n < 8 && (std::to_integer<uint8_t>(b[n - 1]) & 0x80)) v |= ~uint64_t{0} << (8 * n);  // sign
    return static_cast<int64_t>(v);
  }
  ValuePtr real() {
    const std::byte* b = take(8);
    uint64_t bits = 0;
    for (int k = 0; k < 8; ++k) bits = (bits << 8) | std::to_integer<uint64_t>(b[k]);  // big-endian
    auto v = make(Value::Kind::Float);
    std::memcpy(&v->f, &bits, 8);
    return v;
  }
  static ValuePtr integer(int64_t i) {
    auto v = make(Value::Kind::Int);
    v->i = i;
    return v;
  }
  static ValuePtr str(const std::byte* p, size_t n) {
    auto v = make(Value::Kind::Str);
    v->s.assign(reinterpret_cast<const char*>(p), n);
    return v;
  }
  static ValuePtr tuple(std::vector<ValuePtr> items) {
    auto v = make(Value::Kind::Tuple);
    v->items = std::move(items);
    return v;
  }
  // The callables a state dict needs; naming any other refuses the file before it could run.
  ValuePtr global(const std::string& name) {
    if (name != kOrderedDict && name != kRebuildTensor && name != kRebuildParameter && !storage_dtype(name))
      fail(path_, ": refuses to load: its pickle calls ", name,
           ", and a checkpoint may hold tensors only (unpickling it in Python would run that code); "
           "convert a trusted copy to model.safetensors");
    auto v = make(Value::Kind::Global);
    v->s = name;
    return v;
  }
  // ('storage', <storage class>, key, location, numel): the data file <archive>/data/<key>.
  ValuePtr storage(const ValuePtr& pid) {
    const Value& t = as(pid, Value::Kind::Tuple);
    if (t.items.size() != 5 || as(t.items[0], Value::Kind::Str).s != "storage")
      bad("a persistent id other than ('storage', type, key, location, numel)");
    const std::string& cls = as(t.items[1], Value::Kind::Global).s;
    const std::optional<DType> dtype = storage_dtype(cls);
    if (!dtype) bad(cls, " is not a storage class");
    const std::string& key = as(t.items[2], Value::Kind::Str).s;
    const int64_t numel = as(t.items[4], Value::Kind::Int).i;
    const auto it = entries_.find(prefix_ + "data/" + key);
    if (it == entries_.end()) bad("storage '", key, "' has no file ", prefix_, "data/", key, " in the archive");
    if (numel < 0 || it->second.size / dtype_size(*dtype) < static_cast<size_t>(numel))
      bad("storage '", key, "' holds ", it->second.size, " bytes, fewer than its ", numel, " elements of ",
          dtype_name(*dtype));
    auto v = make(Value::Kind::Storage);
    v->dtype = *dtype;
    v->s = key;
    v->bytes = it->second.data;
    v->nbytes = static_cast<size_t>(numel) * dtype_size(*dtype);
    return v;
  }
  ValuePtr call(const ValuePtr& fn, const Value& args) {
    const std::string& name = as(fn, Value::Kind::Global).s;
    if (name == kOrderedDict) return make(Value::Kind::Dict);
    if (name == kRebuildParameter) {
      if (args.items.empty()) bad(name, " without a tensor");
      return as_ptr(args.items[0], Value::Kind::Tensor);
    }
    if (name != kRebuildTensor || args.items.size() < 4) bad("a call of ", name, " with ", args.items.size(), " arguments");
    const Value& st = as(args.items[0], Value::Kind::Storage);
    const int64_t offset = as(args.items[1], Value::Kind::Int).i;
    auto t = make(Value::Kind::Tensor);
    t->dtype = st.dtype;
    int64_t numel = 1, expected_stride = 1;
    const auto& size = as(args.items[2], Value::Kind::Tuple).items;
    const auto& stride = as(args.items[3], Value::Kind::Tuple).items;
    if (size.size() != stride.size()) bad("a tensor of ", size.size(), " dimensions with ", stride.size(), " strides");
    for (const ValuePtr& d : size) {
      const int64_t n = as(d, Value::Kind::Int).i;
      if (n < 0 || (n > 0 && numel > INT64_MAX / n)) bad("a tensor dimension of ", n);
      t->shape.push_back(n);
      numel *= n;
    }
    for (size_t k = size.size(); k-- > 0;) {  // row-major, as every saved state-dict tensor is
      if (t->shape[k] != 1 && as(stride[k], Value::Kind::Int).i != expected_stride)
        bad("a non-contiguous tensor (strides not row-major) in storage '", st.s, "'");
      expected_stride *= t->shape[k];
    }
    const size_t elem = dtype_size(st.dtype);
    if (offset < 0 || static_cast<size_t>(offset + numel) * elem > st.nbytes)
      bad("a tensor of ", numel, " elements at offset ", offset, " past the end of storage '", st.s, "'");
    t->bytes = st.bytes + static_cast<size_t>(offset) * elem;
    t->nbytes = static_cast<size_t>(numel) * elem;
    return t;
  }
  Value& as(const ValuePtr& v, Value::Kind k) const {
    if (v->kind != k) bad("expected a ", kind_name(k), ", found a ", kind_name(v->kind));
    return *v;
  }
  ValuePtr as_ptr(const ValuePtr& v, Value::Kind k) const {
    as(v, k);
    return v;
  }
  void push(ValuePtr v) { stack_.push_back(std::move(v)); }
  ValuePtr top() const {
    if (stack_.empty()) bad("the pickle's stack is empty");
    return stack_.back();
  }
  ValuePtr pop() {
    ValuePtr v = top();
    stack_.pop_back();
    if (v->kind == Value::Kind::Mark) bad("a MARK where a value belongs");
    return v;
  }
  std::vector<ValuePtr> pop_to_mark() {
    std::vector<ValuePtr> out;
    while (top()->kind != Value::Kind::Mark) {
      out.push_back(stack_.back());
      stack_.pop_back();
    }
    stack_.pop_back();
    return {out.rbegin(), out.rend()};
  }
  ValuePtr memo(uint32_t k) const {
    const auto it = memo_.find(k);
    if (it == memo_.end()) bad("memo entry ", k, " read before it was written");
    return it->second;
  }

  const std::string& path_;
  std::string prefix_;
  const std::map<std::string, Entry, std::less<>>& entries_;
  const std::byte *begin_ = nullptr, *p_ = nullptr, *end_ = nullptr;
  std::vector<ValuePtr> stack_;
  std::map<uint32_t, ValuePtr> memo_;
};

}  // namespace

TorchBinFile::TorchBinFile(const std::string& path) : path_(path), map_(path) {
  const auto entries = zip_entries(path, map_.data(), map_.size());
  std::string prefix;
  for (const auto& [name, e] : entries)
    if (name.ends_with("data.pkl") && (name.size() == 8 || name[name.size() - 9] == '/')) {
      prefix = name.substr(0, name.size() - 8);
      break;
    }
  if (entries.find(prefix + "data.pkl") == entries.end())
    fail(path, ": a zip archive without data.pkl: not a PyTorch checkpoint");
  if (const auto bo = entries.find(prefix + "byteorder"); bo != entries.end()) {
    const std::string order(reinterpret_cast<const char*>(bo->second.data), bo->second.size);
    if (order != "little") fail(path, ": saved on a ", order, "-endian machine; strata reads little-endian checkpoints");
  }
  const ValuePtr root = Unpickler(path, prefix, entries).run();
  if (root->kind != Value::Kind::Dict)
    fail(path, ": holds a ", kind_name(root->kind), ", not a state dict (a mapping of names to tensors)");
  for (const auto& [k, v] : root->dict) {
    if (k->kind != Value::Kind::Str || v->kind != Value::Kind::Tensor)
      fail(path, ": not a state dict of tensors: it maps a ", kind_name(k->kind), " to a ", kind_name(v->kind),
           k->kind == Value::Kind::Str ? " ('" + k->s + "')" : "");
    tensors_.push_back({k->s, v->dtype, v->shape, v->bytes, v->nbytes});
  }
}

}  // namespace strata::io
