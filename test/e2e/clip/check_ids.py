"""Checks a compiled CLIP or SigLIP model's tokenizer against the ids of
transformers' tokenizer (make_clip_tokenizer.py, make_siglip_tokenizer.py):
each line of TEXTS through `EXE --call embed_text --text LINE --tokenize`,
whose first line is the ids. NAME names the reference (CLIPTokenizer).

    check_ids.py EXE TEXTS IDS [NAME]
"""
import subprocess
import sys


def main():
    exe, texts_path, ids_path = sys.argv[1:4]
    name = sys.argv[4] if len(sys.argv) > 4 else "CLIPTokenizer"
    with open(texts_path, encoding="utf-8") as f:
        texts = f.read().split("\n")[:-1]
    with open(ids_path) as f:
        expected = f.read().splitlines()
    equal = 0
    for text, ids in zip(texts, expected):
        out = subprocess.run([exe, "--call", "embed_text", "--text", text,
                              "--tokenize"], capture_output=True, text=True)
        got = out.stdout.splitlines()[0] if out.stdout else out.stderr.strip()
        if got == ids:
            equal += 1
        else:
            print("DIFFERS: %r: %s, %s: %s" % (text, got, name, ids))
    print("ids equal to %s's: %d of %d" % (name, equal, len(expected)))
    return 0 if equal == len(expected) == len(texts) else 1


if __name__ == "__main__":
    sys.exit(main())
