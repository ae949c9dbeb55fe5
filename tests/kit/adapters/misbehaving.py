"""A test adapter that answers like obelisk, except on a few magic references.

``†crash`` exits, ``†hang`` never answers, ``†garbage`` writes a line that is not JSON,
``†shape`` answers with the wrong shape, ``†array`` answers a JSON array. ``--ops`` sets
the ops listed in hello; ``--bad-hello`` answers hello with the wrong protocol version.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from obelisk.kit import local

parser = argparse.ArgumentParser()
parser.add_argument("--ops", default="resolve,check,run")
parser.add_argument("--bad-hello", action="store_true")
args = parser.parse_args()

for line in sys.stdin.buffer:
    request = json.loads(line)
    ref = request.get("ref")
    if request["op"] == "hello":
        answer = {"protocol": 2 if args.bad_hello else 1, "name": "misbehaving",
                  "version": "0", "ops": args.ops.split(",") if args.ops else []}
    elif ref == "†crash":
        sys.exit(3)
    elif ref == "†hang":
        time.sleep(600)
        continue
    elif ref == "†garbage":
        sys.stdout.buffer.write(b"this is not json\n")
        sys.stdout.flush()
        continue
    elif ref == "†shape":
        answer = {"value": 1, "missing": True}
    elif ref == "†array":
        answer = [1]  # type: ignore[assignment]
    else:
        answer = local.answer(request)
    sys.stdout.buffer.write(json.dumps(answer).encode("utf-8") + b"\n")
    sys.stdout.flush()
