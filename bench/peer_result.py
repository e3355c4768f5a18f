"""One PyTorch peer result of bench/torch_peer.sh, for the side-by-side tables.

read(directory, name) -> hf_throughput.py's JSON for NAME with "rss_mib" (the process's peak
resident MiB, from /usr/bin/time -v), or None when that config did not run.
"""
import json
import os
import re


def read(directory, name):
    path = os.path.join(directory, name)
    if not os.path.exists(path + ".json"):
        return None
    r = json.load(open(path + ".json"))
    r["rss_mib"] = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)",
                                 open(path + ".time").read()).group(1)) / 1024
    return r
