"""A script using strata.Trainer under mpirun trains as `strata train` does under mpirun."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import BASE, cli_binary, write_yaml

MPIRUN = os.environ.get("STRATA_MPIRUN") or shutil.which("mpirun")
SCRIPT = textwrap.dedent("""
    import json, sys
    import strata
    options = json.load(open(sys.argv[1]))
    model, tokenizer = options.pop("model_name_or_path"), options.pop("tokenizer_name")
    train, validation = options.pop("train_file"), options.pop("validation_file")
    for key in ("do_train", "do_eval"):
        options.pop(key)
    trainer = strata.Trainer(model=model, tokenizer=tokenizer, args=strata.TrainingArguments(**options),
                             train_dataset=train, eval_dataset=validation)
    out = trainer.train()
    trainer.save_model()
    metrics = trainer.evaluate()
    import os
    with open(f"{sys.argv[2]}/result-{os.environ['OMPI_COMM_WORLD_RANK']}.json", "w") as f:
        json.dump({"world_size": trainer.world_size, "zero": trainer.is_world_process_zero(),
                   "train_loss": out.training_loss, "eval": metrics}, f)
""")


@pytest.mark.skipif(MPIRUN is None, reason="no mpirun")
def test_two_ranks_from_python_equal_the_cli(tmp_path, spam):
    options = dict(BASE, num_threads=1, train_file=spam["train_file"], validation_file=spam["validation_file"],
                   do_train=True, do_eval=True, eval_strategy="epoch", save_strategy="no")
    mpirun = [MPIRUN, "--oversubscribe", "--allow-run-as-root", "-np", "2"]
    cli = dict(options, output_dir=str(tmp_path / "cli"))
    out = subprocess.run(mpirun + [cli_binary(), "train", write_yaml(tmp_path / "cli.yaml", cli)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    api = dict(options, output_dir=str(tmp_path / "api"))
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    out = subprocess.run(mpirun + [sys.executable, str(script), write_yaml(tmp_path / "api.json", api), str(tmp_path)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    results = [json.load(open(tmp_path / f"result-{rank}.json")) for rank in (0, 1)]
    assert sorted(r["zero"] for r in results) == [False, True]
    assert all(r["world_size"] == 2 for r in results)
    timing = ("eval_runtime", "eval_samples_per_second")
    same = [{k: v for k, v in r["eval"].items() if k not in timing} for r in results]
    assert same[0] == same[1] and "eval_f1" in same[0]  # metrics on every rank
    cli_results = json.load(open(tmp_path / "cli" / "train_results.json"))
    assert results[0]["train_loss"] == cli_results["train_loss"]
    with open(tmp_path / "cli" / "model.safetensors", "rb") as a, open(tmp_path / "api" / "model.safetensors", "rb") as b:
        assert a.read() == b.read()
