"""strata.Estimator: SageMaker's Estimator over strata's job runner (``strata job run``).

The argument names are SageMaker's (``entry_point``, ``instance_type``, ``instance_count``,
``hyperparameters``, ``distribution``, ``use_spot_instances``, ``max_run``, ``max_wait``,
``checkpoint_s3_uri``, ``checkpoint_local_path``, ``output_path``, ``base_job_name``,
``environment``) and keep their meaning; the job runs locally, over a hostfile or on Slurm, as
docs/jobs.md describes. Pure Python: it writes a job spec and runs the ``strata`` command::

    est = strata.Estimator(entry_point="train.py", instance_type="local.c2",
                           hyperparameters={"epochs": 3}, use_spot_instances=True, max_wait=7200)
    est.fit()                 # streams the runner's output; returns when the job has ended
    est.model_data            # the trained model: an HF model directory
"""
import datetime
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import warnings

__all__ = ["Estimator", "TrainingJob", "UnexpectedStatusException", "strata_cli"]

DEFAULT_OUTPUT_PATH = "out/jobs"  # the `strata job` commands' default
_CONFIG_SUFFIXES = (".yaml", ".yml", ".json")

# SageMaker's arguments, as Estimator takes them.
SAGEMAKER_ARGUMENTS = ("entry_point", "instance_type", "instance_count", "hyperparameters", "distribution",
                       "use_spot_instances", "max_run", "max_wait", "checkpoint_s3_uri", "checkpoint_local_path",
                       "output_path", "base_job_name", "environment", "source_dir")

# The job spec's keys beyond SageMaker's names (docs/jobs.md, "The job spec"), and `python`,
# the interpreter of a script entry point (default: this one).
STRATA_EXTRAS = ("backend", "hostfile", "slurm_partition", "instance_catalog", "termination_grace_period",
                 "simulate_interruptions", "simulate_capacity_wait", "python")

# SageMaker arguments that name AWS resources or container images: nothing here to give them to.
_SAGEMAKER_ONLY = {
    "role": "an IAM role",
    "sagemaker_session": "a SageMaker session",
    "image_uri": "a training container image",
    "transformers_version": "the container's framework versions",
    "pytorch_version": "the container's framework versions",
    "tensorflow_version": "the container's framework versions",
    "framework_version": "the container's framework version",
    "py_version": "the container's Python version",
    "volume_size": "the size of an EBS volume",
}

# SageMaker's TrainingJobStatus for each of strata's (secondary) statuses.
_PRIMARY_STATUS = {"Completed": "Completed", "Failed": "Failed", "Stopped": "Stopped",
                   "MaxRuntimeExceeded": "Stopped", "MaxWaitTimeExceeded": "Stopped"}
_FINAL = set(_PRIMARY_STATUS)

# fit(inputs=...) channels of a YAML entry point: the training configuration's file options.
_CHANNEL_OPTIONS = {"train": "train_file", "training": "train_file", "validation": "validation_file",
                    "eval": "validation_file", "test": "test_file"}


class UnexpectedStatusException(ValueError):
    """A training job ended neither Completed nor Stopped (SageMaker's exception, same name and
    arguments). ``job_name``, ``actual_status`` (strata's status, e.g. ``Failed``) and
    ``log_tail`` (the last lines of the failing rank's log) say what happened."""

    def __init__(self, message, allowed_statuses, actual_status, job_name=None, log_tail=""):
        super().__init__(message)
        self.allowed_statuses = allowed_statuses
        self.actual_status = actual_status
        self.job_name = job_name
        self.log_tail = log_tail


def strata_cli():
    """The ``strata`` executable the Estimator runs: $STRATA_CLI if set; else ``strata`` in this
    Python's scripts directory (``pip install .`` puts it there) or on PATH; else
    ``build/strata`` of the source tree this package comes from (the build tree's package links
    to it). FileNotFoundError names every place looked at."""
    if os.environ.get("STRATA_CLI"):
        path = os.environ["STRATA_CLI"]
        if not _executable(path):
            raise FileNotFoundError(f"STRATA_CLI={path} is not an executable file")
        return path
    candidates = [os.path.join(sysconfig.get_path("scripts"), "strata"),
                  os.path.join(os.path.dirname(sys.executable), "strata"),
                  shutil.which("strata"),
                  os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "build", "strata")]
    for path in candidates:
        if path and _executable(path):
            return os.path.normpath(path)
    tried = ", ".join(os.path.normpath(c) for c in candidates if c)
    raise FileNotFoundError(f"no strata executable: set STRATA_CLI, or install the package (pip install .), "
                            f"or build the source tree (cmake --build build); looked at {tried} and PATH")


class TrainingJob:
    """One training job: the one ``fit()`` started, or one started elsewhere
    (:meth:`Estimator.attach`). ``name`` and ``job_dir`` (``<output_path>/<name>``) identify it;
    ``describe()``, ``status`` and ``billable_seconds`` read its record, ``wait()`` follows it to
    its end, ``logs()`` prints its ranks' logs, ``stop()`` stops it with a checkpoint."""

    def __init__(self, name, output_path, runner=None, runner_output=None):
        self.name = name
        self.output_path = os.path.abspath(output_path)
        self.job_dir = os.path.join(self.output_path, name)
        self._runner = runner                # the `strata job run` process, when this Python started it
        self._runner_output = runner_output  # its output (stdout and stderr), open for reading
        self._runner_exit = None             # its exit status, once it has ended
        self._events_read = 0                # bytes of events.jsonl already printed

    def __repr__(self):
        return f"TrainingJob({self.name!r}, job_dir={self.job_dir!r})"

    def describe(self):
        """The job's record (``strata job status NAME --json``: status, message, attempts,
        billing or billing_so_far, spec, model_data, ...), plus SageMaker's DescribeTrainingJob
        names for the same facts: TrainingJobName, TrainingJobStatus (InProgress, Completed,
        Failed, Stopped), SecondaryStatus, FailureReason, BillableTimeInSeconds,
        TrainingTimeInSeconds, ModelArtifacts, HyperParameters, ResourceConfig,
        EnableManagedSpotTraining, StoppingCondition, CheckpointConfig."""
        d = json.loads(_run_cli(["job", "status", self.name, "--output-path", self.output_path, "--json"]))
        billing = d.get("billing") or d.get("billing_so_far") or {}
        spec = d.get("spec", {})
        d.update({
            "TrainingJobName": self.name,
            "TrainingJobStatus": _PRIMARY_STATUS.get(d.get("status"), "InProgress"),
            "SecondaryStatus": d.get("status"),
            "BillableTimeInSeconds": billing.get("billable_seconds"),
            "TrainingTimeInSeconds": billing.get("training_seconds"),
            "HyperParameters": spec.get("hyperparameters", {}),
            "ResourceConfig": {"InstanceType": d.get("instance_type"), "InstanceCount": d.get("instance_count")},
            "EnableManagedSpotTraining": d.get("use_spot_instances", False),
            "StoppingCondition": {"MaxRuntimeInSeconds": spec.get("max_run", 86400),
                                  "MaxWaitTimeInSeconds": spec.get("max_wait")},
            "CheckpointConfig": {"S3Uri": d.get("checkpoint_uri"), "LocalPath": d.get("checkpoint_local_path")},
        })
        if d.get("status") == "Failed":
            d["FailureReason"] = d.get("message", "")
        if "model_data" in d:
            d["ModelArtifacts"] = {"S3ModelArtifacts": d["model_data"]}
        return d

    @property
    def status(self):
        """strata's status: Starting, Training, Interrupted, Uploading, then Completed, Failed,
        Stopped, MaxRuntimeExceeded or MaxWaitTimeExceeded (SageMaker's secondary statuses)."""
        return self._status_file().get("status", "Starting")

    @property
    def billable_seconds(self):
        """Seconds the instances ran (all attempts; so far, while the job runs)."""
        d = self.describe()
        return (d.get("billing") or d.get("billing_so_far") or {}).get("billable_seconds", 0.0)

    @property
    def model_data(self):
        """The trained model, an HF model directory (``<job dir>/model``), once the job has
        Completed; ValueError before."""
        status = self.status
        if status != "Completed":
            raise ValueError(f"training job {self.name} is {status}: only a Completed job has a model")
        return os.path.join(self.job_dir, "model")

    def wait(self, logs=True):
        """Waits until the job has ended. ``logs``: print the runner's output as it comes (the
        plan, its events, the progress line, the billing), as ``strata job run`` prints it; for
        a job another process runs, its events. A job that ends Completed returns; Stopped,
        MaxRuntimeExceeded or MaxWaitTimeExceeded (SageMaker's "Stopped") warn; Failed raises
        :class:`UnexpectedStatusException` with the last lines of the failing rank's log."""
        logs = _logs_wanted(logs)
        try:
            if self._runner is not None:
                self._follow_runner(logs)
            else:
                self._follow_record(logs)
        except KeyboardInterrupt:
            print(f"\nstrata.Estimator: no longer following job {self.name}, which goes on; "
                  f"stop it with .stop() or `strata job stop {self.name} --output-path {self.output_path}`",
                  file=sys.stderr)
            raise
        self._check_status()

    def logs(self, attempt=None, rank=None):
        """Prints the ranks' own output (what strata train or the script printed): every rank
        of every attempt, or only ``attempt`` (1, 2, ...) and/or ``rank``, as they are now."""
        args = ["job", "logs", self.name, "--output-path", self.output_path]
        if attempt is not None:
            args += ["--attempt", str(attempt)]
        if rank is not None:
            args += ["--rank", str(rank)]
        sys.stdout.write(_run_cli(args))
        sys.stdout.flush()

    def stop(self):
        """Asks the job to stop: its ranks finish their step, write a checkpoint and exit; the
        job ends Stopped. Returns at once (``wait()`` waits for the end)."""
        print(_run_cli(["job", "stop", self.name, "--output-path", self.output_path]).strip())

    # -- internals --------------------------------------------------------------------------

    def _status_file(self):
        try:
            with open(os.path.join(self.job_dir, "status.json")) as f:
                return json.load(f)
        except FileNotFoundError:
            return {}

    def _follow_runner(self, logs):
        """Copies the runner's output to sys.stdout line by line until the runner exits."""
        pending = b""
        while True:
            ended = self._runner.poll() is not None
            chunk = self._runner_output.read()
            if chunk:
                pending += chunk
                *lines, pending = pending.split(b"\n")
                if logs and lines:
                    sys.stdout.write("".join(line.decode("utf-8", "replace") + "\n" for line in lines))
                    sys.stdout.flush()
            if ended:
                break
            time.sleep(0.1)
        if logs and pending:
            print(pending.decode("utf-8", "replace"))
        self._runner_output.close()
        self._runner_exit = self._runner.returncode
        self._runner = self._runner_output = None

    def _follow_record(self, logs):
        """For a job another process runs: prints its events until it ends or nothing runs it."""
        while True:
            if logs:
                self._print_new_events()
            d = self.describe()
            if d.get("status") in _FINAL or not d.get("running", False):
                break
            time.sleep(1.0)
        if logs:
            self._print_new_events()
            billing = d.get("billing")
            if billing:
                print(_billing_report(billing))
        if d.get("status") not in _FINAL:
            raise UnexpectedStatusException(
                f"Error for Training job {self.name}: {d.get('status')}. Reason: nothing runs the job any more "
                f"(its runner is gone); `strata job run ... --job-name {self.name} --rerun` resumes it from its "
                "newest checkpoint", ["Completed", "Stopped"], d.get("status"), self.name)

    def _print_new_events(self):
        path = os.path.join(self.job_dir, "events.jsonl")
        if not os.path.exists(path):
            return
        with open(path, "rb") as f:
            f.seek(self._events_read)
            data = f.read()
        whole = data[:data.rfind(b"\n") + 1]  # a line being appended now is read next time
        self._events_read += len(whole)
        for line in whole.decode("utf-8", "replace").splitlines():
            if line.strip():
                e = json.loads(line)
                print(f"{e.get('time', '')[11:19]} {e.get('event', '')}")
        sys.stdout.flush()

    def _check_status(self):
        s = self._status_file()
        status = s.get("status")
        if status == "Completed":
            return
        if status not in _FINAL:
            raise UnexpectedStatusException(
                f"Error for Training job {self.name}: {status}. Reason: its runner (strata job run) exited with status "
                f"{self._runner_exit} before the job ended", ["Completed", "Stopped"], status, self.name)
        if _PRIMARY_STATUS.get(status) == "Stopped":
            why = f" ({s['message']})" if s.get("message") else ""
            warnings.warn(f"training job {self.name} ended {status} rather than Completed{why}; its newest checkpoint "
                          "is in its checkpoint_uri", RuntimeWarning, stacklevel=3)
            return
        tail = self._log_tail(s.get("message", ""))
        where = f"\nLast lines of {tail[0]}:\n{tail[1]}" if tail else ""
        raise UnexpectedStatusException(
            f"Error for Training job {self.name}: {status}. Reason: {s.get('message', '(no reason recorded)')}{where}",
            ["Completed", "Stopped"], status, self.name, tail[1] if tail else "")

    def _log_tail(self, message, lines=20):
        """(path, last lines) of the log that tells why the last attempt failed: the one the
        status message quotes, else rank 0's, else the launcher's."""
        attempts = self._status_file().get("attempts", [])
        log_dir = os.path.join(self.job_dir, "logs", f"attempt-{len(attempts)}")
        quoted = re.search(r"(rank-\d+\.log|launcher\.log):", message)
        for name in ([quoted.group(1)] if quoted else []) + ["rank-0.log", "launcher.log"]:
            path = os.path.join(log_dir, name)
            if os.path.exists(path):
                with open(path, encoding="utf-8", errors="replace") as f:
                    return path, "".join(f.readlines()[-lines:])
        return None


class Estimator:
    """A training job as SageMaker's Estimator describes it, run by strata's job runner.

    ``entry_point``: a strata train configuration (``.yaml``, ``.yml`` or ``.json``, or the
    mapping itself as a dict) or a Python script (``.py``, run by every rank with the
    hyperparameters as ``--name value`` arguments and SageMaker's SM_* variables; see
    docs/jobs.md, "Script entry points"). ``source_dir``: the directory ``entry_point`` is in,
    as in SageMaker. ``instance_type``: a name from the instance catalog (catalog/instances.yaml,
    e.g. ``local.c2``, ``ml.p3.2xlarge``). ``hyperparameters``: for a configuration, options
    that override it (as ``strata train --set``); for a script, its arguments. ``distribution``:
    SageMaker's dict (``{"mpi": {"enabled": True, "processes_per_host": 2}}``, ...).
    ``use_spot_instances``, ``max_run``, ``max_wait`` (seconds): spot capacity and the time
    limits. ``checkpoint_s3_uri``: where checkpoints outlive the hosts, a directory or
    ``file://`` URI (no S3 client); ``checkpoint_local_path``: where the ranks write them.
    ``output_path``: the directory of the jobs (default ``out/jobs``). ``base_job_name``: jobs
    are named ``<base_job_name>-<UTC time>``. ``environment``: variables for the ranks.

    strata's own job options are keywords too: ``backend`` ("local", "hostfile", "slurm"),
    ``hostfile``, ``slurm_partition``, ``instance_catalog``, ``termination_grace_period``,
    ``simulate_interruptions``, ``simulate_capacity_wait``, and ``python`` (a script's
    interpreter; default this one, ``sys.executable``). Another keyword is a TypeError.

    Names and types are checked here; values when ``fit()`` hands the spec to the runner,
    whose errors name the argument (``Estimator: max_wait (300 s) must be at least max_run``).
    """

    def __init__(self, entry_point, instance_type, instance_count=1, hyperparameters=None, distribution=None,
                 use_spot_instances=False, max_run=86400, max_wait=None, checkpoint_s3_uri=None,
                 checkpoint_local_path=None, output_path=None, base_job_name=None, environment=None,
                 source_dir=None, **strata_extras):
        self._setup(dict(entry_point=entry_point, instance_type=instance_type, instance_count=instance_count,
                         hyperparameters=hyperparameters, distribution=distribution,
                         use_spot_instances=use_spot_instances, max_run=max_run, max_wait=max_wait,
                         checkpoint_s3_uri=checkpoint_s3_uri, checkpoint_local_path=checkpoint_local_path,
                         output_path=output_path, base_job_name=base_job_name, environment=environment,
                         source_dir=source_dir, strata_extras=strata_extras))

    @classmethod
    def attach(cls, training_job_name, output_path=None, wait=True):
        """An Estimator bound to an existing job (one another process or ``strata job run``
        started), with the arguments its spec was given. ``training_job_name``: a job name
        under ``output_path`` (default ``out/jobs``) or the job's directory. As SageMaker's
        attach(), it waits for a job still running to end (``wait=False``: returns at once),
        raising UnexpectedStatusException if the job Failed."""
        output_path = output_path or DEFAULT_OUTPUT_PATH
        if os.path.exists(os.path.join(training_job_name, "status.json")):
            output_path, training_job_name = os.path.split(os.path.abspath(training_job_name))
        job = TrainingJob(training_job_name, output_path)
        d = job.describe()
        est = cls.__new__(cls)
        spec = d["spec"]
        est._setup(_arguments_from_spec(spec, d["working_dir"], job.output_path),
                   recorded_kind="script" if "entry_point" in spec else "config")
        est.latest_training_job = job
        if wait:
            job.wait(logs=False)
        return est

    # -- SageMaker's API --------------------------------------------------------------------

    def fit(self, inputs=None, wait=True, logs=True, job_name=None):
        """Runs a training job: writes its spec and starts ``strata job run`` on it (in the
        background, in a session of its own: it outlives a Ctrl-C here and this process). With
        ``wait`` (the default) it follows the job to its end, printing the runner's output as it
        comes when ``logs``, and raises :class:`UnexpectedStatusException` if the job Failed;
        otherwise it returns once the job is recorded (``latest_training_job.wait()`` follows
        it). ``inputs``: data channels, ``{"train": path, "validation": path, ...}`` (or one
        path, the "training" channel): a script gets each as SM_CHANNEL_<NAME>; a configuration
        gets train / training, validation / eval and test as train_file, validation_file and
        test_file. ``job_name``: default ``<base_job_name>-<UTC time>``, as SageMaker names jobs.
        Bad arguments raise ValueError (or TypeError / FileNotFoundError) before any job starts."""
        name = job_name or _default_job_name(self.base_job_name or "strata-train")
        job = TrainingJob(name, self.output_path)
        if os.path.exists(os.path.join(job.job_dir, "status.json")):
            raise ValueError(f"training job {name} already exists in {self.output_path} (status {job.status}); "
                             "a job name is unique: choose another job_name")
        spec = self._spec(self._channels(inputs))
        workdir = tempfile.mkdtemp(prefix="strata-estimator-")
        try:
            spec_path = os.path.join(workdir, "estimator.yaml")
            _write_atomically(spec_path, spec)
            job._runner, job._runner_output = self._start_runner(spec_path, name, workdir)
            self._await_record(job, spec_path)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)  # the runner has read the spec; its output stays open
        self.latest_training_job = job
        self._current_job_name = name
        if wait:
            job.wait(logs=logs)
        return None

    @property
    def model_data(self):
        """The latest job's model, an HF model directory (``<output_path>/<job>/model``), once
        it has Completed."""
        return self._need_job().model_data

    def hyperparameters(self):
        """The hyperparameters, as given (SageMaker's method)."""
        return dict(self._hyperparameters)

    def set_hyperparameters(self, **kwargs):
        """Adds or changes hyperparameters for the next fit()."""
        self._hyperparameters.update(_checked_hyperparameters(kwargs))

    def logs(self):
        """The latest job's rank logs (TrainingJob.logs)."""
        self._need_job().logs()

    def __repr__(self):
        return f"<strata.Estimator {self.entry_point!r} on {self.instance_count} x {self.instance_type}>"

    # -- internals --------------------------------------------------------------------------

    def _setup(self, a, recorded_kind=None):
        """The arguments, checked. `recorded_kind`: what an attached job's spec ran; its files
        need not exist any more."""
        extras = dict(a.get("strata_extras") or {})
        _check_extras(extras)
        entry_point = a["entry_point"]
        if isinstance(entry_point, os.PathLike):
            entry_point = os.fspath(entry_point)
        if a.get("source_dir") is not None and isinstance(entry_point, str):
            entry_point = os.path.join(os.fspath(a["source_dir"]), entry_point)
        self.entry_point = entry_point
        self.runs_script = (recorded_kind or _entry_kind(entry_point)) == "script"
        if "python" in extras and not self.runs_script:
            raise TypeError("python= is the interpreter of a script entry point; this entry_point is a "
                            "strata train configuration")
        if self.runs_script:
            extras.setdefault("python", sys.executable)
        self.instance_type = a["instance_type"]
        self.instance_count = a["instance_count"]
        self._hyperparameters = _checked_hyperparameters(a.get("hyperparameters") or {})
        self.distribution = _checked_mapping(a.get("distribution"), "distribution")
        self.use_spot_instances = a["use_spot_instances"]
        self.max_run = a["max_run"]
        self.max_wait = a["max_wait"]
        self.checkpoint_s3_uri = a["checkpoint_s3_uri"]
        self.checkpoint_local_path = a["checkpoint_local_path"]
        self.output_path = os.fspath(a["output_path"] or DEFAULT_OUTPUT_PATH)
        self.base_job_name = a["base_job_name"]
        self.environment = {k: _env_value(k, v) for k, v in (_checked_mapping(a.get("environment"), "environment")
                                                              or {}).items()}
        self.strata_extras = extras
        self.latest_training_job = None
        self._current_job_name = None

    def _need_job(self):
        if self.latest_training_job is None:
            raise ValueError("this Estimator has no training job yet: call fit(), or Estimator.attach(job_name)")
        return self.latest_training_job

    def _channels(self, inputs):
        """inputs as spec additions: (hyperparameters, environment)."""
        if inputs is None:
            return {}, {}
        if isinstance(inputs, (str, os.PathLike)):
            inputs = {"training": inputs}
        if not isinstance(inputs, dict):
            raise TypeError(f"inputs must be a path or a dict of channel name -> path, not {type(inputs).__name__}")
        hps, env = {}, {}
        for channel, where in inputs.items():
            path = _channel_path(channel, where)
            if self.runs_script:
                env["SM_CHANNEL_" + channel.upper()] = path
                continue
            option = _CHANNEL_OPTIONS.get(channel)
            if option is None:
                raise ValueError(f"inputs[{channel!r}]: a strata train configuration takes the channels "
                                 f"{', '.join(sorted(_CHANNEL_OPTIONS))} (as {', '.join(sorted(set(_CHANNEL_OPTIONS.values())))})")
            if option in self._hyperparameters or option in hps:
                raise ValueError(f"inputs[{channel!r}] and hyperparameters both set {option}; keep one")
            hps[option] = path
        return hps, env

    def _spec(self, channels):
        """The job spec, one key a line: YAML whose values are JSON (a subset of YAML's flow style)."""
        channel_hps, channel_env = channels
        entry_key = "entry_point" if self.runs_script else "training_config"
        keys = [("instance_type", self.instance_type), ("instance_count", self.instance_count),
                (entry_key, self.entry_point)]
        keys += [(k, v) for k, v in self.strata_extras.items() if k == "python"]
        optional = [("hyperparameters", {**self._hyperparameters, **channel_hps}),
                    ("distribution", self.distribution), ("use_spot_instances", self.use_spot_instances),
                    ("max_run", self.max_run), ("max_wait", self.max_wait),
                    ("checkpoint_s3_uri", self.checkpoint_s3_uri),
                    ("checkpoint_local_path", self.checkpoint_local_path), ("output_path", self.output_path),
                    ("base_job_name", self.base_job_name), ("environment", {**self.environment, **channel_env})]
        optional += [(k, v) for k, v in self.strata_extras.items() if k != "python"]
        keys += [(k, v) for k, v in optional if v is not None and v != {}]
        return "".join(f"{k}: {_yaml_value(k, v)}\n" for k, v in keys)

    def _start_runner(self, spec_path, name, workdir):
        """`strata job run` in a session of its own, its output into a file this process reads."""
        output = os.path.join(workdir, "runner.log")
        with open(output, "wb") as w:
            runner = subprocess.Popen([strata_cli(), "job", "run", spec_path, "--job-name", name], stdout=w,
                                      stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        return runner, open(output, "rb")

    def _await_record(self, job, spec_path):
        """Returns once the runner has recorded the job; raises with its message if it refused."""
        status = os.path.join(job.job_dir, "status.json")
        while not os.path.exists(status):
            if job._runner.poll() is not None and not os.path.exists(status):
                output = job._runner_output.read().decode("utf-8", "replace")
                job._runner_output.close()
                raise ValueError(_refusal(output, spec_path))
            time.sleep(0.05)


# -- helpers ------------------------------------------------------------------------------------

def _executable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _run_cli(args):
    out = subprocess.run([strata_cli(), *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise ValueError(out.stderr.strip().removeprefix("error: ") or out.stdout.strip())
    return out.stdout


def _logs_wanted(logs):
    """SageMaker's logs= takes "All", "None", "Training", "Rules" too."""
    return logs not in (False, None, "None")


def _default_job_name(base):
    """SageMaker's: <base>-YYYY-MM-DD-HH-MM-SS-mmm (UTC)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return f"{base}-{now:%Y-%m-%d-%H-%M-%S}-{now.microsecond // 1000:03d}"


def _check_extras(extras):
    for key in extras:
        if key in STRATA_EXTRAS:
            continue
        if key in _SAGEMAKER_ONLY:
            raise TypeError(f"Estimator: {key} is SageMaker's ({_SAGEMAKER_ONLY[key]}); strata runs the job "
                            "itself and has no use for it: leave it out")
        close = difflib.get_close_matches(key, SAGEMAKER_ARGUMENTS + STRATA_EXTRAS, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise TypeError(f"Estimator got an unexpected keyword argument '{key}'{hint} (docs/jobs.md lists them)")


def _entry_kind(entry_point):
    """"config" or "script", by the file's suffix; the file must exist."""
    if isinstance(entry_point, dict):
        return "config"
    if not isinstance(entry_point, str):
        raise TypeError(f"entry_point must be a path (a .py script or a .yaml / .yml / .json strata train "
                        f"configuration) or the configuration as a dict, not {type(entry_point).__name__}")
    if entry_point.endswith(_CONFIG_SUFFIXES):
        kind = "config"
    elif entry_point.endswith(".py"):
        kind = "script"
    else:
        raise ValueError(f"entry_point {entry_point!r}: expected a Python script (.py) or a strata train "
                         "configuration (.yaml, .yml, .json)")
    if not os.path.isfile(entry_point):
        raise FileNotFoundError(f"entry_point {entry_point!r} does not exist" +
                                ("" if os.path.isabs(entry_point) else f" (relative to {os.getcwd()})"))
    return kind


def _checked_hyperparameters(hps):
    if not isinstance(hps, dict):
        raise TypeError(f"hyperparameters must be a dict of name -> value, not {type(hps).__name__}")
    for name, value in hps.items():
        if not isinstance(name, str):
            raise TypeError(f"hyperparameters: the name {name!r} is not a string")
        if not isinstance(value, (str, int, float, bool)):
            raise TypeError(f"hyperparameters[{name!r}] is {type(value).__name__}; expected a string, number or bool "
                            "(a script gets it as --" + name + " <value>)")
    return dict(hps)


def _checked_mapping(value, what):
    if value is not None and not isinstance(value, dict):
        raise TypeError(f"{what} must be a dict, not {type(value).__name__}")
    return value


def _env_value(name, value):
    if not isinstance(value, (str, int, float, bool)):
        raise TypeError(f"environment[{name!r}] is {type(value).__name__}; expected a string")
    return str(value)


def _channel_path(channel, where):
    if not isinstance(channel, str) or not re.fullmatch(r"[A-Za-z0-9_]+", channel):
        raise ValueError(f"inputs: channel name {channel!r} must be letters, digits and underscores")
    if not isinstance(where, (str, os.PathLike)):
        raise TypeError(f"inputs[{channel!r}] must be a path or file:// URI, not {type(where).__name__}")
    where = os.fspath(where)
    if where.startswith("file://"):
        where = where[len("file://"):]
    elif "://" in where:
        raise ValueError(f"inputs[{channel!r}] = {where!r}: strata has no client for {where.split('://')[0]}://; "
                         "give a path every host can reach")
    if not os.path.exists(where):
        raise FileNotFoundError(f"inputs[{channel!r}]: {where} does not exist")
    return os.path.abspath(where)


def _yaml_value(key, value):
    """JSON is YAML: strings double-quoted (a quoted '3' stays a string), numbers and booleans plain."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{key}: {e}") from None


def _write_atomically(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _refusal(output, spec_path):
    """The runner's refusal, naming the Estimator's argument instead of the temporary spec file."""
    errors = [line.removeprefix("error: ") for line in output.splitlines() if line.startswith("error: ")]
    message = "\n".join(errors) or output.strip() or "strata job run exited before recording the job"
    return re.sub(re.escape(spec_path) + r"( line \d+)?", "Estimator", message)


def _billing_report(b):
    """The lines the runner prints at the end of a job (src/jobs/billing.cpp)."""
    lines = [f"Training seconds: {round(b['training_seconds'])}", f"Billable seconds: {round(b['billable_seconds'])}"]
    if "spot_savings_percent" in b:
        lines.append(f"Managed Spot Training savings: {b['spot_savings_percent']:.1f}%")
    lines.append(f"Cost: {b['cost_usd']:.6f} USD")
    return "\n".join(lines)


def _arguments_from_spec(spec, working_dir, output_path):
    """Estimator arguments from a recorded spec (strata job status --json), its relative paths
    made absolute from the directory the job ran in."""
    def path(p):
        return p if p is None or os.path.isabs(p) else os.path.normpath(os.path.join(working_dir, p))
    entry = spec.get("entry_point") or spec.get("training_config")
    a = {"entry_point": path(entry) if isinstance(entry, str) else entry,
         "instance_type": spec["instance_type"], "instance_count": spec.get("instance_count", 1),
         "hyperparameters": spec.get("hyperparameters"), "distribution": spec.get("distribution"),
         "use_spot_instances": spec.get("use_spot_instances", False), "max_run": spec.get("max_run", 86400),
         "max_wait": spec.get("max_wait"),
         "checkpoint_s3_uri": spec.get("checkpoint_s3_uri", spec.get("checkpoint_uri")),
         "checkpoint_local_path": path(spec.get("checkpoint_local_path")), "output_path": output_path,
         "base_job_name": spec.get("base_job_name"), "environment": spec.get("environment")}
    uri = a["checkpoint_s3_uri"]
    if uri and "://" not in uri:
        a["checkpoint_s3_uri"] = path(uri)
    extras = {k: spec[k] for k in STRATA_EXTRAS if k in spec}
    for k in ("hostfile", "instance_catalog"):
        if k in extras:
            extras[k] = path(extras[k])
    a["strata_extras"] = extras
    return a
