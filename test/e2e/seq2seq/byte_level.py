"""GPT-2's byte-level alphabet, shared by the golden scripts that write
byte-level BPE tokenizers (make_whisper_goldens.py,
make_seq2seq_text_goldens.py, speech/make_whisper_longform_goldens.py),
and the tiny WhisperTokenizer the Whisper fixtures share."""
import json
import os

# A few merges over the 256 byte tokens, enough for words to be more than
# bytes.
WHISPER_MERGES = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"),
                  ("Ġ", "a"), ("o", "n"), ("e", "r"), ("Ġ", "s")]


def byte_alphabet():
    """GPT-2's bytes_to_unicode, in byte order: printable bytes stand for
    themselves, the others for code points from 256 on."""
    printable = (list(range(ord("!"), ord("~") + 1)) +
                 list(range(ord("¡"), ord("¬") + 1)) +
                 list(range(ord("®"), ord("ÿ") + 1)))
    chars, n = [], 0
    for b in range(256):
        if b in printable:
            chars.append(chr(b))
        else:
            chars.append(chr(256 + n))
            n += 1
    return chars


def write_whisper_tokenizer(folder, specials, merges=WHISPER_MERGES):
    """A WhisperTokenizer in `folder` (vocab.json, merges.txt and the saved
    tokenizer files): GPT-2's 256 byte tokens, `merges`, <|endoftext|>
    (unknown, start, end and padding), then `specials` as added special
    tokens. Returns the tokenizer and the byte alphabet."""
    import transformers as tf
    os.makedirs(folder, exist_ok=True)
    alphabet = byte_alphabet()
    vocab = {c: i for i, c in enumerate(alphabet)}
    for left, right in merges:
        vocab[left + right] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    with open(os.path.join(folder, "vocab.json"), "w") as f:
        json.dump(vocab, f)
    with open(os.path.join(folder, "merges.txt"), "w") as f:
        f.write("#version: 0.2\n")
        f.writelines(f"{l} {r}\n" for l, r in merges)
    tokenizer = tf.WhisperTokenizer(
        os.path.join(folder, "vocab.json"), os.path.join(folder, "merges.txt"),
        unk_token="<|endoftext|>", bos_token="<|endoftext|>",
        eos_token="<|endoftext|>", pad_token="<|endoftext|>")
    tokenizer.add_special_tokens({"additional_special_tokens": specials})
    tokenizer.save_pretrained(folder)
    return tokenizer, alphabet
