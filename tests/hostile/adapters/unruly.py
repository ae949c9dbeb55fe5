"""A test adapter that answers like obelisk (echoing each request's id), except:

``--pidfile PATH`` writes its pid to PATH first; ``--deaf`` stops reading its input after
``hello`` (and sleeps); ``--no-ids`` never echoes an id. The reference ``†extra`` is
answered twice (one stray line), ``†wrong-id`` with an id that is not the request's,
``†hang`` never.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from obelisk.kit import local

parser = argparse.ArgumentParser()
parser.add_argument("--pidfile")
parser.add_argument("--deaf", action="store_true")
parser.add_argument("--no-ids", action="store_true")
args = parser.parse_args()
if args.pidfile:
    with open(args.pidfile, "w") as file:
        file.write(str(os.getpid()))


def write(*answers: dict[str, object]) -> None:
    # One write: the stray line arrives with the answer.
    sys.stdout.buffer.write(b"".join(json.dumps(a).encode() + b"\n" for a in answers))
    sys.stdout.flush()


for line in sys.stdin.buffer:
    request = json.loads(line)
    answer = local.answer(request)
    if "id" in request and not args.no_ids:
        answer["id"] = request["id"]
    ref = request.get("ref")
    if request["op"] == "hello":
        write(answer)
        if args.deaf:
            time.sleep(600)
    elif ref == "†extra":
        write(answer, answer)
    elif ref == "†wrong-id":
        write({**answer, "id": request["id"] + 1000})
    elif ref == "†hang":
        time.sleep(600)
    else:
        write(answer)
