"""Drives tfm-serve's /v1/audio/transcriptions with Python's HTTP client
(multipart forms, as OpenAI's SDKs send them) and prints one line per check
for FileCheck (tfm-serve-transcriptions.test).

  serve_transcriptions_client.py TFM_SERVE LIBRARY INPUTS

The library is the wav2vec2-ctc fixture; INPUTS holds clip.wav and the
transcript transformers gives it (wav2vec2-ctc.text).
"""

import http.client
import io
import json
import re
import struct
import subprocess
import sys
import uuid
import wave


def post_form(port, fields, files=(), content_type=None, body=None,
              path="/v1/audio/transcriptions", timeout=60):
    """POSTs a multipart form of `fields` (name, value) and `files` (name,
    filename, bytes), or `body` as it is; returns the status, the
    response's content type (without parameters) and its payload (JSON
    decoded where it is JSON)."""
    boundary = uuid.uuid4().hex
    if body is None:
        parts = []
        for name, value in fields:
            parts.append(f'--{boundary}\r\nContent-Disposition: form-data; '
                         f'name="{name}"\r\n\r\n{value}\r\n'.encode())
        for name, filename, data in files:
            parts.append(f'--{boundary}\r\nContent-Disposition: form-data; '
                         f'name="{name}"; filename="{filename}"\r\n'
                         'Content-Type: application/octet-stream\r\n\r\n'
                         .encode() + data + b"\r\n")
        body = b"".join(parts) + f"--{boundary}--\r\n".encode()
        content_type = f"multipart/form-data; boundary={boundary}"
    connection = http.client.HTTPConnection("127.0.0.1", port,
                                            timeout=timeout)
    connection.request("POST", path, body, {"Content-Type": content_type})
    response = connection.getresponse()
    payload = response.read().decode()
    kind = response.getheader("Content-Type")
    connection.close()
    if kind.startswith("application/json"):
        payload = json.loads(payload)
    return response.status, kind.split(";")[0], payload


def post(port, fields, files=(), content_type=None, body=None):
    status, _, payload = post_form(port, fields, files, content_type, body)
    return status, payload


def short_clip(samples):
    """A 16 kHz WAV of `samples` silent samples."""
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(b"\0\0" * samples)
    return out.getvalue()


def float_clip(values):
    """A 16 kHz WAV of 32-bit float samples (format 3), as given."""
    data = struct.pack(f"<{len(values)}f", *values)
    fmt = struct.pack("<HHIIHH", 3, 1, 16000, 16000 * 4, 4, 32)
    return (b"RIFF" + struct.pack("<I", 4 + 8 + len(fmt) + 8 + len(data)) +
            b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt +
            b"data" + struct.pack("<I", len(data)) + data)


def error(payload):
    return payload["error"]["message"]


def main():
    serve, library, inputs = sys.argv[1:4]
    audio = open(f"{inputs}/clip.wav", "rb").read()
    expected = open(f"{inputs}/wav2vec2-ctc.text").read().rstrip("\n")
    server = subprocess.Popen([serve, library, "--port", "0"],
                              stdout=subprocess.PIPE, text=True)
    banner = server.stdout.readline().strip()
    print(banner.rsplit(" on ", 1)[0])
    print(server.stdout.readline().strip())
    port = int(re.search(r":(\d+)$", banner).group(1))
    clip = [("file", "clip.wav", audio)]
    try:
        status, body = post(port, [("model", "w2v")], clip)
        print("json:", status, "equals transformers':", body["text"] == expected)
        status, body = post(port, [("response_format", "text"),
                                   ("temperature", "0")], clip)
        print("text:", status, "equals transformers':",
              body == expected + "\n")
        status, body = post(port, [("model", "w2v")],
                            [("file", "clip-8k.wav",
                              open(f"{inputs}/clip-8k.wav", "rb").read())])
        print("8 kHz, resampled:", status, len(body["text"]) > 0)
        status, body = post(port, [("response_format", "verbose_json"),
                                   ("timestamp_granularities[]", "word")],
                            clip)
        words = body["words"]
        print("verbose_json with words:", status, body["task"],
              body["duration"], body["text"] == expected,
              " ".join(w["word"] for w in words) == expected,
              all(0 <= w["start"] < w["end"] <= body["duration"]
                  for w in words))
        status, body = post(port, [("response_format", "verbose_json")], clip)
        print("verbose_json without words:", status, "words" in body)
        for label, fields, files in [
                ("no file", [("model", "w2v")], []),
                ("format", [("response_format", "srt")], clip),
                ("segments", [("timestamp_granularities[]", "segment")],
                 clip),
                ("language", [("language", "en")], clip),
                ("temperature", [("temperature", "0.4")], clip),
                ("unknown field", [("stream", "true")], clip),
                ("another model", [("model", "whisper-1")], clip),
                ("not audio", [], [("file", "x.wav", b"not audio at all")]),
                ("truncated", [], [("file", "cut.wav", audio[:64])]),
                ("too short", [], [("file", "short.wav", short_clip(10))]),
                ("NaN samples", [],
                 [("file", "nan.wav", float_clip([0.0, float("nan")] * 8000))]),
                ("a field twice", [("model", "w2v"), ("model", "w2v")], clip)]:
            status, body = post(port, fields, files)
            print(f"refused, {label}:", status, error(body))
        status, body = post(port, [], body=b'{"file": "x"}',
                            content_type="application/json")
        print("refused, JSON:", status, error(body))
        status, body = post(port, [], body=b'--b\r\nContent-Disposition: '
                            b'form-data; name="file"\r\n\r\nRIFF',
                            content_type="multipart/form-data; boundary=b")
        print("refused, unended part:", status, error(body))
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
