"""tfm-serve over TLS (tfm-serve-tls.test): starts `TFM_SERVE LIBRARY
--port 0 --ssl-cert CERT --ssl-key KEY --api-key-file KEY_FILE` and checks,
with Python's own TLS client, that a client trusting CERT (and checking
the host name, 127.0.0.1 in its subjectAltName) is served with the key,
that one trusting nothing else refuses the certificate, and that plain
HTTP gets no answer.

  serve_tls_client.py TFM_SERVE LIBRARY CERT KEY KEY_FILE
"""

import http.client
import json
import re
import ssl
import subprocess
import sys


def main():
    serve, library, cert, key, key_file = sys.argv[1:6]
    api_key = open(key_file).read().strip()
    server = subprocess.Popen([serve, library, "--port", "0", "--ssl-cert",
                               cert, "--ssl-key", key, "--api-key-file",
                               key_file], stdout=subprocess.PIPE, text=True)
    banner = server.stdout.readline().strip()
    server.stdout.readline()
    print(banner.rsplit(":", 1)[0])
    port = int(re.search(r":(\d+)$", banner).group(1))
    try:
        trusting = ssl.create_default_context(cafile=cert)
        connection = http.client.HTTPSConnection("127.0.0.1", port,
                                                 context=trusting, timeout=60)
        connection.request("POST", "/v1/completions",
                           json.dumps({"prompt": "Once upon a time",
                                       "max_tokens": 4, "temperature": 0}),
                           {"Authorization": "Bearer " + api_key,
                            "Content-Type": "application/json"})
        response = connection.getresponse()
        body = json.loads(response.read())
        print("verified client:", response.status,
              body["usage"]["completion_tokens"], "tokens")
        connection.close()
        try:
            stranger = ssl.create_default_context()
            connection = http.client.HTTPSConnection(
                "127.0.0.1", port, context=stranger, timeout=60)
            connection.request("GET", "/health")
            print("untrusting client: served", connection.getresponse().status)
        except ssl.SSLCertVerificationError as e:
            print("untrusting client: refused:", e.verify_message)
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port,
                                                    timeout=10)
            connection.request("GET", "/health")
            print("plain HTTP: served", connection.getresponse().status)
        except (http.client.HTTPException, ConnectionError, OSError) as e:
            print("plain HTTP: no answer")
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
