"""Drives tfm-serve's /v1/audio/transcriptions and /v1/audio/translations
for Whisper with timestamp tokens (multipart forms, as OpenAI's SDKs send
them) and prints one line per check for FileCheck
(tfm-serve-transcriptions.test):

  serve_whisper_long_client.py TFM_SERVE LIBRARY WAV EXPECTED.json \\
      TRANSLATED.json EXPECTED.srt

The EXPECTED files are what the executable writes for WAV with OpenAI's
defaults (--format json, --format srt) and with --task translate. Each
verbose_json answer is validated against OpenAI's TranscriptionVerbose
(TranslationVerbose) and TranscriptionSegment, transcribed below from the
official Node SDK's resources/audio/transcriptions.d.ts (openai 4.104.0).
"""

import json
import sys

import jsonschema

from serve_process import start
from serve_transcriptions_client import post_form

SEGMENT = {
    "type": "object",
    "required": ["id", "avg_logprob", "compression_ratio", "end",
                 "no_speech_prob", "seek", "start", "temperature", "text",
                 "tokens"],
    "properties": {
        "id": {"type": "number"}, "avg_logprob": {"type": "number"},
        "compression_ratio": {"type": "number"}, "end": {"type": "number"},
        "no_speech_prob": {"type": "number"}, "seek": {"type": "number"},
        "start": {"type": "number"}, "temperature": {"type": "number"},
        "text": {"type": "string"},
        "tokens": {"type": "array", "items": {"type": "number"}}}}
VERBOSE = {
    "type": "object",
    "required": ["duration", "language", "text"],
    "properties": {
        "duration": {"type": "number"}, "language": {"type": "string"},
        "text": {"type": "string"},
        "segments": {"type": "array", "items": SEGMENT},
        "words": {"type": "array", "items": {
            "type": "object", "required": ["end", "start", "word"]}}}}


def post(port, path, fields, audio):
    return post_form(port, fields, [("file", "speech.wav", audio)],
                     path=path, timeout=600)


def same_segments(answer, expected):
    keys = ("start", "end", "text", "tokens", "temperature")
    return [[s[k] for k in keys] for s in answer["segments"]] == \
        [[s[k] for k in keys] for s in expected["segments"]]


def main():
    serve, library, wav, expected_path, translated_path, srt_path, \
        words_path = sys.argv[1:8]
    expected = json.load(open(expected_path))
    worded = json.load(open(words_path))
    translated = json.load(open(translated_path))
    audio = open(wav, "rb").read()
    # 75 s of 16-bit audio is 2.4 MB: past the default 1 MiB a request.
    server, port = start(serve, library, "--max-request-bytes", "8000000")
    transcriptions = "/v1/audio/transcriptions"
    try:
        status, _, body = post(port, transcriptions,
                               [("response_format", "verbose_json"),
                                ("timestamp_granularities[]", "segment")],
                               audio)
        jsonschema.validate(body, VERBOSE)
        print("verbose_json:", status, "valid TranscriptionVerbose,",
              len(body["segments"]), "segments, equal to the executable's:",
              same_segments(body, expected), body["language"],
              body["duration"])
        print("text has no leading space:",
              body["text"] == expected["text"].lstrip(" "))
        status, _, body = post(port, transcriptions, [], audio)
        print("json:", status, sorted(body), body["text"] ==
              expected["text"].lstrip(" "))
        status, kind, body = post(port, transcriptions,
                                  [("response_format", "srt")], audio)
        print("srt:", status, kind, body == open(srt_path).read())
        status, _, body = post(port, transcriptions,
                               [("response_format", "verbose_json"),
                                ("timestamp_granularities[]", "word"),
                                ("timestamp_granularities[]", "segment")],
                               audio)
        jsonschema.validate(body, VERBOSE)
        print("verbose_json with words:", status, len(body["words"]),
              "words, equal to the executable's --word-timestamps:",
              body["words"] == worded["words"])
        status, _, body = post(port, "/v1/audio/translations",
                               [("response_format", "verbose_json")], audio)
        jsonschema.validate(body, VERBOSE)
        print("translation:", status, "valid TranslationVerbose,",
              "equal to the executable's --task translate:",
              same_segments(body, translated))
        for label, path, fields in [
                ("format", transcriptions, [("response_format", "docx")]),
                ("temperature", transcriptions, [("temperature", "1.5")]),
                ("translation's language", "/v1/audio/translations",
                 [("language", "de")]),
                ("unknown language", transcriptions, [("language", "xx")])]:
            status, _, body = post(port, path, fields, audio)
            print(f"refused, {label}:", status, body["error"]["message"])
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
