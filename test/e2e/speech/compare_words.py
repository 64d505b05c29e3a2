#!/usr/bin/env python3
"""compare_words.py GOLDEN.json TRANSCRIPT.json

Checks a CTC recognizer's chunked transcript (tfmc's verbose_json: text and
words) against transformers 4.40's pipeline golden
(make_ctc_chunks_goldens.py). Over 3 min the random fixture writes a label
in 144 000 frames whose two likeliest labels nearly tie, so that the few
frames where tfmc's logits and torch's (1e-5 apart) pick differently
change a word or a boundary: the words are aligned (difflib), and every
aligned word must be equal with its start and end within a millisecond,
but at most one word in 500 (and 2) may differ. The exact check of the
chunking over the same logits is check_ctc_chunks.py's. Prints "OK: N
words" or what differs, and fails then.
"""
import difflib
import json
import sys


def main():
    golden = json.load(open(sys.argv[1]))["words"]
    ours = json.load(open(sys.argv[2])).get("words", [])
    matcher = difflib.SequenceMatcher(None, [w["word"] for w in golden],
                                      [w["word"] for w in ours],
                                      autojunk=False)
    same = 0
    for a, b, n in matcher.get_matching_blocks():
        for k in range(n):
            w, g = golden[a + k], ours[b + k]
            same += abs(g["start"] - w["start"]) <= 1e-3 and \
                abs(g["end"] - w["end"]) <= 1e-3
    differ = max(len(golden), len(ours)) - same
    allowed = max(2, len(golden) // 500)
    if differ > allowed:
        sys.exit(f"FAIL: {differ} of {len(golden)} words differ (at most "
                 f"{allowed})")
    print(f"OK: {len(ours)} words ({differ} differ at near-ties, at most "
          f"{allowed})")


if __name__ == "__main__":
    main()
