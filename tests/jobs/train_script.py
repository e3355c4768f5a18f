"""A job's script entry point that trains through `strata train`, for the job tests: it needs
no Python module, only the contract a script keeps with the job runner (docs/jobs.md,
"Script entry points"):
  - its options are the job's hyperparameters, as `--name value` arguments;
  - checkpoints go to SM_CHECKPOINT_DIR; STRATA_RESUME_FROM_CHECKPOINT, when set, is the
    checkpoint to resume from;
  - SIGTERM and SIGUSR1 stop training after a step with a checkpoint, and the script exits
    with the status strata train gives that (75);
  - the trained model goes to SM_MODEL_DIR.
It also writes what it was given (arguments, SM_* variables) to SM_OUTPUT_DATA_DIR/given.json,
which the test checks.
  train_script.py --strata STRATA --config TRAIN.yaml [--max_steps N ...]: the other options
  become `--set name=value` of strata train."""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--strata", required=True)
    parser.add_argument("--config", required=True)
    known, rest = parser.parse_known_args()
    overrides = [f"{rest[i].lstrip('-')}={rest[i + 1]}" for i in range(0, len(rest), 2)]
    given = {"argv": sys.argv[1:], "env": {k: v for k, v in os.environ.items() if k.startswith(("SM_", "STRATA_"))}}
    with open(os.path.join(os.environ["SM_OUTPUT_DATA_DIR"], "given.json"), "w") as f:
        json.dump(given, f)

    sets = [f"output_dir={os.environ['SM_CHECKPOINT_DIR']}", "overwrite_output_dir=true",
            f"num_threads={os.environ['OMP_NUM_THREADS']}",
            f"resume_from_checkpoint={os.environ.get('STRATA_RESUME_FROM_CHECKPOINT', '')}"] + overrides
    command = [known.strata, "train", known.config]
    for s in sets:
        command += ["--set", s]
    child = subprocess.Popen(command)
    # The runner's stop request is for the training: pass it on, and end as the training ends.
    for sig in (signal.SIGTERM, signal.SIGUSR1):
        signal.signal(sig, lambda number, frame: child.send_signal(signal.SIGTERM))
    status = child.wait()
    status = status if status >= 0 else 128 - status  # killed by a signal: as a shell reports it
    if status == 0:
        for name in os.listdir(os.environ["SM_CHECKPOINT_DIR"]):
            path = os.path.join(os.environ["SM_CHECKPOINT_DIR"], name)
            if os.path.isfile(path):
                shutil.copy(path, os.environ["SM_MODEL_DIR"])
    sys.exit(status)


if __name__ == "__main__":
    main()
