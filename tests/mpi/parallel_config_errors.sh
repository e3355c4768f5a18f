#!/usr/bin/env bash
# Bad parallel layouts stop before any work: a non-zero exit, the expected message, and no
# output directory. Each case is a job YAML with one mistake, started with the process count
# that exposes it (through mpirun when it needs several ranks).
#   parallel_config_errors.sh STRATA_BINARY SOURCE_DIR
set -euo pipefail
STRATA=${1:?usage: parallel_config_errors.sh STRATA_BINARY SOURCE_DIR}
SRC=${2:?}
WORK=$(mktemp -d)
trap '[[ -n "${KEEP:-}" ]] || rm -rf "$WORK"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1

mkdir -p "$WORK/model"
cat > "$WORK/model/config.json" <<'JSON'
{"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": 8000, "n_embd": 32,
 "n_layer": 2, "n_head": 2, "n_positions": 64}
JSON
# Models tensor parallelism cannot split in two: a vocabulary and a feed-forward width that 2
# does not divide, and an architecture without tensor-parallel layers.
model_variant() {  # dir, config.json
  mkdir -p "$WORK/$1"
  echo "$2" > "$WORK/$1/config.json"
}
model_variant odd_vocab '{"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": 8001, "n_embd": 32, "n_layer": 2, "n_head": 2, "n_positions": 64}'
model_variant odd_ffn '{"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": 8000, "n_embd": 32, "n_inner": 33, "n_layer": 2, "n_head": 2, "n_positions": 64}'
model_variant albert '{"model_type": "albert", "architectures": ["AlbertForMaskedLM"], "vocab_size": 8000, "embedding_size": 16, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64, "max_position_embeddings": 64}'
printf 'win money now\nmeeting notes monday\n' > "$WORK/train.txt"

failures=0
# name, ranks, expected message (extended regex), extra YAML
expect_error() {
  local name=$1 ranks=$2 pattern=$3
  cat > "$WORK/$name.yaml" <<YAML
model_name_or_path: ${MODEL:-$WORK/model}
tokenizer_name: $SRC/examples/tokenizers/bpe-8k
train_file: $WORK/train.txt
output_dir: $WORK/out_$name
per_device_train_batch_size: 4
max_steps: 1
$4
YAML
  local status=0
  if [[ $ranks == 1 ]]; then
    timeout 60 "$STRATA" train "$WORK/$name.yaml" > "$WORK/$name.log" 2>&1 || status=$?
  else
    timeout 60 mpirun --oversubscribe -np "$ranks" "$STRATA" train "$WORK/$name.yaml" > "$WORK/$name.log" 2>&1 \
      || status=$?
  fi
  local verdict=ok
  if ((status == 0)); then verdict="exited 0"; fi
  if ! grep -Eq -- "$pattern" "$WORK/$name.log"; then verdict="no message /$pattern/"; fi
  if [[ -e $WORK/out_$name ]]; then verdict="output_dir created: work started"; fi
  echo "$name ($ranks ranks): exit $status -> $verdict"
  if [[ $verdict != ok ]]; then
    failures=$((failures + 1))
    tail -5 "$WORK/$name.log"
  fi
}
MP='distribution: {smdistributed: {modelparallel: {enabled: true, parameters:'

expect_error world_not_divisible 3 \
  "the job has 3 processes, which pipeline_parallel_degree \(partitions\) 2 x tensor_parallel_degree 1 = 2 does not divide" \
  "$MP {partitions: 2}}}}"
expect_error tensor_not_dividing_world 4 "tensor_parallel_degree 3 = 3 does not divide" "tensor_parallel_degree: 3"
expect_error unknown_placement 1 "placement_strategy 'DPX' is not cluster, spread or a permutation of the letters D, P, T" \
  "$MP {placement_strategy: DPX}}}}"
expect_error microbatches 1 "microbatches \(3\) must divide per_device_train_batch_size \(4\)" \
  "$MP {partitions: 1, microbatches: 3}}}}"
expect_error partitions_over_layers 4 "pipeline_parallel_degree \(partitions\) is 4 but the model has 2 layers" \
  "pipeline_parallel_degree: 4"
expect_error tensor_over_heads 4 "tensor_parallel_degree 4 does not divide the model's attention heads \(2," \
  "$MP {tensor_parallel_degree: 4}}}}"
expect_error ddp_off 2 "ddp is false, but 2 processes with pipeline 1 x tensor 1 make 2 model replicas" \
  "$MP {ddp: false}}}}"
expect_error partition_sum 2 "pipeline_partition gives 3 blocks in all, but the model has 2 layers" \
  "$MP {partitions: 2, pipeline_partition: [1, 2]}}}}"
expect_error partition_length 2 "pipeline_partition lists 1 stages but pipeline_parallel_degree \(partitions\) is 2" \
  "$MP {partitions: 2, pipeline_partition: [2]}}}}"
expect_error partition_empty_stage 2 "pipeline_partition has a stage of 0 blocks" \
  "pipeline_parallel_degree: 2
pipeline_partition: [2, 0]"
expect_error pipeline_microbatches 2 "microbatches \(3\) must divide per_device_train_batch_size \(4\)" \
  "$MP {partitions: 2, microbatches: 3, pipeline: simple}}}}"
expect_error unknown_schedule 2 "pipeline is '1f1b'; expected simple" "$MP {partitions: 2, pipeline: 1f1b}}}}"
MODEL=$WORK/odd_vocab expect_error tensor_over_vocab 2 \
  "tensor_parallel_degree 2 does not divide the model's vocabulary \(vocab_size 8001, .*pad vocab_size in config.json to a multiple of 2 \(e.g. 8002\)" \
  "tensor_parallel_degree: 2"
MODEL=$WORK/odd_ffn expect_error tensor_over_ffn 2 "tensor_parallel_degree 2 does not divide the model's feed-forward size \(33," \
  "tensor_parallel_degree: 2"
MODEL=$WORK/albert expect_error tensor_architecture 2 \
  "tensor_parallel_degree 2: model_type 'albert' \(.*\) has no tensor-parallel layers in this build \(they exist for: bert, roberta, distilbert, gpt2, bart, t5\)" \
  "$MP {tensor_parallel_degree: 2}}}}"
expect_error unknown_parameter 1 "unknown key distribution.smdistributed.modelparallel.parameters.microbatch; did you mean 'microbatches'\?" \
  "$MP {microbatch: 2}}}}"
expect_error both_libraries 1 "enables both dataparallel and modelparallel" \
  "distribution: {smdistributed: {dataparallel: {enabled: true}, modelparallel: {enabled: true, parameters: {partitions: 1}}}}"
expect_error zero3 1 "ZeRO stage 3 \(parameter sharding\) is not implemented" "deepspeed: {zero_optimization: {stage: 3}}"
expect_error processes_per_host 2 "distribution.mpi.processes_per_host is 4 but OpenMPI started 2" \
  "distribution: {mpi: {enabled: true, processes_per_host: 4}}"
((failures == 0)) && echo "all bad layouts refused before any work" && exit 0
echo "$failures case(s) FAILED"
exit 1
