"""Starting tfm-serve for a test client: on a free port, its two start-up
lines printed (the address left out, for FileCheck)."""

import re
import subprocess


def start(serve, library, *options):
    """tfm-serve on LIBRARY: the process and the port it listens on."""
    server = subprocess.Popen([serve, library, "--port", "0", *options],
                              stdout=subprocess.PIPE, text=True)
    banner = server.stdout.readline().strip()
    print(banner.rsplit(" on ", 1)[0])
    print(server.stdout.readline().strip())
    return server, int(re.search(r":(\d+)$", banner).group(1))
