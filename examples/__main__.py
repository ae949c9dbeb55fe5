"""``python -m obelisk.examples [DIR]``: copy the example files into DIR (default
``obelisk-examples``) and print commands to try them with the shipped activities."""

from __future__ import annotations

import argparse
import os
import shutil
import sys

from obelisk.examples import folder

#: What to try first, once the files are copied (DIR stands for the folder).
TRY = """\
obelisk run DIR/payment.json --activities obelisk.examples.shop:ACTIVITIES
obelisk run DIR/order.json --activities obelisk.examples.shop:ACTIVITIES --journal run.db
obelisk history run.db
obelisk resume run.db --activities obelisk.examples.shop:ACTIVITIES
obelisk run DIR/weather.json --activities obelisk.examples.assistant:ACTIVITIES
obelisk agent DIR/agent/refund.json --llm script:DIR/agent/refund.solutions.json \\
    --activities obelisk.examples.shop:ACTIVITIES"""


#: The folders of example files, as the package ships them (the MCP example, which needs
#: an MCP server script and the mcp extra, is in a checkout of obelisk only).
SHIPPED = (".", "agent", os.path.join("agent", "requests"))


def copy_examples(target: str) -> list[str]:
    """Copy every plan, agent and script file (``*.json``) under ``target``; returns the
    paths written. Raises ``OSError`` when it cannot write."""
    written = []
    for relative in SHIPPED:
        source = os.path.join(folder(), relative)
        names = sorted(n for n in os.listdir(source) if n.endswith(".json"))
        os.makedirs(os.path.join(target, relative), exist_ok=True)
        for name in names:
            destination = os.path.normpath(os.path.join(target, relative, name))
            shutil.copyfile(os.path.join(source, name), destination)
            written.append(destination)
    return written


def main(argv: list[str] | None = None) -> int:
    """Copy the examples; print what was written and what to try. Exit 2 when the
    folder cannot be written."""
    parser = argparse.ArgumentParser(prog="python -m obelisk.examples",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default="obelisk-examples",
                        help="where to copy the examples (default obelisk-examples)")
    args = parser.parse_args(argv)
    try:
        written = copy_examples(args.folder)
    except OSError as exc:
        print(f"error: cannot copy the examples to {args.folder}: {exc.strerror or exc}",
              file=sys.stderr)
        return 2
    print(f"copied {len(written)} example files to {args.folder}; try:")
    print("\n".join("  " + line for line in TRY.replace("DIR", args.folder).splitlines()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
