"""strata.Trainer against the command line and HF's Trainer semantics."""
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import strata
from conftest import BASE, SPAM, cli_binary, run_cli, trainer_kwargs, write_yaml


def make_trainer(tmp_path, spam, name="run", train=None, eval=None, **kw):
    callbacks = kw.pop("callbacks", None)
    compute_metrics = kw.pop("compute_metrics", None)
    args = strata.TrainingArguments(**trainer_kwargs(tmp_path / name, **kw))
    return strata.Trainer(model=BASE["model_name_or_path"], tokenizer=BASE["tokenizer_name"], args=args,
                          train_dataset=spam["train_file"] if train is None else train,
                          eval_dataset=eval, compute_metrics=compute_metrics, callbacks=callbacks)


def weights(model_dir):
    with open(os.path.join(model_dir, "model.safetensors"), "rb") as f:
        return f.read()


def test_version_is_the_cli_version():
    out = subprocess.run([cli_binary(), "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == strata.version_string
    assert strata.version_string.startswith("strata " + strata.__version__)


def test_api_equals_cli_bit_for_bit(tmp_path, spam):
    options = dict(BASE, output_dir=str(tmp_path / "cli"), train_file=spam["train_file"],
                   validation_file=spam["validation_file"], do_train=True, do_eval=True, eval_strategy="epoch",
                   save_strategy="no")
    run_cli(write_yaml(tmp_path / "cli.yaml", options))
    trainer = make_trainer(tmp_path, spam, name="api", eval=spam["validation_file"], eval_strategy="epoch",
                           save_strategy="no")
    out = trainer.train()
    trainer.save_model()
    assert weights(tmp_path / "api") == weights(tmp_path / "cli")
    cli = json.load(open(tmp_path / "cli" / "train_results.json"))
    assert out.training_loss == cli["train_loss"]
    assert out.global_step == cli["global_step"] == 16
    metrics = trainer.evaluate()
    cli_eval = json.load(open(tmp_path / "cli" / "eval_results.json"))
    for k in ("eval_loss", "eval_accuracy", "eval_f1"):
        assert metrics[k] == cli_eval[k], k


def test_in_memory_datasets_give_the_file_run(tmp_path, spam):
    import datasets
    rows = spam["train_rows"]
    columns = {"text": [r["text"] for r in rows], "label": np.array([r["label"] for r in rows], dtype=np.int64)}
    runs = {"file": spam["train_file"], "rows": rows, "columns": columns,
            "hf": datasets.Dataset.from_dict({"text": columns["text"], "label": columns["label"]})}
    losses, blobs = {}, {}
    for name, data in runs.items():
        t = make_trainer(tmp_path, spam, name=name, train=data, save_strategy="no")
        losses[name] = t.train().training_loss
        t.save_model()
        blobs[name] = weights(tmp_path / name)
        t.close()
    assert len(set(losses.values())) == 1, losses
    assert len(set(blobs.values())) == 1


def test_compute_metrics_gets_every_evaluation_arrays(tmp_path, spam):
    calls = []
    labels = np.array([r["label"] for r in spam["validation_rows"]])

    def compute_metrics(p):
        logits, label_ids = p
        calls.append((logits.shape, label_ids.dtype, label_ids.copy(), logits.copy()))
        return {"mean_logit": float(logits.mean()), "hits": int((logits.argmax(-1) == label_ids).sum())}

    t = make_trainer(tmp_path, spam, eval=spam["validation_file"], eval_strategy="steps", eval_steps=5,
                     compute_metrics=compute_metrics, metric_for_best_model="hits", save_strategy="steps",
                     save_steps=5, load_best_model_at_end=True)
    t.train()
    evals = [e for e in t.state.log_history if "eval_loss" in e]
    assert [e["step"] for e in evals] == [5, 10, 15]
    assert len(calls) == 3
    for (shape, dtype, got, logits), e in zip(calls, evals):
        assert shape == (32, 2) and dtype == np.int64
        assert (got == labels).all()
        assert e["eval_mean_logit"] == pytest.approx(float(logits.mean()))
        assert e["eval_hits"] == int((logits.argmax(-1) == labels).sum())
        assert e["eval_accuracy"] == pytest.approx(e["eval_hits"] / 32)
    assert t.state.best_metric == max(e["eval_hits"] for e in evals)


def test_callbacks_see_the_events_and_stop_training(tmp_path, spam):
    seen = []

    class Recorder(strata.TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kw):
            seen.append(("log", state.global_step, sorted(logs)))

        def on_evaluate(self, args, state, control, metrics=None, **kw):
            seen.append(("evaluate", state.global_step, metrics["eval_loss"]))

        def on_save(self, args, state, control, **kw):
            seen.append(("save", state.global_step))

        def on_epoch_end(self, args, state, control, **kw):
            seen.append(("epoch_end", state.global_step))

        def on_step_end(self, args, state, control, **kw):
            if state.global_step == 12:
                control.should_training_stop = True

        def on_train_end(self, args, state, control, **kw):
            seen.append(("train_end", state.global_step))

    t = make_trainer(tmp_path, spam, eval=spam["validation_file"], eval_strategy="epoch", save_strategy="epoch",
                     logging_steps=4, callbacks=[Recorder()])
    out = t.train()
    assert out.global_step == 12  # stopped in the second epoch
    assert ("epoch_end", 8) in seen and ("save", 8) in seen
    assert [s for s in seen if s[0] == "evaluate"][0][1] == 8
    assert [s[1] for s in seen if s[0] == "log" and "loss" in s[2]] == [4, 8, 12]
    assert seen[-1] == ("train_end", 12)
    assert os.path.isdir(tmp_path / "run" / "checkpoint-8")


def test_ctrl_c_checkpoints_raises_and_resumes_exactly(tmp_path, spam):
    full = make_trainer(tmp_path, spam, name="full", save_strategy="no")
    full.train()
    full.save_model()
    full.close()

    class CtrlC(strata.TrainerCallback):  # Ctrl-C while Python code runs: KeyboardInterrupt in it
        def on_step_end(self, args, state, control, **kw):
            if state.global_step == 6:
                raise KeyboardInterrupt

    t = make_trainer(tmp_path, spam, name="cut", save_strategy="no", callbacks=[CtrlC()])
    with pytest.raises(KeyboardInterrupt, match="after step 6"):
        t.train()
    checkpoint = tmp_path / "cut" / "checkpoint-6"
    assert (checkpoint / "model.safetensors").exists() and (checkpoint / "trainer_state.json").exists()
    t.callbacks.clear()
    out = t.train(resume_from_checkpoint=True)
    assert out.global_step == 16
    t.save_model()
    assert weights(tmp_path / "cut") == weights(tmp_path / "full")


CTRL_C_SCRIPT = """
import json, sys
import strata
options = json.load(open(sys.argv[1]))
model, tokenizer, train = options.pop("model"), options.pop("tokenizer"), options.pop("train")
trainer = strata.Trainer(model=model, tokenizer=tokenizer, args=strata.TrainingArguments(**options),
                         train_dataset=train)
try:
    out = trainer.train(resume_from_checkpoint=len(sys.argv) > 2 or None)
except KeyboardInterrupt as e:
    print("INTERRUPTED", e, flush=True)
    sys.exit(130)
trainer.save_model()
print("DONE", out.global_step, flush=True)
"""


def test_ctrl_c_from_outside_while_cpp_trains(tmp_path, spam):
    """SIGINT while C++ computes (no callback): Python sees it after the step, as Ctrl-C."""
    script = tmp_path / "train.py"
    script.write_text(CTRL_C_SCRIPT)
    env = dict(os.environ)

    def options(name):
        o = trainer_kwargs(tmp_path / name, max_steps=80, logging_steps=5, save_strategy="no")
        o.update(model=BASE["model_name_or_path"], tokenizer=BASE["tokenizer_name"], train=spam["train_file"])
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(o))
        return str(path)

    full = subprocess.run([sys.executable, str(script), options("full")], capture_output=True, text=True, env=env)
    assert "DONE 80" in full.stdout, full.stdout[-2000:] + full.stderr[-2000:]
    cut = options("cut")
    p = subprocess.Popen([sys.executable, str(script), cut], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, env=env)
    for line in p.stdout:  # the log's entries are JSON lines with the step
        if line.startswith("{") and json.loads(line).get("step", 0) >= 10:
            p.send_signal(signal.SIGINT)
            break
    rest = p.stdout.read()
    assert p.wait() == 130, (p.returncode, rest[-3000:])
    assert "INTERRUPTED training stopped after step" in rest
    step = int(rest.split("INTERRUPTED training stopped after step ")[1].split(";")[0])
    assert 10 <= step < 80
    assert (tmp_path / "cut" / f"checkpoint-{step}" / "model.safetensors").exists()
    resumed = subprocess.run([sys.executable, str(script), cut, "resume"], capture_output=True, text=True, env=env)
    assert "DONE 80" in resumed.stdout, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    assert weights(tmp_path / "cut") == weights(tmp_path / "full")


def test_predict_hands_over_numpy_arrays(tmp_path, spam):
    t = make_trainer(tmp_path, spam, save_strategy="no")
    t.train()
    out = t.predict(spam["validation_rows"])
    assert out.predictions.shape == (32, 2) and out.predictions.dtype == np.float32
    assert not out.predictions.flags.owndata  # a view of strata's buffer
    assert (out.label_ids == [r["label"] for r in spam["validation_rows"]]).all()
    assert out.metrics["test_accuracy"] == pytest.approx(
        float((out.predictions.argmax(-1) == out.label_ids).mean()))


def test_training_arguments_are_checked_as_configs_are(tmp_path):
    with pytest.raises(strata.StrataError, match="did you mean 'learning_rate'"):
        strata.TrainingArguments(output_dir=str(tmp_path), lerning_rate=1e-4)
    with pytest.raises(strata.StrataError, match="num_train_epochs"):
        strata.TrainingArguments(output_dir=str(tmp_path), num_train_epochs="many")
    args = strata.TrainingArguments(output_dir=str(tmp_path), learning_rate=3e-4,
                                    distribution={"smdistributed": {"dataparallel": {"enabled": True}}})
    assert args.learning_rate == 3e-4 and args.to_dict()["per_device_train_batch_size"] == 8
    assert "learning_rate" in repr(args)
    with pytest.raises(strata.StrataError):
        args.warmup_ratio = 2.0
    assert args.warmup_ratio == 0.0


def test_bad_input_raises_and_leaves_no_partial_output(tmp_path, spam):
    with pytest.raises(TypeError, match="args must be"):
        strata.Trainer(model=BASE["model_name_or_path"], args=42)
    with pytest.raises(strata.StrataError, match="train_dataset.jsonl.*'label'"):
        make_trainer(tmp_path, spam, name="nolabel", train=[{"text": r["text"]} for r in spam["train_rows"]])
    with pytest.raises(ValueError, match="row 0 has"):
        make_trainer(tmp_path, spam, name="ragged", train=[{"text": "a", "label": 0}, {"txt": "b", "label": 1}])

    def broken(p):
        raise RuntimeError("metric exploded")

    t = make_trainer(tmp_path, spam, name="broken", eval=spam["validation_file"], eval_strategy="steps", eval_steps=5,
                     save_strategy="steps", save_steps=4, compute_metrics=broken)
    with pytest.raises(RuntimeError, match="metric exploded"):
        t.train()
    run = tmp_path / "broken"
    assert sorted(p.name for p in run.iterdir() if p.name.startswith("checkpoint")) == ["checkpoint-4"]
    assert not [p for p in run.rglob("*.tmp")]

    class Failing(strata.TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kw):
            raise KeyError("callback failed")

    t = make_trainer(tmp_path, spam, name="cbfail", logging_steps=2, save_strategy="no", callbacks=[Failing()])
    with pytest.raises(KeyError, match="callback failed"):
        t.train()


def test_compute_metrics_for_token_classification(tmp_path):
    """run_ner's shape: logits [N, T, tags] and labels [N, T], -100 off the labelled tokens."""
    import gzip
    pos = os.path.join(os.path.dirname(SPAM), "pos")

    def rows(split, n):
        with gzip.open(os.path.join(pos, "data", f"{split}.jsonl.gz"), "rt") as f:
            return [{"tokens": r["tokens"][:20], "tags": r["tags"][:20]} for r in map(json.loads, f.readlines()[:n])]

    train = rows("train", 200)
    tags = sorted({t for r in train for t in r["tags"]})
    known = lambda rs: [r for r in rs if set(r["tags"]) <= set(tags)]  # noqa: E731
    validation, test = known(rows("validation", 40))[:16], known(rows("test", 40))[:8]
    seen = []

    def compute_metrics(p):
        logits, labels = p
        kept = labels != -100
        seen.append((logits.shape, labels.shape))
        return {"token_hits": int((logits.argmax(-1)[kept] == labels[kept]).sum()), "tokens": int(kept.sum())}

    args = strata.TrainingArguments(**trainer_kwargs(tmp_path / "pos", task="token-classification",
                                                     num_train_epochs=1, eval_strategy="epoch", save_strategy="no"))
    t = strata.Trainer(model=os.path.join(pos, "bert-pos"), tokenizer=os.path.join(os.path.dirname(SPAM),
                       "tokenizers", "bert-wordpiece-8k"), args=args, train_dataset=train,
                       eval_dataset=validation, compute_metrics=compute_metrics)
    t.train()
    (shape, label_shape), = seen
    assert shape[0] == 16 and shape[2] == len(tags) and label_shape == shape[:2]
    e = [e for e in t.state.log_history if "eval_loss" in e][0]
    assert 0 < e["eval_tokens"] <= sum(len(r["tokens"]) for r in validation)  # first tokens of words within 32
    assert e["eval_accuracy"] == pytest.approx(e["eval_token_hits"] / e["eval_tokens"])
    out = t.predict(test)
    assert out.predictions.shape[0] == 8 and out.label_ids.shape == out.predictions.shape[:2]
