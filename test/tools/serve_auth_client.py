"""Drives tfm-serve's API key checks over loopback with Python's HTTP
client and prints one line per check for FileCheck
(tfm-serve-auth.test).

  serve_auth_client.py TFM_SERVE LIBRARY KEY_FILE

Starts `TFM_SERVE LIBRARY --port 0 --api-key-file KEY_FILE` and checks
/health without a key, then /v1/models and /v1/completions without a key,
with a wrong key, with a key that is a prefix of the right one, without
the "Bearer " scheme, and with the right key.
"""

import http.client
import json
import re
import subprocess
import sys


def request(port, method, path, key=None, body=None, scheme="Bearer "):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = scheme + key
    connection.request(method, path, json.dumps(body) if body else None,
                       headers)
    response = connection.getresponse()
    payload = response.read().decode()
    connection.close()
    return response.status, payload


def error_of(payload):
    error = json.loads(payload)["error"]
    return f"{error['type']} {error['code']}: {error['message']}"


def main():
    serve, library, key_file = sys.argv[1:4]
    key = open(key_file).read().strip()
    server = subprocess.Popen([serve, library, "--port", "0",
                               "--api-key-file", key_file],
                              stdout=subprocess.PIPE, text=True)
    banner = server.stdout.readline().strip()
    server.stdout.readline()
    port = int(re.search(r":(\d+)$", banner).group(1))
    completion = {"prompt": "Once upon a time", "max_tokens": 4,
                  "temperature": 0}
    try:
        status, payload = request(port, "GET", "/health")
        print("health without a key:", status, payload)
        for label, given, scheme in [("no key", None, "Bearer "),
                                     ("wrong key", "sk-wrong", "Bearer "),
                                     ("prefix of the key", key[:-1], "Bearer "),
                                     ("no Bearer scheme", key, "")]:
            status, payload = request(port, "GET", "/v1/models", given,
                                      scheme=scheme)
            print(f"models, {label}:", status, error_of(payload))
            status, payload = request(port, "POST", "/v1/completions", given,
                                      completion, scheme=scheme)
            print(f"completion, {label}:", status, error_of(payload))
        status, payload = request(port, "GET", "/v1/models", key)
        print("models, right key:", status, json.loads(payload)["object"])
        status, payload = request(port, "POST", "/v1/completions", key,
                                  completion)
        print("completion, right key:", status,
              json.loads(payload)["usage"]["completion_tokens"], "tokens")
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
