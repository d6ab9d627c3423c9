"""Run a command; write its wall time, CPU time and peak RSS as JSON; exit with its status.

    python peak.py OUT.json TIMEOUT_SECS -- COMMAND [ARG...]

The peak RSS is the kernel's (getrusage(RUSAGE_CHILDREN).ru_maxrss, in KiB): the
largest resident set of the command, start-up included, as VmHWM is for Spiderling.
A command still running after TIMEOUT_SECS is killed, and that is a failure.
"""

import json
import resource
import subprocess
import sys
import time


def main(argv):
    if len(argv) < 4 or argv[2] != "--":
        sys.exit(__doc__)
    out, timeout, command = argv[0], float(argv[1]), argv[3:]
    started = time.monotonic()
    try:
        status = subprocess.run(command, timeout=timeout, check=False).returncode
    except subprocess.TimeoutExpired:
        print(f"error: {command[0]} still running after {timeout:.0f} s, killed", file=sys.stderr)
        status = 124
    wall = time.monotonic() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(out, "w", encoding="utf-8") as file:
        json.dump(
            {
                "status": status,
                "wall_secs": wall,
                "cpu_secs": usage.ru_utime + usage.ru_stime,
                "peak_rss_kb": usage.ru_maxrss,
            },
            file,
        )
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
