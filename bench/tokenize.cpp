// Tokenization throughput of the four reference tokenizers on the spam corpus: MB of input
// text per second through Tokenizer::encode (special tokens added, no truncation / padding),
// with 1 and 2 threads (the lines split into contiguous, equally sized byte ranges). Each
// figure is the median of 3 timed passes after one untimed warm-up pass (BPE word cache warm,
// as in a long data-loading run). Prints one table and the machine.
//
//   bench_tokenize [--input FILE.jsonl[.gz]] [--tokenizers DIR] [--threads 1,2]
//                  [--only NAME] [--runs 3]
#include <sys/utsname.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tokenizers/tokenizer.h"
#include "util/error.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string input = "/work/shared/data/spam/train.jsonl.gz";
  std::string tokenizers = "/work/shared/data/tokenizers";
  std::vector<int> threads = {1, 2};
  std::string only;
  int runs = 3;
};

// The "text" of every JSONL line; .gz files are read through zcat.
std::vector<std::string> read_texts(const std::string& path) {
  std::string data;
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  if (gz) {
    const std::string cmd = "zcat '" + path + "'";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) strata::fail("cannot run ", cmd);
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) data.append(buf, n);
    if (pclose(p) != 0) strata::fail(cmd, " failed");
  } else {
    std::ifstream f(path, std::ios::binary);
    if (!f) strata::fail("cannot read ", path);
    data.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  std::vector<std::string> texts;
  size_t line_no = 0;
  for (size_t pos = 0; pos < data.size();) {
    size_t end = data.find('\n', pos);
    if (end == std::string::npos) end = data.size();
    ++line_no;
    if (end > pos) {
      const auto j = nlohmann::json::parse(data.begin() + static_cast<std::ptrdiff_t>(pos),
                                           data.begin() + static_cast<std::ptrdiff_t>(end));
      if (!j.contains("text") || !j["text"].is_string()) strata::fail(path, ": line ", line_no, ": no string \"text\"");
      texts.push_back(j["text"].get<std::string>());
    }
    pos = end + 1;
  }
  return texts;
}

// Encodes every text, split over `threads` threads; returns seconds and the token count.
std::pair<double, size_t> run_pass(const strata::tok::Tokenizer& tok, const std::vector<std::string>& texts,
                                   const std::vector<size_t>& bounds) {
  const size_t n_threads = bounds.size() - 1;
  std::vector<size_t> tokens(n_threads, 0);
  const auto t0 = Clock::now();
  std::vector<std::thread> pool;
  for (size_t k = 0; k < n_threads; ++k)
    pool.emplace_back([&, k] {
      for (size_t i = bounds[k]; i < bounds[k + 1]; ++i) tokens[k] += tok.encode(texts[i]).ids.size();
    });
  for (auto& th : pool) th.join();
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  size_t total = 0;
  for (size_t t : tokens) total += t;
  return {s, total};
}

// Line ranges of about equal bytes for each thread.
std::vector<size_t> split(const std::vector<std::string>& texts, size_t bytes, int n_threads) {
  std::vector<size_t> bounds = {0};
  size_t acc = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    acc += texts[i].size();
    if (bounds.size() < static_cast<size_t>(n_threads) && acc * n_threads >= bytes * bounds.size())
      bounds.push_back(i + 1);
  }
  while (bounds.size() < static_cast<size_t>(n_threads) + 1) bounds.push_back(texts.size());
  bounds.back() = texts.size();
  return bounds;
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) strata::fail("bench_tokenize: ", a, " needs a value");
      return argv[++i];
    };
    if (a == "--input") {
      o.input = value();
    } else if (a == "--tokenizers") {
      o.tokenizers = value();
    } else if (a == "--only") {
      o.only = value();
    } else if (a == "--runs") {
      o.runs = std::stoi(value());
    } else if (a == "--threads") {
      o.threads.clear();
      const std::string v = value();
      for (size_t p = 0; p <= v.size();) {
        const size_t c = std::min(v.find(',', p), v.size());
        o.threads.push_back(std::stoi(v.substr(p, c - p)));
        p = c + 1;
      }
    } else {
      strata::fail("bench_tokenize: unknown option ", a, " (valid: --input, --tokenizers, --threads, --only, --runs)");
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    const std::vector<std::string> texts = read_texts(o.input);
    size_t bytes = 0;
    for (const auto& t : texts) bytes += t.size();
    std::printf("input: %s (%zu texts, %.2f MB)\n\n", o.input.c_str(), texts.size(), bytes / 1e6);
    std::printf("%-20s %8s %12s %12s %12s\n", "tokenizer", "threads", "MB/s", "tokens/s", "tokens");
    for (const char* name : {"bert-wordpiece-8k", "bpe-8k", "gpt2", "albert-spm-8k"}) {
      if (!o.only.empty() && o.only != name) continue;
      const strata::tok::Tokenizer tok = strata::tok::Tokenizer::from_dir(o.tokenizers + "/" + name);
      for (int threads : o.threads) {
        const std::vector<size_t> bounds = split(texts, bytes, threads);
        run_pass(tok, texts, bounds);  // warm-up
        std::vector<double> secs;
        size_t tokens = 0;
        for (int r = 0; r < o.runs; ++r) {
          const auto [s, n] = run_pass(tok, texts, bounds);
          secs.push_back(s);
          tokens = n;
        }
        std::sort(secs.begin(), secs.end());
        const double s = secs[secs.size() / 2];
        std::printf("%-20s %8d %12.2f %12.0f %12zu\n", name, threads, bytes / 1e6 / s, tokens / s, tokens);
      }
    }
    utsname u{};
    uname(&u);
    std::printf("\nmachine: %s, %u hardware threads, %s %s; median of %d passes after a warm-up pass\n",
                cpu_model().c_str(), std::thread::hardware_concurrency(), u.sysname, u.release, o.runs);
  } catch (const strata::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
