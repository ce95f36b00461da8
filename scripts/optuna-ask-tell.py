"""Optuna's TPE as a service for Crucible's sampler comparison (runner-app's SearchComparison, a test oracle).

Reads JSON lines on stdin and answers on stdout, one study after another:
  in:  {"seed": 1, "trials": 200, "startup": 60, "candidates": 128, "directions": ["minimize", "minimize"],
        "space": [{"name": "x", "type": "float", "low": 0, "high": 1},
                  {"name": "s", "type": "categorical", "choices": ["a", "b"]}, ...]}
  then per trial:  out: {"params": {"x": 0.25, "s": "a", ...}}   in: {"values": [0.1, 2.3]}
  after the last trial: out: {"done": true}
The objective is evaluated by the caller, so both samplers see the very same function. Parameters are suggested in
the order given, as a define-by-run experiment would.
"""
import json
import sys
import warnings

import optuna


def run(spec, read, write):
    sampler = optuna.samplers.TPESampler(multivariate=True, n_startup_trials=spec["startup"],
                                         n_ei_candidates=spec["candidates"], seed=spec["seed"])
    study = optuna.create_study(directions=spec["directions"], sampler=sampler)
    for _ in range(spec["trials"]):
        trial = study.ask()
        params = {}
        for p in spec["space"]:
            if p["type"] == "float":
                params[p["name"]] = trial.suggest_float(p["name"], p["low"], p["high"])
            elif p["type"] == "int":
                params[p["name"]] = trial.suggest_int(p["name"], p["low"], p["high"])
            else:
                params[p["name"]] = trial.suggest_categorical(p["name"], p["choices"])
        write({"params": params})
        study.tell(trial, read()["values"])
    write({"done": True})


def main():
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.simplefilter("ignore")  # multivariate TPE is marked experimental; the caller reads only our lines

    def read():
        line = sys.stdin.readline()
        if not line:
            raise EOFError("the caller closed stdin mid-study")
        return json.loads(line)

    def write(obj):
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    while line := sys.stdin.readline():
        if line.strip():
            run(json.loads(line), read, write)


if __name__ == "__main__":
    main()
