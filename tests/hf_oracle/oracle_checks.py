"""The pass/fail record the HF-oracle scripts share: check() prints each result and keeps the
failures; exit_status() is what the script exits with (1 when any check failed)."""
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def exit_status():
    return 1 if failures else 0
