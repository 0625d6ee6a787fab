"""Run a ``symattn`` command line on a "Reproducing the paper" page.

The pages are executed at build time (myst-nb, in this folder). Each shows
its command as a copyable shell block followed by what the installed
``symattn`` printed, so the command on the page is the one that produced the
output below it. A command that fails stops the build.
"""

import os
import re
import shlex
import subprocess
import sys

from IPython.display import Markdown, display

# the symattn entry point installed next to the interpreter running the page
_BIN = os.path.dirname(sys.executable)


def run_command(command, markdown=True):
    """Run ``command`` and display it with its output.

    ``markdown=True`` renders the output (symattn prints Markdown tables by
    default), with its section titles shown as bold lines so that they do
    not enter the page's table of contents; ``markdown=False`` shows it as
    plain text.
    """
    argv = shlex.split(command)
    if not argv or argv[0] != "symattn":
        raise ValueError(f"expected a symattn command line, got {command!r}")
    environment = dict(os.environ, PATH=_BIN + os.pathsep + os.environ.get("PATH", ""))
    result = subprocess.run(argv, capture_output=True, text=True, env=environment)
    if result.returncode != 0:
        raise RuntimeError(
            f"{command!r} exited with status {result.returncode}:\n{result.stderr[-3000:]}"
        )
    output = result.stdout.rstrip()
    if markdown:
        output = re.sub(r"^#{1,6} +(.*)$", r"**\1**", output, flags=re.MULTILINE)
        body = output
    else:
        body = "```text\n" + output + "\n```"
    display(Markdown(f"```bash\n$ {_wrapped(command)}\n```\n\n{body}\n"))


def _wrapped(command, width=76):
    """``command`` with shell line continuations before options, lines <= ``width``."""
    words = re.split(r" (?=--)", command)
    lines = [words[0]]
    for word in words[1:]:
        if len(lines[-1]) + 1 + len(word) + 2 > width:
            lines.append("    " + word)
        else:
            lines[-1] += " " + word
    return " \\\n".join(lines)
