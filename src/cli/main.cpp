#include <cstdio>
#include <cstring>
#include <exception>

#include "cli/commands.h"
#include "util/error.h"

namespace {

constexpr const char* kUsage =
    "usage: strata <command> [options]\n"
    "\n"
    "commands:\n"
    "  train     fine-tune or pretrain a model from a YAML file of HF TrainingArguments names\n"
    "            strata train CONFIG.yaml [--set key=value ...]   (docs/training.md)\n"
    "  evaluate  loss and metrics of a trained model on validation_file (or test_file)\n"
    "            strata evaluate CONFIG.yaml [--set key=value ...]\n"
    "  predict   predictions with label names and probabilities for test_file\n"
    "            strata predict CONFIG.yaml [--set key=value ...]\n"
    "  generate  text from a causal LM (GPT-2): greedy or sampled continuations of prompts\n"
    "            strata generate MODEL_DIR (--prompt TEXT | --prompt-file FILE) [--max-new-tokens 50]\n"
    "                            [--do-sample --temperature 1.0 --top-k 50 --top-p 1.0 --seed 42]\n"
    "                            [--num-return-sequences 1] [--tokenizer DIR] [--use-cache=false]\n"
    "                            [--threads N] [--json]   (docs/generate.md)\n"
    "  launch    run a command as a data-parallel job through mpirun\n"
    "            strata launch [-n PROCS_PER_HOST] [--hostfile FILE | --hosts a,b] [--dry-run] -- strata train job.yaml\n"
    "  job       training jobs: an Estimator-shaped spec run locally, over a hostfile or on Slurm,\n"
    "            with spot interruptions and resume, time limits and billing (docs/jobs.md)\n"
    "            strata job run JOB.yaml | status NAME | logs NAME | stop NAME | interrupt NAME | list\n"
    "  step   one forward + backward (and optionally one optimizer step) on a batch;\n"
    "         writes loss, logits and every gradient to a .safetensors file\n"
    "         strata step --model DIR --batch BATCH.json --out OUT.safetensors\n"
    "                     [--optimizer adamw|sgd --lr 1e-3 --weight-decay 0 --betas 0.9,0.999 --eps 1e-8\n"
    "                      --momentum 0 --exclude-bias-norm-decay] [--precision fp32|fp64] [--threads N]\n"
    "  info   architecture, parameter count and the training memory per rank of a layout\n"
    "         strata info DIR [--batch 32 --seq 128] [--dp 1 --zero-stage 0|1|2 | --shard-optimizer-state]\n"
    "                         [--bucket-mb 25] [--pp 1 --microbatches 1 --pipeline interleaved|simple] [--tp 1]\n"
    "                         [--gradient-checkpointing [--gradient-checkpointing-every K]] [--offload-activations]\n"
    "                         (docs/parallelism.md)\n"
    "  tokenize  JSONL {\"text\": ...} lines to JSONL encodings with HF tokenizers' exact output\n"
    "            strata tokenize --tokenizer DIR [--pair] [--max-length N --stride N\n"
    "                            --truncation longest_first|only_first|only_second]\n"
    "                            [--padding longest|max_length --pad-to-multiple-of N]\n"
    "                            [--input FILE.jsonl] [--output FILE.jsonl]   (docs/tokenizers.md)\n";

struct Command {
  const char* name;
  int (*run)(int, char**);
};
constexpr Command kCommands[] = {{"train", strata::cli::cmd_train},       {"evaluate", strata::cli::cmd_evaluate},
                                 {"predict", strata::cli::cmd_predict},   {"step", strata::cli::cmd_step},
                                 {"info", strata::cli::cmd_info},         {"generate", strata::cli::cmd_generate},
                                 {"tokenize", strata::cli::cmd_tokenize}, {"launch", strata::cli::cmd_launch},
                                 {"job", strata::cli::cmd_job}};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  for (const Command& c : kCommands) {
    if (std::strcmp(argv[1], c.name) != 0) continue;
    try {
      return c.run(argc - 2, argv + 2);
    } catch (const strata::Error& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "internal error: %s\n", e.what());
      return 3;
    }
  }
  std::fprintf(stderr, "strata: unknown command '%s'\n\n%s", argv[1], kUsage);
  return 2;
}
