// BPE: each character (plus prefix / suffix) becomes a symbol, then the lowest-rank merge is
// applied until none is left, leftmost first among equal ranks (HF's Word::merge_all).
// Results are cached per word: tokenizing the same word again is a lookup.
#include <array>
#include <mutex>
#include <queue>

#include "tokenizers/byte_fallback.h"
#include "tokenizers/models.h"
#include "tokenizers/unicode.h"
#include "util/error.h"

namespace strata::tok {

namespace {

struct Symbol {
  int32_t id;
  uint32_t len;  // bytes; 0 once merged into its left neighbour
  int32_t prev, next;
};

// A thread-safe word -> symbols cache, sharded so concurrent encoders rarely share a lock.
// Each shard is an open-addressing table whose keys and values live in one byte arena, so a
// hit costs about two cache misses (a std::unordered_map of strings and vectors took five).
class WordCache {
 public:
  using Value = std::vector<std::pair<int32_t, uint32_t>>;  // (id, byte length)
  static constexpr size_t kMaxWordBytes = 256;              // as HF: longer words are not cached

  bool get(std::string_view word, Value& out) const {
    const uint64_t h = StringHash{}(word);
    if (h == kFree) return false;
    Shard& s = shards_[h % kShards];
    std::lock_guard<std::mutex> lock(s.mu);
    const Slot* slot = s.find(h, word);
    if (slot->hash == kFree) return false;
    const auto* v = reinterpret_cast<const std::pair<int32_t, uint32_t>*>(s.arena.data() + slot->value_at);
    out.assign(v, v + slot->value_count);
    return true;
  }

  void put(std::string_view word, const Value& v) const {
    const uint64_t h = StringHash{}(word);
    if (word.size() >= kMaxWordBytes || h == kFree) return;
    Shard& s = shards_[h % kShards];
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.used * 2 >= kSlotsPerShard) return;  // full: keep what is cached
    Slot* slot = s.find(h, word);
    if (slot->hash != kFree) return;  // cached meanwhile
    // Values first (8-byte aligned), then the key.
    s.arena.resize((s.arena.size() + 7) & ~size_t{7});
    slot->value_at = static_cast<uint32_t>(s.arena.size());
    slot->value_count = static_cast<uint32_t>(v.size());
    const auto* vb = reinterpret_cast<const char*>(v.data());
    s.arena.insert(s.arena.end(), vb, vb + v.size() * sizeof(v[0]));
    slot->key_at = static_cast<uint32_t>(s.arena.size());
    slot->key_len = static_cast<uint32_t>(word.size());
    s.arena.insert(s.arena.end(), word.begin(), word.end());
    slot->hash = h;
    ++s.used;
  }

 private:
  static constexpr size_t kShards = 64;
  static constexpr size_t kSlotsPerShard = 2048;  // at most half used: 64K words in all
  static constexpr uint64_t kFree = 0;

  struct Slot {
    uint64_t hash = kFree;
    uint32_t key_at = 0, key_len = 0, value_at = 0, value_count = 0;
  };
  struct Shard {
    std::mutex mu;
    std::vector<Slot> slots = std::vector<Slot>(kSlotsPerShard);
    std::vector<char> arena;
    size_t used = 0;

    // The slot holding `word`, else the free slot where it would go. Hash 0 is reserved for
    // free slots; a word hashing to 0 is simply never found (and never cached).
    Slot* find(uint64_t h, std::string_view word) {
      size_t i = (h / kShards) & (kSlotsPerShard - 1);
      while (true) {
        Slot& slot = slots[i];
        if (slot.hash == kFree) return &slot;
        if (slot.hash == h && word == std::string_view(arena.data() + slot.key_at, slot.key_len)) return &slot;
        i = (i + 1) & (kSlotsPerShard - 1);
      }
    }
  };
  mutable std::array<Shard, kShards> shards_;
};

// Open addressing (linear probing, load <= 1/2) for the merge table: the merge loop does a
// lookup per candidate pair, and std::unordered_map's bucket chains made it memory-bound.
template <typename V>
class FlatMap {
 public:
  void reserve(size_t n) {
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    keys_.assign(cap, kEmpty);
    values_.assign(cap, V{});
    size_ = 0;
  }
  void set(uint64_t key, const V& v) {
    if (2 * (size_ + 1) > keys_.size()) grow();
    size_t i = slot(key);
    if (keys_[i] == kEmpty) ++size_;
    keys_[i] = key;
    values_[i] = v;
  }
  const V* find(uint64_t key) const {
    if (keys_.empty()) return nullptr;
    const size_t i = slot(key);
    return keys_[i] == key ? &values_[i] : nullptr;
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  size_t slot(uint64_t key) const {
    const size_t mask = keys_.size() - 1;
    size_t i = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 17) & mask;
    while (keys_[i] != kEmpty && keys_[i] != key) i = (i + 1) & mask;
    return i;
  }
  void grow() {
    std::vector<uint64_t> keys = std::move(keys_);
    std::vector<V> values = std::move(values_);
    reserve(keys.size());
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i] != kEmpty) set(keys[i], values[i]);
  }
  std::vector<uint64_t> keys_;
  std::vector<V> values_;
  size_t size_ = 0;
};

class Bpe final : public VocabModel {
 public:
  Bpe(BpeConfig c, const std::string& where) : VocabModel(std::move(c.vocab)), c_(std::move(c)) {
    const size_t prefix_len = c_.continuing_subword_prefix ? c_.continuing_subword_prefix->size() : 0;
    merges_.reserve(c_.merges.size());
    for (const auto& [tok, id] : vocab_) {
      if (tok.empty()) continue;
      size_t len;
      const char32_t c = uni::decode(tok, 0, &len);
      if (len == tok.size()) char_ids_.set(c, id);
    }
    for (size_t rank = 0; rank < c_.merges.size(); ++rank) {
      const auto& [a, b] = c_.merges[rank];
      const int32_t a_id = id_in_vocab(a, where), b_id = id_in_vocab(b, where);
      // The merged token drops the right part's continuation prefix.
      const std::string merged = a + (b.size() >= prefix_len ? b.substr(prefix_len) : std::string());
      const int32_t new_id = id_in_vocab(merged, where);
      merges_.set(key(a_id, b_id), {static_cast<uint32_t>(rank), new_id});  // a later duplicate wins, as in HF
    }
    c_.merges.clear();
    c_.merges.shrink_to_fit();
    if (c_.unk_token) {
      if (auto it = vocab_.find(*c_.unk_token); it != vocab_.end()) unk_id_ = it->second;
    }
    if (c_.byte_fallback) byte_ids_ = byte_fallback::ByteIds(vocab_);
  }

  void tokenize(std::string_view text, std::vector<Token>& out) const override {
    if (text.empty()) return;
    if (c_.ignore_merges) {
      if (auto it = vocab_.find(text); it != vocab_.end()) {
        out.push_back({it->second, it->first, 0, static_cast<uint32_t>(text.size())});
        return;
      }
    }
    thread_local WordCache::Value word;
    if (!cache_.get(text, word)) {
      merge_word(text, word);
      cache_.put(text, word);
    }
    uint32_t pos = 0;
    for (const auto& [id, len] : word) {
      const std::string* tok = reverse_.find(id);
      out.push_back({id, tok ? *tok : std::string(), pos, pos + len});
      pos += len;
    }
  }

 private:
  struct MergeTarget {
    uint32_t rank;
    int32_t new_id;
  };

  static uint64_t key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  int32_t id_in_vocab(const std::string& tok, const std::string& where) const {
    auto it = vocab_.find(tok);
    if (it == vocab_.end()) fail(where, ".merges: token '", tok, "' of a merge is not in the vocabulary");
    return it->second;
  }

  const MergeTarget* find_merge(int32_t a, int32_t b) const { return merges_.find(key(a, b)); }

  int32_t unk_id() const {
    if (!unk_id_) fail("BPE: the unk token '", *c_.unk_token, "' is not in the vocabulary");
    return *unk_id_;
  }

  // HF's BPE::merge_word: initial symbols (with unk / byte fallback), then merge_all.
  void merge_word(std::string_view w, WordCache::Value& result) const {
    std::vector<Symbol> syms;
    syms.reserve(w.size());
    auto add = [&](int32_t id, uint32_t len) {
      const auto n = static_cast<int32_t>(syms.size());
      if (n > 0) syms.back().next = n;
      syms.push_back({id, len, n - 1, -1});
    };
    bool have_unk = false;
    int32_t unk_id = 0;
    uint32_t unk_len = 0;
    const bool has_prefix = c_.continuing_subword_prefix && !c_.continuing_subword_prefix->empty();
    const bool has_suffix = c_.end_of_word_suffix && !c_.end_of_word_suffix->empty();
    std::string s;
    for (size_t i = 0; i < w.size();) {
      size_t len;
      const char32_t c = uni::decode(w, i, &len);
      const bool first = i == 0, last = i + len >= w.size();
      s.clear();
      if (!first && has_prefix) s += *c_.continuing_subword_prefix;
      s.append(w.substr(i, len));
      if (last && has_suffix) s += *c_.end_of_word_suffix;
      i += len;
      std::optional<int32_t> id;
      if (s.size() == len) {  // no prefix / suffix: a single-character token
        if (const int32_t* t = char_ids_.find(c)) id = *t;
      } else if (auto it = vocab_.find(s); it != vocab_.end()) {
        id = it->second;
      }
      if (id) {
        if (have_unk) {
          add(unk_id, unk_len);
          have_unk = false;
        }
        add(*id, static_cast<uint32_t>(len));
        continue;
      }
      if (c_.byte_fallback) {
        // Every byte of the piece (prefix and suffix included, as HF does) must have a token.
        if (byte_ids_.covers(s)) {
          for (unsigned char b : s) add(byte_ids_[b], 1);
          continue;
        }
      }
      if (c_.unk_token) {
        if (have_unk && c_.fuse_unk) {
          unk_len += static_cast<uint32_t>(len);
        } else {
          if (have_unk) add(unk_id, unk_len);
          unk_id = this->unk_id();
          unk_len = static_cast<uint32_t>(len);
          have_unk = true;
        }
      }
    }
    if (have_unk) add(unk_id, unk_len);
    merge_all(syms);
    result.clear();
    for (const Symbol& sym : syms)
      if (sym.len != 0) result.emplace_back(sym.id, sym.len);
  }

  void merge_all(std::vector<Symbol>& syms) const {
    struct Candidate {
      uint32_t rank;
      int32_t pos, new_id;
      bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
    for (size_t i = 0; i + 1 < syms.size(); ++i)
      if (const MergeTarget* m = find_merge(syms[i].id, syms[i + 1].id))
        queue.push({m->rank, static_cast<int32_t>(i), m->new_id});
    while (!queue.empty()) {
      const Candidate top = queue.top();
      queue.pop();
      Symbol& cur = syms[static_cast<size_t>(top.pos)];
      if (cur.len == 0 || cur.next == -1) continue;
      const auto next_pos = static_cast<size_t>(cur.next);
      const Symbol right = syms[next_pos];
      const MergeTarget* m = find_merge(cur.id, right.id);
      if (!m || m->new_id != top.new_id) continue;  // an outdated entry
      cur.id = top.new_id;
      cur.len += right.len;
      cur.next = right.next;
      syms[next_pos].len = 0;
      if (right.next > -1 && static_cast<size_t>(right.next) < syms.size())
        syms[static_cast<size_t>(right.next)].prev = top.pos;
      if (cur.prev >= 0) {
        if (const MergeTarget* pm = find_merge(syms[static_cast<size_t>(cur.prev)].id, cur.id))
          queue.push({pm->rank, cur.prev, pm->new_id});
      }
      if (cur.next >= 0 && static_cast<size_t>(cur.next) < syms.size()) {
        if (const MergeTarget* nm = find_merge(cur.id, syms[static_cast<size_t>(cur.next)].id))
          queue.push({nm->rank, top.pos, nm->new_id});
      }
    }
  }

  BpeConfig c_;
  FlatMap<MergeTarget> merges_;
  FlatMap<int32_t> char_ids_;  // single-character tokens: code point -> id
  std::optional<int32_t> unk_id_;
  byte_fallback::ByteIds byte_ids_;  // all -1 without byte_fallback
  WordCache cache_;
};

}  // namespace

std::unique_ptr<Model> make_bpe(BpeConfig config, const std::string& where) {
  return std::make_unique<Bpe>(std::move(config), where);
}

}  // namespace strata::tok
