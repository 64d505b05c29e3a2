"""Drives tfm-serve's /v1/audio/transcriptions for Whisper (multipart forms,
as OpenAI's SDKs send them) and prints one line per check for FileCheck
(tfm-serve-transcriptions.test):

  serve_whisper_client.py TFM_SERVE LIBRARY WAV EXPECTED_TEXT AFTER_PREVIOUS

EXPECTED_TEXT is what the executable prints for WAV (its first space is the
first token's), AFTER_PREVIOUS what it prints with --previous-text PREVIOUS,
which the request's `prompt` must equal."""

import sys

from serve_process import start
from serve_transcriptions_client import post

PREVIOUS = "the cat sat on the mat"


def main():
    serve, library, wav, expected_path, previous_path = sys.argv[1:6]
    expected = open(expected_path).read().rstrip("\n").lstrip(" ")
    after_previous = open(previous_path).read().rstrip("\n").lstrip(" ")
    audio = open(wav, "rb").read()
    server, port = start(serve, library)
    files = [("file", "tones.wav", audio)]
    try:
        status, body = post(port, [("model", "whisper")], files)
        print("json:", status, "equals the executable's:",
              body["text"] == expected)
        status, body = post(port, [("response_format", "text"),
                                   ("language", "en")], files)
        print("text, language en:", status, body.rstrip("\n") == expected)
        status, body = post(port, [("response_format", "verbose_json")], files)
        print("verbose_json:", status, body["task"], body["language"],
              body["duration"], len(body["segments"]),
              body["segments"][0]["end"], body["text"] == expected)
        status, body = post(port, [("prompt", PREVIOUS)], files)
        print("prompt:", status, "equals the executable's:",
              body["text"] == after_previous,
              "differs from none:", body["text"] != expected)
        for label, fields in [
                ("language", [("language", "fr")]),
                ("language code", [("language", "French")]),
                ("format", [("response_format", "srt")]),
                ("temperature", [("temperature", "0.4")])]:
            status, body = post(port, fields, files)
            print(f"refused, {label}:", status, body["error"]["message"])
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
