"""Starting tfm-serve for a test client: on a free port, its two start-up
lines printed (the address left out, for FileCheck); and posting to it."""

import http.client
import json
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


def post(port, path, body, timeout=60):
    """POSTs `body` (a str or bytes sent as it is, anything else as JSON);
    returns the status and the response's text."""
    connection = http.client.HTTPConnection("127.0.0.1", port,
                                            timeout=timeout)
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    connection.request("POST", path, data,
                       {"Content-Type": "application/json"})
    response = connection.getresponse()
    payload = response.read().decode()
    connection.close()
    return response.status, payload
