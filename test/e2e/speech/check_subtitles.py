#!/usr/bin/env python3
"""check_subtitles.py TRANSCRIPT.json SUBTITLES.srt|.vtt

Parses the subtitles with a subtitle library (python3-srt for SubRip,
python3-webvtt for WebVTT) and checks them against the verbose_json
transcript of the same run: a cue per segment, in order, with its start
and end (to the millisecond) and its text, trimmed.
"""
import json
import sys


def cues(path):
    if path.endswith(".srt"):
        import srt
        with open(path, encoding="utf-8") as f:
            return [(c.start.total_seconds(), c.end.total_seconds(), c.content)
                    for c in srt.parse(f.read(), ignore_errors=False)]
    import webvtt
    return [(c.start_in_seconds, c.end_in_seconds, c.text)
            for c in webvtt.read(path)]


def main():
    segments = json.load(open(sys.argv[1]))["segments"]
    found = cues(sys.argv[2])
    if len(found) != len(segments):
        sys.exit(f"FAIL: {len(found)} cues, {len(segments)} segments")
    for i, ((start, end, text), s) in enumerate(zip(found, segments)):
        if abs(start - s["start"]) > 0.0015 or abs(end - s["end"]) > 0.0015:
            sys.exit(f"FAIL: cue {i}: {start} --> {end}, segment "
                     f"{s['start']} --> {s['end']}")
        if text != s["text"].strip().replace("-->", "->"):
            sys.exit(f"FAIL: cue {i}: {text!r}, segment {s['text']!r}")
    print(f"OK: {len(found)} cues")


if __name__ == "__main__":
    main()
