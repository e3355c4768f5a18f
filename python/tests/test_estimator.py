"""strata.Estimator end to end: jobs through `strata job run` (the executable of STRATA_CLI) on
the small spam task of conftest.py (64 e-mails, a 2-layer BERT: 8 steps an epoch, about a
second a job on 2 cores). A YAML entry point job, a spot job interrupted once, attach(), fit
without waiting, bad input and a failing job, and a Python script using strata.Trainer that is
interrupted and resumed (on one rank, and on two through mpirun)."""
import json
import os
import re
import shutil
import textwrap
import time

import pytest

from conftest import BASE, write_yaml
from strata.estimator import Estimator, UnexpectedStatusException

SPOT_PRICE = 0.01725  # catalog/instances.yaml, local.c1
MPIRUN = shutil.which("mpirun")

# A SageMaker-style training script on strata.Trainer: options from its arguments (the
# hyperparameters), data from its channel, checkpoints in SM_CHECKPOINT_DIR, resume from
# STRATA_RESUME_FROM_CHECKPOINT, the model into SM_MODEL_DIR. An interruption ends it with
# strata.TrainingInterrupted (exit status 75), uncaught, as a script would.
SCRIPT = textwrap.dedent("""
    import argparse, json, os
    import strata
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=float, default=1)
    parser.add_argument("--learning_rate", type=float)
    parser.add_argument("--model")
    parser.add_argument("--tokenizer")
    args = parser.parse_args()
    given = {k: v for k, v in os.environ.items() if k.startswith("SM_") or k.startswith("STRATA_")}
    rank = os.environ.get("OMPI_COMM_WORLD_RANK", "0")
    with open(os.path.join(os.environ["SM_OUTPUT_DATA_DIR"], f"given-{rank}.json"), "w") as f:
        json.dump(given, f)
    training_args = strata.TrainingArguments(
        output_dir=os.environ["SM_CHECKPOINT_DIR"], num_train_epochs=args.epochs, learning_rate=args.learning_rate,
        num_threads=int(os.environ["OMP_NUM_THREADS"]), max_seq_length=32, per_device_train_batch_size=OPTIONS_BATCH,
        seed=42, save_strategy="steps", save_steps=4, logging_steps=1, disable_tqdm=True, report_to="none")
    trainer = strata.Trainer(model=args.model, tokenizer=args.tokenizer, args=training_args,
                             train_dataset=os.environ["SM_CHANNEL_TRAIN"])
    trainer.train(resume_from_checkpoint=os.environ.get("STRATA_RESUME_FROM_CHECKPOINT"))
    if trainer.is_world_process_zero():
        trainer.save_model(os.environ["SM_MODEL_DIR"])
""")


def training_config(tmp_path, spam, **overrides):
    """The small task as a strata train configuration: 8 steps an epoch, a checkpoint every 4."""
    options = dict(BASE, train_file=spam["train_file"], output_dir="unused", save_strategy="steps", save_steps=4,
                   logging_steps=1)
    options.update(overrides)
    return write_yaml(tmp_path / "train.json", options)


def estimator(tmp_path, entry_point, **kwargs):
    kwargs.setdefault("instance_type", "local.c1")
    return Estimator(entry_point=entry_point, output_path=str(tmp_path / "jobs"), **kwargs)


def status(job):
    with open(os.path.join(job.job_dir, "status.json")) as f:
        return json.load(f)


def events(job):
    with open(os.path.join(job.job_dir, "events.jsonl")) as f:
        return [json.loads(line)["event"] for line in f]


def wait_for_line(path, text, seconds=240):
    """Until the file holds `text`: an event, not a time (the bound only ends a broken run)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if os.path.exists(path):
            with open(path, errors="replace") as f:
                if text in f.read():
                    return
        time.sleep(0.05)
    pytest.fail(f"{path} never said {text!r}")


def model_bytes(directory):
    with open(os.path.join(directory, "model.safetensors"), "rb") as f:
        return f.read()


def test_yaml_entry_point_runs_to_completion_streaming_the_runner(tmp_path, spam, capsys):
    config = training_config(tmp_path, spam)
    est = estimator(tmp_path, config, hyperparameters={"num_train_epochs": 1}, base_job_name="spam")
    est.fit()
    out = capsys.readouterr().out
    job = est.latest_training_job
    assert re.fullmatch(r"spam-\d{4}(-\d\d){5}-\d{3}", job.name), job.name  # SageMaker's job names
    assert f"training      {config} + num_train_epochs=1\n" in out
    assert "Billable seconds: " in out and out.endswith(f"job {job.name}: Completed\n"), out[-500:]
    assert job.status == "Completed"
    assert job.job_dir == str(tmp_path / "jobs" / job.name)
    assert est.model_data == job.model_data == os.path.join(job.job_dir, "model")
    assert {"config.json", "model.safetensors", "train_results.json"} <= set(os.listdir(est.model_data))
    with open(os.path.join(est.model_data, "train_results.json")) as f:
        assert json.load(f)["global_step"] == 8  # the hyperparameter overrode the config's 2 epochs
    d = job.describe()
    assert d["TrainingJobStatus"] == "Completed" and d["SecondaryStatus"] == "Completed"
    assert d["HyperParameters"] == {"num_train_epochs": 1}
    assert d["ModelArtifacts"] == {"S3ModelArtifacts": est.model_data}
    assert d["BillableTimeInSeconds"] == job.billable_seconds > 0
    assert d["ResourceConfig"] == {"InstanceType": "local.c1", "InstanceCount": 1}


def test_spot_job_interrupted_once_resumes_and_reports_billing(tmp_path, spam, capsys):
    config = training_config(tmp_path, spam)
    reference = estimator(tmp_path, config)
    reference.fit(logs=False)
    spot = estimator(tmp_path, config, use_spot_instances=True, max_run=600, max_wait=1200,
                     checkpoint_s3_uri=f"file://{tmp_path}/spot-checkpoints",
                     simulate_interruptions=[{"at_step": 6}], simulate_capacity_wait=0.2)
    spot.fit()
    out = capsys.readouterr().out
    job = spot.latest_training_job
    s = status(job)
    assert [a["exit_status"] for a in s["attempts"]] == [75, 0]  # 75: stopped after a step with a checkpoint
    assert "resuming from checkpoint-6" in events(job)
    assert os.path.isdir(tmp_path / "spot-checkpoints" / "checkpoint-6")
    assert model_bytes(spot.model_data) == model_bytes(reference.model_data)  # the resume is exact
    b = s["billing"]
    assert b["billable_seconds"] == pytest.approx(sum(a["end"] - a["start"] for a in s["attempts"]), abs=0.01)
    assert b["billable_seconds"] <= b["training_seconds"]
    assert b["cost_usd"] == pytest.approx(b["billable_seconds"] * SPOT_PRICE / 3600, abs=2e-6)
    assert b["spot_savings_percent"] == 70.0
    assert "Managed Spot Training savings: 70.0%" in out
    assert job.describe()["EnableManagedSpotTraining"] is True


def test_attach_binds_a_finished_job_with_its_arguments(tmp_path, spam, monkeypatch, capsys):
    config = training_config(tmp_path, spam)
    monkeypatch.chdir(tmp_path)
    est = estimator(tmp_path, "train.json", hyperparameters={"num_train_epochs": 1}, environment={"FOO": "bar"},
                    termination_grace_period=30)
    est.fit(logs=False, job_name="attach-me")
    monkeypatch.chdir("/")  # the record's relative paths resolve from where the job ran, not from here
    attached = Estimator.attach("attach-me", output_path=str(tmp_path / "jobs"))
    assert attached.latest_training_job.name == "attach-me"
    assert attached.latest_training_job.status == "Completed"
    assert attached.model_data == est.model_data
    assert attached.entry_point == config and not attached.runs_script
    assert attached.instance_type == "local.c1" and attached.instance_count == 1
    assert attached.hyperparameters() == {"num_train_epochs": 1}
    assert attached.environment == {"FOO": "bar"}
    assert attached.strata_extras == {"termination_grace_period": 30}
    assert attached.output_path == str(tmp_path / "jobs")
    capsys.readouterr()
    attached.latest_training_job.wait()  # another process's job: its recorded events, then the billing
    out = capsys.readouterr().out
    assert re.search(r"^\d\d:\d\d:\d\d Starting: job created$", out, re.M) and "\nBillable seconds: " in out, out
    assert re.search(r"^\d\d:\d\d:\d\d Completed$", out, re.M), out
    by_dir = Estimator.attach(est.latest_training_job.job_dir)  # a job directory works as well
    assert by_dir.model_data == est.model_data
    with pytest.raises(ValueError, match="no job 'nope' under"):
        Estimator.attach("nope", output_path=str(tmp_path / "jobs"))


def test_fit_without_waiting_returns_once_the_job_is_recorded(tmp_path, spam, capsys):
    config = training_config(tmp_path, spam)
    est = estimator(tmp_path, config, hyperparameters={"num_train_epochs": 1})
    est.fit(wait=False)
    assert capsys.readouterr().out == ""
    job = est.latest_training_job
    assert os.path.exists(os.path.join(job.job_dir, "status.json"))
    job.wait()
    out = capsys.readouterr().out
    assert out.startswith(f"job           {job.name}\n") and out.endswith(f"job {job.name}: Completed\n"), out
    assert job.status == "Completed"
    job.logs(attempt=1, rank=0)
    assert "==> logs/attempt-1/rank-0.log <==" in capsys.readouterr().out

    # A job that pauses after step 2 (until a stop request) is still training when fit returns;
    # stop() ends it with a checkpoint, and wait() warns, as SageMaker's does for "Stopped".
    paused = estimator(tmp_path, config, environment={"STRATA_PAUSE_AT_STEP": "2"})
    paused.fit(wait=False)
    job = paused.latest_training_job
    wait_for_line(os.path.join(job.job_dir, "logs", "attempt-1", "rank-0.log"), "paused for an interruption after step 2;")
    assert job.status == "Training"
    job.stop()
    with pytest.warns(RuntimeWarning, match=f"training job {job.name} ended Stopped rather than Completed"):
        job.wait(logs=False)
    assert job.status == "Stopped"
    assert os.path.isdir(os.path.join(job.job_dir, "checkpoints", "checkpoint-2"))
    with pytest.raises(ValueError, match=f"training job {job.name} is Stopped: only a Completed job has a model"):
        paused.model_data


def test_bad_arguments_are_refused_before_any_job(tmp_path, spam):
    config = training_config(tmp_path, spam)
    with pytest.raises(TypeError, match="unexpected keyword argument 'use_spot_instance'; "
                                        "did you mean 'use_spot_instances'"):
        estimator(tmp_path, config, use_spot_instance=True)
    with pytest.raises(TypeError, match="role is SageMaker's"):
        estimator(tmp_path, config, role="arn:aws:iam::1:role/x")
    with pytest.raises(FileNotFoundError, match="entry_point 'nope.py' does not exist"):
        estimator(tmp_path, "nope.py")
    with pytest.raises(ValueError, match="expected a Python script"):
        estimator(tmp_path, "train.sh")
    with pytest.raises(TypeError, match=r"hyperparameters\['layers'\] is list"):
        estimator(tmp_path, config, hyperparameters={"layers": [1, 2]})
    with pytest.raises(TypeError, match="python= is the interpreter of a script entry point"):
        estimator(tmp_path, config, python="python3")
    with pytest.raises(ValueError, match="this Estimator has no training job yet"):
        estimator(tmp_path, config).model_data

    # Values are the runner's to check; its messages name the Estimator, not a temporary file.
    refusals = [
        (dict(instance_type="local.c3"), r"^Estimator: instance_type 'local.c3' is not in the instance catalog .*"
                                         r"did you mean 'local.c2'"),
        (dict(hyperparameters={"lerning_rate": 0.1}),
         r"^Estimator hyperparameters: lerning_rate: unknown option 'lerning_rate'; did you mean 'learning_rate'"),
        (dict(use_spot_instances=True, max_run=600, max_wait=300),
         r"^Estimator: max_wait \(300 s\) must be at least max_run \(600 s\)"),
        (dict(checkpoint_s3_uri="s3://bucket/spam"), r"checkpoint_uri 's3://bucket/spam': strata has no client for s3://"),
        (dict(instance_count=0), r"^Estimator: instance_count expects an integer >= 1"),
    ]
    for kwargs, message in refusals:
        with pytest.raises(ValueError, match=message):
            estimator(tmp_path, config, **kwargs).fit()
    assert not os.path.exists(tmp_path / "jobs")  # nothing was recorded
    with pytest.raises(ValueError, match=r"inputs\['extra'\]: a strata train configuration takes the channels"):
        estimator(tmp_path, config).fit(inputs={"extra": spam["train_file"]})
    with pytest.raises(ValueError, match="strata has no client for s3://"):
        estimator(tmp_path, config).fit(inputs="s3://bucket/train")
    with pytest.raises(FileNotFoundError, match=r"inputs\['train'\]: .*missing.csv does not exist"):
        estimator(tmp_path, config).fit(inputs={"train": str(tmp_path / "missing.csv")})

    est = estimator(tmp_path, config, hyperparameters={"num_train_epochs": 1})
    est.fit(logs=False, job_name="once")
    with pytest.raises(ValueError, match="training job once already exists .*status Completed"):
        est.fit(job_name="once")


def test_a_failed_job_raises_with_its_status_and_log(tmp_path, spam):
    config = training_config(tmp_path, spam, label_column="category")  # the data has no such column
    est = estimator(tmp_path, config)
    with pytest.raises(UnexpectedStatusException) as e:
        est.fit(logs=False, job_name="broken")
    assert e.value.actual_status == "Failed" and e.value.job_name == "broken"
    message = str(e.value)
    assert message.startswith("Error for Training job broken: Failed. Reason: attempt 1 exited with status 1; "
                              "rank-0.log: error: "), message
    assert "no label column 'category'" in message
    assert f"Last lines of {tmp_path}/jobs/broken/logs/attempt-1/rank-0.log:" in message
    assert "no label column 'category'" in e.value.log_tail
    assert est.latest_training_job.describe()["FailureReason"].startswith("attempt 1 exited with status 1")
    with pytest.raises(ValueError, match="training job broken is Failed"):
        est.model_data


def run_script_job(tmp_path, spam, batch, **kwargs):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.replace("OPTIONS_BATCH", str(batch)))
    est = estimator(tmp_path, str(script), use_spot_instances=True, simulate_interruptions=[{"at_step": 3}],
                    hyperparameters={"epochs": 1, "learning_rate": BASE["learning_rate"],
                                     "model": BASE["model_name_or_path"], "tokenizer": BASE["tokenizer_name"]},
                    **kwargs)
    est.fit(inputs={"train": spam["train_file"]}, logs=False)
    return est


def test_a_python_script_entry_point_is_interrupted_and_resumes(tmp_path, spam):
    reference = estimator(tmp_path, training_config(tmp_path, spam, num_train_epochs=1))
    reference.fit(logs=False)
    est = run_script_job(tmp_path, spam, batch=8)
    job = est.latest_training_job
    s = status(job)
    # strata.TrainingInterrupted ended attempt 1 with 75; attempt 2 resumed from its checkpoint.
    assert [a["exit_status"] for a in s["attempts"]] == [75, 0]
    with open(os.path.join(job.job_dir, "logs", "attempt-2", "rank-0.log")) as f:
        assert re.search(r"resumed from .*/work/checkpoint-3 ", f.read())
    assert model_bytes(est.model_data) == model_bytes(reference.model_data)  # the script's run is the config's
    with open(os.path.join(job.job_dir, "output", "data", "given-0.json")) as f:
        given = json.load(f)  # what the last attempt's script was given
    assert given["STRATA_RESUME_FROM_CHECKPOINT"] == os.path.join(job.job_dir, "work", "checkpoint-3")
    assert given["SM_CHANNEL_TRAIN"] == spam["train_file"]
    assert json.loads(given["SM_HPS"])["epochs"] == 1
    assert json.loads(given["SM_TRAINING_ENV"])["user_entry_point"] == "train.py"
    assert job.describe()["spec"]["python"]  # this interpreter, so the ranks import this strata


@pytest.mark.skipif(MPIRUN is None, reason="no mpirun")
def test_a_python_script_on_two_ranks_through_mpirun(tmp_path, spam):
    config = training_config(tmp_path, spam, num_train_epochs=1, per_device_train_batch_size=4)
    reference = estimator(tmp_path, config, instance_type="local.c2",
                          distribution={"mpi": {"enabled": True, "processes_per_host": 2}})
    reference.fit(logs=False)
    est = run_script_job(tmp_path, spam, batch=4, instance_type="local.c2",
                         distribution={"mpi": {"enabled": True, "processes_per_host": 2}})
    job = est.latest_training_job
    assert [a["exit_status"] for a in status(job)["attempts"]] == [75, 0]
    assert os.path.exists(os.path.join(job.job_dir, "logs", "attempt-2", "rank-1.log"))
    assert model_bytes(est.model_data) == model_bytes(reference.model_data)
    with open(os.path.join(job.job_dir, "output", "data", "given-0.json")) as f:
        given = json.load(f)
    assert json.loads(given["SM_HOSTS"]) == ["algo-1"] and given["SM_NUM_CPUS"] == "2"
